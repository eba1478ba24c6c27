//! The `toolgate` binary: stitches every crate together for end users.
//!
//! Every command reports errors in one line on stderr and exits non-zero: 1 when a tool
//! failed, 2 for usage or configuration errors, 3 when a permission was declined.

mod check;
mod config;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for usage and configuration errors.
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
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
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// An extra config file, merged over the global and project configs.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The agent whose rules apply (default: the configured default agent).
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Which effect the rules give an action on resources, and which rule decides.
    #[command(
        after_help = "Examples:\n  toolgate check read .env src/main.rs\n  toolgate check bash 'git status && rm -rf build'\n  toolgate check edit src/lib.rs --agent plan --json"
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
    },
    /// The effective ordered rules of an agent, with where each came from.
    #[command(after_help = "Examples:\n  toolgate config\n  toolgate config --agent plan")]
    Config {
        #[command(flatten)]
        project: Project,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Check {
            action,
            resources,
            project,
            json,
        } => check::check(&project, &action, &resources, json),
        Command::Config { project, json } => check::config(&project, json),
        Command::Approvals { action, project } => match action {
            ApprovalsAction::List { json } => check::approvals_list(&project, json),
            ApprovalsAction::Remove { id } => check::approvals_remove(&project, &id),
            ApprovalsAction::Clear => check::approvals_clear(&project),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("toolgate: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
