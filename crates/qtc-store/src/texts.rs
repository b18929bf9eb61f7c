//! Message text (R: lines and body), kept apart from the messages' headers and compressed.
//!
//! Table `texts` holds each message's R: lines and body as one piece, deflated when that makes
//! it smaller (a bulletin's text to about 35-45 %). Apart from its header row, so that a
//! listing, a status change or housekeeping's walk reads and writes only short rows; and
//! compressed, because every byte of it is written twice (WAL, then the database) and an SD
//! card wears with each (docs/performance.md, "Bytes written per received message").
//! A text above [`PACK_UP_TO`] is kept as it is: `R` reads it in pieces
//! ([`body_chunk`]), each straight from the file.
//!
//! The texts of messages stored together (a received block of five) are deflated together,
//! into one row of `text_blocks` (schema step 20) instead of a `texts` row each: bulletins
//! share words, so together they deflate to a fifth less, and one row of 3 KB fills its pages
//! where a text of 750 bytes took a page of its own and an overflow page (512-byte pages).
//! A block goes when the last of its messages does (trigger `text_block_gone`).
//!
//! Texts kept alone (a store upgraded at schema step 16 kept them plain; a local post is
//! stored alone) are packed the same way by `qtc store pack` ([`Store::pack_texts`]): runs of
//! consecutive messages into blocks of [`PACK_TEXTS`], a lone plain text deflated.

use std::cell::RefCell;

use libdeflater::{CompressionLvl, Compressor};
use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;
use qtc_mail::StoreError;
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db_err, Store};

/// Texts up to this size are compressed; larger ones are kept as they are.
const PACK_UP_TO: usize = 64 * 1024;

/// A block holds texts of at most this many bytes together (before deflating), and at
/// most [`BLOCK_TEXTS`] of them: reading one text inflates the block up to its end.
const BLOCK_BYTES: usize = 64 * 1024;
const BLOCK_TEXTS: usize = 32;

/// Texts a block made by [`Store::pack_texts`] holds at most: as many as a received FBB block
/// brings, so a packed store reads like one filled by forwarding.
const PACK_TEXTS: usize = 5;

/// Messages [`Store::pack_texts`] walks in one transaction, and the stored text bytes it
/// holds at most while it does (5,000 texts of nearly 64 KB would be 320 MB on a Pi).
const PACK_STEP: usize = 5000;
const PACK_STEP_BYTES: usize = 4 << 20;

/// One text's entry in a block's `sizes`: the message number less the block's first, the R:
/// lines' length and the text's, each 4 bytes little-endian.
const ENTRY: usize = 12;

/// libdeflate's level 1 (its fastest that compresses: 0 stores): on a received block of bench
/// bulletins 577 bytes a message, where miniz_oxide's level 2 (kept before) made 582 and
/// libdeflate's level 6 541, in 0.3 × the time of the first and 0.2 × of the last.
const LEVEL: CompressionLvl = match CompressionLvl::new(1) {
    Ok(level) => level,
    Err(_) => panic!("libdeflate has a level 1"),
};

/// How a text is kept (`texts.packed`).
const PLAIN: i64 = 0;
const DEFLATED: i64 = 1;

thread_local! {
    /// Made once per thread; it needs no reset between buffers (miniz_oxide's compressor
    /// zeroed 230 KB of tables for each).
    static DEFLATE: RefCell<Compressor> = RefCell::new(Compressor::new(LEVEL));
    static INFLATE: RefCell<Box<DecompressorOxide>> = RefCell::new(Box::default());
}

/// Keeps `text` (R: lines of `rlines` bytes, then the body) as message `number`'s own row.
fn put_one(conn: &Connection, number: u64, rlines: usize, text: Vec<u8>) -> Result<(), StoreError> {
    let size = text.len();
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
            rlines as i64,
            size as i64,
            packed,
            data
        ])
    })
    .map_err(db_err)?;
    Ok(())
}

/// The texts of messages stored in one transaction, kept when it is about to commit
/// ([`Batch::write`]): together in blocks where there are several.
#[derive(Default)]
pub(crate) struct Batch {
    /// Message number, the R: lines' length, the text.
    texts: Vec<(u64, usize, Vec<u8>)>,
}

impl Batch {
    /// Adds message `number`'s text: its R: lines, then its body.
    pub(crate) fn add(&mut self, number: u64, rlines: &[u8], body: &[u8]) {
        let mut text = Vec::with_capacity(rlines.len() + body.len());
        text.extend_from_slice(rlines);
        text.extend_from_slice(body);
        self.texts.push((number, rlines.len(), text));
    }

