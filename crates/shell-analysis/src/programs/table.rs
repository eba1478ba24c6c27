//! All the program data, and nothing else: every program the analysis models (its
//! options, what its operands and option values do, which special step reads what a table
//! cannot say), the option tables those special steps read, and examples of what the
//! analysis finds, checked by a test.
//!
//! The special steps' code lives in the family files (`archive.rs`, `files.rs`, `find.rs`,
//! `git.rs`, `net.rs`, `packages.rs`, `runners.rs`, `text.rs`); they read their tables from
//! here, and this file names them only by a [`Special`], which `programs::run_special`
//! dispatches, so the data depends on no code.
//!
//! Where a table is unsure whether an option takes a value, it says it does not: the value
//! is then read as a file too, which only asks more.

use super::getopt::Spec;
use super::{Model, Role, Special, Unknown};
use Role::{Dir, Read, Write};

/// No options: a spec to start from (`Spec { flags: "x", ..NONE }`).
const NONE: Spec = Spec::NONE;

/// An entry with its operands' role and nothing else; the methods below add the rest.
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

/// The compact way to write an entry: `entry(…).files(…).unknown(…)`.
impl Model {
    const fn pattern_first(self, options: &'static [&'static str]) -> Model {
        Model { pattern_first: Some(options), ..self }
    }

    const fn files(self, files: &'static [(&'static str, Role)]) -> Model {
        Model { files, ..self }
    }

    const fn recursive(self, recursive: &'static [&'static str]) -> Model {
        Model { recursive, ..self }
    }

    const fn opaque(self, opaque: &'static [&'static str]) -> Model {
        Model { opaque, ..self }
    }

    const fn unknown(self, unknown: Unknown) -> Model {
        Model { unknown, ..self }
    }

    /// A special step after the table's own reading.
    const fn then(self, special: Special) -> Model {
        Model { special: Some(special), ..self }
    }

    /// A special step that reads the arguments itself, instead of the table.
    const fn only(self, special: Special) -> Model {
        Model { special: Some(special), generic: false, ..self }
    }
}

