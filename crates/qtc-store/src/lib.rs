//! qtc's message store: one SQLite file (`qtc.sqlite` in the data directory) in WAL mode, so the
//! sysop CLI can read and change it while the daemon runs.
//!
//! This is the only crate that touches SQLite. It implements [`qtc_mail::MessageStore`] for the
//! BBS interpreter and adds what the sysop CLI needs (user management). Calls block: the daemon
//! runs them on its store thread.
//!
//! Durability: `synchronous = FULL` by default, because a message we have acknowledged to a
//! partner must survive a power cut; see [`Durability`].
//!
//! `unsafe` is denied everywhere but in `walvfs`, the VFS that writes a commit's WAL frames in
//! one call (SQLite's VFS interface is C function tables), and `checkpoint`, whose WAL hook
//! and checkpoint calls go through SQLite's C interface.
#![deny(unsafe_code)]

mod checkpoint;
mod counts;
mod folders;
mod forward;
pub mod housekeep;
mod mailview;
mod parts;
mod schema;
mod tallies;
mod texts;
mod traffic;
mod tx;
mod users;
mod walvfs;
mod winlink;
mod wp;

pub use folders::FolderEntry;
pub use forward::{
    Form, FwdOutcome, Incoming, MadeForms, Pending, ProposalInfo, Queued, Stored, FORMS,
};
pub use housekeep::{Housekeeping, Housekept, Lifetimes};
pub use mailview::{Area, MailParts, Overview};
pub use parts::{Attachment, Recipient};
pub use tallies::Miscount;
pub use texts::Packed;
pub use traffic::DayTraffic;
pub use users::{hash_password, verify_password, DUMMY_HASH};
pub use wp::{WpEntry, WpPage};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use qtc_callsign::Callsign;
use qtc_mail::route;
use qtc_mail::{
    GreetingCounts, ListFilter, Message, MessageHeader, MessageStore, MsgStatus, MsgType,
    NewMessage, Station, StoreError, User,
};
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "qtc.sqlite";

/// Page size of a new database file, in bytes: SQLite's smallest. Every B-tree a commit
/// touches costs a WAL frame of this size, and a received block of five 2 KB messages touches
/// about a dozen (the header, the pointer map, the tallies, the message number, the BID and
/// listing indexes, the queue), while a message fills its own overflow pages whatever their
/// size. A receiver writes 12.9 times a 2 KB message's size with 8 KB pages, 4.1 with 1 KB and
/// 3.7 with 512 bytes (bench row 12; docs/performance.md, "Bytes written per received message").
const PAGE_SIZE: i64 = 512;

/// Bytes of WAL before SQLite copies it into the database (its automatic checkpoint; 1,000
/// pages by default). Every commit rewrites the pages it touches into the WAL, but a checkpoint
/// writes each page once: the fewer checkpoints, the fewer writes of the same bookkeeping pages
/// (and, on ext4, the fewer journal commits for the database file's growth). 4 MB holds about
/// 1,300 received 2 KB bulletins: 1,000 cost an ext4 device 1 % less than with 2 MB. The WAL
/// file is kept at about this size, and the checkpointer's room, for good
/// ([`Store::prepare_wal`]).
const CHECKPOINT_AFTER: i64 = 4 << 20;

/// WAL frames beyond [`CHECKPOINT_AFTER`] and the checkpointer's room
/// ([`checkpoint::BACKGROUND_ROOM`]) that the file has room for: the commit that passes the
/// mark, and the ones a reader holding an old snapshot makes wait for the restart.
const WAL_SPARE_FRAMES: i64 = 256;

/// How hard SQLite works to keep a commit across a power cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous = FULL`: a commit is on disk before we acknowledge it (the default).
    #[default]
    Full,
    /// `synchronous = NORMAL`: in WAL mode, a power cut may lose the last commits but never
    /// corrupts the file. Faster on SD cards.
    Normal,
}

impl Durability {
    fn synchronous(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

/// How large the store may grow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Quota {
    /// As large as the disk allows.
    #[default]
    Unlimited,
    /// At most this many bytes (`[store] max_mb`).
    Bytes(u64),
    /// Worked out from the disk's free space, again whenever the owner measures it (the
    /// daemon's `room`): the store grows, other programs fill or free the disk.
    FollowsDisk,
}

/// An open message store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    quota: Quota,
    /// Who this BBS is, from [`Store::set_station`]; `None` until then (a read-only
    /// connection; `qtc store check|compact|pack`, which store nothing).
    station: Option<Station>,
    queued: QueueMarks,
    durability: Durability,
    argon2: users::Argon2Memory,
    /// Copies the WAL into the database on a thread of its own ([`Store::checkpoint_apart`]);
    /// `None`: the writer's commits do it (SQLite's automatic checkpoint).
    checkpointer: Option<checkpoint::Checkpointer>,
}

impl Drop for Store {
    fn drop(&mut self) {
        // The hook points into the checkpointer: it goes first.
        if let Some(c) = self.checkpointer.take() {
            c.stop(&self.conn);
        }
    }
}

/// Per partner, a mark that moves whenever this store queues a message for it. A forwarding
/// session that found a partner's queue empty at mark m need not look again (a store call and
/// a read transaction per turn) until the mark moves. Writes by another process (the sysop
/// CLI) do not move it: what they queue goes out from the next session on.
#[derive(Clone, Debug, Default)]
pub struct QueueMarks(Arc<Mutex<HashMap<Callsign, u64>>>);

impl QueueMarks {
    /// The partner's current mark.
    pub fn get(&self, partner: Callsign) -> u64 {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&partner).copied().unwrap_or(0)
    }

    fn bump(&self, partner: Callsign) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry(partner).or_default() += 1;
    }
}

fn db_err(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => StoreError::Full,
        _ => StoreError::Database(e.to_string()),
    }
}

/// A pragma that answers one count (`page_size`, `page_count`, `freelist_count`, ...), on any
/// connection or transaction of the store.
fn pragma_count(conn: &Connection, pragma: &str) -> Result<u64, StoreError> {
    conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
        .map_err(db_err)
}

/// Private mail and password hashes: the data directory and the database are the owner's
/// alone (0700, 0600 when created), whatever the umask; group and other bits found on them
/// are taken away.
fn private(dir: &Path, db: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    owner_only(dir)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(db)
        .map_err(|e| StoreError::Database(format!("cannot create {}: {e}", db.display())))?;
    owner_only(db)
}

/// Takes the group and other permission bits off a path, when it exists and has any.
fn owner_only(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let mode = meta.permissions().mode();
    if mode & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & !0o077)).map_err(|e| {
        StoreError::Database(format!(
            "cannot make {} private to its owner: {e}",
            path.display()
        ))
    })
}

