//! Transactions begun and ended by cached statements. rusqlite's `Transaction` prepares its
//! `BEGIN` and `COMMIT` anew each time: with two transactions a received block (the answer to
//! the proposals, the store of the block) that was 1.4 % of a B1 receiver's CPU (bench row 2f).

use std::ops::Deref;

use rusqlite::Connection;

use crate::db_err;
use qtc_mail::StoreError;

/// An open transaction on a connection; rolled back when dropped before [`Tx::commit`] (or
/// when its commit failed), as rusqlite's is.
pub(crate) struct Tx<'c> {
    conn: &'c Connection,
}

impl<'c> Tx<'c> {
    /// A write transaction. `IMMEDIATE`, as `Store::open` makes rusqlite's: it takes the write
    /// lock first and waits for it, where a deferred one that read first would fail at once
    /// when another connection committed in between.
    pub(crate) fn write(conn: &'c mut Connection) -> Result<Tx<'c>, StoreError> {
        run(conn, "BEGIN IMMEDIATE")?;
        Ok(Tx { conn })
    }

    /// A read transaction: deferred, so it takes no write lock, and its statements share one
    /// WAL read lock where each on its own would take and drop it (two `fcntl` calls apiece).
    pub(crate) fn read(conn: &'c mut Connection) -> Result<Tx<'c>, StoreError> {
        run(conn, "BEGIN DEFERRED")?;
        Ok(Tx { conn })
    }

    pub(crate) fn commit(self) -> Result<(), StoreError> {
        run(self.conn, "COMMIT")
    }
}

impl Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if !self.conn.is_autocommit() {
            let _ = run(self.conn, "ROLLBACK");
        }
    }
}

fn run(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut st| st.execute([]))
        .map(drop)
        .map_err(db_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_keeps_its_writes_only_when_committed() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let count = |c: &Connection| -> i64 {
            c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
                .unwrap()
        };
        {
            let tx = Tx::write(&mut conn).unwrap();
            tx.execute("INSERT INTO t VALUES (1)", []).unwrap();
            // Dropped on an error path: rolled back.
        }
        assert!(conn.is_autocommit());
        assert_eq!(count(&conn), 0);
        let tx = Tx::write(&mut conn).unwrap();
        tx.execute("INSERT INTO t VALUES (2)", []).unwrap();
        tx.commit().unwrap();
        assert_eq!(count(&conn), 1);
        // The same cached statements serve the next transactions.
        let tx = Tx::read(&mut conn).unwrap();
        assert_eq!(count(&tx), 1);
        tx.commit().unwrap();
        assert!(conn.is_autocommit());
    }
}
