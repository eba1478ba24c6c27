//! Package managers and build tools: their global options, and the directories in
//! the home they write.

use super::getopt::{head, split_value};
use super::{Ctx, Verdict};
use crate::arg::{Access, Arg};

/// The directories under the home directory that `name` writes its caches and logs to
/// (relative to the home), for any run but a bare version query: `npm --version` writes
/// nothing, `npm help` already logs.
pub(crate) fn home_writes(name: &str, args: &[Arg]) -> &'static [&'static str] {
    let dirs: &'static [&'static str] = match name {
        "npm" | "npx" => &[".npm"],
        "pnpm" => &[".local/share/pnpm", ".cache/pnpm"],
        "yarn" => &[".cache/yarn", ".yarn"],
        "bun" | "bunx" => &[".bun"],
        "cargo" => &[".cargo"],
        "go" => &["go", ".cache/go-build"],
        "pip" | "pip3" => &[".cache/pip"],
        "uv" | "uvx" => &[".cache/uv", ".local/share/uv"],
        "poetry" => &[".cache/pypoetry"],
        _ => return &[],
    };
    match args.get(1..) {
        Some([only]) if matches!(only.literal().as_deref(), Some("--version" | "-v" | "-V")) => &[],
        _ => dirs,
    }
}

/// Multi-level commands with global options before the subcommand: also matched without
/// them (`npm --prefix x run build` is `npm run build` too).
pub(super) fn global_options(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let (flags, values): (&[&str], &[&str]) = match ctx.name {
        "npm" | "npx" => (
            &[
                "-g",
                "--global",
                "-s",
                "--silent",
                "-q",
                "--quiet",
                "-y",
                "--yes",
                "-d",
                "--verbose",
                "--no-audit",
                "--no-fund",
            ],
            &["--prefix", "-w", "--workspace", "--loglevel", "-C", "--registry"],
        ),
        "pnpm" => (
            &["-r", "--recursive", "-s", "--silent", "-w", "--workspace-root"],
            &["-C", "--dir", "--filter", "-F", "--loglevel"],
        ),
        "yarn" => (&["-s", "--silent", "--verbose"], &["--cwd"]),
        "cargo" => (
            &["-v", "--verbose", "-q", "--quiet", "--frozen", "--locked", "--offline"],
            &["--color", "-C", "-Z"],
        ),
        "go" => (&[], &["-C"]),
        "docker" | "podman" => (
            &["-D", "--debug", "--tls", "--tlsverify"],
            &[
                "--context",
                "-c",
                "-H",
                "--host",
                "--config",
                "-l",
                "--log-level",
                "--tlscacert",
                "--tlscert",
                "--tlskey",
            ],
        ),
        "kubectl" => (
            &[],
            &[
                "--context",
                "-n",
                "--namespace",
                "--kubeconfig",
                "--cluster",
                "--user",
                "-v",
                "-s",
                "--server",
                "--token",
                "--as",
            ],
        ),
        "terraform" => (&[], &[]),
        "helm" => (&["--debug"], &["--kube-context", "-n", "--namespace", "--kubeconfig"]),
        "gh" => (&[], &["-R", "--repo"]),
        _ => (&[], &[]),
    };
    let args = ctx.args;
    let mut index = 0;
    let mut kept = vec![0];
    let mut stripped = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else { break };
        if ctx.name == "cargo" && text.starts_with('+') && index == 0 {
            stripped = true;
            index += 1;
            continue;
        }
        if ctx.name == "terraform" && text.starts_with("-chdir=") {
            verdict.effect(&split_value(arg, 7), Access::Dir, false);
            stripped = true;
            index += 1;
            continue;
        }
        if ctx.name == "cargo" && (text == "--config" || text.starts_with("--config=")) {
            verdict.opaque("`cargo --config` can set a program to run");
            return;
        }
        let (name, attached) = match text.split_once('=') {
            Some((name, _)) if name.starts_with("--") => (name.to_string(), true),
            _ => (text.to_string(), false),
        };
        if flags.contains(&name.as_str()) {
            stripped = true;
            index += 1;
            continue;
        }
        if values.contains(&name.as_str()) {
            let value = if attached {
                Some(split_value(arg, name.len() + 1))
            } else {
                args.get(index + 1).cloned()
            };
            if matches!(name.as_str(), "--prefix" | "-C" | "--dir" | "--cwd")
                && let Some(value) = &value
            {
                verdict.effect(value, Access::Dir, false);
            }
            stripped = true;
            index += if attached { 1 } else { 2 };
            continue;
        }
        break;
    }
    if ctx.name == "go"
        && args
            .iter()
            .any(|arg| matches!(head(arg).split('=').next(), Some("-exec" | "-toolexec")))
    {
        verdict.opaque("`go -exec/-toolexec` runs a program");
    }
    if stripped {
        kept.extend((index..args.len()).map(|i| i + 1));
        verdict.forms.push(kept);
    }
}
