//! The data directory's lock: an exclusive `flock` on the directory itself. The daemon takes
//! it before it opens the store and holds it until its process ends; `qtc store pack`,
//! `compact` and `recount` hold it while they rewrite. So neither starts beside the other,
//! also while the daemon opens or closes its store, when its control socket (bound after the
//! store opens, removed before it closes) does not answer. The kernel drops the lock with
//! the process, so a crash leaves none behind; and it is the directory's, not a file's:
//! nothing to create, whoever made the directory.

use std::fs::File;
use std::path::Path;

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};

/// The lock, held until dropped (or the process ends).
pub struct DirLock {
    _flock: Flock<File>,
}

/// Takes the lock on `dir`, made first if missing. `Ok(None)`: another process holds it.
pub fn take(dir: &Path) -> anyhow::Result<Option<DirLock>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data directory {}", dir.display()))?;
    let file =
        File::open(dir).with_context(|| format!("cannot open data directory {}", dir.display()))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(flock) => Ok(Some(DirLock { _flock: flock })),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e).with_context(|| format!("cannot lock {}", dir.display())),
    }
}
