//! From a command and its program's verdict to the parts, paths and nested commands it
//! reports: every spelling a rule may match, and the "always" pattern.

use std::path::PathBuf;

use toolgate_core::{HoleClass, Resource};

use super::{Outcome, State, Walker};
use crate::analysis::{Part, PathRef, Piece};
use crate::arg::{Access, Arg, Cmd};
use crate::expand::{Field, Seg};
use crate::path::{absolute, is_system_dir, join};
use crate::programs::{self, Verdict};

impl Walker<'_> {
    /// What the program `name` (the first argument's value) does with `args`.
    pub(super) fn verdict(name: &str, args: &[Arg]) -> Verdict {
        let base = name.rsplit('/').next().unwrap_or(name);
        let system = !name.contains('/') || is_system_dir(name);
        if system {
            programs::model_for(base, args)
        } else {
            programs::unknown_program(args)
        }
    }

    /// Package managers and build tools write their caches and logs under the home
    /// directory on almost every run (`npm run build` logs to `~/.npm/_logs`): outside the
    /// project, so `external_directory` is asked for that directory (`~/.npm/*`, which the
    /// default rules allow, `toolgate_permission::PACKAGE_CACHES`). It is reported as a
    /// directory the command works in, not as `edit` of the names inside: those are the
    /// tool's own (hashes, dated logs), and a file-name rule such as `*.env: deny` says
    /// nothing about them. Without a known home the directory may be anywhere: asked,
    /// never saved.
    ///
    /// A cache that does not exist yet is asked for as itself too, not as the nearest
    /// directory that exists (which is the home on a fresh machine): creating it writes
    /// the home, but only to add the entry of that one name, which the program chooses and
    /// the line cannot; nothing else of the home is read or changed, and everything after
    /// happens inside the new directory. So the question is the one the person would be
    /// asked once it exists, and every rule that could speak about the creation decides
    /// it the same way: a rule for the home (`~/*`) also matches `~/.npm/*`, one for the
    /// cache matches it exactly. Asking for the home instead would make the question
    /// about every file there, which no one should allow, and "always" could not silence it.
    ///
    /// Returns the directories of a known home, to be reported after the command's own
    /// paths.
    pub(super) fn home_writes(&mut self, name: &str, args: &[Arg], verdict: &mut Verdict) -> Vec<PathRef> {
        let mut known = Vec::new();
        let base = name.rsplit('/').next().unwrap_or(name);
        if name.contains('/') && !is_system_dir(name) {
            return known;
        }
        for dir in programs::home_writes(base, args) {
            if self.home_done.contains(dir) {
                continue;
            }
            self.home_done.push(*dir);
            match &self.env.home {
                Some(home) => {
                    let path = PathBuf::from(home).join(dir).to_string_lossy().into_owned();
                    known.push(PathRef {
                        pieces: vec![Piece::Text(path)],
                        base: Some(String::new()),
                        tree: false,
                        created: true,
                        settled: false,
                    });
                }
                None => verdict.effects.push(programs::Effect {
                    arg: Arg {
                        field: Field::unknown(format!("$HOME/{dir}")),
                        vanish: false,
                        split: true,
                    },
                    access: Access::Dir,
                    tree: false,
                    under: None,
                }),
            }
        }
        known
    }

    pub(super) fn apply(&mut self, cmd: Cmd, state: State, verdict: Verdict) -> Outcome {
        if let Some(reason) = verdict.refuse {
            self.refuse(reason);
            return Outcome::same(state);
        }
        if let Some(reason) = &verdict.opaque {
            self.opaque_part(&cmd, reason);
        } else {
            let bare = self.bare_name_may_apply(&cmd, &state);
            self.emit_named(&cmd, verdict.code.clone(), bare);
            for form in &verdict.forms {
                let args: Vec<Arg> = form.iter().filter_map(|i| cmd.args.get(*i).cloned()).collect();
                let alt = Cmd {
                    args,
                    raw: None,
                    env: cmd.env.clone(),
                    chdir: cmd.chdir.clone(),
                    external: cmd.external,
                };
                self.emit_named(&alt, verdict.code.clone(), bare);
            }
        }
        let under = cmd.chdir.clone();
        for effect in &verdict.effects {
            let dir = effect.under.clone().or_else(|| under.clone());
            // A directory given relative to `under` is relative to it in turn.
            let dir = match (&under, &effect.under) {
                (Some(outer), Some(inner)) if !inner.starts_with("/") => {
                    let mut joined = outer.clone();
                    joined.segs.push(Seg::Lit("/".into()));
                    joined.segs.extend(inner.segs.clone());
                    Some(joined)
                }
                _ => dir,
            };
            self.file(&effect.arg, effect.access, &state, effect.tree, dir.as_ref());
        }
        for nested in verdict.nested {
            if self.stopped() {
                break;
            }
            let mut args = nested.args;
            if args.is_empty() {
                continue;
            }
            if nested.appended {
                // The words of the input: paths `find` prints when piped.rs knows them.
                args.push(self.piped.take().unwrap_or_else(|| Arg {
                    field: Field::unknown("…"),
                    vanish: true,
                    split: true,
                }));
            }
            let chdir = match (&cmd.chdir, nested.chdir) {
                (Some(outer), Some(inner)) => {
                    let mut joined = outer.clone();
                    joined.segs.push(Seg::Lit("/".into()));
                    joined.segs.extend(inner.segs);
                    Some(joined)
                }
                (outer, inner) => inner.or_else(|| outer.clone()),
            };
            let inner = Cmd {
                args,
                raw: None,
                env: nested.env,
                chdir,
                external: true,
            };
            let _ = self.run(inner, state.clone());
        }
        for script in verdict.scripts {
            if self.stopped() {
                break;
            }
            let _ = self.script(&script, state.clone(), true);
        }
        for file in verdict.script_files {
            if let Some(path) = file.literal()
                && let Some(text) = self.script_text(&path, &state)
            {
                // Read before this command counted as a program that ran.
                let _ = self.script(&text, state.clone(), true);
            }
        }
        Outcome::same(state)
    }

    // --- parts ------------------------------------------------------------------------------------

    /// The resource of a command's words, joined by one space. `absent` marks words that
    /// vanished (an unquoted expansion of nothing).
    pub(super) fn words_resource(args: &[Arg], absent: &[usize]) -> Resource {
        let mut resource = Resource::default();
        let mut first = true;
        for (index, arg) in args.iter().enumerate() {
            if absent.contains(&index) {
                continue;
            }
            if !first {
                resource.push_text(" ");
            }
            first = false;
            arg.field.push_resource(&mut resource);
        }
        resource
    }

    /// Which words may vanish: each combination is a command bash may run. More than three
    /// such words and one hole takes them all.
    pub(super) fn vanishing(args: &[Arg]) -> Vec<usize> {
        args.iter()
            .enumerate()
            .skip(1)
            .filter(|(_, arg)| arg.vanish && arg.field.value().is_none_or(|value| value.is_empty()))
            .map(|(index, _)| index)
            .collect()
    }

    /// The "always" pattern of a command, when every word of its arity prefix is known.
    pub(super) fn save_for(args: &[Arg]) -> Option<String> {
        const HOLE: &str = "\u{0}";
        // Words past the arity table's reach never change the prefix.
        let tokens: Vec<String> = args
            .iter()
            .take(crate::arity::reach())
            .map(|arg| match arg.literal() {
                Some(text) if !arg.vanish => text.into_owned(),
                _ => HOLE.to_string(),
            })
            .collect();
        let prefix = crate::arity::prefix(&tokens);
        // A literal `*` or `?` in a word would be a wildcard in the saved pattern: one
        // answer to `'*' --version` would save `* *`, every command.
        if prefix.is_empty()
            || prefix
                .iter()
                .any(|word| word.contains(HOLE) || word.contains(['*', '?']))
        {
            return None;
        }
        Some(format!("{} *", prefix.join(" ")))
    }

    /// How [`Self::words_resource`] of the same words is shown, without building it.
    pub(super) fn words_display(args: &[Arg], absent: &[usize]) -> String {
        let size = args.iter().map(|arg| arg.field.display_len() + 1).sum();
        let mut out = String::with_capacity(size);
        Self::push_words_display(args, absent, &mut out);
        out
    }

    /// Appends [`Self::words_display`] of the words to `out`.
    pub(super) fn push_words_display(args: &[Arg], absent: &[usize], out: &mut String) {
        let mut first = true;
        for (index, arg) in args.iter().enumerate() {
            if absent.contains(&index) {
                continue;
            }
            if !first {
                out.push(' ');
            }
            first = false;
            arg.field.push_display(out);
        }
    }

    /// Whether a command named by a path may also be the program its bare name finds, so
    /// that a rule written for the name (`rm *: deny` for `/bin/rm`) must apply to it too:
    /// a path into a directory of `PATH` or a system directory, outside the working
    /// directory, or anywhere the analysis cannot place (an unknown directory, one that does
    /// not exist yet, a `PATH` with a relative entry). A program of the project
    /// (`./scripts/test.sh`, `tools/run`) is not the `test.sh` or `run` of `PATH`:
    /// exec-time enforcement names it by its path too, so a rule must allow it by its path
    /// (`./scripts/*`) and no rule on the bare name (`test.sh *`) is needed.
    pub(super) fn bare_name_may_apply(&mut self, cmd: &Cmd, state: &State) -> bool {
        let Some(name) = cmd.args.first().and_then(Arg::literal) else {
            return true;
        };
        let Some((dir, _)) = name.rsplit_once('/') else {
            return true;
        };
        let path_dirs: Vec<&str> = self.env.path.as_deref().unwrap_or("").split(':').collect();
        if path_dirs.iter().any(|entry| !entry.starts_with('/')) && self.env.path.is_some() {
            return true;
        }
        let Ok(workdir) = std::fs::canonicalize(&self.env.workdir) else {
            return true;
        };
        let candidates: Vec<Option<String>> = if name.starts_with('/') {
            vec![Some(if dir.is_empty() {
                "/".to_string()
            } else {
                dir.to_string()
            })]
        } else {
            state
                .cwd
                .bases()
                .into_iter()
                .map(|base| base.map(|base| absolute(&self.env.workdir, &join(&base, dir))))
                .collect()
        };
        for candidate in candidates {
            let Some(candidate) = candidate else { return true };
            let Ok(real) = std::fs::canonicalize(&candidate) else {
                return true;
            };
            let in_path = path_dirs
                .iter()
                .any(|entry| std::fs::canonicalize(entry).is_ok_and(|entry| entry == real));
            if in_path || is_system_dir(&format!("{}/x", real.display())) || !real.starts_with(&workdir) {
                return true;
            }
        }
        false
    }

    /// Emits the parts of a command: its words (every way its vanishing words may go), its
    /// source text, its name without a path. A part already emitted (same display) is not
    /// built again: the first one stands.
    pub(super) fn emit(&mut self, cmd: &Cmd, code: Option<String>) {
        self.emit_named(cmd, code, true);
    }

    /// [`Self::emit`], with the bare-name part only when `bare` (see
    /// [`Self::bare_name_may_apply`]).
    pub(super) fn emit_named(&mut self, cmd: &Cmd, code: Option<String>, bare: bool) {
        let vanishing = Self::vanishing(&cmd.args);
        // Built where the last command's display was (a repeated command, the common case,
        // then allocates nothing here).
        let mut display = std::mem::take(&mut self.display);
        display.clear();
        Self::push_words_display(&cmd.args, &[], &mut display);
        self.emit_parts(cmd, code, &vanishing, &display, bare);
        self.display = display;
    }

    pub(super) fn emit_parts(
        &mut self,
        cmd: &Cmd,
        code: Option<String>,
        vanishing: &[usize],
        display: &str,
        bare: bool,
    ) {
        // The words as they are first, then each way the vanishing ones may go (no list is
        // built when none may).
        let none_absent: Vec<usize> = Vec::new();
        let mut vanished: Vec<Vec<usize>> = Vec::new();
        if vanishing.len() <= 3 {
            for mask in 1..(1usize << vanishing.len()) {
                vanished.push(
                    vanishing
                        .iter()
                        .enumerate()
                        .filter(|(bit, _)| mask & (1 << bit) != 0)
                        .map(|(_, index)| *index)
                        .collect(),
                );
            }
        }
        let raw = cmd.raw.filter(|raw| *raw != display);
        let plain = cmd
            .args
            .first()
            .filter(|_| bare)
            // Only a name with a `/` has a plain form: no copy of the others.
            .filter(|arg| {
                arg.field
                    .segs
                    .iter()
                    .any(|seg| matches!(seg, Seg::Lit(text) if text.contains('/')))
            })
            .and_then(Arg::literal)
            .filter(|name| name.contains('/'))
            .and_then(|name| {
                name.rsplit('/')
                    .next()
                    .filter(|plain| !plain.is_empty())
                    .map(str::to_string)
            });
        // The save pattern and the reason are only needed by a part that is new.
        let needed = vanishing.len() > 3
            || !self.out.has_plain(display)
            || raw.is_some_and(|raw| !self.out.has_plain(raw))
            || plain.is_some();
        if !needed && vanished.is_empty() {
            return;
        }
        let save = if code.is_some() || !needed {
            None
        } else {
            Self::save_for(&cmd.args)
        };
        let why = code.clone().or_else(|| {
            save.is_none()
                .then(|| "a word of its name is only known when it runs".to_string())
        });
        if vanishing.len() > 3 {
            // Too many combinations: one hole of any value stands for all the words that
            // may vanish, separators included.
            let mut resource = Resource::default();
            let mut need_space = false;
            for arg in &cmd.args {
                if arg.vanish {
                    resource.push_hole(arg.field.display(), HoleClass::Any);
                    need_space = false;
                    continue;
                }
                if need_space {
                    resource.push_text(" ");
                }
                arg.field.push_resource(&mut resource);
                need_space = true;
            }
            self.out.part(Part {
                resource,
                save: None,
                opaque: false,
                why: why.clone(),
            });
        }
        for (index, absent) in std::iter::once(&none_absent).chain(&vanished).enumerate() {
            if index == 0 && self.out.has_plain(display) {
                continue;
            }
            if index > 0 && self.out.has_plain(&Self::words_display(&cmd.args, absent)) {
                continue;
            }
            let resource = Self::words_resource(&cmd.args, absent);
            self.out.part(Part {
                resource,
                save: if index == 0 { save.clone() } else { None },
                opaque: false,
                why: if index == 0 {
                    why.clone()
                } else {
                    Some("the same command when its empty expansions vanish".into())
                },
            });
        }
        if let Some(raw) = raw
            && !self.out.has_plain(raw)
        {
            self.out.part(Part {
                resource: Resource::exact(raw),
                save: save.clone(),
                opaque: false,
                why: why.clone(),
            });
        }
        if let Some(plain) = plain {
            let mut args = cmd.args.clone();
            args[0] = Arg::text(plain);
            let resource = Self::words_resource(&args, &[]);
            let save = if code.is_some() { None } else { Self::save_for(&args) };
            self.out.part(Part {
                resource,
                save,
                opaque: false,
                why,
            });
        }
    }

    /// Emits a part that stands for anything: the command runs code the analysis cannot see.
    pub(super) fn opaque_part(&mut self, cmd: &Cmd, why: &str) {
        let display = Self::words_resource(&cmd.args, &[]).display();
        self.out.part(Part {
            resource: Resource::unknown(display),
            save: None,
            opaque: true,
            why: Some(why.to_string()),
        });
    }
}
