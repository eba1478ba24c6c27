//! Network clients: `curl`, `wget`, `ssh` — the files they send or write.

use std::borrow::Cow;

use super::getopt::{Spec, getopt, head, split_value};
use super::table::NONE;
use super::{Ctx, Role, Verdict, push_role};
use crate::arg::{Access, Arg};
use crate::expand::{Field, PathHole, Seg};

pub(super) fn curl(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let write = [
        "-o",
        "--output",
        "-D",
        "--dump-header",
        "-c",
        "--cookie-jar",
        "--trace",
        "--trace-ascii",
        "--stderr",
        "--libcurl",
        "--etag-save",
        "--hsts",
        "--alt-svc",
    ];
    let read_file = [
        "-T",
        "--upload-file",
        "--netrc-file",
        "-E",
        "--cert",
        "--key",
        "--cacert",
        "--capath",
        "--crlfile",
        "--proxy-cacert",
        "--proxy-cert",
        "--proxy-key",
        "--etag-compare",
    ];
    let data = [
        "-d",
        "--data",
        "--data-binary",
        "--data-ascii",
        "--data-urlencode",
        "--json",
        "-F",
        "--form",
        "--form-string",
        "-b",
        "--cookie",
        "-H",
        "--header",
    ];
    let config = ["-K", "--config"];
    let with_value = [
        "-A",
        "--user-agent",
        "-e",
        "--referer",
        "-u",
        "--user",
        "-X",
        "--request",
        "-x",
        "--proxy",
        "-m",
        "--max-time",
        "--connect-timeout",
        "-r",
        "--range",
        "-w",
        "--write-out",
        "-Y",
        "--speed-limit",
        "-y",
        "--speed-time",
        "-z",
        "--time-cond",
        "--resolve",
        "--retry",
        "--retry-delay",
        "--retry-max-time",
        "--limit-rate",
        "--max-redirs",
        "--max-filesize",
        "--interface",
        "--dns-servers",
        "--url",
        "--output-dir",
        "-U",
        "--proxy-user",
        "--oauth2-bearer",
        "--connect-to",
        "-Q",
        "--quote",
        "-P",
        "--ftp-port",
        "--local-port",
        "--noproxy",
        "-C",
        "--continue-at",
    ];
    let mut index = 0;
    let mut output_dir: Option<Field> = None;
    while let Some(arg) = args.get(index) {
        let text = head(arg);
        let (name, attached) = match text.split_once('=') {
            Some((name, _)) if name.starts_with("--") => (name.to_string(), Some(split_value(arg, name.len() + 1))),
            _ => (text.clone(), None),
        };
        let short_attached = (!name.starts_with("--") && name.len() > 2 && name.starts_with('-'))
            .then(|| (name[..2].to_string(), split_value(arg, 2)));
        let (name, attached) = match short_attached {
            Some((short, value))
                if write.contains(&short.as_str())
                    || read_file.contains(&short.as_str())
                    || data.contains(&short.as_str())
                    || config.contains(&short.as_str())
                    || with_value.contains(&short.as_str()) =>
            {
                (short, Some(value))
            }
            _ => (name, attached),
        };
        let takes = write.contains(&name.as_str())
            || read_file.contains(&name.as_str())
            || data.contains(&name.as_str())
            || config.contains(&name.as_str())
            || with_value.contains(&name.as_str());
        let value = if takes {
            match attached {
                Some(value) => Some(value),
                None => {
                    index += 1;
                    args.get(index).cloned()
                }
            }
        } else {
            None
        };
        if let Some(value) = &value {
            if write.contains(&name.as_str()) {
                verdict.effect_under(value, Access::Write, false, output_dir.as_ref());
            } else if read_file.contains(&name.as_str()) {
                push_role(verdict, value, Role::Read, false);
            } else if config.contains(&name.as_str()) {
                push_role(verdict, value, Role::Read, false);
                verdict.opaque("`curl --config` reads options from a file");
            } else if name == "--output-dir" {
                output_dir = Some(value.field.clone());
            } else if data.contains(&name.as_str()) {
                data_file(verdict, value);
            }
        }
        if matches!(
            name.as_str(),
            "-O" | "--remote-name" | "--remote-name-all" | "-J" | "--remote-header-name"
        ) {
            let target = Arg {
                field: Field {
                    segs: vec![Seg::Hole {
                        display: "(remote name)".into(),
                        class: PathHole::Name,
                        value: None,
                    }],
                },
                vanish: false,
                split: false,
            };
            verdict.effect_under(&target, Access::Write, false, output_dir.as_ref());
        }
        if arg.maybe_option() {
            verdict.effect(&Arg::unknown(&arg.field.display()), Access::Read, false);
        }
        index += 1;
    }
}

