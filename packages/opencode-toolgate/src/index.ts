// OpenCode plugin: OpenCode's own tools follow toolgate's rules.
//
// toolgate reproduces OpenCode's permission system (same actions, same resources), so
// every permission OpenCode decides maps one to one onto `toolgate check ACTION
// RESOURCES… --json --dir PROJECT`. Three of OpenCode's plugin hooks carry it:
//
// - `tool.execute.before` runs before every tool call (OpenCode's session loop,
//   packages/opencode/src/session/prompt.ts); throwing there is how a plugin stops a
//   call, and the model sees the error. A toolgate deny throws with the rule that denied.
// - `event` receives `permission.asked` (packages/opencode/src/permission/index.ts
//   publishes the pending request there): a toolgate allow answers it `once`, a deny
//   `reject`, an ask leaves OpenCode's own prompt to the person.
// - `permission.ask` is declared by @opencode-ai/plugin; OpenCode releases up to the
//   pinned one never call it (upstream issue anomalyco/opencode#7006), builds that do
//   get the same answer.
//
// Fail closed: when toolgate cannot be run or its answer cannot be read, nothing is
// allowed; the reason goes to OpenCode's log (`client.app.log`).

import { execFile } from "node:child_process"
import path from "node:path"
import type { Hooks, Plugin, PluginInput } from "@opencode-ai/plugin"

/** toolgate's three effects. */
type Effect = "allow" | "deny" | "ask"

/** One `toolgate check` question: an action on its resources. */
type Question = { action: string; resources: string[] }

/** The answer to a set of questions: the strictest effect, and why when denied. */
type Answer = { effect: Effect; reason: string }

/** The parts of `toolgate check --json` read here (crates/toolgate `check`). */
type CheckResource = {
  resource?: unknown
  effect?: unknown
  rule?: { action?: unknown; resource?: unknown; effect?: unknown; source?: unknown; origin?: unknown } | null
}
type CheckReport = {
  action?: unknown
  effect?: unknown
  resources?: CheckResource[]
  also?: { action?: unknown; effect?: unknown; resources?: CheckResource[] }[]
}

const STRICTNESS: Record<Effect, number> = { allow: 0, ask: 1, deny: 2 }

function effectOf(value: unknown): Effect | undefined {
  return value === "allow" || value === "deny" || value === "ask" ? value : undefined
}

function stricter(a: Effect, b: Effect): Effect {
  return STRICTNESS[a] >= STRICTNESS[b] ? a : b
}

function text(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value)
}

/** The sentence a deny gives the model: which resource, which rule, from where. */
function denial(action: string, resources: CheckResource[] | undefined): string {
  const denied = (resources ?? []).find((r) => r.effect === "deny")
  if (!denied) return `toolgate denies ${action}`
  const rule = denied.rule
  const where = rule ? text(rule.source ?? rule.origin ?? "") : ""
  const named = rule ? ` by the rule "${text(rule.action)}" "${text(rule.resource)}": deny${where ? ` (${where})` : ""}` : ""
  return `toolgate denies ${action} ${text(denied.resource)}${named}`
}

/**
 * Reads one `toolgate check --json` report; the effect is the strictest of the action's
 * own and of every action the command also needs (`also`: a bash line's files, URLs,
 * outside directories), so a composition is never looser than its worst part.
 */
function readReport(stdout: string): Answer {
  const report = JSON.parse(stdout) as CheckReport
  const action = typeof report.action === "string" ? report.action : "?"
  const own = effectOf(report.effect)
  if (!own) throw new Error(`toolgate check answered no effect for ${action}`)
  let answer: Answer = { effect: own, reason: own === "deny" ? denial(action, report.resources) : "" }
  for (const also of report.also ?? []) {
    const effect = effectOf(also.effect)
    if (!effect) throw new Error(`toolgate check answered no effect for ${text(also.action)}`)
    if (effect === "deny" && answer.effect !== "deny") {
      answer = { effect, reason: denial(text(also.action), also.resources) }
    } else {
      answer = { effect: stricter(answer.effect, effect), reason: answer.reason }
    }
  }
  return answer
}

/** Options from `opencode.json` (`["opencode-toolgate", { "bin": … }]`) or the environment. */
type Options = { bin: string; timeoutMs: number }

function options(given: Record<string, unknown> | undefined): Options {
  const bin = typeof given?.bin === "string" ? given.bin : (process.env.TOOLGATE_BIN ?? "toolgate")
  const timeoutMs = typeof given?.timeoutMs === "number" ? given.timeoutMs : 30_000
  return { bin, timeoutMs }
}

