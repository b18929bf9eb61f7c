//! What users' own mail and news clients read and write beyond the BBS commands: a user's
//! INBOX with their read marks and `\Answered` marks, clearing a read mark, bulletin areas as
//! newsgroups with their article numbers, a submitted message stored for all its recipients at
//! once with its attachments' types and the ids it answers, and the INBOX's UIDVALIDITY.
//!
//! Bulletin areas cost the same on any store: the counts come from the tallies and the lowest
//! and highest numbers from `messages_area` (schema step 16), an index of open bulletins by
//! area, `@` and number, so an NNTP `GROUP` reads an index entry at each end of the area,
//! never the area.

use qtc_callsign::Callsign;
use qtc_mail::{route, Attachment, MsgType, NewMessage, StoreError, Thread};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db_err, insert_in, Store};

/// A bulletin area: a category and `@`, how many open bulletins it holds, the lowest and
/// highest of their numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Area {
    /// The category (`to`), upper case.
    pub area: String,
    /// The `@`, upper case (may be empty).
    pub at: String,
    /// Bulletins neither killed nor held.
    pub count: u64,
    /// The lowest of their numbers.
    pub low: u64,
    /// The highest.
    pub high: u64,
}

/// One bulletin's overview (NNTP OVER).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overview {
    /// Its number.
    pub number: u64,
    /// Sender.
    pub from: String,
    /// Subject bytes.
    pub subject: Vec<u8>,
    /// Stored at, Unix seconds.
    pub created: i64,
    /// Its BID.
    pub bid: String,
    /// Body bytes.
    pub size: u64,
    /// Body lines.
    pub lines: u64,
}

/// What a mail client keeps beside a message's BBS fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MailParts {
    /// Its attachments, in order (B2F `File:` parts have no type).
    pub files: Vec<Attachment>,
    /// What it answers.
    pub thread: Thread,
}

/// The open bulletins of an area, by the partial index (its condition named exactly, so
/// SQLite may use it).
const AREA: &str = "messages INDEXED BY messages_area \
     WHERE to_call = ?1 AND at = ?2 AND kind = 'B' AND status NOT IN ('K', 'H')";

impl Store {
    /// Rows this connection has changed since it was opened: cheap to read after every job,
    /// it moves only when something was written.
    pub fn changes(&self) -> u64 {
        self.conn.total_changes()
    }

    /// The INBOX's UIDVALIDITY: drawn once when the store was created (schema step 12), so
    /// a store made anew (numbers starting at 1 again) is told apart from the old one.
    pub fn uid_validity(&mut self) -> Result<u32, StoreError> {
        self.conn
            .query_row("SELECT uid_validity FROM mail_meta", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|v| u32::try_from(v.clamp(1, i64::from(u32::MAX))).unwrap_or(1))
            .map_err(db_err)
    }

    /// Clears `call`'s read mark on message `number` (the addressee's is the status; a
    /// copy's is its recipient row). Nothing for anyone else.
    pub fn mark_unread(&mut self, number: u64, call: Callsign) -> Result<(), StoreError> {
        let call = call.to_string();
        let tx = self.conn.transaction().map_err(db_err)?;
        tx.execute(
            "UPDATE messages SET status = 'N' WHERE number = ?1 AND to_call = ?2 AND status = 'Y'",
            params![number as i64, call],
        )
        .and_then(|_| {
            tx.execute(
                "UPDATE recipients SET read = 0 WHERE number = ?1 AND call = ?2",
                params![number as i64, call],
            )
        })
        .map_err(db_err)?;
        tx.commit().map_err(db_err)
    }

    /// Where a message written here to `to` @ `at` would go, under the station's routes as
    /// last set: the partners it would be queued for, and whether its `@` is this BBS.
    pub fn destination(
        &self,
        kind: MsgType,
        to: &str,
        at: &str,
    ) -> Result<(Vec<Callsign>, bool), StoreError> {
        let station = crate::station(&self.station)?;
        let q = route::RouteQuery {
            kind,
            to,
            at,
            origin: None,
            seen: &[],
        };
        let targets = route::targets(&q, station.call, &station.partners);
        Ok((targets, route::is_local(at, station.call)))
    }

