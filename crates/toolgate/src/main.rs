//! The `toolgate` binary: stitches every crate together for end users.
//!
//! Every command reports errors in one line on stderr and exits non-zero: 1 when a tool
//! failed, 2 for usage or configuration errors, 3 when a permission was declined.

/// Prints one line to standard output, like `println!`, but a closed pipe
/// (`toolgate check … --json | head -1`) ends the command quietly with success, as a Unix
/// filter does, where `println!` would panic. Other write errors are runtime failures.
/// Expands to a `?`, so it is used in functions returning `Result<_, Failure>`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::write_stdout_line(format_args!($($arg)*))?
    };
}

mod app;
mod check;
mod config;
mod gateway;
mod generate;
mod hook;
mod import;
mod log;
mod mcp;
mod notify;
mod remote;
mod run;
mod sandbox;
mod server;
mod setup;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `toolgate -V`: the version and the commit it was built from (build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("TOOLGATE_COMMIT"), ")");

/// `toolgate --version`: also the cargo features the binary was built with.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit: ",
    env!("TOOLGATE_COMMIT"),
    "\nfeatures: ",
    env!("TOOLGATE_FEATURES"),
);

/// Exit code for usage and configuration errors.
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "toolgate",
    version = VERSION,
    long_version = LONG_VERSION,
    about = "The tools an AI coding agent may use, and the rules that decide what they may do.",
    long_about = None,
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Options every project-aware command takes.
#[derive(clap::Args, Clone, Debug)]
struct Project {
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    dir: Option<PathBuf>,
    /// An extra config file, merged over the global and project configs.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// The agent whose rules apply (default: the configured default agent).
    #[arg(long, value_name = "AGENT", global = true)]
    agent: Option<String>,
    /// Apply every part of the project's config files for this run, trusted or not (MCP
    /// servers, a weaker sandbox, `shell_env`; for scripts and CI). Nothing is recorded.
    #[arg(long, global = true)]
    trust_project: bool,
    /// Record, next to each decision, what the rules would decide with FILE merged over
    /// the configs (as `--config` would); nothing else changes. For trying a policy
    /// before enforcing it: `toolgate audit tail` shows `shadow` on each decision.
    #[arg(long, value_name = "FILE", global = true)]
    shadow_config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// The tools an agent is offered (wholly denied ones hidden).
    #[command(after_help = "Examples:\n  toolgate tools\n  toolgate tools --agent explore --json")]
    Tools {
        #[command(flatten)]
        project: Project,
        /// Print JSON (name, description, inputSchema) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the rules, as an agent would.
    #[command(
        after_help = "On a terminal every ask is a prompt (allow once / allow always / reject with optional \
feedback). Without one, asks are declined unless --auto is given.\n\nExit codes: 0 success, 1 the tool failed, \
2 usage or configuration error, 3 a permission was refused.\n\nExamples:\n  toolgate call bash '{\"command\": \"git status\"}'\n  \
echo '{\"command\": \"cargo test\"}' | toolgate call bash - --auto\n  toolgate call bash '{\"command\": \"ls\"}' --json"
    )]
    Call {
        /// The tool's name, as `toolgate tools` lists it.
        tool: String,
        /// The input as JSON, or `-` to read it from stdin (default `{}`).
        input: Option<String>,
        #[command(flatten)]
        project: Project,
        /// The session id (default: a new one).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Approve every ask once that no rule denies (no prompt).
        #[arg(long)]
        auto: bool,
        /// Print the whole settlement as JSON.
        #[arg(long)]
        json: bool,
        /// Run bash in this sandbox mode (off, read-only, workspace-write), over the config's.
        #[arg(long, value_name = "MODE", value_parser = parse_mode)]
        sandbox: Option<toolgate_sandbox::Mode>,
        /// Let background processes the call starts outlive it: `toolgate call` exits once
        /// the answer is printed, and a holder process keeps them (output logged, every exec
        /// checked) until they end or it gets SIGINT/SIGTERM.
        #[arg(long)]
        detach: bool,
    },
    /// Run one command line as the bash tool would — analysed against the rules, asked
    /// when they ask, in the sandbox, every program checked as it starts — on this
    /// process's own input and output. Exits with the command's code, 126 when it was
    /// refused or could not start.
    #[command(
        after_help = "Examples:\n  toolgate exec -- git status\n  toolgate exec -c 'npm test && git diff'\n  toolgate exec -c -l 'make'   (as an agent calls its shell: -l and -i are accepted and ignored)"
    )]
    Exec {
        /// Run the first argument as a bash command line (like `bash -c LINE`); without it,
        /// the arguments are one program and its arguments, quoted as they are.
        #[arg(short = 'c')]
        line: bool,
        /// Accepted and ignored (a login shell's `-l`), so toolgate can stand in as a shell.
        #[arg(short = 'l', hide = true)]
        login: bool,
        /// Accepted and ignored (an interactive shell's `-i`).
        #[arg(short = 'i', hide = true)]
        interactive: bool,
        #[command(flatten)]
        project: Project,
        /// The session id (default: a new one).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Approve every ask once that no rule denies (no prompt).
        #[arg(long)]
        auto: bool,
        /// Run in this sandbox mode (off, read-only, workspace-write), over the config's.
        #[arg(long, value_name = "MODE", value_parser = parse_mode)]
        sandbox: Option<toolgate_sandbox::Mode>,
        /// The command line (with -c), or the program and its arguments.
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "COMMAND"
        )]
        command: Vec<String>,
    },
    /// Which effect the rules give an action on resources, and which rule decides.
    #[command(
        after_help = "Exit codes: 0 when the report is printed (with --exit-code: 0 allow, 3 deny, 4 ask), 2 usage or \
configuration error.\n\nExamples:\n  toolgate check read .env src/main.rs\n  toolgate check bash 'git status && rm -rf build'\n  \
toolgate check edit src/lib.rs --agent plan --json\n  toolgate check bash 'make deploy' --exit-code >/dev/null || echo \"not allowed: $?\""
    )]
    Check {
        /// The action, e.g. read, edit, bash, webfetch, external_directory.
        action: String,
        /// The resources (paths, commands, URLs).
        #[arg(required = true)]
        resources: Vec<String>,
        #[command(flatten)]
        project: Project,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Exit with the effect: 0 allow, 3 deny, 4 ask (for scripts and other hooks).
        #[arg(long)]
        exit_code: bool,
    },
    /// Answer another agent's pre-tool-use hook from the rules: reads the hook's JSON
    /// payload on stdin, prints that agent's answer (allow, deny naming the rule, or ask).
    #[command(
        after_help = "AGENT is claude-code (PreToolUse, PermissionRequest), codex (PreToolUse, PermissionRequest) or \
gemini (BeforeTool). The project is --dir, else the payload's cwd. A payload that cannot be read is refused (exit 2, \
the reason on stderr), never allowed. README \"Hooks for other agents\" has each agent's configuration.\n\nExamples:\n  \
toolgate hook claude-code\n  toolgate hook gemini --dir ~/src/app"
    )]
    Hook {
        /// The agent whose hook runs this: claude-code, codex or gemini (not `--agent`,
        /// the toolgate agent whose rules apply).
        #[arg(value_name = "AGENT")]
        caller: hook::HookAgent,
        #[command(flatten)]
        project: Project,
    },
    /// The effective ordered rules of an agent, with where each came from.
    #[command(after_help = "Examples:\n  toolgate config\n  toolgate config --agent plan")]
    Config {
        #[command(flatten)]
        project: Project,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Print the JSON Schema of a config file (for editors: see README "Configuration").
        #[arg(long)]
        schema: bool,
    },
    /// The audit log of permission decisions and settled calls.
    #[command(after_help = "Examples:\n  toolgate audit tail\n  toolgate audit tail -n 100 --json")]
    Audit {
        #[command(subcommand)]
        action: AuditAction,
        #[command(flatten)]
        project: Project,
    },
    /// Serve the HTTP API, its server-sent events (see GET /doc) and MCP at /mcp.
    #[command(
        after_help = "Prints the address and a fresh bearer token (or uses $TOOLGATE_SERVER_TOKEN, which must have \
at least 32 visible characters and is not printed); every request needs `Authorization: Bearer <token>` and a Host naming this server \
(localhost, 127.0.0.1, [::1] or the listen address, with its port; others with --allow-host). MCP clients use the \
streamable HTTP transport at /mcp with the same token.\n\nExamples:\n  toolgate serve\n  \
toolgate serve --listen 127.0.0.1:8080 --dir ~/src/app\n  \
toolgate serve --listen 0.0.0.0:7777 --allow-host devbox.lan"
    )]
    Serve {
        /// The address to listen on (default 127.0.0.1:7777; 127.0.0.1:0 picks a free port).
        #[arg(long, value_name = "ADDR:PORT")]
        listen: Option<String>,
        /// Another name requests may use in Host and Origin (NAME on the listen port, or
        /// NAME:PORT behind a proxy); repeatable.
        #[arg(long = "allow-host", value_name = "NAME[:PORT]")]
        allow_hosts: Vec<String>,
        #[command(flatten)]
        project: Project,
        /// Run bash in this sandbox mode (off, read-only, workspace-write), over the config's.
        #[arg(long, value_name = "MODE", value_parser = parse_mode)]
        sandbox: Option<toolgate_sandbox::Mode>,
    },
    /// Serve the tools over MCP on stdio, for MCP clients (editors, agents); `mcp list`
    /// shows the configured MCP servers.
    #[command(
        after_help = "Asks are put to the user through MCP elicitation when the client supports it; otherwise \
they are declined unless --auto is given. Logs go to stderr; stdout is the protocol. The tools of the MCP servers \
configured under `mcp` are served too, each under the same rules (toolgate as an MCP gateway).\n\nExamples:\n  \
toolgate mcp\n  toolgate mcp --dir ~/src/app --agent plan\n  toolgate mcp list --json\n  toolgate mcp pins\n  \
toolgate mcp pins --reset github\n  toolgate mcp auth github\n  toolgate mcp auth github --logout"
    )]
    Mcp {
        #[command(subcommand)]
        action: Option<McpAction>,
        #[command(flatten)]
        project: Project,
        /// Approve every ask once that no rule denies (no elicitation).
        #[arg(long)]
        auto: bool,
        /// Run bash in this sandbox mode (off, read-only, workspace-write), over the config's.
        #[arg(long, value_name = "MODE", value_parser = parse_mode)]
        sandbox: Option<toolgate_sandbox::Mode>,
    },
    /// Trust the project's config files: what they may do only once trusted (start MCP
    /// servers, weaken the sandbox, change `shell_env`) then applies.
    #[command(
        after_help = "Lists each project file (opencode.json, toolgate.json, .opencode/… found from the worktree root \
down to the directory) with the parts that apply only once trusted, and trusts its exact content. A file that changes \
needs trust again. Permission rules in project files apply without trust, as in OpenCode.\n\nExamples:\n  \
toolgate trust\n  toolgate trust --dir ~/src/app\n  toolgate trust --revoke"
    )]
    Trust {
        #[command(flatten)]
        project: Project,
        /// Remove the trust of the project's files instead.
        #[arg(long)]
        revoke: bool,
    },
    /// The permission asks a running `toolgate serve` of the project waits on.
    #[command(
        after_help = "Finds the project's running `serve` through its runtime file (<data>/run/, the user's alone) and \
asks it over its local socket; no token is needed or stored.\n\nExamples:\n  toolgate pending\n  toolgate pending --json"
    )]
    Pending {
        #[command(flatten)]
        project: Project,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Allow a pending ask of the project's running `serve`.
    #[command(
        after_help = "Examples:\n  toolgate approve per_0a1b2c3d4e5fXyZ\n  toolgate approve per_0a1b2c3d4e5fXyZ --always"
    )]
    Approve {
        /// The ask's id (`per_…`), as `toolgate pending` shows it.
        id: String,
        /// Also save what `pending` shows after `--always would save` for this project.
        #[arg(long)]
        always: bool,
        #[command(flatten)]
        project: Project,
    },
    /// Reject a pending ask of the project's running `serve`; the model gets the message.
    #[command(after_help = "Examples:\n  toolgate reject per_0a1b2c3d4e5fXyZ --message 'use cargo test -p toolgate'")]
    Reject {
        /// The ask's id (`per_…`), as `toolgate pending` shows it.
        id: String,
        /// Feedback the model gets with the rejection.
        #[arg(long, short = 'm', value_name = "M")]
        message: Option<String>,
        #[command(flatten)]
        project: Project,
    },
    /// The background processes of the project's running `serve`, every session's.
    #[command(
        after_help = "Examples:\n  toolgate shells\n  toolgate shells --output sh_01\n  toolgate shells --kill sh_01"
    )]
    Shells {
        #[command(flatten)]
        project: Project,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Print the output of this process (all that is still kept, at most 32 KiB shown).
        #[arg(long, value_name = "ID", conflicts_with = "kill")]
        output: Option<String>,
        /// End this process's whole tree (TERM, KILL 3 s later).
        #[arg(long, value_name = "ID")]
        kill: Option<String>,
    },
    /// Turn another agent's rules (Claude Code, Codex, Gemini CLI) into toolgate rules:
    /// prints them and the change to the project's toolgate.json; --write applies it.
    #[command(
        after_help = "Reads the agent's own files (Claude Code: ~/.claude/settings.json, .claude/settings.json, \
.claude/settings.local.json, .mcp.json; Codex: $CODEX_HOME/config.toml and rules/*.rules, .codex/; Gemini CLI: \
~/.gemini/policies/*.toml, settings.json), or only the files given with --from. The rules are appended to toolgate.json's \
`permissions` list in the order that gives toolgate's last match the agent's effect; what cannot be expressed is a \
comment there, and is never an allow.\n\nExamples:\n  toolgate import claude-code\n  \
toolgate import codex --from ~/.codex/rules/default.rules --write\n  toolgate import gemini --dir ~/src/app"
    )]
    Import {
        /// The agent whose rules are read (not `--agent`, toolgate's own agent).
        #[arg(value_enum, id = "from_agent", value_name = "AGENT")]
        agent: import::Agent,
        /// Read this file instead of the agent's usual ones (repeatable).
        #[arg(long, value_name = "FILE")]
        from: Vec<PathBuf>,
        /// Merge the rules into the project's toolgate.json (atomically) instead of only
        /// showing them.
        #[arg(long)]
        write: bool,
        #[command(flatten)]
        project: Project,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) for this
    /// version's commands, generated from the command-line definition.
    #[command(
        after_help = "Examples:\n  toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate\n  toolgate completions zsh > \"${fpath[1]}/_toolgate\"\n  toolgate completions fish > ~/.config/fish/completions/toolgate.fish"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), generated from the command-line definition.
    #[command(after_help = "Examples:\n  toolgate man | man -l -\n  toolgate man > ~/.local/share/man/man1/toolgate.1")]
    Man,
    /// The project's saved "always" approvals.
    #[command(
        after_help = "Examples:\n  toolgate approvals list\n  toolgate approvals remove per_0a1b2c3d4e5fXyZ\n  toolgate approvals clear"
    )]
    Approvals {
        #[command(subcommand)]
        action: ApprovalsAction,
        #[command(flatten)]
        project: Project,
    },
}

