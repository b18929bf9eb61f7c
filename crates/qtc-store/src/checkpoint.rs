//! Checkpoints on a thread and connection of their own, outside the writer's commits.
//!
//! Left to SQLite, the commit that takes the WAL past its mark copies the whole WAL into the
//! database before it returns (its automatic checkpoint). With 512-byte pages that is 8,192
//! pages scattered over the file and a sync: 65-90 ms of a 1 M store's housekeeping step, about
//! every 20th, and the longest wait a partner's or a user's write met meanwhile. Here the
//! writer's WAL hook only wakes the checkpointer, which copies what is committed (a PASSIVE
//! checkpoint: it never blocks the writer) while the writer goes on committing.
//!
//! SQLite starts the WAL over from its beginning only at a write transaction that finds every
//! frame copied; under unbroken writes the checkpointer never gets that far. So after a pass
//! the writer's next commit looks at what the pass left: many frames wake another (shorter)
//! pass; a few, at most [`TAIL_BYTES`], the writer copies itself, and its next transaction
//! starts the WAL over. Should the WAL reach the mark plus [`BACKGROUND_ROOM`] before that (a
//! writer faster than the checkpointer), the writer waits for the pass to end and copies the
//! rest, so the WAL stays inside the room `prepare_wal` gives it, as it did when the writer
//! copied it all. Nothing here decides what is durable: every checkpoint is SQLite's own.
//!
//! Both waits are on condition variables: an idle daemon's checkpointer sleeps without a
//! timer. rusqlite's WAL hook takes a function without state, so the hook is registered
//! through SQLite's C interface with a pointer to [`Shared`]; that and the checkpoint calls
//! (which, unlike `PRAGMA wal_checkpoint`, need not read the schema into the checkpointer's
//! connection) are this module's `unsafe`.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rusqlite::{ffi, Connection};

use crate::{db_err, walvfs, StoreError};

/// WAL bytes beyond the checkpoint mark the writer may commit while a pass runs; the WAL's
/// working size has room for them (lib.rs, `prepare_wal`).
pub(crate) const BACKGROUND_ROOM: i64 = 2 << 20;

/// What a pass left uncopied that the writer copies itself rather than wake another pass.
const TAIL_BYTES: i64 = 1 << 20;

/// The checkpointer thread and what it shares with the writer's hook.
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// The checkpointer waits here for a pass to do.
    wake: Condvar,
    /// The writer waits here for a pass to end.
    ended: Condvar,
    /// WAL frames at which a pass starts (the checkpoint mark).
    start_at: u32,
    /// WAL frames at which the writer waits for a running pass and copies the rest itself.
    finish_at: u32,
    /// Uncopied frames the writer copies itself after a pass.
    tail: u32,
}

#[derive(Default)]
struct State {
    /// A pass is asked for or running.
    busy: bool,
    /// Frames of the WAL copied so far (SQLite's backfill), as the last checkpoint left it.
    copied: u32,
    /// The thread is to end.
    stop: bool,
    /// The thread has ended (told to, or by a panic): the writer checkpoints itself.
    gone: bool,
    /// What was done so far (tests).
    counts: Counts,
}

/// Checkpoints so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Passes of the checkpointer.
    pub passes: u64,
    /// Tails the writer copied itself.
    pub tails: u64,
    /// Times the writer waited for a pass, the WAL at the end of its room.
    pub waits: u64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer's hook, after each commit that left `frames` frames in the WAL.
    fn committed(&self, db: *mut ffi::sqlite3, frames: u32) {
        let mut st = self.lock();
        if frames < self.start_at {
            // Not at the mark yet, or the WAL has started over.
            st.copied = 0;
            return;
        }
        if st.gone {
            // As SQLite's own automatic checkpoint would.
            drop(st);
            // SAFETY: as below.
            unsafe { passive(db) };
            return;
        }
        if st.busy {
            if frames < self.finish_at {
                return;
            }
            tracing::debug!(
                frames,
                "the WAL is full: the writer waits for the checkpoint"
            );
            st.counts.waits += 1;
            while st.busy {
                st = self.ended.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        // A count from before the WAL started over is no count.
        let copied = if st.copied <= frames { st.copied } else { 0 };
        if frames - copied > self.tail && frames < self.finish_at {
            st.busy = true;
            self.wake.notify_one();
            return;
        }
        drop(st);
        let t0 = clock();
        // SAFETY: `db` is the writer's connection, which called this hook from its commit;
        // SQLite's own automatic checkpoint runs from this hook the same way.
        let copied = unsafe { passive(db) };
        tracing::debug!(frames, ?copied, took = ?t0.elapsed(), "checkpoint of the tail");
        let mut st = self.lock();
        st.counts.tails += 1;
        if let Some(copied) = copied {
            st.copied = copied;
        }
    }

    /// The checkpointer thread: a pass whenever the writer asks, until told to stop.
    fn serve(&self, conn: &Connection) {
        // However the thread ends, a writer waiting for a pass, or waiting for none to run,
        // must not wait for ever.
        struct Gone<'a>(&'a Shared);
        impl Drop for Gone<'_> {
            fn drop(&mut self) {
                let mut st = self.0.lock();
                st.gone = true;
                st.busy = false;
                self.0.ended.notify_all();
            }
        }
        let _gone = Gone(self);
        loop {
            let mut st = self.lock();
            while !st.busy && !st.stop {
                st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.stop {
                return;
            }
            drop(st);
            let t0 = clock();
            // SAFETY: the checkpointer's own connection, used by this thread alone.
            let copied = unsafe { passive(conn.handle()) };
            tracing::debug!(?copied, took = ?t0.elapsed(), "checkpoint");
            let mut st = self.lock();
            if let Some(copied) = copied {
                st.copied = copied;
            }
            st.counts.passes += 1;
            st.busy = false;
            self.ended.notify_all();
        }
    }
}

