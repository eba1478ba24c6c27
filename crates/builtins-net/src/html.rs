//! HTML → Markdown (htmd) and HTML → text (a walk over the same html5ever tree).

use markup5ever_rcdom::{Handle, NodeData, RcDom};

/// Markdown of `html`, with `script`, `style`, `meta` and `link` dropped.
pub(crate) fn to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style", "meta", "link", "noscript"])
        .build();
    converter.convert(html).unwrap_or_default().trim().to_string()
}

const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "iframe", "object", "embed", "head", "template",
];

/// The text of `html`: text nodes in document order, blocks on their own lines.
pub(crate) fn to_text(html: &str) -> String {
    use html5ever::tendril::TendrilSink;
    let dom = html5ever::parse_document(RcDom::default(), Default::default()).one(html);
    let mut out = String::new();
    walk(&dom.document, &mut out);
    // One block a line: the blank lines block breaks leave behind carry nothing.
    let lines: Vec<&str> = out.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    // The walk is done before `dom` drops (its Drop empties the tree).
    lines.join("\n").trim().to_string()
}

fn walk(node: &Handle, out: &mut String) {
    match &node.data {
        NodeData::Text { contents } => {
            let text = contents.borrow();
            let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if !collapsed.is_empty() {
                if !out.is_empty() && !out.ends_with(['\n', ' ']) && text.starts_with(char::is_whitespace) {
                    out.push(' ');
                }
                out.push_str(&collapsed);
                if text.ends_with(char::is_whitespace) {
                    out.push(' ');
                }
            }
        }
        NodeData::Element { name, .. } => {
            let tag = name.local.as_ref();
            if SKIPPED.contains(&tag) {
                return;
            }
            let block = matches!(
                tag,
                "p" | "div"
                    | "br"
                    | "li"
                    | "tr"
                    | "h1"
                    | "h2"
                    | "h3"
                    | "h4"
                    | "h5"
                    | "h6"
                    | "pre"
                    | "section"
                    | "article"
                    | "header"
                    | "footer"
                    | "table"
                    | "ul"
                    | "ol"
                    | "blockquote"
                    | "hr"
            );
            if block {
                out.push('\n');
            }
            for child in node.children.borrow().iter() {
                walk(child, out);
            }
            if block {
                out.push('\n');
            }
        }
        _ => {
            for child in node.children.borrow().iter() {
                walk(child, out);
            }
        }
    }
}