#[derive(Subcommand)]
enum McpAction {
    /// Start the configured MCP servers and show each one's state, tools and errors.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Log in to a remote MCP server (OAuth): prints the URL to open, waits for the
    /// browser on a loopback redirect and stores the tokens (`--logout` forgets them).
    Auth {
        /// The server's name under `mcp`.
        name: String,
        /// Forget the server's tokens instead.
        #[arg(long)]
        logout: bool,
    },
    /// The pinned MCP tool definitions (trust on first use): each server's identity,
    /// when it was first used, and each tool's hash; `--reset NAME` forgets one server's.
    Pins {
        /// Forget every pin of the servers named NAME: their next start is a first use.
        #[arg(long, value_name = "NAME")]
        reset: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum AuditAction {
    /// Print the last entries (oldest first).
    Tail {
        /// How many entries.
        #[arg(short = 'n', default_value_t = 20)]
        count: usize,
        /// Print the raw JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Every record of one tool call, in order: each decision with its source (the
    /// rule and the file it came from, a saved approval, a person's reply and the front
    /// end, --auto, a hook, exec-time enforcement), then how the call settled.
    Why {
        /// The tool call id (`call` in the records, `toolgate audit tail --json`).
        call: String,
        /// Print the records as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Check the log's hash chain across its rotated files: exits 1 at the first
    /// record changed, removed or put in.
    Verify {
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ApprovalsAction {
    /// List them (id, action, resource, created).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove one by id.
    Remove {
        /// The approval id (`per_…`), as `list` shows it.
        id: String,
    },
    /// Remove all of this project's approvals.
    Clear,
}

/// A failure with the exit code it maps to.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn usage(message: impl std::fmt::Display) -> Self {
        Failure {
            code: EXIT_USAGE,
            message: message.to_string(),
        }
    }

    pub(crate) fn runtime(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
}

/// Writes one line to standard output; see `outln!`.
pub(crate) fn write_stdout_line(args: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        Ok(()) => Ok(()),
        // The reader is gone: nothing more can be shown, and that is not an error of ours.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure {
            code: 0,
            message: String::new(),
        }),
        Err(error) => Err(Failure::runtime(format!("cannot write to standard output: {error}"))),
    }
}

fn parse_mode(text: &str) -> Result<toolgate_sandbox::Mode, String> {
    text.parse()
}

/// The command line `toolgate exec` runs: with `-c`, its one argument (more would be the
/// shell's `$0` and positional parameters, which the bash tool has no place for); else
/// the program and its arguments, each quoted for bash unless it needs no quoting.
fn exec_line(line: bool, command: &[String]) -> Result<String, Failure> {
    if line {
        return match command {
            [line] => Ok(line.clone()),
            _ => Err(Failure::usage(
                "-c takes exactly one command line; put the whole line in one argument, or leave -c out to run a program with its arguments",
            )),
        };
    }
    let quoted: Vec<String> = command
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect();
    Ok(quoted.join(" "))
}

/// Makes this process the subreaper of everything it starts (on Linux): a process of a
/// command that is orphaned (a daemon's double fork) is adopted here, not by init, so it
/// stays a descendant. A background process's orphans are then still found and ended
/// (their shell ID says whose they are), and the local socket's check that a peer does
/// not descend from `serve` holds for them too. An adopted process that ends while
/// toolgate runs and was never seen as a background process's stays a zombie until
/// toolgate exits: reaping any other child could take an exit status from the code
/// that waits for it.
fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

fn main() -> ExitCode {
    // The sandbox trampoline: before anything else, while the process has one thread.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|arg| arg == toolgate_sandbox::TRAMPOLINE) {
        let exit = toolgate_sandbox::trampoline_main(args.collect());
        if let Some(line) = &exit.stdout {
            println!("{line}");
        }
        if let Some(line) = &exit.stderr {
            eprintln!("{line}");
        }
        return ExitCode::from(exit.code);
    }
    // Descriptors the parent left open (a harness's control socket, a file the sandbox
    // hides) must not reach the commands a model writes, nor MCP servers: every one above
    // stderr is closed on exec. Ours are opened close-on-exec by the standard library.
    // Done while the process has one thread, so no descriptor is being created meanwhile.
    close_fds::set_fds_cloexec(3, &[]);
    log::init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Tools { project, json } => run::tools(&project, json),
        Command::Call { detach: true, .. } if std::env::var_os(run::HOLD_ENV).is_none() => run::detach(),
        Command::Call {
            tool,
            input,
            project,
            session,
            auto,
            json,
            sandbox,
            ..
        } => {
            adopt_orphans();
            run::call(
                &project,
                run::CallArgs {
                    tool: &tool,
                    input: input.as_deref(),
                    session: session.as_deref(),
                    auto,
                    json,
                    sandbox,
                    attached: false,
                },
            )
        }
        Command::Exec {
            line,
            project,
            session,
            auto,
            sandbox,
            command,
            ..
        } => {
            adopt_orphans();
            exec_line(line, &command).and_then(|line| {
                run::call(
                    &project,
                    run::CallArgs {
                        tool: "bash",
                        input: Some(&serde_json::json!({ "command": line }).to_string()),
                        session: session.as_deref(),
                        auto,
                        json: false,
                        sandbox,
                        attached: true,
                    },
                )
            })
        }
        Command::Check {
            action,
            resources,
            project,
            json,
            exit_code,
        } => check::check(&project, &action, &resources, json, exit_code),
        Command::Hook { caller, project } => hook::hook(&project, caller),
        Command::Config { schema: true, .. } => check::schema(),
        Command::Config { project, json, .. } => check::config(&project, json),
        Command::Serve {
            listen,
            allow_hosts,
            project,
            sandbox,
        } => {
            adopt_orphans();
            server::serve(&project, listen.as_deref(), &allow_hosts, sandbox)
        }
        Command::Mcp {
            action: Some(McpAction::List { json }),
            project,
            ..
        } => mcp::list(&project, json),
        Command::Mcp {
            action: Some(McpAction::Auth { name, logout }),
            project,
            ..
        } => mcp::auth(&project, &name, logout),
        Command::Mcp {
            action: Some(McpAction::Pins { reset, json }),
            project,
            ..
        } => mcp::pins(&project, reset.as_deref(), json),
        Command::Mcp {
            action: None,
            project,
            auto,
            sandbox,
        } => {
            adopt_orphans();
            mcp::serve_stdio(&project, auto, sandbox)
        }
        Command::Audit { action, project } => match action {
            AuditAction::Tail { count, json } => run::audit_tail(&project, count, json),
            AuditAction::Why { call, json } => run::audit_why(&project, &call, json),
            AuditAction::Verify { json } => run::audit_verify(&project, json),
        },
        Command::Pending { project, json } => remote::pending(&project, json),
        Command::Approve { id, always, project } => {
            remote::answer(&project, &id, if always { "always" } else { "once" }, None)
        }
        Command::Reject { id, message, project } => remote::answer(&project, &id, "reject", message.as_deref()),
        Command::Shells {
            project,
            json,
            output,
            kill,
        } => remote::shells(&project, json, output.as_deref(), kill.as_deref()),
        Command::Trust { project, revoke } => check::trust(&project, revoke),
        Command::Import {
            agent,
            from,
            write,
            project,
        } => import::run(&project, agent, &from, write),
        Command::Completions { shell } => generate::completions(shell),
        Command::Man => generate::man(),
        Command::Approvals { action, project } => match action {
            ApprovalsAction::List { json } => check::approvals_list(&project, json),
            ApprovalsAction::Remove { id } => check::approvals_remove(&project, &id),
            ApprovalsAction::Clear => check::approvals_clear(&project),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            // An empty message means the command already reported (a tool's own error).
            if !failure.message.is_empty() {
                // One line, whatever a lower layer put in its message.
                let line = failure.message.split_whitespace().collect::<Vec<_>>().join(" ");
                eprintln!("toolgate: {line}");
            }
            ExitCode::from(failure.code)
        }
    }
}
