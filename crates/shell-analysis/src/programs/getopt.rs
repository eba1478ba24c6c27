//! Options read the way GNU `getopt_long` reads them: clustered short options,
//! `--long=value`, unique prefixes of long options, options after operands, `--`.

use std::borrow::Cow;

use crate::arg::Arg;
use crate::expand::{Field, Seg};

/// A program's options, the way `getopt_long` reads them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Spec {
    /// Short options without a value.
    pub(crate) flags: &'static str,
    /// Short options with a value (attached or the next argument).
    pub(crate) values: &'static str,
    /// Short options with an optional attached value (`-i[SUFFIX]`).
    pub(crate) optional: &'static str,
    /// Long options without a value.
    pub(crate) long: &'static [&'static str],
    /// Long options with a value (`--x=v` or `--x v`).
    pub(crate) long_values: &'static [&'static str],
    /// Long options with an optional value (`--x[=v]`).
    pub(crate) long_optional: &'static [&'static str],
    /// `-NUM` is an option (`head -5`).
    pub(crate) numeric: bool,
    /// Options stop at the first operand (POSIX; `env`, `sudo`, wrappers).
    pub(crate) posix: bool,
}

impl Spec {
    /// No options: the spec a table entry starts from (`Spec { flags: "x", ..Spec::NONE }`).
    pub(crate) const NONE: Spec = Spec {
        flags: "",
        values: "",
        optional: "",
        long: &[],
        long_values: &[],
        long_optional: &[],
        numeric: false,
        posix: false,
    };
}

/// One option as parsed: its canonical name (`-x`, `--long`) and its value.
#[derive(Clone, Debug)]
pub(crate) struct Opt {
    pub(crate) name: Cow<'static, str>,
    pub(crate) value: Option<Arg>,
}

/// The result of parsing a command's arguments.
#[derive(Clone, Debug, Default)]
pub(crate) struct Parsed {
    pub(crate) opts: Vec<Opt>,
    /// Indices (into the arguments after the name) of operands.
    pub(crate) operands: Vec<usize>,
    /// An option the spec does not know, or an argument that may be one.
    pub(crate) unknown: Vec<String>,
    /// With `posix`: the index where operands start.
    pub(crate) rest: usize,
    /// An unknown option is literal text or a value only known at run time (not only a
    /// pattern that may match a file named like an option).
    pub(crate) dynamic: bool,
}

impl Parsed {
    pub(crate) fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|opt| names.contains(&&*opt.name))
    }

    pub(crate) fn values<'p>(&'p self, names: &'p [&'p str]) -> impl Iterator<Item = &'p Arg> + 'p {
        self.opts
            .iter()
            .filter(move |opt| names.contains(&&*opt.name))
            .filter_map(|opt| opt.value.as_ref())
    }
}

/// An argument split at `=` into its option part and value, when both are literal.
pub(crate) fn split_value(arg: &Arg, at: usize) -> Arg {
    let mut segs = Vec::new();
    let mut skipped = 0;
    for seg in &arg.field.segs {
        match seg {
            Seg::Lit(text) if skipped < at => {
                let len = text.chars().count();
                if skipped + len <= at {
                    skipped += len;
                } else {
                    let rest: String = text.chars().skip(at - skipped).collect();
                    skipped = at;
                    segs.push(Seg::Lit(rest));
                }
            }
            other => segs.push(other.clone()),
        }
    }
    Arg {
        field: Field { segs },
        vanish: false,
        split: arg.split,
    }
}

/// The known text at the start of an argument (up to its first unknown part).
pub(crate) fn head(arg: &Arg) -> String {
    match arg.field.segs.first() {
        Some(Seg::Lit(text)) => text.clone(),
        _ => String::new(),
    }
}

/// `-c`: shared text for ASCII options (most are), a copy for the others.
pub(crate) fn short_name(c: char) -> Cow<'static, str> {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| (0u8..128).map(|b| format!("-{}", char::from(b))).collect());
    match names.get(c as usize) {
        Some(name) if c.is_ascii() => Cow::Borrowed(name.as_str()),
        _ => Cow::Owned(format!("-{c}")),
    }
}

