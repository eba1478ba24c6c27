// Loads the plugin the way OpenCode's plugin runtime does, against real projects and the
// real toolgate binary.
//
// Environment (both required; tests/tests/it/opencode_plugin.rs sets them):
// - TOOLGATE_BIN: the toolgate binary.
// - TOOLGATE_OPENCODE_MODULES: a node_modules holding the published @opencode-ai/plugin
//   (and its @opencode-ai/sdk), typescript and @types/node, at the versions pinned in
//   package.json's devDependencies.

import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/** The package directory (holds package.json). */
export const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

function required(name) {
  const value = process.env[name]
  if (!value) throw new Error(`${name} must be set (see test/harness.mjs)`)
  return value
}

export const TOOLGATE_BIN = required("TOOLGATE_BIN")
export const MODULES = required("TOOLGATE_OPENCODE_MODULES")

// toolgate reads the person's global config and OpenCode's: every run here gets its own,
// empty ones (as tests/src/lib.rs `isolate_opencode` does for the Rust tests).
const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-toolgate-"))
process.env.TOOLGATE_DATA_DIR = path.join(ROOT, "data")
process.env.TOOLGATE_CONFIG_DIR = path.join(ROOT, "config")
process.env.XDG_CONFIG_HOME = path.join(ROOT, "xdg")
process.env.OPENCODE_TEST_MANAGED_CONFIG_DIR = path.join(ROOT, "managed")
for (const name of [
  "OPENCODE_CONFIG",
  "OPENCODE_CONFIG_DIR",
  "OPENCODE_CONFIG_CONTENT",
  "OPENCODE_PERMISSION",
  "OPENCODE_DISABLE_PROJECT_CONFIG",
]) {
  delete process.env[name]
}
process.on("exit", () => fs.rmSync(ROOT, { recursive: true, force: true }))

/** A project directory holding `toolgate.json` with `permission` as its rules. */
export function project(permission, files = {}) {
  const dir = fs.mkdtempSync(path.join(ROOT, "project-"))
  fs.writeFileSync(path.join(dir, "toolgate.json"), JSON.stringify({ permission }))
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true })
    fs.writeFileSync(path.join(dir, name), content)
  }
  return fs.realpathSync(dir)
}

/** The published SDK's `createOpencodeClient`, from its package's `exports`. */
async function sdk() {
  const dir = path.join(MODULES, "@opencode-ai/sdk")
  const json = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
  return import(pathToFileURL(path.join(dir, json.exports["."].import)).href)
}

/**
 * The plugin's entry as OpenCode resolves an npm plugin (packages/opencode/src/plugin/
 * shared.ts `resolvePackageEntrypoint`: `exports["./server"]`, else `main`).
 */
export function entry() {
  const json = JSON.parse(fs.readFileSync(path.join(PACKAGE, "package.json"), "utf8"))
  const raw = json.exports?.["./server"] ?? json.main
  return pathToFileURL(path.resolve(PACKAGE, raw)).href
}

/**
 * Loads the plugin for `directory` as OpenCode does (packages/opencode/src/plugin/index.ts):
 * the same `PluginInput` (`client` from `createOpencodeClient` with OpenCode's base URL and
 * an in-process `fetch`, `project`, `worktree`, `directory`, `serverUrl`, `$`), every
 * distinct exported function called with it. The client's `fetch` records each request
 * OpenCode's server would get instead of serving it.
 */
export async function load(directory, options) {
  const { createOpencodeClient } = await sdk()
  const requests = []
  const client = createOpencodeClient({
    baseUrl: "http://localhost:4096",
    directory,
    fetch: async (request) => {
      const body = await request.text()
      requests.push({ method: request.method, path: new URL(request.url).pathname, body: body ? JSON.parse(body) : undefined })
      return new Response("true", { status: 200, headers: { "content-type": "application/json" } })
    },
  })
  const input = {
    client,
    project: { id: "toolgate-test", worktree: directory, vcs: "git", time: { created: Date.now() } },
    worktree: directory,
    directory,
    serverUrl: new URL("http://localhost:4096"),
    experimental_workspace: { register() {} },
    // Bun's shell; the plugin never uses it, and these tests run under Node.
    $: () => {
      throw new Error("Bun.$ is not available in the test harness")
    },
  }
  const mod = await import(entry())
  const seen = new Set()
  const hooks = []
  for (const fn of Object.values(mod)) {
    if (seen.has(fn)) continue
    seen.add(fn)
    hooks.push(await fn(input, options))
  }
  if (hooks.length !== 1) throw new Error(`expected one plugin, got ${hooks.length}`)
  return { hooks: hooks[0], requests }
}

let counter = 0

/**
 * A pending permission request as OpenCode publishes it in `permission.asked`
 * (packages/opencode/src/permission/index.ts, `Request`: id, sessionID, permission,
 * patterns, metadata, always, tool{messageID, callID}).
 */
export function asked(permission, patterns, always = patterns) {
  counter += 1
  return {
    id: `per_test${counter}`,
    sessionID: "ses_test",
    permission,
    patterns,
    metadata: {},
    always,
    tool: { messageID: "msg_test", callID: `call_${counter}` },
  }
}

/**
 * The `Permission` the `permission.ask` hook is typed with (@opencode-ai/sdk
 * `dist/gen/types.gen.d.ts`: id, type, pattern, sessionID, messageID, callID, title,
 * metadata, time).
 */
export function permission(type, pattern, metadata = {}) {
  counter += 1
  return {
    id: `per_test${counter}`,
    type,
    pattern,
    sessionID: "ses_test",
    messageID: "msg_test",
    callID: `call_${counter}`,
    title: Array.isArray(pattern) ? pattern.join(" ") : String(pattern),
    metadata,
    time: { created: Date.now() },
  }
}

/** The answers the plugin gave OpenCode's permission route (`POST /session/:id/permissions/:permissionID`). */
export function replies(requests) {
  return requests
    .filter((r) => r.method === "POST" && r.path.startsWith("/session/"))
    .map((r) => ({ path: r.path, response: r.body?.response }))
}

/** The log lines the plugin sent (`POST /log`). */
export function logs(requests) {
  return requests.filter((r) => r.method === "POST" && r.path === "/log").map((r) => r.body)
}