/// Every program the analysis models. The first entry naming a program is its model.
pub(crate) static MODELS: &[Model] = &[
    // Programs that only print what they are given.
    entry(&["echo", "printf", "sleep", "true", "false", "yes", "seq", "id", "whoami", "uname", "nproc", "tty", "which", "clear", "tput",
        "basename", "dirname", "printenv", "kill", "pkill", "killall", "pgrep", "ps", "env_none", "groups", "logname", "users", "uptime",
        "arch", "getconf", "locale", "expr", "tr", "numfmt", "factor", "pwd", "hostname", "date", "ulimit", "umask", "cal", "free", "test",
        "["], Spec { posix: true, ..NONE }, Role::None),
    // Readers.
    entry(&["cat"], Spec { flags: "AbeEnstTuv", long: &["show-all", "number-nonblank", "show-ends", "number", "squeeze-blank",
        "show-tabs", "show-nonprinting", "help", "version"], ..NONE }, Read),
    entry(&["head"], Spec { flags: "qvz", values: "cn", long: &["quiet", "silent", "verbose", "zero-terminated", "help", "version"],
        long_values: &["bytes", "lines"], numeric: true, ..NONE }, Read),
    entry(&["tail"], Spec { flags: "fFqvz", values: "cns", long: &["retry", "quiet", "silent", "verbose", "zero-terminated", "help",
        "version"], long_values: &["bytes", "lines", "pid", "sleep-interval", "max-unchanged-stats"], long_optional: &["follow"],
        numeric: true, ..NONE }, Read),
    entry(&["wc"], Spec { flags: "cmlLw", long: &["bytes", "chars", "lines", "words", "max-line-length", "help", "version"],
        long_values: &["files0-from", "total"], ..NONE }, Read).files(&[("--files0-from", Read)]),
    entry(&["cut"], Spec { flags: "nsz", values: "bcdf", long: &["complement", "only-delimited", "zero-terminated", "help", "version"],
        long_values: &["bytes", "characters", "delimiter", "fields", "output-delimiter"], ..NONE }, Read),
    entry(&["nl"], Spec { flags: "p", values: "bdfhilnsvw", ..NONE }, Read),
    entry(&["tac"], Spec { flags: "br", values: "s", long: &["before", "regex", "help", "version"], long_values: &["separator"], ..NONE },
        Read),
    entry(&["paste"], Spec { flags: "sz", values: "d", long: &["serial", "zero-terminated", "help", "version"],
        long_values: &["delimiters"], ..NONE }, Read),
    entry(&["less", "more", "most"], Spec { flags: "aABcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX", values: "bhjkoOpPtTxyz",
        long_values: &["log-file", "LOG-FILE", "pattern", "tag", "tabs", "shift", "window"], ..NONE }, Read)
        .files(&[("-o", Write), ("-O", Write), ("--log-file", Write), ("--LOG-FILE", Write)]),
    entry(&["xxd"], Spec { flags: "abCeEiprRuv", values: "cglosn", ..NONE }, Role::None).then(Special::Xxd),
    entry(&["iconv"], Spec { flags: "cls", values: "fto", long: &["list", "silent", "help", "version"],
        long_values: &["from-code", "to-code", "output"], ..NONE }, Read).files(&[("-o", Write), ("--output", Write)]),
    // Readers whose options the table does not list: every argument that is not an option
    // is read.
    // (`--check` of the checksum programs, `--files[0]` of `xzcat`, `--patch-from` of
    // `zstdcat`: the options of some that read other files, see [`LIST_OPTIONS`].)
    entry(&["od", "hexdump", "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum",
        "cksum", "sum", "base32", "base64", "basenc", "join", "comm", "look", "pr", "ptx", "tsort", "fold", "fmt", "expand", "unexpand",
        "rev", "column", "zcat", "bzcat", "xzcat", "zstdcat", "lzcat", "bat", "batcat", "readelf", "objdump", "nm", "size", "diffstat"],
        Spec { flags: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", long: &["help", "version", "check"],
        long_values: &["patch-from"], long_optional: &["files", "files0"], ..NONE }, Read)
        .files(&[("--files", Read), ("--files0", Read), ("--patch-from", Read)]),
    entry(&["file"], Spec { flags: "bcdEhiklLnNprsSvzZ0C", values: "efFmP", long: &["brief", "checking-printout", "mime",
        "apple", "extension", "mime-type", "mime-encoding", "keep-going", "list", "dereference", "no-dereference", "no-buffer", "no-pad",
        "print0", "preserve-date", "raw", "special-files", "no-sandbox", "uncompress", "uncompress-noreport", "compile", "debug", "help",
        "version"], long_values: &["exclude", "exclude-quiet", "files-from", "separator", "magic-file", "parameter"], ..NONE }, Read)
        .files(&[("-f", Read), ("--files-from", Read), ("-m", Read), ("--magic-file", Read)]),
    entry(&["sort"], Spec { flags: "bdfgiMhnRrcCsuVz", values: "kotST", long: &["ignore-leading-blanks", "dictionary-order",
        "ignore-case", "general-numeric-sort", "ignore-nonprinting", "month-sort", "human-numeric-sort", "numeric-sort", "random-sort",
        "reverse", "version-sort", "merge", "stable", "unique", "zero-terminated", "debug", "help", "version"], long_values: &["key",
        "output", "field-separator", "buffer-size", "temporary-directory", "compress-program", "files0-from", "random-source", "sort",
        "parallel", "batch-size"], long_optional: &["check"], ..NONE }, Read)
        .files(&[("-o", Write), ("--output", Write), ("-T", Write), ("--temporary-directory", Write), ("--files0-from", Read),
            ("--random-source", Read)])
        .opaque(&["--compress-program"]).unknown(Unknown::Writes),
    entry(&["uniq"], Spec { flags: "cdDiuz", values: "fsw", long: &["count", "repeated", "ignore-case", "unique", "zero-terminated",
        "help", "version"], long_values: &["skip-fields", "skip-chars", "check-chars"], long_optional: &["all-repeated", "group"],
        ..NONE }, Role::None).then(Special::Uniq).unknown(Unknown::Writes),
    entry(&["grep", "egrep", "fgrep", "zgrep_"], Spec { flags: "EFGPivwxyclLoqsbHhnTZzUaIrRV", values: "efmABCdD",
        long: &["extended-regexp", "fixed-strings", "basic-regexp", "perl-regexp", "ignore-case", "no-ignore-case", "invert-match",
        "word-regexp", "line-regexp", "count", "files-without-match", "files-with-matches", "only-matching", "quiet", "silent",
        "no-messages", "byte-offset", "with-filename", "no-filename", "line-number", "initial-tab", "null", "null-data", "text",
        "recursive", "dereference-recursive", "line-buffered", "binary", "no-group-separator", "help", "version", "unix-byte-offsets"],
        long_values: &["regexp", "file", "max-count", "after-context", "before-context", "context", "label", "include", "exclude",
        "exclude-from", "exclude-dir", "binary-files", "devices", "directories", "group-separator"], long_optional: &["color", "colour"],
        numeric: true, ..NONE }, Read)
        .pattern_first(GREP_PATTERN_OPTIONS).files(&[("-f", Read), ("--file", Read), ("--exclude-from", Read)])
        .recursive(GREP_RECURSIVE).then(Special::Grep).unknown(Unknown::Reads),
    entry(&["rg"], Spec { flags: "aiIlLnNoPqsSuUvwxzcbFhH0", values: "efgtTmABCEjMrd", long: &["ignore-case", "smart-case",
        "case-sensitive", "files", "files-with-matches", "count", "hidden", "no-ignore", "follow", "fixed-strings", "word-regexp",
        "line-regexp", "invert-match", "only-matching", "line-number", "no-line-number", "search-zip", "text", "multiline", "json",
        "vimgrep", "no-heading", "heading", "pcre2", "null", "quiet", "type-list", "sort-files", "stats", "trim", "no-messages",
        "no-filename", "with-filename", "byte-offset", "column", "no-config", "one-file-system", "help", "version", "unrestricted"],
        long_values: &["regexp", "file", "glob", "iglob", "type", "type-not", "max-count", "after-context", "before-context", "context",
        "encoding", "threads", "max-columns", "replace", "max-depth", "max-filesize", "sort", "sortr", "ignore-file", "pre", "pre-glob",
        "color", "colors", "path-separator", "type-add", "context-separator", "field-match-separator", "hostname-bin", "engine",
        "regex-size-limit", "dfa-size-limit"], ..NONE }, Read)
        .pattern_first(RG_PATTERN_OPTIONS).files(&[("-f", Read), ("--file", Read), ("--ignore-file", Read)])
        .opaque(&["--pre", "--hostname-bin"]).then(Special::Ripgrep).unknown(Unknown::Reads),
    entry(&["sed", "gsed"], Spec { flags: "nrEsuzb", values: "efl", optional: "i", long: &["quiet", "silent", "regexp-extended",
        "separate", "unbuffered", "null-data", "debug", "posix", "sandbox", "follow-symlinks", "help", "version", "binary"],
        long_values: &["expression", "file", "line-length"], long_optional: &["in-place"], ..NONE }, Read)
        .pattern_first(&["-e", "-f", "--expression", "--file"]).files(&[("-f", Read), ("--file", Read)]).then(Special::Sed)
        .unknown(Unknown::Code),
    entry(&["awk", "gawk", "mawk", "nawk", "busybox-awk"], Spec { flags: "bcCdDghkMnNOpPrsStVYo", values: "fvFeEil",
        long: &["characters-as-bytes", "traditional", "copyright", "gen-pot", "help", "lint-old", "bignum", "use-lc-numeric",
        "non-decimal-data", "optimize", "posix", "re-interval", "no-optimize", "sandbox", "version", "csv"], long_values: &["file",
        "assign", "field-separator", "source", "exec", "include", "load"], long_optional: &["dump-variables", "debug", "lint",
        "pretty-print", "profile"], ..NONE }, Role::None).then(Special::Awk).unknown(Unknown::Code),
    entry(&["diff", "cmp", "diff3", "sdiff", "colordiff", "delta", "difft"], Spec { flags: "abBdeEfilnNpqrsStTuvwxyZ",
        values: "CDFIoSUWxXL", long: &["normal", "brief", "report-identical-files", "context", "unified", "ed", "rcs", "side-by-side",
        "expand-tabs", "initial-tab", "show-c-function", "recursive", "new-file", "unidirectional-new-file", "ignore-case",
        "ignore-tab-expansion", "ignore-trailing-space", "ignore-space-change", "ignore-all-space", "ignore-blank-lines", "text",
        "strip-trailing-cr", "minimal", "speed-large-files", "suppress-common-lines", "suppress-blank-empty", "left-column", "help",
        "version", "print-bytes", "verbose", "quiet", "silent", "no-dereference"], long_values: &["exclude", "exclude-from",
        "starting-file", "from-file", "to-file", "ignore-matching-lines", "label", "width", "tabsize", "line-format", "old-line-format",
        "new-line-format", "unchanged-line-format", "old-group-format", "new-group-format", "changed-group-format",
        "unchanged-group-format", "horizon-lines", "output", "ignore-initial", "bytes"], long_optional: &["color", "palette", "context",
        "unified"], ..NONE }, Read)
        .files(&[("--from-file", Read), ("--to-file", Read), ("-o", Write), ("--output", Write), ("-X", Read), ("--exclude-from", Read)])
        .recursive(&["-r", "--recursive"])
        .unknown(Unknown::Reads),
    // Paths listed or looked at.
    entry(&["du"], Spec { flags: "0abcDHhkLlmPSsx", values: "BdtX", long: &["null", "all", "apparent-size", "bytes", "total",
        "dereference-args", "human-readable", "inodes", "dereference", "count-links", "no-dereference", "separate-dirs", "si",
        "summarize", "one-file-system", "help", "version"], long_values: &["block-size", "max-depth", "files0-from", "threshold",
        "time-style", "exclude-from", "exclude"], long_optional: &["time"], ..NONE }, Dir)
        .files(&[("--files0-from", Read), ("-X", Read), ("--exclude-from", Read)]),
    entry(&["ls", "tree", "df", "stat", "realpath", "readlink", "exa", "eza", "lsd", "namei", "lsattr", "getfacl"],
        Spec { flags: "aAbBcCdDfFgGhHiklLmnNopqQrRsStTuUvwxXZ1LPemsz", values: "ITwdB", long: &["all", "almost-all", "escape",
        "ignore-backups", "directory", "dired", "classify", "no-group", "human-readable", "si", "dereference", "inode", "kibibytes",
        "literal", "numeric-uid-gid", "hide-control-chars", "show-control-chars", "quote-name", "recursive", "size", "help", "version",
        "canonicalize", "canonicalize-existing", "canonicalize-missing", "no-newline", "zero", "summarize", "total", "terse",
        "file-system", "logical", "physical", "relative-to", "apparent-size", "count-links", "separate-dirs", "one-file-system", "long",
        "tree", "git"], long_values: &["block-size", "format", "hide", "ignore", "indicator-style", "quoting-style", "sort", "tabsize",
        "time", "time-style", "width", "max-depth", "threshold", "exclude", "exclude-from", "printf", "relative-base", "level"],
        long_optional: &["color", "colour", "hyperlink", "time-style"], ..NONE }, Dir),
    // Writers.
    entry(&["rm"], Spec { flags: "fiIrRdv", long: &["force", "recursive", "dir", "verbose", "one-file-system", "no-preserve-root",
        "help", "version"], long_optional: &["interactive", "preserve-root"], ..NONE }, Write)
        .recursive(&["-r", "-R", "--recursive"]).unknown(Unknown::Writes),
    entry(&["shred", "srm"], Spec { flags: "fuvxz", values: "ns", long: &["force", "verbose", "exact", "zero", "help", "version"],
        long_values: &["iterations", "size", "random-source"], long_optional: &["remove"], ..NONE }, Write).unknown(Unknown::Writes),
    entry(&["unlink", "sponge", "rmdir"], Spec { flags: "apv", long: &["parents", "verbose", "ignore-fail-on-non-empty", "help",
        "version"], ..NONE }, Write).unknown(Unknown::Writes),
    entry(&["mkdir", "mkfifo", "mknod"], Spec { flags: "pvZ", values: "m", long: &["parents", "verbose", "help", "version"],
        long_values: &["mode"], long_optional: &["context"], ..NONE }, Write).unknown(Unknown::Writes),
    entry(&["tee"], Spec { flags: "aip", long: &["append", "ignore-interrupts", "help", "version"], long_optional: &["output-error"],
        ..NONE }, Write).unknown(Unknown::Writes),
    entry(&["truncate", "fallocate"], Spec { flags: "cdnoxvz", values: "sirl", long: &["no-create", "io-blocks", "help", "version"],
        long_values: &["size", "reference", "length", "offset"], ..NONE }, Write)
        .files(&[("-r", Read), ("--reference", Read)]).unknown(Unknown::Writes),
    entry(&["touch"], Spec { flags: "acfhm", values: "dtr", long: &["no-create", "no-dereference", "help", "version"],
        long_values: &["date", "reference", "time"], ..NONE }, Write)
        .files(&[("-r", Read), ("--reference", Read)]).unknown(Unknown::Writes),
    entry(&["chmod", "chown", "chgrp", "chattr", "setfacl", "chcon"], Spec { flags: "cfvRHLPh", long: &["changes", "silent", "quiet",
        "verbose", "no-preserve-root", "preserve-root", "recursive", "dereference", "no-dereference", "help", "version"],
        long_values: &["reference", "from"], ..NONE }, Write).only(Special::Chmod),
    entry(&["cp", "mv", "install", "ln", "link", "rsync_local"], Spec { flags: "abdfiHlLnPpRrsTuvxZDcCUgor", values: "StmMgo",
        long: &["archive", "attributes-only", "copy-contents", "debug", "force", "interactive", "link", "dereference", "no-clobber",
        "no-dereference", "parents", "recursive", "remove-destination", "strip-trailing-slashes", "symbolic-link",
        "no-target-directory", "verbose", "one-file-system", "keep-directory-symlink", "help", "version", "directory", "compare",
        "preserve-timestamps", "strip", "relative", "logical", "physical", "exchange", "no-copy"], long_values: &["suffix",
        "target-directory", "mode", "owner", "group", "no-preserve", "sparse", "strip-program"], long_optional: &["backup", "preserve",
        "reflink", "update", "context"], ..NONE }, Role::None).then(Special::Copy).unknown(Unknown::Writes),
    entry(&["dd"], NONE, Role::None).only(Special::Dd).unknown(Unknown::Writes),
    entry(&["tar", "gtar", "bsdtar"], NONE, Role::None).only(Special::Tar).unknown(Unknown::Code),
    entry(&["find", "gfind"], NONE, Role::None).only(Special::Find).unknown(Unknown::Code),
    entry(&["xargs"], Spec { flags: "0prtx", values: "adEILnPs", optional: "eil", long: &["null", "interactive", "no-run-if-empty",
        "verbose", "exit", "show-limits", "open-tty", "help", "version"], long_values: &["arg-file", "delimiter", "max-args", "max-procs",
        "max-chars", "process-slot-var"], long_optional: &["eof", "replace", "max-lines"], posix: true, ..NONE }, Role::None)
        .then(Special::Xargs).unknown(Unknown::Code),
    entry(&["git"], NONE, Role::None).only(Special::Git),
    // Programs that run other code.
    entry(&["env", "sudo", "doas", "nice", "nohup", "timeout", "stdbuf", "ionice", "setsid", "time", "taskset", "chrt", "unbuffer",
        "flock", "strace", "ltrace", "busybox", "coproc", "caffeinate", "catchsegv", "numactl", "runuser", "cgexec", "prlimit",
        "torsocks", "proxychains", "proxychains4", "firejail"], NONE, Role::None).only(Special::Wrapper).unknown(Unknown::Code),
    entry(&["sh", "bash", "dash", "ash", "ksh", "mksh", "posh", "rbash"], NONE, Role::None).only(Special::Shell).unknown(Unknown::Code),
    entry(&["python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "luajit",
        "tclsh", "wish", "Rscript", "R", "julia", "osascript", "pwsh", "powershell", "irb", "jshell", "groovy", "scala", "ghci", "runghc",
        "guile", "racket", "sbcl", "clisp", "elixir", "erl", "escript", "swipl", "gst", "ts-node", "tsx", "node-ts"], NONE, Role::None)
        .only(Special::Interpreter).unknown(Unknown::Code),
    entry(&["zsh", "fish", "csh", "tcsh", "xonsh", "nu", "elvish", "watch", "parallel", "su", "script", "chroot", "unshare", "nsenter",
        "systemd-run", "at", "batch", "crontab", "vim", "vi", "nvim", "emacs", "nano", "ed", "ex", "gdb", "lldb", "expect", "sqlite3",
        "socat", "ncat", "screen", "tmux_new", "bwrap", "make_eval", "sh_script"], NONE, Role::None)
        .only(Special::AlwaysOpaque).unknown(Unknown::Code),
    entry(&["make", "gmake"], NONE, Role::None).only(Special::Make),
    // Network clients, JSON, package managers and archivers.
    entry(&["curl"], NONE, Role::None).only(Special::Curl),
    entry(&["wget"], NONE, Role::None).only(Special::Wget),
    entry(&["jq", "gojq", "jaq"], NONE, Role::None).only(Special::Jq).unknown(Unknown::Reads),
    entry(&["ssh", "scp", "sftp", "nc", "netcat"], NONE, Role::None).only(Special::Ssh).unknown(Unknown::Code),
    entry(&["npm", "pnpm", "yarn", "cargo", "go", "docker", "podman", "kubectl", "terraform", "helm", "bun_", "npx", "pip", "pip3", "uv",
        "poetry", "gh"], NONE, Role::None).only(Special::GlobalOptions),
    // Compilers: a compile reads the files its sources include, unknown (compile.rs).
    entry(&["gcc", "cc", "c++", "g++", "clang", "clang++", "cpp", "c89", "c99", "as", "ld", "ld.bfd", "ld.gold", "ld.lld"], NONE,
        Role::None).only(Special::Compiler),
    entry(&["gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "zip", "unzip", "7z", "lz4", "patch"], NONE,
        Role::None).only(Special::Archive).unknown(Unknown::Writes),
];

// What the special steps read, by family.

// text.rs: grep, rg, sed, awk, jq.

/// `grep` options that give the pattern, so that the first operand is a file.
pub(super) const GREP_PATTERN_OPTIONS: &[&str] = &["-e", "-f", "--regexp", "--file"];
/// `grep` options that search directories recursively (the current one without operands).
pub(super) const GREP_RECURSIVE: &[&str] = &["-r", "-R", "--recursive", "--dereference-recursive"];
/// `rg` options after which the first operand is a path, not the pattern.
pub(super) const RG_PATTERN_OPTIONS: &[&str] = &["-e", "-f", "--regexp", "--file", "--files", "--type-list"];
/// `sed` options that edit the files in place.
pub(super) const SED_IN_PLACE: &[&str] = &["-i", "--in-place"];
/// `sed --sandbox` refuses the script's `e`, `r` and `w` commands.
pub(super) const SED_SANDBOX: &[&str] = &["--sandbox"];
/// `sed` options whose value is a script.
pub(super) const SED_EXPRESSION: &[&str] = &["-e", "--expression"];
/// `sed` options whose value is a script file.
pub(super) const SED_SCRIPT_FILE: &[&str] = &["-f", "--file"];
/// `sed` options that give the script, so that the first operand is a file.
pub(super) const SED_SCRIPT_OPTIONS: &[&str] = &["-e", "--expression", "-f", "--file"];
/// Files a `sed` script may name that are the streams, not files of the project.
pub(super) const SED_STREAMS: &[&str] = &["/dev/stdout", "/dev/stderr", "/dev/stdin"];
/// `awk` options that load a program file or an extension.
pub(super) const AWK_PROGRAM_FILES: &[&str] = &["-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"];
/// `awk` options whose value is program text.
pub(super) const AWK_SOURCE: &[&str] = &["-e", "--source"];
/// Names in an awk program that run commands, read other files (`getline < f`, a changed
/// `ARGV`), or read the environment.
pub(super) const AWK_RISKY_WORDS: &[&str] = &["system", "getline", "close", "fflush", "ENVIRON", "PROCINFO", "ARGV", "ARGC"];
/// The files an awk `print > "…"` may name that are the streams, not files.
pub(super) const AWK_STREAMS: &[&str] = &["/dev/stdout", "/dev/stderr"];
/// `jq` options whose value is the filter's file.
pub(super) const JQ_FILTER_FILE: &[&str] = &["-f", "--from-file"];
/// `jq` options with a name and a value.
pub(super) const JQ_NAMED_VALUES: &[&str] = &["--arg", "--argjson"];
/// `jq` options with a name and a file read.
pub(super) const JQ_NAMED_FILES: &[&str] = &["--rawfile", "--slurpfile"];
/// `jq` layout options (`--tab` alone has no value).
pub(super) const JQ_LAYOUT: &[&str] = &["--indent", "--tab", "-L"];
/// `jq` options after which every argument is a positional argument, not a file.
pub(super) const JQ_POSITIONAL: &[&str] = &["--args", "--jsonargs"];

// files.rs: cp, mv, ln, install, chmod and the like, dd.

/// `cp` options that copy trees.
pub(super) const COPY_RECURSIVE: &[&str] = &["-r", "-R", "--recursive", "-a", "--archive"];
/// `ln` options that make a symbolic link.
pub(super) const COPY_SYMBOLIC: &[&str] = &["-s", "--symbolic"];
/// `install` options that create directories (every operand).
pub(super) const INSTALL_DIRECTORY: &[&str] = &["-d", "--directory"];
/// `install` options that run a program.
pub(super) const INSTALL_RUNS: &[&str] = &["--strip-program"];
/// Options whose value is the target directory.
pub(super) const COPY_TARGET: &[&str] = &["-t", "--target-directory"];
/// The characters of a symbolic or octal mode (`chmod -x file`: a mode, not an option).
pub(super) const CHMOD_MODE_CHARS: &str = "rwxXstugoa+-=,0123456789";
/// `dd` operands that name a file, and what is done with it.
pub(super) const DD_FILES: &[(&str, Role)] = &[("if", Read), ("of", Write)];
/// `dd` arguments that are neither an operand nor unknown.
pub(super) const DD_INFO: &[&str] = &["--help", "--version"];

// archive.rs: tar and the others.

/// `tar`'s options (GNU tar; old-style letters take their values in the same order).
pub(super) const TAR: Spec = Spec { flags: "AcdrtuxzjJaSpPvwkmOWhilBGMnoRsUZ", values: "fbCgHIKLNTVX",
    long: &["create", "extract", "get", "list", "append", "update", "diff", "compare", "delete", "catenate", "concatenate", "gzip",
        "gunzip", "bzip2", "xz", "lzma", "zstd", "auto-compress", "verbose", "preserve-permissions", "same-permissions",
        "absolute-names", "keep-old-files", "overwrite", "no-same-owner", "same-owner", "numeric-owner", "dereference",
        "one-file-system", "sparse", "remove-files", "show-transformed-names", "totals", "wildcards", "no-wildcards", "anchored",
        "no-recursion", "recursion", "null", "ignore-failed-read", "help", "version", "strip-trailing-slashes", "skip-old-files",
        "keep-newer-files", "unlink-first", "recursive-unlink", "touch", "no-overwrite-dir"],
    long_values: &["file", "directory", "exclude", "exclude-from", "files-from", "transform", "xform", "strip-components",
        "blocking-factor", "format", "owner", "group", "mode", "mtime", "newer", "newer-mtime", "after-date", "label", "to-command",
        "use-compress-program", "checkpoint-action", "info-script", "new-volume-script", "rsh-command", "rmt-command", "index-file",
        "listed-incremental", "tape-length", "exclude-tag", "suffix", "backup"],
    long_optional: &["checkpoint", "backup", "warning"], ..NONE };
/// `tar` options that run a program.
pub(super) const TAR_RUNS: &[&str] = &["-I", "--to-command", "--use-compress-program", "--checkpoint-action", "-F", "--info-script",
    "--new-volume-script", "--rsh-command", "--rmt-command"];
/// `tar` options whose value is the directory it works in.
pub(super) const TAR_DIRECTORY: &[&str] = &["-C", "--directory"];
/// `tar` options whose value is the archive.
pub(super) const TAR_ARCHIVE: &[&str] = &["-f", "--file"];
/// `tar` operations that write the archive from files.
pub(super) const TAR_CREATE: &[&str] = &["-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate"];
/// `tar` operations that extract.
pub(super) const TAR_EXTRACT: &[&str] = &["-x", "--extract", "--get"];
/// `tar` operations that delete from the archive.
pub(super) const TAR_DELETE: &[&str] = &["--delete"];
/// `tar` options whose value is a file of names, read.
pub(super) const TAR_NAME_FILES: &[&str] = &["-T", "--files-from", "-X", "--exclude-from"];
/// `tar` options whose value lists the members to archive: the files it names are read.
pub(super) const TAR_FILE_LISTS: &[&str] = &["-T", "--files-from"];
/// Options (of any program) whose value is a file listing the files to read.
pub(super) const FILE_LISTS: &[&str] = &["--files0-from", "-files0-from"];
/// Options that make some programs read the files a list names, by program: the list is
/// the option's value (`file -f LIST`), an operand (`md5sum -c SUMS`) or the input
/// (`xzcat --files`).
pub(super) const LIST_OPTIONS: &[(&[&str], &[&str])] = &[
    (&["md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum"], &["-c", "--check"]),
    (&["file"], &["-f", "--files-from"]),
    (&["xzcat", "lzcat"], &["--files", "--files0"]),
];
/// Programs that read more arguments from a response file, `@FILE` (binutils).
pub(super) const RESPONSE_FILES: &[&str] = &["strings", "readelf", "objdump", "nm", "size"];
/// `tar` options whose value is a file written.
pub(super) const TAR_WRITE_FILES: &[&str] = &["--index-file", "-g", "--listed-incremental"];
/// `tar` options that keep absolute member names (extracting anywhere).
pub(super) const TAR_ABSOLUTE: &[&str] = &["-P", "--absolute-names"];
/// `tar` options that delete the files once archived or extracted.
pub(super) const TAR_REMOVE: &[&str] = &["--remove-files"];
/// `zip` options with a value (given next; a long one also `--x=v`).
pub(super) const ZIP_VALUES: &[&str] = &["-b", "--temp-path", "-O", "--output-file", "--out", "-lf", "--logfile-path", "-TT",
    "--unzip-command", "-P", "--password", "-n", "--suffixes", "-t", "--from-date", "-tt", "--before-date", "-s", "--split-size",
    "-Z", "--compression-method", "-ds", "--dot-size"];
/// `zip` options that run a command (`-TT` instead of `unzip -tqq` to test the archive).
pub(super) const ZIP_RUNS: &[&str] = &["-TT", "--unzip-command"];
/// `zip` options whose value is a file or directory written (another archive, the log, the
/// temporary directory).
pub(super) const ZIP_WRITE: &[&str] = &["-b", "--temp-path", "-O", "--output-file", "--out", "-lf", "--logfile-path"];
/// `zip` options that read the names to archive from the input (also `-@` grouped).
pub(super) const ZIP_NAMES_STDIN: &[&str] = &["--names-stdin"];
/// `zip` options that delete the files once archived.
pub(super) const ZIP_MOVE: &[&str] = &["--move"];
/// Compressors' options whose value (always given) lists the files to compress
/// (`zstd --filelist LIST`).
pub(super) const COMPRESS_LISTS: &[&str] = &["--filelist"];
/// Compressors' options whose optional attached value lists the files to compress, the
/// input without one (`xz --files[=LIST]`).
pub(super) const COMPRESS_LISTS_OPTIONAL: &[&str] = &["--files", "--files0"];
/// Compressors' options whose value is a file read (`zstd --patch-from=REF`).
pub(super) const COMPRESS_READ: &[&str] = &["--patch-from"];
/// `unzip`/`7z` option whose value is the directory extracted to.
pub(super) const UNZIP_DIRECTORY: &str = "-d";
/// `patch` options whose value is the patch read.
pub(super) const PATCH_INPUT: &[&str] = &["-i", "--input"];
/// `patch` options whose value is a file written.
pub(super) const PATCH_OUTPUT: &[&str] = &["-o", "--output"];

// compile.rs: C compilers, the preprocessor, the assembler.

/// Names a compiler is also installed under, by what they end with: a target
/// (`x86_64-linux-gnu-gcc`) before, a version (`gcc-12`, `clang-17`) after; the names of
/// the compilers' entry.
pub(super) const COMPILER_NAMES: &[&str] = &["gcc", "cc", "c++", "g++", "clang", "clang++", "cpp", "as", "ld"];
/// Arguments that only print something about the compiler (with `-print-…`).
pub(super) const COMPILER_INFO: &[&str] = &["--version", "-v", "--help", "-dumpversion", "-dumpfullversion", "-dumpmachine",
    "-dumpspecs", "-###", "--target-help"];
/// Options that run or choose a program the analysis cannot see (`-B` the directory of
/// `cc1`, `as` and `ld`; `-wrapper` a program run around each; a spec file may run any;
/// `ld -plugin` loads one).
pub(super) const COMPILER_RUNS: &[&str] = &["-B", "-wrapper", "-specs", "--specs", "--ld-path", "-Xclang", "-plugin", "--plugin"];
/// Option prefixes that load code into the compiler (`-fplugin=x.so`).
pub(super) const COMPILER_RUNS_PREFIXES: &[&str] = &["-fplugin", "-fpass-plugin", "-fload-pass-plugin"];
/// The option that chooses the linker: a program run when it is a path.
pub(super) const COMPILER_LINKER: &str = "-fuse-ld=";
/// Options that pass options to the assembler, preprocessor or linker.
pub(super) const COMPILER_PASS_THROUGH: &[&str] = &["-Wl,", "-Wa,", "-Wp,", "-Xlinker", "-Xassembler", "-Xpreprocessor"];
/// Options whose value is a directory searched for headers or libraries: read below.
pub(super) const COMPILER_DIRS: &[&str] = &["-I", "-iquote", "-isystem", "-idirafter", "-isysroot", "--sysroot", "-iprefix",
    "-iwithprefix", "-iwithprefixbefore", "-L", "-F", "-iframework"];
/// Options whose value is a file read (`-include` is read as if it began the source,
/// `-T` is a linker script).
pub(super) const COMPILER_READS: &[&str] = &["-include", "-imacros", "-T"];
/// Options whose value is a file written (`-dumpdir`: a directory).
pub(super) const COMPILER_WRITES: &[&str] = &["-o", "-MF", "-aux-info", "-dumpdir", "--MD", "-MJ", "--serialize-diagnostics"];
/// Options with a value that names no file.
pub(super) const COMPILER_OTHER_VALUES: &[&str] = &["-x", "-D", "-U", "-A", "-MT", "-MQ", "-l", "-u", "-e", "-z", "-G", "--param",
    "-target", "-arch", "-mllvm", "-dumpbase", "-dumpbase-ext", "-imultilib", "--defsym"];

// find.rs: find and xargs.

/// `find` options before the start paths (`-D` takes a value; `-O…` and `-D…` are one word).
pub(super) const FIND_GLOBAL: &[&str] = &["-H", "-L", "-P"];
/// Words that end `find`'s start paths.
pub(super) const FIND_EXPRESSION_START: &[&str] = &["(", "!", ")", ","];
/// `find` tests and options with one value that is not a file.
pub(super) const FIND_VALUE: &[&str] = &["-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-user", "-group", "-uid", "-gid", "-perm",
    "-links", "-inum", "-lname", "-ilname", "-fstype", "-maxdepth", "-mindepth", "-regextype", "-printf", "-used", "-context",
    "-newermt", "-newerat", "-newerct", "-newerBt"];
/// `find` tests whose value is a file read (and every other `-newer…`).
pub(super) const FIND_FILE_VALUE: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile", "-files0-from", "-newermm", "-neweraa",
    "-newercc"];
