//! A large message store made fast: the qtc under test creates an empty store (its own schema,
//! its users), then one SQL statement run by the `sqlite3` shell fills it, and the file is
//! kept under target/bench-cache keyed by schema version, page size and size for the next run.
//!
//! Laid out as forwarding fills a store: the shell cannot deflate, so it writes each text
//! plain, and the qtc under test packs them (`qtc store pack`) into blocks of five
//! consecutive messages deflated together, as a received block's texts are kept; one
//! message in [`LOCAL_EVERY`] is a local post, stored alone (deflated on its own). A qtc
//! without `store pack` (before it) keeps every text plain, alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::daemon::{Daemon, Opts, Spec};
use crate::util::{now, Ctx, R};

/// Bump when the generated mix changes, so old cached stores are not reused.
const MIX: u32 = 4;

/// One message in this many is a local post: its text is kept alone, not in a block.
const LOCAL_EVERY: usize = 20;

/// How far back the generated messages go: about a third are older than the 14 days
/// bulletins live, so a housekeeping run has plenty to expire.
const SPAN_DAYS: i64 = 21;

/// The users every big-store daemon has: a user, a sysop, a forwarding partner.
pub const USERS: &[(&str, &str, &str)] = &[
    ("N0USR", "pw", ""),
    ("N0SYS", "pw", "--sysop"),
    ("N0AAA", "fwdpw", "--bbs"),
];

/// Personal mail goes to N0USR every this many messages (row 8's store).
pub const MINE_EVERY: usize = 2000;

/// A sender with about 1 in 7,000 of the messages (`L<`).
pub const SENDER: &str = "K1X013";

/// A daemon for the big store: telnet, web (/metrics), NNTP (rows 8h, 8i), IMAP (row 8j), a raw forwarding port
/// taking B1 from N0AAA. The burst of logins all comes from 127.0.0.1: the lockout (which
/// counts attempts in flight, as guesses) is raised so it does not take them for password
/// guessing.
pub fn spec(max_sessions: usize) -> Spec<'static> {
    Spec {
        call: "N0BIG",
        users: USERS,
        forward_listen: true,
        max_sessions,
        extra: "[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"b1\"\nroutes = [\"N0AAA\"]\n\
                [web]\nlisten = \"127.0.0.1:0\"\n\
                [limits]\nlockout_after = 1000\n\
                [mail]\nnntp_listen = \"127.0.0.1:0\"\nimap_listen = \"127.0.0.1:0\"\n"
            .into(),
        ..Spec::default()
    }
}

/// Starts a daemon on a store of `n` generated messages (from the cache when there is one);
/// returns it and how long making the store took (0 from the cache).
pub fn daemon(o: &Opts, n: usize, max_sessions: usize) -> R<(Daemon, f64)> {
    daemon_with(o, n, MINE_EVERY, max_sessions)
}

/// [`daemon`] with every `mine_every`th message personal mail to N0USR (1: all of them).
pub fn daemon_with(o: &Opts, n: usize, mine_every: usize, max_sessions: usize) -> R<(Daemon, f64)> {
    let mut d = Daemon::create(o, &spec(max_sessions))?;
    d.terminate()?;
    let db = d.data_dir().join("qtc.sqlite");
    let version = sql(&db, "PRAGMA user_version;")?;
    // A new store's page size is the qtc's own: a store made by another build may differ.
    let page = sql(&db, "PRAGMA page_size;")?;
    let packs = d
        .cli(&["store", "--help"], b"")?
        .lines()
        .any(|l| l.trim_start().starts_with("pack "));
    let cache = cache_dir(&o.bin).join(format!(
        "store-v{}-p{}-n{n}-mine{mine_every}-mix{MIX}{}.sqlite",
        version.trim(),
        page.trim(),
        if packs { "-packed" } else { "" }
    ));
    let mut made = 0.0;
    if !cache.exists() {
        let t0 = now();
        if fill(&db, n, mine_every, packs)? {
            pack(&d, &db)?;
        }
        made = t0.elapsed().as_secs_f64();
        std::fs::create_dir_all(cache.parent().ctx("cache dir")?).ctx("cache dir")?;
        copy_synced(&db, &cache).ctx("cache the store")?;
    } else {
        copy_synced(&cache, &db).ctx("copy the cached store")?;
    }
    for side in ["qtc.sqlite-wal", "qtc.sqlite-shm"] {
        let _ = std::fs::remove_file(d.data_dir().join(side));
    }
    d.start()?;
    Ok((d, made))
}

/// Copies a store and writes it to disk before returning. Left to the kernel, half a gigabyte
/// of dirty pages is written back about 30 s later, in the middle of whatever is being
/// measured then: a kernel thread on a core and every `fdatasync` waiting behind it.
fn copy_synced(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to)?;
    std::fs::File::open(to)?.sync_all()
}

/// target/bench-cache for a binary in target/PROFILE; the temporary directory for one
/// elsewhere (a `--baseline` copied out).
fn cache_dir(bin: &Path) -> PathBuf {
    match bin.parent().and_then(Path::parent) {
        Some(target) if target.file_name().is_some_and(|n| n == "target") => {
            target.join("bench-cache")
        }
        _ => std::env::temp_dir().join("qtc-bench-cache"),
    }
}

