//! What the libraries log (through `tracing`), on stderr in the binary's own style: one
//! line per event, `toolgate: <message>`, like every other message the binary prints.
//!
//! Only events of toolgate's crates are shown (at `info` and above): the libraries below
//! them (rmcp, hyper) log their internals through `tracing` too, which a user of the
//! command line never asked to see.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Installs the subscriber for the whole process; once, at start.
pub(crate) fn init() {
    // Fails only when one is already installed, which then stays.
    let _ = tracing::subscriber::set_global_default(StderrLines);
}

/// The subscriber: events only (spans are not shown), each as one line on stderr.
struct StderrLines;

impl Subscriber for StderrLines {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        shown(metadata)
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::INFO)
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        if shown(event.metadata()) {
            eprintln!("{}", line(event));
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn shown(metadata: &Metadata<'_>) -> bool {
    *metadata.level() <= Level::INFO && metadata.target().starts_with("toolgate")
}

/// `toolgate: <message> key=value…`, on one line whatever the message holds.
fn line(event: &Event<'_>) -> String {
    let mut text = Text::default();
    event.record(&mut text);
    let joined = std::iter::once(text.message)
        .chain(text.fields)
        .collect::<Vec<_>>()
        .join(" ");
    format!("toolgate: {}", joined.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// An event's message, and its other fields as `key=value`.
#[derive(Default)]
struct Text {
    message: String,
    fields: Vec<String>,
}

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.fields.push(format!("{}={value:?}", field.name()));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use super::*;

    /// Collects the lines `StderrLines` would print, for the events it would print them for.
    struct Lines(Arc<Mutex<Vec<String>>>);

    impl Subscriber for Lines {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            shown(metadata)
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            if shown(event.metadata()) {
                self.0.lock().unwrap().push(line(event));
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn our_events_become_one_line_in_the_binary_style_and_others_are_not_shown() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        tracing::subscriber::with_default(Lines(Arc::clone(&lines)), || {
            let length = 9;
            tracing::warn!("refused a {length}-byte message\n(the limit is 8 bytes)");
            tracing::warn!(target: "toolgate_server::mcp", server = "py", "elicitation failed");
            tracing::warn!(target: "rmcp::service", "internals nobody asked for");
            tracing::debug!("too fine for the command line");
        });
        assert_eq!(
            lines.lock().unwrap().as_slice(),
            [
                "toolgate: refused a 9-byte message (the limit is 8 bytes)",
                "toolgate: elicitation failed server=\"py\""
            ]
        );
    }
}
