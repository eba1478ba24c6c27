//! Every bash builtin, option by option (bash 5.2 manual, "SHELL BUILTIN COMMANDS"): what
//! the analysis makes of it — the commands it runs, the files it reads and writes — or
//! that the line is opaque (it changes how later lines are read, or assigns a variable
//! that changes what runs), or that one part is code the analysis cannot see.

use std::path::Path;

use toolgate_core::Location;
use toolgate_shell_analysis::{Analysis, ShellEnv, plan_with};

/// What a line comes to.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Nothing opaque; these commands are among the parts (and no other opaque thing).
    Runs(&'static [&'static str]),
    /// The whole line is opaque.
    Opaque,
    /// One part stands for any command; the rest is analysed.
    OpaquePart,
}

use Expect::{Opaque, OpaquePart, Runs};

const CASES: &[(&str, Expect)] = &[
    // set: options, then positional parameters.
    ("set -euo pipefail; ls", Runs(&["ls"])),
    ("set -oe pipefail -u; ls", Runs(&["ls"])),
    ("set -e -o pipefail; set +e; set -x; set +o xtrace; ls", Runs(&["ls"])),
    ("set -f; ls *", Runs(&["ls *"])),
    ("set -- a b; set - c; set -o; set +o; set; ls", Runs(&["ls"])),
    ("set -aBbCEhmnpPtTuv; ls", Runs(&["ls"])),
    ("set -k; ls x=1", Opaque),
    ("set +B; ls", Opaque),
    ("set -H; ls", Opaque),
    ("set -o posix; ls", Opaque),
    ("set -o keyword; ls", Opaque),
    ("set -o nosuch; ls", Opaque),
    ("set -Z; ls", Opaque),
    ("set $OPTS; ls", Opaque),
    // shopt.
    ("shopt -s dotglob failglob xpg_echo; ls", Runs(&["ls"])),
    ("shopt -q extglob; shopt -p; shopt; ls", Runs(&["ls"])),
    ("shopt -so pipefail; ls", Runs(&["ls"])),
    ("shopt -s extglob; ls", Opaque),
    ("shopt -s nullglob; ls", Opaque),
    ("shopt -s expand_aliases; ls", Opaque),
    ("shopt -s globstar; ls", Opaque),
    ("shopt -s lastpipe; ls", Opaque),
    ("shopt -u globskipdots; ls", Opaque),
    ("shopt -s -o posix; ls", Opaque),
    ("shopt -s nosuch; ls", Opaque),
    // read.
    ("read -r line < list; ls", Runs(&["ls"])),
    (
        "read -rp 'Name: ' name; read -a arr; read -t 1 -n 2 -N 3 -d , -i x -e -s v; ls",
        Runs(&["ls"]),
    ),
    ("read -u 3 x 3< list; ls", Runs(&["ls"])),
    ("read PATH", Opaque),
    ("read -a PATH", Opaque),
    ("read -ra IFS", Opaque),
    ("read -q x", Opaque),
    ("read \"$v\"", Opaque),
    // mapfile / readarray.
    (
        "mapfile -t lines < list; readarray -d , -n 2 -O 1 -s 1 -u 0 a < list; ls",
        Runs(&["ls"]),
    ),
    ("mapfile -C 'echo row' -c 1 a < list", Runs(&["echo row $1 $2"])),
    ("mapfile PATH < list", Opaque),
    ("mapfile -C \"$cb\" a < list", Opaque),
    // printf.
    ("printf -v out '%s' x; printf -vout x; ls", Runs(&["ls"])),
    ("printf '%s\\n' a", Runs(&["printf %s\\n a"])),
    ("printf -v PATH x", Opaque),
    ("printf -v 'a[0]' x", Opaque),
    ("printf \"$fmt\" x", Opaque),
    // Declarations.
    (
        "declare -a arr=(a b); declare -A m; declare -g x=1; declare -r y=2; declare -l z=A; declare -u w=a; declare -t t; ls",
        Runs(&["ls"]),
    ),
    (
        "declare -x NODE_ENV=test; typeset -p; declare -f; declare -F f; local -; ls",
        Runs(&["ls"]),
    ),
    (
        "export -n FOO; export -p; readonly -p; readonly -a r; ls",
        Runs(&["ls"]),
    ),
    ("declare -n r=x", Opaque),
    ("declare -i n=1", Opaque),
    ("declare -fx f", Opaque),
    ("declare -Z x", Opaque),
    ("export -f f", Opaque),
    ("export -n PATH", Opaque),
    ("export PATH=/tmp", Opaque),
    ("typeset -x LD_PRELOAD=x.so", Opaque),
    ("readonly PATH", Opaque),
    // unset.
    ("unset x; unset -v y; unset -n r; unset -f f; ls", Runs(&["ls"])),
    ("unset PATH", Opaque),
    ("unset 'a[0]'", Opaque),
    // cd, pushd, popd.
    ("cd -P sub && cat x", Runs(&["cat x"])),
    ("cd -L sub; cd -Pe sub; cd -@ sub; ls", Runs(&["ls"])),
    ("pushd -n sub; popd -n; cat x", Runs(&["cat x"])),
    // hash.
    ("hash ls; hash -r; hash -d ls; hash -t ls; hash -l; ls", Runs(&["ls"])),
    ("hash -p /bin/rm ls; ls", Opaque),
    // enable.
    (
        "enable; enable -a; enable -p; enable -s; enable echo; enable -d x; ls",
        Runs(&["ls"]),
    ),
    ("enable -n echo; echo x", Opaque),
    ("enable -f ./x.so x", OpaquePart),
    ("enable nosuch", OpaquePart),
    // history, fc.
    ("history -c; history -s x; history -p x; ls", Runs(&["ls"])),
    ("fc -l; fc -ln 1 2", Runs(&["fc -l", "fc -ln 1 2"])),
    ("fc -s ls", OpaquePart),
    ("fc -e vi", OpaquePart),
    ("fc", OpaquePart),
    // trap: its code is walked after the line.
    ("trap 'rm x' EXIT", Runs(&["rm x"])),
    (
        "trap - EXIT; trap '' INT; trap -p; trap -l; trap INT; ls",
        Runs(&["ls"]),
    ),
    ("trap cleanup EXIT; cleanup() { rm -f out; }", Runs(&["rm -f out"])),
    ("trap \"$x\" EXIT", OpaquePart),
    // Completion, key bindings, aliases.
    (
        "complete -C 'rm x' foo; complete -F f foo; compopt -o nospace foo; complete -p; ls",
        Runs(&["ls"]),
    ),
    (
        "compgen -c; compgen -W 'a b' x",
        Runs(&["compgen -c", "compgen -W a b x"]),
    ),
    ("compgen -C 'rm x' y", OpaquePart),
    // Found by the oracle's closed set: the system's user and group databases.
    ("compgen -u", OpaquePart),
    ("compgen -g x", OpaquePart),
    ("compgen -A user x", OpaquePart),
    ("compgen -A hostname", OpaquePart),
    ("compgen -F f x", OpaquePart),
    ("compgen -W '$(rm x)' y", OpaquePart),
    ("bind -l; bind -m vi -P; ls", Runs(&["ls"])),
    ("bind -x '\"\\C-x\":rm x'", OpaquePart),
    ("alias; alias -p; alias ll; unalias ll; ls", Runs(&["ls"])),
    ("alias ll='ls -l'", Opaque),
    // Jobs.
    (
        "jobs; jobs -l; disown -a; wait; wait -n; wait -p pid -n; ls",
        Runs(&["ls"]),
    ),
    ("jobs -x rm x", Runs(&["rm x"])),
    ("wait -p PATH -n", Opaque),
    // getopts.
    ("getopts 'ab:' opt; getopts ab opt a b; ls", Runs(&["ls"])),
    ("getopts ab PATH", Opaque),
    ("getopts ab 'a[$(rm x)]'", Opaque),
    // let.
    ("let '1 + 2'", Runs(&["let 1 + 2"])),
    ("let x++", Opaque),
    // command, builtin, exec, eval.
    ("command -v ls; command -V ls; command -pv ls", Runs(&[])),
    ("command -p ls", Runs(&["ls"])),
    ("command -x ls", OpaquePart),
    ("builtin echo hi", Runs(&["echo hi"])),
    ("exec -a name ls", Runs(&["ls"])),
    ("exec -cl ls", Runs(&["ls"])),
    ("exec 3< list; ls", Runs(&["ls"])),
    ("exec -z ls", OpaquePart),
    ("eval 'rm x'", Runs(&["rm x"])),
    ("eval \"$x\"", OpaquePart),
    // source and shells with a script file: its commands, read before any program ran.
    ("source ./lib.sh; cat x", Runs(&["echo sourced", "cat x"])),
    (". ./lib.sh", Runs(&["echo sourced"])),
    ("source missing.sh", OpaquePart),
    ("source \"$f\"", OpaquePart),
    ("ls; source ./lib.sh", OpaquePart),
    ("echo x > lib.sh; source ./lib.sh", OpaquePart),
    ("bash ./lib.sh", Runs(&["bash ./lib.sh", "echo sourced"])),
    ("sh missing.sh", Runs(&["sh missing.sh"])),
    ("bash -s < lib.sh", OpaquePart),
    // Printing builtins are commands like any.
    (
        "echo -n hi; printf x; pwd -P; kill -l; ulimit -n; umask 022",
        Runs(&["echo -n hi", "printf x", "pwd -P", "kill -l", "ulimit -n", "umask 022"]),
    ),
    // The rest run nothing.
    (
        "test -f x; [ -d sub ]; type -a ls; type -t ls; caller; times; help cd; dirs -v; ls",
        Runs(&["ls"]),
    ),
    (
        "true; false; :; shift; f() { return 1; }; for x in a; do break; continue; done; ls",
        Runs(&["ls"]),
    ),
    ("test -v x", Opaque),
];

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/x"), "x").unwrap();
    std::fs::write(root.join("list"), "a\nb\n").unwrap();
    std::fs::write(root.join("lib.sh"), "echo sourced\ncd sub\n").unwrap();
    dir
}

