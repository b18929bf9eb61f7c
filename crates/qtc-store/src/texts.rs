//! Message text (R: lines and body), kept apart from the messages' headers and compressed.
//!
//! Table `texts` holds each message's R: lines and body as one piece, deflated when that makes
//! it smaller (a bulletin's text to about 35-45 %). Apart from its header row, so that a
//! listing, a status change or housekeeping's walk reads and writes only short rows; and
//! compressed, because every byte of it is written twice (WAL, then the database) and an SD
//! card wears with each (docs/performance.md, "Bytes written per received message").
//! A text above [`PACK_UP_TO`] is kept as it is: `R` reads it in pieces
//! ([`body_chunk`]), each straight from the file.

use std::cell::RefCell;

use miniz_oxide::deflate::core::{
    compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};
use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;
use qtc_mail::StoreError;
use rusqlite::{params, Connection, OptionalExtension};

use crate::db_err;

/// Texts up to this size are compressed; larger ones are kept as they are.
const PACK_UP_TO: usize = 64 * 1024;

/// Deflate level 2: within 2 % of the best level's size on bulletins, at a third of its time.
const LEVEL: i32 = 2;

/// How a text is kept (`texts.packed`).
const PLAIN: i64 = 0;
const DEFLATED: i64 = 1;

thread_local! {
    /// A compressor's tables are 300 KB: made once per thread, not per message.
    static DEFLATE: RefCell<Box<CompressorOxide>> = RefCell::new(Box::new(
        CompressorOxide::new(create_comp_flags_from_zip_params(LEVEL, -15, 0)),
    ));
    static INFLATE: RefCell<Box<DecompressorOxide>> = RefCell::new(Box::default());
}

/// Keeps the text of message `number`: its R: lines, then its body.
pub(crate) fn put(
    conn: &Connection,
    number: u64,
    rlines: &[u8],
    body: &[u8],
) -> Result<(), StoreError> {
    let size = rlines.len() + body.len();
    let mut text = Vec::with_capacity(size);
    text.extend_from_slice(rlines);
    text.extend_from_slice(body);
    let (packed, data) = match (size <= PACK_UP_TO).then(|| deflate(&text)).flatten() {
        Some(packed) => (DEFLATED, packed),
        None => (PLAIN, text),
    };
    conn.prepare_cached(
        "INSERT INTO texts (number, rlines, size, packed, data) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut st| {
        st.execute(params![
            number as i64,
            rlines.len() as i64,
            size as i64,
            packed,
            data
        ])
    })
    .map_err(db_err)?;
    Ok(())
}

/// `text` deflated, when that is smaller.
fn deflate(text: &[u8]) -> Option<Vec<u8>> {
    DEFLATE.with(|c| {
        let mut c = c.borrow_mut();
        c.reset();
        // Output no larger than the input: a text that does not shrink is kept plain.
        let mut out = vec![0u8; text.len()];
        let (status, _, n) = compress(&mut c, text, &mut out, TDEFLFlush::Finish);
        (status == TDEFLStatus::Done).then(|| {
            out.truncate(n);
            out
        })
    })
}

/// The first `want` bytes of a deflated text of `size` bytes.
fn inflate(data: &[u8], size: usize, want: usize) -> Result<Vec<u8>, StoreError> {
    let want = want.min(size);
    INFLATE.with(|d| {
        let mut d = d.borrow_mut();
        d.init();
        let mut out = vec![0u8; want];
        let (status, _, n) = decompress(
            &mut d,
            data,
            &mut out,
            0,
            inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        );
        let whole = matches!(status, TINFLStatus::Done | TINFLStatus::HasMoreOutput);
        if !whole || n != want {
            return Err(StoreError::Database(format!(
                "a stored text does not decompress ({status:?}, {n} of {want} bytes)"
            )));
        }
        Ok(out)
    })
}

/// A `texts` row as read: the R: lines' length, the text's, how it is kept, and its bytes.
pub(crate) struct Row {
    rlines: usize,
    size: usize,
    packed: i64,
    data: Vec<u8>,
}

