//! Daily housekeeping: message lifetimes by type and status, BID expiry, old partial
//! transfers, and giving free pages back to the file system.
//!
//! A run is a [`Housekeeping`] done in steps of at most [`CHUNK`] rows each (fewer if the
//! caller asks, [`Housekeeping::set_step_rows`]), one short transaction per step, so the
//! daemon runs each step as its own job on the store thread and everyone else's work goes in
//! between. Every step walks an index (or the messages by number) from a cursor, so a run
//! costs what is due, not the store's size: the walk for lifetimes starts where the last one
//! left off, before the first message it kept that could be due within [`HORIZON`] (table
//! `expiry`), as long as the next run comes within that time; and old BIDs are found
//! among those whose message is gone (`bids_gone`), by age.

use qtc_mail::StoreError;
use rusqlite::{params, OptionalExtension};

use crate::{db_err, pragma_count, Store};

/// Rows one step changes (or, for walks, looks at) at most.
pub const CHUNK: usize = 1000;

/// The walk for lifetimes resumes at the first message it kept that could reach a lifetime
/// within this time (a bulletin nearly 14 days old): what comes before it is skipped until
/// the earliest time any of it could be due.
const HORIZON: i64 = 2 * 86_400;

/// Bytes a step of [`CHUNK`] rows gives back with `PRAGMA incremental_vacuum` (a step of
/// fewer rows, proportionally less). Counted in bytes, not pages: each step is a commit, and
/// 512 pages a step, 4 MB of 8 KB pages, were 256 KB of 512-byte ones, sixteen times the
/// commits (on 1 M messages 497 steps of a removal's 706, its wall time 2.3 times the 4 KB
/// layout's).
const VACUUM_BYTES: u64 = 4 << 20;

/// How long things live, in days; 0 means forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    /// Personal and NTS mail once read or forwarded (FBB: 30).
    pub personal_read: u32,
    /// Personal and NTS mail never read.
    pub personal_unread: u32,
    /// Bulletins (FBB: 14).
    pub bulletin: u32,
    /// Killed messages before they are removed for good.
    pub killed: u32,
    /// BIDs of messages no longer here (remembered so they are not taken again).
    pub bid: u32,
    /// Partial B1 transfers kept for resume (FBB: 15).
    pub partial: u32,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Lifetimes {
            personal_read: 30,
            personal_unread: 90,
            bulletin: 14,
            killed: 2,
            bid: 180,
            partial: 15,
        }
    }
}

/// What one housekeeping run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Housekept {
    /// Messages killed because they reached their lifetime.
    pub expired: u64,
    /// Killed messages removed from the file.
    pub removed: u64,
    /// BIDs forgotten.
    pub bids: u64,
    /// Partial transfers dropped.
    pub partials: u64,
    /// Compressed forms dropped: every partner has had the message (each is made again at
    /// its next send, should it be queued again).
    pub compressed: u64,
    /// Free pages given back to the file system (incremental vacuum).
    pub returned_pages: u64,
    /// Free pages left in a file made before incremental vacuum (`qtc store compact`
    /// switches it once); 0 otherwise.
    pub unreturned_pages: u64,
    /// Steps (transactions) the run took.
    pub steps: u64,
}

impl std::fmt::Display for Housekept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} expired, {} removed, {} BIDs forgotten, {} partial transfers dropped, \
             {} compressed forms dropped, {} free pages given back in {} steps",
            self.expired,
            self.removed,
            self.bids,
            self.partials,
            self.compressed,
            self.returned_pages,
            self.steps,
        )?;
        if self.unreturned_pages > 0 {
            write!(
                f,
                " ({} free pages stay in the file: `qtc store compact` lets housekeeping give \
                 them back)",
                self.unreturned_pages
            )?;
        }
        Ok(())
    }
}

fn cutoff(now: i64, days: u32) -> Option<i64> {
    (days > 0).then(|| now - i64::from(days) * 86_400)
}

