//! The two ends a background process talks through: a Unix socket (stdin, stdout and
//! stderr on one connection, read and written through tokio) or a pseudo-terminal (read
//! by a thread of its own that polls it, written without blocking).

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

/// How long a write may wait for a process that does not read its input.
const WRITE_WAIT: Duration = Duration::from_secs(5);
/// Read size.
const CHUNK: usize = 64 * 1024;
/// How often a terminal's reader looks whether it is still wanted.
const POLL_MS: i32 = 250;

/// The terminal size of a `tty: true` process.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Size {
    pub(crate) rows: u16,
    pub(crate) cols: u16,
}

/// Where a process's output is read.
pub(crate) enum Reader {
    Socket(Arc<tokio::net::UnixStream>, Vec<u8>),
    Tty(mpsc::Receiver<Vec<u8>>),
}

/// Where a process's input is written.
pub(crate) enum Writer {
    Socket(Arc<tokio::net::UnixStream>),
    Tty(OwnedFd),
}

/// A new channel and the file the process gets as stdin, stdout and stderr.
pub(crate) fn open(tty: Option<Size>) -> io::Result<(Reader, Writer, OwnedFd)> {
    match tty {
        None => {
            let (mine, theirs) = std::os::unix::net::UnixStream::pair()?;
            mine.set_nonblocking(true)?;
            let mine = Arc::new(tokio::net::UnixStream::from_std(mine)?);
            Ok((
                Reader::Socket(Arc::clone(&mine), vec![0; CHUNK]),
                Writer::Socket(mine),
                OwnedFd::from(theirs),
            ))
        }
        Some(size) => {
            use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
            let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
            grantpt(&master)?;
            unlockpt(&master)?;
            let name = ptsname(&master, Vec::new())?;
            // NOCTTY: opening it must not make it this process's controlling terminal.
            let slave = rustix::fs::open(
                name.as_c_str(),
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?;
            set_size(&master, size)?;
            // Writes never block a worker; the reader polls before it reads.
            rustix::io::ioctl_fionbio(&master, true)?;
            let reading = master.try_clone()?;
            let (chunks, receiver) = mpsc::channel(16);
            std::thread::Builder::new()
                .name("toolgate-tty".into())
                .spawn(move || read_tty(&reading, &chunks))?;
            Ok((Reader::Tty(receiver), Writer::Tty(master), slave))
        }
    }
}

fn set_size(fd: &OwnedFd, size: Size) -> io::Result<()> {
    rustix::termios::tcsetwinsize(
        fd,
        rustix::termios::Winsize {
            ws_row: size.rows,
            ws_col: size.cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )
    .map_err(io::Error::from)
}

/// The terminal's reader thread: until the terminal is closed by the process's side
/// (`EIO`) or nobody reads any more.
fn read_tty(fd: &OwnedFd, chunks: &mpsc::Sender<Vec<u8>>) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut buffer = vec![0u8; CHUNK];
    let wait = Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(POLL_MS) * 1_000_000,
    };
    loop {
        if chunks.is_closed() {
            return;
        }
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        match poll(&mut fds, Some(&wait)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        match rustix::io::read(fd, &mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                if chunks.blocking_send(buffer[..n].to_vec()).is_err() {
                    return;
                }
            }
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => continue,
            // EIO: every descriptor of the terminal's other side is closed.
            Err(_) => return,
        }
    }
}

impl Reader {
    /// The next output of the process; `None` once every copy of its end is closed.
    pub(crate) async fn next(&mut self) -> Option<Vec<u8>> {
        match self {
            Reader::Socket(stream, buffer) => loop {
                if stream.readable().await.is_err() {
                    return None;
                }
                match stream.try_read(buffer) {
                    Ok(0) => return None,
                    Ok(n) => return Some(buffer[..n].to_vec()),
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => return None,
                }
            },
            Reader::Tty(chunks) => chunks.recv().await,
        }
    }
}

impl Writer {
    /// Writes all of `data` to the process's input, waiting at most [`WRITE_WAIT`] for it
    /// to take it.
    pub(crate) async fn write_all(&self, data: &[u8]) -> io::Result<()> {
        let written = tokio::time::timeout(WRITE_WAIT, async {
            let mut data = data;
            while !data.is_empty() {
                let wrote = match self {
                    Writer::Socket(stream) => {
                        stream.writable().await?;
                        stream.try_write(data)
                    }
                    Writer::Tty(fd) => rustix::io::write(fd, data).map_err(io::Error::from),
                };
                match wrote {
                    Ok(n) => data = &data[n..],
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        if matches!(self, Writer::Tty(_)) {
                            // A full terminal: it drains as the program reads.
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(error),
                }
            }
            Ok(())
        })
        .await;
        match written {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the process did not take its input within 5 s",
            )),
        }
    }

    /// Sets the terminal's size (nothing for a socket).
    pub(crate) fn resize(&self, size: Size) -> io::Result<()> {
        match self {
            Writer::Socket(_) => Ok(()),
            Writer::Tty(fd) => set_size(fd, size),
        }
    }
}
