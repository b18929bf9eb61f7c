//! Each user's own IMAP folders and the copies kept in them (schema step 19): apart from the
//! BBS's messages, so a copy is never listed at the prompt, forwarded or delivered. Every
//! query names the user, so one user never reaches another's folder. What a folder may hold
//! (how many, how many bytes) is the caller's to check (qtc-email's `folder` module).

use qtc_callsign::Callsign;
use qtc_mail::folder::{Folder, FolderMark, FolderMessage};
use qtc_mail::StoreError;
use rusqlite::{params, OptionalExtension, Transaction};

use crate::{db_err, Store};

/// A kept message's UID, its size and what was kept of it (its bytes left empty).
pub type FolderEntry = (u64, u64, FolderMessage);

impl Store {
    /// `call`'s folders, by name, with their counts.
    pub fn folders(&mut self, call: Callsign) -> Result<Vec<Folder>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT f.name, f.id, f.uid_next, COUNT(m.uid), COALESCE(SUM(m.seen = 0), 0), \
                        COALESCE(SUM(m.size), 0) \
                 FROM mail_folders f LEFT JOIN mail_folder_messages m ON m.folder = f.id \
                 WHERE f.call = ?1 GROUP BY f.id ORDER BY f.name",
            )
            .and_then(|mut st| {
                st.query_map([call.to_string()], |r| {
                    Ok(Folder {
                        name: r.get(0)?,
                        validity: u32::try_from(r.get::<_, i64>(1)?).unwrap_or(u32::MAX),
                        uid_next: r.get::<_, i64>(2)? as u64,
                        messages: r.get::<_, i64>(3)? as u64,
                        unseen: r.get::<_, i64>(4)? as u64,
                        bytes: r.get::<_, i64>(5)? as u64,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()
            })
            .map_err(db_err)
    }

    /// Makes `call`'s folder `name`.
    pub fn create_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO mail_folders (call, name) VALUES (?1, ?2)",
                params![call.to_string(), name],
            )
            .map(|_| ())
            .map_err(db_err)
    }

    /// Deletes `call`'s folder `name` and what it holds.
    pub fn delete_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(db_err)?;
        if let Some(id) = folder_id(&tx, call, name)? {
            tx.execute("DELETE FROM mail_folder_messages WHERE folder = ?1", [id])
                .and_then(|_| tx.execute("DELETE FROM mail_folders WHERE id = ?1", [id]))
                .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)
    }

    /// Renames `call`'s folder `from` to `to`; it keeps its id (UIDVALIDITY) and messages.
    pub fn rename_folder(
        &mut self,
        call: Callsign,
        from: &str,
        to: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE mail_folders SET name = ?3 WHERE call = ?1 AND name = ?2",
                params![call.to_string(), from, to],
            )
            .map(|_| ())
            .map_err(db_err)
    }

    /// The newest `max` messages of `call`'s folder `name`, oldest first.
    pub fn folder_entries(
        &mut self,
        call: Callsign,
        name: &str,
        max: usize,
    ) -> Result<Vec<FolderEntry>, StoreError> {
        let mut rows = self
            .conn
            .prepare_cached(
                "SELECT m.uid, m.size, m.seen, m.answered, m.created, m.from_addr, m.subject \
                 FROM mail_folders f JOIN mail_folder_messages m ON m.folder = f.id \
                 WHERE f.call = ?1 AND f.name = ?2 ORDER BY m.uid DESC LIMIT ?3",
            )
            .and_then(|mut st| {
                st.query_map(params![call.to_string(), name, max as i64], |r| {
                    let kept = FolderMessage {
                        seen: r.get(2)?,
                        answered: r.get(3)?,
                        created: r.get(4)?,
                        from: r.get(5)?,
                        subject: r.get(6)?,
                        bytes: Vec::new(),
                    };
                    Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, kept))
                })?
                .collect::<Result<Vec<_>, _>>()
            })
            .map_err(db_err)?;
        rows.reverse();
        Ok(rows)
    }

    /// The bytes of message `uid` in `call`'s folder `name`.
    pub fn folder_text(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT m.data FROM mail_folders f JOIN mail_folder_messages m ON m.folder = f.id \
                 WHERE f.call = ?1 AND f.name = ?2 AND m.uid = ?3",
            )
            .and_then(|mut st| {
                st.query_row(params![call.to_string(), name, uid as i64], |r| r.get(0))
                    .optional()
            })
            .map_err(db_err)
    }

    /// Keeps `copies` in `call`'s folder `name`, all or none, those without a date stamped
    /// `now`: their UIDs. Nothing (no UIDs) when there is no such folder.
    pub fn keep_copies(
        &mut self,
        call: Callsign,
        name: &str,
        copies: &[FolderMessage],
        now: i64,
    ) -> Result<Vec<u64>, StoreError> {
        let tx = self.conn.transaction().map_err(db_err)?;
        let Some(id) = folder_id(&tx, call, name)? else {
            return Ok(Vec::new());
        };
        let next: i64 = tx
            .query_row(
                "SELECT uid_next FROM mail_folders WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        let mut uids = Vec::with_capacity(copies.len());
        for (uid, c) in (next..).zip(copies) {
            let created = if c.created == 0 { now } else { c.created };
            tx.prepare_cached(
                "INSERT INTO mail_folder_messages \
                 (folder, uid, seen, answered, created, from_addr, subject, size, data) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    id,
                    uid,
                    c.seen,
                    c.answered,
                    created,
                    c.from,
                    c.subject,
                    c.bytes.len() as i64,
                    c.bytes
                ])
            })
            .map_err(db_err)?;
            uids.push(uid as u64);
        }
        tx.execute(
            "UPDATE mail_folders SET uid_next = ?2 WHERE id = ?1",
            params![id, next + copies.len() as i64],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(uids)
    }

    /// Sets or clears a mark of message `uid` in `call`'s folder `name`.
    pub fn set_folder_mark(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
        mark: FolderMark,
        on: bool,
    ) -> Result<(), StoreError> {
        let column = match mark {
            FolderMark::Seen => "seen",
            FolderMark::Answered => "answered",
        };
        let sql = format!(
            "UPDATE mail_folder_messages SET {column} = ?4 WHERE uid = ?3 AND folder = \
             (SELECT id FROM mail_folders WHERE call = ?1 AND name = ?2)"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| st.execute(params![call.to_string(), name, uid as i64, on]))
            .map(|_| ())
            .map_err(db_err)
    }

    /// Deletes message `uid` of `call`'s folder `name`; true when it was there.
    pub fn expunge_copy(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
    ) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(
                "DELETE FROM mail_folder_messages WHERE uid = ?3 AND folder = \
                 (SELECT id FROM mail_folders WHERE call = ?1 AND name = ?2)",
            )
            .and_then(|mut st| st.execute(params![call.to_string(), name, uid as i64]))
            .map(|n| n == 1)
            .map_err(db_err)
    }
}

