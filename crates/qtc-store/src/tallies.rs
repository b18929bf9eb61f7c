//! The tallies checked against the messages they count (`qtc store check`) and counted again
//! from them (`qtc store recount`). The store counts what it inserts and the triggers what
//! is changed or removed, so a count goes wrong only when rows are written around the store
//! (by hand, with `sqlite3`).

use std::collections::HashMap;
use std::fmt;

use rusqlite::{params, Connection};

use crate::db_err;
use qtc_mail::StoreError;

/// A key of `tallies` whose count is not the number of messages it stands for. Ordered by
/// key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Miscount {
    /// Type letter (`P`, `B`, `T`).
    pub kind: String,
    /// Status letter.
    pub status: String,
    /// A bulletin's area (its addressee); empty for other messages.
    pub area: String,
    /// The `@` field.
    pub at: String,
    /// What `tallies` holds (0 when it has no row).
    pub counted: i64,
    /// The messages with this key.
    pub messages: i64,
}

impl Miscount {
    /// From a key as [`read_key`] joins it.
    fn of(key: &str, counted: i64, messages: i64) -> Miscount {
        let mut parts = key.split('\0').map(str::to_string);
        let mut part = || parts.next().unwrap_or_default();
        Miscount {
            kind: part(),
            status: part(),
            area: part(),
            at: part(),
            counted,
            messages,
        }
    }
}

impl fmt::Display for Miscount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tally of type {} status {} area {:?} @ {:?}: {} counted, {} messages",
            self.kind, self.status, self.area, self.at, self.counted, self.messages
        )
    }
}

/// Reads a key, columns 0 to 3 of `row`, into `key`, joined by NUL (in no callsign, area or
/// `@`): one buffer for every row, so a row of a key seen before allocates nothing.
fn read_key(row: &rusqlite::Row<'_>, key: &mut String) -> Result<(), StoreError> {
    key.clear();
    for i in 0..4 {
        if i > 0 {
            key.push('\0');
        }
        let part = row.get_ref(i).map_err(db_err)?;
        key.push_str(
            part.as_str()
                .map_err(|e| StoreError::Database(e.to_string()))?,
        );
    }
    Ok(())
}

/// Every miscounted key, in key order. `conn` is in a transaction, so that a writer beside
/// cannot commit between the two reads. The messages are read once, in the table's order,
/// and counted here: no index holds all four columns of a key, and SQLite's GROUP BY would
/// sort every row first (measured on 1 M messages: docs/performance.md, row 8g).
pub(crate) fn miscounts(conn: &Connection) -> Result<Vec<Miscount>, StoreError> {
    // A store before schema 8, checked before it is migrated, has none.
    let kept: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'tallies')",
            [],
            |r| r.get(0),
        )
        .map_err(db_err)?;
    if !kept {
        return Ok(Vec::new());
    }
    let mut messages: HashMap<String, i64> = HashMap::new();
    let mut key = String::new();
    let mut st = conn
        .prepare(
            "SELECT kind, status, CASE kind WHEN 'B' THEN to_call ELSE '' END, at FROM messages",
        )
        .map_err(db_err)?;
    let mut rows = st.query([]).map_err(db_err)?;
    while let Some(row) = rows.next().map_err(db_err)? {
        read_key(row, &mut key)?;
        match messages.get_mut(key.as_str()) {
            Some(n) => *n += 1,
            None => {
                messages.insert(key.clone(), 1);
            }
        }
    }
    let mut wrong = Vec::new();
    let mut st = conn
        .prepare("SELECT kind, status, area, at, n FROM tallies")
        .map_err(db_err)?;
    let mut rows = st.query([]).map_err(db_err)?;
    while let Some(row) = rows.next().map_err(db_err)? {
        read_key(row, &mut key)?;
        let counted: i64 = row.get(4).map_err(db_err)?;
        let n = messages.remove(key.as_str()).unwrap_or(0);
        if n != counted {
            wrong.push(Miscount::of(&key, counted, n));
        }
    }
    // Keys with messages and no row.
    wrong.extend(messages.iter().map(|(k, n)| Miscount::of(k, 0, *n)));
    wrong.sort();
    Ok(wrong)
}

