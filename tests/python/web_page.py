"""The person's page of `toolgate serve`, driven in a real browser (Playwright over
Debian's Chromium, headless).

Usage:
  web_page.py CHROMIUM BASE_URL LOGIN_LINK [SCREENSHOT]

The Rust test (tests/tests/it/web.rs) has started four calls that ask, each in its own
session: `echo once-approved`, `echo always-approved`, `touch rejected.txt` (bash) and
an edit of notes.txt. This script logs in through the printed link (its Log in button), checks the session
cookie, takes the screenshot with every ask shown (the diff too), then answers on the
page as a person would, with the buttons' names: "Allow once" (the echo and the edit),
"Allow always", "Reject" with feedback; "Remove" on the saved approval; "Kill" on the
background process (`sleep 600`) the test started.

It talks with the test over stdin/stdout, one JSON object a line: it prints
{"step": "cookie", ...} and {"step": "saved", ...} and waits for a line on stdin after
each (the test checks the server in between), and {"step": "done", ...} at the end.
Any failed expectation raises (exit code 1, with the reason on stderr).
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright

FEEDBACK = "Do not create files in the project; write to /tmp instead."


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def wait_for_test():
    line = sys.stdin.readline()
    if line.strip() != "go":
        raise SystemExit(f"the test said {line!r}")


def card(page, text):
    return page.locator("article.card", has_text=text)


def main():
    chromium, base, link = sys.argv[1], sys.argv[2], sys.argv[3]
    screenshot = sys.argv[4] if len(sys.argv) > 4 else None
    with sync_playwright() as playwright:
        # Root in CI containers: Chromium's own sandbox needs user namespaces it may not get.
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        # A web page with a policy violation logs it on the console.
        page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)

        # The link opens a page with one button (a link preview uses nothing up); the
        # click logs in and lands on the page, the code gone from the address.
        opened = page.goto(link)
        assert opened is not None and opened.ok, f"login link: {opened and opened.status}"
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Log in", exact=True).click()
        response = navigation.value
        assert response is not None and response.ok, f"login: {response and response.status}"
        assert page.url == f"{base}/", page.url
        expect(page.get_by_role("heading", name="Pending permission asks")).to_be_visible()
        expect(page.locator("#live")).to_have_text("live", timeout=15000)
        headers = response.all_headers()
        for name in ["content-security-policy", "x-frame-options", "referrer-policy", "x-content-type-options"]:
            assert name in headers, f"{name} missing on the page"
        assert "frame-ancestors 'none'" in headers["content-security-policy"], headers["content-security-policy"]

        cookies = [c for c in context.cookies() if c["name"].startswith("toolgate_session_")]
        assert len(cookies) == 1, cookies
        cookie = cookies[0]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/", cookie
        # The page's script never sees it.
        assert "toolgate_session" not in page.evaluate("document.cookie")
        csrf = page.evaluate("fetch('/whoami').then(r => r.json()).then(j => j.csrf)")
        # Without the CSRF header, a request with the cookie that changes state is refused.
        status = page.evaluate("fetch('/approvals/per_x', {method: 'DELETE'}).then(r => r.status)")
        assert status == 403, f"DELETE without X-Toolgate-CSRF: {status}"
        say("cookie", name=cookie["name"], value=cookie["value"], csrf=csrf)
        wait_for_test()

        # Every ask is shown, grouped by session, with what "always" would save.
        for text in ["echo once-approved", "echo always-approved", "touch rejected.txt", "notes.txt"]:
            expect(card(page, text)).to_have_count(1, timeout=20000)
        always = card(page, "echo always-approved")
        expect(always).to_contain_text("bash echo *")
        # The edit's diff: removed and added lines highlighted, with line numbers.
        edit = card(page, "notes.txt")
        expect(edit.locator("tr.del")).to_contain_text("-line two")
        expect(edit.locator("tr.add")).to_contain_text("+line 2, edited")
        expect(edit.locator("tr.add td.num").nth(1)).to_have_text("2")
        if screenshot:
            page.screenshot(path=screenshot, full_page=True)

        # Keyboard: Tab reaches the buttons, Enter presses one.
        once = card(page, "echo once-approved")
        once.get_by_role("button", name="Allow once", exact=True).focus()
        page.keyboard.press("Enter")
        expect(card(page, "echo once-approved")).to_have_count(0)

        edit.get_by_role("button", name="Allow once", exact=True).click()
        expect(card(page, "notes.txt")).to_have_count(0)

        always.get_by_role("button", name="Allow always", exact=True).click()
        expect(card(page, "echo always-approved")).to_have_count(0)
        row = page.locator("#approvals-list tr", has_text="echo *")
        expect(row).to_have_count(1)
        say("saved")
        wait_for_test()

        rejected = card(page, "touch rejected.txt")
        rejected.get_by_label("Feedback for the model (sent with Reject)").fill(FEEDBACK)
        rejected.get_by_role("button", name="Reject", exact=True).click()
        expect(card(page, "touch rejected.txt")).to_have_count(0)

        row.get_by_role("button", name="Remove").click()
        expect(page.locator("#approvals-list tr", has_text="echo *")).to_have_count(0)

        # What was answered, and by whom.
        answered = page.locator("#answered-list li")
        expect(answered.filter(has_text="touch rejected.txt")).to_contain_text("by the page")
        expect(answered.filter(has_text="touch rejected.txt")).to_contain_text(FEEDBACK)
        expect(answered.filter(has_text="echo always-approved")).to_contain_text("always")

        # The audit log, filtered to bash: its decisions are there.
        page.get_by_label("Tool").fill("bash")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("#audit-list tr", has_text="echo once-approved").first).to_be_visible()
        expect(page.locator("#audit-list tr", has_text="edit")).to_have_count(0)

        # The background process: its output panel, and Kill.
        shell = page.locator("article[data-shell]", has_text="sleep 600")
        expect(shell).to_have_count(1)
        expect(shell).to_contain_text("running")
        shell.get_by_role("button", name="Kill").click()
        expect(page.locator("article[data-shell]", has_text="sleep 600")).to_contain_text("exited", timeout=15000)

        # A phone: the same page, one column, buttons still reachable.
        phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        phone.add_cookies([cookie])
        small = phone.new_page()
        small.goto(f"{base}/")
        expect(small.get_by_role("heading", name="Saved approvals")).to_be_visible()
        width = small.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page is {width}px wide on a 390px screen"

        assert not errors, errors
        say("done", answered=answered.count())
        browser.close()


if __name__ == "__main__":
    main()