fn folder_id(tx: &Transaction<'_>, call: Callsign, name: &str) -> Result<Option<i64>, StoreError> {
    tx.query_row(
        "SELECT id FROM mail_folders WHERE call = ?1 AND name = ?2",
        params![call.to_string(), name],
        |r| r.get(0),
    )
    .optional()
    .map_err(db_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Durability;
    use qtc_mail::{ListFilter, MsgType};

    /// A bulletin folder (`Bulletins/WX`) lists the newest bulletins of its category by the
    /// addressee index, newest first: no sort of the category, whatever the store holds.
    #[test]
    fn a_bulletin_folder_walks_the_addressee_index() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path(), Durability::Normal).unwrap();
        let f = ListFilter {
            kind: Some(MsgType::Bulletin),
            to: Some("WX".into()),
            visible_to: Some("N0OTH".into()),
            last: Some(1000),
            ..Default::default()
        };
        let (sql, args) = crate::list_query(&f, None, true);
        let mut st = s
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let plan = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                r.get::<_, String>(3)
            })
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
            .join("; ");
        assert!(
            plan.contains("SEARCH messages USING INDEX messages_to (to_call=?)"),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }

    fn copy(text: &[u8]) -> FolderMessage {
        FolderMessage {
            seen: false,
            answered: false,
            created: 0,
            from: "N0USR@N0CALL".into(),
            subject: b"s".to_vec(),
            bytes: text.to_vec(),
        }
    }

    #[test]
    fn folders_keep_copies_per_user() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
        s.create_folder(crate::tests::call("n0usr"), "Sent")
            .unwrap();
        s.create_folder(crate::tests::call("N0OTH"), "Sent")
            .unwrap();
        let uids = s
            .keep_copies(
                crate::tests::call("N0USR"),
                "Sent",
                &[copy(b"one"), copy(b"two!")],
                7,
            )
            .unwrap();
        assert_eq!(uids, [1, 2]);
        assert!(s
            .keep_copies(crate::tests::call("N0USR"), "Nope", &[copy(b"x")], 7)
            .unwrap()
            .is_empty());
        s.set_folder_mark(
            crate::tests::call("N0USR"),
            "Sent",
            2,
            FolderMark::Seen,
            true,
        )
        .unwrap();
        let f = &s.folders(crate::tests::call("N0USR")).unwrap()[0];
        assert_eq!((f.messages, f.unseen, f.bytes, f.uid_next), (2, 1, 7, 3));
        assert!(
            s.folders(crate::tests::call("N0OTH")).unwrap()[0].messages == 0,
            "the other user's is empty"
        );
        assert_eq!(
            s.folder_text(crate::tests::call("N0OTH"), "Sent", 1)
                .unwrap(),
            None
        );
        assert_eq!(
            s.folder_text(crate::tests::call("N0USR"), "Sent", 1)
                .unwrap()
                .unwrap(),
            b"one"
        );
        let e = s
            .folder_entries(crate::tests::call("N0USR"), "Sent", 1)
            .unwrap();
        assert_eq!(
            (e[0].0, e[0].1, e[0].2.seen, e[0].2.created),
            (2, 4, true, 7)
        );
        assert!(s
            .expunge_copy(crate::tests::call("N0USR"), "Sent", 1)
            .unwrap());
        assert!(!s
            .expunge_copy(crate::tests::call("N0OTH"), "Sent", 2)
            .unwrap());
        let validity = f.validity;
        s.rename_folder(crate::tests::call("N0USR"), "Sent", "Old")
            .unwrap();
        assert_eq!(
            s.folders(crate::tests::call("N0USR")).unwrap()[0].validity,
            validity
        );
        s.delete_folder(crate::tests::call("N0USR"), "Old").unwrap();
        s.create_folder(crate::tests::call("N0USR"), "Old").unwrap();
        let again = &s.folders(crate::tests::call("N0USR")).unwrap()[0];
        assert!(
            again.validity > validity && again.messages == 0,
            "{again:?}"
        );
    }
}