impl Store {
    /// Opens (creating if needed) the store in `dir`, migrating its schema to the current version.
    pub fn open(dir: &Path, durability: Durability) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Database(format!(
                "cannot create data directory {}: {e}",
                dir.display()
            ))
        })?;
        let path = dir.join(DB_FILE);
        private(dir, &path)?;
        walvfs::register().map_err(StoreError::Database)?;
        let mut conn = Connection::open_with_flags_and_vfs(
            &path,
            rusqlite::OpenFlags::default(),
            walvfs::NAME,
        )
        .map_err(|e| StoreError::Database(format!("cannot open {}: {e}", path.display())))?;
        // Another process (the sysop CLI or the daemon) may hold the write lock briefly.
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(db_err)?;
        // A deferred transaction that reads first and then writes fails at once with "database
        // is locked" (no busy wait) when another connection, such as a sysop's `qtc` command,
        // committed in between; an immediate one takes the write lock first and waits for it.
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        // Only a new file takes it (an existing one keeps its size).
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(db_err)?;
        // Likewise only a new file: housekeeping then gives freed pages back in bounded steps
        // (`PRAGMA incremental_vacuum`), never with a whole-file VACUUM. An older file is
        // switched once by `qtc store compact` (docs/operating.md).
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "synchronous", durability.synchronous())
            .map_err(db_err)?;
        let page: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .map_err(db_err)?;
        conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_AFTER / page.max(512))
            .map_err(db_err)?;
        // The WAL is never truncated (nor deleted at close: walvfs keeps it): new frames are
        // written over the old ones, into blocks the file system has allocated already, so the
        // `fdatasync` of a commit writes the frames and no file system metadata (on ext4 a
        // journal commit of about 25 KB each time the file grew).
        conn.pragma_update(None, "journal_size_limit", -1)
            .map_err(db_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(db_err)?;
        // The writer's page cache, 384 KiB of pages instead of SQLite's 2 MiB: an insert walks
        // each B-tree's path to its newest leaf, a few pages each, and users' reads have
        // connections of their own. SQLite counts 648 bytes a page (about 600 pages), and each
        // takes 800 bytes of heap with its headers. 768 KiB ran the same instructions receiving
        // 1,000 or 5,000 bulletins and cost the receiver 0.5 MB more at its peak; 384 rather
        // than 256 keeps room for the inner pages of a large store's randomly keyed indexes
        // (BIDs, recipients) (docs/performance.md).
        conn.pragma_update(None, "cache_size", -384)
            .map_err(db_err)?;
        let mut store = Store {
            conn,
            path,
            quota: Quota::default(),
            station: None,
            queued: QueueMarks::default(),
            durability,
            argon2: users::Argon2Memory::default(),
            checkpointer: None,
        };
        // Migrations that rewrite a table keep their statement journals in a file: in memory,
        // a store of a million messages took half a gigabyte (migration 16).
        schema::migrate(&mut store.conn)?;
        // An INSERT that fires the tally trigger may need a statement journal; on disk it
        // costs a write per page touched (five times the pwrite calls of a received block).
        store
            .conn
            .pragma_update(None, "temp_store", "MEMORY")
            .map_err(db_err)?;
        store.prepare_wal(page)?;
        // SQLite gives the WAL and shared-memory files the database's mode; ones left by an
        // older qtc are fixed here.
        for suffix in ["-wal", "-shm"] {
            let mut side = store.path.clone().into_os_string();
            side.push(suffix);
            owner_only(Path::new(&side))?;
        }
        Ok(store)
    }

    /// Message `number`, with its body when `body` is true (else an empty one).
    fn message_row(&mut self, number: u64, body: bool) -> Result<Option<Message>, StoreError> {
        let head = self
            .conn
            .prepare_cached(&format!(
                "SELECT {}, read_count, charset FROM messages WHERE number = ?1",
                header_columns("status")
            ))
            .and_then(|mut st| {
                st.query_row([number as i64], |row| {
                    Ok(Message {
                        header: header_from_row(row)?,
                        rlines: Vec::new(),
                        body: Vec::new(),
                        read_count: row.get::<_, i64>(10)? as u64,
                        copies: Vec::new(),
                        cc: Vec::new(),
                        files: Vec::new(),
                        charset: row.get(11)?,
                    })
                })
                .optional()
            })
            .map_err(db_err)?;
        let Some(mut m) = head else {
            return Ok(None);
        };
        if let Some(text) = texts::get(&self.conn, number)? {
            if body {
                (m.rlines, m.body) = text.split()?;
            } else {
                m.rlines = text.rlines()?;
            }
        }
        (m.copies, m.cc, m.files) = parts::shown(&self.conn, number, &m.header.to)?;
        Ok(Some(m))
    }

    /// Opens an existing store for reading only, beside the daemon's read-write connection:
    /// in WAL mode it reads the last commit without waiting for the writer. No migration runs;
    /// the writer has opened (and migrated) the file first.
    pub fn open_read_only(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join(DB_FILE);
        let conn = Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| StoreError::Database(format!("cannot open {}: {e}", path.display())))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(db_err)?;
        Ok(Store {
            conn,
            path,
            quota: Quota::default(),
            station: None,
            queued: QueueMarks::default(),
            durability: Durability::default(),
            argon2: users::Argon2Memory::default(),
            checkpointer: None,
        })
    }

    /// Caps the database file at about `bytes` (0: no cap). A write that would pass it fails
    /// with [`StoreError::Full`] and changes nothing, as a full disk would.
    pub fn set_max_size(&mut self, bytes: u64) -> Result<(), StoreError> {
        let page = self.pragma_count("page_size")?;
        let pages = if bytes == 0 {
            u64::from(u32::MAX)
        } else {
            (bytes / page.max(1)).max(1)
        };
        self.conn
            .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
            .map_err(db_err)?;
        Ok(())
    }

    /// Sets how large the store may grow; a fixed size applies at once, [`Quota::FollowsDisk`]
    /// once the owner measures the disk ([`Store::set_max_size`]).
    pub fn set_quota(&mut self, quota: Quota) -> Result<(), StoreError> {
        self.quota = quota;
        match quota {
            Quota::Unlimited => self.set_max_size(0),
            Quota::Bytes(b) => self.set_max_size(b),
            Quota::FollowsDisk => Ok(()),
        }
    }

    /// How large the store may grow.
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// The cap on the database file now, in bytes; 0: none.
    pub fn max_size(&mut self) -> Result<u64, StoreError> {
        let pages = self.pragma_count("max_page_count")?;
        if pages >= u64::from(u32::MAX) - 1 {
            return Ok(0);
        }
        Ok(pages.saturating_mul(self.pragma_count("page_size")?))
    }

    /// Bytes the `[store] max_mb` quota still leaves (free pages included); `u64::MAX`-ish
    /// without a quota.
    pub fn quota_room(&mut self) -> Result<u64, StoreError> {
        let page = self.pragma_count("page_size")?;
        let max = self.pragma_count("max_page_count")?;
        let used = self
            .pragma_count("page_count")?
            .saturating_sub(self.pragma_count("freelist_count")?);
        Ok(max.saturating_sub(used).saturating_mul(page))
    }

    /// A pragma that answers one count (`page_size`, `page_count`, `freelist_count`, ...).
    pub(crate) fn pragma_count(&self, pragma: &str) -> Result<u64, StoreError> {
        pragma_count(&self.conn, pragma)
    }

    /// Copies the WAL into the database and truncates it, giving its disk space back: when the
    /// disk is nearly full, the next message then needs only its own room. (The WAL grows
    /// back as commits need it; the next start makes it whole again.)
    pub fn shrink_wal(&mut self) -> Result<(), StoreError> {
        // A checkpoint running elsewhere would make this one fail at once.
        if let Some(c) = &self.checkpointer {
            c.wait_idle();
        }
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(db_err)
    }

    /// Grows the WAL file to its working size ([`CHECKPOINT_AFTER`] and spare frames) with
    /// written zeros, once per store (and again after [`Store::shrink_wal`] gave the space
    /// back): its blocks are then allocated and written, and every later commit writes over
    /// them. SQLite ignores what lies past the WAL's last valid frame. Done under the write
    /// lock, so no other connection writes the WAL meanwhile; only bytes past the file's end
    /// are written.
    fn prepare_wal(&mut self, page: i64) -> Result<(), StoreError> {
        let frames =
            (CHECKPOINT_AFTER + checkpoint::BACKGROUND_ROOM) / page.max(512) + WAL_SPARE_FRAMES;
        let want = (32 + frames * (page + 24)) as u64;
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let have = std::fs::metadata(&wal).map_or(0, |m| m.len());
        if (want..=4 * want).contains(&have) {
            // The usual open: nothing to do, and no write lock taken.
            return Ok(());
        }
        // A WAL that a long transaction (a migration) or a long reader grew far past its
        // working size is copied into the database and given back first.
        if have > 4 * want {
            self.shrink_wal()?;
        }
        let tx = self.conn.transaction().map_err(db_err)?;
        if let Err(e) = grow_with_zeros(Path::new(&wal), want) {
            // A full disk: the WAL grows as commits need it, as before.
            tracing::warn!(wal = %Path::new(&wal).display(), error = %e, "cannot grow the WAL to its working size");
        }
        tx.commit().map_err(db_err)
    }

    /// Hands the WAL's checkpoints to a thread and connection of their own (the daemon; a
    /// one-shot CLI command leaves them to its commits): a commit then never waits for the WAL
    /// to be copied into the database, unless the WAL has filled the room it has (module
    /// `checkpoint`).
    pub fn checkpoint_apart(&mut self) -> Result<(), StoreError> {
        if self.checkpointer.is_some() {
            return Ok(());
        }
        let page = self.pragma_count("page_size")? as i64;
        self.checkpointer = Some(checkpoint::Checkpointer::start(
            &self.conn,
            &self.path,
            page,
            self.durability.synchronous(),
            CHECKPOINT_AFTER,
        )?);
        Ok(())
    }

    /// The checkpointer's counts; `None` without one.
    #[cfg(test)]
    pub(crate) fn checkpoint_counts(&self) -> Option<checkpoint::Counts> {
        self.checkpointer
            .as_ref()
            .map(checkpoint::Checkpointer::counts)
    }

    /// Copies the WAL into the database soon: on the checkpointer's thread when there is one
    /// (and it has not ended), else now. The WAL keeps its size (`prepare_wal`).
    pub(crate) fn checkpoint_soon(&mut self) -> Result<(), StoreError> {
        match &self.checkpointer {
            Some(c) if c.soon() => Ok(()),
            _ => self
                .conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .map_err(db_err),
        }
    }

    /// The marks that move when a message is queued for a partner (shared with the caller).
    pub fn queue_marks(&self) -> QueueMarks {
        self.queued.clone()
    }

    /// Sets who we are and who we forward to; used by every later insert.
    pub fn set_station(&mut self, station: Station) {
        self.station = Some(station);
    }

    /// What the hold/reject rules say of a message, under the station's rules as last set:
    /// the one copy of the rules, so a reload reaches the forwarder's check of proposals too.
    pub fn rule_action(
        &self,
        input: &qtc_mail::rules::RuleInput<'_>,
    ) -> Option<qtc_mail::rules::RuleAction> {
        let station = self.station.as_ref()?;
        qtc_mail::rules::check(&station.rules, input).map(|r| r.action)
    }

    /// Stores many messages written here in one transaction (an import). A known BID fails
    /// only its own message; any other error stores nothing.
    pub fn insert_many(
        &mut self,
        msgs: &[NewMessage],
        now: i64,
    ) -> Result<Vec<Result<u64, StoreError>>, StoreError> {
        let station = station(&self.station)?;
        let tx = self.conn.transaction().map_err(db_err)?;
        let mut results = Vec::with_capacity(msgs.len());
        let mut batch = Batch::default();
        for m in msgs {
            match insert_batched(&tx, m, station, &self.queued, (None, now), &mut batch) {
                Err(e @ StoreError::DuplicateBid(_)) => results.push(Err(e)),
                Err(e) => return Err(e),
                Ok((n, _)) => results.push(Ok(n)),
            }
        }
        batch.write(&tx)?;
        tx.commit().map_err(db_err)?;
        Ok(results)
    }

    /// Holds a message for the sysop: nobody else sees it, and it is not forwarded, until it
    /// is released. False when there is no such message, or it is killed or held already.
    pub fn hold(&mut self, number: u64) -> Result<bool, StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE messages SET status = 'H' WHERE number = ?1 AND status NOT IN ('H', 'K')",
                [number as i64],
            )
            .map_err(db_err)?;
        Ok(n == 1)
    }

    /// Releases a held message: it becomes new and is queued for forwarding like any other.
    /// False when there is no held message with that number.
    pub fn release(&mut self, number: u64, now: i64) -> Result<bool, StoreError> {
        let station = station(&self.station)?;
        let tx = self.conn.transaction().map_err(db_err)?;
        let row: Option<(String, String, String, String)> = tx
            .query_row(
                "SELECT kind, to_call, at, origin FROM messages WHERE number = ?1 AND status = 'H'",
                [number as i64],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(db_err)?;
        let Some((kind, to, at, origin)) = row else {
            return Ok(false);
        };
        let rlines = match texts::get(&tx, number)? {
            Some(text) => text.rlines()?,
            None => Vec::new(),
        };
        tx.execute(
            "UPDATE messages SET status = 'N' WHERE number = ?1",
            [number as i64],
        )
        .map_err(db_err)?;
        // Our own R: line is first; the loop check looks at the others.
        let (_, theirs) = route::split_first_line(&rlines);
        let seen = route::rline_calls(theirs);
        let query = route::RouteQuery {
            kind: kind_from_db(&kind),
            to: &to,
            at: &at,
            origin: (!origin.is_empty()).then_some(origin.as_str()),
            seen: &seen,
        };
        queue_in(&tx, number, &query, station, &self.queued, now)?;
        tx.commit().map_err(db_err)?;
        Ok(true)
    }

    /// Messages by type and status letter (`P`/`B`/`T`, `N`/`Y`/`F`/`K`/`H`), from the tallies:
    /// what /metrics reports, at the same cost on any store size.
    pub fn message_tallies(&mut self) -> Result<Vec<(char, char, u64)>, StoreError> {
        counts::by_kind_and_status(&self.conn)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks the store in `dir` without opening it as a store (no migration, nothing
    /// written): SQLite's integrity check, then the tallies against the messages. Works when
    /// the disk is full: a stopped daemon's store, whose WAL index cannot be made then, is
    /// checked with the index in memory (exclusive locking); a running daemon's is already
    /// there.
    pub fn check_dir(dir: &Path) -> Result<Checked, StoreError> {
        let path = dir.join(DB_FILE);
        if !path.exists() {
            return Err(StoreError::Database(format!(
                "no store at {}",
                path.display()
            )));
        }
        // Through walvfs, as the writer: the WAL stays when this connection closes last.
        walvfs::register().map_err(StoreError::Database)?;
        let check = |exclusive: bool| -> Result<Checked, StoreError> {
            let mut conn = Connection::open_with_flags_and_vfs(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
                walvfs::NAME,
            )
            .map_err(db_err)?;
            conn.busy_timeout(std::time::Duration::from_secs(5))
                .map_err(db_err)?;
            if exclusive {
                conn.query_row("PRAGMA locking_mode = EXCLUSIVE", [], |_| Ok(()))
                    .map_err(db_err)?;
            }
            // The check visits every page, most of them more than once: mapped, it reads
            // them without a `pread` each (on 1 M messages in 512-byte pages, 13.8 s of CPU
            // down to 5.6, what the same check costs on 4 KB pages). Where the map cannot
            // be made (a 32-bit address space), SQLite reads as before.
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            conn.query_row(&format!("PRAGMA mmap_size = {size}"), [], |_| Ok(()))
                .map_err(db_err)?;
            checked(&mut conn)
        };
        check(false).or_else(|e| {
            tracing::debug!(error = %e, "store check: trying again with the WAL index in memory");
            check(true)
        })
    }

    /// Runs SQLite's integrity check, then checks the tallies against the messages.
    pub fn check(&mut self) -> Result<Checked, StoreError> {
        checked(&mut self.conn)
    }

    /// Counts the tallies again from the messages (`qtc store recount`), in one transaction,
    /// and writes the keys that were wrong: what they were, empty when all were right.
    pub fn recount_tallies(&mut self) -> Result<Vec<Miscount>, StoreError> {
        let tx = tx::Tx::write(&mut self.conn)?;
        let wrong = tallies::recount(&tx)?;
        tx.commit()?;
        Ok(wrong)
    }
}

/// What `qtc store check` found.
#[derive(Debug, Default)]
pub struct Checked {
    /// What SQLite's integrity check reports: damage to the file.
    pub damage: Vec<String>,
    /// Tallies that differ from the messages (checked only when the file is sound).
    pub miscounts: Vec<Miscount>,
}

impl Checked {
    /// Nothing found.
    pub fn is_empty(&self) -> bool {
        self.damage.is_empty() && self.miscounts.is_empty()
    }
}

/// The integrity check, then the tallies (in one read transaction) if the file is sound.
fn checked(conn: &mut Connection) -> Result<Checked, StoreError> {
    let damage = integrity(conn)?;
    if !damage.is_empty() {
        return Ok(Checked {
            damage,
            miscounts: Vec::new(),
        });
    }
    let tx = tx::Tx::read(conn)?;
    let miscounts = tallies::miscounts(&tx)?;
    tx.commit()?;
    Ok(Checked { damage, miscounts })
}

/// SQLite's integrity check on `conn`: the problems found.
fn integrity(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare("PRAGMA integrity_check").map_err(db_err)?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    Ok(rows.into_iter().filter(|r| r != "ok").collect())
}

/// The columns [`header_from_row`] reads, `status` being the status column or an expression.
fn header_columns(status: &str) -> String {
    format!("number, kind, {status}, to_call, at, from_call, bid, subject, size, created")
}

/// The status of a message as `viewer` (the placeholder of a bound callsign) sees it, unless it
/// is held or killed: a bulletin is new until they read it (their row in `bulletin_reads`);
/// their own read mark when they are one of its other recipients (Cc, a further To); the
/// message's status otherwise (the addressee's mark, or no mark of theirs).
fn status_seen_by(viewer: &str) -> String {
    format!(
        "CASE WHEN status IN ('H', 'K') THEN status \
         WHEN kind = 'B' THEN CASE WHEN EXISTS (SELECT 1 FROM bulletin_reads b \
           WHERE b.number = messages.number AND b.call = {viewer}) THEN 'Y' ELSE 'N' END \
         WHEN to_call = {viewer} THEN status \
         ELSE COALESCE((SELECT CASE MIN(r.read) WHEN 0 THEN 'N' WHEN 1 THEN 'Y' END \
           FROM recipients r WHERE r.number = messages.number AND r.call = {viewer}), status) END"
    )
}

fn kind_from_db(s: &str) -> MsgType {
    s.chars()
        .next()
        .and_then(MsgType::from_letter)
        .unwrap_or(MsgType::Personal)
}

fn status_from_db(s: &str) -> MsgStatus {
    s.chars()
        .next()
        .and_then(MsgStatus::from_letter)
        .unwrap_or(MsgStatus::New)
}

fn header_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MessageHeader> {
    Ok(MessageHeader {
        number: row.get::<_, i64>(0)? as u64,
        kind: kind_from_db(&row.get::<_, String>(1)?),
        status: status_from_db(&row.get::<_, String>(2)?),
        to: row.get(3)?,
        at: row.get(4)?,
        from: row.get(5)?,
        bid: row.get(6)?,
        subject: row.get(7)?,
        size: row.get::<_, i64>(8)? as u64,
        created: row.get(9)?,
    })
}

impl MessageStore for Store {
    fn user(&mut self, call: Callsign) -> Result<Option<User>, StoreError> {
        users::get(&self.conn, &call.to_string())
    }

    fn set_password(&mut self, call: Callsign, password: &str) -> Result<(), StoreError> {
        Store::set_password(self, call, password)
    }

    fn update_user(&mut self, user: &User) -> Result<(), StoreError> {
        users::update_profile(&self.conn, user)?;
        wp::learn(
            &self.conn,
            &user.call.to_string(),
            &user.home_bbs,
            wp::Source::User,
            0,
        )
    }

    fn insert_message(
        &mut self,
        msg: &NewMessage,
        bbs_call: Callsign,
        now: i64,
    ) -> Result<u64, StoreError> {
        let station = self.station.get_or_insert_with(|| Station::new(bbs_call));
        let tx = self.conn.transaction().map_err(db_err)?;
        let (number, _) = insert_in(&tx, msg, station, &self.queued, None, now)?;
        tx.commit().map_err(db_err)?;
        Ok(number)
    }

    fn message(&mut self, number: u64) -> Result<Option<Message>, StoreError> {
        self.message_row(number, true)
    }

    fn message_head(&mut self, number: u64) -> Result<Option<Message>, StoreError> {
        // The body stays on disk: `R` reads it in pieces (`body_chunk`).
        self.message_row(number, false)
    }

    fn body_chunk(&mut self, number: u64, offset: u64, len: usize) -> Result<Vec<u8>, StoreError> {
        texts::body_chunk(&self.conn, number, offset, len)
    }

    fn list(&mut self, filter: &ListFilter) -> Result<Vec<MessageHeader>, StoreError> {
        let at = match &filter.at {
            Some(at) => Some(counts::at_match(&self.conn, at, filter.last)?),
            None => None,
        };
        let bulletins = filter.unread_by.is_none() || counts::open_bulletins(&self.conn)?;
        let (sql, args) = list_query(filter, at.as_ref(), bulletins);
        let mut stmt = self.conn.prepare_cached(&sql).map_err(db_err)?;
        let rows = stmt
            .query_map(params_from_iter(args.iter()), header_from_row)
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        Ok(rows)
    }

    fn set_status(&mut self, number: u64, status: MsgStatus) -> Result<bool, StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE messages SET status = ?1 WHERE number = ?2",
                params![status.letter().to_string(), number as i64],
            )
            .map_err(db_err)?;
        Ok(n == 1)
    }

    fn mark_read(&mut self, number: u64, reader: Callsign) -> Result<(), StoreError> {
        let reader = reader.to_string();
        let tx = self.conn.transaction().map_err(db_err)?;
        tx.execute(
            "UPDATE messages SET read_count = read_count + 1, \
             status = CASE WHEN status = 'N' AND to_call = ?2 AND kind != 'B' THEN 'Y' \
               ELSE status END \
             WHERE number = ?1 AND (to_call = ?2 \
               OR number IN (SELECT number FROM recipients WHERE call = ?2))",
            params![number as i64, reader],
        )
        .and_then(|_| {
            tx.execute(
                "UPDATE recipients SET read = 1 WHERE number = ?1 AND call = ?2",
                params![number as i64, reader],
            )
        })
        .and_then(|_| {
            // A bulletin's read mark is the reader's own: one row per reader and bulletin
            // read, nothing when it is stored, so neither an insert nor a listing costs more
            // with more users; reading it again writes nothing (no commit to sync).
            tx.execute(
                "INSERT OR IGNORE INTO bulletin_reads (number, call) \
                 SELECT number, ?2 FROM messages WHERE number = ?1 AND kind = 'B'",
                params![number as i64, reader],
            )
        })
        .map_err(db_err)?;
        tx.commit().map_err(db_err)
    }

    fn status_seen_by(
        &mut self,
        number: u64,
        reader: Callsign,
    ) -> Result<Option<MsgStatus>, StoreError> {
        let status: Option<String> = self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM messages WHERE number = ?2",
                status_seen_by("?1")
            ))
            .and_then(|mut st| {
                st.query_row(params![reader.to_string(), number as i64], |r| r.get(0))
                    .optional()
            })
            .map_err(db_err)?;
        Ok(status.as_deref().map(status_from_db))
    }

    fn bid_known(&mut self, bid: &str) -> Result<bool, StoreError> {
        bid_known_in(&self.conn, bid)
    }

    fn home_bbs(&mut self, call: &str) -> Result<Option<String>, StoreError> {
        wp::lookup(&self.conn, call)
    }

    fn counts(&mut self) -> Result<(u64, u64), StoreError> {
        counts::active_and_latest(&self.conn)
    }

    fn greeting_counts(
        &mut self,
        call: Callsign,
        sysop: bool,
    ) -> Result<GreetingCounts, StoreError> {
        counts::greeting(&self.conn, call, sysop)
    }

    fn categories(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        counts::categories(&self.conn)
    }
}

