// The plugin matches the published @opencode-ai/plugin types, and index.js is what
// src/index.ts compiles to (so the package loads without a build step and never drifts).

import assert from "node:assert/strict"
import { execFileSync } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { test } from "node:test"
import { MODULES, PACKAGE } from "./harness.mjs"

/** A copy of the package's sources next to the installed modules, where tsc resolves them. */
function workspace() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-toolgate-tsc-"))
  fs.mkdirSync(path.join(dir, "src"))
  fs.copyFileSync(path.join(PACKAGE, "src/index.ts"), path.join(dir, "src/index.ts"))
  fs.copyFileSync(path.join(PACKAGE, "tsconfig.json"), path.join(dir, "tsconfig.json"))
  fs.copyFileSync(path.join(PACKAGE, "package.json"), path.join(dir, "package.json"))
  fs.symlinkSync(MODULES, path.join(dir, "node_modules"), "dir")
  return dir
}

function tsc(dir, ...args) {
  const bin = path.join(MODULES, "typescript/bin/tsc")
  try {
    return execFileSync(process.execPath, [bin, "-p", dir, ...args], { encoding: "utf8" })
  } catch (error) {
    assert.fail(`tsc ${args.join(" ")} failed:\n${error.stdout}${error.stderr}`)
  }
}

test("src/index.ts type-checks against the published @opencode-ai/plugin", () => {
  const dir = workspace()
  try {
    const installed = JSON.parse(fs.readFileSync(path.join(MODULES, "@opencode-ai/plugin/package.json"), "utf8"))
    const pinned = JSON.parse(fs.readFileSync(path.join(PACKAGE, "package.json"), "utf8")).devDependencies
    assert.equal(installed.version, pinned["@opencode-ai/plugin"], "the installed plugin types are the pinned ones")
    tsc(dir, "--noEmit")
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("index.js is src/index.ts compiled", () => {
  const dir = workspace()
  try {
    tsc(dir)
    const built = fs.readFileSync(path.join(dir, "index.js"), "utf8")
    const shipped = fs.readFileSync(path.join(PACKAGE, "index.js"), "utf8")
    assert.equal(shipped, built, "run `npm run build` in packages/opencode-toolgate and commit index.js")
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
