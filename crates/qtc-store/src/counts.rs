//! Counts that cost the same on a store of ten messages or a million: read from `tallies`
//! (kept in every writing transaction: the store counts what it inserts, triggers what is
//! changed or removed; tallies.rs checks them) or from an index range that holds one user's
//! mail, never by counting the messages table.

use qtc_callsign::Callsign;
use qtc_mail::{GreetingCounts, StoreError};
use rusqlite::{params, Connection};

use crate::db_err;

/// Messages not killed, and the highest message number (`I`, the greeting).
pub(crate) fn active_and_latest(conn: &Connection) -> Result<(u64, u64), StoreError> {
    conn.prepare_cached(
        "SELECT (SELECT COALESCE(SUM(n), 0) FROM tallies WHERE status != 'K'), \
         (SELECT COALESCE(MAX(number), 0) FROM messages)",
    )
    .and_then(|mut st| {
        st.query_row([], |r| {
            Ok((
                r.get::<_, i64>(0)?.max(0) as u64,
                r.get::<_, i64>(1)? as u64,
            ))
        })
    })
    .map_err(db_err)
}

/// The greeting's counts: the user's own mail is found through the addressee and recipient
/// indexes, so the cost grows with their mail, not with the store.
pub(crate) fn greeting(
    conn: &Connection,
    call: Callsign,
    sysop: bool,
) -> Result<GreetingCounts, StoreError> {
    let held = if sysop { "" } else { " AND status != 'H'" };
    // "New" by the user's own read mark: a Cc'd copy stays new until they read it. Mail to
    // the user is counted from the addressee index alone (it carries the status); the Cc'd
    // copies by their recipient rows.
    let seen = crate::status_seen_by("?1");
    let (mine, new) = conn
        .prepare_cached(&format!(
            "SELECT SUM(n), SUM(new) FROM ( \
               SELECT COUNT(*) AS n, COALESCE(SUM(status = 'N'), 0) AS new FROM messages \
               WHERE to_call = ?1 AND status != 'K'{held} \
               UNION ALL \
               SELECT COUNT(*), COALESCE(SUM({seen} = 'N'), 0) FROM messages \
               WHERE number IN (SELECT number FROM recipients WHERE call = ?1) \
               AND to_call != ?1 AND status != 'K'{held})"
        ))
        .and_then(|mut st| {
            st.query_row([call.to_string()], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
            })
        })
        .map_err(db_err)?;
    let (_, latest) = active_and_latest(conn)?;
    Ok(GreetingCounts { mine, new, latest })
}

/// Whether any bulletin is open (neither killed nor held), from the tallies.
pub(crate) fn open_bulletins(conn: &Connection) -> Result<bool, StoreError> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM tallies \
         WHERE kind = 'B' AND status NOT IN ('K', 'H') AND n > 0)",
    )
    .and_then(|mut st| st.query_row([], |r| r.get(0)))
    .map_err(db_err)
}

/// Bulletin areas with their counts (neither killed nor held), alphabetical.
pub(crate) fn categories(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    let mut st = conn
        .prepare_cached(
            "SELECT area, SUM(n) FROM tallies WHERE kind = 'B' AND status NOT IN ('K', 'H') \
             GROUP BY area HAVING SUM(n) > 0 ORDER BY area",
        )
        .map_err(db_err)?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err);
    rows
}

/// Messages by type and status letters, for /metrics.
pub(crate) fn by_kind_and_status(conn: &Connection) -> Result<Vec<(char, char, u64)>, StoreError> {
    let letter = |s: String| s.chars().next().unwrap_or('?');
    let mut st = conn
        .prepare_cached(
            "SELECT kind, status, SUM(n) FROM tallies GROUP BY kind, status \
             HAVING SUM(n) > 0 ORDER BY kind, status",
        )
        .map_err(db_err)?;
    let rows = st
        .query_map([], |r| {
            Ok((
                letter(r.get(0)?),
                letter(r.get(1)?),
                r.get::<_, i64>(2)? as u64,
            ))
        })
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err);
    rows
}

/// The `@` values an `L@` filter matches, and how to read their messages.
pub(crate) struct AtMatch {
    /// Every `@` value in the store with the filter as one of its elements.
    pub values: Vec<String>,
    /// Few messages carry them: read them through the `at` index and sort them, rather than
    /// walk every message newest first until the LIMIT is reached.
    pub by_index: bool,
}

/// Looks the `@` values up in the tallies (a few hundred rows, not the messages) and picks the
/// cheaper plan: the index reads the m matching rows; the walk by number expects to pass
/// `limit × total / m` rows before it has `limit` of them.
pub(crate) fn at_match(
    conn: &Connection,
    at: &str,
    limit: Option<usize>,
) -> Result<AtMatch, StoreError> {
    let mut st = conn
        .prepare_cached(
            "SELECT at, SUM(n) FROM tallies \
             WHERE ('.' || at || '.') LIKE ('%.' || ?1 || '.%') GROUP BY at HAVING SUM(n) > 0",
        )
        .map_err(db_err)?;
    let found = st
        .query_map(params![at.to_ascii_uppercase()], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    let matching: u64 = found.iter().map(|(_, n)| n).sum();
    let total: u64 = conn
        .prepare_cached("SELECT COALESCE(SUM(n), 0) FROM tallies")
        .and_then(|mut st| st.query_row([], |r| r.get::<_, i64>(0)))
        .map_err(db_err)?
        .max(0) as u64;
    let limit = limit.map_or(total, |l| l as u64);
    Ok(AtMatch {
        values: found.into_iter().map(|(v, _)| v).collect(),
        by_index: matching.saturating_mul(matching) <= limit.saturating_mul(total),
    })
}
