//! `toolgate audit verify`: walks the log's files oldest first and checks that every
//! record names the one before it: `seq` one more, `prev` the SHA-256 of its line.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::writer::{GENESIS, rotated, sha256_hex};

/// The first link of the chain that does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Broken {
    /// The file it is in.
    pub file: PathBuf,
    /// Its line number there (1-based).
    pub line: usize,
    /// The `seq` the line names, when it names one.
    pub seq: Option<u64>,
    /// What is wrong with it.
    pub reason: String,
}

/// What [`verify_audit`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// The files read, oldest first.
    pub files: Vec<PathBuf>,
    /// The chained records checked.
    pub records: u64,
    /// Lines written before the log was chained (they can only come first).
    pub unchained: u64,
    /// The first and last `seq` seen.
    pub first_seq: Option<u64>,
    /// The last `seq` seen.
    pub last_seq: Option<u64>,
    /// Whether the oldest record's predecessor was removed by retention (its `prev`
    /// cannot be checked).
    pub starts_after_retention: bool,
    /// The first broken link, if any.
    pub broken: Option<Broken>,
}

/// Checks the chain of the log at `path` and its rotated files.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("audit.jsonl");
/// let log = toolgate_permission::AuditLog::new(&path);
/// let caller = toolgate_permission::Caller::new("ses_1", "build", "call_1");
/// log.settled(&caller, "read", None, &[]);
/// log.settled(&caller, "read", None, &[]);
/// log.flush();
/// let verified = toolgate_permission::verify_audit(&path).unwrap();
/// assert_eq!((verified.records, verified.broken), (2, None));
/// ```
pub fn verify_audit(path: &Path) -> std::io::Result<Verified> {
    let mut files: Vec<PathBuf> = (1..)
        .map(|n| rotated(path, n))
        .take_while(|file| file.exists())
        .collect();
    files.reverse();
    if path.exists() {
        files.push(path.to_path_buf());
    }
    let mut verified = Verified {
        files: files.clone(),
        ..Verified::default()
    };
    // The previous chained record: its seq and its line's hash.
    let mut previous: Option<(u64, String)> = None;
    for file in &files {
        let text = std::fs::read(file)?;
        let mut lines = text.split(|b| *b == b'\n').enumerate().peekable();
        while let Some((index, line)) = lines.next() {
            if line.is_empty() && lines.peek().is_none() {
                break;
            }
            let broken = |seq: Option<u64>, reason: String| Broken {
                file: file.clone(),
                line: index + 1,
                seq,
                reason,
            };
            let value: Option<Value> = serde_json::from_slice(line).ok();
            let Some(value) = value else {
                verified.broken = Some(broken(None, "the line is not a JSON record".into()));
                return Ok(verified);
            };
            let seq = value.get("seq").and_then(Value::as_u64);
            let prev = value.get("prev").and_then(Value::as_str);
            let (Some(seq), Some(prev)) = (seq, prev) else {
                if previous.is_none() {
                    verified.unchained += 1;
                    continue;
                }
                verified.broken = Some(broken(seq, "the record has no seq or prev".into()));
                return Ok(verified);
            };
            match &previous {
                None if seq == 1 && prev != GENESIS => {
                    verified.broken = Some(broken(Some(seq), "the first record does not start the chain".into()));
                    return Ok(verified);
                }
                None if seq > 1 => verified.starts_after_retention = true,
                None => {}
                Some((last_seq, last_hash)) => {
                    if seq == 1 && prev == GENESIS {
                        // A log removed and started afresh: that is a break too.
                        verified.broken = Some(broken(
                            Some(seq),
                            format!("the chain starts again after seq {last_seq}"),
                        ));
                        return Ok(verified);
                    }
                    if seq != last_seq + 1 {
                        verified.broken = Some(broken(
                            Some(seq),
                            format!("seq {seq} follows seq {last_seq} (records removed or put in)"),
                        ));
                        return Ok(verified);
                    }
                    if prev != last_hash {
                        verified.broken = Some(broken(
                            Some(seq),
                            format!("prev does not match the hash of seq {last_seq} (a record was changed)"),
                        ));
                        return Ok(verified);
                    }
                }
            }
            verified.records += 1;
            verified.first_seq.get_or_insert(seq);
            verified.last_seq = Some(seq);
            previous = Some((seq, sha256_hex(line)));
        }
    }
    Ok(verified)
}
