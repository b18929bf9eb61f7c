//! White pages: the home BBS of each callsign, learned from the R: lines of received mail (the
//! bottom R: line names the BBS where the message was written) and from users' `NH` command.
//! Used by `WP call` and to route personal mail sent without an `@`.

use qtc_mail::StoreError;
use rusqlite::{params, Connection, OptionalExtension};

use crate::db_err;

/// Where an entry came from; a user's own `NH` outranks what R: lines suggest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Learned from an R: line.
    Rline,
    /// Set by the user with NH.
    User,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Rline => "R",
            Source::User => "U",
        }
    }
}

/// Records `home` as the home BBS of `call`. An R: line never overrides a user's own entry, nor
/// rewrites an entry that already says the same (`updated` is when the home was last learned
/// different): a block of bulletins from one author then writes no white-pages page, one WAL
/// frame (two writes) less per received block.
pub(crate) fn learn(
    conn: &Connection,
    call: &str,
    home: &str,
    source: Source,
    now: i64,
) -> Result<(), StoreError> {
    let call = call.to_ascii_uppercase();
    let home = home.to_ascii_uppercase();
    if call.is_empty() || home.is_empty() || home.len() > qtc_mail::MAX_AT_LEN {
        return Ok(());
    }
    let sql = match source {
        Source::User => {
            "INSERT INTO wp (call, home, updated, source) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (call) DO UPDATE SET home = ?2, updated = ?3, source = ?4"
        }
        Source::Rline => {
            "INSERT INTO wp (call, home, updated, source) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (call) DO UPDATE SET home = ?2, updated = ?3 \
             WHERE wp.source != 'U' AND wp.updated <= ?3 AND wp.home != ?2"
        }
    };
    conn.prepare_cached(sql)
        .and_then(|mut st| st.execute(params![call, home, now, source.as_str()]))
        .map_err(db_err)?;
    Ok(())
}

/// The home BBS known for `call`.
pub(crate) fn lookup(conn: &Connection, call: &str) -> Result<Option<String>, StoreError> {
    conn.query_row(
        "SELECT home FROM wp WHERE call = ?1",
        [call.to_ascii_uppercase()],
        |r| r.get(0),
    )
    .optional()
    .map_err(db_err)
}

/// One white-pages entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WpEntry {
    /// The callsign.
    pub call: String,
    /// Its home BBS (a hierarchical address).
    pub home: String,
    /// When it was last learned (Unix seconds; 0: set by the user before dates were kept).
    pub updated: i64,
    /// Set by the user with `NH` (else learned from an R: line).
    pub by_user: bool,
}

/// A page of the white pages, in callsign order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WpPage {
    /// The entries found.
    pub entries: Vec<WpEntry>,
    /// Where the next page starts (the last callsign looked at), if there may be more.
    pub next: Option<String>,
}

impl crate::Store {
    /// Up to `limit` entries after callsign `after`, whose callsign starts with `prefix` and
    /// whose home BBS holds `home` (both case-insensitive; empty: any). The callsign is the
    /// table's key, so a prefix is a range of it; a home is matched while walking it, at most
    /// `scan` rows per call (`next` says where to go on), so no page reads the whole table.
    pub fn white_pages(
        &self,
        prefix: &str,
        home: &str,
        after: &str,
        limit: usize,
        scan: usize,
    ) -> Result<WpPage, StoreError> {
        let prefix = prefix.to_ascii_uppercase();
        let home = home.to_ascii_uppercase();
        let end = format!("{prefix}\u{7f}");
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT call, home, updated, source FROM wp \
                 WHERE call > ?1 AND call >= ?2 AND call < ?3 ORDER BY call LIMIT ?4",
            )
            .map_err(db_err)?;
        let rows = st
            .query_map(params![after, prefix, end, scan as i64], |r| {
                Ok(WpEntry {
                    call: r.get(0)?,
                    home: r.get(1)?,
                    updated: r.get(2)?,
                    by_user: r.get::<_, String>(3)? == Source::User.as_str(),
                })
            })
            .map_err(db_err)?;
        let mut page = WpPage::default();
        let mut seen = 0;
        for row in rows {
            let e = row.map_err(db_err)?;
            seen += 1;
            if page.entries.len() == limit {
                // One more exists: the page ends at its last entry.
                page.next = page.entries.last().map(|l| l.call.clone());
                return Ok(page);
            }
            let last = e.call.clone();
            if home.is_empty() || e.home.contains(&home) {
                page.entries.push(e);
            }
            if seen == scan {
                page.next = Some(last);
            }
        }
        Ok(page)
    }
}

/// The full address in the bottom (oldest) R: line: where the message was written.
pub(crate) fn origin_address(rlines: &[u8]) -> Option<String> {
    let last = rlines
        .split(|&b| b == b'\n' || b == b'\r')
        .rfind(|l| l.starts_with(b"R:"))?;
    let text = String::from_utf8_lossy(last);
    let at = text.find('@')?;
    let addr: String = text[at + 1..]
        .trim_start_matches(':')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '#' || *c == '-')
        .collect();
    (!addr.is_empty()).then_some(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_by_prefix_and_home_within_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let st = crate::Store::open(dir.path(), crate::Durability::Normal).unwrap();
        for (call, home) in [
            ("N0AAA", "N0BBS.#NCA.CA"),
            ("N0AAB", "G0XYZ.GBR"),
            ("N0AAC", "N0BBS.#NCA.CA"),
            ("N1ZZZ", "N0BBS.#NCA.CA"),
        ] {
            learn(&st.conn, call, home, Source::Rline, 1).unwrap();
        }
        let p = st.white_pages("n0a", "", "", 2, 100).unwrap();
        let calls: Vec<&str> = p.entries.iter().map(|e| e.call.as_str()).collect();
        assert_eq!(
            (calls, p.next.as_deref()),
            (vec!["N0AAA", "N0AAB"], Some("N0AAB"))
        );
        let p = st.white_pages("N0A", "", "N0AAB", 2, 100).unwrap();
        assert_eq!((p.entries.len(), p.next), (1, None));
        // A home is matched within the scan, which says where it stopped.
        let p = st.white_pages("", "#nca", "", 10, 2).unwrap();
        let calls: Vec<&str> = p.entries.iter().map(|e| e.call.as_str()).collect();
        assert_eq!((calls, p.next.as_deref()), (vec!["N0AAA"], Some("N0AAB")));
        let p = st.white_pages("", "#nca", "N0AAB", 10, 2).unwrap();
        assert_eq!(p.entries.len(), 2);
    }

    #[test]
    fn origin_is_the_bottom_rline() {
        let r = b"R:261202/1231Z @:N0AAA.#NCA.CA.USA.NOAM #:1\r\nR:261202/1200Z 45@N0CCC.#SCA.CA.USA.NOAM\r\n";
        assert_eq!(origin_address(r).as_deref(), Some("N0CCC.#SCA.CA.USA.NOAM"));
        assert_eq!(origin_address(b""), None);
    }
}
