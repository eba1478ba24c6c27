// The plugin's three hooks against real projects and the real toolgate binary.
//
// Call shapes: `tool.execute.before(input {tool, sessionID, callID}, output {args})` and
// `permission.ask(Permission, output {status})` as @opencode-ai/plugin's `Hooks` types
// them; `event({event})` with OpenCode's `permission.asked` request (test/harness.mjs).
// Tool arguments are those of OpenCode's tools (packages/opencode/src/tool/bash.ts
// `command`/`description`, read.ts and edit.ts `filePath`, webfetch.ts `url`).

import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { test } from "node:test"
import { asked, load, logs, permission, project, replies, TOOLGATE_BIN } from "./harness.mjs"

const RULES = {
  bash: { "*": "ask", "git status*": "allow", "rm *": "deny" },
  read: { "*": "allow", "secret/*": "deny" },
  edit: "ask",
  webfetch: { "*": "ask", "https://blocked.example/*": "deny" },
}

async function plugin(rules = RULES, options = { bin: TOOLGATE_BIN }) {
  const dir = project(rules, { "src/main.rs": "fn main() {}\n", "secret/key": "k\n" })
  return { dir, ...(await load(dir, options)) }
}

/** Runs `tool.execute.before`; returns the error it threw, or undefined. */
async function before(hooks, tool, args) {
  try {
    await hooks["tool.execute.before"]({ tool, sessionID: "ses_test", callID: "call_test" }, { args })
    return undefined
  } catch (error) {
    return error
  }
}

async function ask(hooks, input, status = "ask") {
  const output = { status }
  await hooks["permission.ask"](input, output)
  return output.status
}

async function event(hooks, request) {
  await hooks.event({ event: { type: "permission.asked", properties: request } })
}

test("a denied bash command is denied, naming the rule", async () => {
  const { hooks, requests } = await plugin()
  const error = await before(hooks, "bash", { command: "rm -rf build", description: "Remove build" })
  assert.ok(error instanceof Error, "tool.execute.before must throw")
  assert.match(error.message, /rm -rf build/)
  assert.match(error.message, /"rm \*"/)
  assert.equal(await ask(hooks, permission("bash", ["rm *"], { command: "rm -rf build" })), "deny")
  const request = asked("bash", ["rm -rf build"], ["rm *"])
  await event(hooks, request)
  assert.deepEqual(replies(requests), [
    { path: `/session/${request.sessionID}/permissions/${request.id}`, response: "reject" },
  ])
})

test("an allowed read is allowed", async () => {
  const { hooks, requests } = await plugin()
  assert.equal(await before(hooks, "read", { filePath: "src/main.rs" }), undefined)
  assert.equal(await ask(hooks, permission("read", "src/main.rs")), "allow")
  const request = asked("read", ["src/main.rs"], ["*"])
  await event(hooks, request)
  assert.deepEqual(replies(requests), [
    { path: `/session/${request.sessionID}/permissions/${request.id}`, response: "once" },
  ])
})

test("an absolute path inside the project is the project's file", async () => {
  const { dir, hooks } = await plugin()
  const error = await before(hooks, "read", { filePath: path.join(dir, "secret/key") })
  assert.ok(error instanceof Error, "reading secret/key by its absolute path must be denied")
  assert.match(error.message, /"secret\/\*"/)
})

test("an ask rule leaves OpenCode's own prompt", async () => {
  const { hooks, requests } = await plugin()
  assert.equal(await before(hooks, "edit", { filePath: "src/main.rs", oldString: "a", newString: "b" }), undefined)
  assert.equal(await ask(hooks, permission("edit", "src/main.rs")), "ask")
  await event(hooks, asked("edit", ["src/main.rs"]))
  await event(hooks, asked("bash", ["ls -la"], ["ls *"]))
  assert.deepEqual(replies(requests), [], "an ask is the person's: nothing is answered for them")
})

test("a composition with a denied part is denied", async () => {
  const { hooks, requests } = await plugin()
  const command = "git status && rm -rf x"
  const error = await before(hooks, "bash", { command, description: "Status and clean" })
  assert.ok(error instanceof Error, "tool.execute.before must throw")
  assert.match(error.message, /rm -rf x/)
  assert.equal(await ask(hooks, permission("bash", ["git status *", "rm *"], { command })), "deny")
  // OpenCode's bash tool asks once for all of a line's parts (patterns = each part).
  const request = asked("bash", ["git status", "rm -rf x"], ["git status *", "rm *"])
  await event(hooks, request)
  assert.deepEqual(replies(requests), [
    { path: `/session/${request.sessionID}/permissions/${request.id}`, response: "reject" },
  ])
  // The allowed part alone stays allowed: the deny came from `rm`, not from composing.
  assert.equal(await before(hooks, "bash", { command: "git status" }), undefined)
})

