//! What a command line would execute, and what it touches (permission analysis).
//!
//! The command is parsed with tree-sitter-bash and walked. Every command that would run —
//! in lists, pipelines, subshells, groups, substitutions, control flow, function bodies,
//! unquoted heredocs — becomes one resource; wrappers (`env`, `sudo`, `xargs`,
//! `find -exec`, …) add their wrapped command; `sh -c '…'` and `eval '…'` are parsed in
//! turn. Redirection targets and `tee` files are writes, file operands of reading
//! commands and `< file` are reads. Anything the walker cannot be sure of fails closed: a
//! resource no saved approval can satisfy.

use tree_sitter::{Node, Parser};

use crate::arity::save_pattern;

/// One command the line would execute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The resource asserted for `bash`: the command's text (with its redirections).
    pub resource: String,
    /// The "always" pattern; `None` when no saved approval may satisfy this resource
    /// (the analysis could not see what it runs).
    pub save: Option<String>,
}

/// A path the line refers to, relative to the working directory unless absolute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRef {
    /// The path as the shell would see it (quotes removed); `~` is left for the caller.
    pub path: String,
    /// True when the text could not be known statically (`$VAR`, `$(…)`): `path` is then
    /// the raw text.
    pub dynamic: bool,
}

/// Everything the permission checks need to know about one command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The commands, in order of appearance.
    pub parts: Vec<Part>,
    /// Files read (`cat`, `grep` operands, `< file`, …).
    pub reads: Vec<PathRef>,
    /// Files written (`>`, `>>`, `&>`, `>|`, `tee`).
    pub writes: Vec<PathRef>,
    /// Paths whose directory must be inside the project or approved (`cd` targets,
    /// operands of `rm`, `cp`, `mv`, `mkdir`, `touch`, `chmod`, `chown`, `cat`).
    pub paths: Vec<PathRef>,
    /// Why the analysis failed closed, when it did.
    pub failed: Option<String>,
}

/// Prefixed to the resource of a command line that could not be analysed.
pub const UNPARSED: &str = "(unparsed) ";

/// How deep `sh -c` / `eval` nesting is followed before failing closed.
const MAX_DEPTH: usize = 8;

const WRAPPERS: &[&str] = &[
    "env", "command", "builtin", "exec", "nohup", "nice", "ionice", "timeout", "stdbuf", "time", "sudo", "doas",
    "xargs", "busybox", "coproc", "setsid", "chroot", "strace", "ltrace", "watch",
];
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "mksh"];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "perl",
    "ruby",
    "php",
    "deno",
    "bun",
    "lua",
    "osascript",
];
const READERS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "sed", "awk", "gawk", "base64", "xxd", "od",
    "strings", "cp", "scp", "nl", "tac", "wc", "sort", "uniq", "cut", "diff", "cmp", "hexdump", "jq",
];
const PATH_COMMANDS: &[&str] = &["rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat", "cd"];

