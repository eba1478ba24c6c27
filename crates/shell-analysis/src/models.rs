//! Side effects are data: what each program does with its operands and options.
//!
//! Every program the analysis knows has a [`Model`] in [`MODELS`]: its options (GNU
//! `getopt_long` rules: clustered short options, `--long=value`, unique prefixes of long
//! options, options after operands, `--`), what its operands do (read, write, delete,
//! name a directory), which options name files read or written, which make it recurse,
//! and which make it run code — shell code the analysis cannot see (the part becomes
//! opaque) or another language's inline code (the part can never be saved). A program may
//! add a special step for what a table cannot say (`find` expressions, `sed` scripts,
//! `git` subcommands, wrappers that run another command).
//!
//! An option the model does not know, or an argument whose value is only known at run
//! time where an option could be, is assumed to do the worst the program can do
//! ([`Model::unknown`]). A program without a model reads every operand that looks like a
//! path.

use std::borrow::Cow;

use crate::analyze::{Access, Arg};
use crate::expand::{Field, PathHole, Seg};

/// A path effect of a command.
#[derive(Clone, Debug)]
pub(crate) struct Effect {
    pub(crate) arg: Arg,
    pub(crate) access: Access,
    pub(crate) tree: bool,
    /// The directory the path is relative to, when not the current one (`tar -C dir`).
    pub(crate) under: Option<Field>,
}

/// A command run by another (`sudo cmd`, `find -exec cmd`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Nested {
    pub(crate) args: Vec<Arg>,
    pub(crate) env: Vec<String>,
    pub(crate) chdir: Option<Field>,
    /// More arguments come from input at run time (`xargs`).
    pub(crate) appended: bool,
}

/// What the analysis concludes about one command.
#[derive(Clone, Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) effects: Vec<Effect>,
    pub(crate) nested: Vec<Nested>,
    /// Shell code a child shell runs (`sh -c '…'`).
    pub(crate) scripts: Vec<String>,
    /// The command runs code of another language given inline: never saved.
    pub(crate) code: Option<String>,
    /// The command runs shell code the analysis cannot see: an opaque part.
    pub(crate) opaque: Option<String>,
    /// The whole line cannot be analysed.
    pub(crate) refuse: Option<String>,
    /// Other spellings to match too, as argument indices (without global options).
    pub(crate) forms: Vec<Vec<usize>>,
}

impl Verdict {
    fn effect(&mut self, arg: &Arg, access: Access, tree: bool) {
        self.effects.push(Effect {
            arg: arg.clone(),
            access,
            tree,
            under: None,
        });
    }

    fn effect_under(&mut self, arg: &Arg, access: Access, tree: bool, under: Option<&Field>) {
        self.effects.push(Effect {
            arg: arg.clone(),
            access,
            tree,
            under: under.cloned(),
        });
    }

    fn opaque(&mut self, reason: impl Into<String>) {
        if self.opaque.is_none() {
            self.opaque = Some(reason.into());
        }
    }
}

// --- option parsing -------------------------------------------------------------------------

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
fn split_value(arg: &Arg, at: usize) -> Arg {
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
fn head(arg: &Arg) -> String {
    match arg.field.segs.first() {
        Some(Seg::Lit(text)) => text.clone(),
        _ => String::new(),
    }
}

/// `-c`: shared text for ASCII options (most are), a copy for the others.
fn short_name(c: char) -> Cow<'static, str> {
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

// --- the table -------------------------------------------------------------------------------

/// What a program's operands do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Nothing the rules speak about (data, names, numbers).
    None,
    /// Files read.
    Read,
    /// Files written, created or changed.
    Write,
    /// Paths looked at (listed, stat'ed): only checked to be inside the project.
    Dir,
}

/// The worst an unknown option of a program can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// Nothing beyond what its operands do.
    Harmless,
    /// Read any file.
    Reads,
    /// Write any file.
    Writes,
    /// Run code.
    Code,
}

/// A program's model.
pub(crate) struct Model {
    pub(crate) names: &'static [&'static str],
    pub(crate) spec: Spec,
    /// What operands do.
    pub(crate) operands: Role,
    /// The first operand is a pattern or program, not a file, unless one of these options
    /// was given.
    pub(crate) pattern_first: Option<&'static [&'static str]>,
    /// Options whose value is a file, and what is done with it.
    pub(crate) files: &'static [(&'static str, Role)],
    /// Options that make operands whole trees.
    pub(crate) recursive: &'static [&'static str],
    /// Options that run shell code the analysis cannot see.
    pub(crate) opaque: &'static [&'static str],
    /// The worst an unknown option does.
    pub(crate) unknown: Unknown,
    /// A step for what the table cannot say.
    pub(crate) special: Option<fn(&Ctx<'_>, &mut Verdict)>,
    /// False when the special step reads the arguments itself (the table's options,
    /// operands and unknown-option rule do not apply).
    pub(crate) generic: bool,
}

/// What a special step sees.
pub(crate) struct Ctx<'c> {
    pub(crate) name: &'c str,
    /// The arguments after the program name.
    pub(crate) args: &'c [Arg],
    pub(crate) parsed: &'c Parsed,
}

impl Ctx<'_> {
    fn operand(&self, i: usize) -> Option<&Arg> {
        self.parsed.operands.get(i).and_then(|index| self.args.get(*index))
    }

    fn operands(&self) -> impl Iterator<Item = &Arg> {
        self.parsed.operands.iter().filter_map(|index| self.args.get(*index))
    }
}

const NONE: Spec = Spec {
    flags: "",
    values: "",
    optional: "",
    long: &[],
    long_values: &[],
    long_optional: &[],
    numeric: false,
    posix: false,
};

const fn entry(names: &'static [&'static str], spec: Spec, operands: Role) -> Model {
    Model {
        names,
        spec,
        operands,
        pattern_first: None,
        files: &[],
        recursive: &[],
        opaque: &[],
        unknown: Unknown::Harmless,
        special: None,
        generic: true,
    }
}

