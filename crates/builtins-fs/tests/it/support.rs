//! Shared fixtures: a project in a temp dir and a recording permission fake.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use toolgate_builtins_fs::Services;
use toolgate_core::{BoxFuture, Context, Location, ModelResult, PermissionRequest, Permissions, Refusal, Tool};

type Decide = Box<dyn Fn(&PermissionRequest) -> Result<(), Refusal> + Send + Sync>;

/// Records every request and answers with `decide`.
pub struct Recording {
    pub asked: Mutex<Vec<PermissionRequest>>,
    decide: Decide,
}

impl Recording {
    pub fn allow() -> Arc<Recording> {
        Recording::new(|_| Ok(()))
    }

    pub fn new(decide: impl Fn(&PermissionRequest) -> Result<(), Refusal> + Send + Sync + 'static) -> Arc<Recording> {
        Arc::new(Recording {
            asked: Mutex::new(Vec::new()),
            decide: Box::new(decide),
        })
    }

    pub fn actions(&self) -> Vec<String> {
        self.asked.lock().unwrap().iter().map(|r| r.action.clone()).collect()
    }

    pub fn requests(&self) -> Vec<PermissionRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Permissions for Recording {
    fn assert<'a>(&'a self, _: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
        let answer = (self.decide)(&request);
        self.asked.lock().unwrap().push(request);
        Box::pin(async move { answer })
    }
}

pub struct Project {
    pub dir: tempfile::TempDir,
    pub outside: tempfile::TempDir,
    pub permissions: Arc<Recording>,
}

impl Project {
    pub fn new() -> Project {
        Project::with(Recording::allow())
    }

    pub fn with(permissions: Arc<Recording>) -> Project {
        Project {
            dir: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
            permissions,
        }
    }

    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    pub fn outside_root(&self) -> PathBuf {
        std::fs::canonicalize(self.outside.path()).unwrap()
    }

    pub fn services(&self) -> Services {
        Services::new(Location::new(self.dir.path()).unwrap(), self.permissions.clone())
    }

    pub fn write(&self, path: &str, content: &str) {
        let path = self.dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).unwrap()
    }

    pub fn exists(&self, path: &str) -> bool {
        self.dir.path().join(path).exists()
    }
}

/// Settles `tool` with `input`: Ok(model text) or Err(failure message).
pub async fn call(tool: &Tool, input: Value) -> Result<String, String> {
    match tool.settle(input, Context::new("ses_1", "build")).await.unwrap() {
        Ok(output) => match ModelResult::from_output(&output) {
            ModelResult::Text(text) => Ok(text),
            other => Ok(format!("{other:?}")),
        },
        Err(failure) => Err(failure.message().to_string()),
    }
}

/// The note under a cut list (glob, grep).
pub const TRUNCATED: &str = "(Results are truncated. Consider using a more specific path or pattern.)";

pub fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}
