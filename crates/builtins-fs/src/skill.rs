//! `skill` (spec §8.1): load a skill's instructions (`SKILL.md`) by name.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, PermissionRequest, Tool, ToolFailure};

use crate::common::{Services, blocking};

/// A skill found on disk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Skill {
    /// Its name (front matter `name`, else the directory name).
    pub(crate) name: String,
    /// What it is for (front matter `description`).
    pub(crate) description: String,
    /// Its `SKILL.md`.
    pub(crate) file: PathBuf,
}

/// Where skills live, in order of precedence (first found wins for a name).
pub fn skill_dirs(project: &Path, global_config: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![
        project.join(".toolgate/skills"),
        project.join(".opencode/skill"),
        project.join(".opencode/skills"),
        project.join(".claude/skills"),
    ];
    if let Some(global) = global_config {
        dirs.push(global.join("skills"));
    }
    dirs
}

fn front_matter(text: &str) -> (Option<String>, Option<String>, &str) {
    let Some(rest) = text.strip_prefix("---") else {
        return (None, None, text);
    };
    let Some((head, body)) = rest.split_once("\n---") else {
        return (None, None, text);
    };
    let field = |key: &str| {
        head.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| v.trim().trim_matches(['"', '\'']).to_string())
        })
    };
    let body = body.split_once('\n').map_or("", |(_, b)| b);
    (field("name"), field("description"), body)
}

/// Every skill under `dirs`: `<dir>/<skill>/SKILL.md`.
pub(crate) fn discover(dirs: &[PathBuf]) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path().join("SKILL.md"))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        for file in found {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let (name, description, _) = front_matter(&text);
            let name = name.unwrap_or_else(|| {
                file.parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            if !skills.iter().any(|s| s.name == name) {
                skills.push(Skill {
                    name,
                    description: description.unwrap_or_default(),
                    file,
                });
            }
        }
    }
    skills
}

/// The input of `skill`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub(crate) struct SkillInput {
    /// The skill's name.
    pub(crate) name: String,
}

/// The output of `skill`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SkillOutput {
    /// The skill's name.
    pub(crate) name: String,
    /// Its directory.
    pub(crate) directory: String,
    /// The text the model reads.
    pub(crate) output: String,
    /// Always false.
    pub(crate) truncated: bool,
}

fn file_url(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let encoded: String = text
        .chars()
        .map(|c| match c {
            ' ' => "%20".to_string(),
            '#' => "%23".to_string(),
            '?' => "%3F".to_string(),
            '%' => "%25".to_string(),
            other => other.to_string(),
        })
        .collect();
    format!("file://{encoded}")
}

/// The model text of spec §8.1.
fn render(skill: &Skill) -> Result<(String, String), std::io::Error> {
    let text = std::fs::read_to_string(&skill.file)?;
    let (_, _, body) = front_matter(&text);
    let directory = skill.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut lines = vec![
        format!("<skill_content name=\"{}\">", skill.name),
        format!("# Skill: {}", skill.name),
        String::new(),
        body.trim().to_string(),
        String::new(),
        format!("Base directory for this skill: {}", file_url(&directory)),
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.".to_string(),
        "Note: file list is sampled.".to_string(),
        String::new(),
        "<skill_files>".to_string(),
    ];
    let mut others = Vec::new();
    let mut stack = vec![directory.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(path),
                Ok(kind) if kind.is_file() && path != skill.file => others.push(path),
                _ => {}
            }
        }
    }
    others.sort();
    others.truncate(10);
    for file in others {
        lines.push(format!("<file>{}</file>", file.display()));
    }
    lines.push("</skill_files>".to_string());
    lines.push("</skill_content>".to_string());
    Ok((lines.join("\n"), directory.to_string_lossy().into_owned()))
}

/// Builds `skill`, searching `dirs` for skills.
pub fn skill_tool(services: Services, dirs: Vec<PathBuf>) -> Tool {
    let available = discover(&dirs);
    let mut description = String::from("Load a skill: specialised instructions (and files) for a kind of task.");
    if available.is_empty() {
        description.push_str(" No skills are installed.");
    } else {
        description.push_str(" Available skills:");
        for skill in &available {
            description.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
    }
    Tool::builder(description, move |input: SkillInput, ctx: Context| {
        let services = services.clone();
        let dirs = dirs.clone();
        async move {
            let failure = || ToolFailure::new(format!("Unable to load skill {}", input.name));
            let request = PermissionRequest::new("skill")
                .resources([input.name.clone()])
                .save([input.name.clone()]);
            services
                .permissions
                .assert(&ctx, request)
                .await
                .map_err(|r| ToolFailure::from(r).with_message(failure().message().to_string()))?;
            let name = input.name.clone();
            let found = blocking(move || {
                let skill = discover(&dirs).into_iter().find(|s| s.name == name)?;
                render(&skill)
                    .ok()
                    .map(|(output, directory)| (skill.name, output, directory))
            })
            .await?;
            let (name, output, directory) = found.ok_or_else(failure)?;
            Ok(SkillOutput {
                name,
                directory,
                output,
                truncated: false,
            })
        }
    })
    .project(|output: &SkillOutput| vec![Content::text(output.output.clone())])
    .title("Load a skill")
    .annotations(Annotations::read_only())
    .build()
}