/// Where a run is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    /// Removing mail killed before this run, from this message number on.
    Remove {
        after: i64,
    },
    /// Killing what reached its lifetime, walking by number from this one; `resume`: the
    /// first message walked and kept that could be due within [`HORIZON`]; `until`: when
    /// anything kept before it (or skipped) could first be due.
    Expire {
        after: i64,
        until: i64,
        resume: Option<i64>,
    },
    /// Forgetting old BIDs of messages no longer here, the oldest first.
    Bids,
    /// Partial transfers, compressed forms and empty tallies: small tables, one step.
    Small,
    /// Giving free pages back.
    Vacuum,
    /// Statistics and the WAL file.
    Finish,
    Done,
}

/// One housekeeping run as of `now`, done step by step. Held mail is never touched: it waits
/// for the sysop.
#[derive(Clone, Debug)]
pub struct Housekeeping {
    now: i64,
    lifetimes: Lifetimes,
    stage: Stage,
    done: Housekept,
    /// Rows per step, at most [`CHUNK`].
    rows: usize,
}

impl Housekeeping {
    /// A run as of `now` (Unix seconds) with these lifetimes.
    pub fn new(now: i64, lifetimes: &Lifetimes) -> Housekeeping {
        Housekeeping {
            now,
            lifetimes: *lifetimes,
            stage: Stage::Remove { after: 0 },
            done: Housekept::default(),
            rows: CHUNK,
        }
    }

    /// Rows the next steps change or look at, 1 to [`CHUNK`] (the default): a smaller step
    /// holds the writer for less time.
    pub fn set_step_rows(&mut self, rows: usize) {
        self.rows = rows.clamp(1, CHUNK);
    }

    /// What the run has done so far.
    pub fn done(&self) -> Housekept {
        self.done
    }