    /// Writes the texts: runs of texts that fit a block go into one, each other text (a
    /// large one, or one alone) into its own row.
    pub(crate) fn write(self, conn: &Connection) -> Result<(), StoreError> {
        let mut run: Vec<(u64, usize, Vec<u8>)> = Vec::new();
        let mut bytes = 0;
        for (number, rlines, text) in self.texts {
            if text.len() > PACK_UP_TO {
                put_one(conn, number, rlines, text)?;
                continue;
            }
            if run.len() == BLOCK_TEXTS || bytes + text.len() > BLOCK_BYTES {
                put_run(conn, std::mem::take(&mut run))?;
                bytes = 0;
            }
            bytes += text.len();
            run.push((number, rlines, text));
        }
        put_run(conn, run)
    }
}

/// Keeps a run of texts: in one block when there are several and together they deflate,
/// else each in its own row.
fn put_run(conn: &Connection, run: Vec<(u64, usize, Vec<u8>)>) -> Result<(), StoreError> {
    let joined = (run.len() > 1).then(|| {
        let texts: Vec<&[u8]> = run.iter().map(|(.., t)| t.as_slice()).collect();
        texts.concat()
    });
    if let Some(data) = joined.as_deref().and_then(deflate) {
        let entries: Vec<(u64, usize, usize)> =
            run.iter().map(|(n, r, t)| (*n, *r, t.len())).collect();
        return put_block(conn, &entries, &data);
    }
    for (number, rlines, text) in run {
        put_one(conn, number, rlines, text)?;
    }
    Ok(())
}

/// Writes a block: `entries` (message number, R: lines' length, text's length, in the order
/// of the texts) and `data`, their texts joined and deflated.
fn put_block(
    conn: &Connection,
    entries: &[(u64, usize, usize)],
    data: &[u8],
) -> Result<(), StoreError> {
    let first = entries.iter().map(|e| e.0).min().unwrap_or(0);
    let last = entries.iter().map(|e| e.0).max().unwrap_or(first);
    let mut sizes = Vec::with_capacity(entries.len() * ENTRY);
    for (number, rlines, size) in entries {
        for v in [number.saturating_sub(first), *rlines as u64, *size as u64] {
            sizes.extend_from_slice(&(v as u32).to_le_bytes());
        }
    }
    conn.prepare_cached(
        "INSERT INTO text_blocks (first, last, sizes, data) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut st| st.execute(params![first as i64, last as i64, sizes, data]))
    .map_err(db_err)?;
    Ok(())
}

/// What [`Store::pack_texts`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    /// Texts moved into blocks.
    pub texts: u64,
    /// Blocks made of them.
    pub blocks: u64,
    /// Plain texts kept alone, now deflated.
    pub deflated: u64,
}

impl Store {
    /// Packs the texts kept alone: each run of consecutive messages whose texts have rows
    /// of their own goes into blocks of up to [`PACK_TEXTS`], deflated together, and a plain
    /// text alone is deflated; then gives the freed pages back (on a file set for incremental
    /// vacuum). Texts in blocks already, and large ones, stay as they are. One transaction
    /// per [`PACK_STEP`] messages; meant for a stopped daemon (`qtc store pack`).
    pub fn pack_texts(&mut self) -> Result<Packed, StoreError> {
        let mut done = Packed::default();
        let mut after = 0;
        let vacuum = self.incremental_vacuum()?;
        loop {
            let tx = self.conn.transaction().map_err(db_err)?;
            let next = pack_step(&tx, after, &mut done)?;
            tx.commit().map_err(db_err)?;
            // Each step frees more pages than its blocks take: given back at once, the free
            // list stays short (a long one makes every page SQLite allocates a search).
            if vacuum {
                crate::housekeep::give_back(&self.conn, None)?;
            }
            match next {
                Some(last) => after = last,
                None => return Ok(done),
            }
        }
    }
}

/// A loose text being packed: message number, R: lines' length, the text, whether it was
/// deflated.
type Loose = (u64, usize, Vec<u8>, bool);

