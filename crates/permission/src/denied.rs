//! The paths a rule set denies, as they exist on disk now: what a kernel sandbox hides
//! (`read` denies) or keeps read-only (`edit` denies) for a command. Rules are patterns
//! over resources (spec §4.2); the sandbox needs concrete paths, so the project (and the
//! literal directory of each absolute pattern) is walked, within a budget.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::{Effect, Rule, Ruleset};

/// How many directory entries [`denied_paths`] may visit for one command by default.
pub const WALK_BUDGET: usize = 200_000;

/// The walk behind [`denied_paths`] visited more entries than its budget allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "expanding the {action} deny rules visited more than {WALK_BUDGET} entries (under {}); narrow the rules' patterns",
    under.display()
)]
#[non_exhaustive]
pub struct WalkBudgetExceeded {
    /// The action whose deny rules were expanded.
    pub action: String,
    /// The directory being walked when the budget ran out.
    pub under: PathBuf,
}

/// The paths whose `action` the rules deny, as they exist now: every file the rules deny
/// inside the project (and under the literal directory of each absolute deny pattern),
/// and whole directories where the rules deny everything beneath. A symlink the walk
/// meets is followed, so a rule written for the link's spelling hides what it leads to.
pub fn denied_paths(
    ruleset: &Ruleset,
    action: &str,
    project: &Path,
    budget: &mut usize,
) -> Result<Vec<PathBuf>, WalkBudgetExceeded> {
    paths_where(ruleset, action, project, budget, &[Effect::Deny])
}

/// [`denied_paths`] for the paths whose `action` the rules deny *or ask for*: what a
/// sandbox hides when no one can be asked from inside the kernel.
pub fn withheld_paths(
    ruleset: &Ruleset,
    action: &str,
    project: &Path,
    budget: &mut usize,
) -> Result<Vec<PathBuf>, WalkBudgetExceeded> {
    paths_where(ruleset, action, project, budget, &[Effect::Deny, Effect::Ask])
}

/// The walk's state: the rules, the effects that count, the budget, the directories seen.
struct Walk<'a> {
    ruleset: &'a Ruleset,
    rules: Vec<&'a Rule>,
    action: &'a str,
    effects: &'a [Effect],
    budget: &'a mut usize,
    found: Vec<PathBuf>,
    /// Canonical directories walked already (symlinks may lead back).
    seen: HashSet<PathBuf>,
}

fn paths_where(
    ruleset: &Ruleset,
    action: &str,
    project: &Path,
    budget: &mut usize,
    effects: &[Effect],
) -> Result<Vec<PathBuf>, WalkBudgetExceeded> {
    let rules: Vec<&Rule> = ruleset.relevant(action);
    let counted: Vec<&&Rule> = rules.iter().filter(|rule| effects.contains(&rule.effect)).collect();
    if counted.is_empty() {
        return Ok(Vec::new());
    }
    let mut starts: Vec<(PathBuf, String)> = Vec::new();
    for rule in &counted {
        let pattern = rule.resource.replace('\\', "/");
        let literal = &pattern[..pattern.find(['*', '?']).unwrap_or(pattern.len())];
        if pattern.starts_with('/') {
            // Absolute: walk from its literal directory; resources are absolute paths.
            let dir = if literal.len() == pattern.len() {
                Path::new(literal).to_path_buf()
            } else {
                Path::new(&literal[..literal.rfind('/').unwrap_or(0).max(1)]).to_path_buf()
            };
            starts.push((dir.clone(), dir.to_string_lossy().into_owned()));
        } else {
            let dir = literal.rfind('/').map_or("", |end| &literal[..end]);
            starts.push((project.join(dir), dir.to_string()));
        }
    }
    starts.sort();
    starts.dedup();
    // A walk from a directory inside another start is already done by that one.
    let all = starts.clone();
    starts.retain(|(dir, _)| !all.iter().any(|(other, _)| other != dir && dir.starts_with(other)));
    let mut walk = Walk {
        ruleset,
        rules,
        action,
        effects,
        budget,
        found: Vec::new(),
        seen: HashSet::new(),
    };
    for (dir, resource) in starts {
        // Followed: a start that is a symlink is walked where it leads.
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue;
        };
        if meta.is_dir() {
            walk.dir(&dir, &resource)?;
        } else if walk.counts(&resource) {
            walk.found.push(std::fs::canonicalize(&dir).unwrap_or(dir));
        }
    }
    Ok(walk.found)
}

