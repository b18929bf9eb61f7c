//! KISS over a pty or a serial tty: a non-blocking file descriptor driven by tokio's `AsyncFd`
//! (epoll readiness; nothing polls). Raw mode via termios; `create` opens a new pty pair and
//! publishes the peer side's name as a symlink, as Direwolf's /tmp/kisstnc does.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::termios::{self, SetArg};

use crate::config::radio::baud_rate;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A pty master or a tty, non-blocking, as a tokio byte stream.
pub struct TtyIo {
    fd: AsyncFd<File>,
    /// The pty's other side, held open so the master never reads EIO while no program has the
    /// published name open (which would otherwise be a busy hang-up loop).
    _peer: Option<OwnedFd>,
    /// The symlink we published, removed when the port closes.
    link: Option<PathBuf>,
}

impl Drop for TtyIo {
    fn drop(&mut self) {
        if let Some(l) = &self.link {
            let _ = std::fs::remove_file(l);
        }
    }
}

fn raw_mode(fd: &impl std::os::fd::AsFd, baud: Option<u32>) -> io::Result<()> {
    let mut t = termios::tcgetattr(fd)?;
    termios::cfmakeraw(&mut t);
    if let Some(rate) = baud.and_then(baud_rate) {
        termios::cfsetspeed(&mut t, rate)?;
    }
    termios::tcsetattr(fd, SetArg::TCSANOW, &t)?;
    Ok(())
}

fn nonblocking(file: &File) -> io::Result<()> {
    let flags = fcntl(file.as_raw_fd(), FcntlArg::F_GETFL)?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    fcntl(file.as_raw_fd(), FcntlArg::F_SETFL(flags))?;
    Ok(())
}

/// Registers the descriptor with tokio's reactor. The `File` is owned by the `AsyncFd` for its
/// whole registration, which is the I/O-safety condition behind the deprecation of
/// `AsyncFd::new` (the replacement, `register`, is an `unsafe fn`, and this crate has no unsafe).
#[allow(deprecated)]
fn register(file: File) -> io::Result<AsyncFd<File>> {
    AsyncFd::new(file)
}

impl TtyIo {
    /// Opens an existing pty or tty in raw mode (and sets the speed when `baud` is given).
    pub fn open(path: &Path, baud: Option<u32>) -> io::Result<TtyIo> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::libc::O_NOCTTY | nix::libc::O_NONBLOCK)
            .open(path)?;
        raw_mode(&file, baud)?;
        Ok(TtyIo {
            fd: register(file)?,
            _peer: None,
            link: None,
        })
    }

    /// Creates a pty pair, raw, and publishes the peer side's name as a symlink at `link`.
    pub fn create(link: &Path) -> io::Result<TtyIo> {
        let pair = nix::pty::openpty(None, None)?;
        raw_mode(&pair.slave, None)?;
        raw_mode(&pair.master, None)?;
        let name = nix::unistd::ttyname(&pair.slave)?;
        if std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(link)?;
        }
        std::os::unix::fs::symlink(&name, link)?;
        let file = File::from(pair.master);
        nonblocking(&file)?;
        tracing::info!(pty = %name.display(), link = %link.display(), "pty created");
        Ok(TtyIo {
            fd: register(file)?,
            _peer: Some(pair.slave),
            link: Some(link.to_path_buf()),
        })
    }
}

impl AsyncRead for TtyIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let want = unfilled.len();
            match guard.try_io(|f| f.get_ref().read(unfilled)) {
                Ok(Ok(n)) => {
                    if n < want {
                        // A short read drained the device: wait for the next edge rather than
                        // paying a read that returns EAGAIN.
                        guard.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // EIO: the far side of the pty hung up. Report it as end of stream.
                Ok(Err(e)) if e.raw_os_error() == Some(nix::libc::EIO) => {
                    return Poll::Ready(Ok(()))
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for TtyIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.fd.poll_write_ready(cx))?;
            match guard.try_io(|f| f.get_ref().write(data)) {
                Ok(r) => return Poll::Ready(r),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