/// Appends written zeros to the file at `path` until it is `want` bytes long, and syncs it;
/// on a failure (a full disk) takes them off again.
fn grow_with_zeros(path: &Path, want: u64) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    let had = file.metadata()?.len();
    if had >= want {
        return Ok(());
    }
    // In 4 KB writes: one large write makes the page cache keep the file as large folios, and
    // a commit written over part of one would dirty (and write back) all of it. Synced now, so
    // the file system allocates the blocks once, here.
    let zeros = [0u8; 4096];
    let mut have = had;
    let grown = (|| {
        while have < want {
            file.write_all(&zeros)?;
            have += zeros.len() as u64;
        }
        file.sync_data()
    })();
    if grown.is_err() {
        let _ = file.set_len(had);
    }
    grown
}

fn bid_known_in(conn: &Connection, bid: &str) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT 1 FROM bids WHERE bid = ?1")
        .and_then(|mut st| st.exists([bid.to_ascii_uppercase()]))
        .map_err(db_err)
}

/// Inserts one message inside an open transaction: records its BID, prepends our R: line, holds
/// it if its R: lines already name us (a loop), and queues it for the partners the routing
/// rules pick. `origin` is the partner it came from (`None`: written here).
fn insert_in(
    tx: &Connection,
    msg: &NewMessage,
    station: &Station,
    queued: &QueueMarks,
    origin: Option<&str>,
    now: i64,
) -> Result<(u64, MsgStatus), StoreError> {
    let mut batch = Batch::default();
    let stored = insert_batched(tx, msg, station, queued, (origin, now), &mut batch)?;
    batch.write(tx)?;
    Ok(stored)
}