/// `find` words without a value that touch nothing.
pub(super) const FIND_FLAGS: &[&str] = &["-empty", "-nouser", "-nogroup", "-readable", "-writable", "-executable", "-depth",
    "-prune", "-quit", "-print", "-print0", "-ls", "-true", "-false", "-not", "-and", "-or", "-a", "-o", "-mount", "-xdev", "-noleaf",
    "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-follow", "-warn", "-nowarn", "(", ")", "!", ",", "-help",
    "--help", "-version", "--version"];
/// `find` actions that write the file their value names.
pub(super) const FIND_WRITE: &[&str] = &["-fprint", "-fprint0", "-fls"];
/// `find` actions that run a command, up to `;` or `+`.
pub(super) const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];
/// The words that end a `find -exec` command.
pub(super) const FIND_EXEC_END: &[&str] = &[";", "+"];
/// `xargs` options whose value is the file of arguments.
pub(super) const XARGS_ARG_FILE: &[&str] = &["-a", "--arg-file"];
/// `xargs` options that replace a token in the command instead of appending arguments.
pub(super) const XARGS_REPLACE: &[&str] = &["-I", "-i", "--replace"];

// git.rs.

/// `git` global options with a value (`--git-dir` and `--work-tree` name directories).
pub(super) const GIT_GLOBAL_VALUES: &[&str] = &["--git-dir", "--work-tree", "--namespace", "--super-prefix", "--attr-source",
    "--list-cmds"];