test("a V2 request (action, resources) is answered the same way", async () => {
  const { hooks, requests } = await plugin()
  // spec §4.1: `{id, sessionID, action, resources[], save?[], metadata?}`, event `permission.v2.asked`.
  const request = { id: "per_v2", sessionID: "ses_test", action: "bash", resources: ["rm -rf build"], save: ["rm *"] }
  await hooks.event({ event: { type: "permission.v2.asked", properties: request } })
  assert.deepEqual(replies(requests), [{ path: "/session/ses_test/permissions/per_v2", response: "reject" }])
})

test("other events are not answered", async () => {
  const { hooks, requests } = await plugin()
  await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_test" } } })
  await hooks.event({ event: { type: "permission.replied", properties: { sessionID: "ses_test", requestID: "per_x", reply: "once" } } })
  assert.deepEqual(requests, [])
})

test("a deny OpenCode decided is never relaxed", async () => {
  const { hooks } = await plugin()
  assert.equal(await ask(hooks, permission("read", "src/main.rs"), "deny"), "deny")
})

test("an outside directory goes through external_directory", async () => {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-toolgate-outside-"))
  try {
    const file = path.join(outside, "notes.txt")
    fs.writeFileSync(file, "n\n")
    const { hooks } = await plugin({ ...RULES, external_directory: { "*": "ask", [`${outside}/*`]: "deny" } })
    const error = await before(hooks, "read", { filePath: file })
    assert.ok(error instanceof Error, "reading outside the project under a denied directory must be denied")
    assert.match(error.message, /external_directory/)
  } finally {
    fs.rmSync(outside, { recursive: true, force: true })
  }
})

test("webfetch and MCP tools follow their rules", async () => {
  const { hooks } = await plugin({ ...RULES, docs_search: "deny" })
  const error = await before(hooks, "webfetch", { url: "https://blocked.example/page", format: "text" })
  assert.ok(error instanceof Error)
  assert.match(error.message, /blocked\.example/)
  assert.equal(await before(hooks, "webfetch", { url: "https://fine.example/", format: "text" }), undefined)
  const mcp = await before(hooks, "docs_search", { query: "x" })
  assert.ok(mcp instanceof Error, "an MCP tool `<server>_<tool>` is its own action")
})

test("toolgate missing: ask, never allow, and the reason is logged", async () => {
  const { hooks, requests } = await plugin(RULES, { bin: "/nonexistent/toolgate" })
  assert.equal(await before(hooks, "read", { filePath: "src/main.rs" }), undefined)
  assert.equal(await ask(hooks, permission("read", "src/main.rs")), "ask")
  await event(hooks, asked("read", ["src/main.rs"], ["*"]))
  assert.deepEqual(replies(requests), [], "nothing may be allowed without toolgate's answer")
  const errors = logs(requests).filter((l) => l.level === "error")
  assert.ok(errors.length >= 1, "the failure must be logged")
  assert.equal(errors[0].service, "opencode-toolgate")
  assert.match(JSON.stringify(errors[0].extra), /nonexistent/)
})

test("an unreadable answer: ask, never allow", async () => {
  // `echo` runs and prints its arguments: an answer that is not toolgate's JSON.
  const { hooks, requests } = await plugin(RULES, { bin: "/bin/echo" })
  assert.equal(await ask(hooks, permission("read", "src/main.rs")), "ask")
  await event(hooks, asked("read", ["src/main.rs"], ["*"]))
  assert.deepEqual(replies(requests), [])
  assert.ok(logs(requests).some((l) => l.level === "error" && /unreadable/.test(l.message + JSON.stringify(l.extra))))
})

test("TOOLGATE_BIN names the binary when no option does", async () => {
  const saved = process.env.TOOLGATE_BIN
  process.env.TOOLGATE_BIN = TOOLGATE_BIN
  try {
    const { hooks } = await plugin(RULES, undefined)
    assert.equal(await ask(hooks, permission("read", "src/main.rs")), "allow")
  } finally {
    process.env.TOOLGATE_BIN = saved
  }
})
