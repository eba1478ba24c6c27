//! Registered names of MCP tools: `<server>_<tool>`.

/// The longest tool name (spec §1.6).
pub(crate) const MAX_NAME: usize = 64;

/// `text` with every character outside `[A-Za-z0-9_-]` replaced by `_` (OpenCode's rule).
pub(crate) fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a: a hash that is the same in every process and release, so a shortened name —
/// and the permission rules and saved approvals that name it — never changes.
fn stable_hash(text: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// Why a tool cannot be registered under any name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name would not start with a letter (the server name does not).
    #[error("tool names must start with a letter, and `{0}` does not")]
    NoLetter(String),
}

/// The registered name of `tool` of `server`: both sanitized, joined by `_`. A name
/// longer than 64 characters keeps its first 55 and ends in `_` plus 8 hex digits of a
/// stable hash of the whole, so distinct long names stay distinct.
///
/// ```
/// use toolgate_mcp_client::tool_name;
/// assert_eq!(tool_name("my.server", "get issue").unwrap(), "my_server_get_issue");
/// let long = tool_name("github", &"x".repeat(80)).unwrap();
/// assert_eq!(long.len(), 64);
/// assert!(long.starts_with("github_xxx"));
/// ```
pub fn tool_name(server: &str, tool: &str) -> Result<String, NameError> {
    let full = format!("{}_{}", sanitize(server), sanitize(tool));
    if !full.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(NameError::NoLetter(full));
    }
    if full.len() <= MAX_NAME {
        return Ok(full);
    }
    let hash = stable_hash(&format!("{server}\u{0}{tool}"));
    Ok(format!("{}_{hash:08x}", &full[..MAX_NAME - 9]))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_spelling_becomes_a_valid_name() {
        for (server, tool, expected) in [
            ("calc", "add", "calc_add"),
            ("my server", "do.it", "my_server_do_it"),
            ("ünï", "töol", "_n__t_ol"),
            ("a-b", "c_d", "a-b_c_d"),
            ("x", "../../etc/passwd", "x_______etc_passwd"),
            ("x", "", "x_"),
            ("x", "emoji🙂", "x_emoji_"),
        ] {
            match tool_name(server, tool) {
                Ok(name) => assert_eq!(name, expected),
                Err(NameError::NoLetter(name)) => assert_eq!(name, expected),
            }
        }
        assert!(tool_name("1password", "get").is_err());
        assert!(tool_name("ünï", "töol").is_err());
    }

    #[test]
    fn long_names_are_cut_to_64_and_stay_distinct_and_stable() {
        let a = tool_name("server", &format!("{}a", "t".repeat(70))).unwrap();
        let b = tool_name("server", &format!("{}b", "t".repeat(70))).unwrap();
        assert_eq!((a.len(), b.len()), (64, 64));
        assert_ne!(a, b);
        assert_eq!(a, tool_name("server", &format!("{}a", "t".repeat(70))).unwrap());
        // Fixed forever (saved approvals name these): the published FNV-1a test vectors.
        assert_eq!(stable_hash("a"), 0xe40c_292c);
        assert_eq!(stable_hash("foobar"), 0xbf9c_f968);
        assert_eq!(&a[..55], &format!("server_{}", "t".repeat(48)));
        // Exactly 64 is not cut.
        let exact = tool_name("s", &"t".repeat(62)).unwrap();
        assert_eq!(exact, format!("s_{}", "t".repeat(62)));
    }
}
