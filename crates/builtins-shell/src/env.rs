//! The one environment policy of the bash tool: what a command's environment is, and —
//! from that same environment — what the analysis assumes of it (`HOME`, `PATH`,
//! `CDPATH`), so the plan and the run can never disagree about where `~` is.

use std::ffi::{OsStr, OsString};

use serde::Deserialize;
use toolgate_shell_analysis::ShellEnv;

/// The variables `inherit: core` keeps (besides every `LC_*`).
const CORE: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG", "LANGUAGE", "TERM", "TZ",
];

/// The default `exclude`: names that usually hold credentials.
pub const DEFAULT_EXCLUDE: &[&str] = &["*_TOKEN", "*_KEY", "*SECRET*"];

/// Which of toolgate's own variables a command inherits before `exclude` and `set`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// Every variable (the default).
    #[default]
    All,
    /// `HOME`, `LOGNAME`, `PATH`, `SHELL`, `USER`, `USERNAME`, the temp-dir variables,
    /// `LANG`, `LANGUAGE`, `LC_*`, `TERM` and `TZ`.
    Core,
    /// Nothing: only what `set` gives.
    None,
}

impl Inherit {
    /// The config spelling: `all`, `core` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Inherit::All => "all",
            Inherit::Core => "core",
            Inherit::None => "none",
        }
    }
}

/// The `shell_env` settings: which variables a command inherits, which it never sees, and
/// which are set for it. Toolgate's own secrets ([`is_toolgate_secret`]) never reach a
/// command whatever this says.
///
/// ```
/// use std::ffi::OsString;
/// use toolgate_builtins_shell::ShellEnvPolicy;
/// let policy: ShellEnvPolicy = serde_json::from_value(serde_json::json!({
///     "inherit": "core", "set": {"HOME": "/work/home"}
/// })).unwrap();
/// let vars = [("HOME", "/root"), ("GITHUB_TOKEN", "t"), ("EDITOR", "vi"), ("PATH", "/usr/bin")];
/// let env = policy.environment(vars.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
/// assert_eq!(env, [("PATH".into(), "/usr/bin".into()), ("HOME".into(), "/work/home".into())]);
/// // The analysis reads `~` as the home the command will really have.
/// assert_eq!(ShellEnvPolicy::analysis_env(&env).home.as_deref(), Some("/work/home"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ShellEnvPolicy {
    /// Which variables are inherited.
    #[serde(default)]
    pub inherit: Inherit,
    /// Name patterns (`*` and `?`, any case) of variables left out; `None` is
    /// [`DEFAULT_EXCLUDE`], an empty list keeps everything.
    #[serde(default)]
    pub exclude: Option<Vec<String>>,
    /// Variables set (or replaced), in order.
    #[serde(default, with = "ordered_map")]
    pub set: Vec<(String, String)>,
}

/// Why a `shell_env` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvPolicyError {
    /// `set` names one of toolgate's own variables.
    #[error("set.{0}: toolgate's own variables never reach a command")]
    Secret(String),
    /// `set` has a name no environment can hold.
    #[error("set.{0:?}: expected a variable name (no `=`, no NUL, not empty)")]
    BadName(String),
    /// `set` has a value no environment can hold.
    #[error("set.{0}: a value may not contain NUL")]
    BadValue(String),
}

impl ShellEnvPolicy {
    /// Inherits `inherit`, leaves out what `exclude` names, sets `set`.
    pub fn new(inherit: Inherit, exclude: Option<Vec<String>>, set: Vec<(String, String)>) -> ShellEnvPolicy {
        ShellEnvPolicy { inherit, exclude, set }
    }