fn analysis(root: &Path, line: &str) -> Analysis {
    let location = Location::new(root).unwrap();
    let env = ShellEnv::default()
        .with_home(Some("/nonexistent/home".into()))
        .with_path(Some("/usr/bin:/bin".into()));
    plan_with(&location, line, None, None, &env).unwrap().analysis
}

#[test]
fn every_builtin_and_option_is_modelled() {
    let dir = project();
    let mut wrong = Vec::new();
    for (line, expect) in CASES {
        let analysis = analysis(dir.path(), line);
        let shown: Vec<String> = analysis.parts.iter().map(|part| part.display()).collect();
        let ok = match expect {
            Opaque => analysis.opaque.is_some(),
            OpaquePart => analysis.opaque.is_none() && analysis.parts.iter().any(|part| part.opaque),
            Runs(commands) => {
                analysis.opaque.is_none()
                    && analysis.parts.iter().all(|part| !part.opaque)
                    && commands.iter().all(|command| shown.iter().any(|part| part == command))
            }
        };
        if !ok {
            wrong.push(format!(
                "{line:?}: expected {expect:?}, got {:?} {shown:?}",
                analysis.opaque
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What a sourced file does stays: its `cd` moves the commands after it.
#[test]
fn a_sourced_file_changes_the_state_after_it() {
    let dir = project();
    let analysis = analysis(dir.path(), "source ./lib.sh; cat x");
    let reads: Vec<String> = analysis.reads.iter().map(|read| read.joined()).collect();
    assert!(reads.contains(&"sub/x".to_string()), "{reads:?}");
    assert!(reads.contains(&"./lib.sh".to_string()), "{reads:?}");
}

/// A trap may run in any directory the line was in.
#[test]
fn trap_code_runs_in_every_directory_of_the_line() {
    let dir = project();
    let analysis = analysis(dir.path(), "trap 'cat key' EXIT; cd sub; ls");
    let reads: Vec<String> = analysis.reads.iter().map(|read| read.joined()).collect();
    assert!(reads.contains(&"key".to_string()), "{reads:?}");
    assert!(reads.contains(&"sub/key".to_string()), "{reads:?}");
}

/// The closed set is bash's own: every builtin `compgen -b` lists is one the analysis
/// models (a builtin it did not know would be read as a program of that name).
#[test]
fn the_builtins_are_bashs() {
    let Ok(output) = std::process::Command::new("bash").args(["-c", "compgen -b"]).output() else {
        // toolgate runs bash; a machine without it runs no line to analyse.
        return;
    };
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(listed.split_whitespace().count() > 50, "{listed}");
    let mut missing = Vec::new();
    for name in listed.split_whitespace() {
        let line = format!("{name} --toolgate-probe");
        let analysis = toolgate_shell_analysis::analyze(&line);
        // A program the analysis does not know would be a plain part with its arguments read.
        let as_program = analysis.opaque.is_none()
            && analysis.parts.len() == 1
            && analysis.parts[0].display() == line
            && !analysis.parts[0].opaque;
        let printing = [
            "echo", "printf", "kill", "pwd", "ulimit", "umask", "compgen", "fc", "let",
        ]
        .contains(&name);
        if as_program && !printing {
            missing.push(name.to_string());
        }
    }
    assert!(missing.is_empty(), "builtins read as programs: {missing:?}");
}

/// Writing or reading a history file also reads the shell's own (`$HISTFILE`; found by
/// the strace oracle's closed set of builtins).
#[test]
fn history_files_read_the_shells_own_history_too() {
    let dir = project();
    for line in [
        "history -w out.txt",
        "history -a out.txt",
        "history -r x",
        "history -n x",
    ] {
        let analysis = analysis(dir.path(), line);
        let reads: Vec<String> = analysis.reads.iter().map(|read| read.joined()).collect();
        assert!(reads.iter().any(|read| read.contains("HISTFILE")), "{line}: {reads:?}");
    }
}
