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
}

/// The spellings of the command `words` (the program's name first, as a rule names it).
///
/// ```
/// let spelled = toolgate_shell_analysis::spellings(&["git", "-C", "sub", "push", "origin"]);
/// assert_eq!(spelled.forms, ["git -C sub push origin", "git push origin"]);
/// assert_eq!(spelled.save.as_deref(), Some("git -C *"));
/// assert_eq!(toolgate_shell_analysis::spellings(&["*", "--version"]).save, None);
/// ```
pub fn spellings<S: AsRef<str>>(words: &[S]) -> Spellings {
    let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    let mut forms = vec![words.join(" ")];
    if let Some(name) = words.first() {
        let args: Vec<Arg> = words.iter().map(|word| Arg::text(*word)).collect();
        let verdict = programs::model_for(name, &args);
        for form in verdict.forms {
            let spelled: Vec<&str> = form.iter().filter_map(|index| words.get(*index).copied()).collect();
            let spelled = spelled.join(" ");
            if !forms.contains(&spelled) {
                forms.push(spelled);
            }
        }
    }
    Spellings {
        forms,
        save: save_pattern(&words),
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
