//! Benign lines must stay allowed: a sound analysis that asks for everything would be
//! useless (the oracle checks soundness, this checks usefulness). Each line below does only
//! what its rules allow — redirections to `/dev/null`, a `cd` that ends with its subshell,
//! a lookup that runs nothing, a function defined and called in the line — so the whole
//! plan (`external_directory`, `bash`, `read`, `edit`) must come out `allow`.

use crate::soundness;
use toolgate_core::Location;
use toolgate_permission::rules_from_config;
use toolgate_permission::{Effect, Origin, Ruleset};

use Effect::Allow;

fn rules() -> Ruleset {
    let config = serde_json::json!({
        "bash": {
            "*": "ask",
            "ls *": "allow",
            "cat *": "allow",
            "echo *": "allow",
            "command -v *": "allow",
            "git status *": "allow",
            "rm *": "deny"
        },
        "read": {"*": "allow", "*.env": "deny", "secrets/*": "deny"},
        "edit": {"*": "allow", "*.env": "deny", "secrets/*": "deny"},
        "external_directory": {"*": "ask"}
    });
    Ruleset::new(rules_from_config(&config, "permission", Origin::UserConfig, None).unwrap())
}

/// The rows the oracle also runs in real bash (it reads every `("…", Allow)` row of the
/// files of this test).
const BENIGN: &[(&str, Effect)] = &[
    ("ls > /dev/null 2>&1 < /dev/null", Allow),
    ("cat /dev/null > out", Allow),
    ("(cd sub && ls); cat notes.txt", Allow),
    ("command -v rm", Allow),
    ("f() { echo hi; }; f", Allow),
    ("echo hi > out.txt", Allow),
    ("git status --short 2> /dev/null", Allow),
    ("echo $HOME", Allow),
    ("ls | cat", Allow),
];

#[test]
fn benign_lines_stay_allowed() {
    let rules = rules();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    soundness::write_fixture(&project).unwrap();
    let location = Location::new(&project).unwrap();
    let mut wrong = Vec::new();
    for (line, expected) in BENIGN {
        let plan = toolgate_shell_analysis::plan(&location, line, None, None).unwrap();
        let got = soundness::analysis_effect(&rules, None, &plan.requests);
        if got == *expected {
            continue;
        }
        let report = format!("{line:?}: expected {expected}, got {got}: {:?}", plan.requests);
        wrong.push(report);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
