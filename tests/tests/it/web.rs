//! The person's page of `toolgate serve`: driven in a real browser (Playwright for
//! Python over Debian's Chromium, `tests/python/web_page.py`) against a real server whose
//! calls wait for it; its logins and cookies refused where they must be; replies to asks
//! no longer pending refused with 409; the `notify` webhooks and their signed links.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use e2e::{SERVER_TOKEN, Sandbox, Served};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

fn client() -> reqwest::Client {
    // reqwest is built without a crypto provider (ring is installed where TLS is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn get(served: &Served, path: &str) -> (u16, Value) {
    json_of(
        client()
            .get(format!("{}{path}", served.base))
            .bearer_auth(SERVER_TOKEN)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// A call in `session`, answered when its asks are: the settled call's JSON.
fn call(served: &Served, session: &str, tool: &str, input: Value) -> tokio::task::JoinHandle<Value> {
    let url = format!("{}/session/{session}/call", served.base);
    let body = json!({"tool": tool, "input": input}).to_string();
    tokio::spawn(async move {
        let response = client()
            .post(url)
            .bearer_auth(SERVER_TOKEN)
            .body(body)
            .send()
            .await
            .unwrap();
        json_of(response).await.1
    })
}

/// The pending asks once there are `count` of them.
async fn pending(served: &Served, count: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, list) = get(served, "/permission").await;
        let list = list.as_array().cloned().unwrap_or_default();
        if list.len() == count {
            return list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never {count} asks pending: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn text_of(settled: &Value) -> String {
    settled["result"]["value"].as_str().unwrap_or_default().to_string()
}

/// The first line of a settled bash call's text (the command's output; the exit note follows).
fn first_line(settled: &Value) -> String {
    text_of(settled).lines().next().unwrap_or_default().to_string()
}

/// Uses a login link as its page's **Log in** button does: its fields posted to
/// `/login/link`.
async fn use_link(link: &str) -> reqwest::Response {
    let (page, fields) = link.split_once('?').unwrap();
    let base = page.trim_end_matches("/login");
    client()
        .post(format!("{base}/login/link"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Origin", base)
        .body(fields.to_string())
        .send()
        .await
        .unwrap()
}

/// `Cookie:` with the page's session.
fn cookie(name: &str, value: &str) -> String {
    format!("{name}={value}")
}

/// The script's next JSON line, which must be step `step`.
async fn step(lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>, step: &str) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(180), lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("the browser script never reached {step:?}"))
        .unwrap()
        .unwrap_or_else(|| panic!("the browser script ended before {step:?} (its stderr says why)"));
    let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(value["step"], step, "{value}");
    value
}

#[tokio::test]
async fn the_page_in_a_browser_answers_asks_and_removes_an_approval() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "ask", "sleep *": "allow"}, "edit": "ask"}}"#,
    );
    sandbox.write("project/notes.txt", "line one\nline two\nline three\n");
    let mut served = sandbox.serve(&[]);
    // A background process for the page's Kill.
    let started = call(
        &served,
        "ses_bg",
        "bash",
        json!({"command": "sleep 600", "background": true}),
    )
    .await
    .unwrap();
    assert_eq!(started["result"]["type"], "text", "{started}");
    let link = served.line_after("toolgate: page ");
    assert!(link.starts_with(&format!("{}/login?code=", served.base)), "{link}");

    // Each in its own session: a rejection refuses every other ask of its session.
    let once = call(&served, "ses_once", "bash", json!({"command": "echo once-approved"}));
    let always = call(
        &served,
        "ses_always",
        "bash",
        json!({"command": "echo always-approved"}),
    );
    let rejected = call(&served, "ses_reject", "bash", json!({"command": "touch rejected.txt"}));
    let edited = call(
        &served,
        "ses_edit",
        "edit",
        json!({"path": "notes.txt", "oldString": "line two", "newString": "line 2, edited"}),
    );
    pending(&served, 4).await;

    let screenshot = std::env::var_os("WEB_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| sandbox.root.path().join("page.png"));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/web_page.py");
    let mut browser = tokio::process::Command::new(e2e::python_with_playwright())
        .arg(script)
        .arg(e2e::chromium())
        .arg(&served.base)
        .arg(&link)
        .arg(&screenshot)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = browser.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(browser.stdout.take().unwrap()).lines();

    // Logged in through the link: the browser's cookie, checked from outside too.
    let session = step(&mut lines, "cookie").await;
    let jar = cookie(session["name"].as_str().unwrap(), session["value"].as_str().unwrap());
    let csrf = session["csrf"].as_str().unwrap().to_string();
    let base = served.base.clone();
    let with_cookie = |method: reqwest::Method, path: &str| {
        client()
            .request(method, format!("{base}{path}"))
            .header("Cookie", jar.clone())
    };
    // The code was used: a second login with it is refused.
    let again = use_link(&link).await;
    assert_eq!(again.status().as_u16(), 403);
    assert!(again.headers().get("set-cookie").is_none());
    // The cookie alone reads.
    let (status, asks) = json_of(with_cookie(reqwest::Method::GET, "/permission").send().await.unwrap()).await;
    assert_eq!((status, asks.as_array().map(Vec::len)), (200, Some(4)));
    // What changes state needs the CSRF header and an Origin of this server.
    let delete = "/approvals/per_none";
    let no_csrf = with_cookie(reqwest::Method::DELETE, delete)
        .header("Origin", &served.base)
        .send()
        .await
        .unwrap();
    assert_eq!(no_csrf.status().as_u16(), 403);
    let no_origin = with_cookie(reqwest::Method::DELETE, delete)
        .header("X-Toolgate-CSRF", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(no_origin.status().as_u16(), 403);
    let cross = with_cookie(reqwest::Method::DELETE, delete)
        .header("X-Toolgate-CSRF", &csrf)
        .header("Origin", "http://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    let (status, body) = json_of(
        with_cookie(reqwest::Method::DELETE, delete)
            .header("X-Toolgate-CSRF", &csrf)
            .header("Origin", &served.base)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("no saved approval per_none"))
    );
    // A cross-origin POST is refused whatever its credentials.
    let ask = asks[0]["id"].as_str().unwrap();
    let cross = client()
        .post(format!("{}/permission/{ask}/reply", served.base))
        .bearer_auth(SERVER_TOKEN)
        .header("Origin", "http://attacker.example")
        .body(r#"{"reply": "once"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    assert_eq!(pending(&served, 4).await.len(), 4, "nothing was answered");
    stdin.write_all(b"go\n").await.unwrap();

    // "Allow once" (the echo, the edit) and "Allow always": the calls settled, the
    // approval saved.
    step(&mut lines, "saved").await;
    let settled = once.await.unwrap();
    assert_eq!(first_line(&settled), "once-approved", "{settled}");
    let settled = edited.await.unwrap();
    assert_eq!(settled["result"]["type"], "text", "{settled}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("notes.txt")).unwrap(),
        "line one\nline 2, edited\nline three\n"
    );
    let settled = always.await.unwrap();
    assert_eq!(first_line(&settled), "always-approved", "{settled}");
    let (_, approvals) = get(&served, "/approvals").await;
    let saved: Vec<(String, String)> = approvals
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap().into(),
                a["resource"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(saved, [("bash".to_string(), "echo *".to_string())]);
    stdin.write_all(b"go\n").await.unwrap();

    // "Reject" with feedback: the model got the feedback; "Remove": the approval is gone.
    step(&mut lines, "done").await;
    let status = tokio::time::timeout(Duration::from_secs(60), browser.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "the browser script failed: {status}");
    let settled = rejected.await.unwrap();
    let said = text_of(&settled);
    assert_eq!(settled["result"]["type"], "error", "{settled}");
    assert!(
        said.contains("Do not create files in the project; write to /tmp instead."),
        "{said}"
    );
    assert!(!sandbox.project().join("rejected.txt").exists());
    let (_, approvals) = get(&served, "/approvals").await;
    assert_eq!(approvals, json!([]));
    // Answered on the page, and said so.
    let (_, answers) = get(&served, "/answers").await;
    let by: Vec<(&str, &str)> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["reply"].as_str().unwrap(), a["by"].as_str().unwrap()))
        .collect();
    assert_eq!(by.len(), 4, "{answers}");
    assert!(by.iter().all(|(_, by)| *by == "the page"), "{answers}");
    assert!(screenshot.is_file());
    // Killed on the page.
    let (_, shells) = get(&served, "/shell").await;
    let states: Vec<&str> = shells
        .as_array()
        .unwrap()
        .iter()
        .map(|shell| shell["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["exited"], "{shells}");
}

#[tokio::test]
async fn the_page_and_its_logins_refuse_what_they_must() {
    let sandbox = Sandbox::new();
    let mut served = sandbox.serve(&[]);
    let link = served.line_after("toolgate: page ");
    // The page loads without credentials, with its policy; the API does not.
    let page = client().get(format!("{}/", served.base)).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let policy = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(
        policy.contains("default-src 'self'") && policy.contains("frame-ancestors 'none'"),
        "{policy}"
    );
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    assert!(!page.text().await.unwrap().contains("<script>"), "no inline script");
    assert_eq!(
        client()
            .get(format!("{}/whoami", served.base))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        401
    );
    // A page of another site cannot log in for the person, nor read the page through a
    // rebinding name.
    let form = client()
        .post(format!("{}/login", served.base))
        .header("Origin", "http://attacker.example")
        .body(json!({"token": SERVER_TOKEN}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(form.status().as_u16(), 403);
    let rebound = client()
        .get(format!("{}/", served.base))
        .header("Host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
    // A wrong token or a made-up code logs nobody in.
    let wrong = client()
        .post(format!("{}/login", served.base))
        .body(json!({"token": "x".repeat(43)}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    let made_up = use_link(&format!(
        "{}/login?code=0123456789abcdefghijklmnopqrstuvwxyzABCDEFG",
        served.base
    ))
    .await;
    assert_eq!(made_up.status().as_u16(), 403);
    // A login link's form posted from another site is refused like any cross-origin POST.
    let fields = link.split_once('?').unwrap().1.to_string();
    let cross = client()
        .post(format!("{}/login/link", served.base))
        .header("Origin", "http://attacker.example")
        .body(fields)
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    // The token logs in; the cookie is HttpOnly, SameSite=Strict; a made-up cookie is
    // nobody; logging out ends the session.
    let login = client()
        .post(format!("{}/login", served.base))
        .body(json!({"token": SERVER_TOKEN}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(login.status().as_u16(), 200);
    let set = login.headers()["set-cookie"].to_str().unwrap().to_string();
    let port = served.address().port();
    assert!(set.starts_with(&format!("toolgate_session_{port}=")), "{set}");
    assert!(
        set.contains("; HttpOnly") && set.contains("; SameSite=Strict") && set.contains("; Path=/"),
        "{set}"
    );
    let jar = set.split(';').next().unwrap().to_string();
    let csrf = json_of(login).await.1["csrf"].as_str().unwrap().to_string();
    let whoami = |jar: String| {
        let url = format!("{}/whoami", served.base);
        async move {
            client()
                .get(url)
                .header("Cookie", jar)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(whoami(jar.clone()).await, 200);
    assert_eq!(whoami(format!("toolgate_session_{port}=forged")).await, 401);
    let logout = client()
        .post(format!("{}/logout", served.base))
        .header("Cookie", &jar)
        .header("Origin", &served.base)
        .header("X-Toolgate-CSRF", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status().as_u16(), 200);
    assert_eq!(whoami(jar).await, 401);
    // The printed link still works once (the token's login did not use it).
    // Opening the link shows its button and uses nothing up (a chat's link preview
    // fetches it too).
    let opened = client().get(&link).send().await.unwrap();
    assert_eq!(opened.status().as_u16(), 200);
    assert!(opened.headers().get("set-cookie").is_none());
    assert!(
        opened
            .text()
            .await
            .unwrap()
            .contains(r#"<form method="post" action="/login/link">"#)
    );
    let first = use_link(&link).await;
    assert_eq!(first.status().as_u16(), 303);
    assert_eq!(first.headers()["location"], "/");
    assert_eq!(use_link(&link).await.status().as_u16(), 403);
}

#[tokio::test]
async fn a_reply_to_an_ask_whose_call_ended_or_that_was_answered_is_a_conflict() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let served = sandbox.serve(&[]);
    let reply = |id: String, reply: &'static str| {
        let url = format!("{}/permission/{id}/reply", served.base);
        async move {
            json_of(
                client()
                    .post(url)
                    .bearer_auth(SERVER_TOKEN)
                    .body(json!({"reply": reply}).to_string())
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let gone = call(&served, "s1", "bash", json!({"command": "echo never"}));
    let id = pending(&served, 1).await[0]["id"].as_str().unwrap().to_string();
    gone.abort();
    pending(&served, 0).await;
    let (status, body) = reply(id.clone(), "once").await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("is no longer pending"),
        "{body}"
    );

    let answered = call(&served, "s2", "bash", json!({"command": "echo answered"}));
    let id = pending(&served, 1).await[0]["id"].as_str().unwrap().to_string();
    assert_eq!(reply(id.clone(), "once").await, (200, json!(true)));
    assert_eq!(first_line(&answered.await.unwrap()), "answered");
    let (status, body) = reply(id.clone(), "reject").await;
    assert_eq!(status, 409, "{body}");
    let said = body["error"].as_str().unwrap();
    assert!(
        said.contains("was answered already (once, by an API client (bearer token))"),
        "{said}"
    );
    assert_eq!(reply("per_never_asked".into(), "once").await.0, 404);
}

/// A webhook receiver on loopback: every POST's JSON body.
async fn receiver() -> (String, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let (sender, received) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let sender = sender.clone();
            async move {
                let _ = sender.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}/hook"), received)
}

async fn hook(received: &mut tokio::sync::mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(20), received.recv())
        .await
        .expect("no webhook came")
        .unwrap()
}

#[tokio::test]
async fn a_webhook_per_ask_with_a_signed_link_that_opens_that_ask_only() {
    let (url, mut received) = receiver().await;
    let sandbox = Sandbox::new();
    let config = json!({"notify": [{
        "url": url,
        "template": {"text": "{text}", "ask": "{id}", "session": "{session}", "command": "{command}", "open": "{link}", "n": 1},
    }]});
    sandbox.write("config/toolgate.json", &config.to_string());
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let served = sandbox.serve(&[]);
    let first = call(&served, "s1", "bash", json!({"command": "echo via-link"}));
    let sent = hook(&mut received).await;
    let id = pending(&served, 1).await[0]["id"].as_str().unwrap().to_string();
    assert_eq!(sent["ask"], id.as_str());
    assert_eq!(sent["session"], "s1");
    assert_eq!(sent["command"], "echo via-link");
    assert_eq!(sent["n"], 1);
    let link = sent["open"].as_str().unwrap().to_string();
    assert!(
        link.starts_with(&format!("{}/login?ask={id}&exp=", served.base)),
        "{link}"
    );
    assert!(sent["text"].as_str().unwrap().contains(&link), "{sent}");
    // Another ask, in another session: its own webhook.
    let second = call(&served, "s2", "bash", json!({"command": "echo other"}));
    let other = hook(&mut received).await["ask"].as_str().unwrap().to_string();
    assert_ne!(other, id);

    // The link logs in once, for that ask only.
    let login = use_link(&link).await;
    assert_eq!(login.status().as_u16(), 303);
    assert_eq!(login.headers()["location"], format!("/#ask={id}").as_str());
    let jar = login.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(use_link(&link).await.status().as_u16(), 403);
    let forged = link.replace(&id, &other);
    assert_eq!(use_link(&forged).await.status().as_u16(), 403);
    let as_page = |method: reqwest::Method, path: String| {
        client()
            .request(method, format!("{}{path}", served.base))
            .header("Cookie", jar.clone())
    };
    let (_, me) = json_of(as_page(reqwest::Method::GET, "/whoami".into()).send().await.unwrap()).await;
    assert_eq!(me["ask"], id.as_str());
    let csrf = me["csrf"].as_str().unwrap().to_string();
    let (status, shown) = json_of(
        as_page(reqwest::Method::GET, "/permission".into())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let shown: Vec<&str> = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(shown, [id.as_str()], "the other ask stays hidden");
    let approvals = as_page(reqwest::Method::GET, "/approvals".into()).send().await.unwrap();
    assert_eq!(approvals.status().as_u16(), 403);
    let answer = |ask: String| {
        as_page(reqwest::Method::POST, format!("/permission/{ask}/reply"))
            .header("Origin", &served.base)
            .header("X-Toolgate-CSRF", &csrf)
            .body(r#"{"reply": "once"}"#)
            .send()
    };
    assert_eq!(answer(other.clone()).await.unwrap().status().as_u16(), 403);
    let (status, body) = json_of(answer(id.clone()).await.unwrap()).await;
    assert_eq!((status, body), (200, json!(true)));
    assert_eq!(first_line(&first.await.unwrap()), "via-link");
    // Answered: a second reply through the link is a conflict, said plainly.
    let (status, body) = json_of(answer(id.clone()).await.unwrap()).await;
    assert_eq!(status, 409);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("was answered already (once, by the page (a link sent for this ask))"),
        "{body}"
    );
    // One webhook per ask: nothing more came.
    assert!(received.try_recv().is_err());
    second.abort();
}

#[tokio::test]
async fn a_project_files_webhooks_wait_for_trust() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"notify": [{"url": "http://127.0.0.1:9/hook"}]}"#,
    );
    let served = sandbox.serve(&[]);
    // Every ask's command would go to that URL, with a link that answers it.
    let (status, files) = get(&served, "/trust").await;
    assert_eq!(status, 200);
    let parts: Vec<&str> = files[0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["key"].as_str().unwrap())
        .collect();
    assert_eq!(parts, ["notify"], "{files}");
}
