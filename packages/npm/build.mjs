// Builds the npm packages from the release archives of `cargo xtask dist`:
//   node packages/npm/build.mjs DIST_DIR OUT_DIR VERSION
// One platform package per archive found (`@toolgate/<os>-<cpu>[-<libc>]`, with `os`,
// `cpu` and `libc` so npm installs only the one that fits) holding the binary and its
// sandbox trampoline, and the `toolgate` package whose optional dependencies name every
// platform package and whose `toolgate` command runs the installed one. Each is written
// with `npm pack` to OUT_DIR as a .tgz; nothing is published.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");

/** Rust target → npm platform package suffix and its npm constraints. */
export const PLATFORMS = {
  "x86_64-unknown-linux-gnu": { suffix: "linux-x64-gnu", os: "linux", cpu: "x64", libc: "glibc" },
  "x86_64-unknown-linux-musl": { suffix: "linux-x64-musl", os: "linux", cpu: "x64", libc: "musl" },
  "aarch64-unknown-linux-gnu": { suffix: "linux-arm64-gnu", os: "linux", cpu: "arm64", libc: "glibc" },
  "aarch64-unknown-linux-musl": { suffix: "linux-arm64-musl", os: "linux", cpu: "arm64", libc: "musl" },
  "x86_64-apple-darwin": { suffix: "darwin-x64", os: "darwin", cpu: "x64" },
  "aarch64-apple-darwin": { suffix: "darwin-arm64", os: "darwin", cpu: "arm64" },
};

const [distDir, outDir, version] = process.argv.slice(2);
if (!distDir || !outDir || !version) {
  console.error("usage: node packages/npm/build.mjs DIST_DIR OUT_DIR VERSION");
  process.exit(2);
}
fs.rmSync(outDir, { recursive: true, force: true });
fs.mkdirSync(outDir, { recursive: true });
const stage = fs.mkdtempSync(path.join(os.tmpdir(), "toolgate-npm-"));
const licences = ["LICENSE-MIT", "LICENSE-APACHE"];
const common = {
  version,
  license: "MIT OR Apache-2.0",
  repository: { type: "git", url: "git+https://github.com/toolgate/toolgate.git", directory: "packages/npm" },
};

function pack(dir) {
  const out = execFileSync("npm", ["pack", "--silent", "--pack-destination", path.resolve(outDir)], {
    cwd: dir,
    encoding: "utf8",
  });
  const file = out.trim().split("\n").pop();
  console.log(`npm: ${path.join(outDir, file)}`);
}

let built = 0;
for (const [target, platform] of Object.entries(PLATFORMS)) {
  const archive = path.join(distDir, `toolgate-${version}-${target}.tar.gz`);
  if (!fs.existsSync(archive)) {
    console.log(`npm: @toolgate/${platform.suffix} skipped (no ${path.basename(archive)})`);
    continue;
  }
  const unpacked = path.join(stage, "archives");
  fs.mkdirSync(unpacked, { recursive: true });
  execFileSync("tar", ["-xzf", archive, "-C", unpacked]);
  const from = path.join(unpacked, `toolgate-${version}-${target}`);
  const dir = path.join(stage, platform.suffix);
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  for (const binary of ["toolgate", "toolgate-sandbox-exec"]) {
    fs.copyFileSync(path.join(from, binary), path.join(dir, "bin", binary));
    fs.chmodSync(path.join(dir, "bin", binary), 0o755);
  }
  for (const file of licences) fs.copyFileSync(path.join(from, file), path.join(dir, file));
  const manifest = {
    name: `@toolgate/${platform.suffix}`,
    ...common,
    description: `The toolgate binary for ${target} (installed by the toolgate package)`,
    os: [platform.os],
    cpu: [platform.cpu],
    ...(platform.libc ? { libc: [platform.libc] } : {}),
    files: ["bin/toolgate", "bin/toolgate-sandbox-exec", ...licences],
    preferUnplugged: true,
  };
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
  fs.writeFileSync(
    path.join(dir, "README.md"),
    `# @toolgate/${platform.suffix}\n\nThe toolgate binary for \`${target}\`. Install \`toolgate\` instead: it picks this package where it fits.\n`,
  );
  pack(dir);
  built += 1;
}
if (built === 0) {
  console.error(`npm: no archive for version ${version} in ${distDir}`);
  process.exit(1);
}

const main = path.join(stage, "toolgate");
fs.cpSync(path.join(here, "toolgate"), main, { recursive: true });
for (const file of licences) fs.copyFileSync(path.join(root, file), path.join(main, file));
const manifest = JSON.parse(fs.readFileSync(path.join(main, "package.json"), "utf8"));
manifest.version = version;
manifest.optionalDependencies = Object.fromEntries(
  Object.values(PLATFORMS).map((platform) => [`@toolgate/${platform.suffix}`, version]),
);
fs.writeFileSync(path.join(main, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
pack(main);
fs.rmSync(stage, { recursive: true, force: true });