    /// Checks what `set` asks for: no toolgate secret, only names and values an
    /// environment can hold.
    pub fn validate(&self) -> Result<(), EnvPolicyError> {
        for (name, value) in &self.set {
            if is_toolgate_secret(OsStr::new(name)) {
                return Err(EnvPolicyError::Secret(name.clone()));
            }
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(EnvPolicyError::BadName(name.clone()));
            }
            if value.contains('\0') {
                return Err(EnvPolicyError::BadValue(name.clone()));
            }
        }
        Ok(())
    }

    /// Whether a variable named `name` is held back from commands as a secret: the
    /// server token, the websearch keys, or one `exclude` names (the default
    /// [`DEFAULT_EXCLUDE`] when unset). What `inherit` leaves out is not counted (it
    /// drops ordinary variables too), nor toolgate's other variables (directories, rules).
    pub fn excludes(&self, name: &str) -> bool {
        if ["TOOLGATE_SERVER_TOKEN", "EXA_API_KEY", "PARALLEL_API_KEY"]
            .iter()
            .any(|secret| name.eq_ignore_ascii_case(secret))
        {
            return true;
        }
        match &self.exclude {
            Some(list) => list.iter().any(|pattern| name_matches(pattern, name)),
            None => DEFAULT_EXCLUDE.iter().any(|pattern| name_matches(pattern, name)),
        }
    }

    /// The environment a command gets from `vars` (toolgate's own environment).
    pub fn environment(&self, vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let default: Vec<String>;
        let exclude: &[String] = match &self.exclude {
            Some(list) => list,
            None => {
                default = DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect();
                &default
            }
        };
        let mut env: Vec<(OsString, OsString)> = vars
            .into_iter()
            .filter(|(name, _)| !is_toolgate_secret(name))
            .filter(|(name, _)| {
                let name = name.to_string_lossy();
                let kept = match self.inherit {
                    Inherit::None => false,
                    Inherit::Core => CORE.contains(&name.as_ref()) || name.starts_with("LC_"),
                    Inherit::All => true,
                };
                kept && !exclude.iter().any(|pattern| name_matches(pattern, &name))
            })
            .collect();
        for (name, value) in &self.set {
            if is_toolgate_secret(OsStr::new(name)) {
                continue;
            }
            env.retain(|(existing, _)| existing != name.as_str());
            env.push((name.into(), value.into()));
        }
        env
    }

    /// What the analysis assumes of a shell started with exactly `env`: its `HOME` (when
    /// absolute), its `PATH`, whether `CDPATH` is set. The bash tool plans with this, so
    /// `~` in a line is the home the command will really have.
    pub fn analysis_env(env: &[(OsString, OsString)]) -> ShellEnv {
        let get = |key: &str| {
            env.iter()
                .rev()
                .find(|(name, _)| name == key)
                .map(|(_, value)| value.to_string_lossy().into_owned())
        };
        ShellEnv::default()
            .with_home(get("HOME").filter(|home| home.starts_with('/')))
            .with_path(get("PATH"))
            .with_cdpath(get("CDPATH").is_some_and(|value| !value.is_empty()))
    }
}

/// True for the variables that are toolgate's own and never reach a command: any
/// `TOOLGATE_*` (the server token among them) and the websearch API keys.
pub fn is_toolgate_secret(name: &OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.len() >= 9 && name[..9].eq_ignore_ascii_case(b"TOOLGATE_")
        || [&b"EXA_API_KEY"[..], b"PARALLEL_API_KEY"]
            .iter()
            .any(|key| name.eq_ignore_ascii_case(key))
}

/// `*` and `?` over a variable name, ignoring case.
fn name_matches(pattern: &str, name: &str) -> bool {
    // Iterative with one backtrack point: linear in practice, never exponential.
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(b'?') => {
                pi += 1;
                ni += 1;
            }
            Some(c) if c.eq_ignore_ascii_case(&n[ni]) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == b'*')
}