    /// True when every step has run.
    pub fn finished(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Runs the next step (one transaction of at most the step's rows); returns true while
    /// steps are left.
    pub fn step(&mut self, store: &mut Store) -> Result<bool, StoreError> {
        let next = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Remove { after } => self.remove(store, after)?,
            Stage::Expire {
                after,
                until,
                resume,
            } => self.expire(store, after, until, resume)?,
            Stage::Bids => self.forget_bids(store)?,
            Stage::Small => self.small_tables(store)?,
            Stage::Vacuum => self.vacuum(store)?,
            Stage::Finish => {
                // A bounded ANALYZE: statistics for the planner without reading every row. The
                // WAL is copied into the database but keeps its size (lib.rs, `prepare_wal`).
                store
                    .conn
                    .execute_batch("PRAGMA analysis_limit = 400; PRAGMA optimize;")
                    .map_err(db_err)?;
                store.checkpoint_soon()?;
                Stage::Done
            }
            Stage::Done => Stage::Done,
        };
        self.done.steps += 1;
        self.stage = next;
        Ok(!self.finished())
    }

    /// Mail killed before this run is removed first, so what expires now stays (killed)
    /// until the next run and can still be brought back. Killed mail is walked by number and
    /// the walk ends at the first message too young to remove: numbers follow arrival, so the
    /// rest are younger still (one dated out of order is taken at a later run).
    fn remove(&mut self, store: &mut Store, after: i64) -> Result<Stage, StoreError> {
        let before = self.now - i64::from(self.lifetimes.killed) * 86_400;
        let tx = store.conn.transaction().map_err(db_err)?;
        let (mut old, mut ended) = (Vec::new(), true);
        {
            let mut st = tx
                .prepare_cached(
                    "SELECT number, created FROM messages WHERE status = 'K' AND number > ?1 \
                     ORDER BY number LIMIT ?2",
                )
                .map_err(db_err)?;
            let mut rows = st.query(params![after, self.rows as i64]).map_err(db_err)?;
            while let Some(r) = rows.next().map_err(db_err)? {
                let (number, created): (i64, i64) =
                    (r.get(0).map_err(db_err)?, r.get(1).map_err(db_err)?);
                if created >= before {
                    break;
                }
                old.push(number);
            }
            if old.len() == self.rows {
                ended = false;
            }
        }
        if let (Some(&first), Some(&last)) = (old.first(), old.last()) {
            self.done.removed += tx
                .execute(
                    "DELETE FROM messages WHERE status = 'K' AND number >= ?1 AND number <= ?2 \
                     AND created < ?3",
                    params![first, last, before],
                )
                .map_err(db_err)? as u64;
            self.give_back_freed(&tx)?;
        }
        let next = match (ended, old.last()) {
            (false, Some(&last)) => Stage::Remove { after: last },
            _ => {
                let (after, until) = self.expiry_start(&tx)?;
                Stage::Expire {
                    after,
                    until,
                    resume: None,
                }
            }
        };
        tx.commit().map_err(db_err)?;
        Ok(next)
    }

    /// Gives back, in the step's own transaction, the pages its removal freed (on a file set
    /// for incremental vacuum). Left on the free list for the vacuum stage, a removal's pages
    /// make a list of thousands of trunk pages on 512-byte pages, and each page given back
    /// then searches it: on 1 M messages that was a fifth of the removal's CPU (0.7 % with
    /// 4 KB pages, whose trunks hold eight times as many).
    fn give_back_freed(&mut self, tx: &rusqlite::Transaction<'_>) -> Result<(), StoreError> {
        let free = pragma_count(tx, "freelist_count")?;
        if free == 0 || !incremental(tx)? {
            return Ok(());
        }
        give_back(tx, None)?;
        self.done.returned_pages += free - pragma_count(tx, "freelist_count")?.min(free);
        Ok(())
    }

    /// The lifetimes as `expiry` records them: a walk made under others proves nothing.
    fn lifetimes_key(&self) -> String {
        let l = &self.lifetimes;
        format!(
            "{} {} {} {}",
            l.personal_read, l.personal_unread, l.bulletin, l.killed
        )
    }

    /// Where the walk for lifetimes starts: where the last one ended, while nothing it walked
    /// past and kept can be due yet (and the lifetimes are the same); else the oldest message.
    fn expiry_start(&self, tx: &rusqlite::Transaction<'_>) -> Result<(i64, i64), StoreError> {
        let last: Option<(i64, i64, String)> = tx
            .query_row(
                "SELECT walked_to, recheck_at, lifetimes FROM expiry",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(db_err)?;
        Ok(match last {
            Some((walked_to, recheck_at, key))
                if key == self.lifetimes_key() && self.now < recheck_at =>
            {
                (walked_to, recheck_at)
            }
            _ => (0, i64::MAX),
        })
    }

    /// The earliest time a live message of `kind` created at `created` can reach a lifetime,
    /// whatever its status becomes (personal mail read now takes the shorter one); `None`:
    /// never (a lifetime of 0).
    fn earliest_due(&self, kind: &str, created: i64) -> Option<i64> {
        let l = &self.lifetimes;
        let days = if kind == "B" {
            l.bulletin
        } else {
            match (l.personal_read, l.personal_unread) {
                (0, d) | (d, 0) => d,
                (a, b) => a.min(b),
            }
        };
        (days > 0).then(|| created.saturating_add(i64::from(days) * 86_400))
    }

    /// Walks the messages from the oldest (lowest number: numbers follow arrival, and a
    /// message is dated when it arrives), killing those whose lifetime (by type and status)
    /// has passed. The walk ends at the first message younger than every lifetime; one dated
    /// out of order by a clock set wrong is taken by a later run that walks from the start.
    /// Where the next run may start and until when go to `expiry`.
    fn expire(
        &mut self,
        store: &mut Store,
        after: i64,
        until: i64,
        resume: Option<i64>,
    ) -> Result<Stage, StoreError> {
        let l = &self.lifetimes;
        // A lifetime of 0 (forever) gets a cutoff nothing is older than.
        let at = |days| cutoff(self.now, days).unwrap_or(i64::MIN);
        let (read, unread, bulletin) = (at(l.personal_read), at(l.personal_unread), at(l.bulletin));
        let newest = read.max(unread).max(bulletin);
        let tx = store.conn.transaction().map_err(db_err)?;
        let walked: Vec<(i64, i64, bool, String, String)> = {
            let mut st = tx
                .prepare_cached(
                    "SELECT number, created, \
                       (kind != 'B' AND status IN ('Y', 'F') AND created < ?2) \
                       OR (kind != 'B' AND status = 'N' AND created < ?3) \
                       OR (kind = 'B' AND status IN ('N', 'Y', 'F') AND created < ?4), \
                       kind, status \
                     FROM messages WHERE number > ?1 ORDER BY number LIMIT ?5",
                )
                .map_err(db_err)?;
            let mut rows = st
                .query(params![after, read, unread, bulletin, self.rows as i64])
                .map_err(db_err)?;
            // Read up to the first message younger than every lifetime: the walk ends there.
            let mut walked = Vec::new();
            while let Some(r) = rows.next().map_err(db_err)? {
                let row: (i64, i64, bool, String, String) = (
                    r.get(0).map_err(db_err)?,
                    r.get(1).map_err(db_err)?,
                    r.get(2).map_err(db_err)?,
                    r.get(3).map_err(db_err)?,
                    r.get(4).map_err(db_err)?,
                );
                let young = row.1 >= newest;
                walked.push(row);
                if young {
                    break;
                }
            }
            walked
        };
        let soon = self.now.saturating_add(HORIZON);
        let (mut resume, mut until) = (resume, until);
        {
            let mut kill = tx
                .prepare_cached("UPDATE messages SET status = 'K' WHERE number = ?1")
                .map_err(db_err)?;
            for (number, created, expired, kind, status) in &walked {
                if *expired {
                    self.done.expired += kill.execute([number]).map_err(db_err)? as u64;
                } else if resume.is_none() && !matches!(status.as_str(), "H" | "K") {
                    // Held mail waits for the sysop (its release resets `expiry`); killed
                    // mail is removed by the next run.
                    match self.earliest_due(kind, *created) {
                        Some(d) if d < soon => resume = Some(*number),
                        Some(d) => until = until.min(d),
                        None => {}
                    }
                }
            }
        }
        let ended = walked.last().is_none_or(|w| w.1 >= newest) || walked.len() < self.rows;
        let last = walked.last().map_or(after, |w| w.0);
        let next = if !ended {
            Stage::Expire {
                after: last,
                until,
                resume,
            }
        } else {
            let walked_to = resume.map_or(last, |n| n - 1);
            // Written only when it moved: a run with nothing due commits nothing (no sync).
            let same: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM expiry WHERE walked_to = ?1 \
                     AND recheck_at = ?2 AND lifetimes = ?3)",
                    params![walked_to, until, self.lifetimes_key()],
                    |r| r.get(0),
                )
                .map_err(db_err)?;
            if !same {
                tx.execute("DELETE FROM expiry", []).map_err(db_err)?;
                tx.execute(
                    "INSERT INTO expiry (walked_to, recheck_at, lifetimes) VALUES (?1, ?2, ?3)",
                    params![walked_to, until, self.lifetimes_key()],
                )
                .map_err(db_err)?;
            }
            Stage::Bids
        };
        tx.commit().map_err(db_err)?;
        Ok(next)
    }