/// Packs the loose texts of up to [`PACK_STEP`] messages after `after` (fewer when their
/// stored texts pass [`PACK_STEP_BYTES`]); the last message walked, `None` when none were left.
fn pack_step(conn: &Connection, after: u64, done: &mut Packed) -> Result<Option<u64>, StoreError> {
    let walked = walk_loose(conn, after)?;
    let Some(last) = walked.last().map(|(n, _)| *n) else {
        return Ok(None);
    };
    let mut run: Vec<Loose> = Vec::new();
    let mut bytes = 0;
    for (number, row) in walked {
        // A message with no row of its own (in a block), or a large text, ends a run.
        let Some(row) = row else {
            pack_run(conn, std::mem::take(&mut run), done)?;
            bytes = 0;
            continue;
        };
        if run.len() == PACK_TEXTS || bytes + row.size > BLOCK_BYTES {
            pack_run(conn, std::mem::take(&mut run), done)?;
            bytes = 0;
        }
        bytes += row.size;
        let (rlines, deflated) = (row.rlines, row.packed != PLAIN);
        run.push((number, rlines, row.text()?, deflated));
    }
    pack_run(conn, run, done)?;
    Ok(Some(last))
}

/// The messages after `after`, in number order, each with its own text row if it has one
/// of at most [`PACK_UP_TO`] bytes: up to [`PACK_STEP`] of them, or as many as hold
/// [`PACK_STEP_BYTES`] of stored text (at least one).
fn walk_loose(conn: &Connection, after: u64) -> Result<Vec<(u64, Option<Row>)>, StoreError> {
    // A large text's bytes are not read (NULL, as for a message without a row).
    let mut st = conn
        .prepare_cached(&format!(
            "SELECT m.number, t.rlines, t.size, t.packed, \
               CASE WHEN t.size <= {PACK_UP_TO} THEN t.data END \
             FROM messages m LEFT JOIN texts t ON t.number = m.number \
             WHERE m.number > ?1 ORDER BY m.number LIMIT ?2"
        ))
        .map_err(db_err)?;
    let rows = st
        .query_map(params![after as i64, PACK_STEP as i64], |r| {
            Ok((r.get::<_, i64>(0)?.max(0) as u64, Row::from_columns(r, 1)?))
        })
        .map_err(db_err)?;
    let (mut walked, mut held) = (Vec::new(), 0);
    for row in rows {
        let (number, row) = row.map_err(db_err)?;
        held += row.as_ref().map_or(0, |r| r.data.len());
        walked.push((number, row));
        if held >= PACK_STEP_BYTES {
            break;
        }
    }
    Ok(walked)
}

/// Keeps a run of loose texts of consecutive messages anew: together in a block, or a lone
/// plain one deflated. A lone deflated text, texts that do not shrink, or a run whose numbers
/// a block's range already covers stay as they are.
fn pack_run(conn: &Connection, run: Vec<Loose>, done: &mut Packed) -> Result<(), StoreError> {
    let (first, last) = match run.as_slice() {
        [] | [(_, _, _, true)] => return Ok(()),
        [(number, _, text, false)] => {
            let Some(data) = deflate(text) else {
                return Ok(());
            };
            done.deflated += conn
                .prepare_cached("UPDATE texts SET packed = ?2, data = ?3 WHERE number = ?1")
                .and_then(|mut st| st.execute(params![*number as i64, DEFLATED, data]))
                .map_err(db_err)? as u64;
            return Ok(());
        }
        [(first, ..), .., (last, ..)] => (*first, *last),
    };
    // A block is found by the last `first` at or below a number: ranges must not overlap.
    let before: Option<i64> = conn
        .prepare_cached(
            "SELECT last FROM text_blocks WHERE first <= ?1 ORDER BY first DESC LIMIT 1",
        )
        .and_then(|mut st| st.query_row([last as i64], |r| r.get(0)).optional())
        .map_err(db_err)?;
    if before.is_some_and(|end| end >= first as i64) {
        return Ok(());
    }
    let texts: Vec<&[u8]> = run.iter().map(|t| t.2.as_slice()).collect();
    let Some(data) = deflate(&texts.concat()) else {
        return Ok(());
    };
    conn.prepare_cached("DELETE FROM texts WHERE number >= ?1 AND number <= ?2")
        .and_then(|mut st| st.execute(params![first as i64, last as i64]))
        .map_err(db_err)?;
    done.texts += run.len() as u64;
    done.blocks += 1;
    put_block(
        conn,
        &run.iter()
            .map(|(n, r, t, _)| (*n, *r, t.len()))
            .collect::<Vec<_>>(),
        &data,
    )
}

