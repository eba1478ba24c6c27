//! The permission analysis under one sample rule set: ≥ 80 commands covering every
//! construct, with their resources, save patterns and resulting effect (spec §7.3–7.4,
//! §9.9–9.10, peers.md §4).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use toolgate_builtins_shell::analyze;
use toolgate_builtins_shell::arity::{prefix, save_pattern};
use toolgate_permission::config::rules_from_config;
use toolgate_permission::{Effect, Origin, Ruleset};

fn rules() -> Ruleset {
    let config = serde_json::json!({"bash": {"*": "ask", "ls *": "allow", "git status *": "allow", "echo *": "allow", "rm *": "deny"}});
    Ruleset::new(rules_from_config(&config, "permission", Origin::UserConfig, None).unwrap())
}

fn effect(rules: &Ruleset, command: &str) -> Effect {
    let analysis = analyze(command);
    let resources: Vec<&str> = analysis.parts.iter().map(|p| p.resource.as_str()).collect();
    rules.evaluate_all("bash", &resources)
}

use Effect::{Allow, Ask, Deny};

const TABLE: &[(&str, Effect)] = &[
    ("ls", Allow),
    ("ls -la", Allow),
    ("ls 'a;b'", Allow),
    ("echo \"rm x\"", Allow),
    ("echo hi # ; rm x", Allow),
    ("git status", Allow),
    ("git status --short", Allow),
    ("git push", Ask),
    ("rm x", Deny),
    ("rm -rf /", Deny),
    ("git status && rm -rf x", Deny),
    ("git status; rm x", Deny),
    ("git status || rm x", Deny),
    ("ls | sh", Ask),
    ("ls & rm x", Deny),
    ("ls |& rm x", Deny),
    ("ls\nrm x", Deny),
    ("echo \"ls\\nrm x\"", Allow),
    ("(rm x)", Deny),
    ("{ rm x; }", Deny),
    ("echo $(rm x)", Deny),
    ("echo `rm x`", Deny),
    ("echo \"$(rm x)\"", Deny),
    ("cat <(rm x)", Deny),
    ("tee >(sh)", Ask),
    ("cat <<EOF\n$(rm x)\nEOF", Deny),
    ("cat <<'EOF'\n$(rm x)\nEOF", Ask),
    ("env rm x", Deny),
    ("env -i rm x", Deny),
    ("env -u HOME FOO=1 rm x", Deny),
    ("env -S 'rm x'", Ask),
    ("FOO=1 rm x", Deny),
    ("command rm x", Deny),
    ("builtin rm x", Deny),
    ("exec rm x", Deny),
    ("nohup rm x", Deny),
    ("timeout 1 rm x", Deny),
    ("timeout -s KILL 5 rm x", Deny),
    ("nice -n 5 rm x", Deny),
    ("ionice -c 3 rm x", Deny),
    ("stdbuf -oL rm x", Deny),
    ("time rm x", Deny),
    ("sudo rm x", Deny),
    ("sudo -u root rm x", Deny),
    ("doas rm x", Deny),
    ("xargs rm < list", Deny),
    ("xargs -n 1 rm < list", Deny),
    ("find . -exec rm {} \\;", Deny),
    ("find . -name '*.tmp' -execdir rm -f {} +", Deny),
    ("find . -name '*.tmp' -delete", Ask),
    ("bash -c 'rm x'", Deny),
    ("sh -c \"rm x\"", Deny),
    ("zsh -c 'ls; rm y'", Deny),
    ("bash -lc 'rm x'", Deny),
    ("sh -c \"$SCRIPT\"", Ask),
    ("eval 'rm x'", Deny),
    ("eval \"$CMD\"", Ask),
    ("busybox rm x", Deny),
    ("coproc rm x", Deny),
    ("watch rm x", Deny),
    ("python -c 'import os'", Ask),
    ("node -e 'process.exit()'", Ask),
    ("/bin/rm x", Deny),
    ("/usr/bin/rm -rf x", Deny),
    ("./rm x", Deny),
    ("\\rm x", Deny),
    ("'rm' x", Deny),
    ("\"r\"\"m\" x", Deny),
    ("r\\m x", Deny),
    ("$'\\x72m' x", Ask),
    ("rm${IFS}-rf x", Ask),
    ("/???/r? x", Ask),
    ("{rm,-rf,x}", Ask),
    ("$CMD x", Ask),
    ("$(echo rm) x", Ask),
    ("echo x > f", Allow),
    ("cat > f <<EOF\nhi\nEOF", Ask),
    ("> victim.txt", Ask),
    ("ls > /dev/null 2>&1", Allow),
    ("export A=$(git describe --tags); npm run build", Ask),
    ("time -p git status", Ask),
    ("printf ok && git status > output", Ask),
    ("printf ok | cat < input > output", Ask),
    ("if true; then rm x; fi", Deny),
    ("if ls; then echo ok; else rm x; fi", Deny),
    ("while false; do rm x; done", Deny),
    ("until true; do rm x; done", Deny),
    ("for f in a b; do rm $f; done", Deny),
    ("case x in x) rm y;; esac", Deny),
    ("f() { rm x; }; f", Deny),
    ("ls &&", Ask),
    ("echo 'unterminated", Ask),
    (";; x", Ask),
    ("cd /tmp && rm x", Deny),
    ("cd src && ls", Allow),
    ("git status | grep modified", Ask),
    ("echo hi | tee out.txt", Ask),
    ("[[ -f x ]] && rm y", Deny),
    ("! rm x", Deny),
    ("echo $((1+2))", Allow),
    ("a=1; ls", Allow),
    ("sudo env FOO=1 /bin/rm -rf /", Deny),
    ("git -C sub status", Ask),
    ("sh", Ask),
    ("source ./script.sh", Ask),
    (". ./script.sh", Ask),
    ("echo ok; sh -c 'echo nested; rm -rf /'", Deny),
    ("bash -c \"bash -c 'rm x'\"", Deny),
    ("ls $(echo $(rm x))", Deny),
    ("x=$(rm y) ls", Deny),
    ("echo ${X:-$(rm y)}", Deny),
    ("echo ok <<< $(rm x)", Deny),
];

