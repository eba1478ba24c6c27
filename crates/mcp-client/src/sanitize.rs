//! What upstream text may carry that neither the model nor the person should get as is:
//! terminal escapes (CSI, OSC with its hyperlinks, the other `ESC` sequences), C0 and C1
//! controls but `\n` and `\t`, bidirectional controls (the "Trojan Source" reorderings)
//! and invisible characters (zero-width ones, tag characters, runs of variation
//! selectors: the ways to smuggle instructions a person cannot see).
//!
//! [`clean`] strips them from what goes to the model and counts them; [`escaped`] shows
//! them as `\u{…}` in what a person is asked about, so the person sees that they are there.

use std::borrow::Cow;

use serde_json::Value;

/// Bidirectional controls: embeddings and overrides, isolates, the marks.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Characters that show nothing: zero-width ones, word joiner and invisible operators,
/// the byte-order mark, tag characters, soft hyphen, the Hangul fillers, the combining
/// grapheme joiner, the variation selectors supplement (never used by text a person
/// reads; 256 of them encode any byte).
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200D}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}'
            | '\u{00AD}'
            | '\u{034F}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{3164}'
            | '\u{FFA0}'
    )
}

/// The variation selectors of the Basic Multilingual Plane: one after a visible
/// non-ASCII character picks its glyph (emoji or text style) and is kept; any other
/// (after ASCII, after another selector) is stripped.
fn is_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}')
}

/// A control character other than `\n` and `\t` (C0, DEL, C1).
fn is_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{0080}'..='\u{009F}')
}

/// True when `c` is never passed on.
fn is_stripped(c: char) -> bool {
    is_control(c) || is_bidi(c) || is_invisible(c)
}

/// `text` without escapes, controls, bidi controls and invisible characters, and how
/// many characters were removed (an escape sequence counts each of its characters).
pub(crate) fn clean(text: &str) -> (Cow<'_, str>, usize) {
    if !text.chars().any(|c| is_stripped(c) || is_selector(c)) {
        return (Cow::Borrowed(text), 0);
    }
    let mut out = String::with_capacity(text.len());
    let mut removed = 0usize;
    let mut chars = text.chars().peekable();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        match c {
            // ESC [ … final byte (CSI), ESC ] … BEL or ESC \ (OSC: titles, hyperlinks),
            // ESC P/X/^/_ … ESC \ (DCS, SOS, PM, APC), ESC and one character otherwise.
            '\u{1b}' | '\u{9b}' | '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => {
                removed += 1;
                let kind = if c == '\u{1b}' {
                    match chars.peek().copied() {
                        Some(next @ ('[' | ']' | 'P' | 'X' | '^' | '_')) => {
                            chars.next();
                            removed += 1;
                            next
                        }
                        Some(_) => {
                            chars.next();
                            removed += 1;
                            continue;
                        }
                        None => continue,
                    }
                } else {
                    match c {
                        '\u{9b}' => '[',
                        '\u{9d}' => ']',
                        _ => 'P',
                    }
                };
                if kind == '[' {
                    // Parameters and intermediates, then one final byte.
                    while let Some(&next) = chars.peek() {
                        chars.next();
                        removed += 1;
                        if ('\u{40}'..='\u{7e}').contains(&next) {
                            break;
                        }
                    }
                } else {
                    // A string up to BEL, ST (ESC \) or the C1 ST.
                    while let Some(next) = chars.next() {
                        removed += 1;
                        if next == '\u{7}' || next == '\u{9c}' {
                            break;
                        }
                        if next == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                                removed += 1;
                            }
                            break;
                        }
                    }
                }
            }
            c if is_stripped(c) => removed += 1,
            c if is_selector(c) => {
                let keeps = previous.is_some_and(|p| !p.is_ascii() && !is_selector(p) && !is_stripped(p));
                if keeps {
                    out.push(c);
                    previous = Some(c);
                } else {
                    removed += 1;
                }
            }
            c => {
                out.push(c);
                previous = Some(c);
            }
        }
    }
    (Cow::Owned(out), removed)
}

