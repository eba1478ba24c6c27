//! `cargo xtask consumers`: each library crate's README, used as a consumer would.
//!
//! For every library crate of the workspace, a cargo project outside the workspace gets
//! the README's `[dependencies]` block as its only dependencies (the crate's own line, and
//! any `toolgate-*` line, pointed at the workspace by path instead of git) and the
//! README's Rust code blocks as its `main.rs`; it is built offline and run. The doc tests
//! (`#[doc = include_str!("../README.md")]`) prove the examples compile with the whole
//! workspace's dependencies at hand; this proves the README's dependency list is enough.
//!
//! Cost: the projects are members of one scratch workspace with the workspace's lock file
//! (the same versions) and profiles (the same artifacts), built in the workspace's target
//! directory by one `cargo build` of them all, then each run. Each project can name only
//! the crates its README lists; their features are unified across the projects, as in
//! any workspace. `--separately` builds each project on its own instead, so that no
//! project's features help another's: measured on 2 cores, after the workspace's own
//! build, the one build costs about 25 s and the separate builds about 2 min (each
//! README's own feature set of tokio compiles tokio, hyper and rmcp again).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// One library crate as a consumer sees it.
struct Crate {
    /// The package name (`toolgate-permission`).
    name: String,
    /// Its directory (for path dependencies and its README).
    dir: PathBuf,
}

pub(crate) fn run(separately: bool) -> Result<()> {
    let root = crate::root();
    let crates = library_crates()?;
    // One scratch workspace per checkout: two checkouts' projects point at different crates.
    let checkout: String = root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let scratch = std::env::temp_dir().join(format!("toolgate-consumers{checkout}"));
    std::fs::create_dir_all(&scratch).with_context(|| scratch.display().to_string())?;
    let mut members = Vec::new();
    for krate in &crates {
        let readme = std::fs::read_to_string(krate.dir.join("README.md"))
            .with_context(|| format!("{}: no README.md", krate.name))?;
        let project =
            consumer(&readme, krate, &crates).with_context(|| format!("{}/README.md", krate.dir.display()))?;
        let member = format!("consumer-{}", krate.name);
        let dir = scratch.join(&member);
        write_if_changed(&dir.join("Cargo.toml"), &project.manifest(&member))?;
        write_if_changed(&dir.join("src/main.rs"), &project.main)?;
        members.push(member);
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).context("the workspace's Cargo.toml")?;
    let workspace = format!(
        "# Written by `cargo xtask consumers`: one project per library crate README.\n[workspace]\nresolver = \"3\"\nmembers = [{}]\n\n{}",
        members.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>().join(", "),
        profiles(&manifest)
    );
    write_if_changed(&scratch.join("Cargo.toml"), &workspace)?;
    // The workspace's versions, so that its compiled dependencies are used as they are.
    std::fs::copy(root.join("Cargo.lock"), scratch.join("Cargo.lock")).context("copying Cargo.lock")?;
    let target = crate::target_dir();
    let cargo = |args: &[&str]| {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command
            .args(args)
            .current_dir(&scratch)
            .env("CARGO_TARGET_DIR", &target);
        command
    };
    if !separately {
        let start = Instant::now();
        let mut build = cargo(&["build", "--offline", "--quiet"]);
        for member in &members {
            build.args(["-p", member]);
        }
        let status = build.status().context("could not run cargo build")?;
        println!(
            "consumers: built {} projects ({:.1}s)",
            members.len(),
            start.elapsed().as_secs_f64()
        );
        if !status.success() {
            bail!(
                "a README example does not build with its README's dependencies (projects in {})",
                scratch.display()
            );
        }
    }
    let mut failed = Vec::new();
    for (krate, member) in crates.iter().zip(&members) {
        let start = Instant::now();
        let status = if separately {
            cargo(&["run", "--offline", "--quiet", "-p", member]).status()
        } else {
            Command::new(target.join("debug").join(member))
                .current_dir(&scratch)
                .status()
        }
        .with_context(|| format!("could not run {member}"))?;
        let verdict = if status.success() { "ok" } else { "FAILED" };
        println!(
            "consumers: {:<28} {verdict} ({:.1}s)",
            krate.name,
            start.elapsed().as_secs_f64()
        );
        if !status.success() {
            failed.push(krate.name.clone());
        }
    }
    if !failed.is_empty() {
        bail!(
            "the README of {} is not enough to use the crate (projects in {})",
            failed.join(", "),
            scratch.display()
        );
    }
    Ok(())
}