/// Runs SQL through the `sqlite3` shell; returns its output.
pub fn sql(db: &Path, script: &str) -> R<String> {
    let out = Command::new("sqlite3")
        .arg("-bail")
        .arg(db)
        .arg(script)
        .output()
        .ctx("cannot run sqlite3 (apt-get install sqlite3)")?;
    if !out.status.success() {
        return Err(format!(
            "sqlite3: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The one message `@ RARE` (a bulletin: its number ends in 50).
pub fn rare(n: usize) -> usize {
    n / 200 * 100 + 50
}

/// A bulletin in the first third, for `R n`.
pub fn some_bulletin(n: usize) -> usize {
    n / 300 * 100 + 60
}

/// Packs the received texts into blocks (`qtc store pack`), then adds the local posts' texts
/// and packs again: each of those, alone between blocks, is deflated on its own.
fn pack(d: &Daemon, db: &Path) -> R<()> {
    d.cli(&["store", "pack"], b"")?;
    sql(
        db,
        &format!(
            "INSERT INTO texts (number, rlines, size, packed, data) \
             SELECT number, 0, size, 0, {} FROM messages WHERE number % {LOCAL_EVERY} = 0;",
            text_sql()
        ),
    )?;
    d.cli(&["store", "pack"], b"")?;
    Ok(())
}

/// A generated message's text, [`TEXT_BYTES`] (341) bytes: a line of English, then
/// [`RANDOM_BYTES`] random bytes in hex, which deflate about as a bulletin does (alone to 71 %,
/// five together to 46 %; a real bulletin's text deflates to 35-45 %). A text repeating one
/// sentence would shrink to a tenth.
const SENTENCE: &str = "The quick brown fox jumps over the lazy dog; packet radio keeps the mail \
                        moving when everything else is down.";
const RANDOM_BYTES: usize = 115;
const TEXT_BYTES: usize = SENTENCE.len() + 2 + 2 * RANDOM_BYTES;

/// The SQL expression of a generated text (see [`SENTENCE`]).
fn text_sql() -> String {
    format!("CAST('{SENTENCE}' || char(13, 10) || hex(randomblob({RANDOM_BYTES})) AS BLOB)")
}

/// Fills the store: 63 % bulletins in ten areas and six `@` values (one message `@ RARE`), 36 %
/// personal mail between 7,000 senders and 5,000 addressees, 1 % NTS traffic, and every
/// `mine`th message personal mail to N0USR; 4 % killed, 0.1 % held; one BID each; numbered in
/// age order over 21 days.
/// `packs`: the qtc packs texts, so local posts' texts are left for [`pack`] to add; returns
/// whether they were.
fn fill(db: &Path, n: usize, mine: usize, packs: bool) -> R<bool> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let span = SPAN_DAYS * 86_400;
    // Schema 16 on keeps the text in `texts` (plain here: the shell cannot deflate); local
    // posts' texts come after the others are packed (`pack`).
    let texts = sql(
        db,
        "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'texts';",
    )?
    .trim()
        == "1";
    let later = texts && packs;
    let local = if later {
        format!("WHERE number % {LOCAL_EVERY} != 0")
    } else {
        String::new()
    };
    let (text_columns, text_values, copy_texts) = if texts {
        (
            "",
            String::new(),
            format!(
                "INSERT INTO texts (number, rlines, size, packed, data) \
                 SELECT number, 0, size, 0, {} FROM messages {local};",
                text_sql()
            ),
        )
    } else {
        (
            "rlines, body,",
            format!("x'', {},", text_sql()),
            String::new(),
        )
    };
    let script = format!(
        "PRAGMA synchronous = OFF;
         BEGIN;
         WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n}),
         g(i, k) AS (SELECT i, CASE WHEN (i - 1) % {mine} = 0 THEN 'P'
                                    WHEN i % 100 = 0 THEN 'T' WHEN i % 100 < 37 THEN 'P'
                                    ELSE 'B' END FROM c)
         INSERT INTO messages (number, kind, status, to_call, at, from_call, bid, subject,
                               {text_columns} size, created, origin)
         SELECT i, k,
           CASE WHEN i % 25 = 7 THEN 'K' WHEN i % 997 = 5 THEN 'H'
                WHEN k = 'B' THEN 'N' ELSE substr('NYF', i % 3 + 1, 1) END,
           CASE k WHEN 'B' THEN trim(substr('ALL  WX   SALE AMSATDX   KEPS NEWS QST  TECH ARRL ',
                                            (i % 10) * 5 + 1, 5))
                  WHEN 'T' THEN printf('%05d', 10000 + i % 89999)
                  ELSE CASE WHEN (i - 1) % {mine} = 0 THEN 'N0USR'
                            ELSE printf('K%dU%03d', i % 5, (i / 7) % 1000) END END,
           CASE k WHEN 'B' THEN CASE WHEN i = {rare} THEN 'RARE'
                                     ELSE trim(substr('WW   EU   USA  NOAM ALLUSGBR  ', (i % 6) * 5 + 1, 5))
                                END
                  WHEN 'T' THEN 'NTSCA'
                  ELSE printf('K%dBBS.#R%d.EU', i % 50, i % 5) END,
           printf('K%dX%03d', i % 7, (i * 13) % 1000),
           printf('%07d_GEN', i),
           CAST('Generated message ' || i AS BLOB),
           {text_values}
           {TEXT_BYTES},
           {stamp} - ({n} - i) * {span} / {n},
           ''
         FROM g;
         {copy_texts}
         INSERT INTO bids (bid, seen, number) SELECT bid, created, number FROM messages;
         -- From schema 22 the store counts its own inserts (no trigger): count these here.
         DELETE FROM tallies;
         INSERT INTO tallies (kind, status, area, at, n)
            SELECT kind, status, CASE kind WHEN 'B' THEN to_call ELSE '' END, at, COUNT(*)
            FROM messages GROUP BY 1, 2, 3, 4;
         COMMIT;
         PRAGMA wal_checkpoint(TRUNCATE);",
        rare = rare(n),
    );
    sql(db, &script).map(|_| later)
}