/// What the messages inserted in one transaction share: their texts and their counts in
/// `tallies`, written together before it commits ([`Batch::write`]), the next message number
/// (looked up for the first, then counted on: only this transaction writes), and the
/// white-pages entry last learned for each sender (a block of bulletins from one BBS names the
/// same origin in each: a second upsert would change nothing).
#[derive(Default)]
pub(crate) struct Batch {
    text: texts::Batch,
    tallies: Vec<(Tally, i64)>,
    numbers: Option<Numbers>,
    learned: Vec<(String, String)>,
}

/// A `tallies` key: kind, status, bulletin area (a bulletin's addressee, '' otherwise), `@`.
type Tally = (char, char, String, String);

impl Batch {
    /// Counts a message just inserted: added to `tallies` by [`Batch::write`], once per key
    /// for the transaction (schema 22: one upsert a block of bulletins to one area, where a
    /// trigger made one a message). A message changed or removed before `write` is counted
    /// right too: the triggers' -1 for a key without a row yet makes one (schema 23), and
    /// this count brings it back to 0.
    fn count(&mut self, msg: &NewMessage, status: MsgStatus, at: &str) {
        let area = if msg.kind == MsgType::Bulletin {
            msg.to.to_ascii_uppercase()
        } else {
            String::new()
        };
        let key = (msg.kind.letter(), status.letter(), area, at.to_string());
        match self.tallies.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => self.tallies.push((key, 1)),
        }
    }

    /// Writes what the transaction's messages share: their texts and their tallies.
    pub(crate) fn write(self, tx: &Connection) -> Result<(), StoreError> {
        self.text.write(tx)?;
        let mut st = tx
            .prepare_cached(
                "INSERT INTO tallies (kind, status, area, at, n) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (kind, status, area, at) DO UPDATE SET n = n + excluded.n",
            )
            .map_err(db_err)?;
        for ((kind, status, area, at), n) in &self.tallies {
            st.execute(params![kind.to_string(), status.to_string(), area, at, n])
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Learns `home` as the home BBS of `call` from an R: line, unless this transaction
    /// learned just that last for `call` (the upsert would then change nothing).
    fn learn_origin(
        &mut self,
        tx: &Connection,
        call: &str,
        home: String,
        now: i64,
    ) -> Result<(), StoreError> {
        let last = self.learned.iter_mut().find(|(c, _)| c == call);
        if last.as_ref().is_some_and(|(_, h)| *h == home) {
            return Ok(());
        }
        wp::learn(tx, call, &home, wp::Source::Rline, now)?;
        match last {
            Some((_, h)) => *h = home,
            None => self.learned.push((call.to_string(), home)),
        }
        Ok(())
    }
}

/// [`insert_in`], its text added to `batch` for the caller to write with the other texts of
/// the transaction (before it commits).
fn insert_batched(
    tx: &Connection,
    msg: &NewMessage,
    station: &Station,
    queued: &QueueMarks,
    (origin, now): (Option<&str>, i64),
    batch: &mut Batch,
) -> Result<(u64, MsgStatus), StoreError> {
    // The number is known before the row is written, so BID and R: line go in with it: one
    // INSERT, no UPDATE (fewer WAL pages per message). Only this transaction writes now.
    let number = next_number(tx, &mut batch.numbers)?;
    let bid = match &msg.bid {
        Some(b) => b.to_ascii_uppercase(),
        None => generated_bid(number, station.call),
    };
    // Recording the BID is its check (one lookup, where a check and then an insert were
    // two): a known one is left as it was, and the message is a duplicate before anything
    // else. The number stays free for the next message.
    let recorded = tx
        .prepare_cached(
            "INSERT INTO bids (bid, seen, number) VALUES (?1, ?2, ?3) \
             ON CONFLICT (bid) DO NOTHING",
        )
        .and_then(|mut st| st.execute(params![bid, now, number as i64]))
        .map_err(db_err)?;
    if recorded == 0 {
        return Err(StoreError::DuplicateBid(msg.bid.clone().unwrap_or(bid)));
    }
    let held_by_rule = match held_by_rule(msg, station) {
        Ok(held) => held,
        Err(refused) => {
            // Refused: its BID is not kept (offered again, it is refused again).
            tx.prepare_cached("DELETE FROM bids WHERE bid = ?1")
                .and_then(|mut st| st.execute([&bid]))
                .map_err(db_err)?;
            return Err(refused);
        }
    };
    let seen = route::rline_calls(&msg.rlines);
    if let Some(home) = wp::origin_address(&msg.rlines) {
        batch.learn_origin(tx, &msg.from, home, now)?;
    }
    let at = address_at(tx, msg, station)?;
    let looped = seen
        .iter()
        .any(|c| c.eq_ignore_ascii_case(station.call.base()));
    let status = if looped || held_by_rule {
        MsgStatus::Held
    } else {
        msg.status
    };
    let mut rlines = route::rline(now, &station.haddr, number, &bid);
    rlines.extend_from_slice(&msg.rlines);
    tx.prepare_cached(
        "INSERT INTO messages (number, kind, status, to_call, at, from_call, bid, subject, \
         size, created, origin) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )
    .and_then(|mut st| {
        st.execute(params![
            number as i64,
            msg.kind.letter().to_string(),
            status.letter().to_string(),
            msg.to.to_ascii_uppercase(),
            at,
            msg.from.to_ascii_uppercase(),
            bid,
            msg.subject,
            msg.body.len() as i64,
            now,
            origin.unwrap_or_default(),
        ])
    })
    .map_err(db_err)?;
    if let Some(n) = &mut batch.numbers {
        n.next += 1;
    }
    batch.text.add(number, &rlines, &msg.body);
    batch.count(msg, status, &at);
    if looped {
        tracing::warn!(number, %bid, "held: its R: lines name this BBS (a forwarding loop)");
    }
    if status != MsgStatus::Held {
        let query = route::RouteQuery {
            kind: msg.kind,
            to: &msg.to,
            at: &at,
            origin,
            seen: &seen,
        };
        // Its compressed forms are made when a partner's session first sends it (see
        // [`FORMS`]), not here: receiving and storing costs no compression.
        queue_in(tx, number, &query, station, queued, now)?;
    }
    Ok((number, status))
}

/// Message numbers taken ahead in `sqlite_sequence` at a time: SQLite writes its page (a WAL
/// frame, 2.6 % of what a received bulletin costs the disk) only when a new number passes the
/// one kept there, so it is moved ahead by this many at once.
const NUMBERS_AHEAD: i64 = 256;

/// The next message number of a transaction, and how far numbers are taken ahead in
/// `sqlite_sequence`.
struct Numbers {
    next: i64,
    ahead: i64,
}

/// The number for a new message: one above the highest ever given, which is the highest
/// message's or, when newer ones have been removed, the highest removed (`number_floor`, kept
/// by a trigger): never one given before. Looked up for a transaction's first message; the
/// caller counts `numbers` on as it inserts. When it passes the numbers taken ahead in
/// `sqlite_sequence` (whose AUTOINCREMENT would otherwise rewrite it with every message),
/// more are taken.
fn next_number(tx: &Connection, numbers: &mut Option<Numbers>) -> Result<u64, StoreError> {
    let n = match numbers {
        Some(n) => n,
        None => {
            let (next, ahead) = tx
                .prepare_cached(
                    "SELECT MAX(COALESCE((SELECT MAX(number) FROM messages), 0), \
                                COALESCE((SELECT MAX(n) FROM number_floor), 0)) + 1, \
                            COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)",
                )
                .and_then(|mut st| st.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))
                .map_err(db_err)?;
            numbers.insert(Numbers { next, ahead })
        }
    };
    if n.next > n.ahead {
        let ahead = n.next + NUMBERS_AHEAD - 1;
        let taken = tx
            .prepare_cached("UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'messages'")
            .and_then(|mut st| st.execute([ahead]))
            .map_err(db_err)?;
        if taken == 0 {
            tx.prepare_cached("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', ?1)")
                .and_then(|mut st| st.execute([ahead]))
                .map_err(db_err)?;
        }
        n.ahead = ahead;
    }
    Ok(n.next as u64)
}

/// The hold/reject rules' verdict on `msg`: `Rejected`, or whether a rule holds it.
fn held_by_rule(msg: &NewMessage, station: &Station) -> Result<bool, StoreError> {
    let verdict = qtc_mail::rules::check(
        &station.rules,
        &qtc_mail::rules::RuleInput {
            from: &msg.from,
            to: &msg.to,
            at: &msg.at,
            bid: msg.bid.as_deref().unwrap_or_default(),
            subject: &msg.subject,
        },
    );
    match verdict {
        Some(r) if r.action == qtc_mail::rules::RuleAction::Reject => {
            Err(StoreError::Rejected(format!("{:?} {}", r.field, r.pattern)))
        }
        Some(r) => {
            tracing::info!(field = ?r.field, pattern = %r.pattern, "message held by rule");
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Where `msg` goes, upper case: its `@`, or for personal mail with none to someone who is
/// not a user here, their home BBS as the white pages know it.
fn address_at(tx: &Connection, msg: &NewMessage, station: &Station) -> Result<String, StoreError> {
    // Personal mail with no @ for someone who is not a user here: the white pages may know
    // their home BBS.
    let mut at = msg.at.to_ascii_uppercase();
    if at.is_empty() && msg.kind != MsgType::Bulletin && users::get(tx, &msg.to)?.is_none() {
        if let Some(home) = wp::lookup(tx, &msg.to)? {
            if !route::is_local(&home, station.call) {
                at = home;
            }
        }
    }
    Ok(at)
}

/// Queues a message for the partners the routing rules pick.
fn queue_in(
    tx: &Connection,
    number: u64,
    query: &route::RouteQuery<'_>,
    station: &Station,
    queued: &QueueMarks,
    now: i64,
) -> Result<(), StoreError> {
    for partner in route::targets(query, station.call, &station.partners) {
        queued.bump(partner);
        tx.prepare_cached(
            "INSERT OR IGNORE INTO fwd_queue (number, partner, updated) VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut st| st.execute(params![number as i64, partner.to_string(), now]))
        .map_err(db_err)?;
    }
    Ok(())
}

/// The station set by [`Store::set_station`], which storing, releasing and routing a message
/// need (its call goes into R: lines and BIDs).
fn station(station: &Option<Station>) -> Result<&Station, StoreError> {
    station.as_ref().ok_or_else(|| {
        StoreError::Database("no station set: the store does not know this BBS's call".into())
    })
}

/// `<number>_<CALL>`, cut to the 12 characters a BID may have.
fn generated_bid(number: u64, bbs_call: Callsign) -> String {
    let mut bid = format!("{number}_{bbs_call}");
    bid.truncate(qtc_mail::MAX_BID_LEN);
    bid
}

/// A WHERE clause under construction, with its numbered parameters.
#[derive(Default)]
struct Where {
    conds: Vec<String>,
    /// Bounds on the number (`>= ?2`...), apart: each way into a listing writes them its own
    /// way (see [`Way`]).
    range: Vec<String>,
    args: Vec<rusqlite::types::Value>,
}

/// One way into a listing of several: its condition, and whether the number list of a
/// subquery (a user's copies) is what finds its messages. Such a way names the number range
/// as `+number`, so SQLite looks up the few numbers the subquery gives rather than walking
/// every message in the range to test each against them (the planner's choice when a
/// store's statistics make the copies' table look large: 3-5 ms a page on a mailbox of
/// 5,000 messages against 0.5).
struct Way {
    cond: String,
    by_list: bool,
}

impl Where {
    /// Adds a bound value and returns its placeholder.
    fn bind(&mut self, v: impl Into<rusqlite::types::Value>) -> String {
        self.args.push(v.into());
        format!("?{}", self.args.len())
    }

    fn push(&mut self, cond: String) {
        self.conds.push(cond);
    }
}

/// Builds a listing's query. Every filter the BBS and the web use is answered by walking an
/// index newest first (the table itself by number, or an index whose entries are in number
/// order for one key), stopping at the LIMIT: see the query-plan tests. Status and type are
/// written as literals so the planner can use the partial indexes on them. A filter that is
/// one of several ways in (a user's own mail: addressee or copy, or sender too for `LP`;
/// `LN`'s unread mail and bulletins) is one SELECT per way, each walked in number order and
/// merged (`UNION`), instead of an OR that gathers the whole mailbox and sorts it.
fn list_query(
    f: &ListFilter,
    at: Option<&counts::AtMatch>,
    bulletins: bool,
) -> (String, Vec<rusqlite::types::Value>) {
    let mut w = Where::default();
    // Whose read marks the status shows: the one named, or the user whose mail this is, or
    // who lists.
    let viewer = f
        .reader
        .as_ref()
        .or(f.to_or_copy.as_ref())
        .or(f.visible_to.as_ref());
    let status = match viewer {
        Some(viewer) => status_seen_by(&w.bind(viewer.to_ascii_uppercase())),
        None => "status".to_string(),
    };
    common_conditions(&mut w, f, at, &status);
    let ways = ways_in(&mut w, f, bulletins);
    let columns = header_columns(&status);
    let select = |way: Option<&Way>| {
        let number = if way.is_some_and(|w| w.by_list) {
            "+number"
        } else {
            "number"
        };
        let range: Vec<String> = w.range.iter().map(|r| format!("{number} {r}")).collect();
        let conds: Vec<&str> = range
            .iter()
            .chain(&w.conds)
            .map(String::as_str)
            .chain(way.map(|w| w.cond.as_str()))
            .collect();
        let mut q = format!("SELECT {columns} FROM messages");
        if !conds.is_empty() {
            q.push_str(" WHERE ");
            q.push_str(&conds.join(" AND "));
        }
        q
    };
    let mut sql = match ways.as_slice() {
        [] => select(None),
        ways => ways
            .iter()
            .map(|way| select(Some(way)))
            .collect::<Vec<_>>()
            .join(" UNION "),
    };
    sql.push_str(if f.oldest_first {
        " ORDER BY number ASC"
    } else {
        " ORDER BY number DESC"
    });
    if let Some(n) = f.last {
        let p = w.bind(n as i64);
        sql.push_str(&format!(" LIMIT {p}"));
    }
    (sql, w.args)
}

/// The conditions every way into a listing shares: number range, type, status, addressee,
/// sender, `@`, and what a user may see.
fn common_conditions(w: &mut Where, f: &ListFilter, at: Option<&counts::AtMatch>, status: &str) {
    // Message numbers are stored as SQLite integers; a bound past i64::MAX (`L n` is n to
    // u64::MAX) means "no upper bound", not a negative number.
    let number = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    // One range on the number: given a lower bound twice (`after` and a page's `range`),
    // SQLite walks down to the looser one, the whole table for an `L` with nothing new.
    let lo = f.after.map(|a| a.saturating_add(1));
    let lo = match (lo, f.range) {
        (Some(a), Some((r, _))) => Some(a.max(r)),
        (a, r) => a.or(r.map(|(r, _)| r)),
    };
    if let Some(lo) = lo {
        let p = w.bind(number(lo));
        w.range.push(format!(">= {p}"));
    }
    if let Some((_, hi)) = f.range {
        let p = w.bind(number(hi));
        w.range.push(format!("<= {p}"));
    }
    if let Some(kind) = f.kind {
        w.push(format!("kind = '{}'", kind.letter()));
    }
    match f.status {
        // Held and killed are the message's own status for every reader: the plain column,
        // so the partial indexes on them serve `LH` and `LK`.
        Some(wanted @ (MsgStatus::Held | MsgStatus::Killed)) => {
            w.push(format!("status = '{}'", wanted.letter()))
        }
        Some(wanted) => w.push(format!("{status} = '{}'", wanted.letter())),
        None if !f.include_killed => w.push("status != 'K'".into()),
        None => {}
    }
    if let Some(to) = &f.to {
        let p = w.bind(to.to_ascii_uppercase());
        w.push(format!("to_call = {p}"));
    }
    if let Some(from) = &f.from {
        let p = w.bind(from.to_ascii_uppercase());
        w.push(format!("from_call = {p}"));
    }
    if let Some(at) = at {
        // `L@ USA` matches any element of the hierarchical address (`N0BBS.#NCA.CA.USA.NOAM`):
        // the tallies named the `@` values that match.
        let values: Vec<String> = at.values.iter().map(|v| w.bind(v.clone())).collect();
        // A leading `+` keeps the planner off the `at` index when walking by number is cheaper.
        let column = if at.by_index { "at" } else { "+at" };
        w.push(format!("{column} IN ({})", values.join(", ")));
    }
    if let Some(viewer) = &f.visible_to {
        let p = w.bind(viewer.to_ascii_uppercase());
        if f.kind != Some(MsgType::Personal) {
            w.push(format!(
                "(kind != 'P' OR to_call = {p} OR from_call = {p} \
                 OR number IN (SELECT number FROM recipients WHERE call = {p}))"
            ));
        }
        // Held mail waits for the sysop: nobody else sees it until it is released.
        w.push("status != 'H'".into());
    }
}

/// The ways into a listing of several (each walked by its own index and merged): a user's
/// own mail (`to_or_copy`), a user's personal mail (`visible_to` with type P: theirs as
/// addressee, copy or sender), `LN`'s unread mail and bulletins (the bulletins' way only when
/// the store holds `bulletins` open: it walks by number, past every other message, to find
/// them). Empty: one way, the common conditions alone.
fn ways_in(w: &mut Where, f: &ListFilter, bulletins: bool) -> Vec<Way> {
    let by_index = |cond: String| Way {
        cond,
        by_list: false,
    };
    let copy = |p: &str, unread: &str| Way {
        cond: format!("number IN (SELECT number FROM recipients WHERE call = {p}{unread})"),
        by_list: true,
    };
    if let Some(user) = &f.unread_by {
        let p = w.bind(user.to_ascii_uppercase());
        let mut ways = vec![by_index(format!("to_call = {p} AND status = 'N'")), {
            let mut c = copy(&p, " AND read = 0");
            c.cond.push_str(" AND status NOT IN ('H', 'K')");
            c
        }];
        // `LMN`: their own mail alone.
        if f.to_or_copy.is_none() && bulletins {
            ways.push(by_index(format!(
                "kind = 'B' AND status NOT IN ('H', 'K') AND NOT EXISTS \
                 (SELECT 1 FROM bulletin_reads b WHERE b.number = messages.number AND b.call = {p})"
            )));
        }
        return ways;
    }
    if let Some(call) = &f.to_or_copy {
        let p = w.bind(call.to_ascii_uppercase());
        return vec![by_index(format!("to_call = {p}")), copy(&p, "")];
    }
    match &f.visible_to {
        // Only their own: three index lookups instead of a walk past everyone else's.
        Some(viewer) if f.kind == Some(MsgType::Personal) => {
            let p = w.bind(viewer.to_ascii_uppercase());
            vec![
                by_index(format!("to_call = {p}")),
                by_index(format!("from_call = {p}")),
                copy(&p, ""),
            ]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_size;