/// The workspace's library packages (not the test and task packages).
fn library_crates() -> Result<Vec<Crate>> {
    let output = crate::cargo(&["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .output()
        .context("could not run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).context("cargo metadata output")?;
    let mut crates = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(name) = package["name"].as_str() else { continue };
        let publishable = package["publish"]
            .as_array()
            .is_none_or(|registries| !registries.is_empty());
        let library = package["targets"].as_array().into_iter().flatten().any(|target| {
            target["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "lib"))
        });
        let Some(manifest) = package["manifest_path"].as_str() else {
            continue;
        };
        if publishable && library {
            let dir = Path::new(manifest).parent().unwrap_or(Path::new(".")).to_path_buf();
            crates.push(Crate {
                name: name.to_string(),
                dir,
            });
        }
    }
    crates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(crates)
}

/// A consumer project: its dependency lines and its `main.rs`.
struct Project {
    dependencies: Vec<String>,
    main: String,
}

impl Project {
    fn manifest(&self, name: &str) -> String {
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[dependencies]\n{}\n",
            self.dependencies.join("\n")
        )
    }
}

/// The project a README describes: the `[dependencies]` lines of its `toml` blocks (our
/// crates by path) and its `rust` blocks, each a function `main` calls in turn.
fn consumer(readme: &str, krate: &Crate, crates: &[Crate]) -> Result<Project> {
    let mut dependencies = Vec::new();
    let mut examples = Vec::new();
    for (info, code) in code_blocks(readme) {
        let language = info.split([',', ' ']).next().unwrap_or("");
        if language == "toml" {
            dependencies.extend(dependency_lines(&code, crates)?);
        } else if language == "rust" && !info.contains("ignore") && !info.contains("compile_fail") {
            examples.push(code);
        }
    }
    if !dependencies
        .iter()
        .any(|line| line.starts_with(&format!("{} ", krate.name)))
    {
        bail!(
            "no `{} = …` line in a ```toml block: say how to depend on the crate",
            krate.name
        );
    }
    if examples.is_empty() {
        bail!("no ```rust example: show the crate's main use");
    }
    Ok(Project {
        dependencies,
        main: main_rs(&examples),
    })
}

/// Fenced code blocks: (info string, code).
fn code_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => open = Some((line.trim_start()[3..].trim().to_string(), String::new())),
            (Some(_), true) => blocks.extend(open.take()),
            (Some((_, code)), false) => {
                code.push_str(line);
                code.push('\n');
            }
            (None, false) => {}
        }
    }
    blocks
}

/// The lines of a `[dependencies]` table, with `git = "…"` of our crates replaced by the
/// path of the crate in this workspace.
fn dependency_lines(toml: &str, crates: &[Crate]) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut in_dependencies = false;
    for line in toml.lines() {
        let code = line.split(" #").next().unwrap_or("").trim();
        if code.starts_with('[') {
            in_dependencies = code == "[dependencies]";
            continue;
        }
        if !in_dependencies || code.is_empty() || code.starts_with('#') {
            continue;
        }
        let name = code.split('=').next().unwrap_or("").trim();
        let line = match crates.iter().find(|krate| krate.name == name) {
            Some(krate) => {
                let Some(at) = code.find("git = \"") else {
                    bail!("`{code}`: a toolgate crate is named with `{{ git = \"…\" }}`");
                };
                let end = code[at + 7..]
                    .find('"')
                    .map(|end| at + 7 + end + 1)
                    .context("an unterminated git URL")?;
                format!(
                    "{}path = {:?}{}",
                    &code[..at],
                    krate.dir.display().to_string(),
                    &code[end..]
                )
            }
            None => code.to_string(),
        };
        lines.push(line);
    }
    Ok(lines)
}