/// `text` with every character [`clean`] would strip written as `\u{…}`, for a person
/// to see: nothing is hidden, nothing is interpreted by their terminal.
pub(crate) fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous: Option<char> = None;
    for c in text.chars() {
        let selector_kept = is_selector(c) && previous.is_some_and(|p| !p.is_ascii() && !is_selector(p));
        if is_stripped(c) || (is_selector(c) && !selector_kept) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

/// Cleans every string in `value` in place (keys included); the number removed.
pub(crate) fn clean_value(value: &mut Value) -> usize {
    match value {
        Value::String(text) => {
            let (cleaned, removed) = clean(text);
            if removed > 0 {
                *text = cleaned.into_owned();
            }
            removed
        }
        Value::Array(items) => items.iter_mut().map(clean_value).sum(),
        Value::Object(map) => {
            let mut removed = 0;
            if map.keys().any(|key| clean(key).1 > 0) {
                let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
                for (key, item) in entries {
                    let (cleaned, count) = clean(&key);
                    removed += count;
                    map.insert(cleaned.into_owned(), item);
                }
            }
            removed + map.values_mut().map(clean_value).sum::<usize>()
        }
        _ => 0,
    }
}

/// Cleans the text a schema shows (`description` and `title`, at every depth) and
/// nothing that decides validation (a pattern, an enum value, a property name).
pub(crate) fn clean_schema(value: &mut Value) -> usize {
    match value {
        Value::Array(items) => items.iter_mut().map(clean_schema).sum(),
        Value::Object(map) => map
            .iter_mut()
            .map(|(key, item)| match (key.as_str(), &mut *item) {
                ("description" | "title", Value::String(_)) => clean_value(item),
                _ => clean_schema(item),
            })
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_bidi_and_invisibles_are_stripped_and_counted() {
        let cases: &[(&str, &str, usize)] = &[
            ("plain text\nline\ttab", "plain text\nline\ttab", 0),
            ("\u{1b}[31mred\u{1b}[0m", "red", 9),
            ("\u{1b}[2J\u{1b}[1;1Hcleared", "cleared", 10),
            // OSC 8 hyperlink, BEL- and ST-terminated.
            ("\u{1b}]8;;https://evil.example\u{7}click\u{1b}]8;;\u{7}", "click", 32),
            ("\u{1b}]8;;https://e.x\u{1b}\\go\u{1b}]8;;\u{1b}\\", "go", 25),
            ("\u{1b}]0;title\u{7}after", "after", 10),
            ("a\u{9b}31mb", "ab", 4),
            ("back\rspace\u{8}\u{7f}", "backspace", 3),
            ("ig\u{200b}nore\u{200d}\u{feff}", "ignore", 3),
            ("\u{202e}txt.exe\u{202c}", "txt.exe", 2),
            ("\u{2066}x\u{2069}\u{200e}\u{200f}\u{061c}", "x", 5),
            ("hi\u{e0049}\u{e0067}\u{e006e}", "hi", 3),
            ("x\u{e0100}\u{e0101}", "x", 2),
            ("ok\u{fe0f}\u{fe0f}", "ok", 2),
            ("\u{2764}\u{fe0f} kept", "\u{2764}\u{fe0f} kept", 0),
            ("\u{2764}\u{fe0f}\u{fe0f}", "\u{2764}\u{fe0f}", 1),
            ("dangling\u{1b}", "dangling", 1),
            ("unterminated\u{1b}]8;;x", "unterminated", 6),
            ("ünïcödé ✓ 日本", "ünïcödé ✓ 日本", 0),
        ];
        for (dirty, expected, count) in cases {
            let (cleaned, removed) = clean(dirty);
            assert_eq!((cleaned.as_ref(), removed), (*expected, *count), "{dirty:?}");
            // Nothing stripped is left, and cleaning twice changes nothing.
            assert_eq!(clean(&cleaned).1, 0, "{dirty:?}");
        }
    }

    #[test]
    fn a_person_sees_what_was_hidden() {
        assert_eq!(escaped("a\u{200b}b"), "a\\u{200b}b");
        assert_eq!(escaped("\u{1b}[31mred"), "\\u{1b}[31mred");
        assert_eq!(escaped("\u{202e}x\u{e0041}"), "\\u{202e}x\\u{e0041}");
        assert_eq!(escaped("\u{2764}\u{fe0f}\n\tok"), "\u{2764}\u{fe0f}\n\tok");
    }

    #[test]
    fn values_and_schemas() {
        let mut value = serde_json::json!({"a\u{200b}": ["x\u{1b}[1m", 1, {"b": "\u{202e}c"}]});
        assert_eq!(clean_value(&mut value), 6);
        assert_eq!(value, serde_json::json!({"a": ["x", 1, {"b": "c"}]}));
        let mut schema = serde_json::json!({"type": "object", "description": "d\u{200b}",
            "properties": {"p": {"type": "string", "pattern": "^\u{200b}$", "title": "t\u{200c}"}}});
        assert_eq!(clean_schema(&mut schema), 2);
        assert_eq!(schema["properties"]["p"]["pattern"], "^\u{200b}$");
        assert_eq!(schema["description"], "d");
    }
}
