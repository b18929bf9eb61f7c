//! Daily housekeeping: message lifetimes by type and status, BID expiry, old partial
//! transfers, and compaction of the file.

use qtc_mail::StoreError;
use rusqlite::params;

use crate::{db_err, Store};

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
    /// Whether the file was compacted.
    pub compacted: bool,
}

impl std::fmt::Display for Housekept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} expired, {} removed, {} BIDs forgotten, {} partial transfers dropped, \
             {} compressed forms dropped{}",
            self.expired,
            self.removed,
            self.bids,
            self.partials,
            self.compressed,
            if self.compacted {
                ", file compacted"
            } else {
                ""
            }
        )
    }
}

fn cutoff(now: i64, days: u32) -> Option<i64> {
    (days > 0).then(|| now - i64::from(days) * 86_400)
}

impl Store {
    /// Runs housekeeping as of `now`. Held mail is never touched: it waits for the sysop.
    pub fn housekeep(&mut self, now: i64, l: &Lifetimes) -> Result<Housekept, StoreError> {
        let mut done = Housekept::default();
        let tx = self.conn.transaction().map_err(db_err)?;
        // Mail killed before this run is removed first, so what expires now stays (killed)
        // until the next run and can still be brought back.
        let before = now - i64::from(l.killed) * 86_400;
        done.removed = tx
            .execute(
                "DELETE FROM messages WHERE status = 'K' AND created < ?1",
                [before],
            )
            .map_err(db_err)? as u64;
        let rules: [(&str, u32); 3] = [
            ("kind != 'B' AND status IN ('Y', 'F')", l.personal_read),
            ("kind != 'B' AND status = 'N'", l.personal_unread),
            ("kind = 'B' AND status IN ('N', 'Y', 'F')", l.bulletin),
        ];
        for (cond, days) in rules {
            if let Some(before) = cutoff(now, days) {
                done.expired += tx
                    .execute(
                        &format!("UPDATE messages SET status = 'K' WHERE {cond} AND created < ?1"),
                        [before],
                    )
                    .map_err(db_err)? as u64;
            }
        }
        if let Some(before) = cutoff(now, l.bid) {
            done.bids = tx
                .execute(
                    "DELETE FROM bids WHERE seen < ?1 AND bid NOT IN (SELECT bid FROM messages)",
                    [before],
                )
                .map_err(db_err)? as u64;
        }
        if let Some(before) = cutoff(now, l.partial) {
            done.partials = tx
                .execute("DELETE FROM partials WHERE updated < ?1", params![before])
                .map_err(db_err)? as u64;
        }
        for form in crate::forward::PACKED_FORMS {
            done.compressed += tx
                .execute(
                    &format!(
                        "DELETE FROM {} WHERE number NOT IN \
                         (SELECT number FROM fwd_queue WHERE state = 'Q')",
                        crate::forward::packed_table(form)
                    ),
                    [],
                )
                .map_err(db_err)? as u64;
        }
        tx.commit().map_err(db_err)?;
        // Compact when a quarter of the file is free pages.
        let (pages, free): (i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT page_count FROM pragma_page_count()), \
                 (SELECT freelist_count FROM pragma_freelist_count())",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(db_err)?;
        if pages > 0 && free * 4 >= pages && free > 256 {
            self.conn.execute_batch("VACUUM").map_err(db_err)?;
            done.compacted = true;
        }
        self.conn
            .execute_batch("PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(db_err)?;
        Ok(done)
    }
}
