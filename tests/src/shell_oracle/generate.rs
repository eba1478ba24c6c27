//! Command lines from a grammar of fragments, deterministic from a seed.
//!
//! A line is built around a *payload* — something the rules care about: a denied command
//! (`rm`, `curl`, `git push`), a read or write of a denied file (`secrets/*`, `*.env`), a
//! path outside the project, an asked-for command, or an allowed one — which is spelled in
//! one of many ways (quoting, escapes, globs, braces, `~`, `$PWD`, `/dev/fd/..`, git global
//! options) and hidden inside zero to two *carriers*: control flow, subshells, command and
//! process substitutions, heredocs, wrappers (`env`, `command`, `exec`, `nohup`, `timeout`,
//! `xargs`, `find -exec`, `sh -c`, `eval`), functions (also ones shadowing commands),
//! aliases, traps, data that bash evaluates as code (subscripts, `${x@P}`, `${!x}`,
//! namerefs, arithmetic), interpreters (`python3`, `node`, `perl`, `awk`, `sed e`), git
//! aliases and environment. Other families cover lexical tricks (a line holding only
//! `\`, CR, heredoc terminators with blanks), environment prefixes (`PATH=`, `BASH_ENV`,
//! `LD_PRELOAD`, `GIT_*`), `cd` state, and benign lines. Every choice leaves a tag, so a
//! failure says how its line was built.
//!
//! Line `i` of seed `s` depends on `(s, i)` only: `fuzz-shell` failures can be replayed
//! one by one.

/// A small, fast, deterministic generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// One of `items` by weight.
    pub fn weighted<'a, T>(&mut self, items: &'a [(u32, T)]) -> &'a T {
        let total: u64 = items.iter().map(|(weight, _)| u64::from(*weight)).sum();
        let mut roll = self.next_u64() % total.max(1);
        for (weight, item) in items {
            if roll < u64::from(*weight) {
                return item;
            }
            roll -= u64::from(*weight);
        }
        &items[items.len() - 1].1
    }
}

/// A generated line and how it was built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The command line.
    pub line: String,
    /// `family:…`, `payload:…`, `carrier:…`, `spell:…`, `lex:…` tags.
    pub tags: Vec<String>,
}

