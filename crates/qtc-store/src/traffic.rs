//! Messages in and out per day, for the web's traffic chart: two GROUP BY queries over an
//! indexed time range (`messages_created`, `fwd_done`), so the cost follows the days asked
//! for, not the size of the store.

use rusqlite::params;

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
            "SELECT created / ?2, COUNT(*) FROM messages WHERE created >= ?1 GROUP BY 1",
            |t, n| t.stored = n,
        )?;
        count(
            "SELECT updated / ?2, COUNT(*) FROM fwd_queue WHERE state = 'F' AND updated >= ?1 \
             GROUP BY 1",
            |t, n| t.forwarded = n,
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qtc_mail::{MessageStore, MsgStatus, MsgType, NewMessage};

    #[test]
    fn counts_per_day_over_the_range_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path(), crate::Durability::Normal).unwrap();
        let msg = |to: &str| NewMessage {
            kind: MsgType::Personal,
            status: MsgStatus::New,
            to: to.into(),
            at: String::new(),
            from: "N0USR".into(),
            bid: None,
            subject: b"hi".to_vec(),
            rlines: Vec::new(),
            body: b"x\r\n".to_vec(),
        };
        let now = 100 * DAY + 3600;
        s.insert_message(&msg("N0A"), "N0BBS", now).unwrap();
        s.insert_message(&msg("N0B"), "N0BBS", now - DAY).unwrap();
        s.insert_message(&msg("N0C"), "N0BBS", now - 40 * DAY)
            .unwrap();
        let t = s.traffic_per_day(30, now).unwrap();
        assert_eq!(t.len(), 30);
        assert_eq!(t[29].day, 100 * DAY);
        assert_eq!((t[29].stored, t[28].stored), (1, 1));
        assert_eq!(t.iter().map(|d| d.stored).sum::<u64>(), 2);
        assert_eq!(t.iter().map(|d| d.forwarded).sum::<u64>(), 0);
    }

    #[test]
    fn the_range_query_uses_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path(), crate::Durability::Normal).unwrap();
        let plan: String = s
            .conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT created / 86400, COUNT(*) FROM messages \
                 WHERE created >= 0 GROUP BY 1",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("messages_created"), "{plan}");
    }
}