/// `git` global options with a value that names a directory.
pub(super) const GIT_GLOBAL_DIRS: &[&str] = &["--git-dir", "--work-tree"];
/// `git` global options without a value that change nothing the rules speak about.
pub(super) const GIT_GLOBAL_FLAGS: &[&str] = &["--no-pager", "-P", "-p", "--paginate", "--bare", "--no-replace-objects",
    "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--exec-path",
    "--html-path", "--man-path", "--info-path", "--no-lazy-fetch", "--no-advice"];
/// `git` global options that print and run nothing.
pub(super) const GIT_INFO: &[&str] = &["--version", "--help", "-h", "-v"];
/// Subcommands whose options may be only known at run time (`git commit -m "$MSG"`).
pub(super) const GIT_MESSAGE_SUBCOMMANDS: &[&str] = &["commit", "tag"];
/// Subcommands whose `-o` is `--output` (every subcommand's `--output` writes).
pub(super) const GIT_OUTPUT_SUBCOMMANDS: &[&str] = &["log", "show", "diff", "format-patch", "whatchanged", "diff-tree", "diff-files",
    "diff-index", "range-diff", "blame", "shortlog"];
/// The options that write the file their value names.
pub(super) const GIT_OUTPUT: &[&str] = &["--output", "-o"];
/// The options that run a command (`-x` only in these subcommands: [`GIT_EXEC_SUBCOMMANDS`]).
pub(super) const GIT_EXEC: &[&str] = &["--exec", "-x"];
/// Subcommands whose `-x` is `--exec`.
pub(super) const GIT_EXEC_SUBCOMMANDS: &[&str] = &["rebase", "archive"];
/// The options that name a program run on the remote side of the transport (`-u` only in
/// [`GIT_UPLOAD_SUBCOMMANDS`]), run locally for a local or `ext::` remote.
pub(super) const GIT_UPLOAD: &[&str] = &["--upload-pack", "--receive-pack", "-u"];
/// Subcommands whose `-u` is `--upload-pack`.
pub(super) const GIT_UPLOAD_SUBCOMMANDS: &[&str] = &["fetch", "pull", "clone", "ls-remote", "archive"];
/// Options that run a program (`-O` only in `git grep`).
pub(super) const GIT_RUNS: &[&str] = &["--extcmd", "--open-files-in-pager", "-O", "--template", "--tool"];
/// `git config` arguments that write a setting (two operands do too).
pub(super) const GIT_CONFIG_WRITES: &[&str] = &["--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
    "--remove-section", "-e", "--edit", "set", "unset", "edit"];
/// Subcommands that run commands or tools whatever their arguments.
pub(super) const GIT_RUNNING_SUBCOMMANDS: &[&str] = &["filter-branch", "filter-repo", "difftool", "mergetool", "instaweb", "web--browse"];
/// Subcommands whose operands may name files (`REV:path`, paths after `--`).
pub(super) const GIT_PATH_SUBCOMMANDS: &[&str] = &["show", "cat-file", "archive", "grep", "diff", "log", "blame", "annotate", "add",
    "stage", "checkout", "restore", "rm", "update-index", "hash-object", "checkout-index"];
/// Of those, the ones that write the files they name.
pub(super) const GIT_PATH_WRITERS: &[&str] = &["checkout", "restore", "rm", "checkout-index"];
/// Of those, the ones whose every operand is a path (no revision), read or written.
pub(super) const GIT_PATHSPEC_ONLY: &[&str] = &["add", "stage", "rm", "restore", "update-index", "hash-object", "checkout-index"];
/// The option that reads the paths from a file (`-` for the input), in `add`, `commit`,
/// `reset`, `restore`, `rm`, `checkout` and `stash push`.
pub(super) const GIT_PATHSPEC_FROM_FILE: &str = "--pathspec-from-file";
/// Its shortest prefix git reads as it (`--pathspec-f` is also `--pathspec-file-nul`).
pub(super) const GIT_PATHSPEC_FROM_FILE_SHORTEST: usize = "--pathspec-fr".len();
/// Subcommands that change the files whose paths they read (`git checkout
/// --pathspec-from-file=LIST` overwrites them, `stash` reverts them, `rm` deletes them).
pub(super) const GIT_PATHSPEC_WRITERS: &[&str] = &["checkout", "restore", "rm", "stash"];
/// Subcommands that read paths from the input, by option: (subcommands, option, its
/// shortest prefix git reads as it). `update-index` and `hash-object` read the files,
/// `checkout-index` writes them, `check-ignore` and `check-attr` read the ignore and
/// attribute files on their way.
pub(super) const GIT_STDIN_PATHS: &[(&[&str], &str, usize)] = &[
    (&["update-index", "checkout-index", "check-ignore", "check-attr"], "--stdin", "--s".len()),
    (&["hash-object"], "--stdin-paths", "--stdin-".len()),
];
/// Subcommands that read the message from a file.
pub(super) const GIT_MESSAGE_FILE_SUBCOMMANDS: &[&str] = &["commit", "tag", "merge", "notes"];
/// The options whose value is that file (`-` for the input).
pub(super) const GIT_MESSAGE_FILE: &[&str] = &["-F", "--file"];
/// `git -c` / `git config` keys that never make git run a program or read another config.
pub(super) const GIT_SAFE_KEYS: &[&str] = &["user.name", "user.email", "core.quotepath", "core.autocrlf", "core.safecrlf", "core.eol",
    "core.filemode", "core.ignorecase", "core.abbrev", "init.defaultbranch", "column.ui", "log.showsignature", "log.decorate",
    "log.abbrevcommit", "log.date", "pull.rebase", "pull.ff", "merge.ff", "push.default", "fetch.prune", "diff.renames",
    "diff.algorithm", "diff.colormoved", "status.short", "status.branch", "status.showuntrackedfiles", "format.pretty",
    "commit.gpgsign", "tag.gpgsign", "rebase.autosquash", "rebase.autostash", "branch.sort", "tag.sort", "core.longpaths", "gc.auto",
    "maintenance.auto", "advice.detachedhead", "protocol.version"];
/// Sections whose every key is safe.
pub(super) const GIT_SAFE_SECTIONS: &[&str] = &["color.", "advice."];

// net.rs: curl, wget, ssh and the like.

/// `curl` options whose value is a file written.
pub(super) const CURL_WRITE: &[&str] = &["-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii",
    "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"];
