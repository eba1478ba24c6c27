#!/usr/bin/env node
// Runs the prebuilt toolgate binary of this platform: the one optional dependency
// (`@toolgate/<os>-<cpu>[-<libc>]`) that npm installed for it, as esbuild and Biome do.
// Arguments, standard input and output pass through unchanged (an MCP client speaks to
// the binary itself); SIGINT, SIGTERM and SIGHUP are passed on, and this process exits
// with the binary's code, or by the same signal.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

/** The C library of this Linux: musl when Node's own report names no glibc. */
function linuxLibc() {
  try {
    const header = process.report && process.report.getReport().header;
    return header && header.glibcVersionRuntime ? "gnu" : "musl";
  } catch {
    return "gnu";
  }
}

/** The platform packages that can run here, best first. */
function candidates() {
  const cpu = { x64: "x64", arm64: "arm64" }[process.arch];
  if (!cpu) return [];
  if (process.platform === "linux") {
    // The musl build is static and runs on any Linux; the glibc one is preferred where
    // it can run (glibc's allocator and DNS resolver).
    const libc = linuxLibc();
    return libc === "gnu"
      ? [`@toolgate/linux-${cpu}-gnu`, `@toolgate/linux-${cpu}-musl`]
      : [`@toolgate/linux-${cpu}-musl`];
  }
  if (process.platform === "darwin") return [`@toolgate/darwin-${cpu}`];
  return [];
}

function binary() {
  if (process.env.TOOLGATE_BINARY) return process.env.TOOLGATE_BINARY;
  const tried = candidates();
  for (const name of tried) {
    try {
      const manifest = require.resolve(`${name}/package.json`);
      return path.join(path.dirname(manifest), "bin", "toolgate");
    } catch {
      // Not installed (another platform's package): try the next.
    }
  }
  const wanted = tried.length ? tried.join(" or ") : "none is built for this platform";
  process.stderr.write(
    `toolgate: no prebuilt binary for ${process.platform}-${process.arch} is installed (${wanted}); ` +
      "reinstall without --no-optional / --omit=optional, or install from source: cargo install toolgate\n",
  );
  process.exit(2);
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}
child.on("error", (error) => {
  process.stderr.write(`toolgate: cannot start ${error.path || "the binary"}: ${error.message}\n`);
  process.exit(2);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
