//! HTML → Markdown and HTML → text, in one pass over the bytes.
//!
//! A full HTML5 tree (html5ever, which htmd builds on) costs about 20 ms per MiB here,
//! which alone exceeds the 20 ms budget for fetching and converting a 1 MiB page; this
//! scanner does the job in a few milliseconds. It is forgiving rather than exact: tags
//! are read as they come, unknown ones are transparent, and `script`, `style`,
//! `noscript`, `template`, `head` content, `meta` and `link` are dropped.

/// Elements whose content is never shown.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "head", "iframe", "object", "embed", "svg", "canvas",
];

/// Elements that start and end a block.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "nav",
    "aside",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "address",
    "details",
    "summary",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "ul",
    "ol",
    "li",
    "blockquote",
    "pre",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "br",
    "body",
    "html",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Markdown,
    Text,
}

struct Tag<'a> {
    name: String,
    closing: bool,
    attributes: &'a str,
}

fn attribute(attributes: &str, wanted: &str) -> Option<String> {
    let bytes = attributes.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' && bytes[i] != b'>' {
            i += 1;
        }
        let name = &attributes[start..i];
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = "";
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') {
                let quote = bytes[i];
                let from = i + 1;
                i = from;
                while i < bytes.len() && bytes[i] != quote {
                    i += 1;
                }
                value = &attributes[from..i.min(bytes.len())];
                i += 1;
            } else {
                let from = i;
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
                value = &attributes[from..i];
            }
        }
        if name.eq_ignore_ascii_case(wanted) {
            return Some(decode_entities(value));
        }
        if i == start {
            i += 1;
        }
    }
    None
}