/// `curl` options whose value is a file read.
pub(super) const CURL_READ: &[&str] = &["-T", "--upload-file", "--netrc-file", "-E", "--cert", "--key", "--cacert", "--capath",
    "--crlfile", "--proxy-cacert", "--proxy-cert", "--proxy-key", "--etag-compare"];
/// `curl` options whose value is data, a file read when it starts with `@` or `<`.
pub(super) const CURL_DATA: &[&str] = &["-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "-F", "--form",
    "--form-string", "-b", "--cookie", "-H", "--header"];
/// `curl` options whose value is a file of more options.
pub(super) const CURL_CONFIG: &[&str] = &["-K", "--config"];
/// `curl` options with a value that is no file.
pub(super) const CURL_WITH_VALUE: &[&str] = &["-A", "--user-agent", "-e", "--referer", "-u", "--user", "-X", "--request", "-x",
    "--proxy", "-m", "--max-time", "--connect-timeout", "-r", "--range", "-w", "--write-out", "-Y", "--speed-limit", "-y",
    "--speed-time", "-z", "--time-cond", "--resolve", "--retry", "--retry-delay", "--retry-max-time", "--limit-rate", "--max-redirs",
    "--max-filesize", "--interface", "--dns-servers", "--url", "--output-dir", "-U", "--proxy-user", "--oauth2-bearer", "--connect-to",
    "-Q", "--quote", "-P", "--ftp-port", "--local-port", "--noproxy", "-C", "--continue-at"];
/// The `curl` option whose value is the directory the outputs are written in.
pub(super) const CURL_OUTPUT_DIR: &str = "--output-dir";
/// `curl` options that write a file named by the server or the URL.
pub(super) const CURL_REMOTE_NAME: &[&str] = &["-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name"];
/// `wget`'s options.
pub(super) const WGET: Spec = Spec { flags: "bqvnNcSrkKmpEHLx46dFh", values: "eoaOiPTtwlQUADRIXB",
    long: &["background", "quiet", "verbose", "no-verbose", "continue", "timestamping", "server-response", "recursive",
        "convert-links", "mirror", "page-requisites", "spider", "no-clobber", "help", "version", "no-check-certificate",
        "force-directories", "no-directories", "no-parent", "content-disposition", "adjust-extension"],
    long_values: &["execute", "output-file", "append-output", "output-document", "input-file", "directory-prefix", "post-file",
        "body-file", "post-data", "body-data", "method", "user-agent", "header", "tries", "timeout", "wait", "level", "quota", "user",
        "password", "load-cookies", "save-cookies", "config", "certificate", "private-key", "ca-certificate", "accept", "reject",
        "domains", "base", "referer", "limit-rate"], ..NONE };
/// `wget` options that run wgetrc commands.
pub(super) const WGET_EXECUTE: &[&str] = &["-e", "--execute", "--config"];
/// `wget` options whose value is the directory downloads go to.
pub(super) const WGET_PREFIX: &[&str] = &["-P", "--directory-prefix"];
/// `wget` options whose value is a file written.
pub(super) const WGET_WRITE: &[&str] = &["-o", "--output-file", "-a", "--append-output", "--save-cookies"];
/// `wget` options whose value is a file read.
pub(super) const WGET_READ: &[&str] = &["-i", "--input-file", "--post-file", "--body-file", "--load-cookies", "--certificate",
    "--private-key", "--ca-certificate"];
/// `wget` options whose value is the document written (instead of the downloaded names).
pub(super) const WGET_DOCUMENT: &[&str] = &["-O", "--output-document"];
/// `ssh` options whose value can make it run a local program (`-o` only with a
/// [`SSH_RISKY_WORDS`] setting).
pub(super) const SSH_RUNS: &[&str] = &["-o", "-F", "-S"];
/// `nc` options that run a program.
pub(super) const NETCAT_RUNS: &[&str] = &["-e", "-c"];
/// The netcat names of the entry.
pub(super) const NETCAT: &[&str] = &["nc", "netcat"];
/// Words of an `ssh -o` setting that runs a local program or reads another config.
pub(super) const SSH_RISKY_WORDS: &[&str] = &["command", "include", "match", "askpass"];
/// The `ssh` option whose value is a key read.
pub(super) const SSH_IDENTITY: &str = "-i";
/// The names of the entry that copy files (`host:path` operands are remote).
pub(super) const SSH_COPY: &[&str] = &["scp", "sftp"];

// packages.rs: package managers and build tools.

/// The directories under the home that a package manager writes its caches and logs to,
/// by program name (every one is among the directories the default rules allow,
/// `toolgate_permission::PACKAGE_CACHES`; a test checks it).
pub(super) const HOME_WRITES: &[(&[&str], &[&str])] = &[
    (&["npm", "npx"], &[".npm"]),
    (&["pnpm"], &[".local/share/pnpm", ".cache/pnpm"]),
    (&["yarn"], &[".cache/yarn", ".yarn"]),
    (&["bun", "bunx"], &[".bun"]),
    (&["cargo"], &[".cargo", ".rustup"]),
    (&["rustup"], &[".rustup"]),
    (&["go"], &["go", ".cache/go-build"]),
    (&["pip", "pip3"], &[".cache/pip"]),
    (&["uv", "uvx"], &[".cache/uv", ".local/share/uv"]),
    (&["poetry"], &[".cache/pypoetry"]),
];
/// The one argument that makes a run a version query, which writes nothing.
pub(super) const VERSION_QUERIES: &[&str] = &["--version", "-v", "-V"];
/// Global options before the subcommand, by program name: (names, options without a
/// value, options with one). A program of the entry not named here has none.
pub(super) const GLOBAL_OPTIONS: &[(&[&str], &[&str], &[&str])] = &[
    (&["npm", "npx"], &["-g", "--global", "-s", "--silent", "-q", "--quiet", "-y", "--yes", "-d", "--verbose", "--no-audit",
        "--no-fund"], &["--prefix", "-w", "--workspace", "--loglevel", "-C", "--registry"]),
    (&["pnpm"], &["-r", "--recursive", "-s", "--silent", "-w", "--workspace-root"], &["-C", "--dir", "--filter", "-F", "--loglevel"]),
    (&["yarn"], &["-s", "--silent", "--verbose"], &["--cwd"]),
    (&["cargo"], &["-v", "--verbose", "-q", "--quiet", "--frozen", "--locked", "--offline"], &["--color", "-C", "-Z"]),
    (&["go"], &[], &["-C"]),
    (&["docker", "podman"], &["-D", "--debug", "--tls", "--tlsverify"], &["--context", "-c", "-H", "--host", "--config", "-l",
        "--log-level", "--tlscacert", "--tlscert", "--tlskey"]),
    (&["kubectl"], &[], &["--context", "-n", "--namespace", "--kubeconfig", "--cluster", "--user", "-v", "-s", "--server", "--token",
        "--as"]),
    (&["terraform"], &[], &[]),
    (&["helm"], &["--debug"], &["--kube-context", "-n", "--namespace", "--kubeconfig"]),
    (&["gh"], &[], &["-R", "--repo"]),
];
/// Global options whose value is the directory the command works in.
pub(super) const GLOBAL_DIR_OPTIONS: &[&str] = &["--prefix", "-C", "--dir", "--cwd"];
/// `go` build flags that run a program.
pub(super) const GO_EXEC: &[&str] = &["-exec", "-toolexec"];

// runners.rs: wrappers, shells, interpreters, make.

/// Wrappers' own options, by name: (names, options, how many operands come before the
/// command). A wrapper not named here takes no options.
pub(super) const WRAPPERS: &[(&[&str], Spec, usize)] = &[
    (&["env"], Spec { flags: "0iv", values: "uCS", long: &["ignore-environment", "null", "debug", "help", "version",
        "list-signal-handling"], long_values: &["unset", "chdir", "split-string"], long_optional: &["block-signal", "default-signal",
        "ignore-signal"], posix: true, ..NONE }, 0),
    (&["sudo"], Spec { flags: "AbEHiKklnPSsVv", values: "CDghpRrTUu", long: &["askpass", "background", "preserve-env", "set-home",
        "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell", "validate",
        "version", "help", "edit"], long_values: &["close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type",
        "other-user", "user", "command-timeout"], posix: true, ..NONE }, 0),
    (&["doas"], Spec { flags: "nsL", values: "uC", posix: true, ..NONE }, 0),
    (&["nice"], Spec { values: "n", long_values: &["adjustment"], long: &["help", "version"], numeric: true, posix: true, ..NONE }, 0),
    (&["timeout"], Spec { flags: "v", values: "sk", long: &["foreground", "preserve-status", "verbose", "help", "version"],
        long_values: &["signal", "kill-after"], posix: true, ..NONE }, 1),
    (&["stdbuf"], Spec { values: "ioe", long_values: &["input", "output", "error"], posix: true, ..NONE }, 0),
    (&["ionice"], Spec { flags: "tx", values: "cnpPu", long_values: &["class", "classdata", "pid", "pgid", "uid"],
        long: &["ignore", "help", "version"], posix: true, ..NONE }, 0),
    (&["setsid"], Spec { flags: "cfw", long: &["ctty", "fork", "wait", "help", "version"], posix: true, ..NONE }, 0),
    (&["time"], Spec { flags: "apqv", values: "fo", long: &["append", "portability", "quiet", "verbose", "help", "version"],
        long_values: &["format", "output"], posix: true, ..NONE }, 0),
    (&["taskset"], Spec { flags: "acp", long: &["all-tasks", "cpu-list", "pid", "help", "version"], posix: true, ..NONE }, 1),
    (&["chrt"], Spec { flags: "abdfiormpRv", values: "TPD", posix: true, ..NONE }, 1),
    (&["flock"], Spec { flags: "sxunoFeE", values: "wEc", long: &["shared", "exclusive", "unlock", "nonblock", "close", "no-fork",
        "verbose", "help", "version"], long_values: &["timeout", "conflict-exit-code", "command"], posix: true, ..NONE }, 1),
    (&["strace", "ltrace"], Spec { flags: "cCdDfFhiqrtTvVwxyzZk", values: "abeEIoOpPsSuUX", posix: true, ..NONE }, 0),
];
/// The options of a wrapper [`WRAPPERS`] does not name.
pub(super) const WRAPPER_DEFAULT: Spec = Spec { posix: true, ..NONE };
/// Wrappers that run the command with settings the analysis does not model.
pub(super) const WRAPPERS_UNMODELLED: &[&str] = &["numactl", "prlimit", "cgexec", "runuser", "firejail", "torsocks", "proxychains",
    "proxychains4"];
