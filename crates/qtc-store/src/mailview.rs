//! What users' own mail and news clients read and write beyond the BBS commands: a user's
//! INBOX with their read marks, clearing a read mark, bulletin areas as newsgroups with their
//! article numbers, a message stored with attachments, and the INBOX's UIDVALIDITY.

use qtc_mail::{NewMessage, StoreError};
use rusqlite::params;

use crate::parts::Attachment;
use crate::{db_err, insert_in, Store};

/// A bulletin area: (category, `@`, count, lowest number, highest number).
pub type Area = (String, String, u64, u64, u64);

/// One bulletin's overview: (number, from, subject, created, BID, size).
pub type Overview = (u64, String, Vec<u8>, i64, String, u64);

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
    pub fn mark_unread(&mut self, number: u64, call: &str) -> Result<(), StoreError> {
        let call = call.to_ascii_uppercase();
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

    /// Stores a message entered here with its attachments, in one transaction; returns its
    /// number.
    pub fn insert_with_files(
        &mut self,
        msg: &NewMessage,
        files: &[Attachment],
        now: i64,
    ) -> Result<u64, StoreError> {
        let tx = self.conn.transaction().map_err(db_err)?;
        let (number, _) = insert_in(&tx, msg, &self.station, &self.queued, None, now)?;
        crate::parts::keep(
            &tx,
            number,
            (&[], files),
            None,
            &self.station,
            &self.queued,
            now,
        )?;
        tx.commit().map_err(db_err)?;
        Ok(number)
    }

    /// Every bulletin area (category and `@`) holding bulletins neither killed nor held, from
    /// the tallies, with its lowest and highest number.
    pub fn bulletin_areas(&mut self) -> Result<Vec<Area>, StoreError> {
        let tx = crate::read_transaction(&mut self.conn)?;
        let areas: Vec<(String, String, u64)> = tx
            .prepare_cached(
                "SELECT area, at, SUM(n) FROM tallies WHERE kind = 'B' AND status NOT IN ('K', 'H') \
                 GROUP BY area, at HAVING SUM(n) > 0 ORDER BY area, at",
            )
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64)))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(db_err)?;
        let mut out = Vec::with_capacity(areas.len());
        for (area, at, n) in areas {
            let (lo, hi): (i64, i64) = tx
                .prepare_cached(
                    "SELECT COALESCE(MIN(number), 0), COALESCE(MAX(number), 0) FROM messages \
                     WHERE to_call = ?1 AND at = ?2 AND kind = 'B' AND status NOT IN ('K', 'H')",
                )
                .and_then(|mut st| st.query_row(params![area, at], |r| Ok((r.get(0)?, r.get(1)?))))
                .map_err(db_err)?;
            out.push((area, at, n, lo as u64, hi as u64));
        }
        tx.commit().map_err(db_err)?;
        Ok(out)
    }

    /// The bulletins of one area numbered `from..=to`, oldest first, at most `limit`.
    pub fn area_bulletins(
        &mut self,
        area: &str,
        at: &str,
        (from, to): (u64, u64),
        limit: usize,
    ) -> Result<Vec<Overview>, StoreError> {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.conn
            .prepare_cached(
                "SELECT number, from_call, subject, created, bid, size FROM messages \
                 WHERE to_call = ?1 AND at = ?2 AND kind = 'B' AND status NOT IN ('K', 'H') \
                 AND number BETWEEN ?3 AND ?4 ORDER BY number LIMIT ?5",
            )
            .and_then(|mut st| {
                st.query_map(
                    params![
                        area.to_ascii_uppercase(),
                        at.to_ascii_uppercase(),
                        n(from),
                        n(to),
                        limit as i64
                    ],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)? as u64,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get::<_, i64>(5)? as u64,
                        ))
                    },
                )?
                .collect::<Result<Vec<_>, _>>()
            })
            .map_err(db_err)
    }

    /// Every attachment of message `number`, in order.
    pub fn attachments_of(&mut self, number: u64) -> Result<Vec<Attachment>, StoreError> {
        let mut out = Vec::new();
        while let Some(a) = self.attachment(number, out.len())? {
            out.push(a);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Durability;
    use qtc_mail::{ListFilter, MessageStore, MsgStatus, MsgType};

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
            body: b"b\r\n".to_vec(),
        }
    }

    #[test]
    fn what_mail_clients_read_and_write() {
        let dir = tempfile::tempdir().unwrap();
        let validity = {
            let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
            s.uid_validity().unwrap()
        };
        let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
        assert_eq!(s.uid_validity().unwrap(), validity, "drawn once");
        let before = s.changes();
        let file = Attachment {
            name: b"a.bin".to_vec(),
            data: vec![0, 1],
        };
        let n = s
            .insert_with_files(
                &msg(MsgType::Personal, "N0OTH", ""),
                std::slice::from_ref(&file),
                0,
            )
            .unwrap();
        assert!(s.changes() > before);
        assert_eq!(s.attachments_of(n).unwrap(), vec![file]);
        s.mark_read(n, "N0OTH").unwrap();
        s.mark_unread(n, "N0OTH").unwrap();
        let f = ListFilter {
            to: Some("N0OTH".into()),
            ..Default::default()
        };
        assert_eq!(s.list(&f).unwrap()[0].status, MsgStatus::New);
        for _ in 0..2 {
            s.insert_message(&msg(MsgType::Bulletin, "WX", "WW"), "N0CALL", 0)
                .unwrap();
        }
        let areas = s.bulletin_areas().unwrap();
        assert_eq!(areas, vec![("WX".into(), "WW".into(), 2, 2, 3)]);
        let arts = s.area_bulletins("wx", "ww", (3, u64::MAX), 10).unwrap();
        assert_eq!(arts.len(), 1);
        assert_eq!(arts[0].0, 3);
    }
}
