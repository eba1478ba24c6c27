//! Builtins' options as bash reads them, and what the shell options of `set` and `shopt`
//! do to the analysis (bash 5.2 manual, "SHELL BUILTIN COMMANDS").

use crate::arg::Arg;

/// A builtin's options as bash's `internal_getopt` reads them: clustered letters; a letter
/// that takes a value takes the rest of its word, or the next word; `--` ends the options,
/// and so does the first word that is not an option (a lone `-` included).
pub(super) struct Opts {
    /// The letters given, in order, each with its value when it takes one.
    pub(super) given: Vec<(char, Option<Arg>)>,
    /// Where the operands start.
    pub(super) rest: usize,
    /// Why the options cannot be read: a letter the builtin does not have, a value that is
    /// missing, or a word only known when it runs where an option could be (bash would
    /// read `printf "$x"` with `x='-vPATH'` as `-v PATH`).
    pub(super) problem: Option<String>,
}

impl Opts {
    /// Whether the letter was given.
    pub(super) fn has(&self, letter: char) -> bool {
        self.given.iter().any(|(given, _)| *given == letter)
    }

    /// The values given to the letter.
    pub(super) fn values(&self, letter: char) -> impl Iterator<Item = &Arg> {
        self.given
            .iter()
            .filter(move |(given, _)| *given == letter)
            .filter_map(|(_, value)| value.as_ref())
    }
}

/// Reads the options of the builtin `name` from `args` (its words after the name):
/// `flags` are its letters without a value, `values` those with one.
pub(super) fn options(name: &str, args: &[Arg], flags: &str, values: &str) -> Opts {
    let mut opts = Opts {
        given: Vec::new(),
        rest: 0,
        problem: None,
    };
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        if arg.maybe_option() {
            opts.problem = Some(format!("`{name}` with an option only known when it runs"));
            break;
        }
        let Some(text) = arg.value() else { break };
        if text == "--" {
            index += 1;
            break;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        let letters: Vec<char> = text.chars().skip(1).collect();
        for (at, letter) in letters.iter().enumerate() {
            if values.contains(*letter) {
                let attached: String = letters[at + 1..].iter().collect();
                let value = if attached.is_empty() {
                    index += 1;
                    args.get(index).cloned()
                } else {
                    Some(Arg::text(attached))
                };
                if value.is_none() {
                    opts.problem = Some(format!("`{name} -{letter}` without its value"));
                }
                opts.given.push((*letter, value));
                break;
            }
            if !flags.contains(*letter) {
                opts.problem = Some(format!("`{name} -{letter}`, an option the analysis does not model"));
                opts.rest = index;
                return opts;
            }
            opts.given.push((*letter, None));
        }
        index += 1;
    }
    opts.rest = index.min(args.len());
    opts
}

/// What turning a shell option on or off does to the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    /// Nothing the analysis reads: what runs, what is read and written stays as it is
    /// modelled (errexit, xtrace, pipefail, noclobber…), or the analysis already holds
    /// every case (noglob: a pattern left as it is is among what its hole stands for).
    Harmless,
    /// Later lines are read or expanded differently than the analysis reads them (alias
    /// expansion, extended patterns, `**`, case-insensitive matches, history expansion,
    /// the last pipeline command in this shell): the line is opaque.
    Changes,
}

/// `set` letters and what each does when turned on (`-`) and off (`+`).
pub(super) const SET_LETTERS: &[(char, Effect, Effect)] = &[
    ('a', Effect::Harmless, Effect::Harmless),
    ('b', Effect::Harmless, Effect::Harmless),
    ('e', Effect::Harmless, Effect::Harmless),
    ('f', Effect::Harmless, Effect::Harmless),
    ('h', Effect::Harmless, Effect::Harmless),
    // Every `NAME=value` word goes to the command's environment, not its arguments.
    ('k', Effect::Changes, Effect::Harmless),
    ('m', Effect::Harmless, Effect::Harmless),
    ('n', Effect::Harmless, Effect::Harmless),
    ('p', Effect::Harmless, Effect::Harmless),
    ('t', Effect::Harmless, Effect::Harmless),
    ('u', Effect::Harmless, Effect::Harmless),
    ('v', Effect::Harmless, Effect::Harmless),
    ('x', Effect::Harmless, Effect::Harmless),
    // Without brace expansion `{a,b}` is one word.
    ('B', Effect::Harmless, Effect::Changes),
    ('C', Effect::Harmless, Effect::Harmless),
    ('E', Effect::Harmless, Effect::Harmless),
    // `!!` in a later line is replaced by an earlier one (with `-o history`).
    ('H', Effect::Changes, Effect::Harmless),
    ('P', Effect::Harmless, Effect::Harmless),
    ('T', Effect::Harmless, Effect::Harmless),
];