/// `env` options that split a string into a command.
pub(super) const ENV_SPLIT: &[&str] = &["-S", "--split-string"];
/// `sudo` options that run a shell or an editor.
pub(super) const SUDO_SHELL: &[&str] = &["-s", "--shell", "-i", "--login", "-e", "--edit"];
/// `doas` options that run a shell.
pub(super) const DOAS_SHELL: &[&str] = &["-s"];
/// `sudo`/`doas` options that change the directory or the root.
pub(super) const SUDO_ELSEWHERE: &[&str] = &["-C", "-R", "--chroot", "-D", "--chdir"];
/// `taskset`/`ionice` options that act on a running process: no command.
pub(super) const PROCESS_OPTIONS: &[&str] = &["-p", "--pid", "-P", "--pgid", "-u", "--uid"];
/// `flock` options whose value is shell code.
pub(super) const FLOCK_COMMAND: &[&str] = &["-c", "--command"];
/// Wrapper options whose value is a file written (`time -o`, `strace -o`).
pub(super) const WRAPPER_OUTPUT: &[&str] = &["-o", "--output"];
/// Wrapper options whose value is the directory the command runs in.
pub(super) const WRAPPER_CHDIR: &[&str] = &["-C", "--chdir"];
/// Shells' long options that run a file.
pub(super) const SHELL_RC: &[&str] = &["--rcfile", "--init-file"];
/// Shells' long options that change nothing the analysis reads.
pub(super) const SHELL_LONG_FLAGS: &[&str] = &["--norc", "--noprofile", "--login", "--posix", "--noediting", "--restricted",
    "--verbose", "--help", "--version"];
/// Shells' one-letter options that change nothing the analysis reads (`-c`, `-o`, `-s`
/// and `-n` are read apart).
pub(super) const SHELL_FLAGS: &str = "euxvlirphBETCfabm";
/// `set -o` names that change nothing the analysis reads.
pub(super) const SHELL_SET_OPTIONS: &[&str] = &["pipefail", "errexit", "nounset", "xtrace"];
/// Interpreters' options, by name: (names, options whose value is inline code, options
/// with another value).
pub(super) const INTERPRETERS: &[(&[&str], &[&str], &[&str])] = &[
    (&["python", "python2", "python3", "pypy", "pypy3"], &["-c"], &["-m", "-W", "-X", "-Q"]),
    (&["node", "nodejs", "ts-node", "tsx", "node-ts"], &["-e", "--eval", "-p", "--print"], &["-r", "--require", "--import", "--loader",
        "--input-type", "--experimental-loader", "--env-file", "--conditions", "-C"]),
    (&["perl"], &["-e", "-E"], &["-M", "-m", "-I", "-x", "-d"]),
    (&["ruby"], &["-e"], &["-r", "-I", "-C", "-E", "-F"]),
    (&["php"], &["-r", "-R", "-B", "-E"], &["-f", "-c", "-d", "-z"]),
    (&["lua", "luajit"], &["-e"], &["-l"]),
    (&["deno", "bun"], &["-e", "--eval", "eval", "-p", "--print"], &[]),
    (&["Rscript", "R"], &["-e", "--expr"], &[]),
    (&["julia"], &["-e", "-E", "--eval", "--print"], &[]),
    (&["osascript"], &["-e"], &["-l"]),
    (&["pwsh", "powershell"], &["-c", "-Command", "-command", "-EncodedCommand", "-e"], &[]),
    (&["elixir", "erl", "escript"], &["-e", "-eval"], &[]),
];
/// Interpreters' options that print something about the interpreter and exit, by name:
/// given before any code or script, nothing runs (`python3 --version`, `node -v`).
pub(super) const INTERPRETER_INFO: &[(&[&str], &[&str])] = &[
    (&["python", "python2", "python3", "pypy", "pypy3"], &["--version", "-V", "-VV", "--help", "-h", "-?", "--help-env",
        "--help-xoptions", "--help-all"]),
    (&["node", "nodejs"], &["--version", "-v", "--help", "-h", "--v8-options"]),
    (&["perl"], &["--version", "-v", "-V", "--help", "-h"]),
    (&["ruby"], &["--version", "--help", "-h"]),
    (&["php"], &["--version", "-v", "--help", "-h"]),
];
/// The inline-code options of an interpreter [`INTERPRETERS`] does not name.
pub(super) const INTERPRETER_DEFAULT_INLINE: &[&str] = &["-e", "-c"];
/// Subcommands of `deno` and `bun` that run code given inline or typed.
pub(super) const DENO_INLINE: &[&str] = &["eval", "repl"];
/// Why a program of the always-opaque entry is opaque, by name.
pub(super) const OPAQUE_REASONS: &[(&[&str], &str)] = &[
    (&["watch"], "`watch` runs its arguments as shell code, repeatedly"),
    (&["parallel"], "`parallel` runs its arguments as shell code"),
    (&["at", "batch", "crontab"], "it schedules commands to run later"),
    (&["zsh", "fish", "csh", "tcsh", "xonsh", "nu", "elvish"], "a shell whose language the analysis does not model"),
    (&["vim", "vi", "nvim", "emacs", "nano", "ed", "ex"], "an editor can run commands and write any file"),
    (&["sqlite3"], "sqlite3 dot-commands can run programs and write files"),
];
/// Why another program of the always-opaque entry is.
pub(super) const OPAQUE_REASON_DEFAULT: &str = "it runs commands the analysis cannot see";
/// `make`'s options (GNU make).
pub(super) const MAKE: Spec = Spec { flags: "bBdeiknpqrRsStvwL", values: "CfIjlloOW",
    long: &["always-make", "environment-overrides", "ignore-errors", "keep-going", "just-print", "dry-run", "recon", "print-data-base",
        "question", "no-builtin-rules", "no-builtin-variables", "silent", "quiet", "stop", "touch", "version", "print-directory",
        "no-print-directory", "warn-undefined-variables", "check-symlink-times", "trace", "help"],
    long_values: &["directory", "file", "makefile", "include-dir", "jobs", "load-average", "old-file", "assume-old", "what-if",
        "new-file", "assume-new", "eval", "output-sync", "debug"],
    long_optional: &["jobs", "output-sync", "debug", "shuffle", "jobserver-style"], ..NONE };
/// `make` options whose value is a makefile to evaluate.
pub(super) const MAKE_EVAL: &[&str] = &["-E", "--eval"];
/// `make` options whose value is a makefile read.
pub(super) const MAKE_FILE: &[&str] = &["-f", "--file", "--makefile"];
/// The makefiles `make` reads without `-f`, the first that exists (GNU make).
pub(super) const MAKE_DEFAULT_FILES: &[&str] = &["GNUmakefile", "makefile", "Makefile"];
/// `make` options whose value is the directory it runs in.
pub(super) const MAKE_DIRECTORY: &[&str] = &["-C", "--directory"];
/// `make` options the command is also matched without (`make -C sub test` is `make test`).
pub(super) const MAKE_STRIPPED: &[&str] = &["-C", "--directory", "-f", "--file", "--makefile", "-j", "--jobs", "-s", "--silent", "-k",
    "--keep-going"];
/// Of `make`'s stripped and other options, those with a value (given attached or next).
pub(super) const MAKE_STRIPPED_VALUES: &[&str] = &["-C", "-f", "-j", "-l", "-o", "-W", "-I", "-O"];