/// Decodes character references: numeric ones and the named ones pages actually use.
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..]
            .find(|c: char| c == ';' || c == '&' || c.is_whitespace())
            .map(|i| i + 1);
        let decoded = match end {
            Some(end) if rest.as_bytes().get(end) == Some(&b';') => {
                let name = &rest[1..end];
                let value = if let Some(number) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                    u32::from_str_radix(number, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .map(String::from)
                } else if let Some(number) = name.strip_prefix('#') {
                    number.parse::<u32>().ok().and_then(char::from_u32).map(String::from)
                } else {
                    named(name).map(String::from)
                };
                value.map(|v| (v, end + 1))
            }
            _ => None,
        };
        match decoded {
            Some((value, used)) => {
                out.push_str(&value);
                rest = &rest[used..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn named(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" => "\u{a0}",
        "copy" => "©",
        "reg" => "®",
        "trade" => "™",
        "mdash" => "—",
        "ndash" => "–",
        "hellip" => "…",
        "laquo" => "«",
        "raquo" => "»",
        "lsquo" => "‘",
        "rsquo" => "’",
        "ldquo" => "“",
        "rdquo" => "”",
        "bull" => "•",
        "middot" => "·",
        "times" => "×",
        "deg" => "°",
        "euro" => "€",
        "pound" => "£",
        "sect" => "§",
        "para" => "¶",
        "rarr" => "→",
        "larr" => "←",
        _ => return None,
    })
}

struct Converter {
    mode: Mode,
    out: String,
    /// Inside `<pre>`: whitespace is kept.
    pre: usize,
    /// Open lists: true for ordered, with the next number.
    lists: Vec<(bool, usize)>,
    /// Open blockquotes.
    quotes: usize,
    /// Open links: the href to close with.
    links: Vec<Option<String>>,
    /// Table state: cells in the current row, and whether the header separator is out.
    row: Option<Vec<String>>,
    cell: Option<String>,
    header_done: bool,
    /// A space is owed before the next word.
    space: bool,
}

impl Converter {
    fn sink(&mut self) -> &mut String {
        match &mut self.cell {
            Some(cell) => cell,
            None => &mut self.out,
        }
    }

    fn line_prefix(&self) -> String {
        "> ".repeat(self.quotes)
    }

    /// Ends the current line and leaves one blank line before the next block.
    fn block_break(&mut self) {
        if self.cell.is_some() {
            self.space = true;
            return;
        }
        let trimmed = self.out.trim_end_matches([' ', '\t']).len();
        self.out.truncate(trimmed);
        if self.out.is_empty() {
            return;
        }
        if !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        if self.mode == Mode::Markdown && self.lists.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
        self.space = false;
    }

    fn start_line(&mut self) {
        if self.cell.is_none() && (self.out.is_empty() || self.out.ends_with('\n')) {
            let prefix = self.line_prefix();
            self.out.push_str(&prefix);
        }
    }

    fn text(&mut self, raw: &str) {
        let text = decode_entities(raw);
        if self.pre > 0 {
            self.sink().push_str(&text);
            return;
        }
        let starts_space = text.starts_with(char::is_whitespace);
        let ends_space = text.ends_with(char::is_whitespace);
        let mut words = text.split_whitespace().peekable();
        if words.peek().is_none() {
            if starts_space {
                self.space = true;
            }
            return;
        }
        self.start_line();
        // A space is owed only between words: never at a line start or after one.
        let at_line_start = {
            let sink = self.sink();
            sink.is_empty() || sink.ends_with(['\n', ' '])
        };
        if (self.space || starts_space) && !at_line_start {
            self.sink().push(' ');
        }
        let mode = self.mode;
        let sink = self.sink();
        let mut first = true;
        for word in words {
            if !first {
                sink.push(' ');
            }
            first = false;
            if mode == Mode::Markdown {
                for c in word.chars() {
                    // Escape what would otherwise be read as Markdown.
                    if matches!(c, '*' | '_' | '`' | '[' | ']') {
                        sink.push('\\');
                    }
                    sink.push(c);
                }
            } else {
                sink.push_str(word);
            }
        }
        self.space = ends_space;
    }

    fn inline(&mut self, marker: &str) {
        if self.mode == Mode::Markdown {
            self.start_line();
            if self.space {
                self.sink().push(' ');
                self.space = false;
            }
            self.sink().push_str(marker);
        }
    }

    fn close_inline(&mut self, marker: &str) {
        if self.mode == Mode::Markdown {
            let trimmed = self.sink().trim_end_matches(' ').len();
            self.sink().truncate(trimmed);
            self.sink().push_str(marker);
        }
    }

    fn open(&mut self, tag: &Tag<'_>) {
        let markdown = self.mode == Mode::Markdown;
        match tag.name.as_str() {
            h @ ("h1" | "h2" | "h3" | "h4" | "h5" | "h6") => {
                self.block_break();
                if markdown {
                    self.start_line();
                    let level = usize::from(h.as_bytes()[1] - b'0');
                    self.out.push_str(&"#".repeat(level));
                    self.out.push(' ');
                }
            }
            "p" | "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "aside" | "figure" | "dl"
            | "dt" | "dd" | "details" | "summary" | "address" | "form" | "fieldset" | "figcaption" => {
                self.block_break()
            }
            "br" => {
                if self.pre > 0 {
                    self.sink().push('\n');
                } else if self.cell.is_some() {
                    self.space = true;
                } else {
                    let trimmed = self.out.trim_end_matches(' ').len();
                    self.out.truncate(trimmed);
                    self.out.push('\n');
                    self.space = false;
                }
            }
            "hr" => {
                self.block_break();
                if markdown {
                    self.out.push_str("---");
                }
                self.block_break();
            }
            "ul" | "ol" => {
                if self.lists.is_empty() {
                    self.block_break();
                }
                self.lists.push((tag.name == "ol", 1));
            }
            "li" => {
                let trimmed = self.out.trim_end_matches([' ', '\t']).len();
                self.out.truncate(trimmed);
                if !self.out.is_empty() && !self.out.ends_with('\n') {
                    self.out.push('\n');
                }
                self.start_line();
                let depth = self.lists.len().saturating_sub(1);
                self.out.push_str(&"  ".repeat(depth));
                let marker = match self.lists.last_mut() {
                    Some((true, next)) if markdown => {
                        let marker = format!("{next}. ");
                        *next += 1;
                        marker
                    }
                    _ if markdown => "- ".to_string(),
                    _ => String::new(),
                };
                self.out.push_str(&marker);
                self.space = false;
            }
            "blockquote" => {
                self.block_break();
                self.quotes += 1;
            }
            "pre" => {
                self.block_break();
                if markdown {
                    self.start_line();
                    self.out.push_str("```\n");
                }
                self.pre += 1;
            }
            "code" if self.pre == 0 => self.inline("`"),
            "em" | "i" => self.inline("*"),
            "strong" | "b" => self.inline("**"),
            "a" => {
                let href = attribute(tag.attributes, "href").filter(|h| !h.starts_with("javascript:"));
                if href.is_some() {
                    self.inline("[");
                }
                self.links.push(href);
            }
            "img" if markdown => {
                let alt = attribute(tag.attributes, "alt").unwrap_or_default();
                if let Some(src) = attribute(tag.attributes, "src") {
                    self.start_line();
                    if self.space {
                        self.sink().push(' ');
                        self.space = false;
                    }
                    let image = format!("![{alt}]({src})");
                    self.sink().push_str(&image);
                }
            }
            "table" => {
                self.block_break();
                self.header_done = false;
            }
            "tr" => self.row = Some(Vec::new()),
            "td" | "th" => {
                if self.row.is_some() {
                    self.cell = Some(String::new());
                }
                self.space = false;
            }
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        let markdown = self.mode == Mode::Markdown;
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "p" | "div" | "section" | "article" | "header" | "footer"
            | "main" | "nav" | "aside" | "figure" | "dl" | "dt" | "dd" | "details" | "summary" | "address" | "form"
            | "fieldset" | "figcaption" => self.block_break(),
            "ul" | "ol" => {
                self.lists.pop();
                if self.lists.is_empty() {
                    self.block_break();
                }
            }
            "li" => {
                let trimmed = self.out.trim_end_matches(' ').len();
                self.out.truncate(trimmed);
            }
            "blockquote" => {
                self.block_break();
                self.quotes = self.quotes.saturating_sub(1);
            }
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                if markdown {
                    if !self.out.ends_with('\n') {
                        self.out.push('\n');
                    }
                    self.out.push_str("```");
                }
                self.block_break();
            }
            "code" if self.pre == 0 => self.close_inline("`"),
            "em" | "i" => self.close_inline("*"),
            "strong" | "b" => self.close_inline("**"),
            "a" => {
                if let Some(Some(href)) = self.links.pop() {
                    self.close_inline(&format!("]({href})"));
                }
            }
            "td" | "th" => {
                if let (Some(cell), Some(row)) = (self.cell.take(), self.row.as_mut()) {
                    row.push(cell.trim().replace('|', "\\|"));
                }
            }
            "tr" => {
                if let Some(row) = self.row.take()
                    && !row.is_empty()
                {
                    self.start_line();
                    if markdown {
                        self.out.push_str(&format!("| {} |\n", row.join(" | ")));
                        if !self.header_done {
                            self.header_done = true;
                            let separator = vec!["---"; row.len()].join(" | ");
                            self.out.push_str(&format!("| {separator} |\n"));
                        }
                    } else {
                        self.out.push_str(&row.join("\t"));
                        self.out.push('\n');
                    }
                }
            }
            "table" => self.block_break(),
            _ => {}
        }
    }
}