/// `set -o` names: the letter they stand for, or their own effects.
pub(super) const SET_NAMES: &[(&str, Option<char>, Effect, Effect)] = &[
    ("allexport", Some('a'), Effect::Harmless, Effect::Harmless),
    ("braceexpand", Some('B'), Effect::Harmless, Effect::Harmless),
    ("emacs", None, Effect::Harmless, Effect::Harmless),
    ("errexit", Some('e'), Effect::Harmless, Effect::Harmless),
    ("errtrace", Some('E'), Effect::Harmless, Effect::Harmless),
    ("functrace", Some('T'), Effect::Harmless, Effect::Harmless),
    ("hashall", Some('h'), Effect::Harmless, Effect::Harmless),
    ("histexpand", Some('H'), Effect::Harmless, Effect::Harmless),
    ("history", None, Effect::Harmless, Effect::Harmless),
    ("ignoreeof", None, Effect::Harmless, Effect::Harmless),
    ("keyword", Some('k'), Effect::Harmless, Effect::Harmless),
    ("monitor", Some('m'), Effect::Harmless, Effect::Harmless),
    ("noclobber", Some('C'), Effect::Harmless, Effect::Harmless),
    ("noexec", Some('n'), Effect::Harmless, Effect::Harmless),
    ("noglob", Some('f'), Effect::Harmless, Effect::Harmless),
    ("nolog", None, Effect::Harmless, Effect::Harmless),
    ("notify", Some('b'), Effect::Harmless, Effect::Harmless),
    ("nounset", Some('u'), Effect::Harmless, Effect::Harmless),
    ("onecmd", Some('t'), Effect::Harmless, Effect::Harmless),
    ("physical", Some('P'), Effect::Harmless, Effect::Harmless),
    ("pipefail", None, Effect::Harmless, Effect::Harmless),
    // POSIX mode expands aliases in a non-interactive shell, among much else.
    ("posix", None, Effect::Changes, Effect::Harmless),
    ("privileged", Some('p'), Effect::Harmless, Effect::Harmless),
    ("verbose", Some('v'), Effect::Harmless, Effect::Harmless),
    ("vi", None, Effect::Harmless, Effect::Harmless),
    ("xtrace", Some('x'), Effect::Harmless, Effect::Harmless),
];

/// What `set -o name` (`on`) or `set +o name` does; `None` for a name bash does not have.
pub(super) fn set_name_effect(name: &str, on: bool) -> Option<Effect> {
    let (_, letter, set, unset) = SET_NAMES.iter().find(|(known, ..)| *known == name)?;
    match letter {
        Some(letter) => set_letter_effect(*letter, on),
        None => Some(if on { *set } else { *unset }),
    }
}

/// What `set -x` (`on`) or `set +x` does; `None` for a letter bash does not have.
pub(super) fn set_letter_effect(letter: char, on: bool) -> Option<Effect> {
    SET_LETTERS
        .iter()
        .find(|(known, ..)| *known == letter)
        .map(|(_, set, unset)| if on { *set } else { *unset })
}

