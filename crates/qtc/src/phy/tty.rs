//! `kind = "kiss-pty"` and `kind = "kiss-serial"`: KISS over a pty or a serial tty, a
//! non-blocking file descriptor driven by tokio's `AsyncFd` (epoll readiness; nothing polls).
//! Raw mode via termios; `create` opens a new pty pair and publishes the peer side's name as a
//! symlink, as Direwolf's /tmp/kisstnc does.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::termios::{self, BaudRate, SetArg};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::kiss::{KissDev, DEFAULT_MODEM_BAUD};
use super::{BadKey, Keys, KindDef, KissSetup, Opening, Spec};

/// `kiss-pty`: an existing pty (`device`) or one we create (`create`).
pub(super) const PTY: KindDef = KindDef {
    name: "kiss-pty",
    arg: "PATH",
    check: check_pty,
    from_arg: |rest, _| {
        Some(Keys {
            device: rest.to_string(),
            ..Keys::default()
        })
    },
};

/// `kiss-serial`: a serial line at `baud`.
pub(super) const SERIAL: KindDef = KindDef {
    name: "kiss-serial",
    arg: "PATH:BAUD",
    check: check_serial,
    from_arg: |rest, _| {
        let (device, baud) = rest.rsplit_once(':')?;
        Some(Keys {
            device: device.to_string(),
            baud: baud.parse().ok()?,
            ..Keys::default()
        })
    },
};

/// KISS on a pty or a tty, checked.
#[derive(Debug, Clone)]
enum Tty {
    /// An existing pty or tty.
    Pty(PathBuf),
    /// A pty pair we create; the peer side's name is published at this path.
    Create(PathBuf),
    /// A serial port at this speed.
    Serial(PathBuf, u32),
}

fn check_pty(k: &Keys) -> Result<super::Kind, BadKey> {
    Ok(super::Kind::new(
        match (k.device.is_empty(), k.create.is_empty()) {
            (false, true) => Tty::Pty(k.device.clone().into()),
            (true, false) => Tty::Create(k.create.clone().into()),
            _ => {
                return Err(BadKey::new(
                    "device",
                    "a kiss-pty port needs exactly one of device = PATH or create = PATH",
                ))
            }
        },
    ))
}

fn check_serial(k: &Keys) -> Result<super::Kind, BadKey> {
    if k.device.is_empty() {
        return Err(BadKey::new(
            "device",
            "a kiss-serial port needs device = PATH",
        ));
    }
    if baud_rate(k.baud).is_none() {
        return Err(BadKey::new(
            "baud",
            format!("unsupported baud rate {}", k.baud),
        ));
    }
    Ok(super::Kind::new(Tty::Serial(
        k.device.clone().into(),
        k.baud,
    )))
}

impl Spec for Tty {
    fn describe(&self) -> String {
        match self {
            Tty::Pty(p) => format!("kiss-pty {}", p.display()),
            Tty::Create(p) => format!("kiss-pty created, peer side at {}", p.display()),
            Tty::Serial(p, baud) => format!("kiss-serial {} {baud} baud", p.display()),
        }
    }

    fn for_users(&self) -> String {
        match self {
            Tty::Serial(_, baud) => format!("KISS TNC, {baud} baud"),
            _ => "KISS TNC".into(),
        }
    }

    fn default_modem_baud(&self) -> u32 {
        DEFAULT_MODEM_BAUD
    }

    fn open(&self, kiss: KissSetup) -> Opening {
        let tty = self.clone();
        Box::pin(async move {
            let io = match &tty {
                Tty::Pty(p) => TtyIo::open(p, None)?,
                Tty::Create(p) => TtyIo::create(p)?,
                Tty::Serial(p, baud) => TtyIo::open(p, Some(*baud))?,
            };
            Ok(KissDev::open(Box::new(io), kiss))
        })
    }
}

/// The termios speed for a baud rate, if supported.
pub fn baud_rate(baud: u32) -> Option<BaudRate> {
    Some(match baud {
        1200 => BaudRate::B1200,
        2400 => BaudRate::B2400,
        4800 => BaudRate::B4800,
        9600 => BaudRate::B9600,
        19200 => BaudRate::B19200,
        38400 => BaudRate::B38400,
        57600 => BaudRate::B57600,
        115200 => BaudRate::B115200,
        _ => return None,
    })
}

/// A pty master or a tty, non-blocking, as a tokio byte stream.
struct TtyIo {
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
    fn open(path: &Path, baud: Option<u32>) -> io::Result<TtyIo> {
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
    fn create(link: &Path) -> io::Result<TtyIo> {
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
