//! The bounded preview: head and tail of a text within a line and a byte budget.
//!
//! Nothing here copies the whole text: head and tail are found by scanning from each
//! end, so previewing 100 MiB costs one pass to count lines and a few small copies.

use std::borrow::Cow;
use std::path::Path;

/// Lines as `split("\n").length` counts them: `"a\nb"` and `"a\n"` both have 2.
pub(crate) fn line_count(text: &str) -> usize {
    // memchr's counting iterator is vectorised: the one full pass over a large output.
    memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_boundary(text: &str, mut index: usize) -> usize {
    while index < text.len() && !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// The first `n` lines of `text` (without the newline that ends the last of them).
fn first_lines(text: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match text.match_indices('\n').nth(n - 1) {
        Some((index, _)) => &text[..index],
        None => text,
    }
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match text.rmatch_indices('\n').nth(n - 1) {
        Some((index, _)) => &text[index + 1..],
        None => text,
    }
}

/// A text that is either one slice or two slices joined by `\n`, without building it.
struct Sampled<'a> {
    head: &'a str,
    tail: Option<&'a str>,
}

impl<'a> Sampled<'a> {
    fn len(&self) -> usize {
        self.head.len() + self.tail.map_or(0, |tail| tail.len() + 1)
    }

    /// The longest prefix within `budget` bytes, cut on a character boundary.
    fn prefix(&self, budget: usize) -> Cow<'a, str> {
        match self.tail {
            Some(tail) if budget > self.head.len() => {
                let rest = budget - self.head.len() - 1;
                Cow::Owned(format!("{}\n{}", self.head, &tail[..floor_boundary(tail, rest)]))
            }
            _ => Cow::Borrowed(&self.head[..floor_boundary(self.head, budget)]),
        }
    }

    /// The longest suffix within `budget` bytes, cut on a character boundary.
    fn suffix(&self, budget: usize) -> Cow<'a, str> {
        let Some(tail) = self.tail else {
            let start = ceil_boundary(self.head, self.head.len().saturating_sub(budget));
            return Cow::Borrowed(&self.head[start..]);
        };
        if budget <= tail.len() {
            let start = ceil_boundary(tail, tail.len() - budget);
            return Cow::Borrowed(&tail[start..]);
        }
        let rest = budget - tail.len() - 1;
        let start = ceil_boundary(self.head, self.head.len().saturating_sub(rest));
        Cow::Owned(format!("{}\n{}", &self.head[start..], tail))
    }
}

/// Head and tail of `text` within `lines` lines and `bytes` bytes (spec §3.4 step 3).
///
/// `total_lines` is `line_count(text)`, passed in so a large text is scanned only once.
fn preview(text: &str, total_lines: usize, lines: usize, bytes: usize) -> (Cow<'_, str>, Cow<'_, str>) {
    let head_lines = lines.div_ceil(2);
    let tail_lines = lines / 2;
    let line_truncated = total_lines > lines;
    let sampled = if line_truncated {
        Sampled {
            head: first_lines(text, head_lines),
            tail: (tail_lines > 0).then(|| last_lines(text, tail_lines)),
        }
    } else {
        Sampled { head: text, tail: None }
    };
    if sampled.len() <= bytes {
        return (Cow::Borrowed(sampled.head), Cow::Borrowed(sampled.tail.unwrap_or("")));
    }
    (sampled.prefix(bytes.div_ceil(2)), sampled.suffix(bytes / 2))
}

fn assemble(head: &str, marker: &str, tail: &str) -> String {
    if tail.is_empty() {
        format!("{head}\n\n{marker}")
    } else {
        format!("{head}\n\n{marker}\n\n{tail}")
    }
}

fn marker_only(marker: &str, lines: usize, bytes: usize) -> String {
    let cut = &marker[..floor_boundary(marker, bytes)];
    first_lines(cut, lines).to_string()
}

/// The exact preview of spec §3.4: at most `max_lines` lines and `max_bytes` bytes,
/// head and tail of `text` around `marker`, never splitting a character.
///
/// ```
/// let text = (1..=10).map(|n| n.to_string()).collect::<Vec<_>>().join("\n");
/// let out = toolgate_output_store::bounded_preview(&text, "[cut]", 8, 1000);
/// assert_eq!(out, "1\n2\n\n[cut]\n\n9\n10");
/// ```
pub fn bounded_preview(text: &str, marker: &str, max_lines: usize, max_bytes: usize) -> String {
    if max_lines <= 4 || max_bytes <= marker.len() + 4 {
        return marker_only(marker, max_lines, max_bytes);
    }
    let (head, tail) = preview(text, line_count(text), max_lines - 4, max_bytes - marker.len() - 4);
    assemble(&head, marker, &tail)
}

/// A byte count as people read it: `812 B`, `50 KB`, `1.2 MB`.
fn human(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value >= 10.0 {
        format!("{} {}", value.round() as u64, UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn marker(shown: (usize, usize), total: (usize, usize), path: &Path) -> String {
    format!(
        "... output truncated (showed {} of {} lines, {} of {}); full content saved to {}; read it with offset/limit or grep it ...",
        shown.0,
        total.0,
        human(shown.1),
        human(total.1),
        path.display()
    )
}

/// Room left for the final marker's numbers, which can be wider than the estimate's
/// (`999 B` vs `1.0 KB`).
const MARKER_SLACK: usize = 16;

/// The preview of `text` with our marker, which says how much was shown of how much and
/// where the rest is. Within `limits` like [`bounded_preview`].
pub(crate) fn with_marker(text: &str, path: &Path, limits: crate::Limits) -> String {
    let total = (line_count(text), text.len());
    let estimate = marker(total, total, path).len() + MARKER_SLACK;
    if limits.max_lines <= 4 || limits.max_bytes <= estimate + 4 {
        return marker_only(&marker((0, 0), total, path), limits.max_lines, limits.max_bytes);
    }
    let (head, tail) = preview(text, total.0, limits.max_lines - 4, limits.max_bytes - estimate - 4);
    let shown_lines = line_count(&head) + if tail.is_empty() { 0 } else { line_count(&tail) };
    let final_marker = marker((shown_lines, head.len() + tail.len()), total, path);
    assemble(&head, &final_marker, &tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_read_naturally() {
        assert_eq!(human(812), "812 B");
        assert_eq!(human(51_200), "50 KB");
        assert_eq!(human(1_258_291), "1.2 MB");
    }

    #[test]
    fn sampled_prefix_and_suffix_cross_the_join() {
        let sampled = Sampled {
            head: "ab",
            tail: Some("cd"),
        };
        assert_eq!(sampled.prefix(4), "ab\nc");
        assert_eq!(sampled.suffix(4), "b\ncd");
        assert_eq!(sampled.prefix(1), "a");
        assert_eq!(sampled.suffix(1), "d");
    }
}
