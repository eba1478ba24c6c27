//! `toolgate completions SHELL` and `toolgate man`: generated from the same clap
//! definition that parses the command line, so they cannot drift from it. `cargo xtask
//! dist` runs both to put the scripts and the page in every release archive.

use std::io::Write;

use clap::CommandFactory;

use crate::{Cli, Failure};

/// Writes the completion script for `shell` to standard output.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<(), Failure> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "toolgate", &mut script);
    write_all(&script)
}

/// Writes the roff manual page, `toolgate(1)`, to standard output: the top command with
/// every subcommand's usage, options and examples in one page.
pub(crate) fn man() -> Result<(), Failure> {
    let command = Cli::command().version(crate::VERSION).long_version(crate::LONG_VERSION);
    let mut page = Vec::new();
    let man = clap_mangen::Man::new(command.clone());
    man.render(&mut page)
        .map_err(|error| Failure::runtime(format!("cannot render the manual page: {error}")))?;
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        render_subcommand(&mut page, sub, "toolgate")?;
    }
    write_all(&page)
}

/// One `SUBCOMMAND` section: its synopsis, description and options, then its own
/// subcommands (`mcp list`, `audit tail`, …) the same way.
fn render_subcommand(page: &mut Vec<u8>, sub: &clap::Command, parent: &str) -> Result<(), Failure> {
    let name = format!("{parent} {}", sub.get_name());
    let write = |page: &mut Vec<u8>, text: String| page.extend_from_slice(text.as_bytes());
    write(page, format!(".SH \"{}\"\n", name.to_uppercase()));
    let sub = sub.clone().bin_name(&name).display_name(&name);
    let man = clap_mangen::Man::new(sub.clone());
    let mut part = Vec::new();
    man.render_synopsis_section(&mut part)
        .and_then(|()| man.render_description_section(&mut part))
        .and_then(|()| man.render_options_section(&mut part))
        .and_then(|()| man.render_extra_section(&mut part))
        .map_err(|error| Failure::runtime(format!("cannot render the manual page: {error}")))?;
    // Each part renders as a top-level section (.SH); inside a subcommand's section they
    // are subsections.
    let part = String::from_utf8_lossy(&part).replace("\n.SH ", "\n.SS ");
    let part = part
        .strip_prefix(".SH ")
        .map_or(part.clone(), |rest| format!(".SS {rest}"));
    write(page, part);
    for nested in sub.get_subcommands().filter(|nested| !nested.is_hide_set()) {
        render_subcommand(page, nested, &name)?;
    }
    Ok(())
}

fn write_all(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure {
            code: 0,
            message: String::new(),
        }),
        Err(error) => Err(Failure::runtime(format!("cannot write to standard output: {error}"))),
    }
}
