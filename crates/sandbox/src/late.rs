//! A trampoline started before its command is known ([`LATE`]): it joins its cgroup
//! while nothing waits on it, then reads the rest of its command line, its environment
//! and its working directory ([`LateStart`]) from its stdin, and goes on as a trampoline
//! started with them.
//!
//! Why: moving a process into a cgroup makes the kernel wait for an RCU grace period
//! (the write side of `cgroup_threadgroup_rwsem`), 10 to 20 ms on an idle machine, and a
//! background process must be a member of its group before its first instruction. A
//! trampoline that joined ahead of time takes that wait off the start; what it receives
//! later is only what `execve` would have given it.

use std::ffi::OsString;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// The first argument after [`crate::TRAMPOLINE`] that makes the trampoline wait for its
/// [`LateStart`] on stdin.
pub const LATE: &str = "--late";

/// The most bytes a [`LateStart`] may take (the kernel's own limit on arguments and
/// environment together is 2 MiB by default).
const MAX_BYTES: usize = 8 << 20;

/// What a [`LATE`] trampoline receives: the arguments it would have had after
/// [`crate::TRAMPOLINE`] (the policy, `--`, the command), the command's whole
/// environment, and where it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LateStart {
    /// The trampoline's arguments, as [`crate::Policy::from_args`] reads them.
    pub args: Vec<OsString>,
    /// The command's environment, nothing inherited.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory.
    pub workdir: PathBuf,
}

/// Why a [`LateStart`] could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LateError {
    /// The sender went away before sending (its slot was discarded).
    #[error("no command was sent")]
    Closed,
    /// Reading stdin failed.
    #[error("cannot read the command: {0}")]
    Io(#[from] std::io::Error),
    /// What arrived is no [`LateStart`].
    #[error("malformed command message: {0}")]
    Malformed(&'static str),
}

impl LateStart {
    /// The message: its length (4 bytes, little-endian), then each field as a tag byte,
    /// its length (4 bytes) and its bytes: `a` an argument, `e` an environment entry
    /// (`NAME=value`), `w` the working directory.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let mut field = |tag: u8, bytes: &[u8]| {
            body.push(tag);
            body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            body.extend_from_slice(bytes);
        };
        for arg in &self.args {
            field(b'a', arg.as_bytes());
        }
        for (name, value) in &self.env {
            let mut entry = name.as_bytes().to_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            field(b'e', &entry);
        }
        field(b'w', self.workdir.as_os_str().as_bytes());
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    /// Reads one message from `fd` (a stream), taking exactly its bytes: what follows on
    /// the same descriptor (the exec guard's exchange, the command's input) stays unread.
    pub fn read_from(fd: BorrowedFd<'_>) -> Result<LateStart, LateError> {
        let mut length = [0u8; 4];
        read_exact(fd, &mut length)?;
        let length = u32::from_le_bytes(length) as usize;
        if length > MAX_BYTES {
            return Err(LateError::Malformed("too long"));
        }
        let mut body = vec![0u8; length];
        read_exact(fd, &mut body)?;
        LateStart::decode(&body)
    }

    /// The fields of a message body (without its length).
    fn decode(mut body: &[u8]) -> Result<LateStart, LateError> {
        let mut start = LateStart::default();
        let mut workdir = None;
        while let Some((&tag, rest)) = body.split_first() {
            let (size, rest) = rest.split_at_checked(4).ok_or(LateError::Malformed("cut short"))?;
            let size = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
            let (bytes, rest) = rest.split_at_checked(size).ok_or(LateError::Malformed("cut short"))?;
            body = rest;
            let text = OsString::from_vec(bytes.to_vec());
            match tag {
                b'a' => start.args.push(text),
                b'e' => {
                    let at = bytes
                        .iter()
                        .position(|&byte| byte == b'=')
                        .ok_or(LateError::Malformed("an environment entry without '='"))?;
                    start.env.push((
                        OsString::from_vec(bytes[..at].to_vec()),
                        OsString::from_vec(bytes[at + 1..].to_vec()),
                    ));
                }
                b'w' => workdir = Some(PathBuf::from(text)),
                _ => return Err(LateError::Malformed("unknown field")),
            }
        }
        start.workdir = workdir.ok_or(LateError::Malformed("no working directory"))?;
        Ok(start)
    }
}

fn read_exact(fd: BorrowedFd<'_>, mut buffer: &mut [u8]) -> Result<(), LateError> {
    let mut first = true;
    while !buffer.is_empty() {
        match rustix::io::read(fd, &mut *buffer) {
            Ok(0) if first => return Err(LateError::Closed),
            Ok(0) => return Err(LateError::Malformed("cut short")),
            Ok(n) => buffer = &mut buffer[n..],
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(LateError::Io(error.into())),
        }
        first = false;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn a_message_reads_back_exactly_and_leaves_what_follows() {
        let start = LateStart {
            args: vec![
                "--mode".into(),
                "read-only".into(),
                "--".into(),
                OsString::from_vec(vec![b'x', 0xff, b'=', 0]),
            ],
            env: vec![("A".into(), "b=c".into()), ("EMPTY".into(), "".into())],
            workdir: "/tmp/a dir".into(),
        };
        let (mut mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        mine.write_all(&start.encode()).unwrap();
        mine.write_all(b"after").unwrap();
        assert_eq!(LateStart::read_from(theirs.as_fd()).unwrap(), start);
        let mut rest = [0u8; 5];
        read_exact(theirs.as_fd(), &mut rest).unwrap();
        assert_eq!(&rest, b"after");
    }

    #[test]
    fn a_closed_sender_a_short_or_malformed_message_is_an_error() {
        let (mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(mine);
        assert!(matches!(LateStart::read_from(theirs.as_fd()), Err(LateError::Closed)));

        let full = LateStart {
            workdir: "/".into(),
            ..LateStart::default()
        }
        .encode();
        let (mut mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        mine.write_all(&full[..full.len() - 1]).unwrap();
        drop(mine);
        assert!(matches!(
            LateStart::read_from(theirs.as_fd()),
            Err(LateError::Malformed(_))
        ));

        assert!(matches!(
            LateStart::decode(b"e\x01\0\0\0x"),
            Err(LateError::Malformed(_))
        ));
        assert!(matches!(
            LateStart::decode(b"a\x01\0\0\0x"),
            Err(LateError::Malformed(_))
        ));
        assert!(matches!(LateStart::decode(b"z\0\0\0\0"), Err(LateError::Malformed(_))));
        let (mut mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        mine.write_all(&u32::MAX.to_le_bytes()).unwrap();
        assert!(matches!(
            LateStart::read_from(theirs.as_fd()),
            Err(LateError::Malformed(_))
        ));
    }
}