impl Walk<'_> {
    fn counts(&self, resource: &str) -> bool {
        self.effects
            .contains(&self.ruleset.evaluate(self.action, resource).effect)
    }

    fn dir(&mut self, dir: &Path, resource: &str) -> Result<(), WalkBudgetExceeded> {
        let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if !self.seen.insert(canonical.clone()) {
            return Ok(());
        }
        if subtree_counts(&self.rules, resource, self.effects) {
            // The real directory, wherever the spelling that reached it points.
            self.found.push(canonical);
            return Ok(());
        }
        let Ok(entries) = std::fs::read_dir(&canonical) else {
            // Unreadable to toolgate means unreadable to the command (same user).
            return Ok(());
        };
        for entry in entries.flatten() {
            *self.budget = self.budget.checked_sub(1).ok_or_else(|| WalkBudgetExceeded {
                action: self.action.to_string(),
                under: dir.to_path_buf(),
            })?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let child = if resource.is_empty() {
                name.to_string()
            } else if resource.ends_with('/') {
                format!("{resource}{name}")
            } else {
                format!("{resource}/{name}")
            };
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            let followed_dir = kind.is_symlink() && std::fs::metadata(&path).is_ok_and(|meta| meta.is_dir());
            if kind.is_dir() || followed_dir {
                self.dir(&path, &child)?;
            } else if self.counts(&child) {
                let target = if kind.is_symlink() {
                    std::fs::canonicalize(&path).unwrap_or(path)
                } else {
                    path
                };
                self.found.push(target);
            }
        }
        Ok(())
    }
}

/// True when the rules give `action` one of `effects` on every path that could ever be
/// under the directory `resource` (`""` for the project): the last rule that covers all
/// of them has such an effect, and no later rule could give another to one of them.
fn subtree_counts(rules: &[&Rule], resource: &str, effects: &[Effect]) -> bool {
    let prefix = if resource.is_empty() || resource.ends_with('/') {
        resource.to_string()
    } else {
        format!("{resource}/")
    };
    let literal = |pattern: &str| pattern[..pattern.find(['*', '?']).unwrap_or(pattern.len())].to_string();
    let covers = |pattern: &str| {
        let stem = pattern.strip_suffix('*');
        stem.is_some_and(|stem| !stem.contains(['*', '?']) && prefix.starts_with(stem))
    };
    let Some(last) = rules.iter().rposition(|rule| covers(&rule.resource.replace('\\', "/"))) else {
        return false;
    };
    effects.contains(&rules[last].effect)
        && rules[last + 1..].iter().all(|rule| {
            let lit = literal(&rule.resource.replace('\\', "/"));
            effects.contains(&rule.effect) || !(lit.starts_with(&prefix) || prefix.starts_with(&lit))
        })
}

