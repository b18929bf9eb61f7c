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
    fn origin_is_the_bottom_rline() {
        let r = b"R:261202/1231Z @:N0AAA.#NCA.CA.USA.NOAM #:1\r\nR:261202/1200Z 45@N0CCC.#SCA.CA.USA.NOAM\r\n";
        assert_eq!(origin_address(r).as_deref(), Some("N0CCC.#SCA.CA.USA.NOAM"));
        assert_eq!(origin_address(b""), None);
    }
}