    /// Forgets BIDs older than their lifetime whose message is gone, the oldest first.
    fn forget_bids(&mut self, store: &mut Store) -> Result<Stage, StoreError> {
        let Some(before) = cutoff(self.now, self.lifetimes.bid) else {
            return Ok(Stage::Small);
        };
        let tx = store.conn.transaction().map_err(db_err)?;
        let due: Vec<(i64, String)> = {
            let mut st = tx
                .prepare_cached(
                    "SELECT seen, bid FROM bids_gone WHERE seen < ?1 ORDER BY seen, bid LIMIT ?2",
                )
                .map_err(db_err)?;
            let rows = st
                .query_map(params![before, self.rows as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .map_err(db_err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db_err)?;
            rows
        };
        for (seen, bid) in &due {
            // The BID as that message brought it (a BID forgotten and taken again is another).
            self.done.bids += tx
                .prepare_cached(
                    "DELETE FROM bids WHERE bid = ?1 AND seen = ?2 \
                     AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.number = bids.number)",
                )
                .and_then(|mut st| st.execute(params![bid, seen]))
                .map_err(db_err)? as u64;
            tx.prepare_cached("DELETE FROM bids_gone WHERE seen = ?1 AND bid = ?2")
                .and_then(|mut st| st.execute(params![seen, bid]))
                .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)?;
        Ok(if due.len() == self.rows {
            Stage::Bids
        } else {
            Stage::Small
        })
    }

    fn small_tables(&mut self, store: &mut Store) -> Result<Stage, StoreError> {
        let tx = store.conn.transaction().map_err(db_err)?;
        if let Some(before) = cutoff(self.now, self.lifetimes.partial) {
            self.done.partials = tx
                .execute("DELETE FROM partials WHERE updated < ?1", params![before])
                .map_err(db_err)? as u64;
        }
        for (_, table) in crate::forward::FORMS {
            self.done.compressed += tx
                .execute(
                    &format!(
                        "DELETE FROM {0} WHERE NOT EXISTS (SELECT 1 FROM fwd_queue q \
                         WHERE q.number = {0}.number AND q.state = 'Q')",
                        table
                    ),
                    [],
                )
                .map_err(db_err)? as u64;
        }
        tx.execute("DELETE FROM tallies WHERE n = 0", [])
            .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(Stage::Vacuum)
    }

    /// Gives free pages back, [`VACUUM_BYTES`] for a step of [`CHUNK`] rows, on a file set for
    /// incremental vacuum; never a whole-file VACUUM (it would hold the writer for seconds on a
    /// big store).
    fn vacuum(&mut self, store: &mut Store) -> Result<Stage, StoreError> {
        let free = store.free_pages()?;
        if free == 0 {
            return Ok(Stage::Finish);
        }
        if !store.incremental_vacuum()? {
            self.done.unreturned_pages = free;
            return Ok(Stage::Finish);
        }
        let page = store.pragma_count("page_size")?;
        let pages = (VACUUM_BYTES * self.rows as u64 / CHUNK as u64 / page.max(1)).max(1);
        give_back(&store.conn, Some(pages))?;
        self.done.returned_pages += free - store.free_pages()?.min(free);
        Ok(Stage::Vacuum)
    }
}

/// True when the file gives free pages back in steps (`auto_vacuum = INCREMENTAL`: every
/// store made by this qtc, and older ones after `qtc store compact`).
fn incremental(conn: &rusqlite::Connection) -> Result<bool, StoreError> {
    Ok(pragma_count(conn, "auto_vacuum")? == 2)
}

/// Gives `pages` free pages back to the file system, or all of them (`PRAGMA
/// incremental_vacuum`, on a file set for it). Each step of the statement gives back one
/// page: it is run to its end.
pub(crate) fn give_back(conn: &rusqlite::Connection, pages: Option<u64>) -> Result<(), StoreError> {
    let sql = match pages {
        Some(n) => format!("PRAGMA incremental_vacuum({n})"),
        None => "PRAGMA incremental_vacuum".to_string(),
    };
    let mut st = conn.prepare(&sql).map_err(db_err)?;
    let mut rows = st.query([]).map_err(db_err)?;
    while rows.next().map_err(db_err)?.is_some() {}
    Ok(())
}

impl Store {
    /// Runs a whole housekeeping run at once (the sysop CLI, tests); the daemon runs the steps
    /// of a [`Housekeeping`] as separate jobs instead.
    pub fn housekeep(&mut self, now: i64, l: &Lifetimes) -> Result<Housekept, StoreError> {
        let mut run = Housekeeping::new(now, l);
        while run.step(self)? {}
        Ok(run.done())
    }

    /// Free pages in the file.
    pub fn free_pages(&mut self) -> Result<u64, StoreError> {
        self.pragma_count("freelist_count")
    }

    /// True when the file gives free pages back in steps (`auto_vacuum = INCREMENTAL`: every
    /// store made by this qtc, and older ones after `qtc store compact`).
    pub fn incremental_vacuum(&mut self) -> Result<bool, StoreError> {
        incremental(&self.conn)
    }

    /// Switches the file to incremental vacuum and compacts it: one whole-file VACUUM, for a
    /// store made before qtc did this. It rewrites the file (about as long as copying it) and
    /// holds the write lock meanwhile: run it with the daemon stopped.
    pub fn compact(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            .map_err(db_err)
    }
}