    /// Sets or clears `call`'s `\Answered` mark on message `number`.
    pub fn set_answered(
        &mut self,
        number: u64,
        call: Callsign,
        answered: bool,
    ) -> Result<(), StoreError> {
        let call = call.to_string();
        let sql = match answered {
            true => {
                "INSERT OR IGNORE INTO mail_answered (number, call) \
                     SELECT number, ?2 FROM messages WHERE number = ?1"
            }
            false => "DELETE FROM mail_answered WHERE number = ?1 AND call = ?2",
        };
        self.conn
            .execute(sql, params![number as i64, call])
            .map(|_| ())
            .map_err(db_err)
    }

    /// Whether `call` marked message `number` `\Answered`.
    pub fn answered(&mut self, number: u64, call: Callsign) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached("SELECT 1 FROM mail_answered WHERE number = ?1 AND call = ?2")
            .and_then(|mut st| st.exists(params![number as i64, call.to_string()]))
            .map_err(db_err)
    }

    /// Stores a message a client submitted, one copy per addressee, in one transaction: every
    /// copy with its attachments and what it answers, or none (a known BID, a rule's
    /// refusal, a full store). Each copy's number and BID.
    pub fn insert_submission(
        &mut self,
        msgs: &[NewMessage],
        parts: &MailParts,
        now: i64,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let station = crate::station(&self.station)?;
        let tx = self.conn.transaction().map_err(db_err)?;
        let mut stored = Vec::with_capacity(msgs.len());
        for msg in msgs {
            let (number, _) = insert_in(&tx, msg, station, &self.queued, None, now)?;
            keep_parts(&tx, number, parts, (station, &self.queued), now)?;
            let bid: String = tx
                .prepare_cached("SELECT bid FROM messages WHERE number = ?1")
                .and_then(|mut st| st.query_row([number as i64], |r| r.get(0)))
                .map_err(db_err)?;
            stored.push((number, bid));
        }
        tx.commit().map_err(db_err)?;
        Ok(stored)
    }

    /// Message `number`'s attachments with their types and the ids it answers.
    pub fn mail_parts(&mut self, number: u64) -> Result<MailParts, StoreError> {
        let files = self
            .conn
            .prepare_cached(
                "SELECT name, mime, data FROM attachments WHERE number = ?1 ORDER BY pos",
            )
            .and_then(|mut st| {
                st.query_map([number as i64], |r| {
                    Ok(Attachment {
                        name: r.get(0)?,
                        mime: r.get(1)?,
                        data: r.get(2)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()
            })
            .map_err(db_err)?;
        let thread: Option<(String, String)> = self
            .conn
            .prepare_cached("SELECT in_reply_to, refs FROM mail_threads WHERE number = ?1")
            .and_then(|mut st| {
                st.query_row([number as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(db_err)?;
        let (in_reply_to, references) = thread.unwrap_or_default();
        Ok(MailParts {
            files,
            thread: Thread {
                in_reply_to,
                references,
            },
        })
    }

    /// One bulletin area, if it holds open bulletins: the count from the tallies, the lowest
    /// and highest number from the area index (two index entries, whatever its size).
    pub fn bulletin_area(&mut self, area: &str, at: &str) -> Result<Option<Area>, StoreError> {
        let (area, at) = (area.to_ascii_uppercase(), at.to_ascii_uppercase());
        let tx = crate::tx::Tx::read(&mut self.conn)?;
        let count: i64 = tx
            .prepare_cached(
                "SELECT COALESCE(SUM(n), 0) FROM tallies \
                 WHERE kind = 'B' AND area = ?1 AND at = ?2 AND status NOT IN ('K', 'H')",
            )
            .and_then(|mut st| st.query_row(params![area, at], |r| r.get(0)))
            .map_err(db_err)?;
        let found = match count {
            n if n > 0 => Some(area_bounds(&tx, area, at, n as u64)?),
            _ => None,
        };
        tx.commit()?;
        Ok(found)
    }

    /// Every bulletin area holding open bulletins, in order of category and `@`.
    pub fn bulletin_areas(&mut self) -> Result<Vec<Area>, StoreError> {
        let tx = crate::tx::Tx::read(&mut self.conn)?;
        let areas: Vec<(String, String, i64)> = tx
            .prepare_cached(
                "SELECT area, at, SUM(n) FROM tallies WHERE kind = 'B' AND status NOT IN ('K', 'H') \
                 GROUP BY area, at HAVING SUM(n) > 0 ORDER BY area, at",
            )
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(db_err)?;
        let mut out = Vec::with_capacity(areas.len());
        for (area, at, n) in areas {
            out.push(area_bounds(&tx, area, at, n as u64)?);
        }
        tx.commit()?;
        Ok(out)
    }

    /// The numbers of one area's open bulletins in `from..=to`, oldest first, at most
    /// `limit`: from the area index alone (NNTP LISTGROUP).
    pub fn area_numbers(
        &mut self,
        area: &str,
        at: &str,
        range: (u64, u64),
        limit: usize,
    ) -> Result<Vec<u64>, StoreError> {
        self.in_area("number", (area, at), range, limit, |r| {
            Ok(r.get::<_, i64>(0)? as u64)
        })
    }

    /// The open bulletins of one area numbered `from..=to`, oldest first, at most `limit`.
    pub fn area_bulletins(
        &mut self,
        area: &str,
        at: &str,
        range: (u64, u64),
        limit: usize,
    ) -> Result<Vec<Overview>, StoreError> {
        let columns = "number, from_call, subject, created, bid, size";
        let mut found = self.in_area(columns, (area, at), range, limit, |r| {
            Ok(Overview {
                number: r.get::<_, i64>(0)? as u64,
                from: r.get(1)?,
                subject: r.get(2)?,
                created: r.get(3)?,
                bid: r.get(4)?,
                size: r.get::<_, i64>(5)? as u64,
                lines: 0,
            })
        })?;
        // The texts are kept deflated: each is read to count its lines.
        for o in &mut found {
            if let Some(text) = crate::texts::get(&self.conn, o.number)? {
                o.lines = lines(&text.split()?.1);
            }
        }
        Ok(found)
    }

    /// `columns` of an area's open bulletins numbered `from..=to`, oldest first, at most
    /// `limit`, each row made into a `T`.
    fn in_area<T>(
        &mut self,
        columns: &str,
        (area, at): (&str, &str),
        (from, to): (u64, u64),
        limit: usize,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT {columns} FROM {AREA} AND number BETWEEN ?3 AND ?4 ORDER BY number LIMIT ?5"
        );
        let params = params![
            area.to_ascii_uppercase(),
            at.to_ascii_uppercase(),
            n(from),
            n(to),
            limit as i64
        ];
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| st.query_map(params, row)?.collect::<Result<Vec<_>, _>>())
            .map_err(db_err)
    }
}

/// Lines of a text: its line ends, and a last line without one.
fn lines(text: &[u8]) -> u64 {
    let ends = text.iter().filter(|&&b| b == b'\n').count() as u64;
    ends + u64::from(!text.is_empty() && !text.ends_with(b"\n"))
}

/// An area with `count` open bulletins: its lowest and highest number, one index entry each.
fn area_bounds(tx: &Connection, area: String, at: String, count: u64) -> Result<Area, StoreError> {
    let sql = format!(
        "SELECT (SELECT number FROM {AREA} ORDER BY number LIMIT 1), \
                (SELECT number FROM {AREA} ORDER BY number DESC LIMIT 1)"
    );
    let (low, high): (Option<i64>, Option<i64>) = tx
        .prepare_cached(&sql)
        .and_then(|mut st| st.query_row(params![area, at], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(db_err)?;
    Ok(Area {
        area,
        at,
        count,
        low: low.unwrap_or(0) as u64,
        high: high.unwrap_or(0) as u64,
    })
}

/// Keeps a submitted copy's attachments (with their types) and what it answers.
fn keep_parts(
    tx: &Connection,
    number: u64,
    parts: &MailParts,
    (station, queued): (&qtc_mail::Station, &crate::QueueMarks),
    now: i64,
) -> Result<(), StoreError> {
    let files: Vec<crate::parts::Attachment> = parts
        .files
        .iter()
        .map(|f| crate::parts::Attachment {
            name: f.name.clone(),
            data: f.data.clone(),
        })
        .collect();
    crate::parts::keep(tx, number, (&[], &files), None, station, queued, now)?;
    for (pos, f) in parts.files.iter().enumerate() {
        tx.prepare_cached("UPDATE attachments SET mime = ?3 WHERE number = ?1 AND pos = ?2")
            .and_then(|mut st| st.execute(params![number as i64, pos as i64, f.mime]))
            .map_err(db_err)?;
    }
    let t = &parts.thread;
    if !t.in_reply_to.is_empty() || !t.references.is_empty() {
        tx.prepare_cached(
            "INSERT INTO mail_threads (number, in_reply_to, refs) VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut st| st.execute(params![number as i64, t.in_reply_to, t.references]))
        .map_err(db_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::call;
    use crate::Durability;
    use qtc_mail::{ListFilter, MessageStore, MsgStatus, Station};

    fn msg(kind: MsgType, to: &str, at: &str) -> NewMessage {
        NewMessage {
            kind,
            status: MsgStatus::New,
            to: to.into(),
            at: at.into(),
            from: "N0USR".into(),
            bid: None,
            subject: b"s".to_vec(),
            rlines: Vec::new(),
            body: b"b\r\nlast".to_vec(),
        }
    }

    fn store(dir: &std::path::Path) -> Store {
        let mut s = Store::open(dir, Durability::Normal).unwrap();
        s.set_station(Station::new(call("N0CALL")));
        s
    }

    #[test]
    fn what_mail_clients_read_and_write() {
        let dir = tempfile::tempdir().unwrap();
        let validity = store(dir.path()).uid_validity().unwrap();
        let mut s = store(dir.path());
        assert_eq!(s.uid_validity().unwrap(), validity, "drawn once");
        let before = s.changes();
        let parts = MailParts {
            files: vec![Attachment {
                name: b"a.txt".to_vec(),
                mime: "text/plain; charset=us-ascii".into(),
                data: b"one\ntwo\n".to_vec(),
            }],
            thread: Thread {
                in_reply_to: "<1_N0CALL@x>".into(),
                references: "<1_N0CALL@x>".into(),
            },
        };
        let copies = [
            msg(MsgType::Personal, "N0OTH", ""),
            msg(MsgType::Personal, "N0SYS", ""),
        ];
        let stored = s.insert_submission(&copies, &parts, 0).unwrap();
        assert_eq!(stored, vec![(1, "1_N0CALL".into()), (2, "2_N0CALL".into())]);
        assert!(s.changes() > before);
        assert_eq!(s.mail_parts(2).unwrap(), parts);
        assert_eq!(s.mail_parts(1).unwrap().files[0].data, b"one\ntwo\n");
        s.mark_read(1, call("N0OTH")).unwrap();
        s.mark_unread(1, call("N0OTH")).unwrap();
        let f = ListFilter {
            to: Some("N0OTH".into()),
            ..Default::default()
        };
        assert_eq!(s.list(&f).unwrap()[0].status, MsgStatus::New);
        s.set_answered(1, crate::tests::call("n0oth"), true)
            .unwrap();
        assert!(
            s.answered(1, crate::tests::call("N0OTH")).unwrap()
                && !s.answered(1, crate::tests::call("N0SYS")).unwrap()
        );
        s.set_answered(1, crate::tests::call("N0OTH"), false)
            .unwrap();
        assert!(!s.answered(1, crate::tests::call("N0OTH")).unwrap());
    }

    #[test]
    fn a_submission_is_stored_for_every_copy_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        let mut dup = msg(MsgType::Personal, "N0SYS", "");
        dup.bid = Some("X1".into());
        s.insert_message(&dup, call("N0CALL"), 0).unwrap();
        let copies = [msg(MsgType::Personal, "N0OTH", ""), dup];
        let e = s.insert_submission(&copies, &MailParts::default(), 0);
        assert!(matches!(e, Err(StoreError::DuplicateBid(_))), "{e:?}");
        let f = ListFilter {
            to: Some("N0OTH".into()),
            ..Default::default()
        };
        assert!(s.list(&f).unwrap().is_empty(), "no copy of it stored");
    }

    #[test]
    fn areas_counts_and_overviews() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        for _ in 0..3 {
            s.insert_message(&msg(MsgType::Bulletin, "WX", "WW"), call("N0CALL"), 0)
                .unwrap();
        }
        s.insert_message(&msg(MsgType::Bulletin, "ALL", ""), call("N0CALL"), 0)
            .unwrap();
        s.set_status(1, MsgStatus::Killed).unwrap();
        let wx = Area {
            area: "WX".into(),
            at: "WW".into(),
            count: 2,
            low: 2,
            high: 3,
        };
        assert_eq!(s.bulletin_area("wx", "ww").unwrap(), Some(wx.clone()));
        assert_eq!(s.bulletin_area("WX", "EU").unwrap(), None);
        let all = s.bulletin_areas().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].area.as_str(), all[0].low), ("ALL", 4));
        assert_eq!(all[1], wx);
        assert_eq!(
            s.area_numbers("wx", "ww", (0, u64::MAX), 10).unwrap(),
            [2, 3]
        );
        let arts = s.area_bulletins("wx", "ww", (3, u64::MAX), 10).unwrap();
        assert_eq!(arts.len(), 1);
        assert_eq!((arts[0].number, arts[0].size, arts[0].lines), (3, 7, 2));
    }

    #[test]
    fn group_counts_read_the_index_not_the_area() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let plan = |sql: &str| -> String {
            let sql = format!(
                "EXPLAIN QUERY PLAN {}",
                sql.replace("?1", "'WX'").replace("?2", "'WW'")
            );
            let mut st = s.conn.prepare(&sql).unwrap();
            let rows = st
                .query_map([], |r| r.get::<_, String>(3))
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            rows.join("; ")
        };
        let bounds = plan(&format!(
            "SELECT (SELECT number FROM {AREA} ORDER BY number LIMIT 1), \
                    (SELECT number FROM {AREA} ORDER BY number DESC LIMIT 1)"
        ));
        assert_eq!(
            bounds
                .matches("SEARCH messages USING COVERING INDEX messages_area")
                .count(),
            2,
            "{bounds}"
        );
        assert!(!bounds.contains("TEMP B-TREE"), "{bounds}");
        let numbers = plan(&format!(
            "SELECT number FROM {AREA} AND number BETWEEN 1 AND 9 ORDER BY number LIMIT 5"
        ));
        assert!(
            numbers.starts_with("SEARCH messages USING COVERING INDEX messages_area")
                && !numbers.contains("TEMP B-TREE"),
            "{numbers}"
        );
        let count = plan(
            "SELECT COALESCE(SUM(n), 0) FROM tallies WHERE kind = 'B' AND area = ?1 AND at = ?2 \
             AND status NOT IN ('K', 'H')",
        );
        assert!(
            count.contains("SEARCH tallies USING PRIMARY KEY"),
            "{count}"
        );
    }
}
