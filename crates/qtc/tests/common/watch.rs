//! Waiting on events, not time: a file's changes (inotify) and a process's exit (its pidfd),
//! each under a hang guard. The tests wait with these for what a daemon or a peer writes to a
//! file (a log line, a message) and for a process to end, instead of looking every few ms.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fs::inotify;
use rustix::io::Errno;

/// Blocks until `fd` is readable or `deadline` has passed; says whether it is readable.
fn readable(fd: impl AsFd, deadline: Instant) -> bool {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = Timespec::try_from(left).expect("a hang guard fits a timespec");
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(Errno::INTR) => {}
            Err(e) => panic!("poll: {e}"),
        }
    }
}

/// A file's changes as they come: inotify on its directory, so that its creation, a rename
/// onto or away from it, each write to it and its removal wake whoever waits.
pub struct FileWatch {
    inotify: OwnedFd,
    name: std::ffi::OsString,
}

impl FileWatch {
    /// Watches `path` from now on (it need not exist yet; its directory must).
    pub fn new(path: &Path) -> FileWatch {
        let inotify =
            inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC).unwrap();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let changes = inotify::WatchFlags::CREATE
            | inotify::WatchFlags::MODIFY
            | inotify::WatchFlags::MOVED_TO
            | inotify::WatchFlags::CLOSE_WRITE
            | inotify::WatchFlags::MOVED_FROM
            | inotify::WatchFlags::DELETE;
        inotify::add_watch(&inotify, dir, changes)
            .unwrap_or_else(|e| panic!("watch {}: {e}", dir.display()));
        FileWatch {
            inotify,
            name: path.file_name().expect("a file name").to_owned(),
        }
    }

    /// Blocks until the file has changed since the watch began or the last call, or until
    /// `deadline`; false at the deadline.
    pub fn changed(&self, deadline: Instant) -> bool {
        loop {
            if !readable(&self.inotify, deadline) {
                return false;
            }
            if self.drain() {
                return true;
            }
        }
    }

    /// Reads the events there are; says whether one was about the file (or some were lost).
    fn drain(&self) -> bool {
        let mut buf = [MaybeUninit::uninit(); 4096];
        let mut events = inotify::Reader::new(&self.inotify, &mut buf);
        let mut ours = false;
        loop {
            match events.next() {
                Ok(e) => {
                    ours |= e.events().contains(inotify::ReadFlags::QUEUE_OVERFLOW)
                        || e.file_name()
                            .is_some_and(|n| n.to_bytes() == self.name.as_bytes());
                }
                Err(Errno::AGAIN) => return ours,
                Err(Errno::INTR) => {}
                Err(e) => panic!("inotify: {e}"),
            }
        }
    }
}

/// Waits until `check` holds, looking again each time the file at `path` changes; after
/// `within` (a hang guard) it looks once more and says what it found.
pub fn until_file(path: &Path, within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let watch = FileWatch::new(path);
    let deadline = Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if !watch.changed(deadline) {
            return check();
        }
    }
}

/// Waits until `child` has exited (its pidfd turns readable) or `within` has passed; says
/// whether it exited. Reap it with `wait` after.
pub fn exited(child: &Child, within: Duration) -> bool {
    let pid = rustix::process::Pid::from_child(child);
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        .expect("a pidfd for the child (not yet reaped)");
    readable(&pidfd, Instant::now() + within)
}