pub(crate) fn getopt(spec: &Spec, args: &[Arg]) -> Parsed {
    let mut parsed = Parsed {
        rest: args.len(),
        ..Parsed::default()
    };
    let mut index = 0;
    let mut done = false;
    while index < args.len() {
        let arg = &args[index];
        // `head(arg)` and `arg.literal().is_some()`, without copying the text.
        let text: &str = match arg.field.segs.first() {
            Some(Seg::Lit(text)) => text,
            _ => "",
        };
        let complete = !arg.split && arg.field.segs.iter().all(|seg| matches!(seg, Seg::Lit(_)));
        if done || text == "-" || !text.starts_with('-') {
            if !done && arg.maybe_option() {
                parsed.unknown.push(arg.field.display());
                parsed.dynamic |= !matches!(arg.field.segs.first(), Some(Seg::Glob(_)));
            }
            if spec.posix && !done {
                parsed.rest = index;
                parsed.operands.extend(index..args.len());
                return parsed;
            }
            parsed.operands.push(index);
            index += 1;
            continue;
        }
        if text == "--" && complete {
            done = true;
            parsed.rest = index + 1;
            index += 1;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            let all = spec.long.iter().chain(spec.long_values).chain(spec.long_optional);
            let exact = all.clone().find(|candidate| **candidate == name);
            let matches: Vec<&&str> = all.filter(|candidate| candidate.starts_with(name)).collect();
            let found = exact.or(if matches.len() == 1 { Some(matches[0]) } else { None });
            if !complete && !attached {
                parsed.unknown.push(arg.field.display());
                parsed.dynamic = true;
                index += 1;
                continue;
            }
            match found {
                Some(full) => {
                    let mut canonical = String::with_capacity(full.len() + 2);
                    canonical.push_str("--");
                    canonical.push_str(full);
                    let canonical = Cow::Owned(canonical);
                    if spec.long_values.contains(full) {
                        let value = if attached {
                            Some(split_value(arg, name.len() + 3))
                        } else {
                            index += 1;
                            args.get(index).cloned()
                        };
                        parsed.opts.push(Opt { name: canonical, value });
                    } else if spec.long_optional.contains(full) && attached {
                        parsed.opts.push(Opt {
                            name: canonical,
                            value: Some(split_value(arg, name.len() + 3)),
                        });
                    } else {
                        parsed.opts.push(Opt {
                            name: canonical,
                            value: None,
                        });
                    }
                }
                None => {
                    parsed.unknown.push(format!("--{name}"));
                    parsed.dynamic = true;
                }
            }
            index += 1;
            continue;
        }
        // Short options, possibly clustered (`text` starts with `-`).
        let cluster = &text[1..];
        if spec.numeric && !cluster.is_empty() && cluster.bytes().all(|b| b.is_ascii_digit()) {
            parsed.opts.push(Opt {
                name: Cow::Borrowed("-NUM"),
                value: Some(Arg::text(cluster)),
            });
            index += 1;
            continue;
        }
        let count = cluster.chars().count();
        for (position, c) in cluster.chars().enumerate() {
            let name = short_name(c);
            if spec.values.contains(c) {
                let value = if position + 1 < count {
                    Some(split_value(arg, position + 2))
                } else {
                    index += 1;
                    args.get(index).cloned()
                };
                parsed.opts.push(Opt { name, value });
                break;
            }
            if spec.optional.contains(c) {
                let value = (position + 1 < count).then(|| split_value(arg, position + 2));
                parsed.opts.push(Opt { name, value });
                break;
            }
            if spec.flags.contains(c) {
                parsed.opts.push(Opt { name, value: None });
            } else {
                parsed.unknown.push(name.into_owned());
                parsed.dynamic = true;
            }
        }
        if !complete {
            // `-$X`: more options only known when it runs.
            parsed.unknown.push(arg.field.display());
            parsed.dynamic = true;
        }
        index += 1;
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Arg> {
        words.iter().map(|w| Arg::text(*w)).collect()
    }

    #[test]
    fn getopt_reads_clusters_values_prefixes_and_permutation() {
        let spec = Spec {
            flags: "rn",
            values: "e",
            long: &["recursive"],
            long_values: &["regexp", "file"],
            ..Spec::NONE
        };
        let parsed = getopt(
            &spec,
            &args(&["-rne", "pat", "file", "--reg=x", "--fi", "f2", "--", "-e"]),
        );
        let names: Vec<&str> = parsed.opts.iter().map(|o| &*o.name).collect();
        assert_eq!(names, ["-r", "-n", "-e", "--regexp", "--file"]);
        assert_eq!(
            parsed.opts[2].value.as_ref().and_then(Arg::literal).as_deref(),
            Some("pat")
        );
        assert_eq!(
            parsed.opts[3].value.as_ref().and_then(Arg::literal).as_deref(),
            Some("x")
        );
        assert_eq!(
            parsed.opts[4].value.as_ref().and_then(Arg::literal).as_deref(),
            Some("f2")
        );
        assert_eq!(parsed.operands, [2, 7]);
        let attached = getopt(&spec, &args(&["-epat"]));
        assert_eq!(
            attached.opts[0].value.as_ref().and_then(Arg::literal).as_deref(),
            Some("pat")
        );
    }
}
