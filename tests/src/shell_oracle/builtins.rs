//! Lines for every bash builtin and every option it has (bash 5.2, `help -s NAME`), and
//! for every option of `set -o` and `shopt`: the generator's closed-set part.
//!
//! Random lines reach a builtin's rare options seldom; this table reaches each of them
//! once, in a line built so that the option matters to what runs or is read next (a
//! variable it sets that is then run, a file it reads, code it evaluates, a directory it
//! changes to). A test checks the table against the real bash: every builtin `compgen -b`
//! lists and every option letter its `help -s` synopsis shows has a line here, and so has
//! every name `set -o` and `shopt` list. Lines that would stop or suspend the shell are
//! written so that the builtin is parsed but never reached (`false && suspend -f`).

/// One line: the builtin, the option it exercises (`-x`, `+o`, a `set -o`/`shopt` name,
/// or `""` for the builtin without one), and the line.
pub type BuiltinLine = (&'static str, &'static str, &'static str);

/// One line per builtin and option.
pub const BUILTIN_LINES: &[BuiltinLine] = &[
    (".", "", "printf 'rm victim\\n' > s.sh; . ./s.sh"),
    (".", "", "printf '$1 victim\\n' > s.sh; . ./s.sh rm"),
    (":", "", ": \"$(rm victim)\""),
    (":", "", ": ${c:=$(cat secrets/key)}; echo \"$c\""),
    ("[", "", "[ -e secrets/key ] && rm victim"),
    ("[", "", "[ -v 'a[$(rm victim)]' ]"),
    ("alias", "", "shopt -s expand_aliases\nalias r='rm victim'\nr"),
    ("alias", "-p", "alias r='rm victim'; alias -p"),
    ("bg", "", "sleep 0 & bg %1 2>/dev/null; rm victim"),
    ("bind", "-l", "bind -l >/dev/null 2>&1; ls"),
    ("bind", "-p", "bind -p >/dev/null 2>&1; ls"),
    ("bind", "-s", "bind -s >/dev/null 2>&1; ls"),
    ("bind", "-v", "bind -v >/dev/null 2>&1; ls"),
    ("bind", "-P", "bind -P >/dev/null 2>&1; ls"),
    ("bind", "-S", "bind -S >/dev/null 2>&1; ls"),
    ("bind", "-V", "bind -V >/dev/null 2>&1; ls"),
    ("bind", "-X", "bind -X >/dev/null 2>&1; ls"),
    ("bind", "-m", "bind -m emacs -l >/dev/null 2>&1; ls"),
    ("bind", "-f", "bind -f secrets/key 2>/dev/null; ls"),
    ("bind", "-q", "bind -q abort 2>/dev/null; ls"),
    ("bind", "-u", "bind -u abort 2>/dev/null; ls"),
    ("bind", "-r", "bind -r '\\C-x' 2>/dev/null; ls"),
    ("bind", "-x", "bind -x '\"\\C-x\": rm victim' 2>/dev/null; ls"),
    ("break", "", "for i in 1 2; do break 1; done; rm victim"),
    ("builtin", "", "builtin eval 'rm victim'"),
    ("builtin", "", "builtin command rm victim"),
    ("caller", "", "f() { caller 0; rm victim; }; f"),
    ("cd", "-L", "cd -L sub && cat ../secrets/key"),
    ("cd", "-P", "ln -s sub s2; cd -P s2 && cat ../secrets/key"),
    ("cd", "-e", "cd -P -e sub && ls"),
    ("cd", "-@", "cd -@ notes.txt 2>/dev/null; ls"),
    ("command", "", "command rm victim"),
    ("command", "-p", "command -p rm victim"),
    ("command", "-v", "\"$(command -v rm)\" victim"),
    ("command", "-V", "command -V rm; rm victim"),
    ("compgen", "-a", "compgen -a; ls"),
    ("compgen", "-b", "compgen -b >/dev/null; ls"),
    ("compgen", "-c", "$(compgen -c rm | head -n1) victim"),
    ("compgen", "-d", "cd \"$(compgen -d su)\" && cat ../secrets/key"),
    ("compgen", "-e", "compgen -e >/dev/null; ls"),
    ("compgen", "-f", "cat \"$(compgen -f secrets/)\""),
    ("compgen", "-g", "compgen -g >/dev/null; ls"),
    ("compgen", "-j", "compgen -j; ls"),
    ("compgen", "-k", "compgen -k >/dev/null; ls"),
    ("compgen", "-s", "compgen -s >/dev/null; ls"),
    ("compgen", "-u", "compgen -u >/dev/null; ls"),
    ("compgen", "-v", "compgen -v >/dev/null; ls"),
    ("compgen", "-o", "compgen -o default secrets/ >/dev/null; ls"),
    ("compgen", "-A", "cat $(compgen -A file secrets/)"),
    ("compgen", "-G", "cat $(compgen -G 'secrets/*')"),
    ("compgen", "-W", "compgen -W '$(rm victim)' x"),
    ("compgen", "-F", "f() { rm victim; }; compgen -F f x 2>/dev/null"),
    ("compgen", "-C", "compgen -C 'rm victim' x"),
    ("compgen", "-X", "cat $(compgen -f -X '!*key' secrets/)"),
    ("compgen", "-P", "$(compgen -P r -W m) victim"),
    ("compgen", "-S", "$(compgen -S m -W r) victim"),
    ("complete", "-a", "complete -a x; ls"),
    ("complete", "-b", "complete -b x; ls"),
    ("complete", "-c", "complete -c x; ls"),
    ("complete", "-d", "complete -d x; ls"),
    ("complete", "-e", "complete -e x; ls"),
    ("complete", "-f", "complete -f x; ls"),
    ("complete", "-g", "complete -g x; ls"),
    ("complete", "-j", "complete -j x; ls"),
    ("complete", "-k", "complete -k x; ls"),
    ("complete", "-s", "complete -s x; ls"),
    ("complete", "-u", "complete -u x; ls"),
    ("complete", "-v", "complete -v x; ls"),
    ("complete", "-p", "complete -C 'rm victim' x; complete -p"),
    ("complete", "-r", "complete -r x 2>/dev/null; ls"),
    ("complete", "-D", "complete -D -C 'rm victim'; ls"),
    ("complete", "-E", "complete -E -C 'rm victim'; ls"),
    ("complete", "-I", "complete -I -C 'rm victim'; ls"),
    ("complete", "-o", "complete -o nospace x; ls"),
    ("complete", "-A", "complete -A file x; ls"),
    ("complete", "-G", "complete -G 'secrets/*' x; ls"),
    ("complete", "-W", "complete -W '$(rm victim)' x; ls"),
    ("complete", "-F", "f() { rm victim; }; complete -F f x; ls"),
    ("complete", "-C", "complete -C 'rm victim' ls; ls"),
    ("complete", "-X", "complete -X '*.env' x; ls"),
    ("complete", "-P", "complete -P r x; ls"),
    ("complete", "-S", "complete -S m x; ls"),
    ("compopt", "-o", "compopt -o nospace x 2>/dev/null; ls"),
    ("compopt", "+o", "compopt +o nospace x 2>/dev/null; ls"),
    ("compopt", "-D", "compopt -D -o default 2>/dev/null; ls"),
    ("compopt", "-E", "compopt -E -o default 2>/dev/null; ls"),
    ("compopt", "-I", "compopt -I -o default 2>/dev/null; ls"),
    ("continue", "", "for i in 1 2; do continue 1; done; rm victim"),
    ("declare", "", "declare c=rm; $c victim"),
    ("declare", "-a", "declare -a a=(rm victim); \"${a[@]}\""),
    ("declare", "-A", "declare -A m=([k]=rm); ${m[k]} victim"),
    (
        "declare",
        "-f",
        "f() { rm victim; }; declare -f f > s.sh; unset -f f; . ./s.sh; f",
    ),
    ("declare", "-F", "f() { rm victim; }; declare -F f && f"),
    ("declare", "-g", "f() { declare -g c=rm; }; f; $c victim"),
    ("declare", "-i", "declare -i n='a[$(rm victim)]' 2>/dev/null"),
    ("declare", "-I", "c=rm; f() { declare -I c; $c victim; }; f"),
    ("declare", "-l", "declare -l c=RM; $c victim"),
    ("declare", "-n", "declare -n r=c; r=rm; $c victim"),
    ("declare", "-r", "declare -r c=rm; $c victim"),
    (
        "declare",
        "-t",
        "set -T; f() { :; }; declare -t f; trap 'rm victim' DEBUG; f",
    ),
    ("declare", "-u", "declare -u c=rm; ${c,,} victim"),
    ("declare", "-x", "declare -x c=rm; bash -c '$c victim'"),
    ("declare", "-p", "c=rm; eval \"$(declare -p c)\"; $c victim"),
    (
        "dirs",
        "",
        "pushd sub >/dev/null; cd \"$(dirs -l +0)\" && cat ../secrets/key",
    ),
    ("dirs", "-c", "pushd sub >/dev/null; dirs -c; ls"),
    ("dirs", "-l", "pushd ~ >/dev/null; cat \"$(dirs -l +0)/notes.txt\""),
    ("dirs", "-p", "pushd sub >/dev/null; dirs -p; ls"),
    ("dirs", "-v", "pushd sub >/dev/null; dirs -v; ls"),
    ("dirs", "+N", "pushd sub >/dev/null; cd \"$(dirs -l +1)\" && rm victim"),
    (
        "dirs",
        "-N",
        "pushd sub >/dev/null; cd \"$(dirs -l -0)\" && cat ../secrets/key",
    ),
    ("disown", "", "sleep 0 & disown; rm victim"),
    ("disown", "-h", "sleep 0 & disown -h; rm victim"),
    ("disown", "-a", "sleep 0 & disown -a; rm victim"),
    ("disown", "-r", "sleep 0 & disown -r; rm victim"),
    ("echo", "", "$(echo rm) victim"),
    ("echo", "-n", "$(echo -n rm) victim"),
    ("echo", "-e", "$(echo -e 'r\\x6d') victim"),
    ("echo", "-E", "$(echo -E rm) victim"),
    ("enable", "", "enable echo; echo hi"),
    ("enable", "-a", "enable -a >/dev/null; ls"),
    ("enable", "-d", "enable -d x 2>/dev/null; ls"),
    ("enable", "-n", "enable -n echo; echo hi"),
    ("enable", "-p", "enable -p >/dev/null; ls"),
    ("enable", "-s", "enable -s >/dev/null; ls"),
    ("enable", "-f", "enable -f ./x.so x 2>/dev/null; ls"),
    ("eval", "", "eval 'rm victim'"),
    ("exec", "", "exec rm victim"),
    ("exec", "-c", "exec -c rm victim"),
    ("exec", "-l", "exec -l rm victim"),
    ("exec", "-a", "exec -a innocent rm victim"),
    ("exit", "", "trap 'rm victim' EXIT; exit 3"),
    ("export", "", "export c=rm; bash -c '$c victim'"),
    ("export", "-f", "f() { rm victim; }; export -f f; bash -c f"),
    ("export", "-n", "export c=rm; export -n c; bash -c '$c victim'"),
    (
        "export",
        "-p",
        "export c=rm; export -p > s.sh; bash -c '. ./s.sh; $c victim'",
    ),
    ("false", "", "false || rm victim"),
    ("fc", "-e", "fc -e rm 2>/dev/null; ls"),
    ("fc", "-l", "fc -l 2>/dev/null; ls"),
    ("fc", "-n", "fc -l -n 2>/dev/null; ls"),
    ("fc", "-r", "fc -l -r 2>/dev/null; ls"),
    ("fc", "-s", "fc -s 2>/dev/null; ls"),
    ("fg", "", "sleep 0 & fg %1 2>/dev/null; rm victim"),
    ("getopts", "", "getopts a: c -a rm; $OPTARG victim"),
    ("getopts", "", "getopts a: 'a[$(rm victim)]' -a x 2>/dev/null"),
    ("hash", "", "hash rm; rm victim"),
    ("hash", "-l", "hash rm; hash -l; ls"),
    ("hash", "-r", "hash -r; rm victim"),
    ("hash", "-p", "hash -p /usr/bin/rm ls; ls victim"),
    ("hash", "-d", "hash rm; hash -d rm; rm victim"),
    ("hash", "-t", "hash rm; \"$(hash -t rm)\" victim"),
    ("help", "", "help cd >/dev/null; ls"),
    ("help", "-d", "help -d cd; ls"),
    ("help", "-m", "help -m cd >/dev/null; ls"),
    ("help", "-s", "help -s cd; ls"),
    ("history", "", "history; ls"),
    ("history", "-c", "history -c; ls"),
    ("history", "-d", "history -d 1 2>/dev/null; ls"),
    ("history", "-a", "set -o history; history -a out.txt; ls"),
    ("history", "-n", "set -o history; history -n secrets/key; history"),
    ("history", "-r", "set -o history; history -r secrets/key; history"),
    ("history", "-w", "set -o history; history -w out.txt; ls"),
    ("history", "-p", "history -p '!!' 2>/dev/null; ls"),
    (
        "history",
        "-s",
        "set -o history; history -s rm victim; fc -s 2>/dev/null",
    ),
    ("jobs", "", "sleep 0 & jobs; wait; rm victim"),
    ("jobs", "-l", "sleep 0 & jobs -l; wait; ls"),
    ("jobs", "-n", "sleep 0 & jobs -n; wait; ls"),
    ("jobs", "-p", "sleep 0 & jobs -p; wait; ls"),
    ("jobs", "-r", "sleep 0 & jobs -r; wait; ls"),
    ("jobs", "-s", "sleep 0 & jobs -s; wait; ls"),
    ("jobs", "-x", "jobs -x rm victim"),
    ("kill", "", "kill -0 $$ && rm victim"),
    ("kill", "-s", "kill -s 0 $$ && rm victim"),
    ("kill", "-n", "kill -n 0 $$ && rm victim"),
    ("kill", "-l", "kill -l >/dev/null; rm victim"),
    ("kill", "-sigspec", "trap 'rm victim' USR1; kill -USR1 $$"),
    ("let", "", "let 'a[$(rm victim)]=1' 2>/dev/null"),
    ("let", "", "c='a[$(rm victim)]'; let c+=1 2>/dev/null"),
    ("local", "", "f() { local c=rm; $c victim; }; f"),
    ("local", "", "f() { local -n r=c; r=rm; }; f; $c victim"),
    ("logout", "", "false && logout; rm victim"),
    ("mapfile", "", "mapfile a <<< rm; ${a[0]} victim"),
    ("mapfile", "-d", "mapfile -d ' ' -t a <<< 'rm victim'; ${a[@]}"),
    ("mapfile", "-n", "mapfile -n 1 a < secrets/key; echo \"${a[0]}\""),
    ("mapfile", "-O", "mapfile -O 1 -t a <<< rm; ${a[1]} victim"),
    ("mapfile", "-s", "mapfile -s 1 -t a <<< $'x\\nrm'; ${a[0]} victim"),
    ("mapfile", "-t", "mapfile -t a <<< rm; ${a[0]} victim"),
    ("mapfile", "-u", "mapfile -u 3 a 3< secrets/key; echo \"${a[0]}\""),
    ("mapfile", "-C", "mapfile -C 'rm victim #' -c 1 a <<< x"),
    ("mapfile", "-c", "mapfile -c 1 -C 'eval rm victim #' a <<< x"),
    ("popd", "", "pushd sub >/dev/null; popd >/dev/null; rm victim"),
    (
        "popd",
        "-n",
        "pushd sub >/dev/null; popd -n >/dev/null; cat ../secrets/key",
    ),
    (
        "popd",
        "+N",
        "pushd sub >/dev/null; pushd .. >/dev/null; popd +1 >/dev/null; rm victim",
    ),
    (
        "popd",
        "-N",
        "pushd sub >/dev/null; popd -0 >/dev/null; cat ../secrets/key",
    ),
    ("printf", "", "$(printf rm) victim"),
    ("printf", "-v", "printf -v c rm; $c victim"),
    ("printf", "-v", "printf -v 'a[$(rm victim)]' x"),
    ("pushd", "", "pushd sub >/dev/null && cat ../secrets/key"),
    ("pushd", "-n", "pushd -n sub >/dev/null; rm victim"),
    ("pushd", "+N", "pushd sub >/dev/null; pushd +1 >/dev/null; rm victim"),
    (
        "pushd",
        "-N",
        "pushd sub >/dev/null; pushd -0 >/dev/null; cat ../secrets/key",
    ),
    ("pwd", "", "cd sub; cat \"$(pwd)/../secrets/key\""),
    ("pwd", "-L", "ln -s sub s2; cd s2; cat \"$(pwd -L)/../secrets/key\""),
    ("pwd", "-P", "ln -s sub s2; cd s2; cat \"$(pwd -P)/../secrets/key\""),
    ("read", "", "read c <<< rm; $c victim"),
    ("read", "-e", "read -e c <<< rm; $c victim"),
    ("read", "-r", "read -r c <<< rm; $c victim"),
    ("read", "-s", "read -s c <<< rm; $c victim"),
    ("read", "-a", "read -a a <<< 'rm victim'; \"${a[@]}\""),
    ("read", "-d", "read -d ' ' c <<< 'rm victim'; $c victim"),
    ("read", "-i", "read -i rm c < /dev/null; $c victim"),
    ("read", "-n", "read -n 2 c <<< rmx; $c victim"),
    ("read", "-N", "read -N 2 c <<< rm; $c victim"),
    ("read", "-p", "read -p prompt c <<< rm; $c victim"),
    ("read", "-t", "read -t 1 c <<< rm; $c victim"),
    ("read", "-u", "read -u 3 c 3< secrets/key; echo \"$c\""),
    ("read", "", "read 'a[$(rm victim)]' <<< x"),
    ("readarray", "", "readarray -t a <<< rm; ${a[0]} victim"),
    ("readarray", "-d", "readarray -d ' ' -t a <<< 'rm victim'; ${a[@]}"),
    ("readarray", "-n", "readarray -n 1 a < secrets/key; echo \"${a[0]}\""),
    ("readarray", "-O", "readarray -O 1 -t a <<< rm; ${a[1]} victim"),
    ("readarray", "-s", "readarray -s 1 -t a <<< $'x\\nrm'; ${a[0]} victim"),
    ("readarray", "-t", "readarray -t a <<< rm; ${a[0]} victim"),
    ("readarray", "-u", "readarray -u 3 a 3< secrets/key; echo \"${a[0]}\""),
    ("readarray", "-C", "readarray -C 'rm victim #' -c 1 a <<< x"),
    ("readarray", "-c", "readarray -c 1 -C 'eval rm victim #' a <<< x"),
    ("readonly", "", "readonly c=rm; $c victim"),
    ("readonly", "-a", "readonly -a a=(rm victim); \"${a[@]}\""),
    ("readonly", "-A", "readonly -A m=([k]=rm); ${m[k]} victim"),
    ("readonly", "-f", "f() { rm victim; }; readonly -f f; f"),
    (
        "readonly",
        "-p",
        "readonly c=rm; eval \"$(readonly -p | grep ' c=')\" 2>/dev/null; $c victim",
    ),
    ("return", "", "f() { return 1; }; f || rm victim"),
    ("set", "", "set -- rm victim; \"$@\""),
    ("set", "-a", "set -a; c=rm; bash -c '$c victim'"),
    ("set", "-b", "set -b; rm victim"),
    ("set", "-e", "set -e; false; rm victim"),
    ("set", "-f", "set -f; cat secrets/*"),
    ("set", "-h", "set -h; rm victim"),
    ("set", "-k", "set -k; bash -c '$c victim' c=rm"),
    ("set", "-m", "set -m; rm victim"),
    ("set", "-n", "set -n; rm victim"),
    ("set", "-p", "set -p; rm victim"),
    ("set", "-t", "set -t; ls; rm victim"),
    ("set", "-u", "set -u; rm victim"),
    ("set", "-v", "set -v; rm victim"),
    ("set", "-x", "set -x; rm victim"),
    ("set", "-B", "set +B; cat secrets/{key,x}"),
    ("set", "-C", "set -C; echo x > out.txt; rm victim"),
    ("set", "-E", "set -E; trap 'rm victim' ERR; f() { false; }; f"),
    ("set", "-H", "set -H; rm victim"),
    ("set", "-P", "ln -s sub s2; set -P; cd s2; cat ../secrets/key"),
    ("set", "-T", "set -T; trap 'rm victim' RETURN; f() { :; }; f"),
    ("set", "-o", "set -o allexport; c=rm; bash -c '$c victim'"),
    ("set", "--", "set -- rm victim; $1 $2"),
    ("set", "-", "set - rm victim; $1 $2"),
    ("shift", "", "set -- x rm victim; shift 1; \"$@\""),
    ("shopt", "-p", "shopt -p >/dev/null; rm victim"),
    ("shopt", "-q", "shopt -q extglob || rm victim"),
    ("shopt", "-s", "shopt -s nullglob; cat secrets/*"),
    ("shopt", "-u", "shopt -u nullglob; cat secrets/*"),
    ("shopt", "-o", "shopt -s -o allexport; c=rm; bash -c '$c victim'"),
    ("source", "", "printf 'rm victim\\n' > s.sh; source s.sh"),
    ("source", "", "printf '$1 victim\\n' > s.sh; source ./s.sh rm"),
    ("suspend", "", "false && suspend; rm victim"),
    ("suspend", "-f", "false && suspend -f; rm victim"),
    ("test", "", "test -e secrets/key && rm victim"),
    ("test", "", "test -v 'a[$(rm victim)]'"),
    ("times", "", "times; rm victim"),
    ("trap", "", "trap 'rm victim' EXIT"),
    ("trap", "", "trap 'rm victim' ERR; false"),
    ("trap", "", "trap 'rm victim' DEBUG; :"),
    ("trap", "-l", "trap -l >/dev/null; rm victim"),
    ("trap", "-p", "trap 'rm victim' EXIT; trap -p EXIT"),
    ("true", "", "true && rm victim"),
    ("type", "", "type rm; rm victim"),
    ("type", "-a", "type -a rm; rm victim"),
    ("type", "-f", "rm() { :; }; type -f rm; rm victim"),
    ("type", "-p", "\"$(type -p rm)\" victim"),
    ("type", "-t", "[ \"$(type -t rm)\" = file ] && rm victim"),
    ("type", "-P", "\"$(type -P rm)\" victim"),
    ("typeset", "", "typeset c=rm; $c victim"),
    ("typeset", "-a", "typeset -a a=(rm victim); \"${a[@]}\""),
    ("typeset", "-A", "typeset -A m=([k]=rm); ${m[k]} victim"),
    (
        "typeset",
        "-f",
        "f() { rm victim; }; typeset -f f > s.sh; unset -f f; . ./s.sh; f",
    ),
    ("typeset", "-F", "f() { rm victim; }; typeset -F f && f"),
    ("typeset", "-g", "f() { typeset -g c=rm; }; f; $c victim"),
    ("typeset", "-i", "typeset -i n='a[$(rm victim)]' 2>/dev/null"),
    ("typeset", "-I", "c=rm; f() { typeset -I c; $c victim; }; f"),
    ("typeset", "-l", "typeset -l c=RM; $c victim"),
    ("typeset", "-n", "typeset -n r=c; r=rm; $c victim"),
    ("typeset", "-r", "typeset -r c=rm; $c victim"),
    (
        "typeset",
        "-t",
        "set -T; f() { :; }; typeset -t f; trap 'rm victim' DEBUG; f",
    ),
    ("typeset", "-u", "typeset -u c=rm; ${c,,} victim"),
    ("typeset", "-x", "typeset -x c=rm; bash -c '$c victim'"),
    ("typeset", "-p", "c=rm; eval \"$(typeset -p c)\"; $c victim"),
    ("ulimit", "", "ulimit >/dev/null; rm victim"),
    ("ulimit", "-S", "ulimit -S -c 0; rm victim"),
    ("ulimit", "-H", "ulimit -H -c >/dev/null; rm victim"),
    ("ulimit", "-a", "ulimit -a >/dev/null; rm victim"),
    ("ulimit", "-b", "ulimit -b >/dev/null 2>&1; rm victim"),
    ("ulimit", "-c", "ulimit -c 0; rm victim"),
    ("ulimit", "-d", "ulimit -d >/dev/null; rm victim"),
    ("ulimit", "-e", "ulimit -e >/dev/null; rm victim"),
    ("ulimit", "-f", "ulimit -f >/dev/null; rm victim"),
    ("ulimit", "-i", "ulimit -i >/dev/null; rm victim"),
    ("ulimit", "-k", "ulimit -k >/dev/null 2>&1; rm victim"),
    ("ulimit", "-l", "ulimit -l >/dev/null; rm victim"),
    ("ulimit", "-m", "ulimit -m >/dev/null; rm victim"),
    ("ulimit", "-n", "ulimit -n >/dev/null; rm victim"),
    ("ulimit", "-p", "ulimit -p >/dev/null; rm victim"),
    ("ulimit", "-q", "ulimit -q >/dev/null; rm victim"),
    ("ulimit", "-r", "ulimit -r >/dev/null; rm victim"),
    ("ulimit", "-s", "ulimit -s >/dev/null; rm victim"),
    ("ulimit", "-t", "ulimit -t >/dev/null; rm victim"),
    ("ulimit", "-u", "ulimit -u >/dev/null; rm victim"),
    ("ulimit", "-v", "ulimit -v >/dev/null; rm victim"),
    ("ulimit", "-x", "ulimit -x >/dev/null; rm victim"),
    ("ulimit", "-P", "ulimit -P >/dev/null 2>&1; rm victim"),
    ("ulimit", "-R", "ulimit -R >/dev/null; rm victim"),
    ("ulimit", "-T", "ulimit -T >/dev/null 2>&1; rm victim"),
    ("umask", "", "umask 077; echo x > out.txt; rm victim"),
    ("umask", "-p", "umask -p; rm victim"),
    ("umask", "-S", "umask -S; rm victim"),
    (
        "unalias",
        "",
        "shopt -s expand_aliases\nalias ls='rm victim'\nunalias ls\nls",
    ),
    (
        "unalias",
        "-a",
        "shopt -s expand_aliases\nalias ls='rm victim'\nunalias -a\nls",
    ),
    ("unset", "", "rm() { :; }; unset rm; rm victim"),
    ("unset", "-f", "rm() { :; }; unset -f rm; rm victim"),
    ("unset", "-v", "rm() { :; }; unset -v rm; rm victim"),
    ("unset", "-n", "declare -n r=c; c=rm; unset -n r; $c victim"),
    ("unset", "", "unset 'a[$(rm victim)]'"),
    ("wait", "", "rm victim & wait"),
    ("wait", "-f", "rm victim & wait -f"),
    ("wait", "-n", "rm victim & wait -n"),
    ("wait", "-p", "rm victim & wait -n -p c; echo \"$c\""),
    ("wait", "-p", "sleep 0 & wait -n -p 'a[$(rm victim)]'"),
];

/// Lines that, after each option of `set -o` or `shopt -s` is turned on, may read, run
/// or change directory differently (globs, aliases, `cd`, words, scripts): one is paired
/// with each option, in turn.
const PROBES: &[&str] = &[
    "cat secrets/* 2>/dev/null; ls *",
    "alias r='rm victim'\nr",
    "cd sub 2>/dev/null; cat ../secrets/key",
    "c=rm; $c victim",
    "printf 'rm victim\\n' > s.sh; . ./s.sh",
    "f() { cat .env; }; f",
    "cat @(secrets)/* 2>/dev/null; ls",
    "cat **/key 2>/dev/null; ls",
];

/// The options of `set -o` (bash 5.2).
pub const SET_OPTIONS: &[&str] = &[
    "allexport",
    "braceexpand",
    "emacs",
    "errexit",
    "errtrace",
    "functrace",
    "hashall",
    "histexpand",
    "history",
    "ignoreeof",
    "interactive-comments",
    "keyword",
    "monitor",
    "noclobber",
    "noexec",
    "noglob",
    "nolog",
    "notify",
    "nounset",
    "onecmd",
    "physical",
    "pipefail",
    "posix",
    "privileged",
    "verbose",
    "vi",
    "xtrace",
];

/// The options of `shopt` (bash 5.2).
pub const SHOPT_OPTIONS: &[&str] = &[
    "autocd",
    "assoc_expand_once",
    "cdable_vars",
    "cdspell",
    "checkhash",
    "checkjobs",
    "checkwinsize",
    "cmdhist",
    "compat31",
    "compat32",
    "compat40",
    "compat41",
    "compat42",
    "compat43",
    "compat44",
    "complete_fullquote",
    "direxpand",
    "dirspell",
    "dotglob",
    "execfail",
    "expand_aliases",
    "extdebug",
    "extglob",
    "extquote",
    "failglob",
    "force_fignore",
    "globasciiranges",
    "globskipdots",
    "globstar",
    "gnu_errfmt",
    "histappend",
    "histreedit",
    "histverify",
    "hostcomplete",
    "huponexit",
    "inherit_errexit",
    "interactive_comments",
    "lastpipe",
    "lithist",
    "localvar_inherit",
    "localvar_unset",
    "login_shell",
    "mailwarn",
    "no_empty_cmd_completion",
    "nocaseglob",
    "nocasematch",
    "noexpand_translation",
    "nullglob",
    "patsub_replacement",
    "progcomp",
    "progcomp_alias",
    "promptvars",
    "restricted_shell",
    "shift_verbose",
    "sourcepath",
    "varredir_close",
    "xpg_echo",
];

/// Every line of the closed set, each with its tags (`builtin:NAME`, `option:…`): the
/// table's lines, then each `set -o` and `shopt -s` option with a probe.
pub fn lines() -> Vec<(String, Vec<String>)> {
    let mut lines: Vec<(String, Vec<String>)> = BUILTIN_LINES
        .iter()
        .map(|(builtin, option, line)| {
            let mut tags = vec![format!("builtin:{builtin}")];
            if !option.is_empty() {
                tags.push(format!("option:{builtin}:{option}"));
            }
            (line.to_string(), tags)
        })
        .collect();
    for (index, name) in SET_OPTIONS.iter().enumerate() {
        let probe = PROBES[index % PROBES.len()];
        lines.push((
            format!("set -o {name}\n{probe}"),
            vec!["builtin:set".into(), format!("option:set:-o {name}")],
        ));
    }
    for (index, name) in SHOPT_OPTIONS.iter().enumerate() {
        let probe = PROBES[index % PROBES.len()];
        lines.push((
            format!("shopt -s {name}\n{probe}"),
            vec!["builtin:shopt".into(), format!("option:shopt:{name}")],
        ));
    }
    lines
}

/// The option letters a `help -s` synopsis shows (`[-abc]`, `[-o option]`, `+o`,
/// `-sigspec`, `+N`/`-N`), as the table names them.
pub fn synopsis_options(synopsis: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut push = |option: String| {
        if !found.contains(&option) {
            found.push(option);
        }
    };
    for word in synopsis.split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '|') {
        if let Some(rest) = word.strip_prefix('+') {
            match rest {
                "N" => push("+N".into()),
                "o" => push("+o".into()),
                _ => {}
            }
            continue;
        }
        let Some(letters) = word.strip_prefix('-') else {
            continue;
        };
        match letters {
            "" => {}
            "N" => push("-N".into()),
            "sigspec" => push("-sigspec".into()),
            _ if letters.chars().all(|c| c.is_ascii_alphabetic() || c == '@') => {
                for letter in letters.chars() {
                    push(format!("-{letter}"));
                }
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synopses_are_read_as_the_table_names_them() {
        assert_eq!(
            synopsis_options("cd: cd [-L|[-P [-e]] [-@]] [dir]"),
            ["-L", "-P", "-e", "-@"]
        );
        assert_eq!(
            synopsis_options("kill: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]"),
            ["-s", "-n", "-sigspec", "-l"]
        );
        assert_eq!(
            synopsis_options("compopt: compopt [-o|+o option] [-DEI] [name ...]"),
            ["-o", "+o", "-D", "-E", "-I"]
        );
        assert_eq!(synopsis_options("popd: popd [-n] [+N | -N]"), ["-n", "+N", "-N"]);
    }
}