#[test]
fn table_of_commands_under_the_sample_rules() {
    assert!(TABLE.len() >= 80, "{} rows", TABLE.len());
    let rules = rules();
    let mut wrong = Vec::new();
    for (command, expected) in TABLE {
        let got = effect(&rules, command);
        if got != *expected {
            wrong.push(format!(
                "{command:?}: expected {expected}, got {got}: {:?}",
                analyze(command).parts
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_command_with_a_denied_part_is_allowed() {
    let rules = rules();
    for (command, _) in TABLE {
        let analysis = analyze(command);
        let any_denied = analysis
            .parts
            .iter()
            .any(|p| rules.evaluate("bash", &p.resource).effect == Deny);
        if any_denied {
            assert_eq!(effect(&rules, command), Deny, "{command}");
        }
        assert!(
            !analysis.parts.is_empty() || command.trim().is_empty() || command.starts_with("a="),
            "{command}"
        );
    }
}

fn parts(command: &str) -> Vec<(String, Option<String>)> {
    analyze(command)
        .parts
        .into_iter()
        .map(|p| (p.resource, p.save))
        .collect()
}

fn saved(resource: &str, save: &str) -> (String, Option<String>) {
    (resource.to_string(), Some(save.to_string()))
}

fn unsaveable(resource: &str) -> (String, Option<String>) {
    (resource.to_string(), None)
}

#[test]
fn s1_to_s6_resources_and_save_patterns() {
    assert_eq!(
        parts("time -p git status"),
        [
            saved("time -p git status", "time *"),
            saved("git status", "git status *")
        ],
        "S1"
    );
    assert_eq!(
        parts("coproc git status"),
        [
            saved("coproc git status", "coproc *"),
            saved("git status", "git status *")
        ],
        "S2"
    );
    assert_eq!(
        parts("export VERSION=$(git describe --tags); npm run build"),
        [
            saved("git describe --tags", "git describe *"),
            saved("npm run build", "npm run build *")
        ],
        "S3"
    );
    assert_eq!(
        parts("printf ok && git status > output"),
        [saved("printf ok", "printf *"), saved("git status", "git status *")],
        "S4 (the grammar puts the redirect on the whole list, so no command carries it)"
    );
    assert_eq!(
        parts("printf ok | cat < input > output"),
        [saved("printf ok", "printf *"), saved("cat", "cat *")],
        "S5"
    );
    assert_eq!(
        parts("> victim.txt"),
        [unsaveable("> victim.txt")],
        "S6: nothing runs, so the raw text is asked"
    );
    assert_eq!(parts("npm run 123"), [saved("npm run 123", "npm run 123 *")], "S7");
}

#[test]
fn spelled_names_are_matched_by_their_plain_name_too() {
    assert_eq!(
        parts("/bin/rm x"),
        [saved("rm x", "rm *"), saved("/bin/rm x", "/bin/rm *")]
    );
    assert_eq!(parts("\\rm x"), [saved("rm x", "rm *"), saved("\\rm x", "\\rm *")]);
    assert_eq!(parts("FOO=1 BAR=2 ls -la"), [saved("ls -la", "ls *")]);
}

#[test]
fn wrappers_add_their_wrapped_command() {
    assert_eq!(
        parts("sudo -u root nice -n 5 git push"),
        [
            saved("sudo -u root nice -n 5 git push", "sudo *"),
            saved("nice -n 5 git push", "nice *"),
            saved("git push", "git push *"),
        ]
    );
    assert_eq!(parts("find . -exec rm {} \\;")[1], saved("rm {}", "rm *"));
}

#[test]
fn opaque_code_is_never_saveable() {
    for command in [
        "sh -c \"$X\"",
        "eval \"$X\"",
        "python3 -c 'print(1)'",
        "ls | bash",
        "source x.sh",
        "$CMD",
        "ls &&",
    ] {
        let parts = parts(command);
        assert!(parts.iter().any(|(_, save)| save.is_none()), "{command}: {parts:?}");
    }
    assert_eq!(parts("ls && rm -rf / &&"), [unsaveable("(unparsed) ls && rm -rf / &&")]);
}

#[test]
fn reads_writes_and_paths() {
    let analysis =
        analyze("cat .env src/a.rs > out.txt; grep -r KEY config/ 2>/dev/null; sed -n p x.env | tee copy.txt");
    let reads: Vec<&str> = analysis.reads.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(reads, [".env", "src/a.rs", "config/", "x.env"]);
    let writes: Vec<&str> = analysis.writes.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(writes, ["out.txt", "copy.txt"]);
    let analysis = analyze("cd sub && cat .env < input.txt; rm -rf ../other");
    let reads: Vec<&str> = analysis.reads.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(reads, ["sub/.env", "sub/input.txt"]);
    let paths: Vec<&str> = analysis.paths.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["sub", "sub/.env", "sub/../other"]);
    assert!(analyze("echo > $OUT").writes[0].dynamic);
}

#[test]
fn b1_to_b11_arity() {
    let p = |tokens: &[&str]| prefix(tokens).join(" ");
    assert_eq!(p(&["unknown", "command", "subcommand"]), "unknown", "B1");
    assert_eq!(p(&["touch", "foo.txt"]), "touch", "B2");
    assert_eq!(p(&["git", "checkout", "main"]), "git checkout", "B3");
    assert_eq!(p(&["docker", "run", "nginx"]), "docker run", "B4");
    assert_eq!(p(&["aws", "s3", "ls", "my-bucket"]), "aws s3 ls", "B5");
    assert_eq!(p(&["npm", "run", "dev", "script"]), "npm run dev", "B6");
    assert_eq!(p(&["docker", "compose", "up", "service"]), "docker compose up", "B7");
    assert_eq!(p(&["consul", "kv", "get", "config"]), "consul kv get", "B8");
    assert_eq!(p(&["git", "checkout"]), "git checkout", "B9");
    assert_eq!(p(&["npm", "run", "dev"]), "npm run dev", "B9");
    assert_eq!(p(&[]), "", "B10");
    assert_eq!(p(&["single"]), "single", "B10");
    assert_eq!(p(&["git"]), "git", "B10");
    assert_eq!(save_pattern(&["npm", "run", "dev", "--watch"]), "npm run dev *", "B11");
    assert_eq!(p(&["git", "-C", "x", "status"]), "git -C", "flags are not skipped");
}