fn parse_tag(inner: &str) -> Tag<'_> {
    let closing = inner.starts_with('/');
    let body = inner.trim_start_matches('/');
    let end = body
        .find(|c: char| c.is_ascii_whitespace() || c == '/')
        .unwrap_or(body.len());
    Tag {
        name: body[..end].to_ascii_lowercase(),
        closing,
        attributes: &body[end..],
    }
}

fn convert(html: &str, mode: Mode) -> String {
    let mut state = Converter {
        mode,
        out: String::with_capacity(html.len() / 2),
        pre: 0,
        lists: Vec::new(),
        quotes: 0,
        links: Vec::new(),
        row: None,
        cell: None,
        header_done: false,
        space: false,
    };
    let mut rest = html;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            state.text(rest);
            break;
        };
        if lt > 0 {
            state.text(&rest[..lt]);
        }
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            rest = rest.find('>').map_or("", |end| &rest[end + 1..]);
            continue;
        }
        let starts_tag = rest[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/');
        if !starts_tag {
            state.text("<");
            rest = &rest[1..];
            continue;
        }
        let Some(end) = rest.find('>') else {
            break;
        };
        let tag = parse_tag(&rest[1..end]);
        rest = &rest[end + 1..];
        if tag.closing {
            state.close(&tag.name);
            continue;
        }
        if DROPPED.contains(&tag.name.as_str()) {
            // Skip to the matching close tag (raw text: no nesting to track).
            let close = format!("</{}", tag.name);
            rest = match find_ignore_case(rest, &close) {
                Some(at) => rest[at..].find('>').map_or("", |end| &rest[at + end + 1..]),
                None => "",
            };
            continue;
        }
        if matches!(tag.name.as_str(), "meta" | "link" | "title" | "base") {
            continue;
        }
        state.open(&tag);
        if BLOCKS.contains(&tag.name.as_str()) && tag.attributes.trim_end().ends_with('/') {
            state.close(&tag.name);
        }
    }
    let text = state.out.trim().to_string();
    // At most one blank line anywhere.
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 || mode == Mode::Text {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

fn find_ignore_case(haystack: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// Markdown of `html`.
pub(crate) fn to_markdown(html: &str) -> String {
    convert(html, Mode::Markdown)
}

/// The text of `html`: one block a line.
pub(crate) fn to_text(html: &str) -> String {
    convert(html, Mode::Text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_of_common_elements() {
        let html = "<h2>Title &amp; more</h2><p>Text with <a href=\"/x?a=1&amp;b=2\">a <em>link</em></a>, <code>code</code> and <b>bold</b>.</p>\
                    <ol><li>one</li><li>two<ul><li>nested</li></ul></li></ol><blockquote><p>quoted</p></blockquote>\
                    <pre><code>fn x() {\n    1\n}</code></pre><table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2|3</td></tr></table>\
                    <p>img <img src=\"a.png\" alt=\"pic\"> &#169; &#x2014;</p><hr><p>a<br>b</p>";
        let expected = "## Title & more\n\nText with [a *link*](/x?a=1&b=2), `code` and **bold**.\n\n1. one\n2. two\n  - nested\n\n> quoted\n\n```\nfn x() {\n    1\n}\n```\n\n| A | B |\n| --- | --- |\n| 1 | 2\\|3 |\n\nimg ![pic](a.png) © —\n\n---\n\na\nb";
        assert_eq!(to_markdown(html), expected);
    }

    #[test]
    fn dropped_and_malformed_input() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body><script>if (a < b) {}</script>\
                    <!-- note --><p>kept *stars*</p><p>unclosed <b>bold<p>next 5 < 6</body>";
        assert_eq!(to_markdown(html), "kept \\*stars\\*\n\nunclosed **bold\n\nnext 5 < 6");
        assert_eq!(to_text(html), "kept *stars*\nunclosed bold\nnext 5 < 6");
    }
}