/// `main.rs`: each example as rustdoc would run it (hidden `# ` lines kept, wrapped in a
/// function unless it has its own `main`), called one after the other.
fn main_rs(examples: &[String]) -> String {
    let mut text = String::from(
        "//! Written by `cargo xtask consumers` from the crate's README.\n#![allow(unused, clippy::all)]\n\n\
         /// What an example's `main` may return.\ntrait Finish {\n    fn finish(self);\n}\n\
         impl Finish for () {\n    fn finish(self) {}\n}\n\
         impl<E: std::fmt::Debug> Finish for Result<(), E> {\n    fn finish(self) {\n        if let Err(error) = self {\n            panic!(\"the example failed: {error:?}\");\n        }\n    }\n}\n\n",
    );
    let mut calls = String::new();
    for (index, example) in examples.iter().enumerate() {
        let code: String = example
            .lines()
            .map(|line| match line.trim_start().strip_prefix("# ") {
                Some(rest) => rest.to_string(),
                None if line.trim() == "#" => String::new(),
                None => line.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let name = format!("example_{}", index + 1);
        if code.contains("fn main()") {
            // Its own program: its `main` becomes one of ours.
            text.push_str(&format!(
                "mod {name} {{\n    use super::*;\n{}\n}}\n\n",
                code.replace("fn main()", "pub(crate) fn main()")
            ));
            calls.push_str(&format!("    Finish::finish({name}::main());\n"));
        } else if code
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .is_some_and(|last| last.trim_start().starts_with("Ok"))
        {
            // Ends in `Ok::<(), E>(())`, as rustdoc allows for an example that uses `?`.
            text.push_str(&format!(
                "fn {name}() -> Result<(), impl std::fmt::Debug> {{\n{code}\n}}\n\n"
            ));
            calls.push_str(&format!("    Finish::finish({name}());\n"));
        } else {
            text.push_str(&format!("fn {name}() {{\n{code}\n}}\n\n"));
            calls.push_str(&format!("    {name}();\n"));
        }
    }
    text.push_str(&format!("fn main() {{\n{calls}}}\n"));
    text
}

/// The `[profile…]` sections of the workspace manifest, verbatim.
fn profiles(manifest: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            keep = line.starts_with("[profile");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    std::fs::write(path, text).with_context(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn crates() -> Vec<Crate> {
        vec![Crate {
            name: "toolgate-core".into(),
            dir: PathBuf::from("/w/crates/tool-core"),
        }]
    }

    #[test]
    fn our_crates_are_pointed_at_the_workspace_and_the_rest_kept_as_written() {
        let toml = "[dependencies]\ntoolgate-core = { git = \"https://github.com/toolgate/toolgate\", default-features = false }   # or path\ntokio = { version = \"1\", features = [\"rt\"] }\n\n[dev-dependencies]\nnope = \"1\"\n";
        assert_eq!(
            dependency_lines(toml, &crates()).unwrap(),
            [
                "toolgate-core = { path = \"/w/crates/tool-core\", default-features = false }",
                "tokio = { version = \"1\", features = [\"rt\"] }"
            ]
        );
        assert!(dependency_lines("[dependencies]\ntoolgate-core = \"0.1\"\n", &crates()).is_err());
    }

    #[test]
    fn a_readme_without_its_own_dependency_line_or_an_example_is_refused() {
        let krate = &crates()[0];
        let no_line = "```toml\n[dependencies]\nserde = \"1\"\n```\n```rust\nlet x = 1;\n```\n";
        assert!(consumer(no_line, krate, &crates()).is_err());
        let no_example = "```toml\n[dependencies]\ntoolgate-core = { git = \"x\" }\n```\n```sh\nls\n```\n";
        assert!(consumer(no_example, krate, &crates()).is_err());
    }

    #[test]
    fn examples_keep_hidden_lines_and_a_main_of_their_own() {
        let main = main_rs(&[
            "# let x = 1;\nassert_eq!(x, 1);\n".into(),
            "fn main() -> Result<(), String> { Ok(()) }\n".into(),
            "let n: u8 = \"1\".parse()?;\n# Ok::<(), std::num::ParseIntError>(())\n".into(),
        ]);
        assert!(
            main.contains("fn example_1() {\nlet x = 1;\nassert_eq!(x, 1);\n}"),
            "{main}"
        );
        assert!(
            main.contains("mod example_2 {") && main.contains("pub(crate) fn main() -> Result<(), String>"),
            "{main}"
        );
        assert!(
            main.contains("fn example_3() -> Result<(), impl std::fmt::Debug> {"),
            "{main}"
        );
        assert!(
            main.contains(
                "    example_1();\n    Finish::finish(example_2::main());\n    Finish::finish(example_3());\n"
            ),
            "{main}"
        );
    }
}
