//! Path rules hold for every spelling of a path. A tool's resource is the path as it
//! really is (`Location::resolve` follows symlinks, spec §5.1); a rule may name it through
//! a symlink (`read: {"/home/me/link/secrets/*": "deny"}` where `link` leads elsewhere).
//! So each path rule's pattern is resolved through symlinks as the resource is, and a
//! resource is decided by the rules as written and by the rules as resolved: the stricter
//! result wins (spec §4.3, "absolute candidate", read as "every spelling").

use std::path::{Component, Path, PathBuf};

use crate::config::PATH_ACTIONS;
use crate::rules::{Rule, Ruleset};
use crate::wildcard::Pattern;

/// How many symlinked ancestors [`resolve_pattern_in`] climbs before it gives up: a pattern
/// deeper than this under a missing directory is left as written.
const MAX_MISSING: usize = 64;

/// The real paths already looked up while one service is built, by path: every agent
/// carries the same default path rules, and `canonicalize` reads every ancestor's link
/// each time (a cold process looked up `/root` over 500 times for one command).
pub(crate) type RealPaths = std::collections::HashMap<PathBuf, Option<PathBuf>>;

/// [`resolve_pattern_in`] with nothing looked up yet.
#[cfg(test)]
pub(crate) fn resolve_pattern(pattern: &str, project: &Path) -> Option<String> {
    resolve_pattern_in(pattern, project, &mut RealPaths::new())
}

/// `pattern` with its literal directory part resolved through symlinks, when that changes
/// it: relative patterns are read under `project` (canonical) and stay relative when they
/// resolve inside it; a pattern with no wildcard is resolved whole (the file itself may be
/// a link). `None` when resolving changes nothing or there is nothing literal to resolve.
///
/// The part of a path that does not exist yet is kept as written under its nearest
/// existing ancestor's real path, so a rule for a file to come holds once it exists.
///
/// Real paths are looked up in `known` first, and kept there.
fn resolve_pattern_in(pattern: &str, project: &Path, known: &mut RealPaths) -> Option<String> {
    let pattern = pattern.replace('\\', "/");
    let wild = pattern.find(['*', '?']);
    let (head, tail) = match wild {
        None => (pattern.as_str(), ""),
        Some(at) => {
            let slash = pattern[..at].rfind('/')?;
            (&pattern[..slash], &pattern[slash..])
        }
    };
    if head.is_empty() {
        return None;
    }
    let absolute = head.starts_with('/');
    let base = if absolute {
        PathBuf::from(head)
    } else {
        project.join(head)
    };
    let real = known.entry(base).or_insert_with_key(|base| real_path(base)).clone()?;
    let spelled = if absolute {
        real.to_string_lossy().into_owned()
    } else {
        match real.strip_prefix(project) {
            Ok(inside) if inside.as_os_str().is_empty() => {
                return (tail.trim_start_matches('/') != pattern).then(|| tail.trim_start_matches('/').to_string());
            }
            Ok(inside) => inside.to_string_lossy().into_owned(),
            // Out of the project through a link: the resource is then absolute too.
            Err(_) => real.to_string_lossy().into_owned(),
        }
    };
    let resolved = format!("{spelled}{tail}");
    (resolved != pattern).then_some(resolved)
}

/// `path` with every existing part resolved: the nearest existing ancestor canonical,
/// the missing rest appended as written. `None` for a missing rest that climbs (`..`).
pub(crate) fn real_path(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    loop {
        // One `stat` tells a missing path; `canonicalize` reads every ancestor's link, so
        // it runs only on a path that exists (a cold process resolves dozens of missing
        // paths: the protected files git would run).
        let real = std::fs::metadata(&existing)
            .ok()
            .and_then(|_| std::fs::canonicalize(&existing).ok());
        match real {
            Some(mut real) => {
                for part in missing.iter().rev() {
                    real.push(part);
                }
                return Some(real);
            }
            None => {
                if missing.len() >= MAX_MISSING {
                    return None;
                }
                let name = existing.file_name()?.to_os_string();
                if !matches!(Path::new(&name).components().next(), Some(Component::Normal(_))) {
                    return None;
                }
                missing.push(name);
                existing = existing.parent()?.to_path_buf();
            }
        }
    }
}

/// The rules of `rules` with every path rule's pattern resolved ([`resolve_pattern`]), in
/// the same order; `None` when no pattern changes (the common case: no symlinks named).
/// `known` keeps the real paths looked up, for the next agent's rules.
pub(crate) fn resolved_ruleset(rules: &Ruleset, project: &Path, known: &mut RealPaths) -> Option<Ruleset> {
    let mut changed = false;
    let resolved: Vec<Rule> = rules
        .rules()
        .iter()
        .map(|rule| {
            let action = Pattern::new(&rule.action);
            let path_rule = PATH_ACTIONS.iter().any(|path_action| action.matches(path_action));
            match path_rule
                .then(|| resolve_pattern_in(&rule.resource, project, known))
                .flatten()
            {
                Some(resource) => {
                    changed = true;
                    Rule {
                        resource,
                        ..rule.clone()
                    }
                }
                None => rule.clone(),
            }
        })
        .collect();
    changed.then(|| Ruleset::new(resolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_through_links_resolve_and_others_stay() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let project = root.join("project");
        let outside = root.join("outside");
        std::fs::create_dir_all(project.join("real")).unwrap();
        std::fs::create_dir_all(outside.join("vault")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(project.join("real"), project.join("alias")).unwrap();
        std::os::unix::fs::symlink(outside.join("vault"), project.join("vault")).unwrap();
        let link = root.join("link").to_string_lossy().into_owned();
        let out = outside.to_string_lossy().into_owned();
        assert_eq!(
            resolve_pattern(&format!("{link}/vault/*"), &project),
            Some(format!("{out}/vault/*"))
        );
        assert_eq!(
            resolve_pattern(&format!("{link}/vault/key.pem"), &project),
            Some(format!("{out}/vault/key.pem"))
        );
        // A file still to come, under a linked directory.
        assert_eq!(
            resolve_pattern(&format!("{link}/new/deeper/*.env"), &project),
            Some(format!("{out}/new/deeper/*.env"))
        );
        assert_eq!(resolve_pattern("alias/*", &project), Some("real/*".into()));
        assert_eq!(resolve_pattern("vault/*", &project), Some(format!("{out}/vault/*")));
        assert_eq!(resolve_pattern("real/*", &project), None);
        assert_eq!(resolve_pattern("*.env", &project), None);
        assert_eq!(resolve_pattern("*", &project), None);
        assert_eq!(resolve_pattern(&format!("{out}/vault/*"), &project), None);
        assert_eq!(resolve_pattern("missing/../x/*", &project), None);
    }
}