/** Runs one `toolgate check`; a failure is an error, never an effect. */
function runCheck(opts: Options, project: string, question: Question): Promise<Answer> {
  // `--` first: a resource such as a bash line `-rf x` is never read as an option.
  const args = ["check", "--json", "--dir", project, "--", question.action, ...question.resources]
  return new Promise((resolve, reject) => {
    execFile(opts.bin, args, { timeout: opts.timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${opts.bin} ${question.action}: ${String(stderr).trim() || error.message}`))
        return
      }
      try {
        resolve(readReport(String(stdout)))
      } catch (cause) {
        reject(new Error(`${opts.bin} ${question.action}: unreadable answer: ${String(cause)}`))
      }
    })
  })
}

/** A path argument as OpenCode asks for it: relative inside the project, else absolute. */
function place(directory: string, worktree: string, file: string): { resource: string; outside?: string } {
  const absolute = path.resolve(directory, file)
  const inside = (root: string) => {
    const rel = path.relative(root, absolute)
    return root !== "/" && rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel)
  }
  if (inside(directory) || inside(worktree)) {
    return { resource: path.relative(directory, absolute) || "." }
  }
  // OpenCode's external-directory approval covers the parent directory (spec §5.1).
  return { resource: absolute, outside: `${path.dirname(absolute)}/*` }
}

/** The files an `apply_patch` patch names (`*** Add|Update|Delete File: PATH`, `*** Move to: PATH`). */
function patchFiles(patch: string): string[] {
  const files: string[] = []
  for (const line of patch.split("\n")) {
    const hit = /^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/.exec(line.trim())
    if (hit?.[1]) files.push(hit[1].trim())
  }
  return files
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined
}

/**
 * What OpenCode's built-in tools ask (their `ctx.ask` in packages/opencode/src/tool/*.ts):
 * the tool's permission and its pattern, plus `external_directory` for a path outside the
 * project. Any other tool (MCP `<server>_<tool>`, custom tools) is its own action on `*`.
 */
function questions(tool: string, args: Record<string, unknown>, directory: string, worktree: string): Question[] {
  const files = (action: string, list: string[]): Question[] => {
    const out: Question[] = []
    for (const file of list) {
      const { resource, outside } = place(directory, worktree, file)
      if (outside) out.push({ action: "external_directory", resources: [outside] })
      out.push({ action, resources: [resource] })
    }
    return out
  }
  switch (tool) {
    case "bash": {
      const command = str(args.command)
      if (!command) return [{ action: "bash", resources: ["*"] }]
      const out: Question[] = []
      const workdir = str(args.workdir)
      if (workdir) {
        const { outside } = place(directory, worktree, workdir)
        if (outside) out.push({ action: "external_directory", resources: [`${path.resolve(directory, workdir)}/*`] })
      }
      // The whole line: toolgate splits it and analyses every part (spec §7.3).
      out.push({ action: "bash", resources: [command] })
      return out
    }
    case "read":
      return files("read", [str(args.filePath) ?? str(args.path) ?? "."])
    case "edit":
    case "write":
    case "multiedit":
      return files("edit", [str(args.filePath) ?? str(args.path) ?? "."])
    case "apply_patch":
    case "patch": {
      const list = patchFiles(str(args.patchText) ?? str(args.patch) ?? "")
      return list.length ? files("edit", list) : [{ action: "edit", resources: ["*"] }]
    }
    case "list":
      return files("list", [str(args.path) ?? "."])
    case "glob":
    case "grep": {
      const out: Question[] = []
      const where = str(args.path)
      if (where) {
        const { outside } = place(directory, worktree, where)
        if (outside) out.push({ action: "external_directory", resources: [`${path.resolve(directory, where)}/*`] })
      }
      out.push({ action: tool, resources: [str(args.pattern) ?? "*"] })
      return out
    }
    case "webfetch":
      return [{ action: "webfetch", resources: [str(args.url) ?? "*"] }]
    case "websearch":
    case "codesearch":
      return [{ action: tool, resources: [str(args.query) ?? "*"] }]
    case "task":
      return [{ action: "task", resources: [str(args.subagent_type) ?? "*"] }]
    case "skill":
      return [{ action: "skill", resources: [str(args.name) ?? "*"] }]
    default:
      return [{ action: tool, resources: ["*"] }]
  }
}

/**
 * A permission as OpenCode hands it over: the pending request of `permission.asked`
 * (`{id, sessionID, permission, patterns, metadata, always, tool}`), or the older
 * `Permission` the `permission.ask` hook is typed with (`{id, sessionID, type, pattern,
 * metadata}`, @opencode-ai/sdk), or the V2 request of `permission.v2.asked` (`{id,
 * sessionID, action, resources}`, spec §4.1).
 */
type Asked = {
  id?: unknown
  sessionID?: unknown
  permission?: unknown
  type?: unknown
  action?: unknown
  patterns?: unknown
  pattern?: unknown
  resources?: unknown
  metadata?: unknown
}

function fromPermission(asked: Asked): Question | undefined {
  const action = str(asked.permission) ?? str(asked.action) ?? str(asked.type)
  if (!action) return undefined
  const metadata = (asked.metadata ?? {}) as Record<string, unknown>
  // The older bash permission carries prefix patterns (`git status *`); its command is in
  // the metadata, and the whole command is what toolgate analyses.
  const command = action === "bash" ? str(metadata.command) : undefined
  if (command) return { action, resources: [command] }
  const raw = asked.patterns ?? asked.resources ?? asked.pattern
  const list = (Array.isArray(raw) ? raw : [raw]).filter((p): p is string => typeof p === "string" && p !== "")
  return { action, resources: list.length ? list : ["*"] }
}

/** The events that announce a pending permission request (V1, older V1, V2: spec §4.13). */
const ASKED = new Set(["permission.asked", "permission.updated", "permission.v2.asked"])

/** The plugin: `"plugin": ["opencode-toolgate"]` in opencode.json. */
export const ToolgatePlugin: Plugin = async (input: PluginInput, given?: Record<string, unknown>): Promise<Hooks> => {
  const opts = options(given)
  const directory = input.directory
  const worktree = input.worktree
  const project = directory

  const log = async (level: "info" | "warn" | "error", message: string, extra?: Record<string, unknown>) => {
    try {
      await input.client.app.log({ body: { service: "opencode-toolgate", level, message, extra } })
    } catch {
      // Logging is best effort: a decision never depends on it.
    }
  }

  /** The strictest answer over the questions; a failure is `ask` (never `allow`). */
  const decide = async (list: Question[]): Promise<Answer> => {
    let answer: Answer = { effect: "allow", reason: "" }
    for (const question of list) {
      let one: Answer
      try {
        one = await runCheck(opts, project, question)
      } catch (error) {
        await log("error", `toolgate could not decide ${question.action}; leaving it to ask`, {
          error: String(error),
          resources: question.resources,
        })
        one = { effect: "ask", reason: "" }
      }
      if (one.effect === "deny") return one
      answer = { effect: stricter(answer.effect, one.effect), reason: "" }
    }
    return answer
  }

  const reply = async (asked: Asked, response: "once" | "reject") => {
    const id = str(asked.id)
    const sessionID = str(asked.sessionID)
    if (!id || !sessionID) return
    try {
      // POST /session/:id/permissions/:permissionID {response} (packages/opencode/src/server
      // routes): OpenCode resolves the pending request with it.
      await input.client.postSessionIdPermissionsPermissionId({
        path: { id: sessionID, permissionID: id },
        body: { response },
      })
    } catch (error) {
      await log("error", "could not answer OpenCode's permission request", { error: String(error), id })
    }
  }

  return {
    "tool.execute.before": async (call, output) => {
      const args = (output.args ?? {}) as Record<string, unknown>
      const answer = await decide(questions(call.tool, args, directory, worktree))
      if (answer.effect === "deny") {
        await log("info", answer.reason, { tool: call.tool, callID: call.callID })
        throw new Error(answer.reason)
      }
    },

    event: async ({ event }) => {
      const { type, properties } = event as { type: string; properties?: Asked }
      if (!ASKED.has(type) || !properties) return
      const question = fromPermission(properties)
      if (!question) return
      const answer = await decide([question])
      if (answer.effect === "allow") await reply(properties, "once")
      if (answer.effect === "deny") {
        await log("info", answer.reason, { permission: question.action })
        await reply(properties, "reject")
      }
    },

    "permission.ask": async (permission, output) => {
      const question = fromPermission(permission as Asked)
      if (!question) return
      const answer = await decide([question])
      if (answer.effect === "deny") {
        await log("info", answer.reason, { permission: question.action })
        output.status = "deny"
      } else if (answer.effect === "allow" && output.status !== "deny") {
        // A deny OpenCode decided itself is never relaxed.
        output.status = "allow"
      }
    },
  }
}

export default ToolgatePlugin
