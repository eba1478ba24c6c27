//! The spellings of a command known word for word: what exec-time enforcement matches the
//! rules against when a program is about to start (its argv, every word known).

use crate::arg::Arg;
use crate::programs;

/// How a command whose every word is known is spelled for the rules, and what "always"
/// saves for it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Spellings {
    /// The words joined by one space first, then the same command without the global
    /// options a rule may be written without (`git -C x push` is also `git push`).
    pub forms: Vec<String>,
    /// The arity prefix + ` *` (spec §7.4); `None` when a word of the prefix holds a `*`
    /// or `?`, which a saved pattern would read as a wildcard.
    pub save: Option<String>,
    /// Spellings that may only make a decision stricter (a deny or an explicit ask rule
    /// holds for them, an allow never does): when the program's options before its
    /// subcommand are ones the analysis does not follow or does not know (`git -c a.b=c
    /// push`, `git --config-env=… push`, `npm --userconfig=u publish`), the command from
    /// each of its first words that is not an option on (`git push …`), so a rule for
    /// the subcommand still refuses it.
    pub stricter: Vec<String>,
}

/// How many candidate subcommand positions [`Spellings::stricter`] tries at most.
const MAX_STRICTER: usize = 8;
/// How far into the words the candidates are looked for.
const STRICTER_WINDOW: usize = 16;

/// The spellings of the command `words` (the program's name first, as a rule names it).
///
/// ```
/// let spelled = toolgate_shell_analysis::spellings(&["git", "-C", "sub", "push", "origin"]);
/// assert_eq!(spelled.forms, ["git -C sub push origin", "git push origin"]);
/// assert_eq!(spelled.save.as_deref(), Some("git -C *"));
/// assert_eq!(toolgate_shell_analysis::spellings(&["*", "--version"]).save, None);
/// // An option the analysis does not follow: `git push` may still refuse it.
/// let spelled = toolgate_shell_analysis::spellings(&["git", "-c", "a.b=c", "push", "o"]);
/// assert_eq!(spelled.forms, ["git -c a.b=c push o"]);
/// assert!(spelled.stricter.contains(&"git push o".to_string()));
/// ```
pub fn spellings<S: AsRef<str>>(words: &[S]) -> Spellings {
    let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    let mut forms = vec![words.join(" ")];
    let mut stricter = Vec::new();
    if let Some(name) = words.first() {
        let args: Vec<Arg> = words.iter().map(|word| Arg::text(*word)).collect();
        let verdict = programs::model_for(name, &args);
        let leading_option = words
            .get(1)
            .is_some_and(|word| word.starts_with('-') || word.starts_with('+'));
        if leading_option && (verdict.opaque.is_some() || verdict.forms.is_empty()) {
            for at in (2..words.len().min(STRICTER_WINDOW))
                .filter(|at| !words[*at].starts_with('-'))
                .take(MAX_STRICTER)
            {
                let mut form = vec![*name];
                form.extend(&words[at..]);
                let form = form.join(" ");
                if !forms.contains(&form) && !stricter.contains(&form) {
                    stricter.push(form);
                }
            }
        }
        for form in verdict.forms {
            let spelled: Vec<&str> = form.iter().filter_map(|index| words.get(*index).copied()).collect();
            let spelled = spelled.join(" ");
            if !forms.contains(&spelled) {
                forms.push(spelled);
            }
        }
    }
    stricter.retain(|form| !forms.contains(form));
    Spellings {
        forms,
        save: save_pattern(&words),
        stricter,
    }
}

/// The "always" pattern of known words: the arity prefix + ` *`, unless a word of it
/// holds a wildcard character (it would save more than the words it came from).
pub(crate) fn save_pattern(words: &[&str]) -> Option<String> {
    let prefix = crate::arity::prefix(words);
    if prefix.is_empty() || prefix.iter().any(|word| word.contains(['*', '?'])) {
        return None;
    }
    Some(format!("{} *", prefix.join(" ")))
}