/// `text` deflated, when that is smaller.
fn deflate(text: &[u8]) -> Option<Vec<u8>> {
    DEFLATE.with(|c| {
        // Output no larger than the input: a text that does not shrink is kept plain.
        let mut out = vec![0u8; text.len()];
        let n = c.borrow_mut().deflate_compress(text, &mut out).ok()?;
        out.truncate(n);
        Some(out)
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

/// A text as read: the R: lines' length, the text's, how it is kept, and its bytes (of a
/// block: the whole block's, the text starting `skip` bytes into it once inflated).
pub(crate) struct Row {
    rlines: usize,
    size: usize,
    packed: i64,
    data: Vec<u8>,
    skip: usize,
}

impl Row {
    /// Reads a row from columns `at`.. (`rlines, size, packed, data`) of a query; `None`
    /// when they are NULL (a `texts` row joined that is not there: the text is in a block).
    pub(crate) fn from_columns(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Option<Row>> {
        let Some(data) = r.get::<_, Option<Vec<u8>>>(at + 3)? else {
            return Ok(None);
        };
        Ok(Some(Row {
            rlines: r.get::<_, i64>(at)?.max(0) as usize,
            size: r.get::<_, i64>(at + 1)?.max(0) as usize,
            packed: r.get(at + 2)?,
            data,
            skip: 0,
        }))
    }

    /// The first `want` bytes of the text.
    fn prefix(self, want: usize) -> Result<Vec<u8>, StoreError> {
        let want = want.min(self.size);
        match self.packed {
            PLAIN => {
                let mut data = self.data;
                data.truncate(want);
                Ok(data)
            }
            _ if self.skip == 0 => inflate(&self.data, self.size, want),
            _ => {
                let mut text = inflate(&self.data, self.skip + self.size, self.skip + want)?;
                Ok(text.split_off(self.skip))
            }
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

/// The text of message `number`, if it has one: its own row, or its part of a block.
pub(crate) fn get(conn: &Connection, number: u64) -> Result<Option<Row>, StoreError> {
    let own = conn
        .prepare_cached(&format!(
            "SELECT {} FROM texts t WHERE number = ?1",
            columns("t")
        ))
        .and_then(|mut st| {
            st.query_row([number as i64], |r| Row::from_columns(r, 0))
                .optional()
        })
        .map_err(db_err)?
        .flatten();
    match own {
        Some(row) => Ok(Some(row)),
        None => in_block(conn, number),
    }
}

/// Message `number`'s text in the block that holds it, if one does.
fn in_block(conn: &Connection, number: u64) -> Result<Option<Row>, StoreError> {
    let block: Option<(i64, Vec<u8>, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT first, sizes, data FROM text_blocks \
             WHERE first <= ?1 AND last >= ?1 ORDER BY first DESC LIMIT 1",
        )
        .and_then(|mut st| {
            st.query_row([number as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
        })
        .map_err(db_err)?;
    let Some((first, sizes, data)) = block else {
        return Ok(None);
    };
    let want = number.saturating_sub(first.max(0) as u64);
    let mut skip = 0;
    for entry in sizes.chunks_exact(ENTRY) {
        let field = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&entry[i * 4..i * 4 + 4]);
            u32::from_le_bytes(b) as usize
        };
        let (delta, rlines, size) = (field(0) as u64, field(1), field(2));
        if delta == want {
            return Ok(Some(Row {
                rlines,
                size,
                packed: DEFLATED,
                data,
                skip,
            }));
        }
        skip += size;
    }
    Ok(None)
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
        // In a block, or gone.
        let Some(row) = in_block(conn, number)? else {
            return Ok(Vec::new());
        };
        let (from, to) = piece(row.rlines, row.size, offset, len);
        let mut text = row.prefix(to)?;
        return Ok(text.split_off(from));
    };
    let (from, to) = piece(rlines.max(0) as usize, size.max(0) as usize, offset, len);
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

/// Where the body's piece of `len` bytes from `offset` lies in a text of `size` bytes whose R:
/// lines take `rlines`.
fn piece(rlines: usize, size: usize, offset: u64, len: usize) -> (usize, usize) {
    let from = rlines
        .saturating_add(usize::try_from(offset).unwrap_or(usize::MAX))
        .min(size);
    (from, from.saturating_add(len).min(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps message `number`'s text in a row of its own, as a message stored alone is.
    fn put(conn: &Connection, number: u64, rlines: &[u8], body: &[u8]) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.add(number, rlines, body);
        batch.write(conn)
    }

    #[test]
    fn a_text_comes_back_whole_in_parts_and_in_pieces() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE texts (number INTEGER PRIMARY KEY, rlines INTEGER NOT NULL, \
             size INTEGER NOT NULL, packed INTEGER NOT NULL, data BLOB NOT NULL); \
             CREATE TABLE text_blocks (first INTEGER PRIMARY KEY, last INTEGER NOT NULL, \
             sizes BLOB NOT NULL, data BLOB NOT NULL);",
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
