//! glob and grep (spec §5.6, §5.7) and skill (§8.1).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

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
    project.write(".git/HEAD", "ref: refs/heads/main\n");
    project.write(".git/hooks/pre-commit.rs", "");
    project.write(".gitignore", "target/\n");
    project.write("src/a.rs", "");
    project.write("src/deep/b.rs", "");
    project.write("target/c.rs", "");
    project.write(".hidden/d.rs", "");
    project.write("README.md", "");
    touch_older(&project, "src/a.rs", 100);
    touch_older(&project, ".hidden/d.rs", 50);
    let text = call(&glob_tool(project.services()), json!({"pattern": "*.rs"}))
        .await
        .unwrap();
    let root = project.root();
    assert_eq!(
        text,
        format!(
            "{}\n{}\n{}",
            root.join("src/deep/b.rs").display(),
            root.join(".hidden/d.rs").display(),
            root.join("src/a.rs").display()
        ),
        "hidden files are listed; ignored ones and .git never"
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
async fn glob_everything_never_lists_version_control_or_ignored_files() {
    let project = Project::new();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(project.dir.path())
        .status()
        .unwrap();
    assert!(project.dir.path().join(".git/HEAD").exists(), "a real repository");
    for vcs in [".hg/store/data", ".svn/entries", ".jj/repo/store", "sub/.git"] {
        project.write(vcs, "");
    }
    project.write(".gitignore", "build/\n*.log\n");
    project.write("build/out.o", "");
    project.write("debug.log", "");
    project.write("src/main.rs", "");
    project.write(".github/workflows/ci.yml", "");
    let root = project.root();
    let glob = glob_tool(project.services());
    for pattern in ["**/*", "*", "**"] {
        let text = call(&glob, json!({"pattern": pattern})).await.unwrap();
        let mut listed: Vec<&str> = text.lines().collect();
        listed.sort();
        let mut expected = [
            root.join(".github/workflows/ci.yml"),
            root.join(".gitignore"),
            root.join("src/main.rs"),
        ];
        expected.sort();
        let expected: Vec<String> = expected.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(listed, expected, "pattern {pattern}");
    }
    let error = call(&glob, json!({"pattern": "*.rs", "path": "missing"}))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        "Unable to find files matching *.rs: search path not found: missing"
    );
    let error = call(&glob, json!({"pattern": "*.rs", "path": "src/main.rs"}))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        "Unable to find files matching *.rs: src/main.rs is not a directory"
    );
    let error = call(&glob, json!({"pattern": "*.rs", "limit": 0})).await.unwrap_err();
    assert_eq!(error, "Invalid tool input: limit must be at least 1.");
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
    let dirs = toolgate_builtins_fs::skill_dirs(&project.root(), None);
    let tool = skill_tool(project.services(), dirs);
    // Both skills are listed, the front-matter one first (directories in precedence order).
    let description = tool.definition("skill").description;
    let release = description.find("- release: Cut a release").expect("release listed");
    let other = description.find("- other").expect("other listed");
    assert!(release < other, "{description}");
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

#[tokio::test]
async fn grep_searches_hidden_files_but_never_version_control_or_ignored_ones() {
    let project = Project::new();
    project.write(".git/config", "[core] needle in git\n");
    project.write(".git/objects/ab/cdef", "needle in an object\n");
    project.write(".hg/hgrc", "needle in hg\n");
    project.write(".gitignore", "dist/\n");
    project.write("dist/bundle.js", "needle in a build\n");
    project.write(".github/workflows/ci.yml", "run: needle in ci\n");
    project.write(".eslintrc", "needle in a dotfile\n");
    project.write("src/lib.rs", "// needle in source\n");
    let grep = grep_tool(project.services());
    let text = call(&grep, json!({"pattern": "needle"})).await.unwrap();
    let root = project.root();
    assert!(text.starts_with("Found 3 matches\n"), "{text}");
    for found in [".github/workflows/ci.yml", ".eslintrc", "src/lib.rs"] {
        assert!(
            text.contains(&format!("{}:", root.join(found).display())),
            "{found} missing:\n{text}"
        );
    }
    for hidden in ["in git", "object", "hg", "build"] {
        assert!(!text.contains(hidden), "{hidden} must not be searched:\n{text}");
    }
    let only_yml = call(&grep, json!({"pattern": "needle", "include": "*.yml"}))
        .await
        .unwrap();
    assert!(only_yml.starts_with("Found 1 matches\n"), "{only_yml}");
    let error = call(&grep, json!({"pattern": "needle", "limit": 0})).await.unwrap_err();
    assert_eq!(error, "Invalid tool input: limit must be at least 1.");
}

#[tokio::test]
async fn grep_counts_every_match_and_says_how_many_it_shows() {
    let project = Project::new();
    for n in 0..30 {
        project.write(&format!("f{n:02}.txt"), &"hit\n".repeat(1000));
    }
    let text = call(&grep_tool(project.services()), json!({"pattern": "hit", "limit": 25}))
        .await
        .unwrap();
    assert!(
        text.starts_with("Found 30000 matches (showing first 25)\n"),
        "{}",
        &text[..60]
    );
    assert_eq!(text.matches("  Line ").count(), 25);
    assert!(text.ends_with(support::TRUNCATED));
}

#[tokio::test]
async fn grep_shows_env_lines_only_when_reading_the_file_is_allowed() {
    use toolgate_core::Refusal;
    let refuse_env = support::Recording::new(|request| {
        if request.action == "read" && request.resources.iter().any(|r| r.contains(".env")) {
            Err(Refusal::declined())
        } else {
            Ok(())
        }
    });
    let project = Project::with(refuse_env);
    project.write(".env", "API_KEY=needle-secret\n");
    project.write("config/prod.env", "TOKEN=needle-token\n");
    project.write("app.rs", "let key = needle;\n");
    let text = call(&grep_tool(project.services()), json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert!(!text.contains("secret") && !text.contains("TOKEN"), "{text}");
    assert!(text.contains("let key = needle;"), "{text}");
    assert!(
        text.contains("(2 matching lines in 2 files are not shown: 2 whose reading needs a person's approval"),
        "{text}"
    );
    assert!(!text.contains(".env"), "withheld files are not named: {text}");
    let asked: Vec<Vec<String>> = project
        .permissions
        .requests()
        .into_iter()
        .filter(|r| r.action == "read")
        .map(|r| r.resources)
        .collect();
    // Permissions that cannot decide without asking are asked once, for the `.env`
    // files only (spec §5.2, §5.7).
    assert_eq!(
        asked,
        [vec![".env".to_string(), "config/prod.env".to_string()]],
        "read is asked once for the .env files, and only for those"
    );
    // Allowed: shown like any other file.
    let allowed = Project::new();
    allowed.write(".env", "API_KEY=needle-secret\n");
    let text = call(&grep_tool(allowed.services()), json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert!(text.contains("API_KEY=needle-secret"), "{text}");
}
