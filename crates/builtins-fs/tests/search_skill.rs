//! glob and grep (spec §5.6, §5.7) and skill (§8.1).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::json;
use support::{Project, call};
use toolgate_builtins_fs::{glob_tool, grep_tool, skill_tool};

fn touch_older(project: &Project, path: &str, seconds_ago: u64) {
    let time = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds_ago);
    std::fs::File::options()
        .write(true)
        .open(project.dir.path().join(path))
        .unwrap()
        .set_modified(time)
        .unwrap();
}

#[tokio::test]
async fn glob_finds_newest_first_and_respects_gitignore() {
    let project = Project::new();
    std::fs::create_dir(project.dir.path().join(".git")).unwrap();
    project.write(".gitignore", "target/\n");
    project.write("src/a.rs", "");
    project.write("src/deep/b.rs", "");
    project.write("target/c.rs", "");
    project.write(".hidden/d.rs", "");
    project.write("README.md", "");
    touch_older(&project, "src/a.rs", 100);
    let text = call(&glob_tool(project.services()), json!({"pattern": "*.rs"}))
        .await
        .unwrap();
    let root = project.root();
    assert_eq!(
        text,
        format!(
            "{}\n{}",
            root.join("src/deep/b.rs").display(),
            root.join("src/a.rs").display()
        )
    );
    let none = call(&glob_tool(project.services()), json!({"pattern": "*.go"}))
        .await
        .unwrap();
    assert_eq!(none, "No files found");
    let asked = project.permissions.requests();
    assert_eq!(
        (asked[0].action.as_str(), asked[0].resources.clone()),
        ("glob", vec!["*.rs".to_string()])
    );
}

#[tokio::test]
async fn glob_limit_and_subdirectory() {
    let project = Project::new();
    for n in 0..120 {
        project.write(&format!("many/f{n}.txt"), "");
    }
    let text = call(
        &glob_tool(project.services()),
        json!({"pattern": "*.txt", "path": "many"}),
    )
    .await
    .unwrap();
    assert_eq!(text.lines().count(), 102);
    assert!(text.ends_with("(Results are truncated. Consider using a more specific path or pattern.)"));
    let text = call(&glob_tool(project.services()), json!({"pattern": "*.txt", "limit": 5}))
        .await
        .unwrap();
    assert_eq!(text.lines().count(), 7);
}

#[tokio::test]
async fn grep_groups_by_file_with_line_numbers() {
    let project = Project::new();
    project.write("src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    project.write("src/b.py", "def alpha():\n    pass\n");
    project.write("notes.txt", "nothing here\n");
    touch_older(&project, "src/b.py", 100);
    let grep = grep_tool(project.services());
    let text = call(&grep, json!({"pattern": "alpha"})).await.unwrap();
    let root = project.root();
    assert_eq!(
        text,
        format!(
            "Found 2 matches\n{}:\n  Line 1: fn alpha() {{}}\n\n{}:\n  Line 1: def alpha():",
            root.join("src/a.rs").display(),
            root.join("src/b.py").display()
        )
    );
    let only_rs = call(&grep, json!({"pattern": "alpha", "include": "*.rs"}))
        .await
        .unwrap();
    assert!(only_rs.starts_with("Found 1 matches"), "{only_rs}");
    let one_file = call(&grep, json!({"pattern": "fn \\w+", "path": "src/a.rs"}))
        .await
        .unwrap();
    assert!(one_file.starts_with("Found 2 matches"), "{one_file}");
    assert_eq!(call(&grep, json!({"pattern": "zzz"})).await.unwrap(), "No files found");
    assert_eq!(
        call(&grep, json!({"pattern": "x", "path": "missing"}))
            .await
            .unwrap_err(),
        "Search path not found: missing"
    );
    assert!(
        call(&grep, json!({"pattern": "("}))
            .await
            .unwrap_err()
            .starts_with("Invalid regular expression")
    );
}

#[tokio::test]
async fn grep_limit_and_binary_files() {
    let project = Project::new();
    project.write("lots.txt", &"hit\n".repeat(150));
    std::fs::write(project.dir.path().join("bin.dat"), b"hit\x00hit").unwrap();
    let text = call(&grep_tool(project.services()), json!({"pattern": "hit"}))
        .await
        .unwrap();
    assert!(
        text.starts_with("Found 150 matches"),
        "binary files are skipped: {}",
        &text[..40]
    );
    assert_eq!(text.matches("  Line ").count(), 100);
    assert!(text.ends_with("(Results are truncated. Consider using a more specific path or pattern.)"));
}

#[tokio::test]
async fn skill_loads_instructions_and_lists_files() {
    let project = Project::new();
    project.write(
        ".toolgate/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release\n---\n\n# Steps\nTag it.\n",
    );
    project.write(".toolgate/skills/release/scripts/tag.sh", "git tag\n");
    project.write(".claude/skills/other/SKILL.md", "No front matter.\n");
    let dirs = toolgate_builtins_fs::skill::skill_dirs(&project.root(), None);
    let skills = toolgate_builtins_fs::skill::discover(&dirs);
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["release", "other"]);
    let tool = skill_tool(project.services(), dirs);
    assert!(
        tool.definition("skill")
            .description
            .contains("- release: Cut a release")
    );
    let text = call(&tool, json!({"name": "release"})).await.unwrap();
    let base = project.root().join(".toolgate/skills/release");
    assert_eq!(
        text,
        format!(
            "<skill_content name=\"release\">\n# Skill: release\n\n# Steps\nTag it.\n\nBase directory for this skill: file://{}\nRelative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\nNote: file list is sampled.\n\n<skill_files>\n<file>{}</file>\n</skill_files>\n</skill_content>",
            base.display(),
            base.join("scripts/tag.sh").display()
        )
    );
    assert_eq!(
        call(&tool, json!({"name": "nope"})).await.unwrap_err(),
        "Unable to load skill nope"
    );
    let asked = project.permissions.requests();
    assert_eq!(
        (
            asked[0].action.as_str(),
            asked[0].resources.clone(),
            asked[0].save.clone()
        ),
        ("skill", vec!["release".to_string()], vec!["release".to_string()])
    );
}