/// Line `index` of `seed`.
pub fn line(seed: u64, index: u64) -> Generated {
    let mut mixer = Rng::new(seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut generator = Generator {
        rng: Rng::new(mixer.next_u64()),
        tags: Vec::new(),
    };
    let line = generator.line();
    let mut tags = generator.tags;
    tags.dedup();
    Generated { line, tags }
}

/// Lines `0..count` of `seed`.
pub fn lines(seed: u64, count: usize) -> Vec<Generated> {
    (0..count as u64).map(|index| line(seed, index)).collect()
}

/// Single-quotes `text` for the shell (`'` becomes `'\''`).
pub fn sq(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn hex(text: &str) -> String {
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

/// What the rules care about, ready to be placed in a command position.
#[derive(Clone, Debug)]
struct Payload {
    /// The full command text (may hold redirections).
    text: String,
    /// The same as plain words, when it has no redirection (for `find -exec`, `xargs`).
    words: Option<String>,
}

impl Payload {
    /// Words for carriers that run an argument vector without a shell.
    fn words(&self) -> String {
        self.words
            .clone()
            .unwrap_or_else(|| format!("sh -c {}", sq(&self.text)))
    }
}

struct Generator {
    rng: Rng,
    tags: Vec<String>,
}

/// A command before spelling: name, arguments, optional redirection.
struct Cmd {
    name: &'static str,
    args: Vec<&'static str>,
    redirect: Option<&'static str>,
}

fn cmd(name: &'static str, args: &[&'static str]) -> Cmd {
    Cmd {
        name,
        args: args.to_vec(),
        redirect: None,
    }
}

fn redirected(name: &'static str, args: &[&'static str], redirect: &'static str) -> Cmd {
    Cmd {
        name,
        args: args.to_vec(),
        redirect: Some(redirect),
    }
}

const SECRET_PATHS: &[&str] = &["secrets/key", ".env", "a.env", "key-link", "../outside/b.env"];
const OUTSIDE_READS: &[&str] = &[
    "../outside/secret.txt",
    "~/.ssh/id_rsa",
    "$HOME/notes.txt",
    "~/notes.txt",
    "sub/../../outside/secret.txt",
    "\"$PWD\"/../outside/secret.txt",
];
const OUTSIDE_WRITES: &[&str] = &[
    "/tmp/toolgate-oracle-out",
    "~/planted",
    "../outside/planted",
    "$HOME/planted",
    "../planted",
];

impl Generator {
    fn tag(&mut self, tag: impl Into<String>) {
        self.tags.push(tag.into());
    }

    fn line(&mut self) -> String {
        #[derive(Clone, Copy)]
        enum Family {
            Carried,
            DataAsCode,
            Lexical,
            Environment,
            Cd,
            Benign,
            Table,
        }
        let family = *self.rng.weighted(&[
            (46, Family::Carried),
            (12, Family::DataAsCode),
            (10, Family::Lexical),
            (10, Family::Environment),
            (8, Family::Cd),
            (10, Family::Benign),
            (4, Family::Table),
        ]);
        let core = match family {
            Family::Carried => {
                self.tag("family:carried");
                let payload = self.payload();
                let depth = *self.rng.weighted(&[(25, 0), (55, 1), (20, 2)]);
                let mut text = payload;
                for _ in 0..depth {
                    text = self.carrier(&text);
                }
                text.text
            }
            Family::DataAsCode => {
                self.tag("family:data-as-code");
                let payload = self.payload();
                self.data_as_code(&payload)
            }
            Family::Lexical => {
                self.tag("family:lexical");
                let payload = self.payload();
                self.lexical(&payload)
            }
            Family::Environment => {
                self.tag("family:environment");
                self.environment()
            }
            Family::Cd => {
                self.tag("family:cd");
                self.cd()
            }
            Family::Benign => {
                self.tag("family:benign");
                self.benign()
            }
            Family::Table => {
                // Two independent payloads joined: composition across separators.
                self.tag("family:pair");
                let first = self.payload();
                let second = self.payload();
                let sep = self.separator();
                format!("{}{sep}{}", first.text, second.text)
            }
        };
        let mut line = core;
        if self.rng.chance(25) {
            let context = self.allowed_statement();
            let sep = self.separator();
            line = if self.rng.chance(50) {
                format!("{context}{sep}{line}")
            } else {
                format!("{line}{sep}{context}")
            };
        }
        if self.rng.chance(3) {
            self.tag("lex:crlf");
            line = line.replace('\n', "\r\n");
        }
        if self.rng.chance(3) {
            self.tag("lex:leading-continuation");
            line = format!("\\\n{line}");
        }
        line
    }

    fn separator(&mut self) -> String {
        let (tag, sep) = *self.rng.weighted(&[
            (30, ("sep:semicolon", "; ")),
            (20, ("sep:and", " && ")),
            (10, ("sep:or", " || ")),
            (20, ("sep:newline", "\n")),
            (5, ("sep:background", " & ")),
            (5, ("sep:pipe", " | ")),
            (3, ("sep:pipe-amp", " |& ")),
            (4, ("sep:tight", ";")),
            (3, ("sep:semicolon-newline", ";\n")),
        ]);
        self.tag(tag);
        sep.to_string()
    }

    fn allowed_statement(&mut self) -> String {
        self.rng
            .pick(&["echo ok", "ls", "git status", "ls sub", "echo $HOME", "true", "x=1"])
            .to_string()
    }

    // ---------------------------------------------------------------- payloads

    fn payload(&mut self) -> Payload {
        #[derive(Clone, Copy)]
        enum Kind {
            Deny,
            SecretRead,
            SecretWrite,
            Outside,
            Asked,
            Allowed,
        }
        let kind = *self.rng.weighted(&[
            (30, Kind::Deny),
            (20, Kind::SecretRead),
            (10, Kind::SecretWrite),
            (12, Kind::Outside),
            (13, Kind::Asked),
            (15, Kind::Allowed),
        ]);
        let command = match kind {
            Kind::Deny => {
                self.tag("payload:deny");
                let choice = self.rng.below(3);
                match choice {
                    0 => {
                        self.tag("payload:rm");
                        let args = *self.rng.pick(&[
                            &["victim"][..],
                            &["-f", "victim"],
                            &["-rf", "sub"],
                            &["victim", "-f"],
                            &["--", "victim"],
                            &["-r", "-f", "sub"],
                        ]);
                        cmd("rm", args)
                    }
                    1 => {
                        self.tag("payload:curl");
                        let args = *self.rng.pick(&[
                            &["-s", "http://example.com"][..],
                            &["-d", "@.env", "example.com"],
                            &["-T", "notes.txt", "example.com"],
                            &["example.com"],
                        ]);
                        cmd("curl", args)
                    }
                    _ => {
                        self.tag("payload:git-push");
                        let args = *self
                            .rng
                            .pick(&[&["push"][..], &["push", "origin", "main"], &["push", "--force"]]);
                        cmd("git", args)
                    }
                }
            }
            Kind::SecretRead => {
                self.tag("payload:secret-read");
                let path = *self.rng.pick(SECRET_PATHS);
                match self.rng.below(16) {
                    0 => cmd("cat", &[path]),
                    1 => cmd("head", &["-c", "3", path]),
                    2 => cmd("tail", &["-n1", path]),
                    3 => cmd("grep", &["-r", "SECRET", "."]),
                    4 => cmd("grep", &["SECRET", path]),
                    5 => cmd("sed", &["-n", "p", path]),
                    6 => cmd("awk", &["1", path]),
                    7 => cmd("base64", &[path]),
                    8 => cmd("wc", &["-c", path]),
                    9 => cmd("cp", &[path, "copy.txt"]),
                    10 => cmd("sort", &[path]),
                    11 => redirected(":", &[], "< secrets/key"),
                    12 => redirected("read", &["-r", "l"], "< .env"),
                    13 => redirected("mapfile", &["l"], "< a.env"),
                    14 => cmd("source", &[".env"]),
                    _ => cmd("cat", &[path]),
                }
            }
            Kind::SecretWrite => {
                self.tag("payload:secret-write");
                match self.rng.below(12) {
                    0 => redirected("echo", &["x"], "> secrets/key"),
                    1 => redirected("echo", &["x"], ">> .env"),
                    2 => cmd("touch", &["secrets/new"]),
                    3 => cmd("sed", &["-i", "s/A/B/", "a.env"]),
                    4 => cmd("cp", &["notes.txt", "secrets/"]),
                    5 => cmd("mv", &["notes.txt", "b.env"]),
                    6 => redirected("tee", &["-a", "a.env"], "< notes.txt"),
                    7 => cmd("truncate", &["-s0", ".env"]),
                    8 => cmd("chmod", &["600", "secrets/key"]),
                    9 => cmd("dd", &["if=notes.txt", "of=.env"]),
                    10 => redirected("printf", &["x"], "> new.env"),
                    _ => redirected(":", &[], "> .env"),
                }
            }
            Kind::Outside => {
                self.tag("payload:outside");
                let read = *self.rng.pick(OUTSIDE_READS);
                let write = *self.rng.pick(OUTSIDE_WRITES);
                match self.rng.below(6) {
                    0 => cmd("cat", &[read]),
                    1 => Cmd {
                        name: "echo",
                        args: vec!["x"],
                        redirect: Some(match write {
                            "/tmp/toolgate-oracle-out" => "> /tmp/toolgate-oracle-out",
                            "~/planted" => "> ~/planted",
                            "../outside/planted" => "> ../outside/planted",
                            "$HOME/planted" => "> $HOME/planted",
                            _ => "> ../planted",
                        }),
                    },
                    2 => cmd("touch", &[write]),
                    3 => cmd("cp", &["notes.txt", "../outside/"]),
                    4 => cmd("ls", &[*self.rng.pick(&["..", "../outside", "~", "/tmp"])]),
                    _ => cmd("head", &[read]),
                }
            }
            Kind::Asked => {
                self.tag("payload:asked");
                match self.rng.below(14) {
                    0 => cmd("touch", &["newfile"]),
                    1 => cmd("mkdir", &["newdir"]),
                    2 => cmd("cat", &["notes.txt"]),
                    3 => cmd("printf", &["x"]),
                    4 => cmd("true", &[]),
                    5 => cmd("wc", &["-l", "notes.txt"]),
                    6 if self.rng.chance(30) => cmd("python3", &["-c", "pass"]),
                    7 if self.rng.chance(30) => cmd("node", &["-e", "0"]),
                    8 => cmd("find", &[".", "-name", "notes.txt"]),
                    9 => cmd("git", &["log", "-1"]),
                    10 => cmd("git", &["diff"]),
                    11 => cmd("grep", &["KEY", "notes.txt"]),
                    12 => cmd("sort", &["list"]),
                    _ => cmd("date", &[]),
                }
            }
            Kind::Allowed => {
                self.tag("payload:allowed");
                match self.rng.below(7) {
                    0 => cmd("echo", &["hi"]),
                    1 => cmd("ls", &[]),
                    2 => cmd("ls", &["-la", "sub"]),
                    3 => cmd("git", &["status"]),
                    4 => cmd("git", &["status", "--short"]),
                    5 => cmd("echo", &["$HOME"]),
                    _ => cmd("ls", &["notes.txt"]),
                }
            }
        };
        self.render(&command)
    }

    /// Spells a command: its name, its git subcommand, its paths and the blanks between.
    fn render(&mut self, command: &Cmd) -> Payload {
        let mut words = vec![self.spell_name(command.name)];
        let mut args: Vec<String> = command.args.iter().map(|arg| arg.to_string()).collect();
        if command.name == "git" && !args.is_empty() {
            let sub = args.remove(0);
            if self.rng.chance(40) {
                let option = *self.rng.pick(&[
                    "-C .",
                    "-C sub",
                    "--no-pager",
                    "-c x.y=1",
                    "--git-dir=.git",
                    "-P",
                    "--work-tree=.",
                    "-c core.pager=cat",
                    "--literal-pathspecs",
                    "-C . -c a.b=c",
                ]);
                self.tag("spell:git-global-option");
                words.push(option.to_string());
            }
            let sub = self.spell_word(&sub, 35);
            words.push(sub);
        }
        for arg in args {
            let spelled = if is_path(&arg) {
                self.spell_path(&arg)
            } else {
                self.spell_word(&arg, 10)
            };
            words.push(spelled);
        }
        let mut text = String::new();
        for (index, word) in words.iter().enumerate() {
            if index > 0 {
                text.push_str(&self.blank());
            }
            text.push_str(word);
        }
        let plain = text.clone();
        if let Some(redirect) = command.redirect {
            text.push(' ');
            text.push_str(&self.spell_redirect(redirect));
        }
        Payload {
            words: command.redirect.is_none().then_some(plain),
            text,
        }
    }

    fn blank(&mut self) -> String {
        let (tag, blank) = *self.rng.weighted(&[
            (88, ("", " ")),
            (4, ("spell:double-space", "  ")),
            (4, ("spell:tab", "\t")),
            (3, ("spell:continuation", " \\\n")),
            (1, ("spell:cr-blank", " \r ")),
        ]);
        if !tag.is_empty() {
            self.tag(tag);
        }
        blank.to_string()
    }

    fn spell_name(&mut self, name: &str) -> String {
        if !self.rng.chance(35) {
            return name.to_string();
        }
        let (first, rest) = name.split_at(1);
        let choice = self.rng.below(13);
        let (tag, spelled) = match choice {
            0 => ("spell:name-single-quoted", sq(name)),
            1 => ("spell:name-double-quoted", format!("\"{name}\"")),
            2 => ("spell:name-backslash", format!("\\{name}")),
            3 if !rest.is_empty() => ("spell:name-inner-backslash", format!("{first}\\{rest}")),
            4 if !rest.is_empty() => ("spell:name-empty-quotes", format!("{first}''{rest}")),
            5 if !rest.is_empty() => ("spell:name-split-quotes", format!("\"{first}\"{rest}")),
            6 => ("spell:name-ansi-c", format!("$'{name}'")),
            7 => (
                "spell:name-ansi-c-hex",
                format!("$'\\x{:02x}'{rest}", first.as_bytes()[0]),
            ),
            8 => ("spell:name-command-v", format!("\"$(command -v {name})\"")),
            9 => ("spell:name-default", format!("${{U:-{name}}}")),
            10 => ("spell:name-cmdsub", format!("$(echo {name})")),
            11 => ("spell:name-backtick", format!("`echo {name}`")),
            _ => ("spell:name-brace", format!("{{{name},}}")),
        };
        self.tag(tag);
        spelled
    }

    fn spell_word(&mut self, word: &str, percent: u64) -> String {
        if word.contains(['$', '~', '"', '\'', '@', '/']) || !self.rng.chance(percent) {
            return word.to_string();
        }
        let split = word.len() / 2;
        let (a, b) = word.split_at(split.max(1).min(word.len()));
        let (tag, spelled) = match self.rng.below(6) {
            0 => ("spell:word-single-quoted", sq(word)),
            1 => ("spell:word-double-quoted", format!("\"{word}\"")),
            2 if !b.is_empty() => ("spell:word-backslash", format!("{a}\\{b}")),
            3 if !b.is_empty() => ("spell:word-empty-quotes", format!("{a}''{b}")),
            4 => ("spell:word-ansi-c", format!("$'{word}'")),
            _ => ("spell:word-cmdsub", format!("$(echo {word})")),
        };
        self.tag(tag);
        spelled
    }

    fn spell_path(&mut self, path: &str) -> String {
        if !self.rng.chance(45) || path.contains(['$', '"']) {
            return path.to_string();
        }
        let relative = !path.starts_with(['/', '~', '.']) || path.starts_with(".env");
        let choice = self.rng.below(16);
        let (tag, spelled) = match choice {
            0 => ("spell:path-single-quoted", sq(path)),
            1 => ("spell:path-question-glob", glob_one(path)),
            2 => ("spell:path-star-glob", star_glob(path)),
            3 => ("spell:path-brace", format!("{{notes.txt,{path}}}")),
            4 if relative => ("spell:path-dot-slash", format!("./{path}")),
            5 if relative => ("spell:path-dotdot", format!("sub/../{path}")),
            6 if relative => ("spell:path-pwd", format!("\"$PWD\"/{path}")),
            7 if relative => ("spell:path-tilde-plus", format!("~+/{path}")),
            8 => ("spell:path-cmdsub", format!("$(echo {path})")),
            9 => ("spell:path-default", format!("${{P:-{path}}}")),
            10 if relative => ("spell:path-dev-fd", format!("/dev/fd/../cwd/{path}")),
            11 => ("spell:path-double-slash", path.replacen('/', "//", 1)),
            12 => ("spell:path-ansi-c", format!("$'{path}'")),
            13 if relative => ("spell:path-proc-cwd", format!("/proc/self/cwd/{path}")),
            14 => ("spell:path-backslash", backslash_one(path)),
            _ => ("spell:path-split-quotes", split_quotes(path)),
        };
        self.tag(tag);
        spelled
    }

    fn spell_redirect(&mut self, redirect: &str) -> String {
        let Some((operator, target)) = redirect.split_once(' ') else {
            return redirect.to_string();
        };
        let target = self.spell_path(target);
        let operator = match (operator, self.rng.below(8)) {
            (">", 0) => {
                self.tag("spell:redirect-clobber");
                ">|"
            }
            (">", 1) => {
                self.tag("spell:redirect-both");
                "&>"
            }
            (">", 2) => {
                self.tag("spell:redirect-fd");
                "1>"
            }
            ("<", 0) => {
                self.tag("spell:redirect-read-write");
                "<>"
            }
            (operator, _) => operator,
        };
        if self.rng.chance(20) {
            self.tag("spell:redirect-tight");
            format!("{operator}{target}")
        } else {
            format!("{operator} {target}")
        }
    }

    // ---------------------------------------------------------------- carriers

    fn carrier(&mut self, payload: &Payload) -> Payload {
        let p = payload.text.clone();
        let words = payload.words();
        let q = sq(&p);
        let simple_quote_free = !p.contains(['\'', '"', '\\', '`', '$', '\n']);
        let hex = hex(&p);
        // Interpreters cost 20–100 ms a start: drawn a quarter as often as the rest.
        let mut choice = self.rng.below(76);
        if matches!(choice, 67..=71) && !self.rng.chance(25) {
            choice = self.rng.below(67);
        }
        let (tag, text): (&str, String) = match choice {
            0 => ("subshell", format!("( {p} )")),
            1 => ("group", format!("{{ {p}; }}")),
            2 => ("bang", format!("! {p}")),
            3 => ("time", format!("time {p}")),
            4 => ("and", format!("true && {p}")),
            5 => ("or", format!("false || {p}")),
            6 => ("if", format!("if true; then {p}; fi")),
            7 => ("else", format!("if false; then :; else {p}; fi")),
            8 => ("while", format!("while true; do {p}; break; done")),
            9 => ("until", format!("until false; do {p}; break; done")),
            10 => ("for", format!("for i in 1; do {p}; done")),
            11 => ("case", format!("case a in a) {p};; esac")),
            12 => ("background", format!("{p} & wait")),
            13 => ("pipe-to", format!("echo hi | {p}")),
            14 => ("pipe-from", format!("{p} | cat")),
            15 => ("cmdsub", format!("echo $({p})")),
            16 => ("cmdsub-dq", format!("echo \"$({p})\"")),
            17 if !p.contains('`') => ("backtick", format!("echo `{p}`")),
            18 if !p.contains(['`', '\\']) => ("backtick-nested", format!("echo `echo \\`{p}\\``")),
            19 => ("assign", format!("x=$({p})")),
            20 => ("assign-prefix", format!("x=$({p}) true")),
            21 => ("param-default", format!("echo ${{x:-$({p})}}")),
            22 => ("param-assign-default", format!(": ${{x:=$({p})}}")),
            23 => ("param-strip-prefix", format!("x=a; echo ${{x#$({p})}}")),
            24 => ("param-strip-suffix", format!("x=a; echo ${{x%$({p})}}")),
            25 => ("param-case-pattern", format!("x=a; echo ${{x,,$({p})}}")),
            26 => ("param-replace", format!("x=a; echo ${{x/$({p})/y}}")),
            27 => ("procsub-in", format!("cat <({p})")),
            28 => ("procsub-out", format!("echo hi > >({p})")),
            29 => ("herestring", format!("cat <<< \"$({p})\"")),
            30 => ("heredoc", format!("cat <<EOF\n$({p})\nEOF")),
            31 => ("heredoc-quoted-data", format!("cat <<'EOF'\n$({p})\nEOF")),
            32 => ("heredoc-dash", format!("cat <<-EOF\n\t$({p})\n\tEOF")),
            33 => ("heredoc-shell", format!("bash <<'EOF'\n{p}\nEOF")),
            34 => ("herestring-shell", format!("bash <<< {q}")),
            35 => ("pipe-shell", format!("echo {q} | sh")),
            36 => ("bash-c", format!("bash -c {q}")),
            37 => ("sh-c", format!("sh -c {q}")),
            38 if simple_quote_free => ("bash-c-dq", format!("bash -c \"{p}\"")),
            39 => ("eval", format!("eval {q}")),
            40 if simple_quote_free => ("eval-dq", format!("eval \"{p}\"")),
            41 => ("source-procsub", format!("source <(echo {q})")),
            42 => ("dot-stdin", format!(". /dev/stdin <<< {q}")),
            43 => ("env", format!("env {words}")),
            44 => ("env-i", format!("env -i PATH=\"$PATH\" {words}")),
            45 => ("env-u", format!("env -u HOME {words}")),
            46 if payload.words.is_some() && simple_quote_free => ("env-S", format!("env -S {q}")),
            47 => ("command", format!("command {words}")),
            48 => ("builtin-eval", format!("builtin eval {q}")),
            49 => ("exec-subshell", format!("( exec {words} )")),
            50 => ("nohup", format!("nohup {words} > /dev/null")),
            51 => ("timeout", format!("timeout 5 {words}")),
            52 => ("nice", format!("nice {words}")),
            53 => ("xargs", format!("echo victim | xargs {words}")),
            54 => ("xargs-sh", format!("echo | xargs -I{{}} sh -c {q}")),
            55 => ("find-exec", format!("find . -maxdepth 0 -exec {words} \\;")),
            56 => ("find-exec-sh", format!("find . -maxdepth 0 -exec sh -c {q} \\;")),
            57 => ("function", format!("f() {{ {p}; }}; f")),
            58 => ("function-keyword", format!("function f {{ {p}; }}; f")),
            // The shadowing function first removes itself, so a payload that uses the
            // same name reaches the real command instead of recursing forever.
            59 => ("function-shadows-ls", format!("ls() {{ unset -f ls; {p}; }}; ls")),
            60 => (
                "function-shadows-echo",
                format!("echo() {{ unset -f echo; {p}; }}; echo hi"),
            ),
            61 => (
                "function-shadows-git",
                format!("git() {{ unset -f git; {p}; }}; git status"),
            ),
            62 => ("function-not-called", format!("f() {{ {p}; }}")),
            63 => ("alias", format!("shopt -s expand_aliases\nalias ls={q}\nls")),
            64 => ("trap-exit", format!("trap {q} EXIT")),
            65 => ("trap-debug", format!("trap {q} DEBUG; :")),
            66 => ("coproc", format!("coproc {p}; wait")),
            67 => (
                "python",
                format!("python3 -c 'import os; os.system(bytes.fromhex(\"{hex}\").decode())'"),
            ),
            68 if simple_quote_free => (
                "python-heredoc",
                format!("python3 - <<'EOF'\nimport os\nos.system(\"{p}\")\nEOF"),
            ),
            69 => (
                "node",
                format!("node -e 'require(\"child_process\").execSync(Buffer.from(\"{hex}\",\"hex\").toString())'"),
            ),
            70 if simple_quote_free => (
                "node-stdin",
                format!("echo 'require(\"child_process\").execSync(\"{p}\")' | node"),
            ),
            71 => ("perl", format!("perl -e 'system(pack(\"H*\",\"{hex}\"))'")),
            72 if simple_quote_free => ("awk", format!("awk 'BEGIN{{system(\"{p}\")}}'")),
            73 if simple_quote_free => ("sed-e", format!("sed -n '1e {p}' notes.txt")),
            74 => ("git-alias", format!("git -c alias.x={} x", sq(&format!("!{p}")))),
            75 => (
                "git-config-env",
                format!(
                    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0={} git x",
                    sq(&format!("!{p}"))
                ),
            ),
            _ => ("plain", p.clone()),
        };
        self.tag(format!("carrier:{tag}"));
        Payload { text, words: None }
    }

    fn data_as_code(&mut self, payload: &Payload) -> String {
        let p = &payload.text;
        let sub = sq(&format!("a[$({p})]"));
        let (tag, text) = match self.rng.below(18) {
            0 => ("subscript-assign", format!("a[$({p})]=1")),
            1 => ("declare-subscript", format!("declare a[$({p})]=1")),
            2 => ("unset-subscript", format!("unset {sub}")),
            3 => ("unset-subscript-unquoted", format!("a=(); unset a[$({p})]")),
            4 => ("let-indirect", format!("n={sub}; let n")),
            5 => ("arith-expansion-indirect", format!("n={sub}; echo $((n))")),
            6 => ("arith-command-indirect", format!("n={sub}; (( n ))")),
            7 => ("test-eq-indirect", format!("n={sub}; [[ $n -eq 0 ]]")),
            8 => ("declare-i", format!("declare -i i; n={sub}; i=n")),
            9 => (
                "prompt-expansion",
                format!("x={}; echo ${{x@P}}", sq(&format!("$({p})"))),
            ),
            10 => ("indirect-expansion", format!("x={sub}; echo ${{!x}}")),
            11 => ("nameref", format!("declare -n r={sub}; echo $r")),
            12 => ("printf-v", format!("printf -v {sub} x")),
            13 => ("read-subscript", format!("read {sub} < notes.txt")),
            14 => ("export-subscript", format!("export a[$({p})]=1")),
            15 => ("arith-for", format!("for (( i = $({p}) 0; i < 1; i++ )); do :; done")),
            16 => ("array-literal", format!("a=([$({p})]=1)")),
            _ => ("ps4", format!("PS4={}; set -x; :", sq(&format!("$({p})")))),
        };
        self.tag(format!("carrier:{tag}"));
        text
    }

    fn lexical(&mut self, payload: &Payload) -> String {
        let p = &payload.text;
        let (tag, text) = match self.rng.below(14) {
            0 => ("backslash-only-line", format!("echo hi\n\\\n{p}")),
            1 => ("backslash-only-line-after-continuation", format!("echo hi \\\n\\\n{p}")),
            2 => ("cr-before-newline", format!("echo hi\r\n{p}")),
            3 => ("cr-alone", format!("echo hi\r{p}")),
            4 => ("comment-newline", format!("echo hi # note\n{p}")),
            5 => ("comment-cr", format!("echo hi # note\r{p}")),
            6 => (
                "heredoc-terminator-trailing-blank",
                format!("cat <<EOF\nhi\nEOF \n{p}\nEOF"),
            ),
            7 => ("heredoc-opener-trailing-blank", format!("cat <<EOF \nhi\nEOF\n{p}")),
            8 => ("heredoc-dash-tab-terminator", format!("cat <<-EOF\nhi\n\tEOF\n{p}")),
            9 => ("heredoc-terminator-cr", format!("cat <<EOF\nhi\nEOF\r\n{p}\nEOF")),
            10 => (
                "heredoc-quoted-terminator-blank",
                format!("cat <<'EOF '\nhi\nEOF \n{p}"),
            ),
            11 => ("two-heredocs", format!("cat <<A <<B\na\nA\nb\nB\n{p}")),
            12 => ("heredoc-in-cmdsub", format!("echo $(cat <<EOF\nhi\nEOF\n); {p}")),
            _ => ("continuation-then-comment", format!("echo hi \\\n# {p}\n{p}")),
        };
        self.tag(format!("lex:{tag}"));
        text
    }

    fn environment(&mut self) -> String {
        let (tag, text) = *self.rng.pick(&[
            ("path-shadow", "PATH=sub:$PATH ls"),
            ("path-only-sub", "PATH=./sub ls"),
            ("path-export", "export PATH=sub:$PATH; ls"),
            ("bash-env", "BASH_ENV=evil.sh bash -c :"),
            ("bash-env-export", "export BASH_ENV=./evil.sh; bash -c 'echo hi'"),
            ("env-sh-interactive", "ENV=./evil.sh sh -i < /dev/null"),
            ("ld-preload", "LD_PRELOAD=./x.so ls"),
            ("ld-library-path", "LD_LIBRARY_PATH=. ls"),
            ("git-trace-outside", "GIT_TRACE=/tmp/toolgate-oracle-trace git status"),
            ("git-trace-secret", "GIT_TRACE=\"$PWD/secrets/log\" git status"),
            ("git-dir", "GIT_DIR=/tmp git status"),
            (
                "git-external-diff",
                "GIT_EXTERNAL_DIFF=./evil.sh git diff --no-index notes.txt x",
            ),
            (
                "git-fsmonitor-env",
                "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm -f victim; :' git status",
            ),
            ("git-fsmonitor-option", "git -c core.fsmonitor='rm -f victim; :' status"),
            (
                "git-ssh-command",
                "GIT_SSH_COMMAND='rm -f victim; :' git ls-remote ssh://host/repo",
            ),
            ("git-log-output", "git log --output=/tmp/toolgate-oracle-log -1"),
            ("git-log-output-secret", "git log --output=secrets/log -1"),
            (
                "exported-function",
                "env 'BASH_FUNC_ls%%=() { rm -f victim; }' bash -c ls",
            ),
            ("git-exec-path", "git --exec-path=sub status"),
            ("git-config-global", "GIT_CONFIG_GLOBAL=notes.txt git status"),
            ("find-delete", "find secrets -delete"),
            ("find-fprint", "find . -maxdepth 0 -fprint /tmp/toolgate-oracle-find"),
            ("find-fprint-secret", "find . -maxdepth 0 -fprint secrets/list"),
            ("grep-regexp-file", "grep -f secrets/key notes.txt"),
            ("grep-e-then-file", "grep -e x -- .env"),
            ("sed-inplace", "sed -i s/x/y/ .env"),
            ("sed-write", "sed -n 'w secrets/out' notes.txt"),
            (
                "tar-to-command",
                "tar -cf - notes.txt | tar -xf - --to-command='rm -f victim'",
            ),
            ("cp-target", "cp notes.txt .env"),
            ("ln-target", "ln -sf notes.txt secrets/key"),
            ("install-target", "install notes.txt a.env"),
            ("dd-target", "dd if=notes.txt of=secrets/key status=none"),
        ]);
        self.tag(format!("env:{tag}"));
        text.to_string()
    }

    fn cd(&mut self) -> String {
        let read = *self.rng.pick(&["cat key", "head key", "echo x > key", "grep -r S ."]);
        let (tag, template) = *self.rng.pick(&[
            ("cd-and", "cd secrets && READ"),
            ("cd-semicolon", "cd secrets; READ"),
            ("cd-subshell-leak", "(cd secrets); READ"),
            ("cd-inside-subshell", "(cd secrets && READ)"),
            ("cd-if", "if true; then cd secrets; fi; READ"),
            ("cd-or", "cd secrets || true; READ"),
            ("cd-function", "f() { cd secrets; }; f; READ"),
            ("cd-function-not-called", "f() { cd secrets; }; READ"),
            ("pushd", "pushd secrets > /dev/null; READ"),
            ("cd-cmdsub", "cd $(echo secrets); READ"),
            ("cd-double-dash", "cd -- secrets; READ"),
            ("cd-cdpath", "CDPATH=. cd secrets > /dev/null; READ"),
            ("cd-twice", "cd sub; cd ../secrets; READ"),
            ("cd-for", "for d in secrets; do cd $d; done; READ"),
            ("cd-background", "cd secrets & READ"),
            ("cd-var", "d=secrets; cd \"$d\"; READ"),
            ("cd-while", "while cd secrets; do break; done; READ"),
            ("cd-case", "case x in x) cd secrets;; esac; READ"),
            ("cd-up", "cd ..; cat outside/secret.txt"),
            ("cd-home", "cd ~; cat .ssh/id_rsa"),
            ("cd-tmp", "cd /tmp; echo x > toolgate-oracle-out"),
            ("cd-sub-ls", "cd sub && ls"),
            ("cd-sub-then-notes", "(cd sub && ls); cat notes.txt"),
        ]);
        self.tag(format!("cd:{tag}"));
        template.replace("READ", read)
    }

    fn benign(&mut self) -> String {
        let (tag, text) = *self.rng.pick(&[
            ("devnull", "ls > /dev/null 2>&1 < /dev/null"),
            ("write-out", "echo hi > out.txt"),
            ("cat-devnull", "cat /dev/null > out"),
            ("cd-sub-subshell", "(cd sub && ls); cat notes.txt"),
            ("command-v", "command -v rm"),
            ("function", "f() { echo hi; }; f"),
            ("arith", "echo $((1+2))"),
            ("ls-la", "ls -la"),
            ("echo-and-ls", "echo hi && ls"),
            ("var", "x=1; echo $x"),
            ("quoted-rm", "echo 'rm victim'"),
            ("cmdsub-echo", "echo \"$(echo hi)\""),
            ("type", "type rm"),
            ("pipe", "ls sub | head -1"),
            ("git-status", "git status --short"),
            ("comment", "echo ok # ; rm victim"),
            ("for", "for f in a b; do echo $f; done"),
            ("test", "[[ -f notes.txt ]] && echo yes"),
            ("tilde", "echo ~"),
            ("glob", "echo *.txt"),
            ("ls-secrets", "ls secrets"),
            ("brace", "echo {a,b}"),
            ("quoted-heredoc", "cat <<'EOF'\n$(rm victim)\nEOF"),
            ("heredoc-echo", "echo <<EOF\nhi\nEOF"),
            ("read-notes", "cat notes.txt"),
            ("git-log", "git log --oneline -1"),
        ]);
        self.tag(format!("benign:{tag}"));
        text.to_string()
    }
}

fn is_path(arg: &str) -> bool {
    arg.contains('/') || arg.contains(".env") || arg == "victim" || arg == "notes.txt" || arg == "key-link"
}

fn glob_one(path: &str) -> String {
    let bytes: Vec<char> = path.chars().collect();
    let position = bytes.iter().rposition(|c| c.is_ascii_alphanumeric()).unwrap_or(0);
    bytes
        .iter()
        .enumerate()
        .map(|(index, c)| if index == position { '?' } else { *c })
        .collect()
}

fn star_glob(path: &str) -> String {
    match path.split_once('/') {
        Some((dir, rest)) if !dir.starts_with('.') && !dir.is_empty() => format!("{}*/{rest}", &dir[..1]),
        _ => match path.strip_prefix('.') {
            Some(rest) => format!(".{}*", &rest[..1.min(rest.len())]),
            None => format!("{}*", &path[..1]),
        },
    }
}

fn backslash_one(path: &str) -> String {
    let index = path.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0);
    format!("{}\\{}", &path[..index], &path[index..])
}

fn split_quotes(path: &str) -> String {
    let middle = path.len() / 2;
    let (a, b) = path.split_at(middle);
    format!("\"{a}\"{b}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_and_index_give_the_same_line() {
        for index in 0..50 {
            assert_eq!(line(7, index), line(7, index));
        }
        let a: Vec<String> = lines(1, 200).into_iter().map(|g| g.line).collect();
        let b: Vec<String> = lines(2, 200).into_iter().map(|g| g.line).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn the_grammar_reaches_every_family() {
        let tags: std::collections::BTreeSet<String> = lines(12, 3000).into_iter().flat_map(|g| g.tags).collect();
        for family in [
            "family:carried",
            "family:data-as-code",
            "family:lexical",
            "family:environment",
            "family:cd",
            "family:benign",
            "lex:backslash-only-line",
            "carrier:unset-subscript",
            "carrier:function-shadows-ls",
            "spell:git-global-option",
            "spell:path-brace",
        ] {
            assert!(tags.contains(family), "{family} never generated");
        }
        let carriers = tags.iter().filter(|tag| tag.starts_with("carrier:")).count();
        assert!(carriers > 70, "{carriers} carriers");
    }
}
