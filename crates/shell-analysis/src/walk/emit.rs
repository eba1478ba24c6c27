//! From a command and its program's verdict to the parts, paths and nested commands it
//! reports: every spelling a rule may match, and the "always" pattern.

use std::path::PathBuf;

use toolgate_core::{HoleClass, Resource};

use super::{Outcome, State, Walker};
use crate::analysis::Part;
use crate::arg::{Access, Arg, Cmd};
use crate::expand::{Field, Seg};
use crate::path::is_system_dir;
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
    /// project, so `external_directory` is asked for that directory (`~/.npm/*`; the whole
    /// home only while `~/.npm` does not exist yet, since creating it writes there). It is
    /// reported as a directory the command works in, not as `edit` of the names inside:
    /// those are the tool's own (hashes, dated logs), and a file-name rule such as
    /// `*.env: deny` says nothing about them. Without a known home the directory may be
    /// anywhere: asked, never saved.
    pub(super) fn home_writes(&mut self, name: &str, args: &[Arg], verdict: &mut Verdict) {
        let base = name.rsplit('/').next().unwrap_or(name);
        if name.contains('/') && !is_system_dir(name) {
            return;
        }
        for dir in programs::home_writes(base, args) {
            if self.home_done.contains(dir) {
                continue;
            }
            self.home_done.push(*dir);
            let arg = match self.env.home.clone() {
                Some(home) => {
                    // A missing directory is created in the nearest one that exists: that
                    // one is written to (`mkdir ~/.npm` writes `~`).
                    let home = PathBuf::from(home);
                    let mut target = home.join(dir);
                    while !self.fs.exists(&target)
                        && target != home
                        && let Some(parent) = target.parent()
                    {
                        target = parent.to_path_buf();
                    }
                    Arg::text(target.to_string_lossy())
                }
                None => Arg {
                    field: Field::unknown(format!("$HOME/{dir}")),
                    vanish: false,
                    split: true,
                },
            };
            verdict.effects.push(programs::Effect {
                arg,
                access: Access::Dir,
                tree: false,
                under: None,
            });
        }
    }

    pub(super) fn apply(&mut self, cmd: Cmd, state: State, verdict: Verdict) -> Outcome {
        if let Some(reason) = verdict.refuse {
            self.refuse(reason);
            return Outcome::same(state);
        }
        if let Some(reason) = &verdict.opaque {
            self.opaque_part(&cmd, reason);
        } else {
            self.emit(&cmd, verdict.code.clone());
            for form in &verdict.forms {
                let args: Vec<Arg> = form.iter().filter_map(|i| cmd.args.get(*i).cloned()).collect();
                let alt = Cmd {
                    args,
                    raw: None,
                    env: cmd.env.clone(),
                    chdir: cmd.chdir.clone(),
                    external: cmd.external,
                };
                self.emit(&alt, verdict.code.clone());
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
                args.push(Arg {
                    field: Field::unknown("…"),
                    vanish: true,
                    split: true,
                });
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

    /// Emits the parts of a command: its words (every way its vanishing words may go), its
    /// source text, its name without a path. A part already emitted (same display) is not
    /// built again: the first one stands.
    pub(super) fn emit(&mut self, cmd: &Cmd, code: Option<String>) {
        let vanishing = Self::vanishing(&cmd.args);
        // Built where the last command's display was (a repeated command, the common case,
        // then allocates nothing here).
        let mut display = std::mem::take(&mut self.display);
        display.clear();
        Self::push_words_display(&cmd.args, &[], &mut display);
        self.emit_parts(cmd, code, &vanishing, &display);
        self.display = display;
    }

    pub(super) fn emit_parts(&mut self, cmd: &Cmd, code: Option<String>, vanishing: &[usize], display: &str) {
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