impl Row {
    /// Reads a row from columns `at`.. (`rlines, size, packed, data`) of a query.
    pub(crate) fn from_columns(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Row> {
        Ok(Row {
            rlines: r.get::<_, i64>(at)?.max(0) as usize,
            size: r.get::<_, i64>(at + 1)?.max(0) as usize,
            packed: r.get(at + 2)?,
            data: r.get(at + 3)?,
        })
    }

    /// The first `want` bytes of the text.
    fn prefix(self, want: usize) -> Result<Vec<u8>, StoreError> {
        match self.packed {
            PLAIN => {
                let mut data = self.data;
                data.truncate(want);
                Ok(data)
            }
            _ => inflate(&self.data, self.size, want),
        }
    }

    /// The whole text: R: lines, then the body.
    pub(crate) fn text(self) -> Result<Vec<u8>, StoreError> {
        let size = self.size;
        self.prefix(size)
    }

    /// The R: lines and the body, apart.
    pub(crate) fn split(self) -> Result<(Vec<u8>, Vec<u8>), StoreError> {
        let at = self.rlines;
        let mut text = self.text()?;
        let body = text.split_off(at.min(text.len()));
        Ok((text, body))
    }

    /// The R: lines alone (of a deflated text, only they are decompressed).
    pub(crate) fn rlines(self) -> Result<Vec<u8>, StoreError> {
        let at = self.rlines;
        self.prefix(at)
    }
}

/// The columns [`Row::from_columns`] reads, of the `texts` table named `t`.
pub(crate) fn columns(t: &str) -> String {
    format!("{t}.rlines, {t}.size, {t}.packed, {t}.data")
}

/// The text of message `number`, if it has one.
pub(crate) fn get(conn: &Connection, number: u64) -> Result<Option<Row>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM texts t WHERE number = ?1",
        columns("t")
    ))
    .and_then(|mut st| {
        st.query_row([number as i64], |r| Row::from_columns(r, 0))
            .optional()
    })
    .map_err(db_err)
}

/// Up to `len` bytes of message `number`'s body from `offset` (empty past its end, or when
/// the message is gone). A plain text is read in place (incremental blob I/O reads only the
/// pages of the piece); a compressed one is decompressed up to the piece's end.
pub(crate) fn body_chunk(
    conn: &Connection,
    number: u64,
    offset: u64,
    len: usize,
) -> Result<Vec<u8>, StoreError> {
    let head: Option<(i64, i64, i64)> = conn
        .prepare_cached("SELECT rlines, size, packed FROM texts WHERE number = ?1")
        .and_then(|mut st| {
            st.query_row([number as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
        })
        .map_err(db_err)?;
    let Some((rlines, size, packed)) = head else {
        return Ok(Vec::new());
    };
    let (rlines, size) = (rlines.max(0) as usize, size.max(0) as usize);
    let from = rlines
        .saturating_add(usize::try_from(offset).unwrap_or(usize::MAX))
        .min(size);
    let to = from.saturating_add(len).min(size);
    if packed != PLAIN {
        let Some(row) = get(conn, number)? else {
            return Ok(Vec::new());
        };
        let mut text = row.prefix(to)?;
        return Ok(text.split_off(from));
    }
    let blob = conn
        .blob_open(
            rusqlite::MAIN_DB,
            "texts",
            "data",
            i64::try_from(number).unwrap_or(i64::MAX),
            true,
        )
        .map_err(db_err)?;
    let mut piece = vec![0u8; to - from];
    blob.read_at_exact(&mut piece, from).map_err(db_err)?;
    Ok(piece)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_comes_back_whole_in_parts_and_in_pieces() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE texts (number INTEGER PRIMARY KEY, rlines INTEGER NOT NULL, \
             size INTEGER NOT NULL, packed INTEGER NOT NULL, data BLOB NOT NULL);",
        )
        .unwrap();
        let rlines = b"R:251206/1200Z @:N0AAA.#NCA.CA.USA.NOAM #:1 $:1_N0AAA\r\n".to_vec();
        let body = b"the band was open to europe on twenty meters\r\n".repeat(40);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let random: Vec<u8> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let large = b"x".repeat(PACK_UP_TO + 1);
        for (n, body) in [(1u64, &body), (2, &random), (3, &Vec::new()), (4, &large)] {
            put(&conn, n, &rlines, body).unwrap();
            let packed: i64 = conn
                .query_row("SELECT packed FROM texts WHERE number = ?1", [n], |r| {
                    r.get(0)
                })
                .unwrap();
            // Text compresses; noise and what is too large for it are kept as they are.
            match n {
                1 => assert_eq!(packed, DEFLATED),
                2 | 4 => assert_eq!(packed, PLAIN, "message {n}"),
                _ => {}
            }
            let (r, b) = get(&conn, n).unwrap().unwrap().split().unwrap();
            assert_eq!((&r, &b), (&rlines, body), "message {n}");
            assert_eq!(get(&conn, n).unwrap().unwrap().rlines().unwrap(), rlines);
            let mut pieces = Vec::new();
            let mut at = 0;
            loop {
                let piece = body_chunk(&conn, n, at, 1000).unwrap();
                if piece.is_empty() {
                    break;
                }
                at += piece.len() as u64;
                pieces.extend_from_slice(&piece);
            }
            assert_eq!(&pieces, body, "message {n} in pieces");
        }
        assert!(body_chunk(&conn, 9, 0, 10).unwrap().is_empty());
    }
}
