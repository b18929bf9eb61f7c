//! Messages in and out per day, for the web's traffic chart. Messages stored per day come from
//! the message numbers where each day begins (numbers follow arrival), found by bisection on
//! the primary key: a few hundred point lookups whatever the store's size, and no index on
//! `created` for every received block to update. Deliveries per day are a GROUP BY over an
//! indexed time range (`fwd_done`).

use rusqlite::{params, OptionalExtension};

use crate::{db_err, Store};
use qtc_mail::StoreError;

/// One UTC day's traffic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DayTraffic {
    /// The day, as Unix seconds of its midnight (UTC).
    pub day: i64,
    /// Messages stored that day (entered here or received from partners).
    pub stored: u64,
    /// Deliveries to partners that day (one per message and partner).
    pub forwarded: u64,
}

const DAY: i64 = 86_400;

impl Store {
    /// The last `days` UTC days up to and including the one of `now`, oldest first, every day
    /// present (zero when quiet).
    pub fn traffic_per_day(&mut self, days: u32, now: i64) -> Result<Vec<DayTraffic>, StoreError> {
        let today = now.div_euclid(DAY);
        let first = today - i64::from(days.max(1)) + 1;
        let mut out: Vec<DayTraffic> = (first..=today)
            .map(|d| DayTraffic {
                day: d * DAY,
                ..Default::default()
            })
            .collect();
        let mut count = |sql: &str, set: fn(&mut DayTraffic, u64)| -> Result<(), StoreError> {
            let mut stmt = self.conn.prepare_cached(sql).map_err(db_err)?;
            let rows = stmt
                .query_map(params![first * DAY, DAY], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                })
                .map_err(db_err)?;
            for row in rows {
                let (day, n) = row.map_err(db_err)?;
                if let Some(t) = usize::try_from(day - first)
                    .ok()
                    .and_then(|i| out.get_mut(i))
                {
                    set(t, n as u64);
                }
            }
            Ok(())
        };
        count(
            "SELECT updated / ?2, COUNT(*) FROM fwd_queue WHERE state = 'F' AND updated >= ?1 \
             GROUP BY 1",
            |t, n| t.forwarded = n,
        )?;
        // Day i's messages are the numbers from where day i begins to where day i + 1 does,
        // killed and removed ones included: what was stored that day.
        let mut begins = Vec::with_capacity(out.len() + 1);
        for d in first..=today + 1 {
            begins.push(self.first_number_from(d * DAY)?);
        }
        for (t, w) in out.iter_mut().zip(begins.windows(2)) {
            t.stored = w[1] - w[0];
        }
        Ok(out)
    }

    /// The first message number stored at or after `t` (one past the newest when none was):
    /// a bisection over the numbers, since they are given in arrival order.
    fn first_number_from(&mut self, t: i64) -> Result<u64, StoreError> {
        let newest = self.last_number()?;
        let mut next = self
            .conn
            .prepare_cached(
                "SELECT number, created FROM messages WHERE number >= ?1 ORDER BY number LIMIT 1",
            )
            .map_err(db_err)?;
        let mut at_or_after = |n: i64| -> Result<Option<(i64, i64)>, StoreError> {
            next.query_row([n], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(db_err)
        };
        let (mut lo, mut hi) = match at_or_after(0)? {
            None => return Ok(0),
            Some((oldest, _)) => (oldest, newest + 1),
        };
        // Invariant: every message below `lo` is older than `t`; the one at `hi` (or none) is not.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match at_or_after(mid)? {
                Some((n, created)) if created < t => lo = (n + 1).min(hi),
                Some((n, _)) if n < hi => hi = n,
                // Nothing between `mid` and `hi`: the day begins at or below `mid`.
                _ => hi = mid,
            }
        }
        Ok(u64::try_from(lo).unwrap_or(0))
    }

    fn last_number(&mut self) -> Result<i64, StoreError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(number), 0) FROM messages", [], |r| {
                r.get(0)
            })
            .map_err(db_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::call;
    use crate::tests::{msg, open};
    use qtc_mail::{MessageStore, MsgStatus, MsgType};

    #[test]
    fn counts_per_day_over_the_range_only() {
        let (_dir, mut s) = open();
        let msg = |to: &str| msg(MsgType::Personal, to, "N0USR", None);
        let now = 100 * DAY + 3600;
        s.insert_message(&msg("N0C"), call("N0BBS"), now - 40 * DAY)
            .unwrap();
        s.insert_message(&msg("N0B"), call("N0BBS"), now - DAY)
            .unwrap();
        s.insert_message(&msg("N0A"), call("N0BBS"), now).unwrap();
        s.insert_message(&msg("N0D"), call("N0BBS"), now + 60)
            .unwrap();
        let t = s.traffic_per_day(30, now).unwrap();
        assert_eq!(t.len(), 30);
        assert_eq!(t[29].day, 100 * DAY);
        assert_eq!((t[29].stored, t[28].stored), (2, 1));
        assert_eq!(t.iter().map(|d| d.stored).sum::<u64>(), 3);
        // A killed message was still stored that day.
        s.set_status(4, MsgStatus::Killed).unwrap();
        assert_eq!(s.traffic_per_day(30, now).unwrap()[29].stored, 2);
        assert_eq!(t.iter().map(|d| d.forwarded).sum::<u64>(), 0);
    }

    #[test]
    fn a_day_begins_where_its_first_message_is() {
        let (_dir, mut s) = open();
        assert_eq!(s.first_number_from(0).unwrap(), 0);
        let msg = msg(MsgType::Bulletin, "ALL", "N0USR", None);
        // Numbers 1..=100 at times 10, 20, ..., 1000.
        for i in 1..=100 {
            s.insert_message(&msg, call("N0BBS"), i * 10).unwrap();
        }
        for (t, first) in [
            (0, 1),
            (10, 1),
            (11, 2),
            (505, 51),
            (1000, 100),
            (1001, 101),
        ] {
            assert_eq!(s.first_number_from(t).unwrap(), first, "t = {t}");
        }
    }
    #[test]
    fn the_range_query_uses_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path(), crate::Durability::Normal).unwrap();
        let plan: String = s
            .conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT updated / 86400, COUNT(*) FROM fwd_queue \
                 WHERE state = 'F' AND updated >= 0 GROUP BY 1",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("fwd_done"), "{plan}");
    }
}