/// Options of wrappers that take a separate value (`sudo -u root`).
fn wrapper_option_takes_value(wrapper: &str, option: &str) -> bool {
    let list: &[&str] = match wrapper {
        "env" => &["-u", "--unset", "-C", "--chdir"],
        "exec" => &["-a"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &[
            "-c",
            "--class",
            "-n",
            "--classdata",
            "-p",
            "--pid",
            "-P",
            "--pgid",
            "-u",
            "--uid",
        ],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e", "--input", "--output", "--error"],
        "time" => &["-f", "--format", "-o", "--output"],
        "sudo" => &[
            "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group", "--host", "--prompt",
            "--chdir",
        ],
        "doas" => &["-u", "-C"],
        "xargs" => &[
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "-d",
            "-E",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--replace",
        ],
        "watch" => &["-n", "--interval", "-d"],
        "strace" | "ltrace" => &["-o", "-e", "-p", "-s", "-u"],
        _ => &[],
    };
    list.contains(&option)
}

/// One word of a command: its source span, raw text, and value when known statically.
#[derive(Clone, Debug)]
struct Word {
    start: usize,
    end: usize,
    text: String,
    value: Option<String>,
}

/// Analyses a command line.
///
/// ```
/// let analysis = toolgate_builtins_shell::analyze("git status; FOO=1 rm -rf build > log.txt");
/// let resources: Vec<&str> = analysis.parts.iter().map(|p| p.resource.as_str()).collect();
/// assert_eq!(resources, ["git status", "rm -rf build > log.txt"]);
/// assert_eq!(analysis.parts[1].save.as_deref(), Some("rm *"));
/// assert_eq!(analysis.writes[0].path, "log.txt");
/// ```
pub fn analyze(command: &str) -> Analysis {
    analyze_at(command, 0)
}

fn analyze_at(command: &str, depth: usize) -> Analysis {
    // The marker keeps prefix rules (`ls *`) from matching text the parser could not
    // split: `ls && rm -rf /;;` must be asked for, never allowed as an `ls`.
    let fail = |reason: &str| Analysis {
        parts: vec![Part {
            resource: format!("{UNPARSED}{command}"),
            save: None,
        }],
        failed: Some(reason.to_string()),
        ..Analysis::default()
    };
    if depth > MAX_DEPTH {
        return fail("nested too deeply");
    }
    let mut parser = Parser::new();
    if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        return fail("the bash grammar could not be loaded");
    }
    let Some(tree) = parser.parse(command, None) else {
        return fail("the command could not be parsed");
    };
    let root = tree.root_node();
    if root.has_error() {
        return fail("the command has a syntax error");
    }
    let mut walker = Walker {
        src: command,
        depth,
        out: Analysis::default(),
        cwd: Ok(String::new()),
    };
    walker.walk(root);
    if let Some(reason) = walker.out.failed.clone() {
        return fail(&reason);
    }
    if walker.out.parts.is_empty() && !command.trim().is_empty() && !walker.only_assignments(root) {
        // Nothing that runs was found (a bare `> file`): ask for the whole text rather
        // than let an empty list evaluate to allow.
        let mut out = walker.out;
        out.parts.push(Part {
            resource: command.to_string(),
            save: None,
        });
        return out;
    }
    walker.out
}

struct Walker<'s> {
    src: &'s str,
    depth: usize,
    out: Analysis,
    /// The directory `cd` moved to (relative to the workdir, or absolute): `Ok` when
    /// known, `Err(raw text)` when it depends on the run (`cd "$X"`).
    cwd: Result<String, String>,
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