/// `shopt` names and what setting (`-s`) and unsetting (`-u`) each does.
pub(super) const SHOPT_NAMES: &[(&str, Effect, Effect)] = &[
    ("assoc_expand_once", Effect::Harmless, Effect::Harmless),
    ("autocd", Effect::Harmless, Effect::Harmless),
    // `cd name` may go to the directory a variable of that name holds.
    ("cdable_vars", Effect::Changes, Effect::Harmless),
    ("cdspell", Effect::Harmless, Effect::Harmless),
    ("checkhash", Effect::Harmless, Effect::Harmless),
    ("checkjobs", Effect::Harmless, Effect::Harmless),
    ("checkwinsize", Effect::Harmless, Effect::Harmless),
    ("cmdhist", Effect::Harmless, Effect::Harmless),
    // Compatibility levels change quoting and expansion rules.
    ("compat31", Effect::Changes, Effect::Harmless),
    ("compat32", Effect::Changes, Effect::Harmless),
    ("compat40", Effect::Changes, Effect::Harmless),
    ("compat41", Effect::Changes, Effect::Harmless),
    ("compat42", Effect::Changes, Effect::Harmless),
    ("compat43", Effect::Changes, Effect::Harmless),
    ("compat44", Effect::Changes, Effect::Harmless),
    ("compat50", Effect::Changes, Effect::Harmless),
    ("complete_fullquote", Effect::Harmless, Effect::Harmless),
    ("direxpand", Effect::Harmless, Effect::Harmless),
    ("dirspell", Effect::Harmless, Effect::Harmless),
    // Patterns match names starting with `.` too: their holes already stand for those.
    ("dotglob", Effect::Harmless, Effect::Harmless),
    ("execfail", Effect::Harmless, Effect::Harmless),
    ("expand_aliases", Effect::Changes, Effect::Harmless),
    ("extdebug", Effect::Harmless, Effect::Harmless),
    ("extglob", Effect::Changes, Effect::Harmless),
    // `$'…'` inside `"${…}"` is read differently when this is off.
    ("extquote", Effect::Harmless, Effect::Changes),
    ("failglob", Effect::Harmless, Effect::Harmless),
    ("force_fignore", Effect::Harmless, Effect::Harmless),
    // Bracket ranges follow the locale's collation when this is off.
    ("globasciiranges", Effect::Harmless, Effect::Changes),
    // `.*` matches `.` and `..` when this is off.
    ("globskipdots", Effect::Harmless, Effect::Changes),
    ("globstar", Effect::Changes, Effect::Harmless),
    ("gnu_errfmt", Effect::Harmless, Effect::Harmless),
    ("histappend", Effect::Harmless, Effect::Harmless),
    ("histreedit", Effect::Harmless, Effect::Harmless),
    ("histverify", Effect::Harmless, Effect::Harmless),
    ("hostcomplete", Effect::Harmless, Effect::Harmless),
    ("huponexit", Effect::Harmless, Effect::Harmless),
    ("inherit_errexit", Effect::Harmless, Effect::Harmless),
    ("interactive_comments", Effect::Harmless, Effect::Harmless),
    // The last command of a pipeline runs in this shell: its `cd` stays.
    ("lastpipe", Effect::Changes, Effect::Harmless),
    ("lithist", Effect::Harmless, Effect::Harmless),
    ("localvar_inherit", Effect::Harmless, Effect::Harmless),
    ("localvar_unset", Effect::Harmless, Effect::Harmless),
    ("login_shell", Effect::Harmless, Effect::Harmless),
    ("mailwarn", Effect::Harmless, Effect::Harmless),
    ("no_empty_cmd_completion", Effect::Harmless, Effect::Harmless),
    ("nocaseglob", Effect::Changes, Effect::Harmless),
    ("nocasematch", Effect::Harmless, Effect::Harmless),
    ("noexpand_translation", Effect::Harmless, Effect::Harmless),
    // A pattern that matches nothing disappears: the command runs without that word.
    ("nullglob", Effect::Changes, Effect::Harmless),
    ("patsub_replacement", Effect::Harmless, Effect::Harmless),
    ("progcomp", Effect::Harmless, Effect::Harmless),
    ("progcomp_alias", Effect::Harmless, Effect::Harmless),
    ("promptvars", Effect::Harmless, Effect::Harmless),
    ("restricted_shell", Effect::Harmless, Effect::Harmless),
    ("shift_verbose", Effect::Harmless, Effect::Harmless),
    ("sourcepath", Effect::Harmless, Effect::Harmless),
    ("varredir_close", Effect::Harmless, Effect::Harmless),
    ("xpg_echo", Effect::Harmless, Effect::Harmless),
];

/// What `shopt -s name` (`on`) or `shopt -u name` does; `None` for a name bash 5.2 does
/// not have.
pub(super) fn shopt_effect(name: &str, on: bool) -> Option<Effect> {
    SHOPT_NAMES
        .iter()
        .find(|(known, ..)| *known == name)
        .map(|(_, set, unset)| if on { *set } else { *unset })
}
