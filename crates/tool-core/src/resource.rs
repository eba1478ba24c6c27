//! Resources with holes: a permission resource whose value is only partly known before the
//! action runs.
//!
//! A shell command such as `cat "$DIR"/notes.txt` reads a file whose name is known except
//! for the value of `$DIR`. Its resource is the known text with a *hole* where the value
//! goes. The permission service asks, for each rule, whether the rule's wildcard matches
//! every value the holes could take (a definite match), some of them (a possible match), or
//! none; see `toolgate_permission::decide_resource`.

use serde::{Deserialize, Serialize};

/// Which values a hole may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HoleClass {
    /// Any text at all, including the empty text, spaces and `/`.
    Any,
    /// Any text without `/` or `\`: one path component, such as what a glob's `*` matches.
    Name,
}

/// A part of a resource whose value is not known before the action runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hole {
    /// How the hole is shown to a person (`$HOME`, `$(date)`, `*`).
    pub display: String,
    /// The values it may take.
    pub class: HoleClass,
}

/// One piece of a resource: known text or a hole.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Segment {
    /// Text known before the action runs.
    Text {
        /// The text.
        text: String,
    },
    /// A value known only when the action runs.
    Hole(Hole),
}

/// A resource as a sequence of known text and holes.
///
/// ```
/// use toolgate_core::{HoleClass, Resource};
/// let mut resource = Resource::exact("cat ");
/// resource.push_hole("$DIR", HoleClass::Any);
/// resource.push_text("/notes.txt");
/// assert_eq!(resource.display(), "cat $DIR/notes.txt");
/// assert!(!resource.is_exact());
/// assert_eq!(Resource::exact("ls").as_exact(), Some("ls"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Resource {
    segments: Vec<Segment>,
}

impl Resource {
    /// A resource known exactly.
    pub fn exact(text: impl Into<String>) -> Self {
        let mut resource = Resource::default();
        resource.push_text(text.into());
        resource
    }

    /// A resource about which nothing is known: one hole of any value.
    pub fn unknown(display: impl Into<String>) -> Self {
        let mut resource = Resource::default();
        resource.push_hole(display, HoleClass::Any);
        resource
    }

    /// Appends known text (merged with known text before it).
    pub fn push_text(&mut self, text: impl AsRef<str>) {
        let text = text.as_ref();
        if text.is_empty() {
            return;
        }
        match self.segments.last_mut() {
            Some(Segment::Text { text: last }) => last.push_str(text),
            _ => self.segments.push(Segment::Text { text: text.to_string() }),
        }
    }

    /// Appends a hole. Two holes of any value in a row are one hole (their display joined).
    pub fn push_hole(&mut self, display: impl Into<String>, class: HoleClass) {
        let display = display.into();
        if class == HoleClass::Any
            && let Some(Segment::Hole(last)) = self.segments.last_mut()
            && last.class == HoleClass::Any
        {
            last.display.push_str(&display);
            return;
        }
        self.segments.push(Segment::Hole(Hole { display, class }));
    }

    /// The segments, in order; adjacent texts are always merged.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The holes, in order.
    pub fn holes(&self) -> impl Iterator<Item = &Hole> {
        self.segments.iter().filter_map(|segment| match segment {
            Segment::Hole(hole) => Some(hole),
            Segment::Text { .. } => None,
        })
    }

    /// True when there is no hole.
    pub fn is_exact(&self) -> bool {
        self.holes().next().is_none()
    }

    /// The text, when there is no hole.
    pub fn as_exact(&self) -> Option<&str> {
        match self.segments.as_slice() {
            [] => Some(""),
            [Segment::Text { text }] => Some(text),
            _ => None,
        }
    }