/// The debug log's clock: how long a checkpoint took is a figure for the log, and nothing
/// here decides on it.
#[allow(clippy::disallowed_methods)]
fn clock() -> std::time::Instant {
    std::time::Instant::now()
}

/// A PASSIVE checkpoint of `db`'s main database: the frames of the WAL copied so far, or
/// `None` when SQLite could not run it (another checkpoint ran).
///
/// # Safety
/// `db` is an open connection not used by another thread meanwhile.
unsafe fn passive(db: *mut ffi::sqlite3) -> Option<u32> {
    let (mut log, mut copied): (c_int, c_int) = (0, 0);
    let rc = ffi::sqlite3_wal_checkpoint_v2(
        db,
        c"main".as_ptr(),
        ffi::SQLITE_CHECKPOINT_PASSIVE,
        &mut log,
        &mut copied,
    );
    (rc == ffi::SQLITE_OK).then(|| copied.max(0) as u32)
}

/// The WAL hook: SQLite calls it on the writer's thread after each commit.
///
/// # Safety
/// `shared` is the pointer [`Checkpointer::start`] registered, alive while the hook is.
unsafe extern "C" fn hook(
    shared: *mut c_void,
    db: *mut ffi::sqlite3,
    _name: *const c_char,
    frames: c_int,
) -> c_int {
    let shared = &*shared.cast::<Shared>();
    // A panic must not unwind into SQLite; the commit is done whatever happens here.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        shared.committed(db, frames.max(0) as u32);
    }));
    ffi::SQLITE_OK
}

impl Checkpointer {
    /// Opens a second connection to the store at `path`, starts the checkpointer thread on it
    /// and hands `writer`'s checkpoints to it. `page`: the store's page size; `synchronous`:
    /// the writer's setting, so each checkpoint syncs as the writer's would have.
    pub(crate) fn start(
        writer: &Connection,
        path: &Path,
        page: i64,
        synchronous: &str,
        checkpoint_after: i64,
    ) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open_with_flags_and_vfs(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            walvfs::NAME,
        )
        .map_err(|e| StoreError::Database(format!("cannot open {}: {e}", path.display())))?;
        // No lookaside memory: SQLite's default, 1200 bytes x 100 slots, is written through
        // as it is set up, so all of it is resident (the receiver's peak RSS, bench row 2),
        // for a connection that runs one statement per pass.
        // SAFETY: the connection was just opened on this thread and has used none yet.
        let rc = unsafe {
            ffi::sqlite3_db_config(
                conn.handle(),
                ffi::SQLITE_DBCONFIG_LOOKASIDE,
                std::ptr::null_mut::<c_void>(),
                0 as c_int,
                0 as c_int,
            )
        };
        if rc != ffi::SQLITE_OK {
            tracing::debug!(
                rc,
                "the checkpointer's connection keeps its lookaside memory"
            );
        }
        // As the writer's (lib.rs, `open`): a lock held elsewhere for a moment is waited for.
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(db_err)?;
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(db_err)?;
        // Never truncated, as the writer's (lib.rs, `prepare_wal`).
        conn.pragma_update(None, "journal_size_limit", -1)
            .map_err(db_err)?;
        // A read opens the connection's WAL (a checkpoint on a connection that has none would
        // read the whole schema first); the header holds the number, no table is read.
        conn.query_row("PRAGMA user_version", [], |_| Ok(()))
            .map_err(db_err)?;
        let frames = |bytes: i64| (bytes / page.max(512)).clamp(1, i64::from(u32::MAX)) as u32;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            ended: Condvar::new(),
            start_at: frames(checkpoint_after),
            finish_at: frames(checkpoint_after + BACKGROUND_ROOM),
            tail: frames(TAIL_BYTES),
        });
        let on_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("qtc-checkpoint".into())
            .spawn(move || on_thread.serve(&conn))
            .map_err(|e| StoreError::Database(format!("cannot start the checkpointer: {e}")))?;
        // SAFETY: the pointer stays valid while `shared` lives: `stop` takes the hook away
        // before this Checkpointer, and its Arc, go.
        unsafe {
            ffi::sqlite3_wal_hook(
                writer.handle(),
                Some(hook),
                Arc::as_ptr(&shared).cast_mut().cast(),
            );
        }
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Asks for a pass now, whatever the WAL holds (the end of housekeeping); false when the
    /// thread is gone and the caller must checkpoint itself.
    pub(crate) fn soon(&self) -> bool {
        let mut st = self.shared.lock();
        if st.gone {
            return false;
        }
        st.busy = true;
        self.shared.wake.notify_one();
        true
    }

    /// Waits until no pass is asked for or running: the writer may then checkpoint itself.
    pub(crate) fn wait_idle(&self) {
        let mut st = self.shared.lock();
        while st.busy {
            st = self
                .shared
                .ended
                .wait(st)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// What was done so far.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> Counts {
        self.shared.lock().counts
    }

    /// Ends the thread and leaves the hook on, as a panic on the thread would (tests).
    #[cfg(test)]
    pub(crate) fn end_thread(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Takes the hook off `writer`, lets a running pass end and the thread close its
    /// connection.
    pub(crate) fn stop(mut self, writer: &Connection) {
        // SAFETY: the writer's connection; no hook runs once this returns.
        unsafe {
            ffi::sqlite3_wal_hook(writer.handle(), None, std::ptr::null_mut());
        }
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