/// Every program the analysis models.
pub(crate) static MODELS: &[Model] = &[
    // Programs that only print what they are given.
    entry(
        &[
            "echo", "printf", "sleep", "true", "false", "yes", "seq", "id", "whoami", "uname", "nproc", "tty", "which",
            "clear", "tput", "basename", "dirname", "printenv", "kill", "pkill", "killall", "pgrep", "ps", "env_none",
            "groups", "logname", "users", "uptime", "arch", "getconf", "locale", "expr", "tr", "numfmt", "factor",
            "pwd", "hostname", "date", "ulimit", "umask", "cal", "free", "test", "[",
        ],
        Spec { posix: true, ..NONE },
        Role::None,
    ),
    // Readers. Where the table is unsure whether an option takes a value, it says it does
    // not: the value is then read as a file too, which only asks more.
    entry(
        &["cat"],
        Spec {
            flags: "AbeEnstTuv",
            long: &[
                "show-all",
                "number-nonblank",
                "show-ends",
                "number",
                "squeeze-blank",
                "show-tabs",
                "show-nonprinting",
                "help",
                "version",
            ],
            ..NONE
        },
        Role::Read,
    ),
    entry(
        &["head"],
        Spec {
            flags: "qvz",
            values: "cn",
            long: &["quiet", "silent", "verbose", "zero-terminated", "help", "version"],
            long_values: &["bytes", "lines"],
            numeric: true,
            ..NONE
        },
        Role::Read,
    ),
    entry(
        &["tail"],
        Spec {
            flags: "fFqvz",
            values: "cns",
            long: &[
                "retry",
                "quiet",
                "silent",
                "verbose",
                "zero-terminated",
                "help",
                "version",
            ],
            long_values: &["bytes", "lines", "pid", "sleep-interval", "max-unchanged-stats"],
            long_optional: &["follow"],
            numeric: true,
            ..NONE
        },
        Role::Read,
    ),
    Model {
        files: &[("--files0-from", Role::Read)],
        ..entry(
            &["wc"],
            Spec {
                flags: "cmlLw",
                long: &["bytes", "chars", "lines", "words", "max-line-length", "help", "version"],
                long_values: &["files0-from", "total"],
                ..NONE
            },
            Role::Read,
        )
    },
    entry(
        &["cut"],
        Spec {
            flags: "nsz",
            values: "bcdf",
            long: &["complement", "only-delimited", "zero-terminated", "help", "version"],
            long_values: &["bytes", "characters", "delimiter", "fields", "output-delimiter"],
            ..NONE
        },
        Role::Read,
    ),
    entry(
        &["nl"],
        Spec {
            flags: "p",
            values: "bdfhilnsvw",
            ..NONE
        },
        Role::Read,
    ),
    entry(
        &["tac"],
        Spec {
            flags: "br",
            values: "s",
            long: &["before", "regex", "help", "version"],
            long_values: &["separator"],
            ..NONE
        },
        Role::Read,
    ),
    entry(
        &["paste"],
        Spec {
            flags: "sz",
            values: "d",
            long: &["serial", "zero-terminated", "help", "version"],
            long_values: &["delimiters"],
            ..NONE
        },
        Role::Read,
    ),
    Model {
        files: &[
            ("-o", Role::Write),
            ("-O", Role::Write),
            ("--log-file", Role::Write),
            ("--LOG-FILE", Role::Write),
        ],
        ..entry(
            &["less", "more", "most"],
            Spec {
                flags: "aABcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX",
                values: "bhjkoOpPtTxyz",
                long_values: &["log-file", "LOG-FILE", "pattern", "tag", "tabs", "shift", "window"],
                ..NONE
            },
            Role::Read,
        )
    },
    Model {
        special: Some(xxd),
        ..entry(
            &["xxd"],
            Spec {
                flags: "abCeEiprRuv",
                values: "cglosn",
                ..NONE
            },
            Role::None,
        )
    },
    Model {
        files: &[("-o", Role::Write), ("--output", Role::Write)],
        ..entry(
            &["iconv"],
            Spec {
                flags: "cls",
                values: "fto",
                long: &["list", "silent", "help", "version"],
                long_values: &["from-code", "to-code", "output"],
                ..NONE
            },
            Role::Read,
        )
    },
    // Readers whose options the table does not list: every argument that is not an option
    // is read.
    entry(
        &[
            "od",
            "hexdump",
            "strings",
            "file",
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "cksum",
            "sum",
            "base32",
            "base64",
            "basenc",
            "join",
            "comm",
            "look",
            "pr",
            "ptx",
            "tsort",
            "fold",
            "fmt",
            "expand",
            "unexpand",
            "rev",
            "column",
            "zcat",
            "bzcat",
            "xzcat",
            "zstdcat",
            "lzcat",
            "bat",
            "batcat",
            "readelf",
            "objdump",
            "nm",
            "size",
            "diffstat",
        ],
        Spec {
            flags: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            long: &["help", "version"],
            ..NONE
        },
        Role::Read,
    ),
    Model {
        files: &[
            ("-o", Role::Write),
            ("--output", Role::Write),
            ("-T", Role::Write),
            ("--temporary-directory", Role::Write),
            ("--files0-from", Role::Read),
            ("--random-source", Role::Read),
        ],
        opaque: &["--compress-program"],
        unknown: Unknown::Writes,
        ..entry(
            &["sort"],
            Spec {
                flags: "bdfgiMhnRrcCsuVz",
                values: "kotST",
                long: &[
                    "ignore-leading-blanks",
                    "dictionary-order",
                    "ignore-case",
                    "general-numeric-sort",
                    "ignore-nonprinting",
                    "month-sort",
                    "human-numeric-sort",
                    "numeric-sort",
                    "random-sort",
                    "reverse",
                    "version-sort",
                    "merge",
                    "stable",
                    "unique",
                    "zero-terminated",
                    "debug",
                    "help",
                    "version",
                ],
                long_values: &[
                    "key",
                    "output",
                    "field-separator",
                    "buffer-size",
                    "temporary-directory",
                    "compress-program",
                    "files0-from",
                    "random-source",
                    "sort",
                    "parallel",
                    "batch-size",
                ],
                long_optional: &["check"],
                ..NONE
            },
            Role::Read,
        )
    },
    Model {
        special: Some(uniq),
        unknown: Unknown::Writes,
        ..entry(
            &["uniq"],
            Spec {
                flags: "cdDiuz",
                values: "fsw",
                long: &[
                    "count",
                    "repeated",
                    "ignore-case",
                    "unique",
                    "zero-terminated",
                    "help",
                    "version",
                ],
                long_values: &["skip-fields", "skip-chars", "check-chars"],
                long_optional: &["all-repeated", "group"],
                ..NONE
            },
            Role::None,
        )
    },
    Model {
        pattern_first: Some(&["-e", "-f", "--regexp", "--file"]),
        files: &[
            ("-f", Role::Read),
            ("--file", Role::Read),
            ("--exclude-from", Role::Read),
        ],
        recursive: &["-r", "-R", "--recursive", "--dereference-recursive"],
        special: Some(grep),
        unknown: Unknown::Reads,
        ..entry(
            &["grep", "egrep", "fgrep", "zgrep_"],
            Spec {
                flags: "EFGPivwxyclLoqsbHhnTZzUaIrRV",
                values: "efmABCdD",
                long: &[
                    "extended-regexp",
                    "fixed-strings",
                    "basic-regexp",
                    "perl-regexp",
                    "ignore-case",
                    "no-ignore-case",
                    "invert-match",
                    "word-regexp",
                    "line-regexp",
                    "count",
                    "files-without-match",
                    "files-with-matches",
                    "only-matching",
                    "quiet",
                    "silent",
                    "no-messages",
                    "byte-offset",
                    "with-filename",
                    "no-filename",
                    "line-number",
                    "initial-tab",
                    "null",
                    "null-data",
                    "text",
                    "recursive",
                    "dereference-recursive",
                    "line-buffered",
                    "binary",
                    "no-group-separator",
                    "help",
                    "version",
                    "unix-byte-offsets",
                ],
                long_values: &[
                    "regexp",
                    "file",
                    "max-count",
                    "after-context",
                    "before-context",
                    "context",
                    "label",
                    "include",
                    "exclude",
                    "exclude-from",
                    "exclude-dir",
                    "binary-files",
                    "devices",
                    "directories",
                    "group-separator",
                ],
                long_optional: &["color", "colour"],
                numeric: true,
                ..NONE
            },
            Role::Read,
        )
    },
    Model {
        pattern_first: Some(&["-e", "-f", "--regexp", "--file", "--files", "--type-list"]),
        files: &[
            ("-f", Role::Read),
            ("--file", Role::Read),
            ("--ignore-file", Role::Read),
        ],
        opaque: &["--pre", "--hostname-bin"],
        special: Some(ripgrep),
        unknown: Unknown::Reads,
        ..entry(
            &["rg"],
            Spec {
                flags: "aiIlLnNoPqsSuUvwxzcbFhH0",
                values: "efgtTmABCEjMrd",
                long: &[
                    "ignore-case",
                    "smart-case",
                    "case-sensitive",
                    "files",
                    "files-with-matches",
                    "count",
                    "hidden",
                    "no-ignore",
                    "follow",
                    "fixed-strings",
                    "word-regexp",
                    "line-regexp",
                    "invert-match",
                    "only-matching",
                    "line-number",
                    "no-line-number",
                    "search-zip",
                    "text",
                    "multiline",
                    "json",
                    "vimgrep",
                    "no-heading",
                    "heading",
                    "pcre2",
                    "null",
                    "quiet",
                    "type-list",
                    "sort-files",
                    "stats",
                    "trim",
                    "no-messages",
                    "no-filename",
                    "with-filename",
                    "byte-offset",
                    "column",
                    "no-config",
                    "one-file-system",
                    "help",
                    "version",
                    "unrestricted",
                ],
                long_values: &[
                    "regexp",
                    "file",
                    "glob",
                    "iglob",
                    "type",
                    "type-not",
                    "max-count",
                    "after-context",
                    "before-context",
                    "context",
                    "encoding",
                    "threads",
                    "max-columns",
                    "replace",
                    "max-depth",
                    "max-filesize",
                    "sort",
                    "sortr",
                    "ignore-file",
                    "pre",
                    "pre-glob",
                    "color",
                    "colors",
                    "path-separator",
                    "type-add",
                    "context-separator",
                    "field-match-separator",
                    "hostname-bin",
                    "engine",
                    "regex-size-limit",
                    "dfa-size-limit",
                ],
                ..NONE
            },
            Role::Read,
        )
    },
    Model {
        pattern_first: Some(&["-e", "-f", "--expression", "--file"]),
        files: &[("-f", Role::Read), ("--file", Role::Read)],
        special: Some(sed),
        unknown: Unknown::Code,
        ..entry(
            &["sed", "gsed"],
            Spec {
                flags: "nrEsuzb",
                values: "efl",
                optional: "i",
                long: &[
                    "quiet",
                    "silent",
                    "regexp-extended",
                    "separate",
                    "unbuffered",
                    "null-data",
                    "debug",
                    "posix",
                    "sandbox",
                    "follow-symlinks",
                    "help",
                    "version",
                    "binary",
                ],
                long_values: &["expression", "file", "line-length"],
                long_optional: &["in-place"],
                ..NONE
            },
            Role::Read,
        )
    },
    Model {
        special: Some(awk),
        unknown: Unknown::Code,
        ..entry(
            &["awk", "gawk", "mawk", "nawk", "busybox-awk"],
            Spec {
                flags: "bcCdDghkMnNOpPrsStVYo",
                values: "fvFeEil",
                long: &[
                    "characters-as-bytes",
                    "traditional",
                    "copyright",
                    "gen-pot",
                    "help",
                    "lint-old",
                    "bignum",
                    "use-lc-numeric",
                    "non-decimal-data",
                    "optimize",
                    "posix",
                    "re-interval",
                    "no-optimize",
                    "sandbox",
                    "version",
                    "csv",
                ],
                long_values: &["file", "assign", "field-separator", "source", "exec", "include", "load"],
                long_optional: &["dump-variables", "debug", "lint", "pretty-print", "profile"],
                ..NONE
            },
            Role::None,
        )
    },
    Model {
        files: &[
            ("--from-file", Role::Read),
            ("--to-file", Role::Read),
            ("-o", Role::Write),
            ("--output", Role::Write),
        ],
        recursive: &["-r", "--recursive"],
        unknown: Unknown::Reads,
        ..entry(
            &["diff", "cmp", "diff3", "sdiff", "colordiff", "delta", "difft"],
            Spec {
                flags: "abBdeEfilnNpqrsStTuvwxyZ",
                values: "CDFIoSUWxXL",
                long: &[
                    "normal",
                    "brief",
                    "report-identical-files",
                    "context",
                    "unified",
                    "ed",
                    "rcs",
                    "side-by-side",
                    "expand-tabs",
                    "initial-tab",
                    "show-c-function",
                    "recursive",
                    "new-file",
                    "unidirectional-new-file",
                    "ignore-case",
                    "ignore-tab-expansion",
                    "ignore-trailing-space",
                    "ignore-space-change",
                    "ignore-all-space",
                    "ignore-blank-lines",
                    "text",
                    "strip-trailing-cr",
                    "minimal",
                    "speed-large-files",
                    "suppress-common-lines",
                    "suppress-blank-empty",
                    "left-column",
                    "help",
                    "version",
                    "print-bytes",
                    "verbose",
                    "quiet",
                    "silent",
                    "no-dereference",
                ],
                long_values: &[
                    "exclude",
                    "exclude-from",
                    "starting-file",
                    "from-file",
                    "to-file",
                    "ignore-matching-lines",
                    "label",
                    "width",
                    "tabsize",
                    "line-format",
                    "old-line-format",
                    "new-line-format",
                    "unchanged-line-format",
                    "old-group-format",
                    "new-group-format",
                    "changed-group-format",
                    "unchanged-group-format",
                    "horizon-lines",
                    "output",
                    "ignore-initial",
                    "bytes",
                ],
                long_optional: &["color", "palette", "context", "unified"],
                ..NONE
            },
            Role::Read,
        )
    },
    // Paths listed or looked at.
    entry(
        &[
            "ls", "tree", "du", "df", "stat", "realpath", "readlink", "exa", "eza", "lsd", "namei", "lsattr", "getfacl",
        ],
        Spec {
            flags: "aAbBcCdDfFgGhHiklLmnNopqQrRsStTuUvwxXZ1LPemsz",
            values: "ITwdB",
            long: &[
                "all",
                "almost-all",
                "escape",
                "ignore-backups",
                "directory",
                "dired",
                "classify",
                "no-group",
                "human-readable",
                "si",
                "dereference",
                "inode",
                "kibibytes",
                "literal",
                "numeric-uid-gid",
                "hide-control-chars",
                "show-control-chars",
                "quote-name",
                "recursive",
                "size",
                "help",
                "version",
                "canonicalize",
                "canonicalize-existing",
                "canonicalize-missing",
                "no-newline",
                "zero",
                "summarize",
                "total",
                "terse",
                "file-system",
                "logical",
                "physical",
                "relative-to",
                "apparent-size",
                "count-links",
                "separate-dirs",
                "one-file-system",
                "long",
                "tree",
                "git",
            ],
            long_values: &[
                "block-size",
                "format",
                "hide",
                "ignore",
                "indicator-style",
                "quoting-style",
                "sort",
                "tabsize",
                "time",
                "time-style",
                "width",
                "max-depth",
                "threshold",
                "exclude",
                "exclude-from",
                "printf",
                "relative-base",
                "level",
            ],
            long_optional: &["color", "colour", "hyperlink", "time-style"],
            ..NONE
        },
        Role::Dir,
    ),
    // Writers.
    Model {
        recursive: &["-r", "-R", "--recursive"],
        unknown: Unknown::Writes,
        ..entry(
            &["rm"],
            Spec {
                flags: "fiIrRdv",
                long: &[
                    "force",
                    "recursive",
                    "dir",
                    "verbose",
                    "one-file-system",
                    "no-preserve-root",
                    "help",
                    "version",
                ],
                long_optional: &["interactive", "preserve-root"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        unknown: Unknown::Writes,
        ..entry(
            &["shred", "srm"],
            Spec {
                flags: "fuvxz",
                values: "ns",
                long: &["force", "verbose", "exact", "zero", "help", "version"],
                long_values: &["iterations", "size", "random-source"],
                long_optional: &["remove"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        unknown: Unknown::Writes,
        ..entry(
            &["unlink", "sponge", "rmdir"],
            Spec {
                flags: "apv",
                long: &["parents", "verbose", "ignore-fail-on-non-empty", "help", "version"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        unknown: Unknown::Writes,
        ..entry(
            &["mkdir", "mkfifo", "mknod"],
            Spec {
                flags: "pvZ",
                values: "m",
                long: &["parents", "verbose", "help", "version"],
                long_values: &["mode"],
                long_optional: &["context"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        unknown: Unknown::Writes,
        ..entry(
            &["tee"],
            Spec {
                flags: "aip",
                long: &["append", "ignore-interrupts", "help", "version"],
                long_optional: &["output-error"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        files: &[("-r", Role::Read), ("--reference", Role::Read)],
        unknown: Unknown::Writes,
        ..entry(
            &["truncate", "fallocate"],
            Spec {
                flags: "cdnoxvz",
                values: "sirl",
                long: &["no-create", "io-blocks", "help", "version"],
                long_values: &["size", "reference", "length", "offset"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        files: &[("-r", Role::Read), ("--reference", Role::Read)],
        unknown: Unknown::Writes,
        ..entry(
            &["touch"],
            Spec {
                flags: "acfhm",
                values: "dtr",
                long: &["no-create", "no-dereference", "help", "version"],
                long_values: &["date", "reference", "time"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        special: Some(chmod),
        generic: false,
        ..entry(
            &["chmod", "chown", "chgrp", "chattr", "setfacl", "chcon"],
            Spec {
                flags: "cfvRHLPh",
                values: "",
                long: &[
                    "changes",
                    "silent",
                    "quiet",
                    "verbose",
                    "no-preserve-root",
                    "preserve-root",
                    "recursive",
                    "dereference",
                    "no-dereference",
                    "help",
                    "version",
                ],
                long_values: &["reference", "from"],
                ..NONE
            },
            Role::Write,
        )
    },
    Model {
        special: Some(copy),
        unknown: Unknown::Writes,
        ..entry(
            &["cp", "mv", "install", "ln", "link", "rsync_local"],
            Spec {
                flags: "abdfiHlLnPpRrsTuvxZDcCUgor",
                values: "StmMgo",
                long: &[
                    "archive",
                    "attributes-only",
                    "copy-contents",
                    "debug",
                    "force",
                    "interactive",
                    "link",
                    "dereference",
                    "no-clobber",
                    "no-dereference",
                    "parents",
                    "recursive",
                    "remove-destination",
                    "strip-trailing-slashes",
                    "symbolic-link",
                    "no-target-directory",
                    "verbose",
                    "one-file-system",
                    "keep-directory-symlink",
                    "help",
                    "version",
                    "directory",
                    "compare",
                    "preserve-timestamps",
                    "strip",
                    "relative",
                    "logical",
                    "physical",
                    "exchange",
                    "no-copy",
                ],
                long_values: &[
                    "suffix",
                    "target-directory",
                    "mode",
                    "owner",
                    "group",
                    "no-preserve",
                    "sparse",
                    "strip-program",
                ],
                long_optional: &["backup", "preserve", "reflink", "update", "context"],
                ..NONE
            },
            Role::None,
        )
    },
    Model {
        special: Some(dd),
        generic: false,
        unknown: Unknown::Writes,
        ..entry(&["dd"], Spec { posix: false, ..NONE }, Role::None)
    },
    Model {
        special: Some(tar),
        generic: false,
        unknown: Unknown::Code,
        ..entry(&["tar", "gtar", "bsdtar"], NONE, Role::None)
    },
    Model {
        special: Some(find),
        generic: false,
        unknown: Unknown::Code,
        ..entry(&["find", "gfind"], NONE, Role::None)
    },
    Model {
        special: Some(xargs),
        unknown: Unknown::Code,
        ..entry(
            &["xargs"],
            Spec {
                flags: "0prtx",
                values: "adEILnPs",
                optional: "eil",
                long: &[
                    "null",
                    "interactive",
                    "no-run-if-empty",
                    "verbose",
                    "exit",
                    "show-limits",
                    "open-tty",
                    "help",
                    "version",
                ],
                long_values: &[
                    "arg-file",
                    "delimiter",
                    "max-args",
                    "max-procs",
                    "max-chars",
                    "process-slot-var",
                ],
                long_optional: &["eof", "replace", "max-lines"],
                posix: true,
                ..NONE
            },
            Role::None,
        )
    },
    Model {
        special: Some(git),
        generic: false,
        unknown: Unknown::Harmless,
        ..entry(&["git"], NONE, Role::None)
    },
    Model {
        special: Some(wrapper),
        generic: false,
        unknown: Unknown::Code,
        ..entry(
            &[
                "env",
                "sudo",
                "doas",
                "nice",
                "nohup",
                "timeout",
                "stdbuf",
                "ionice",
                "setsid",
                "time",
                "taskset",
                "chrt",
                "unbuffer",
                "flock",
                "strace",
                "ltrace",
                "busybox",
                "coproc",
                "caffeinate",
                "catchsegv",
                "numactl",
                "runuser",
                "cgexec",
                "prlimit",
                "torsocks",
                "proxychains",
                "proxychains4",
                "firejail",
            ],
            NONE,
            Role::None,
        )
    },
    Model {
        special: Some(shell),
        generic: false,
        unknown: Unknown::Code,
        ..entry(
            &["sh", "bash", "dash", "ash", "ksh", "mksh", "posh", "rbash"],
            NONE,
            Role::None,
        )
    },
    Model {
        special: Some(interpreter),
        generic: false,
        unknown: Unknown::Code,
        ..entry(
            &[
                "python",
                "python2",
                "python3",
                "pypy",
                "pypy3",
                "node",
                "nodejs",
                "deno",
                "bun",
                "perl",
                "ruby",
                "php",
                "lua",
                "luajit",
                "tclsh",
                "wish",
                "Rscript",
                "R",
                "julia",
                "osascript",
                "pwsh",
                "powershell",
                "irb",
                "jshell",
                "groovy",
                "scala",
                "ghci",
                "runghc",
                "guile",
                "racket",
                "sbcl",
                "clisp",
                "elixir",
                "erl",
                "escript",
                "swipl",
                "gst",
                "ts-node",
                "tsx",
                "node-ts",
            ],
            NONE,
            Role::None,
        )
    },
    Model {
        special: Some(always_opaque),
        generic: false,
        unknown: Unknown::Code,
        ..entry(
            &[
                "zsh",
                "fish",
                "csh",
                "tcsh",
                "xonsh",
                "nu",
                "elvish",
                "watch",
                "parallel",
                "su",
                "script",
                "chroot",
                "unshare",
                "nsenter",
                "systemd-run",
                "at",
                "batch",
                "crontab",
                "vim",
                "vi",
                "nvim",
                "emacs",
                "nano",
                "ed",
                "ex",
                "gdb",
                "lldb",
                "expect",
                "sqlite3",
                "socat",
                "ncat",
                "screen",
                "tmux_new",
                "bwrap",
                "make_eval",
                "sh_script",
            ],
            NONE,
            Role::None,
        )
    },
    Model {
        special: Some(make),
        generic: false,
        unknown: Unknown::Harmless,
        ..entry(&["make", "gmake"], NONE, Role::None)
    },
    Model {
        special: Some(curl),
        generic: false,
        unknown: Unknown::Harmless,
        ..entry(&["curl"], NONE, Role::None)
    },
    Model {
        special: Some(wget),
        generic: false,
        unknown: Unknown::Harmless,
        ..entry(&["wget"], NONE, Role::None)
    },
    Model {
        special: Some(jq),
        generic: false,
        unknown: Unknown::Reads,
        ..entry(&["jq", "gojq", "jaq"], NONE, Role::None)
    },
    Model {
        special: Some(ssh),
        generic: false,
        unknown: Unknown::Code,
        ..entry(&["ssh", "scp", "sftp", "nc", "netcat"], NONE, Role::None)
    },
    Model {
        special: Some(global_options),
        generic: false,
        unknown: Unknown::Harmless,
        ..entry(
            &[
                "npm",
                "pnpm",
                "yarn",
                "cargo",
                "go",
                "docker",
                "podman",
                "kubectl",
                "terraform",
                "helm",
                "bun_",
                "npx",
                "pip",
                "pip3",
                "uv",
                "poetry",
                "gh",
            ],
            NONE,
            Role::None,
        )
    },
    Model {
        special: Some(archive),
        generic: false,
        unknown: Unknown::Writes,
        ..entry(
            &[
                "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "zip", "unzip", "7z", "lz4",
                "patch",
            ],
            NONE,
            Role::None,
        )
    },
];

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

/// Whether the analysis models `name`.
pub(crate) fn known(name: &str) -> bool {
    find_model(name).is_some()
}

/// The first model naming `name`, through an index built once (every command a line runs
/// looks its program up): every name with its model's position, sorted by name.
fn find_model(name: &str) -> Option<&'static Model> {
    type Index = std::collections::HashMap<&'static str, usize, std::hash::BuildHasherDefault<Fnv>>;
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = Index::default();
        for (position, model) in MODELS.iter().enumerate() {
            for name in model.names {
                // The first model that names a program is the one a scan would find.
                index.entry(*name).or_insert(position);
            }
        }
        index
    });
    index.get(name).and_then(|position| MODELS.get(*position))
}

/// FNV-1a: a fast hash for the fixed table of program names. The keys are the table's own,
/// so a line cannot fill it with colliding names (what a keyed hash guards against).
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

/// The verdict for a program the analysis knows by `name` (its base name).
pub(crate) fn model_for(name: &str, args: &[Arg]) -> Verdict {
    let name = if let Some(version) = name.strip_prefix("python") {
        if version.chars().all(|c| c.is_ascii_digit() || c == '.') {
            "python3"
        } else {
            name
        }
    } else {
        name
    };
    let Some(model) = find_model(name) else {
        return unknown_program(args);
    };
    let rest = &args[1..];
    let parsed = getopt(&model.spec, rest);
    let mut verdict = Verdict::default();
    let ctx = Ctx {
        name,
        args: rest,
        parsed: &parsed,
    };
    if !model.generic {
        if let Some(special) = model.special {
            special(&ctx, &mut verdict);
        }
        return verdict;
    }
    for opt in &parsed.opts {
        if model.opaque.contains(&&*opt.name) {
            verdict.opaque(format!("`{name} {}` runs a program the analysis cannot see", opt.name));
        }
        if let Some((_, role)) = model.files.iter().find(|(option, _)| *option == opt.name)
            && let Some(value) = &opt.value
        {
            push_role(&mut verdict, value, *role, false);
        }
    }
    if !parsed.unknown.is_empty() {
        let what = parsed.unknown.join(" ");
        match model.unknown {
            Unknown::Harmless => {}
            // A pattern that matches a file named like an option reads names of this
            // directory only, which the pattern's own path already covers.
            Unknown::Reads if !parsed.dynamic => {}
            Unknown::Reads => verdict.effect(&Arg::unknown(&what), Access::Read, true),
            Unknown::Writes => verdict.effect(&Arg::unknown(&what), Access::Write, true),
            Unknown::Code => verdict.opaque(format!("`{name}` with an option the analysis does not know ({what})")),
        }
    }
    if model.operands != Role::None {
        let tree = parsed.has(model.recursive);
        let skip = match model.pattern_first {
            Some(options) if !parsed.has(options) => 1,
            _ => 0,
        };
        for arg in ctx.operands().skip(skip) {
            push_role(&mut verdict, arg, model.operands, tree);
        }
    }
    if let Some(special) = model.special {
        special(&ctx, &mut verdict);
    }
    verdict
}

fn push_role(verdict: &mut Verdict, arg: &Arg, role: Role, tree: bool) {
    match role {
        Role::None => {}
        Role::Read => {
            if !arg.is_literal("-") {
                verdict.effect(arg, Access::Read, tree);
            }
        }
        Role::Write => {
            if !arg.is_literal("-") {
                verdict.effect(arg, Access::Write, tree);
            }
        }
        Role::Dir => verdict.effect(arg, Access::Dir, tree),
    }
}

impl Arg {
    pub(crate) fn unknown(display: &str) -> Arg {
        Arg {
            field: Field::unknown(display),
            vanish: false,
            split: true,
        }
    }
}

/// A program the analysis does not know: operands that look like paths are read.
pub(crate) fn unknown_program(args: &[Arg]) -> Verdict {
    let mut verdict = Verdict::default();
    for arg in args.iter().skip(1) {
        if let Some(path) = path_like(arg) {
            verdict.effect(&path, Access::Read, false);
        }
    }
    verdict
}

/// The path an argument names, if it looks like one: text with a `/`, starting with `.`
/// or `~`, a value only known at run time, or `--opt=path`.
fn path_like(arg: &Arg) -> Option<Arg> {
    if arg.value().is_none() || arg.field.is_pattern() {
        return Some(arg.clone());
    }
    let value = arg.value()?;
    if let Some((option, rest)) = value.split_once('=')
        && option.starts_with('-')
    {
        let looks = rest.contains('/') || rest.starts_with('.') || rest.starts_with('~');
        return looks.then(|| Arg::text(rest));
    }
    if value.starts_with('-') {
        return None;
    }
    let looks = value.contains('/') || value.starts_with('.') || value.starts_with('~') || value.contains(".env");
    looks.then(|| arg.clone())
}

// --- special steps ---------------------------------------------------------------------------

fn uniq(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    if let Some(input) = ctx.operand(0) {
        push_role(verdict, input, Role::Read, false);
    }
    if let Some(output) = ctx.operand(1) {
        push_role(verdict, output, Role::Write, false);
    }
}

fn grep(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let recursive = ctx.parsed.has(&["-r", "-R", "--recursive", "--dereference-recursive"]);
    let skip = usize::from(!ctx.parsed.has(&["-e", "-f", "--regexp", "--file"]));
    if recursive && ctx.operands().count() <= skip {
        verdict.effect(&Arg::text("."), Access::Read, true);
    }
}

fn ripgrep(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let skip = usize::from(
        !ctx.parsed
            .has(&["-e", "-f", "--regexp", "--file", "--files", "--type-list"]),
    );
    // rg searches directories recursively, the current one when none is given.
    for effect in verdict.effects.iter_mut() {
        if effect.access == Access::Read {
            effect.tree = true;
        }
    }
    if ctx.operands().count() <= skip {
        verdict.effect(&Arg::text("."), Access::Read, true);
    }
}

fn copy(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let operands: Vec<&Arg> = ctx.operands().collect();
    let recursive = ctx.parsed.has(&["-r", "-R", "--recursive", "-a", "--archive"]);
    let symbolic = ctx.parsed.has(&["-s", "--symbolic"]);
    if ctx.name == "install" && ctx.parsed.has(&["-d", "--directory"]) {
        for arg in &operands {
            push_role(verdict, arg, Role::Write, false);
        }
        return;
    }
    if ctx.name == "install" && ctx.parsed.has(&["--strip-program"]) {
        verdict.opaque("`install --strip-program` runs a program");
    }
    let target = ctx.parsed.values(&["-t", "--target-directory"]).next().cloned();
    let (sources, dest): (Vec<&Arg>, Option<Arg>) = match &target {
        Some(dir) => (operands.clone(), Some(dir.clone())),
        None if operands.len() >= 2 => (
            operands[..operands.len() - 1].to_vec(),
            operands.last().map(|a| (*a).clone()),
        ),
        None if matches!(ctx.name, "ln" | "link") && operands.len() == 1 => (operands.clone(), Some(Arg::text("."))),
        None => (operands.clone(), None),
    };
    for source in &sources {
        // A link exposes its target to later reads; a move deletes its source.
        if symbolic {
            verdict.effect(source, Access::Read, false);
        } else {
            push_role(verdict, source, Role::Read, recursive);
        }
        if ctx.name == "mv" {
            push_role(verdict, source, Role::Write, true);
        }
    }
    let Some(dest) = dest else { return };
    push_role(verdict, &dest, Role::Write, recursive);
    for source in &sources {
        // When the destination is a directory, each source lands inside it.
        let mut inside = dest.clone();
        inside.field.segs.push(Seg::Lit("/".into()));
        match source.literal() {
            Some(name) if !source.split => {
                let base = name
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or(&name)
                    .to_string();
                inside.field.segs.push(Seg::Lit(base));
            }
            _ => inside.field.segs.push(Seg::Hole {
                display: source.field.display(),
                class: PathHole::Name,
                value: None,
            }),
        }
        push_role(verdict, &inside, Role::Write, recursive);
    }
}

/// `chmod`-like: the first operand is a mode or owner (a mode may look like an option:
/// `chmod -x file`), the rest are files changed.
fn chmod(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let mut reference = false;
    let mut tree = false;
    let mut first = true;
    let mut done = false;
    let mut index = 0;
    while let Some(arg) = ctx.args.get(index) {
        index += 1;
        let text = head(arg);
        if !done && arg.literal().is_some() {
            if text == "--" {
                done = true;
                continue;
            }
            if let Some(value) = text.strip_prefix("--reference=") {
                reference = true;
                push_role(verdict, &Arg::text(value), Role::Read, false);
                continue;
            }
            if text == "--reference" {
                reference = true;
                if let Some(value) = ctx.args.get(index) {
                    push_role(verdict, value, Role::Read, false);
                }
                index += 1;
                continue;
            }
            if text.starts_with("--") {
                tree |= text == "--recursive";
                continue;
            }
            let mode_like = ctx.name == "chmod" && text[1..].chars().all(|c| "rwxXstugoa+-=,0123456789".contains(c));
            if text.starts_with('-') && text.len() > 1 && !(first && mode_like && !reference) {
                tree |= text.contains('R');
                continue;
            }
        }
        if first && !reference && ctx.name != "chattr" {
            first = false;
            continue;
        }
        first = false;
        push_role(verdict, arg, Role::Write, tree);
    }
}

fn xxd(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    if let Some(input) = ctx.operand(0) {
        push_role(verdict, input, Role::Read, false);
    }
    if let Some(output) = ctx.operand(1) {
        push_role(verdict, output, Role::Write, false);
    }
}

fn dd(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    for arg in ctx.args {
        let text = head(arg);
        if let Some(eq) = text.find('=') {
            let key = &text[..eq];
            let value = split_value(arg, eq + 1);
            match key {
                "if" => push_role(verdict, &value, Role::Read, false),
                "of" => push_role(verdict, &value, Role::Write, false),
                _ => {}
            }
        } else if !matches!(arg.literal().as_deref(), Some("--help" | "--version")) {
            verdict.opaque(format!("`dd {}`", arg.field.display()));
        }
    }
}

fn tar(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    // Old style: the first argument's letters are options, their values follow in order.
    let mut args: Vec<Arg> = ctx.args.to_vec();
    if let Some(first) = args.first().and_then(Arg::literal)
        && !first.starts_with('-')
        && !first.is_empty()
        && first.chars().all(|c| c.is_ascii_alphabetic())
    {
        let mut rebuilt = Vec::new();
        let mut values: Vec<Arg> = args[1..].to_vec();
        let mut taken = 0;
        for c in first.chars() {
            rebuilt.push(Arg::text(format!("-{c}")));
            if "fbCgHIKLNTVX".contains(c) && taken < values.len() {
                rebuilt.push(values[taken].clone());
                taken += 1;
            }
        }
        rebuilt.extend(values.drain(taken..));
        args = rebuilt;
    }
    let spec = Spec {
        flags: "AcdrtuxzjJaSpPvwkmOWhilBGMnoRsUZ",
        values: "fbCgHIKLNTVX",
        long: &[
            "create",
            "extract",
            "get",
            "list",
            "append",
            "update",
            "diff",
            "compare",
            "delete",
            "catenate",
            "concatenate",
            "gzip",
            "gunzip",
            "bzip2",
            "xz",
            "lzma",
            "zstd",
            "auto-compress",
            "verbose",
            "preserve-permissions",
            "same-permissions",
            "absolute-names",
            "keep-old-files",
            "overwrite",
            "no-same-owner",
            "same-owner",
            "numeric-owner",
            "dereference",
            "one-file-system",
            "sparse",
            "remove-files",
            "show-transformed-names",
            "totals",
            "wildcards",
            "no-wildcards",
            "anchored",
            "no-recursion",
            "recursion",
            "null",
            "ignore-failed-read",
            "help",
            "version",
            "strip-trailing-slashes",
            "skip-old-files",
            "keep-newer-files",
            "unlink-first",
            "recursive-unlink",
            "touch",
            "no-overwrite-dir",
        ],
        long_values: &[
            "file",
            "directory",
            "exclude",
            "exclude-from",
            "files-from",
            "transform",
            "xform",
            "strip-components",
            "blocking-factor",
            "format",
            "owner",
            "group",
            "mode",
            "mtime",
            "newer",
            "newer-mtime",
            "after-date",
            "label",
            "to-command",
            "use-compress-program",
            "checkpoint-action",
            "info-script",
            "new-volume-script",
            "rsh-command",
            "rmt-command",
            "index-file",
            "listed-incremental",
            "tape-length",
            "exclude-tag",
            "suffix",
            "backup",
        ],
        long_optional: &["checkpoint", "backup", "warning"],
        ..NONE
    };
    let parsed = getopt(&spec, &args);
    let opaque = [
        "-I",
        "--to-command",
        "--use-compress-program",
        "--checkpoint-action",
        "-F",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ];
    for opt in &parsed.opts {
        if opaque.contains(&&*opt.name) {
            verdict.opaque(format!("`tar {}` runs a program", opt.name));
        }
    }
    if !parsed.unknown.is_empty() {
        verdict.opaque(format!(
            "`tar` with options the analysis does not know ({})",
            parsed.unknown.join(" ")
        ));
    }
    let dir = parsed
        .values(&["-C", "--directory"])
        .last()
        .map(|arg| arg.field.clone());
    let archives: Vec<Arg> = parsed.values(&["-f", "--file"]).cloned().collect();
    let create = parsed.has(&[
        "-c",
        "--create",
        "-r",
        "--append",
        "-u",
        "--update",
        "-A",
        "--catenate",
        "--concatenate",
    ]);
    let extract = parsed.has(&["-x", "--extract", "--get"]);
    let delete = parsed.has(&["--delete"]);
    for archive in &archives {
        if create || delete {
            push_role(verdict, archive, Role::Write, false);
        }
        push_role(verdict, archive, Role::Read, false);
    }
    for value in parsed.values(&["-T", "--files-from", "-X", "--exclude-from"]) {
        push_role(verdict, value, Role::Read, false);
    }
    for value in parsed.values(&["--index-file", "-g", "--listed-incremental"]) {
        push_role(verdict, value, Role::Write, false);
    }
    let operands: Vec<Arg> = parsed.operands.iter().filter_map(|i| args.get(*i).cloned()).collect();
    if create {
        for operand in &operands {
            verdict.effect_under(operand, Access::Read, true, dir.as_ref());
        }
    }
    if extract {
        let absolute = parsed.has(&["-P", "--absolute-names"]);
        let target = if absolute {
            Arg::unknown("(archive members)")
        } else {
            Arg {
                field: Field {
                    segs: vec![Seg::Hole {
                        display: "(archive members)".into(),
                        class: PathHole::Below,
                        value: None,
                    }],
                },
                vanish: false,
                split: false,
            }
        };
        verdict.effect_under(&target, Access::Write, true, dir.as_ref());
        if parsed.has(&["--remove-files"]) {
            verdict.opaque("`tar --remove-files`");
        }
    }
    if create && parsed.has(&["--remove-files"]) {
        for operand in &operands {
            verdict.effect_under(operand, Access::Write, true, dir.as_ref());
        }
    }
}

/// `find`: start paths, then an expression whose actions may delete, write or run.
fn find(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    while let Some(text) = args.get(index).and_then(Arg::literal) {
        match &*text {
            "-H" | "-L" | "-P" => index += 1,
            "-D" => index += 2,
            t if t.starts_with("-O") || (t.starts_with("-D") && t.len() > 2) => index += 1,
            _ => break,
        }
    }
    let mut starts: Vec<&Arg> = Vec::new();
    while let Some(arg) = args.get(index) {
        let text = head(arg);
        if text.starts_with('-') || text == "(" || text == "!" || text == ")" || text == "," {
            break;
        }
        if arg.maybe_option() {
            verdict.opaque("`find` with an argument only known when it runs");
        }
        starts.push(arg);
        index += 1;
    }
    let starts: Vec<Arg> = if starts.is_empty() {
        vec![Arg::text(".")]
    } else {
        starts.into_iter().cloned().collect()
    };
    for start in &starts {
        verdict.effect(start, Access::Dir, false);
    }
    let found = |start: &Arg| {
        let mut field = start.field.clone();
        field.segs.push(Seg::Lit("/".into()));
        field.segs.push(Seg::Hole {
            display: "{}".into(),
            class: PathHole::Below,
            value: None,
        });
        Arg {
            field,
            vanish: false,
            split: start.split,
        }
    };
    let one_value = [
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-type",
        "-xtype",
        "-size",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-perm",
        "-links",
        "-inum",
        "-lname",
        "-ilname",
        "-fstype",
        "-maxdepth",
        "-mindepth",
        "-regextype",
        "-printf",
        "-used",
        "-context",
        "-newermt",
        "-newerat",
        "-newerct",
        "-newerBt",
    ];
    let file_value = [
        "-newer",
        "-anewer",
        "-cnewer",
        "-samefile",
        "-files0-from",
        "-newermm",
        "-neweraa",
        "-newercc",
    ];
    let flags = [
        "-empty",
        "-nouser",
        "-nogroup",
        "-readable",
        "-writable",
        "-executable",
        "-depth",
        "-prune",
        "-quit",
        "-print",
        "-print0",
        "-ls",
        "-true",
        "-false",
        "-not",
        "-and",
        "-or",
        "-a",
        "-o",
        "-mount",
        "-xdev",
        "-noleaf",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-daystart",
        "-follow",
        "-warn",
        "-nowarn",
        "(",
        ")",
        "!",
        ",",
        "-help",
        "--help",
        "-version",
        "--version",
    ];
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            verdict.opaque("`find` with an expression only known when it runs");
            return;
        };
        index += 1;
        match &*text {
            t if flags.contains(&t) => {}
            t if one_value.contains(&t) => index += 1,
            t if file_value.contains(&t) || t.starts_with("-newer") => {
                if let Some(value) = args.get(index) {
                    push_role(verdict, value, Role::Read, false);
                }
                index += 1;
            }
            "-delete" => {
                for start in &starts {
                    verdict.effect(&found(start), Access::Write, true);
                }
            }
            "-fprint" | "-fprint0" | "-fls" => {
                if let Some(value) = args.get(index) {
                    push_role(verdict, value, Role::Write, false);
                }
                index += 1;
            }
            "-fprintf" => {
                if let Some(value) = args.get(index) {
                    push_role(verdict, value, Role::Write, false);
                }
                index += 2;
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let begin = index;
                while let Some(arg) = args.get(index) {
                    if matches!(arg.literal().as_deref(), Some(";" | "+")) {
                        break;
                    }
                    index += 1;
                }
                let command: Vec<Arg> = args[begin..index.min(args.len())]
                    .iter()
                    .map(|arg| replace_braces(arg, &starts, &found))
                    .collect();
                index += 1;
                if !command.is_empty() {
                    verdict.nested.push(Nested {
                        args: command,
                        ..Nested::default()
                    });
                }
            }
            other => {
                verdict.opaque(format!("`find {other}` (an expression the analysis does not know)"));
                return;
            }
        }
    }
}

/// `{}` in a `find -exec` command: a path below a start path.
fn replace_braces(arg: &Arg, starts: &[Arg], found: &dyn Fn(&Arg) -> Arg) -> Arg {
    let Some(text) = arg.literal() else { return arg.clone() };
    if !text.contains("{}") {
        return arg.clone();
    }
    if text == "{}" && starts.len() == 1 {
        return found(&starts[0]);
    }
    let mut field = Field::default();
    for (i, piece) in text.split("{}").enumerate() {
        if i > 0 {
            field.segs.push(Seg::Hole {
                display: "{}".into(),
                class: PathHole::Any,
                value: None,
            });
        }
        if !piece.is_empty() {
            field.segs.push(Seg::Lit(piece.to_string()));
        }
    }
    Arg {
        field,
        vanish: false,
        split: false,
    }
}

fn xargs(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    for value in ctx.parsed.values(&["-a", "--arg-file"]) {
        push_role(verdict, value, Role::Read, false);
    }
    let replace: Option<String> = ctx
        .parsed
        .opts
        .iter()
        .find(|opt| matches!(&*opt.name, "-I" | "-i" | "--replace"))
        .map(|opt| {
            opt.value
                .as_ref()
                .and_then(Arg::literal)
                .map_or_else(|| "{}".to_string(), Cow::into_owned)
        });
    let rest: Vec<Arg> = ctx.args[ctx.parsed.rest.min(ctx.args.len())..].to_vec();
    let command = if rest.is_empty() { vec![Arg::text("echo")] } else { rest };
    let (command, appended) = match &replace {
        Some(token) => (
            command
                .iter()
                .map(|arg| match arg.literal() {
                    Some(text) if text.contains(token.as_str()) => Arg::unknown(&text),
                    _ => arg.clone(),
                })
                .collect(),
            false,
        ),
        None => (command, true),
    };
    verdict.nested.push(Nested {
        args: command,
        appended,
        ..Nested::default()
    });
}

/// Wrappers: options of their own, then the command they run.
fn wrapper(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let (spec, positional): (Spec, usize) = match ctx.name {
        "env" => (
            Spec {
                flags: "0iv",
                values: "uCS",
                long: &[
                    "ignore-environment",
                    "null",
                    "debug",
                    "help",
                    "version",
                    "list-signal-handling",
                ],
                long_values: &["unset", "chdir", "split-string"],
                long_optional: &["block-signal", "default-signal", "ignore-signal"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "sudo" => (
            Spec {
                flags: "AbEHiKklnPSsVv",
                values: "CDghpRrTUu",
                long: &[
                    "askpass",
                    "background",
                    "preserve-env",
                    "set-home",
                    "login",
                    "remove-timestamp",
                    "reset-timestamp",
                    "list",
                    "non-interactive",
                    "preserve-groups",
                    "stdin",
                    "shell",
                    "validate",
                    "version",
                    "help",
                    "edit",
                ],
                long_values: &[
                    "close-from",
                    "chdir",
                    "group",
                    "host",
                    "prompt",
                    "chroot",
                    "role",
                    "type",
                    "other-user",
                    "user",
                    "command-timeout",
                ],
                posix: true,
                ..NONE
            },
            0,
        ),
        "doas" => (
            Spec {
                flags: "nsL",
                values: "uC",
                posix: true,
                ..NONE
            },
            0,
        ),
        "nice" => (
            Spec {
                values: "n",
                long_values: &["adjustment"],
                long: &["help", "version"],
                numeric: true,
                posix: true,
                ..NONE
            },
            0,
        ),
        "timeout" => (
            Spec {
                flags: "v",
                values: "sk",
                long: &["foreground", "preserve-status", "verbose", "help", "version"],
                long_values: &["signal", "kill-after"],
                posix: true,
                ..NONE
            },
            1,
        ),
        "stdbuf" => (
            Spec {
                values: "ioe",
                long_values: &["input", "output", "error"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "ionice" => (
            Spec {
                flags: "tx",
                values: "cnpPu",
                long_values: &["class", "classdata", "pid", "pgid", "uid"],
                long: &["ignore", "help", "version"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "setsid" => (
            Spec {
                flags: "cfw",
                long: &["ctty", "fork", "wait", "help", "version"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "time" => (
            Spec {
                flags: "apqv",
                values: "fo",
                long: &["append", "portability", "quiet", "verbose", "help", "version"],
                long_values: &["format", "output"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "taskset" => (
            Spec {
                flags: "acp",
                long: &["all-tasks", "cpu-list", "pid", "help", "version"],
                posix: true,
                ..NONE
            },
            1,
        ),
        "chrt" => (
            Spec {
                flags: "abdfiormpRv",
                values: "TPD",
                posix: true,
                ..NONE
            },
            1,
        ),
        "flock" => (
            Spec {
                flags: "sxunoFeE",
                values: "wEc",
                long: &[
                    "shared",
                    "exclusive",
                    "unlock",
                    "nonblock",
                    "close",
                    "no-fork",
                    "verbose",
                    "help",
                    "version",
                ],
                long_values: &["timeout", "conflict-exit-code", "command"],
                posix: true,
                ..NONE
            },
            1,
        ),
        "strace" | "ltrace" => (
            Spec {
                flags: "cCdDfFhiqrtTvVwxyzZk",
                values: "abeEIoOpPsSuUX",
                posix: true,
                ..NONE
            },
            0,
        ),
        "numactl" | "prlimit" | "cgexec" | "runuser" | "firejail" | "torsocks" | "proxychains" | "proxychains4" => {
            verdict.opaque(format!(
                "`{}` runs a command with settings the analysis does not model",
                ctx.name
            ));
            return;
        }
        _ => (Spec { posix: true, ..NONE }, 0),
    };
    let parsed = getopt(&spec, args);
    if !parsed.unknown.is_empty() {
        verdict.opaque(format!(
            "`{}` with options the analysis does not know ({})",
            ctx.name,
            parsed.unknown.join(" ")
        ));
        return;
    }
    if matches!(ctx.name, "env") && parsed.has(&["-S", "--split-string"]) {
        verdict.opaque("`env -S` splits a string into a command");
        return;
    }
    if ctx.name == "sudo" && parsed.has(&["-s", "--shell", "-i", "--login", "-e", "--edit"]) {
        verdict.opaque("`sudo -s/-i/-e` runs a shell or an editor");
        return;
    }
    if ctx.name == "doas" && parsed.has(&["-s"]) {
        verdict.opaque("`doas -s` runs a shell");
        return;
    }
    if matches!(ctx.name, "sudo" | "doas") && parsed.has(&["-C", "-R", "--chroot", "-D", "--chdir"]) {
        verdict.opaque(format!("`{}` in another directory or root", ctx.name));
        return;
    }
    if matches!(ctx.name, "taskset" | "ionice") && parsed.has(&["-p", "--pid", "-P", "--pgid", "-u", "--uid"]) {
        return;
    }
    if ctx.name == "flock" && parsed.has(&["-c", "--command"]) {
        match parsed.values(&["-c", "--command"]).next().and_then(Arg::literal) {
            Some(script) => verdict.scripts.push(script.into_owned()),
            None => verdict.opaque("`flock -c` with a command only known when it runs"),
        }
        return;
    }
    for value in parsed.values(&["-o", "--output"]) {
        push_role(verdict, value, Role::Write, false);
    }
    let mut start = parsed.rest.min(args.len());
    let mut env = Vec::new();
    if matches!(ctx.name, "env" | "sudo") {
        while let Some(arg) = args.get(start) {
            let text = head(arg);
            match text.split_once('=') {
                Some((name, _)) if !name.is_empty() && !name.starts_with('-') => {
                    if !crate::syntax::is_identifier(name) {
                        verdict.opaque(format!("`{}` sets an environment variable named `{name}`", ctx.name));
                        return;
                    }
                    env.push(name.to_string());
                    start += 1;
                }
                _ => break,
            }
        }
    }
    start += positional;
    let chdir = parsed.values(&["-C", "--chdir"]).next().map(|arg| arg.field.clone());
    if ctx.name == "env"
        && chdir.is_some()
        && let Some(dir) = parsed.values(&["-C", "--chdir"]).next()
    {
        verdict.effect(dir, Access::Dir, false);
    }
    if start < args.len() {
        verdict.nested.push(Nested {
            args: args[start..].to_vec(),
            env,
            chdir,
            appended: false,
        });
    } else if !env.is_empty() {
        // `env NAME=value` alone prints the environment.
    }
}

/// `sh -c 'script'` is analysed as shell code; a shell reading a file or its input runs
/// code the analysis cannot see.
fn shell(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    let mut command = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            verdict.opaque(format!("`{}` with an argument only known when it runs", ctx.name));
            return;
        };
        if text == "--" || text == "-" {
            index += 1;
            break;
        }
        if text.starts_with("--") {
            if matches!(&*text, "--rcfile" | "--init-file") {
                verdict.opaque(format!("`{} {text}` runs a file", ctx.name));
                return;
            }
            if !matches!(
                &*text,
                "--norc"
                    | "--noprofile"
                    | "--login"
                    | "--posix"
                    | "--noediting"
                    | "--restricted"
                    | "--verbose"
                    | "--help"
                    | "--version"
            ) {
                verdict.opaque(format!("`{} {text}`", ctx.name));
                return;
            }
            index += 1;
            continue;
        }
        if let Some(flags) = text.strip_prefix('-').or_else(|| text.strip_prefix('+')) {
            for c in flags.chars() {
                match c {
                    'c' => command = true,
                    'e' | 'u' | 'x' | 'v' | 'l' | 'i' | 'r' | 'p' | 'h' | 'B' | 'E' | 'T' | 'C' | 'f' | 'a' | 'b'
                    | 'm' => {}
                    'o' | 'O' => {
                        let option = args.get(index + 1).and_then(Arg::literal).unwrap_or_default();
                        if !matches!(&*option, "pipefail" | "errexit" | "nounset" | "xtrace") {
                            verdict.opaque(format!("`{} -{c} {option}` changes how the script is read", ctx.name));
                            return;
                        }
                        index += 1;
                    }
                    's' => {
                        verdict.opaque(format!("`{} -s` runs commands from its input", ctx.name));
                        return;
                    }
                    'n' => return,
                    other => {
                        verdict.opaque(format!("`{} -{other}`", ctx.name));
                        return;
                    }
                }
            }
            if flags.contains('f') && command {
                // noglob changes what the script's words expand to.
                verdict.opaque(format!("`{} -f` turns off pathname expansion", ctx.name));
                return;
            }
            index += 1;
            continue;
        }
        break;
    }
    if command {
        match args.get(index).map(Arg::literal) {
            Some(Some(script)) => verdict.scripts.push(script.into_owned()),
            Some(None) => verdict.opaque(format!("`{} -c` with a script only known when it runs", ctx.name)),
            None => verdict.opaque(format!("`{} -c` without a script", ctx.name)),
        }
        return;
    }
    match args.get(index) {
        Some(_) => verdict.opaque(format!("`{}` runs a script file the analysis cannot see", ctx.name)),
        None => verdict.opaque(format!("`{}` runs commands from its input", ctx.name)),
    }
}

/// Interpreters: inline code (`-c`, `-e`, `--eval`) or code from input cannot be seen and
/// is never saved; a script file is the project's code.
fn interpreter(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let (inline, with_value): (&[&str], &[&str]) = match ctx.name {
        "python" | "python2" | "python3" | "pypy" | "pypy3" => (&["-c"], &["-m", "-W", "-X", "-Q"]),
        "node" | "nodejs" | "ts-node" | "tsx" | "node-ts" => (
            &["-e", "--eval", "-p", "--print"],
            &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--input-type",
                "--experimental-loader",
                "--env-file",
                "--conditions",
                "-C",
            ],
        ),
        "perl" => (&["-e", "-E"], &["-M", "-m", "-I", "-x", "-d"]),
        "ruby" => (&["-e"], &["-r", "-I", "-C", "-E", "-F"]),
        "php" => (&["-r", "-R", "-B", "-E"], &["-f", "-c", "-d", "-z"]),
        "lua" | "luajit" => (&["-e"], &["-l"]),
        "deno" | "bun" => (&["-e", "--eval", "eval", "-p", "--print"], &[]),
        "Rscript" | "R" => (&["-e", "--expr"], &[]),
        "julia" => (&["-e", "-E", "--eval", "--print"], &[]),
        "osascript" => (&["-e"], &["-l"]),
        "pwsh" | "powershell" => (&["-c", "-Command", "-command", "-EncodedCommand", "-e"], &[]),
        "elixir" | "erl" | "escript" => (&["-e", "-eval"], &[]),
        _ => (&["-e", "-c"], &[]),
    };
    let args = ctx.args;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            verdict.opaque(format!("`{}` with an argument only known when it runs", ctx.name));
            return;
        };
        if inline.iter().any(|flag| {
            text == *flag || (flag.len() == 2 && text.starts_with(flag) && text.len() > 2 && !flag.starts_with("--"))
        }) {
            verdict.opaque(format!("`{}` runs code given inline", ctx.name));
            return;
        }
        if text.starts_with("--") && inline.iter().any(|flag| text.starts_with(&format!("{flag}="))) {
            verdict.opaque(format!("`{}` runs code given inline", ctx.name));
            return;
        }
        if ctx.name.starts_with("python") || ctx.name.starts_with("pypy") {
            // Clustered flags: `-Bc 'code'`.
            if text.starts_with('-')
                && !text.starts_with("--")
                && text[1..].contains('c')
                && !text[1..].starts_with(['W', 'X', 'm'])
            {
                verdict.opaque(format!("`{}` runs code given inline", ctx.name));
                return;
            }
            if text.starts_with('-') && !text.starts_with("--") && text.contains('i') {
                verdict.opaque(format!("`{} -i` reads code from its input", ctx.name));
                return;
            }
        }
        if matches!(ctx.name, "perl" | "ruby") && text.starts_with('-') && !text.starts_with("--") {
            if text[1..].contains(['e', 'E']) {
                verdict.opaque(format!("`{}` runs code given inline", ctx.name));
                return;
            }
            if text[1..].starts_with('i') || text[1..].contains('i') && text[1..].contains(['p', 'n']) {
                // In-place editing writes every file operand.
                for operand in args.iter().skip(index + 1).filter(|a| !head(a).starts_with('-')) {
                    push_role(verdict, operand, Role::Write, false);
                }
            }
        }
        if text == "-" {
            verdict.opaque(format!("`{} -` runs code from its input", ctx.name));
            return;
        }
        if ctx.name == "deno" || ctx.name == "bun" {
            if matches!(&*text, "eval" | "repl") {
                verdict.opaque(format!("`{} {text}` runs code given inline", ctx.name));
                return;
            }
            // `deno run file.ts`, `bun run script`, `bun install`: the project's code.
            return;
        }
        if text.starts_with('-') {
            if with_value.contains(&&*text) {
                if text == "-m" {
                    // `python -m module`: the module's code, like a script file.
                    return;
                }
                index += 2;
            } else {
                index += 1;
            }
            continue;
        }
        // A script file: the project's code. Its path is read.
        push_role(verdict, arg, Role::Read, false);
        return;
    }
    verdict.opaque(format!("`{}` without a script runs code from its input", ctx.name));
}

fn always_opaque(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let reason = match ctx.name {
        "watch" => "`watch` runs its arguments as shell code, repeatedly",
        "parallel" => "`parallel` runs its arguments as shell code",
        "at" | "batch" | "crontab" => "it schedules commands to run later",
        "zsh" | "fish" | "csh" | "tcsh" | "xonsh" | "nu" | "elvish" => {
            "a shell whose language the analysis does not model"
        }
        "vim" | "vi" | "nvim" | "emacs" | "nano" | "ed" | "ex" => "an editor can run commands and write any file",
        "sqlite3" => "sqlite3 dot-commands can run programs and write files",
        _ => "it runs commands the analysis cannot see",
    };
    if ctx.name == "sqlite3" && ctx.args.len() <= 1 && !ctx.args.iter().any(|a| head(a).starts_with('-')) {
        // `sqlite3 db.sqlite` with SQL from input: still may hold dot-commands.
    }
    verdict.opaque(reason);
}

fn make(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let spec = Spec {
        flags: "bBdeiknpqrRsStvwL",
        values: "CfIjlloOW",
        long: &[
            "always-make",
            "environment-overrides",
            "ignore-errors",
            "keep-going",
            "just-print",
            "dry-run",
            "recon",
            "print-data-base",
            "question",
            "no-builtin-rules",
            "no-builtin-variables",
            "silent",
            "quiet",
            "stop",
            "touch",
            "version",
            "print-directory",
            "no-print-directory",
            "warn-undefined-variables",
            "check-symlink-times",
            "trace",
            "help",
        ],
        long_values: &[
            "directory",
            "file",
            "makefile",
            "include-dir",
            "jobs",
            "load-average",
            "old-file",
            "assume-old",
            "what-if",
            "new-file",
            "assume-new",
            "eval",
            "output-sync",
            "debug",
        ],
        long_optional: &["jobs", "output-sync", "debug", "shuffle", "jobserver-style"],
        ..NONE
    };
    let parsed = getopt(&spec, ctx.args);
    if parsed.has(&["-E", "--eval"]) {
        verdict.opaque("`make --eval` runs given text as a makefile");
    }
    for file in parsed.values(&["-f", "--file", "--makefile"]) {
        if file.literal().as_deref() == Some("-") {
            verdict.opaque("`make -f -` reads a makefile from its input");
        } else {
            verdict.effect(file, Access::Read, false);
        }
    }
    for dir in parsed.values(&["-C", "--directory"]) {
        verdict.effect(dir, Access::Dir, false);
    }
    strip_forms(
        ctx,
        verdict,
        &[
            "-C",
            "--directory",
            "-f",
            "--file",
            "--makefile",
            "-j",
            "--jobs",
            "-s",
            "--silent",
            "-k",
            "--keep-going",
        ],
        &["-C", "-f", "-j", "-l", "-o", "-W", "-I", "-O"],
    );
}

fn curl(ctx: &Ctx<'_>, verdict: &mut Verdict) {
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
fn data_file(verdict: &mut Verdict, value: &Arg) {
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

fn wget(ctx: &Ctx<'_>, verdict: &mut Verdict) {
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

fn jq(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    let mut filter_given = false;
    let mut operands = Vec::new();
    let mut positional_args = false;
    while let Some(arg) = args.get(index) {
        let text = head(arg);
        if positional_args {
            index += 1;
            continue;
        }
        match text.as_str() {
            "-f" | "--from-file" => {
                if let Some(file) = args.get(index + 1) {
                    push_role(verdict, file, Role::Read, false);
                }
                filter_given = true;
                index += 2;
            }
            "--arg" | "--argjson" => index += 3,
            "--rawfile" | "--slurpfile" => {
                if let Some(file) = args.get(index + 2) {
                    push_role(verdict, file, Role::Read, false);
                }
                index += 3;
            }
            "--indent" | "--tab" | "-L" => index += if text == "--tab" { 1 } else { 2 },
            "--args" | "--jsonargs" => {
                positional_args = true;
                index += 1;
            }
            _ if text.starts_with('-') && text.len() > 1 => index += 1,
            _ => {
                operands.push(arg.clone());
                index += 1;
            }
        }
    }
    for operand in operands.iter().skip(usize::from(!filter_given)) {
        push_role(verdict, operand, Role::Read, false);
    }
}

fn ssh(ctx: &Ctx<'_>, verdict: &mut Verdict) {
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

/// Multi-level commands with global options before the subcommand: also matched without
/// them (`npm --prefix x run build` is `npm run build` too).
fn global_options(ctx: &Ctx<'_>, verdict: &mut Verdict) {
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

fn archive(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let operands: Vec<&Arg> = ctx
        .args
        .iter()
        .filter(|arg| !head(arg).starts_with('-') || arg.maybe_option())
        .collect();
    let below = |display: &str| Arg {
        field: Field {
            segs: vec![Seg::Hole {
                display: display.into(),
                class: PathHole::Below,
                value: None,
            }],
        },
        vanish: false,
        split: false,
    };
    match ctx.name {
        "unzip" | "7z" => {
            for operand in &operands {
                push_role(verdict, operand, Role::Read, false);
            }
            let dir = ctx
                .args
                .windows(2)
                .find(|pair| head(&pair[0]) == "-d")
                .map(|pair| pair[1].field.clone());
            verdict.effect_under(&below("(archive members)"), Access::Write, true, dir.as_ref());
        }
        "zip" => {
            for (i, operand) in operands.iter().enumerate() {
                push_role(verdict, operand, if i == 0 { Role::Write } else { Role::Read }, true);
            }
        }
        "patch" => {
            verdict.effect(&below("(patched files)"), Access::Write, true);
            for (i, operand) in operands.iter().enumerate() {
                push_role(verdict, operand, if i == 0 { Role::Write } else { Role::Read }, false);
            }
            for pair in ctx.args.windows(2) {
                match head(&pair[0]).as_str() {
                    "-i" | "--input" => push_role(verdict, &pair[1], Role::Read, false),
                    "-o" | "--output" => push_role(verdict, &pair[1], Role::Write, false),
                    _ => {}
                }
            }
        }
        _ => {
            // Compressors replace each file by its compressed (or plain) version.
            for operand in &operands {
                push_role(verdict, operand, Role::Read, false);
                push_role(verdict, operand, Role::Write, false);
                let mut sibling = (*operand).clone();
                sibling.field.segs.push(Seg::Hole {
                    display: "(.suffix)".into(),
                    class: PathHole::Name,
                    value: None,
                });
                push_role(verdict, &sibling, Role::Write, false);
                if let Some(text) = operand.literal()
                    && let Some(stem) = text.rsplit_once('.').map(|(stem, _)| stem.to_string())
                {
                    push_role(verdict, &Arg::text(stem), Role::Write, false);
                }
            }
        }
    }
}

/// Adds the form of the command without the given leading options (and their values).
fn strip_forms(ctx: &Ctx<'_>, verdict: &mut Verdict, options: &[&str], with_value: &[&str]) {
    let args = ctx.args;
    let mut index = 0;
    let mut kept = vec![0];
    let mut stripped = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else { break };
        let name = text.split('=').next().unwrap_or("");
        if options.contains(&name) || (text.len() > 2 && with_value.contains(&&text[..2])) {
            stripped = true;
            let attached = text.contains('=') || (text.len() > 2 && !text.starts_with("--"));
            index += if with_value.contains(&name) && !attached { 2 } else { 1 };
            continue;
        }
        break;
    }
    if stripped {
        kept.extend((index..args.len()).map(|i| i + 1));
        verdict.forms.push(kept);
    }
}

// --- sed scripts ------------------------------------------------------------------------------

fn sed(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let in_place = ctx.parsed.has(&["-i", "--in-place"]);
    let sandbox = ctx.parsed.has(&["--sandbox"]);
    let mut scripts: Vec<Option<Cow<'_, str>>> = ctx.parsed.values(&["-e", "--expression"]).map(Arg::literal).collect();
    if ctx.parsed.has(&["-f", "--file"]) {
        verdict.opaque("`sed -f` runs a script file the analysis cannot see");
    }
    let explicit = ctx.parsed.has(&["-e", "--expression", "-f", "--file"]);
    if !explicit {
        scripts.push(ctx.operand(0).and_then(Arg::literal));
    }
    let files: Vec<&Arg> = ctx.operands().skip(usize::from(!explicit)).collect();
    if in_place {
        for file in &files {
            push_role(verdict, file, Role::Write, false);
        }
    }
    let script = if scripts.iter().all(Option::is_some) {
        Some(scripts.into_iter().flatten().collect::<Vec<_>>().join("\n"))
    } else {
        None
    };
    let Some(script) = script else {
        verdict.opaque("`sed` with a script only known when it runs");
        return;
    };
    match sed_effects(&script) {
        Ok(effects) => {
            if sandbox {
                return;
            }
            for (access, file) in effects.files {
                match file.as_str() {
                    "/dev/stdout" | "/dev/stderr" | "/dev/stdin" => {}
                    _ => push_role(
                        verdict,
                        &Arg::text(file),
                        if access == Access::Write {
                            Role::Write
                        } else {
                            Role::Read
                        },
                        false,
                    ),
                }
            }
            if effects.executes {
                verdict.opaque("the `sed` script runs shell commands (`e`)");
            }
        }
        Err(reason) => verdict.opaque(format!("a `sed` script the analysis does not read ({reason})")),
    }
}

pub(crate) struct SedEffects {
    pub(crate) files: Vec<(Access, String)>,
    pub(crate) executes: bool,
}

/// Reads a GNU sed script far enough to find the commands that run programs (`e`, the `e`
/// flag of `s`) and the files it reads (`r`, `R`) or writes (`w`, `W`, the `w` flag).
pub(crate) fn sed_effects(script: &str) -> Result<SedEffects, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut effects = SedEffects {
        files: Vec::new(),
        executes: false,
    };
    let mut i = 0;
    let skip_blank = |i: &mut usize| {
        while *i < chars.len() && matches!(chars[*i], ' ' | '\t' | ';' | '\n') {
            *i += 1;
        }
    };
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && chars[*i] != '\n' {
            *i += 1;
        }
        chars[start..*i].iter().collect::<String>()
    };
    // A regex or replacement delimited by `delim`; backslashes escape.
    let delimited = |i: &mut usize, delim: char| -> Result<(), String> {
        while *i < chars.len() {
            let c = chars[*i];
            if c == '\\' {
                *i += 2;
                continue;
            }
            if c == '\n' && delim != '\n' {
                return Err("a newline inside a regex".into());
            }
            if c == delim {
                *i += 1;
                return Ok(());
            }
            if c == '[' && delim != '[' {
                // A bracket expression may hold the delimiter.
                let mut j = *i + 1;
                if j < chars.len() && chars[j] == '^' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    if chars[j] == '\n' {
                        return Err("an unterminated bracket".into());
                    }
                    j += 1;
                }
                *i = j + 1;
                continue;
            }
            *i += 1;
        }
        Err("an unterminated regex".into())
    };
    loop {
        skip_blank(&mut i);
        if i >= chars.len() {
            break;
        }
        // Addresses.
        for _ in 0..2 {
            skip_blank_spaces(&chars, &mut i);
            if i >= chars.len() {
                break;
            }
            match chars[i] {
                '0'..='9' => {
                    while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '~') {
                        i += 1;
                    }
                }
                '$' => i += 1,
                '/' => {
                    i += 1;
                    delimited(&mut i, '/')?;
                    while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                        i += 1;
                    }
                }
                '\\' => {
                    let delim = *chars.get(i + 1).ok_or("an address without a delimiter")?;
                    i += 2;
                    delimited(&mut i, delim)?;
                    while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                        i += 1;
                    }
                }
                '+' | '~' => {
                    i += 1;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                _ => break,
            }
            skip_blank_spaces(&chars, &mut i);
            if i < chars.len() && chars[i] == ',' {
                i += 1;
                continue;
            }
            break;
        }
        skip_blank_spaces(&chars, &mut i);
        while i < chars.len() && chars[i] == '!' {
            i += 1;
            skip_blank_spaces(&chars, &mut i);
        }
        if i >= chars.len() {
            return Err("an address without a command".into());
        }
        let command = chars[i];
        i += 1;
        match command {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            '#' => {
                let _ = rest_of_line(&mut i);
            }
            ':' => {
                let label = rest_of_line(&mut i);
                if label.contains(';') {
                    // GNU sed ends a label at `;` too: fine, the rest is another command.
                }
            }
            'b' | 't' | 'T' => {
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                skip_blank_spaces(&chars, &mut i);
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line (a trailing backslash continues it).
                loop {
                    let line = rest_of_line(&mut i);
                    if line.ends_with('\\') && i < chars.len() {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'e' => {
                effects.executes = true;
                let _ = rest_of_line(&mut i);
            }
            'r' | 'R' | 'w' | 'W' => {
                skip_blank_spaces(&chars, &mut i);
                let file = rest_of_line(&mut i);
                let access = if matches!(command, 'r' | 'R') {
                    Access::Read
                } else {
                    Access::Write
                };
                effects.files.push((access, file));
            }
            'v' => {
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            's' | 'y' => {
                let delim = *chars.get(i).ok_or("`s` without a delimiter")?;
                if delim == '\n' || delim == '\\' {
                    return Err("an odd `s` delimiter".into());
                }
                i += 1;
                delimited(&mut i, delim)?;
                // The replacement: may contain newlines escaped by a backslash.
                loop {
                    if i >= chars.len() {
                        return Err("an unterminated replacement".into());
                    }
                    let c = chars[i];
                    if c == '\\' {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if c == delim {
                        break;
                    }
                }
                if command == 's' {
                    while i < chars.len() {
                        match chars[i] {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            'e' => {
                                effects.executes = true;
                                i += 1;
                            }
                            'w' => {
                                i += 1;
                                skip_blank_spaces(&chars, &mut i);
                                let file = rest_of_line(&mut i);
                                effects.files.push((Access::Write, file));
                            }
                            _ => break,
                        }
                    }
                }
            }
            other => return Err(format!("the command `{other}`")),
        }
        skip_blank_spaces(&chars, &mut i);
        if command != '{' && i < chars.len() && !matches!(chars[i], ';' | '\n' | '}' | '#') {
            return Err(format!("text after a command near `{}`", chars[i]));
        }
    }
    Ok(effects)
}

fn skip_blank_spaces(chars: &[char], i: &mut usize) {
    while *i < chars.len() && matches!(chars[*i], ' ' | '\t') {
        *i += 1;
    }
}

// --- awk programs -------------------------------------------------------------------------------

fn awk(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    if ctx
        .parsed
        .has(&["-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"])
    {
        verdict.opaque("`awk` runs a program file or extension the analysis cannot see");
        return;
    }
    let inline: Vec<Option<Cow<'_, str>>> = ctx.parsed.values(&["-e", "--source"]).map(Arg::literal).collect();
    let (programs, skip) = if inline.is_empty() {
        (vec![ctx.operand(0).and_then(Arg::literal)], 1)
    } else {
        (inline, 0)
    };
    let mut dangerous = false;
    for program in &programs {
        match program {
            None => {
                verdict.opaque("`awk` with a program only known when it runs");
                return;
            }
            Some(program) => dangerous |= awk_may_run_or_write(program),
        }
    }
    if dangerous {
        verdict.opaque("the `awk` program may run commands or write files (system, pipes, redirection, getline)");
    }
    for operand in ctx.operands().skip(skip) {
        // `var=value` operands are assignments, not files.
        let text = head(operand);
        if text
            .split_once('=')
            .is_some_and(|(name, _)| crate::syntax::is_identifier(name))
        {
            continue;
        }
        push_role(verdict, operand, Role::Read, false);
    }
}

/// Conservative: any `system`, `|`, `>`, `getline`, `close`, `fflush`, `printf`/`print`
/// followed by redirection, or an `ENVIRON`/`PROCINFO` use counts.
fn awk_may_run_or_write(program: &str) -> bool {
    let mut in_string = false;
    let mut in_regex = false;
    let mut escaped = false;
    let mut outside = String::new();
    let mut previous_significant = ' ';
    for c in program.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' && (in_string || in_regex) {
            escaped = true;
            continue;
        }
        if in_string {
            if c == '"' {
                in_string = false;
            }
            continue;
        }
        if in_regex {
            if c == '/' {
                in_regex = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
            continue;
        }
        if c == '/'
            && matches!(
                previous_significant,
                ' ' | '(' | ',' | '{' | ';' | '!' | '~' | '&' | '|' | '\n'
            )
        {
            in_regex = true;
            continue;
        }
        outside.push(c);
        if !c.is_whitespace() {
            previous_significant = c;
        }
    }
    let words = [
        "system", "getline", "close", "fflush", "ENVIRON", "PROCINFO", "@load", "@include",
    ];
    outside.contains('|') || outside.contains('>') || words.iter().any(|word| outside.contains(word))
}

// --- git ----------------------------------------------------------------------------------------

/// `git`: global options (also matched without them), `-c` keys that run programs, and
/// subcommand options that write, read or run.
fn git(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    let mut kept = vec![0];
    let mut stripped = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            if arg.maybe_option() {
                verdict.opaque("`git` with an option only known when it runs");
                return;
            }
            break;
        };
        if !text.starts_with('-') {
            break;
        }
        let (name, attached) = match text.split_once('=') {
            Some((name, _)) if name.starts_with("--") => (name.to_string(), true),
            _ => (text.to_string(), false),
        };
        let value = |offset: usize| -> Option<Arg> {
            if attached {
                Some(split_value(arg, name.len() + 1))
            } else {
                args.get(index + offset).cloned()
            }
        };
        match name.as_str() {
            "-C" => {
                if let Some(dir) = value(1) {
                    verdict.effect(&dir, Access::Dir, false);
                }
                index += 2;
            }
            "-c" => {
                let Some(setting) = value(1).and_then(|arg| arg.literal().map(Cow::into_owned)) else {
                    verdict.opaque("`git -c` with a setting only known when it runs");
                    return;
                };
                if !git_safe_key(setting.split('=').next().unwrap_or("")) {
                    verdict.opaque(format!("`git -c {setting}` can make git run a program"));
                    return;
                }
                index += 2;
            }
            "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--attr-source" | "--list-cmds" => {
                if matches!(name.as_str(), "--git-dir" | "--work-tree")
                    && let Some(dir) = value(1)
                {
                    verdict.effect(&dir, Access::Dir, false);
                }
                index += if attached { 1 } else { 2 };
            }
            "--exec-path" if attached => {
                verdict.opaque("`git --exec-path=…` runs git programs from another directory");
                return;
            }
            "--config-env" => {
                verdict.opaque("`git --config-env` takes settings from the environment");
                return;
            }
            "--no-pager"
            | "-P"
            | "-p"
            | "--paginate"
            | "--bare"
            | "--no-replace-objects"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--exec-path"
            | "--html-path"
            | "--man-path"
            | "--info-path"
            | "--no-lazy-fetch"
            | "--no-advice" => index += 1,
            "--version" | "--help" | "-h" | "-v" => return,
            _ => {
                verdict.opaque(format!("`git {name}` (a global option the analysis does not know)"));
                return;
            }
        }
        stripped = true;
    }
    if stripped {
        kept.extend((index..args.len()).map(|i| i + 1));
        verdict.forms.push(kept);
    }
    let Some(sub) = args.get(index) else { return };
    let Some(sub) = sub.literal() else {
        verdict.opaque("a `git` subcommand only known when it runs");
        return;
    };
    let rest = &args[index + 1..];
    for (i, arg) in rest.iter().enumerate() {
        let Some(text) = arg.literal() else {
            if arg.maybe_option() && !matches!(&*sub, "commit" | "tag") {
                verdict.opaque(format!("`git {sub}` with an option only known when it runs"));
                return;
            }
            continue;
        };
        if text == "--" {
            break;
        }
        let name = text.split('=').next().unwrap_or("");
        let takes_next = !text.contains('=');
        match name {
            "--output" | "-o"
                if matches!(
                    &*sub,
                    "log"
                        | "show"
                        | "diff"
                        | "format-patch"
                        | "whatchanged"
                        | "diff-tree"
                        | "diff-files"
                        | "diff-index"
                        | "range-diff"
                        | "blame"
                        | "shortlog"
                ) || name == "--output" =>
            {
                let value = if takes_next {
                    rest.get(i + 1).cloned()
                } else {
                    Some(split_value(arg, name.len() + 1))
                };
                if let Some(value) = value {
                    let tree = sub == "format-patch";
                    verdict.effect(&value, Access::Write, tree);
                }
            }
            "--exec" | "-x" if matches!(&*sub, "rebase" | "archive") || name == "--exec" => {
                verdict.opaque(format!("`git {sub} {name}` runs a command"));
                return;
            }
            "--upload-pack" | "--receive-pack" | "-u"
                if name != "-u" || matches!(&*sub, "fetch" | "pull" | "clone" | "ls-remote" | "archive") =>
            {
                verdict.opaque(format!("`git {sub} {name}` runs a program"));
                return;
            }
            "--extcmd" | "--open-files-in-pager" | "-O" | "--template" | "--tool" if name != "-O" || sub == "grep" => {
                verdict.opaque(format!("`git {sub} {name}` runs a program"));
                return;
            }
            _ => {}
        }
    }
    match &*sub {
        "config" => {
            let operands: Vec<&Arg> = rest.iter().filter(|arg| !head(arg).starts_with('-')).collect();
            let writes = rest.iter().any(|arg| {
                matches!(
                    head(arg).as_str(),
                    "--add"
                        | "--unset"
                        | "--unset-all"
                        | "--replace-all"
                        | "--rename-section"
                        | "--remove-section"
                        | "-e"
                        | "--edit"
                        | "set"
                        | "unset"
                        | "edit"
                )
            }) || operands.len() >= 2;
            let key = operands.first().and_then(|arg| arg.literal()).unwrap_or_default();
            if writes && !git_safe_key(&key) {
                verdict.opaque(format!(
                    "`git config` sets {key}, which can make git run a program later"
                ));
            }
        }
        "submodule" if rest.iter().any(|arg| head(arg) == "foreach") => {
            verdict.opaque("`git submodule foreach` runs a command");
        }
        "filter-branch" | "filter-repo" | "difftool" | "mergetool" | "instaweb" | "web--browse" => {
            verdict.opaque(format!("`git {sub}` runs commands"));
        }
        "bisect" if rest.first().and_then(Arg::literal).as_deref() == Some("run") && rest.len() > 1 => {
            verdict.nested.push(Nested {
                args: rest[1..].to_vec(),
                ..Nested::default()
            });
        }
        "show" | "cat-file" | "archive" | "grep" | "diff" | "log" | "blame" | "annotate" | "add" | "checkout"
        | "restore" | "rm" => {
            // `REV:path` reads a file from the repository; paths after `--` or that look
            // like paths are read (`git show HEAD:.env`, `git diff -- .env`).
            let mut after_dashes = false;
            let mut first_operand = true;
            for arg in rest {
                let text = arg.literal();
                if text.as_deref() == Some("--") {
                    after_dashes = true;
                    continue;
                }
                if !after_dashes && head(arg).starts_with('-') {
                    continue;
                }
                let Some(text) = text else {
                    verdict.effect(&Arg::unknown(&arg.field.display()), Access::Read, false);
                    continue;
                };
                if sub == "grep" && first_operand && !after_dashes {
                    first_operand = false;
                    continue;
                }
                first_operand = false;
                if let Some((_, path)) = text
                    .split_once(':')
                    .filter(|(rev, _)| !rev.contains('/') || rev.is_empty())
                {
                    if !path.is_empty() {
                        verdict.effect(&Arg::text(path.trim_start_matches("./")), Access::Read, false);
                    }
                    continue;
                }
                let looks = after_dashes || text.contains('/') || text.starts_with('.') || text.contains('*');
                if looks {
                    let access = if matches!(&*sub, "checkout" | "restore" | "rm") {
                        Access::Write
                    } else {
                        Access::Read
                    };
                    verdict.effect(arg, access, false);
                }
            }
        }
        _ => {}
    }
}

/// `git -c` / `git config` keys that never make git run a program or read another config.
fn git_safe_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let exact = [
        "user.name",
        "user.email",
        "core.quotepath",
        "core.autocrlf",
        "core.safecrlf",
        "core.eol",
        "core.filemode",
        "core.ignorecase",
        "core.abbrev",
        "init.defaultbranch",
        "column.ui",
        "log.showsignature",
        "log.decorate",
        "log.abbrevcommit",
        "log.date",
        "pull.rebase",
        "pull.ff",
        "merge.ff",
        "push.default",
        "fetch.prune",
        "diff.renames",
        "diff.algorithm",
        "diff.colormoved",
        "status.short",
        "status.branch",
        "status.showuntrackedfiles",
        "format.pretty",
        "commit.gpgsign",
        "tag.gpgsign",
        "rebase.autosquash",
        "rebase.autostash",
        "branch.sort",
        "tag.sort",
        "core.longpaths",
        "gc.auto",
        "maintenance.auto",
        "advice.detachedhead",
        "protocol.version",
    ];
    exact.contains(&key.as_str()) || key.starts_with("color.") || key.starts_with("advice.")
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
            ..NONE
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

    #[test]
    fn sed_scripts() {
        assert!(!sed_effects("s/a/b/g").unwrap().executes);
        assert!(sed_effects("s/a/b/e").unwrap().executes);
        assert!(sed_effects("1e rm x").unwrap().executes);
        assert!(sed_effects("/x/ { e id\n}").unwrap().executes);
        assert_eq!(
            sed_effects("w out.txt").unwrap().files,
            [(Access::Write, "out.txt".to_string())]
        );
        assert_eq!(
            sed_effects("s/a/b/w out").unwrap().files,
            [(Access::Write, "out".to_string())]
        );
        assert_eq!(
            sed_effects("1r secrets/key").unwrap().files,
            [(Access::Read, "secrets/key".to_string())]
        );
        assert!(!sed_effects("s/e/E/; /e/d; y/abc/xyz/").unwrap().executes);
        assert!(!sed_effects("$!N; s/\\n/ /; P; D").unwrap().executes);
    }

    #[test]
    fn awk_programs() {
        assert!(!awk_may_run_or_write("{print $1}"));
        assert!(!awk_may_run_or_write("/x|y/ {print \"a|b\"}"));
        assert!(awk_may_run_or_write("BEGIN{system(\"rm x\")}"));
        assert!(awk_may_run_or_write("{print > \"out\"}"));
        assert!(awk_may_run_or_write("{ \"date\" | getline d }"));
    }
}