impl<'s> Walker<'s> {
    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.start_byte()..node.end_byte()).unwrap_or("")
    }

    fn fail(&mut self, reason: String) {
        if self.out.failed.is_none() {
            self.out.failed = Some(reason);
        }
    }

    fn only_assignments(&self, root: Node<'_>) -> bool {
        named_children(root).iter().all(|child| {
            matches!(
                child.kind(),
                "variable_assignment" | "variable_assignments" | "declaration_command" | "unset_command" | "comment"
            )
        })
    }

    fn walk(&mut self, node: Node<'_>) {
        if node.is_error() || node.is_missing() {
            self.fail("the command has a syntax error".into());
            return;
        }
        if !node.is_named() {
            return;
        }
        match node.kind() {
            "command" => self.command(node, None),
            "redirected_statement" => self.redirected(node),
            "function_definition" => {
                if let Some(body) = node.child_by_field_name("body") {
                    self.walk(body);
                }
                for child in named_children(node) {
                    if matches!(child.kind(), "file_redirect" | "herestring_redirect") {
                        self.redirect(child);
                    }
                }
            }
            "variable_assignment" => {
                if let Some(value) = node.child_by_field_name("value") {
                    self.walk(value);
                }
            }
            "file_redirect" | "herestring_redirect" | "heredoc_redirect" => self.redirect(node),
            "program"
            | "list"
            | "pipeline"
            | "subshell"
            | "compound_statement"
            | "do_group"
            | "if_statement"
            | "elif_clause"
            | "else_clause"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "case_item"
            | "negated_command"
            | "test_command"
            | "binary_expression"
            | "unary_expression"
            | "ternary_expression"
            | "parenthesized_expression"
            | "postfix_expression"
            | "string"
            | "concatenation"
            | "expansion"
            | "arithmetic_expansion"
            | "command_substitution"
            | "process_substitution"
            | "array"
            | "variable_assignments"
            | "subscript"
            | "translated_string"
            | "brace_expression"
            | "declaration_command"
            | "command_name"
            | "heredoc_body" => {
                for child in named_children(node) {
                    self.walk(child);
                }
            }
            "word"
            | "number"
            | "raw_string"
            | "ansi_c_string"
            | "string_content"
            | "simple_expansion"
            | "variable_name"
            | "special_variable_name"
            | "comment"
            | "file_descriptor"
            | "test_operator"
            | "heredoc_content"
            | "heredoc_start"
            | "heredoc_end"
            | "regex"
            | "extglob_pattern"
            | "unset_command" => {}
            other => self.fail(format!("unsupported shell construct `{other}`")),
        }
    }

    fn redirected(&mut self, node: Node<'_>) {
        let body = node.child_by_field_name("body");
        match body {
            Some(body) if body.kind() == "command" => self.command(body, Some(node)),
            Some(body) => self.walk(body),
            None => {}
        }
        for child in named_children(node) {
            if Some(child) != body {
                self.walk(child);
            }
        }
    }

    fn redirect(&mut self, node: Node<'_>) {
        match node.kind() {
            "heredoc_redirect" => {
                let quoted = named_children(node)
                    .iter()
                    .find(|child| child.kind() == "heredoc_start")
                    .is_some_and(|start| self.text(*start).contains(['\'', '"', '\\']));
                for child in named_children(node) {
                    match child.kind() {
                        // A quoted delimiter makes the body data: nothing in it runs.
                        "heredoc_body" if quoted => {}
                        "heredoc_start" | "heredoc_end" => {}
                        _ => self.walk(child),
                    }
                }
            }
            "herestring_redirect" => {
                for child in named_children(node) {
                    self.walk(child);
                }
            }
            _ => {
                let operator = (0..node.child_count())
                    .filter_map(|i| node.child(i))
                    .find(|child| !child.is_named())
                    .map(|child| self.text(child))
                    .unwrap_or("");
                let destinations: Vec<Node<'_>> = named_children(node)
                    .into_iter()
                    .filter(|child| child.kind() != "file_descriptor")
                    .collect();
                for destination in &destinations {
                    self.walk(*destination);
                }
                let Some(destination) = destinations.first() else {
                    return;
                };
                let word = self.word(*destination);
                let duplicate = matches!(operator, ">&" | "<&" | ">&-" | "<&-")
                    && word
                        .value
                        .as_deref()
                        .is_some_and(|v| v == "-" || v.chars().all(|c| c.is_ascii_digit()));
                if duplicate {
                    return;
                }
                let path = self.path_ref(&word);
                match operator {
                    "<" => self.out.reads.push(path),
                    ">" | ">>" | "&>" | "&>>" | ">|" | ">&" | "<>" if !is_device(&path.path) => {
                        self.out.writes.push(path);
                    }
                    _ => {}
                }
            }
        }
    }

    /// The static value of a word-like node, if it has one.
    fn value(&self, node: Node<'_>) -> Option<String> {
        match node.kind() {
            "word" | "command_name" if node.named_child_count() == 0 => Some(unescape(self.text(node))),
            "command_name" => node.named_child(0).and_then(|child| self.value(child)),
            "number" => Some(self.text(node).to_string()),
            "raw_string" => {
                let text = self.text(node);
                Some(text.get(1..text.len().saturating_sub(1)).unwrap_or("").to_string())
            }
            "string" => {
                let mut out = String::new();
                for child in named_children(node) {
                    match child.kind() {
                        "string_content" => out.push_str(&unescape_double(self.text(child))),
                        _ => return None,
                    }
                }
                Some(out)
            }
            "concatenation" => {
                let mut out = String::new();
                for child in named_children(node) {
                    out.push_str(&self.value(child)?);
                }
                Some(out)
            }
            _ => None,
        }
    }

    fn word(&self, node: Node<'_>) -> Word {
        Word {
            start: node.start_byte(),
            end: node.end_byte(),
            text: self.text(node).to_string(),
            value: self.value(node),
        }
    }

    fn path_ref(&self, word: &Word) -> PathRef {
        let Some(value) = &word.value else {
            return PathRef {
                path: word.text.clone(),
                dynamic: true,
            };
        };
        if value.starts_with('/') || value.starts_with('~') {
            return PathRef {
                path: value.clone(),
                dynamic: false,
            };
        }
        match &self.cwd {
            Ok(cwd) if cwd.is_empty() => PathRef {
                path: value.clone(),
                dynamic: false,
            },
            Ok(cwd) => PathRef {
                path: format!("{}/{value}", cwd.trim_end_matches('/')),
                dynamic: false,
            },
            // After `cd "$X"` a relative path is only known at run time.
            Err(raw) => PathRef {
                path: format!("{raw}/{value}"),
                dynamic: true,
            },
        }
    }

    fn command(&mut self, node: Node<'_>, redirected: Option<Node<'_>>) {
        let mut words = Vec::new();
        let mut assigned = false;
        for child in named_children(node) {
            match child.kind() {
                "variable_assignment" => {
                    assigned = true;
                    self.walk(child);
                }
                "file_redirect" | "herestring_redirect" => self.redirect(child),
                "subshell" => self.walk(child),
                _ => {
                    self.walk(child);
                    words.push(self.word(child));
                }
            }
        }
        if words.is_empty() {
            return;
        }
        let end = redirected.map_or(node.end_byte(), |r| r.end_byte().max(node.end_byte()));
        let _ = assigned;
        self.simple(&words, end);
    }

    /// Handles one simple command given as its words; `end` is where its text ends.
    fn simple(&mut self, words: &[Word], end: usize) {
        let Some(first) = words.first() else {
            return;
        };
        let raw_text = self.src.get(first.start..end).unwrap_or("").to_string();
        let Some(name) = first.value.clone() else {
            return self.opaque(raw_text);
        };
        if name.is_empty() || name.contains(['*', '?', '[', '{', '}', '$', '`']) || first.text.contains(['*', '?', '['])
        {
            return self.opaque(raw_text);
        }
        let plain = name.rsplit('/').next().unwrap_or(&name).to_string();
        let values: Vec<String> = words
            .iter()
            .map(|w| w.value.clone().unwrap_or_else(|| w.text.clone()))
            .collect();
        if plain == "cd" {
            self.change_directory(words.get(1));
            return;
        }
        let rest = self.src.get(first.end..end).unwrap_or("");
        let normal_text = format!("{plain}{rest}");
        let mut normal_tokens = values.clone();
        normal_tokens[0] = plain.clone();
        let unsaveable = self.runs_unseen_code(&plain, words);
        let save = |tokens: &[String]| (!unsaveable).then(|| save_pattern(tokens));
        self.out.parts.push(Part {
            resource: normal_text.clone(),
            save: save(&normal_tokens),
        });
        if normal_text != raw_text {
            // The spelling as written stays a resource too, so a rule on `/bin/rm` still applies.
            let mut raw_tokens = values.clone();
            raw_tokens[0] = first.text.clone();
            self.out.parts.push(Part {
                resource: raw_text,
                save: save(&raw_tokens),
            });
        }
        self.operands(&plain, words);
        self.nested(&plain, words, end);
    }

    fn opaque(&mut self, resource: String) {
        self.out.parts.push(Part { resource, save: None });
    }

    fn change_directory(&mut self, target: Option<&Word>) {
        match target {
            None => self.cwd = Ok("~".to_string()),
            Some(word) if word.value.as_deref() == Some("-") => self.cwd = Err("$OLDPWD".to_string()),
            Some(word) => {
                let path = self.path_ref(word);
                self.cwd = if path.dynamic {
                    Err(path.path.clone())
                } else {
                    Ok(path.path.clone())
                };
                self.out.paths.push(path);
            }
        }
    }

    /// True when the command runs code the analysis cannot see: a shell reading a script
    /// file or stdin, `source`, an interpreter given code with `-c`/`-e`, `eval` of
    /// something dynamic.
    fn runs_unseen_code(&self, plain: &str, words: &[Word]) -> bool {
        let args = &words[1..];
        let has_flag = |flags: &[char]| {
            args.iter().any(|w| {
                w.value.as_deref().is_some_and(|v| {
                    v.starts_with('-') && !v.starts_with("--") && v[1..].chars().any(|c| flags.contains(&c))
                })
            })
        };
        if SHELLS.contains(&plain) {
            return !(has_flag(&['c']) && shell_script(args).is_some_and(|w| w.value.is_some()));
        }
        match plain {
            "source" | "." => true,
            "eval" => args.iter().any(|w| w.value.is_none()),
            _ if INTERPRETERS.contains(&plain) || plain.starts_with("python3.") => has_flag(&['c', 'e', 'E', 'r']),
            _ => false,
        }
    }

    /// Commands inside this one: wrapped commands, `sh -c` scripts, `eval` strings.
    fn nested(&mut self, plain: &str, words: &[Word], end: usize) {
        let args = &words[1..];
        if SHELLS.contains(&plain) {
            if let Some(script) = shell_script(args).and_then(|w| w.value.clone()) {
                self.parse_nested(&script);
            }
            return;
        }
        if plain == "eval" {
            let values: Option<Vec<String>> = args.iter().map(|w| w.value.clone()).collect();
            if let Some(values) = values {
                self.parse_nested(&values.join(" "));
            }
            return;
        }
        if plain == "find" {
            let mut index = 0;
            while index < args.len() {
                let value = args[index].value.as_deref().unwrap_or("");
                if matches!(value, "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let start = index + 1;
                    let mut stop = start;
                    while stop < args.len() && !matches!(args[stop].value.as_deref(), Some(";" | "+")) {
                        stop += 1;
                    }
                    if stop > start {
                        let wrapped = &args[start..stop];
                        let wrapped_end = wrapped.last().map_or(end, |w| w.end);
                        self.simple(wrapped, wrapped_end);
                    }
                    index = stop;
                }
                index += 1;
            }
            return;
        }
        if WRAPPERS.contains(&plain) {
            if plain == "env" && args.iter().any(|w| matches!(w.value.as_deref(), Some(v) if v == "-S" || v.starts_with("--split-string") || (v.starts_with("-S") && v.len() > 2))) {
                self.opaque(self.src.get(words[0].start..end).unwrap_or("").to_string());
                return;
            }
            if let Some(index) = wrapped_start(plain, args) {
                self.simple(&args[index..], end);
            }
        }
    }

    fn parse_nested(&mut self, script: &str) {
        let inner = analyze_at(script, self.depth + 1);
        if inner.failed.is_some() {
            // The failed inner analysis already holds the marked script as its one part.
            self.out.parts.extend(inner.parts);
            return;
        }
        self.out.parts.extend(inner.parts);
        self.out.reads.extend(inner.reads);
        self.out.writes.extend(inner.writes);
        self.out.paths.extend(inner.paths);
    }

    /// File operands: reads of reading commands, writes of `tee`, paths of file commands.
    fn operands(&mut self, plain: &str, words: &[Word]) {
        let args = &words[1..];
        let operands = non_options(plain, args);
        if PATH_COMMANDS.contains(&plain) {
            let skip = usize::from(matches!(plain, "chmod" | "chown"));
            for word in operands.iter().skip(skip) {
                let path = self.path_ref(word);
                self.out.paths.push(path);
            }
        }
        if plain == "tee" {
            for word in &operands {
                let path = self.path_ref(word);
                if !is_device(&path.path) {
                    self.out.writes.push(path);
                }
            }
        }
        if READERS.contains(&plain) {
            let explicit_program = args.iter().any(|w| {
                matches!(
                    w.value.as_deref(),
                    Some("-e" | "-f" | "--regexp" | "--file" | "--expression")
                )
            });
            // grep/rg/sed/awk take a pattern or program first unless one came with -e/-f.
            let skip = usize::from(
                matches!(plain, "grep" | "egrep" | "fgrep" | "rg" | "sed" | "awk" | "gawk" | "jq") && !explicit_program,
            );
            let mut files: Vec<&Word> = operands.iter().skip(skip).copied().collect();
            if matches!(plain, "cp" | "scp") {
                files.pop();
            }
            for word in files {
                let path = self.path_ref(word);
                if !is_device(&path.path) && path.path != "-" {
                    self.out.reads.push(path);
                }
            }
            if plain == "sed"
                && args.iter().any(|w| {
                    w.value
                        .as_deref()
                        .is_some_and(|v| v.starts_with("-i") || v.starts_with("--in-place"))
                })
            {
                for word in operands.iter().skip(skip) {
                    let path = self.path_ref(word);
                    self.out.writes.push(path);
                }
            }
        }
    }
}