/// `set` as an ordered map of names to strings.
mod ordered_map {
    use serde::de::{Deserializer, MapAccess, Visitor};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<(String, String)>, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Vec<(String, String)>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of variable names to strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, String>()? {
                    out.push((key, value));
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(Ordered)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn variable_patterns_ignore_case_and_match_anywhere() {
        for (pattern, name) in [
            ("*_TOKEN", "GITHUB_TOKEN"),
            ("*_token", "GITHUB_TOKEN"),
            ("*SECRET*", "MY_SECRET_X"),
            ("A?C", "abc"),
            ("*", ""),
            ("**a", "a"),
        ] {
            assert!(name_matches(pattern, name), "{pattern} {name}");
        }
        for (pattern, name) in [("*_TOKEN", "TOKENS"), ("*_KEY", "KEYRING"), ("A?C", "AC"), ("a", "")] {
            assert!(!name_matches(pattern, name), "{pattern} {name}");
        }
        // No exponential backtracking on a pathological pattern.
        let pattern = "*a".repeat(40) + "b";
        assert!(!name_matches(&pattern, &"a".repeat(200)));
    }

    #[test]
    fn toolgate_secrets_never_pass_whatever_the_policy() {
        let policy = ShellEnvPolicy::new(Inherit::All, Some(Vec::new()), vec![("toolgate_x".into(), "1".into())]);
        assert_eq!(policy.validate(), Err(EnvPolicyError::Secret("toolgate_x".into())));
        let env = policy.environment(vars(&[
            ("TOOLGATE_SERVER_TOKEN", "t"),
            ("EXA_API_KEY", "k"),
            ("A", "1"),
        ]));
        assert_eq!(env, vars(&[("A", "1")]));
    }

    #[test]
    fn inherit_exclude_and_set_in_that_order() {
        let all = vars(&[("HOME", "/h"), ("GH_TOKEN", "t"), ("LC_ALL", "C"), ("EDITOR", "vi")]);
        let core = ShellEnvPolicy::new(Inherit::Core, None, Vec::new());
        assert_eq!(core.environment(all.clone()), vars(&[("HOME", "/h"), ("LC_ALL", "C")]));
        let keep = ShellEnvPolicy::new(Inherit::All, Some(Vec::new()), vec![("HOME".into(), "/x".into())]);
        assert_eq!(
            keep.environment(all.clone()),
            vars(&[("GH_TOKEN", "t"), ("LC_ALL", "C"), ("EDITOR", "vi"), ("HOME", "/x")])
        );
        let none = ShellEnvPolicy::new(Inherit::None, None, vec![("PATH".into(), "/bin".into())]);
        assert_eq!(none.environment(all), vars(&[("PATH", "/bin")]));
    }

    #[test]
    fn the_analysis_environment_is_read_from_the_command_environment() {
        let shell = ShellEnvPolicy::analysis_env(&vars(&[("HOME", "relative"), ("PATH", "/bin"), ("CDPATH", "")]));
        assert_eq!(shell.home, None);
        assert_eq!(shell.path.as_deref(), Some("/bin"));
        assert!(!shell.cdpath);
        let shell = ShellEnvPolicy::analysis_env(&vars(&[("HOME", "/h"), ("CDPATH", "/x")]));
        assert_eq!(shell.home.as_deref(), Some("/h"));
        assert_eq!(shell.path, None);
        assert!(shell.cdpath);
    }

    #[test]
    fn the_config_form_is_typed_and_strict() {
        let policy: ShellEnvPolicy = serde_json::from_value(serde_json::json!({
            "inherit": "none", "exclude": [], "set": {"B": "2", "A": "1"}
        }))
        .unwrap();
        assert_eq!(
            policy.set,
            [("B".to_string(), "2".to_string()), ("A".to_string(), "1".to_string())]
        );
        assert!(serde_json::from_value::<ShellEnvPolicy>(serde_json::json!({"inherits": "all"})).is_err());
        assert!(serde_json::from_value::<ShellEnvPolicy>(serde_json::json!({"inherit": "some"})).is_err());
        assert!(serde_json::from_value::<ShellEnvPolicy>(serde_json::json!({"set": {"A": 1}})).is_err());
    }
}