    /// Whether `text` is one of the values the resource could take: its known text where
    /// it is known, anything in a hole of any value, and text without `/` or `\\` in a
    /// hole of one name. Exec-time enforcement asks it of what the analysis predicted:
    /// `rm build` is an instance of `rm $DIR`.
    ///
    /// ```
    /// use toolgate_core::{HoleClass, Resource};
    /// let mut predicted = Resource::exact("rm -rf ");
    /// predicted.push_hole("$DIR", HoleClass::Any);
    /// assert!(predicted.admits("rm -rf build"));
    /// assert!(predicted.admits("rm -rf "));
    /// assert!(!predicted.admits("rm build"));
    /// let mut glob = Resource::exact("cat ");
    /// glob.push_hole("*", HoleClass::Name);
    /// assert!(glob.admits("cat notes.txt"));
    /// assert!(!glob.admits("cat a/b"));
    /// ```
    pub fn admits(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        // `reach[p]`: the segments so far can end at byte `p`. One pass per segment, so
        // the cost is the text's length times the number of segments, never exponential.
        let mut reach = vec![false; bytes.len() + 1];
        reach[0] = true;
        for segment in &self.segments {
            let mut next = vec![false; bytes.len() + 1];
            match segment {
                Segment::Text { text } => {
                    let needle = text.as_bytes();
                    for (p, _) in reach.iter().enumerate().filter(|(_, ok)| **ok) {
                        if bytes[p..].starts_with(needle) {
                            next[p + needle.len()] = true;
                        }
                    }
                }
                Segment::Hole(hole) => {
                    let mut open = false;
                    for p in 0..=bytes.len() {
                        open |= reach[p];
                        next[p] = open;
                        let separator = bytes.get(p).is_some_and(|b| *b == b'/' || *b == b'\\');
                        if hole.class == HoleClass::Name && separator {
                            open = false;
                        }
                    }
                }
            }
            reach = next;
            if !reach.contains(&true) {
                return false;
            }
        }
        reach[bytes.len()]
    }

    /// How the resource is shown: the known text with each hole's display in its place.
    pub fn display(&self) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text { text } => out.push_str(text),
                Segment::Hole(hole) => out.push_str(&hole.display),
            }
        }
        out
    }
}

impl From<&str> for Resource {
    fn from(text: &str) -> Self {
        Resource::exact(text)
    }
}

impl From<String> for Resource {
    fn from(text: String) -> Self {
        Resource::exact(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_merge_and_empty_text_is_dropped() {
        let mut resource = Resource::exact("a");
        resource.push_text("");
        resource.push_text("b");
        assert_eq!(resource.segments().len(), 1);
        assert_eq!(resource.as_exact(), Some("ab"));
    }

    #[test]
    fn adjacent_any_holes_are_one_hole_but_name_holes_stay_apart() {
        let mut resource = Resource::default();
        resource.push_hole("$A", HoleClass::Any);
        resource.push_hole("$B", HoleClass::Any);
        assert_eq!(resource.segments().len(), 1);
        assert_eq!(resource, Resource::unknown("$A$B"));
        assert_eq!(resource.display(), "$A$B");
        resource.push_hole("*", HoleClass::Name);
        resource.push_hole("*", HoleClass::Name);
        assert_eq!(resource.segments().len(), 3);
    }

    #[test]
    fn admits_is_exact_where_known_and_bounded_where_not() {
        let mut resource = Resource::exact("a ");
        resource.push_hole("$X", HoleClass::Name);
        resource.push_text(" b");
        assert!(resource.admits("a x b"));
        assert!(resource.admits("a  b"));
        assert!(!resource.admits("a x/y b"));
        assert!(!resource.admits("a x c"));
        assert!(Resource::exact("ls").admits("ls"));
        assert!(!Resource::exact("ls").admits("ls -l"));
        assert!(Resource::unknown("$CMD").admits("anything / at all"));
        assert!(Resource::default().admits(""));
        // Many holes over a long text: linear passes, not backtracking.
        let mut many = Resource::default();
        for _ in 0..64 {
            many.push_hole("*", HoleClass::Name);
            many.push_text("a");
        }
        assert!(!many.admits(&"a".repeat(63)));
        assert!(many.admits(&"a".repeat(10_000)));
    }

    #[test]
    fn serialises_with_tagged_segments() {
        let mut resource = Resource::exact("cat ");
        resource.push_hole("$X", HoleClass::Any);
        let json = serde_json::to_value(&resource).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"segments": [{"type": "text", "text": "cat "}, {"type": "hole", "display": "$X", "class": "any"}]})
        );
        let back: Resource = serde_json::from_value(json).unwrap();
        assert_eq!(back, resource);
    }
}