/// Operands that are not options (and not option values we know of).
fn non_options<'w>(plain: &str, args: &'w [Word]) -> Vec<&'w Word> {
    let takes_value: &[&str] = match plain {
        "head" | "tail" => &["-n", "-c", "--lines", "--bytes"],
        "grep" | "egrep" | "fgrep" => &["-e", "-f", "-m", "-A", "-B", "-C", "--regexp", "--file", "--max-count"],
        "rg" => &[
            "-e",
            "-f",
            "-g",
            "-t",
            "-T",
            "-m",
            "-A",
            "-B",
            "-C",
            "--glob",
            "--type",
            "--max-count",
        ],
        "sed" => &["-e", "-f", "--expression", "--file", "-l"],
        "awk" | "gawk" => &["-f", "-v", "-F"],
        "cut" => &["-d", "-f", "-c", "-b"],
        "sort" => &["-k", "-t", "-o", "-S"],
        "od" | "xxd" | "hexdump" => &["-t", "-N", "-j", "-A", "-c", "-l", "-s", "-n"],
        "chown" | "chmod" => &["--reference"],
        "tee" => &[],
        "jq" => &["--arg", "--argjson", "-f"],
        _ => &[],
    };
    let mut out = Vec::new();
    let mut skip_next = false;
    let mut options_done = false;
    for word in args {
        if skip_next {
            skip_next = false;
            continue;
        }
        let value = word.value.as_deref().unwrap_or(&word.text);
        if !options_done && value == "--" {
            options_done = true;
            continue;
        }
        if !options_done && value.starts_with('-') && value.len() > 1 {
            if takes_value.contains(&value) {
                skip_next = true;
            }
            continue;
        }
        out.push(word);
    }
    out
}