/// `@file` and `<file` in curl data and form values read the file.
pub(super) fn data_file(verdict: &mut Verdict, value: &Arg) {
    let text = head(value);
    let at = text
        .find('@')
        .filter(|_| !text.starts_with("http"))
        .or_else(|| text.find('<'));
    if let Some(at) = at {
        let file = split_value(value, at + 1);
        let end = head(&file).find(';').unwrap_or(usize::MAX);
        let file = if end == usize::MAX {
            file
        } else {
            Arg::text(head(&file)[..end].to_string())
        };
        if file.literal().as_deref() != Some("-") {
            verdict.effect(&file, Access::Read, false);
        }
    } else if value.value().is_none() {
        verdict.effect(&Arg::unknown(&value.field.display()), Access::Read, false);
    }
}

pub(super) fn wget(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let spec = Spec {
        flags: "bqvnNcSrkKmpEHLx46dFh",
        values: "eoaOiPTtwlQUADRIXB",
        long: &[
            "background",
            "quiet",
            "verbose",
            "no-verbose",
            "continue",
            "timestamping",
            "server-response",
            "recursive",
            "convert-links",
            "mirror",
            "page-requisites",
            "spider",
            "no-clobber",
            "help",
            "version",
            "no-check-certificate",
            "force-directories",
            "no-directories",
            "no-parent",
            "content-disposition",
            "adjust-extension",
        ],
        long_values: &[
            "execute",
            "output-file",
            "append-output",
            "output-document",
            "input-file",
            "directory-prefix",
            "post-file",
            "body-file",
            "post-data",
            "body-data",
            "method",
            "user-agent",
            "header",
            "tries",
            "timeout",
            "wait",
            "level",
            "quota",
            "user",
            "password",
            "load-cookies",
            "save-cookies",
            "config",
            "certificate",
            "private-key",
            "ca-certificate",
            "accept",
            "reject",
            "domains",
            "base",
            "referer",
            "limit-rate",
        ],
        ..NONE
    };
    let parsed = getopt(&spec, ctx.args);
    if parsed.has(&["-e", "--execute", "--config"]) {
        verdict.opaque("`wget --execute/--config` runs wgetrc commands");
    }
    let prefix = parsed
        .values(&["-P", "--directory-prefix"])
        .next()
        .map(|arg| arg.field.clone());
    for value in parsed.values(&["-o", "--output-file", "-a", "--append-output", "--save-cookies"]) {
        push_role(verdict, value, Role::Write, false);
    }
    for value in parsed.values(&[
        "-i",
        "--input-file",
        "--post-file",
        "--body-file",
        "--load-cookies",
        "--certificate",
        "--private-key",
        "--ca-certificate",
    ]) {
        push_role(verdict, value, Role::Read, false);
    }
    let documents: Vec<&Arg> = parsed.values(&["-O", "--output-document"]).collect();
    if documents.is_empty() {
        let target = Arg {
            field: Field {
                segs: vec![Seg::Hole {
                    display: "(downloaded files)".into(),
                    class: PathHole::Below,
                    value: None,
                }],
            },
            vanish: false,
            split: false,
        };
        verdict.effect_under(&target, Access::Write, true, prefix.as_ref());
    }
    for document in documents {
        verdict.effect_under(document, Access::Write, false, prefix.as_ref());
    }
}

pub(super) fn ssh(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    for (index, arg) in args.iter().enumerate() {
        let text = head(arg);
        let option = |name: &str| text == name || (text.starts_with(name) && text.len() > name.len());
        if option("-o")
            || option("-F")
            || option("-S")
            || (option("-e") && matches!(ctx.name, "nc" | "netcat"))
            || (option("-c") && matches!(ctx.name, "nc" | "netcat"))
        {
            let value = if text.len() > 2 {
                head(arg)[2..].to_string()
            } else {
                args.get(index + 1)
                    .and_then(Arg::literal)
                    .map(Cow::into_owned)
                    .unwrap_or_default()
            };
            let lower = value.to_ascii_lowercase();
            if !option("-o")
                || lower.contains("command")
                || lower.contains("include")
                || lower.contains("match")
                || lower.contains("askpass")
            {
                verdict.opaque(format!("`{} {text}` can run a local program", ctx.name));
            }
        }
        if option("-i")
            && let Some(key) = if text.len() > 2 {
                Some(split_value(arg, 2))
            } else {
                args.get(index + 1).cloned()
            }
        {
            push_role(verdict, &key, Role::Read, false);
        }
    }
    if matches!(ctx.name, "scp" | "sftp") {
        let operands: Vec<&Arg> = args.iter().filter(|arg| !head(arg).starts_with('-')).collect();
        let last = operands.len().saturating_sub(1);
        for (i, operand) in operands.iter().enumerate() {
            let text = operand.literal().unwrap_or_default();
            let remote = text.split('/').next().is_some_and(|first| first.contains(':'));
            if remote {
                continue;
            }
            push_role(
                verdict,
                operand,
                if i == last && operands.len() > 1 {
                    Role::Write
                } else {
                    Role::Read
                },
                true,
            );
        }
    }
}