/// [`subtree_counts`] for deny rules alone.
#[cfg(test)]
fn subtree_denied(rules: &[&Rule], resource: &str) -> bool {
    subtree_counts(rules, resource, &[Effect::Deny])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Origin;

    fn rules(list: &[(&str, &str, Effect)]) -> Ruleset {
        Ruleset::new(
            list.iter()
                .map(|(a, r, e)| Rule::new(*a, *r, *e, Origin::UserConfig))
                .collect(),
        )
    }

    #[test]
    fn whole_directories_are_taken_only_when_nothing_under_them_can_be_allowed() {
        use Effect::*;
        let set = rules(&[("*", "*", Allow), ("read", "secrets/*", Deny)]);
        let relevant = set.relevant("read");
        assert!(subtree_denied(&relevant, "secrets"));
        assert!(subtree_denied(&relevant, "secrets/deeper"));
        assert!(!subtree_denied(&relevant, "src"));
        assert!(!subtree_denied(&relevant, ""));
        let set = rules(&[("read", "secrets/*", Deny), ("read", "secrets/public/*", Allow)]);
        let relevant = set.relevant("read");
        assert!(!subtree_denied(&relevant, "secrets"));
        assert!(!subtree_denied(&relevant, "secrets/public"));
        assert!(subtree_denied(&relevant, "secrets/private"));
        let set = rules(&[("edit", "*", Deny), ("edit", ".opencode/plans/*.md", Allow)]);
        let relevant = set.relevant("edit");
        assert!(subtree_denied(&relevant, "src"));
        assert!(!subtree_denied(&relevant, ".opencode"));
        assert!(!subtree_denied(&relevant, ""));
        let set = rules(&[("read", "*", Deny), ("read", "*.md", Allow)]);
        assert!(!subtree_denied(&set.relevant("read"), "docs"));
    }

    #[test]
    fn expansion_finds_denied_files_and_directories_as_they_exist() {
        use Effect::*;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "a/.env",
            "a/b/.env",
            ".env.example",
            "x.env",
            "keep.txt",
            "secrets/k/one",
            "secrets/two",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x").unwrap();
        }
        let set = rules(&[
            ("read", "*", Allow),
            ("read", "*.env", Deny),
            ("read", "*.env.example", Allow),
            ("read", "secrets/*", Deny),
        ]);
        let mut budget = 1000;
        let mut found = denied_paths(&set, "read", root, &mut budget).unwrap();
        found.sort();
        let expected: Vec<PathBuf> = ["a/.env", "a/b/.env", "secrets", "x.env"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        assert_eq!(found, expected);
        let mut tiny = 3;
        let error = denied_paths(&set, "read", root, &mut tiny).unwrap_err();
        assert!(error.to_string().contains("more than"), "{error}");
        // Only absolute patterns: the project is not walked.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa"), "k").unwrap();
        let pattern = format!("{}/*", outside.path().display());
        let set = rules(&[("read", "*", Allow), ("read", &pattern, Deny)]);
        let mut budget = 1000;
        assert_eq!(
            denied_paths(&set, "read", root, &mut budget).unwrap(),
            [outside.path().to_path_buf()]
        );
        assert_eq!(budget, 1000);
    }

    #[test]
    fn a_deny_written_for_a_symlinked_directory_reaches_its_target() {
        use Effect::*;
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let outside = std::fs::canonicalize(outside.path()).unwrap();
        std::fs::write(outside.join("key"), "k").unwrap();
        std::fs::write(outside.join("notes.env"), "e").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("secrets")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
        // The link itself as a start, and met by the walk (through `*.env`).
        let set = rules(&[
            ("read", "*", Allow),
            ("read", "secrets/*", Deny),
            ("read", "*.env", Deny),
        ]);
        let mut budget = 1000;
        let mut found = denied_paths(&set, "read", &root, &mut budget).unwrap();
        found.sort();
        found.dedup();
        assert_eq!(
            found,
            std::slice::from_ref(&outside),
            "the target directory is hidden, under every spelling"
        );
        // A loop of links ends.
        std::os::unix::fs::symlink(&root, outside.join("back")).unwrap();
        let set = rules(&[("read", "*", Allow), ("read", "*.env", Deny)]);
        let mut budget = 1000;
        let found = denied_paths(&set, "read", &root, &mut budget).unwrap();
        assert!(found.contains(&outside.join("notes.env")), "{found:?}");
    }

    #[test]
    fn withheld_paths_add_what_the_rules_ask_for() {
        use Effect::*;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [".env", "a/.env.local", "keep.txt", "private/x"] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x").unwrap();
        }
        let set = rules(&[
            ("read", "*", Allow),
            ("read", "*.env", Ask),
            ("read", "*.env.*", Ask),
            ("read", "private/*", Deny),
        ]);
        let mut budget = 1000;
        let mut found = withheld_paths(&set, "read", root, &mut budget).unwrap();
        found.sort();
        let expected: Vec<PathBuf> = [".env", "a/.env.local", "private"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        assert_eq!(found, expected);
        let mut budget = 1000;
        assert_eq!(
            denied_paths(&set, "read", root, &mut budget).unwrap(),
            [root.join("private")]
        );
    }
}