/// Counts the tallies again in the write transaction `tx` and writes the keys that were
/// wrong: each gets its number of messages, or goes when it has none. Returns what was wrong.
pub(crate) fn recount(tx: &Connection) -> Result<Vec<Miscount>, StoreError> {
    let wrong = miscounts(tx)?;
    let mut set = tx
        .prepare(
            "INSERT INTO tallies (kind, status, area, at, n) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (kind, status, area, at) DO UPDATE SET n = excluded.n",
        )
        .map_err(db_err)?;
    let mut remove = tx
        .prepare("DELETE FROM tallies WHERE kind = ?1 AND status = ?2 AND area = ?3 AND at = ?4")
        .map_err(db_err)?;
    for m in &wrong {
        if m.messages == 0 {
            remove.execute(params![m.kind, m.status, m.area, m.at])
        } else {
            set.execute(params![m.kind, m.status, m.area, m.at, m.messages])
        }
        .map_err(db_err)?;
    }
    Ok(wrong)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{call, msg, open, station};
    use crate::{schema, Batch, Durability, Store, DB_FILE};
    use qtc_mail::{MessageStore, MsgStatus, MsgType};

    /// The tallies as they stand, in key order.
    fn tallies(s: &Store) -> Vec<(String, String, String, String, i64)> {
        s.conn
            .prepare(
                "SELECT kind, status, area, at, n FROM tallies WHERE n != 0 ORDER BY 1, 2, 3, 4",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn a_count_changed_by_hand_is_named_and_recounted() {
        let (_d, mut s) = open();
        s.set_station(station());
        let mut b = msg(MsgType::Bulletin, "ALL", "N0ABC", None);
        b.at = "WW".into();
        for _ in 0..3 {
            s.insert_message(&b, call("N0AAA"), 0).unwrap();
        }
        s.insert_message(
            &msg(MsgType::Personal, "N0USR", "N0ABC", None),
            call("N0AAA"),
            0,
        )
        .unwrap();
        assert!(s.check().unwrap().is_empty());
        let right = tallies(&s);
        // A count raised, one gone, one for no message at all.
        s.conn
            .execute_batch(
                "UPDATE tallies SET n = 7 WHERE kind = 'B';
                 DELETE FROM tallies WHERE kind = 'P';
                 INSERT INTO tallies (kind, status, area, at, n) VALUES ('T', 'N', '', 'X', 2);",
            )
            .unwrap();
        let found = s.check().unwrap();
        assert!(found.damage.is_empty());
        let named: Vec<String> = found.miscounts.iter().map(ToString::to_string).collect();
        assert_eq!(
            named,
            [
                "tally of type B status N area \"ALL\" @ \"WW\": 7 counted, 3 messages",
                "tally of type P status N area \"\" @ \"\": 0 counted, 1 messages",
                "tally of type T status N area \"\" @ \"X\": 2 counted, 0 messages",
            ]
        );
        assert_eq!(s.recount_tallies().unwrap(), found.miscounts);
        assert!(s.check().unwrap().is_empty());
        assert_eq!(tallies(&s), right);
        // Nothing left to recount.
        assert!(s.recount_tallies().unwrap().is_empty());
    }

    #[test]
    fn a_message_changed_or_removed_before_its_count_is_written_is_counted_right() {
        let (_d, mut s) = open();
        s.set_station(station());
        let station = station();
        let tx = s.conn.transaction().unwrap();
        let mut batch = Batch::default();
        let insert = |batch: &mut Batch| {
            let m = msg(MsgType::Bulletin, "ALL", "N0ABC", None);
            let queued = crate::QueueMarks::default();
            crate::insert_batched(&tx, &m, &station, &queued, (None, 0), batch)
                .unwrap()
                .0
        };
        let removed = insert(&mut batch);
        let held = insert(&mut batch);
        let kept = insert(&mut batch);
        // Before `Batch::write` adds their count: the key has no row yet.
        tx.execute("DELETE FROM messages WHERE number = ?1", [removed as i64])
            .unwrap();
        tx.execute(
            "UPDATE messages SET status = 'H' WHERE number = ?1",
            [held as i64],
        )
        .unwrap();
        batch.write(&tx).unwrap();
        tx.commit().unwrap();
        let found = s.check().unwrap();
        assert!(found.is_empty(), "{found:?}");
        assert!(s.message(kept).unwrap().is_some());
        let t = |status: &str| ("B".into(), status.into(), "ALL".into(), String::new(), 1);
        assert_eq!(tallies(&s), [t("H"), t("N")]);
    }

    #[test]
    fn a_store_of_schema_22_keeps_its_counts() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
            for step in &schema::MIGRATIONS[..22] {
                conn.execute_batch(step).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 22;
                 INSERT INTO messages (kind, status, to_call, at, from_call, bid, subject, size, created)
                 VALUES ('B', 'N', 'ALL', 'WW', 'N0ABC', 'B1', x'', 1, 0),
                        ('B', 'N', 'ALL', 'WW', 'N0ABC', 'B2', x'', 1, 0),
                        ('B', 'K', 'ALL', 'WW', 'N0ABC', 'B3', x'', 1, 0),
                        ('P', 'Y', 'N0USR', '', 'N0ABC', 'P1', x'', 1, 0),
                        ('T', 'N', '12345', 'NTSCA', 'N0ABC', 'T1', x'', 1, 0);
                 -- Counted as a tool writing rows by hand must since schema 22.
                 INSERT INTO tallies (kind, status, area, at, n)
                    SELECT kind, status, CASE kind WHEN 'B' THEN to_call ELSE '' END, at, COUNT(*)
                    FROM messages GROUP BY 1, 2, 3, 4;
                 -- Schema 22's own triggers count this removal and this change.
                 DELETE FROM messages WHERE bid = 'B2';
                 UPDATE messages SET status = 'F' WHERE bid = 'P1';",
            )
            .unwrap();
        }
        let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, schema::CURRENT_VERSION);
        let t = |k: &str, st: &str, area: &str, at: &str, n| {
            (
                k.to_string(),
                st.to_string(),
                area.to_string(),
                at.to_string(),
                n,
            )
        };
        assert_eq!(
            tallies(&s),
            [
                t("B", "K", "ALL", "WW", 1),
                t("B", "N", "ALL", "WW", 1),
                t("P", "F", "", "", 1),
                t("T", "N", "", "NTSCA", 1),
            ]
        );
        assert!(s.check().unwrap().is_empty());
        // The new triggers count on from there.
        s.set_status(1, MsgStatus::Killed).unwrap();
        s.conn
            .execute("DELETE FROM messages WHERE bid = 'T1'", [])
            .unwrap();
        assert!(s.check().unwrap().is_empty());
        assert_eq!(
            tallies(&s),
            [t("B", "K", "ALL", "WW", 2), t("P", "F", "", "", 1)]
        );
    }
}