/// Example lines for every entry (the line starts with the entry's first name) and for the
/// cases of every special step, each with what the analysis finds, checked by
/// `programs::tests`. The line is read in an empty working directory, with `HOME` set to
/// `/nonexistent/home` and no `PATH`. The expected form is a `; `-separated list of facts,
/// in this order (`nothing` when there is none):
///
/// - `opaque`: some part is code the analysis cannot see (the reason is not compared);
/// - `unsaved`: the command's own part may never be saved;
/// - `run R`: every other `bash` part — a command it runs (`find -exec`, `sh -c`, a
///   wrapper's command), its form without global options (`git -C x log` → `git log`),
///   its words when they differ from the line's text; ` (unsaved)` when it may never be
///   saved;
/// - `read P`, `write P`, `path P`: the files read, written, and the paths it works in
///   (`external_directory`), in the analysis's order, each joined with its directory
///   (`(unknown directory)/…` when that is unknown); ` (tree)` when everything below is
///   touched too.
#[cfg(test)]
pub(crate) const EXAMPLES: &[(&str, &str)] = &[
    ("echo hi > out.txt", "run echo hi; write out.txt"),
    ("cat notes.txt .env", "read notes.txt; read .env"),
    ("cat -n notes.txt", "read notes.txt"),
    ("cat --unknown notes.txt", "read notes.txt"),
    ("head -n 5 notes.txt", "read notes.txt"),
    ("head -5 notes.txt", "read notes.txt"),
    ("tail -f log.txt", "read log.txt"),
    ("wc -l --files0-from=list", "read list; read (unknown directory)/(the files a list names) (tree)"),
    ("md5sum -c sums.txt", "read (unknown directory)/(the files a list names) (tree); read sums.txt"),
    ("sha256sum --check sums.txt", "read (unknown directory)/(the files a list names) (tree); read sums.txt"),
    ("strings @args", "read args; read (unknown directory)/(the files a list names) (tree); read @args"),
    ("file -f list", "read list; read (unknown directory)/(the files a list names) (tree)"),
    ("file --files-from=list -m magic x", "read list; read magic; read (unknown directory)/(the files a list names) (tree); read x"),
    ("xzcat --files0=list", "read list; read (unknown directory)/(the files a list names) (tree)"),
    ("zstdcat --patch-from=ref x.zst", "read ref; read x.zst"),
    ("cut -d , -f 1 data.csv", "read data.csv"),
    ("nl notes.txt", "read notes.txt"),
    ("tac notes.txt", "read notes.txt"),
    ("paste a.txt b.txt", "read a.txt; read b.txt"),
    ("less -o saved.txt notes.txt", "read notes.txt; write saved.txt"),
    ("xxd in.bin out.hex", "read in.bin; write out.hex"),
    ("iconv -f latin1 -t utf8 -o out.txt in.txt", "read in.txt; write out.txt"),
    ("od -c in.bin", "read in.bin"),
    ("sort -o out.txt in.txt", "read in.txt; write out.txt"),
    ("sort --compress-program=gzip in.txt", "opaque; read in.txt"),
    ("sort --weird in.txt", "read in.txt; write (unknown directory)/--weird (tree)"),
    ("uniq in.txt out.txt", "read in.txt; write out.txt"),
    ("grep -r KEY", "read . (tree)"),
    ("grep -f patterns.txt notes.txt", "read patterns.txt; read notes.txt"),
    ("grep -e x -r sub", "read sub (tree)"),
    ("grep x --weird *.rs", "read (unknown directory)/--weird *.rs (tree); read *.rs"),
    ("rg KEY src", "read src (tree)"),
    ("rg KEY", "read . (tree)"),
    ("rg --pre=sh x", "opaque; read . (tree)"),
    ("sed -i s/a/b/ notes.txt", "read notes.txt; write notes.txt"),
    ("sed -n 'w out.txt' notes.txt", "run sed -n w out.txt notes.txt; read notes.txt; write out.txt"),
    ("sed 'e rm x' notes.txt", "opaque; read notes.txt"),
    ("sed -f script.sed notes.txt", "opaque; read script.sed; read notes.txt"),
    ("sed --sandbox '1r secrets/key' notes.txt", "run sed --sandbox 1r secrets/key notes.txt; read notes.txt"),
    ("awk '{print $1}' data.txt", "run awk {print $1} data.txt; read data.txt"),
    ("awk 'BEGIN{system(\"rm x\")}'", "opaque"),
    ("awk -f prog.awk data.txt", "opaque"),
    ("awk -F: '{print}' n=1 data.txt", "run awk -F: {print} n=1 data.txt; read data.txt"),
    ("awk 'NR>1 && $3 >= 2 {print $1 > \"/dev/stderr\"}' data.txt", "run awk NR>1 && $3 >= 2 {print $1 > \"/dev/stderr\"} data.txt; read data.txt"),
    ("awk '{print $1 > \"out\"}' data.txt", "opaque; read data.txt"),
    ("awk '{printf(\"%s\", $1) >> $2}' data.txt", "opaque; read data.txt"),
    ("awk '{print (NR > 1)}' data.txt", "run awk {print (NR > 1)} data.txt; read data.txt"),
    ("awk '{print | \"sort\"}' data.txt", "opaque; read data.txt"),
    ("awk 'BEGIN{ARGV[1]=\"x\"} 1' data.txt", "opaque; read data.txt"),
    ("awk '@load \"x\"' data.txt", "opaque; read data.txt"),
    ("diff -r a b", "read a (tree); read b (tree)"),
    ("diff -o out.txt a b", "read a; read b; write out.txt"),
    ("diff -r -X pats a b", "read pats; read a (tree); read b (tree)"),
    ("ls -la sub", "path sub"),
    ("ls", "nothing"),
    ("du --files0-from=list", "read list; read (unknown directory)/(the files a list names) (tree)"),
    ("du -s -X pats --exclude-from=more .", "read pats; read more; path ."),
    ("rm -rf build", "write build (tree)"),
    ("rm --weird x", "write (unknown directory)/--weird (tree); write x"),
    ("shred -u key", "write key"),
    ("unlink x", "write x"),
    ("mkdir -p a/b", "write a/b"),
    ("tee -a log.txt", "write log.txt"),
    ("truncate -s 0 -r ref.txt log.txt", "read ref.txt; write log.txt"),
    ("touch -r ref.txt new.txt", "read ref.txt; write new.txt"),
    ("chmod +x run.sh", "write run.sh"),
    ("chmod -R 755 dir", "write dir (tree)"),
    ("chmod --reference=ref.txt file", "read ref.txt; write file"),
    ("chown user:group file", "write file"),
    ("chattr +i file", "write +i; write file"),
    ("cp -r src dst", "read src (tree); write dst (tree); write dst/src (tree)"),
    ("cp a.txt b.txt dir", "read a.txt; read b.txt; write dir; write dir/a.txt; write dir/b.txt"),
    ("cp -t dir a.txt", "read a.txt; write dir; write dir/a.txt"),
    ("mv old.txt new.txt", "read old.txt; write old.txt (tree); write new.txt; write new.txt/old.txt"),
    ("ln -s target link", "read target; write link; write link/target"),
    ("ln target", "read target; write .; write ./target"),
    ("install -d dir", "write dir"),
    ("install --strip-program=x a b", "opaque; read a; write b; write b/a"),
    ("dd if=in.img of=out.img bs=1M", "read in.img; write out.img"),
    ("dd --weird", "opaque"),
    ("tar xf archive.tar -C out", "read archive.tar; write out/(archive members) (tree)"),
    // A member may be a link to any file: what the line reads below it is not known.
    ("tar xf a.tar; cat lnk", "run tar xf a.tar; run cat lnk; read a.tar; read lnk; read (unknown directory)/(a link an archive held); write (archive members) (tree)"),
    ("unzip -q a.zip -d out; cat out/lnk", "run unzip -q a.zip -d out; run cat out/lnk; read a.zip; read out; read out/lnk; read (unknown directory)/(a link an archive held); write out/(archive members) (tree)"),
    ("unzip -q a.zip -d out; cat other", "run unzip -q a.zip -d out; run cat other; read a.zip; read out; read other; write out/(archive members) (tree)"),
    ("tar -czf out.tgz src", "read out.tgz; read src (tree); write out.tgz"),
    ("tar cf out.tar --remove-files src", "read out.tar; read src (tree); write out.tar; write src (tree)"),
    ("tar --to-command='rm x' -xf x.tar", "opaque; read x.tar; write (archive members) (tree)"),
    ("tar -xPf x.tar", "read x.tar; write (unknown directory)/(archive members) (tree)"),
    ("tar tf x.tar", "read x.tar"),
    ("tar -T list -cf out.tar", "read out.tar; read list; read (unknown directory)/(the files a list names) (tree); write out.tar"),
    ("tar --weird -xf x.tar", "opaque; read x.tar; write (archive members) (tree)"),
    ("find . -name x -exec rm {} ;", "run find . -name x -exec rm {}; run rm ./{}; write ./{}; path ."),
    ("find src -name '*.tmp' -delete", "run find src -name *.tmp -delete; write src/{} (tree); path src"),
    ("find . -newer ref.txt -fprint out.txt", "read ref.txt; write out.txt; path ."),
    ("find . -fprintf out.txt %p", "write out.txt; path ."),
    ("find -files0-from list -delete", "read list; write (unknown directory)/(the files a list names)/{} (tree); path (unknown directory)/(the files a list names)"),
    ("find -L . -type f", "path ."),
    ("find . -weird", "opaque; path ."),
    ("find \"$X\" -type f", "opaque; path $X"),
    ("xargs rm", "run rm …; run rm (unsaved); write (unknown directory)/… (tree); write (unknown directory)/…"),
    ("xargs -I{} cp {} dir", "run cp {} dir; read (unknown directory)/{}; write (unknown directory)/{} (tree); write dir; write dir/{}"),
    ("xargs -a list echo", "run echo …; run echo (unsaved); read list"),
    ("xargs", "run echo …; run echo (unsaved)"),
    ("git status", "nothing"),
    ("git -C sub --no-pager log", "run git log; path sub"),
    ("git -c color.ui=always status", "run git status"),
    ("git -c core.pager=less log", "opaque"),
    ("git --exec-path=. status", "opaque"),
    ("git --config-env=x=y status", "opaque"),
    ("git --weird status", "opaque"),
    ("git --version", "nothing"),
    ("git log --output=out.txt", "write out.txt"),
    ("git format-patch -o patches HEAD~1", "write patches (tree)"),
    ("git rebase -x 'make test' main", "opaque"),
    ("git fetch --upload-pack=x origin", "opaque"),
    ("git grep -O less x", "opaque"),
    ("git difftool", "opaque"),
    ("git config user.name me", "nothing"),
    ("git config core.pager less", "opaque"),
    ("git config --get core.pager", "nothing"),
    ("git submodule foreach ls", "opaque"),
    ("git bisect run make test", "run make test; read GNUmakefile; read makefile; read Makefile"),
    ("git show HEAD:.env", "read .env"),
    ("git diff -- .env", "read .env"),
    ("git checkout -- src/main.rs", "write src/main.rs"),
    ("git grep KEY src/", "read src/"),
    ("git add .", "read ."),
    ("git add --pathspec-from-file=list", "read list; read (unknown directory)/(the files a list names) (tree)"),
    ("git add --pathspec-from-file -", "read (unknown directory)/(the files a list names) (tree)"),
    ("git commit --pathspec-from-file list -m x", "read list; read (unknown directory)/(the files a list names) (tree)"),
    ("git reset --pathspec-fr=list", "read list; read (unknown directory)/(the files a list names) (tree)"),
    ("git checkout --pathspec-from-file=list main", "read list; read (unknown directory)/(the files a list names) (tree); write (unknown directory)/(the files a list names) (tree)"),
    ("git stash push --pathspec-from-file=list", "read list; read (unknown directory)/(the files a list names) (tree); write (unknown directory)/(the files a list names) (tree)"),
    ("git update-index --add --stdin", "read (unknown directory)/(the files a list names) (tree)"),
    ("git checkout-index --stdin", "read (unknown directory)/(the files a list names) (tree); write (unknown directory)/(the files a list names) (tree)"),
    ("git hash-object -w --stdin-paths", "read (unknown directory)/(the files a list names) (tree)"),
    ("git check-ignore --s", "read (unknown directory)/(the files a list names) (tree)"),
    ("git check-attr --stdin -a", "read (unknown directory)/(the files a list names) (tree)"),
    ("git hash-object -w id_rsa", "read id_rsa"),
    ("git add id_rsa", "read id_rsa"),
    ("git commit -F msg.txt", "read msg.txt"),
    ("git commit --file=msg.txt", "read msg.txt"),
    ("git $SUB", "opaque"),
    ("env -i FOO=1 rm x", "run rm x; write x"),
    ("env -C sub ls", "run ls; path sub"),
    ("env -S 'rm x'", "opaque"),
    ("env 'A-B=1' ls", "opaque"),
    ("env --weird ls", "opaque"),
    ("sudo -u root rm x", "run rm x; write x"),
    ("sudo -s", "opaque"),
    ("sudo -D /tmp ls", "opaque"),
    ("doas -s", "opaque"),
    ("doas -C x ls", "opaque"),
    ("nice -n 5 make", "run make; read GNUmakefile; read makefile; read Makefile"),
    ("nohup ./server", "run ./server"),
    ("timeout -s KILL 5 rm x", "run rm x; write x"),
    ("stdbuf -oL cat x", "run cat x; read x; write L"),
    ("ionice -c 3 rm x", "run rm x; write x"),
    ("ionice -p 1", "nothing"),
    ("setsid rm x", "run rm x; write x"),
    ("time -o t.txt ls", "run -o t.txt ls"),
    ("taskset 1 rm x", "run rm x; write x"),
    ("chrt 1 rm x", "run rm x; write x"),
    ("flock /tmp/lock rm x", "run rm x; write x"),
    ("flock -c 'rm x' /tmp/lock", "run flock -c rm x /tmp/lock; run rm x; write x"),
    ("strace -o trace.txt ls", "run ls; write trace.txt"),
    ("numactl ls", "opaque"),
    ("busybox rm x", "run rm x; write x"),
    ("sh -c 'rm x'", "run sh -c rm x; run rm x; write x"),
    ("sh -c \"$X\"", "opaque"),
    ("sh script.sh", "read script.sh"),
    ("bash -e script.sh arg", "read script.sh"),
    ("sh /dev/stdin", "opaque"),
    ("sh", "opaque"),
    ("sh -s", "opaque"),
    ("sh -n x.sh", "nothing"),
    ("sh --rcfile x -c ls", "opaque"),
    ("sh --norc -c ls", "run ls"),
    ("sh --weird", "opaque"),
    ("sh -o pipefail -c ls", "run ls"),
    ("sh -o posix -c ls", "opaque"),
    ("sh -fc ls", "opaque"),
    ("sh -q", "opaque"),
    ("python -c 'print(1)'", "opaque"),
    ("python script.py", "read script.py"),
    ("python -m http.server", "nothing"),
    ("python -Bc 'code'", "opaque"),
    ("python -i", "opaque"),
    ("python -W ignore x.py", "read x.py"),
    ("python", "opaque"),
    ("python3.12 -c 1", "opaque"),
    ("python3 --version", "nothing"),
    ("python -V", "nothing"),
    ("python3 --version -c 'import os'", "run python3 --version -c import os"),
    ("python3 -c 'import os' --version", "opaque"),
    ("node --version", "nothing"),
    ("node -v", "nothing"),
    ("perl -v", "nothing"),
    ("node -e 1", "opaque"),
    ("node --eval=1", "opaque"),
    ("node -r dotenv app.js", "read app.js"),
    ("perl -pi -e 's/a/b/' f.txt", "run perl -pi -e s/a/b/ f.txt; read f.txt; write f.txt"),
    ("perl -p -i.bak -e 's|a\\|b|$1x$&|gi;' f.txt g", "run perl -p -i.bak -e s|a\\|b|$1x$&|gi; f.txt g; read f.txt; read g; write f.txt; write g"),
    ("perl -ne 's/x$//' f.txt", "run perl -ne s/x$// f.txt; read f.txt"),
    ("perl -pe 's/a/b/e' f.txt", "opaque"),
    ("perl -pe 's/a/$x/' f.txt", "opaque"),
    ("perl -pe 's/a/$12/' f.txt", "opaque"),
    ("perl -pe 's/a/@{[`id`]}/' f.txt", "opaque"),
    ("perl -pe 's/(?{system 1})//' f.txt", "opaque"),
    ("perl -pe 's/$x//' f.txt", "opaque"),
    ("perl -pe 's{a}{b}' f.txt", "opaque"),
    ("perl -pe 's/a/b/;system 1' f.txt", "opaque"),
    ("perl -Mstrict -pe 's/a/b/' f.txt", "opaque"),
    ("perl -ne 'print if /x/' f.txt", "opaque"),
    ("perl -pie 's/a/b/' f.txt", "opaque"),
    ("perl -i.bak x.pl f.txt", "read x.pl; write x.pl; write f.txt"),
    ("ruby -e 1", "opaque"),
    ("php -r 1", "opaque"),
    ("lua -e 1", "opaque"),
    ("deno run main.ts", "nothing"),
    ("deno eval 1", "opaque"),
    ("bun -e 1", "opaque; path /nonexistent/home/.bun"),
    ("Rscript -e 1", "opaque"),
    ("julia -E 1", "opaque"),
    ("osascript -e 1", "opaque"),
    ("pwsh -Command ls", "opaque"),
    ("elixir -e 1", "opaque"),
    ("tclsh -c 1", "opaque"),
    ("python - < x.py", "opaque; read x.py"),
    ("zsh -c ls", "opaque"),
    ("watch ls", "opaque"),
    ("parallel rm ::: x", "opaque"),
    ("at now", "opaque"),
    ("vim x", "opaque"),
    ("sqlite3 db", "opaque"),
    ("su root", "opaque"),
    ("make", "read GNUmakefile; read makefile; read Makefile"),
    ("make -C sub test", "run make test; read sub/GNUmakefile; read sub/makefile; read sub/Makefile; path sub"),
    ("make -f build.mk all", "run make all; read build.mk"),
    ("make -f - all", "opaque"),
    ("make -C sub -f build.mk", "run make; read sub/build.mk; path sub"),
    ("make --eval=x", "opaque; read GNUmakefile; read makefile; read Makefile"),
    ("make -j4 -s test", "run make test; read GNUmakefile; read makefile; read Makefile"),
    ("curl -o out.html https://example.com", "write out.html"),
    ("curl -d @.env example.com", "read .env"),
    ("curl -F file=@data.bin example.com", "read data.bin"),
    ("curl -T up.txt example.com", "read up.txt"),
    ("curl -K config.txt example.com", "opaque; read config.txt"),
    ("curl --output-dir dl -O https://example.com/x", "write dl/(remote name)"),
    ("curl -s example.com", "nothing"),
    ("curl -d \"$X\" example.com", "run curl -d $X example.com; read (unknown directory)/$X"),
    ("curl -ofile.txt example.com", "write file.txt"),
    ("wget https://example.com/x", "write (downloaded files) (tree)"),
    ("wget -O out.html -P dl https://example.com", "write dl/out.html"),
    ("wget -e robots=off https://example.com", "opaque; write (downloaded files) (tree)"),
    ("wget -i urls.txt -o log.txt", "read urls.txt; write log.txt; write (downloaded files) (tree)"),
    ("jq . data.json", "read data.json"),
    ("jq -f prog.jq data.json", "read prog.jq; read data.json"),
    ("jq --rawfile x secret.txt . data.json", "read secret.txt; read data.json"),
    ("jq --arg a b .a in.json", "read in.json"),
    ("jq -n --args . a b", "nothing"),
    ("ssh host ls", "nothing"),
    ("ssh -i key.pem host", "read key.pem"),
    ("ssh -o ProxyCommand=x host", "opaque"),
    ("ssh -o Port=22 host", "nothing"),
    ("ssh -F cfg host", "opaque"),
    ("scp a.txt host:dir", "read a.txt (tree)"),
    ("scp host:a.txt local.txt", "write local.txt (tree)"),
    ("nc -e sh host 80", "opaque"),
    ("npm run build", "path /nonexistent/home/.npm"),
    ("npm --prefix sub run build", "run npm run build; path sub; path /nonexistent/home/.npm"),
    ("npm --version", "nothing"),
    ("pnpm -C sub install", "run pnpm install; path sub; path /nonexistent/home/.local/share/pnpm; path /nonexistent/home/.cache/pnpm"),
    ("yarn --cwd sub build", "run yarn build; path sub; path /nonexistent/home/.cache/yarn; path /nonexistent/home/.yarn"),
    ("cargo +nightly build", "run cargo build; path /nonexistent/home/.cargo; path /nonexistent/home/.rustup"),
    ("cargo --config x build", "opaque; path /nonexistent/home/.cargo; path /nonexistent/home/.rustup"),
    ("cargo -q test", "run cargo test; path /nonexistent/home/.cargo; path /nonexistent/home/.rustup"),
    ("go -C sub build", "run go build; path sub; path /nonexistent/home/go; path /nonexistent/home/.cache/go-build"),
    ("go test -exec ./x ./...", "opaque; path /nonexistent/home/go; path /nonexistent/home/.cache/go-build"),
    ("docker --context prod ps", "run docker ps"),
    ("kubectl -n ns get pods", "run kubectl get pods"),
    ("terraform -chdir=infra plan", "run terraform plan; path infra"),
    ("helm --debug list", "run helm list"),
    ("gh -R o/r pr list", "run gh pr list"),
    ("pip install x", "path /nonexistent/home/.cache/pip"),
    ("uv run x", "path /nonexistent/home/.cache/uv; path /nonexistent/home/.local/share/uv"),
    ("poetry install", "path /nonexistent/home/.cache/pypoetry"),
    ("rustup component add clippy", "path /nonexistent/home/.rustup"),
    ("gzip notes.txt", "read notes.txt; write notes.txt; write notes.txt(.suffix); write notes"),
    ("gunzip notes.txt.gz", "read notes.txt.gz; write notes.txt.gz; write notes.txt.gz(.suffix); write notes.txt"),
    ("unzip x.zip -d out", "read x.zip; read out; write out/(archive members) (tree)"),
    ("unzip x.zip", "read x.zip; write (archive members) (tree)"),
    ("zip out.zip a b", "read a (tree); read b (tree); write out.zip (tree)"),
    ("zip -@ out.zip", "read (unknown directory)/(the files a list names) (tree); write out.zip (tree)"),
    ("find . | zip -r@ x.zip", "run find .; run zip -r@ x.zip; read (unknown directory)/(the files a list names) (tree); write x.zip (tree); path ."),
    ("zip --names-stdin out.zip", "read (unknown directory)/(the files a list names) (tree); write out.zip (tree)"),
    ("zip -r out.zip src -i@list", "read list; read src (tree); write out.zip (tree)"),
    ("zip -r out.zip src --exclude @list", "read list; read src (tree); read @list (tree); write out.zip (tree)"),
    ("zip out.zip a -T -TT 'rm x'", "opaque; read a (tree); write out.zip (tree)"),
    ("zip -m out.zip a", "read a (tree); write out.zip (tree); write a (tree)"),
    ("7z a out.7z @list", "read a; read out.7z; read @list; read list; read (unknown directory)/(the files a list names) (tree); write (archive members) (tree)"),
    ("xz --files=list", "read list; read (unknown directory)/(the files a list names) (tree); write (unknown directory)/(the files a list names) (tree)"),
    ("zstd --filelist list --patch-from=ref", "read list; read ref; read (unknown directory)/(the files a list names) (tree); write (unknown directory)/(the files a list names) (tree)"),
    ("7z x a.7z", "read x; read a.7z; write (archive members) (tree)"),
    ("patch -p1 -i fix.diff", "read fix.diff; write (patched files) (tree); write fix.diff"),
    ("patch file.c fix.diff", "read fix.diff; write (patched files) (tree); write file.c"),
    ("gcc -o app main.c", "read main.c; read (unknown directory)/(the files a compile includes) (tree); write app; write (compiler outputs) (tree)"),
    ("gcc -c main.c", "read main.c; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("cc -include cfg.h -imacros m.h -I inc -iquote q -Iinc2 x.c", "read cfg.h; read m.h; read inc (tree); read q (tree); read inc2 (tree); read x.c; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc @args.rsp", "opaque; read args.rsp; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc -wrapper sh,-c,x x.c", "opaque; read x.c; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc -fplugin=./p.so x.c", "opaque; read x.c; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc -B ./bin x.c", "opaque; read x.c; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc -Wl,--plugin,x.so x.c", "opaque; read x.c; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc --version", "nothing"),
    ("cpp in.c out.i", "read in.c; read (unknown directory)/(the files a compile includes) (tree); write out.i; write (compiler outputs) (tree)"),
    ("as -o x.o x.s", "read x.s; read (unknown directory)/(the files a compile includes) (tree); write x.o; write (compiler outputs) (tree)"),
    ("gcc-12 -c x.c", "read x.c; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("x86_64-linux-gnu-g++ -c x.cc", "read x.cc; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc -o /tmp/out/app x.c", "read x.c; read (unknown directory)/(the files a compile includes) (tree); write /tmp/out/app; write (compiler outputs) (tree); write /tmp/out/(compiler outputs) (tree)"),
    ("gcc -MD -MF deps/x.d -c x.c", "read x.c; read (unknown directory)/(the files a compile includes) (tree); write deps/x.d; write (compiler outputs) (tree)"),
    ("ld -o prog x.o -T link.ld", "read link.ld; read x.o; read (unknown directory)/(the files a compile includes) (tree); write prog; write (compiler outputs) (tree)"),
    ("ld -plugin x.so x.o", "opaque; read x.o; read (unknown directory)/(the files a compile includes) (tree); write (compiler outputs) (tree)"),
    ("gcc -fprofile-generate=/tmp/prof -c x.c", "read /tmp/prof (tree); read x.c; read (unknown directory)/(the files a compile includes) (tree); write /tmp/prof (tree); write (compiler outputs) (tree)"),
];