/// The script operand of `sh -c SCRIPT` (the first non-option after the flags).
fn shell_script(args: &[Word]) -> Option<&Word> {
    let mut seen_c = false;
    for word in args {
        let value = word.value.as_deref().unwrap_or(&word.text);
        if value.starts_with('-') && !value.starts_with("--") && value.len() > 1 {
            seen_c |= value[1..].contains('c');
            continue;
        }
        if value.starts_with("--") {
            continue;
        }
        return seen_c.then_some(word);
    }
    None
}

/// Where the wrapped command starts among a wrapper's arguments.
fn wrapped_start(wrapper: &str, args: &[Word]) -> Option<usize> {
    let mut index = 0;
    let mut positional_skipped = false;
    while index < args.len() {
        let value = args[index].value.as_deref().unwrap_or(&args[index].text);
        if value == "--" {
            return (index + 1 < args.len()).then_some(index + 1);
        }
        if value.starts_with('-') && value.len() > 1 {
            if wrapper_option_takes_value(wrapper, value) {
                index += 1;
            }
            index += 1;
            continue;
        }
        if wrapper == "env" && value.contains('=') && !value.starts_with('=') {
            index += 1;
            continue;
        }
        // `timeout DURATION cmd`, `chroot DIR cmd`: one positional before the command.
        if matches!(wrapper, "timeout" | "chroot") && !positional_skipped {
            positional_skipped = true;
            index += 1;
            continue;
        }
        return Some(index);
    }
    None
}

fn is_device(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty") || path.starts_with("/dev/fd/")
}

/// An unquoted word's value: backslash escapes removed.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') => {}
                Some(next) => out.push(next),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The value of double-quoted content: only `\"`, `\\`, `\$`, `` \` `` and `\<newline>` are escapes.
fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('"' | '\\' | '$' | '`' | '\n')) {
            if let Some(next) = chars.next()
                && next != '\n'
            {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}
