//! Versioned schema migrations. `PRAGMA user_version` holds the version; each step runs in its own
//! transaction, so a crash mid-migration leaves the previous version intact.

use rusqlite::Connection;

use crate::db_err;
use qtc_mail::StoreError;

/// Migration steps, in order; step i takes the database from version i to i + 1.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: messages, the BID history, users.
    "CREATE TABLE messages (
        number     INTEGER PRIMARY KEY AUTOINCREMENT,
        kind       TEXT    NOT NULL,
        status     TEXT    NOT NULL,
        to_call    TEXT    NOT NULL,
        at         TEXT    NOT NULL DEFAULT '',
        from_call  TEXT    NOT NULL,
        bid        TEXT    NOT NULL,
        subject    BLOB    NOT NULL,
        rlines     BLOB    NOT NULL,
        body       BLOB    NOT NULL,
        size       INTEGER NOT NULL,
        created    INTEGER NOT NULL,
        read_count INTEGER NOT NULL DEFAULT 0
     );
     CREATE INDEX messages_to ON messages (to_call);
     CREATE INDEX messages_bid ON messages (bid);
     -- Every BID ever stored here, kept after the message is killed so it is never taken twice.
     CREATE TABLE bids (
        bid  TEXT PRIMARY KEY,
        seen INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE TABLE users (
        call        TEXT PRIMARY KEY,
        name        TEXT    NOT NULL DEFAULT '',
        home_bbs    TEXT    NOT NULL DEFAULT '',
        sysop       INTEGER NOT NULL DEFAULT 0,
        bbs         INTEGER NOT NULL DEFAULT 0,
        password    TEXT,
        last_listed INTEGER NOT NULL DEFAULT 0
     ) WITHOUT ROWID;",
    // 2: store and forward: who each message still goes to, where it came from, the cached
    // compressed form, and partial B1 transfers kept for resume.
    "ALTER TABLE messages ADD COLUMN origin TEXT NOT NULL DEFAULT '';
     CREATE TABLE fwd_queue (
        number  INTEGER NOT NULL REFERENCES messages (number) ON DELETE CASCADE,
        partner TEXT    NOT NULL,
        state   TEXT    NOT NULL DEFAULT 'Q',
        updated INTEGER NOT NULL,
        PRIMARY KEY (number, partner)
     ) WITHOUT ROWID;
     CREATE INDEX fwd_pending ON fwd_queue (partner, state, number);
     CREATE TABLE compressed (
        number  INTEGER PRIMARY KEY REFERENCES messages (number) ON DELETE CASCADE,
        payload BLOB NOT NULL
     );
     CREATE TABLE partials (
        bid     TEXT PRIMARY KEY,
        partner TEXT    NOT NULL,
        data    BLOB    NOT NULL,
        updated INTEGER NOT NULL
     ) WITHOUT ROWID;",
    // 3: white pages: the home BBS of each call, learned from R: lines and the NH command.
    "CREATE TABLE wp (
        call    TEXT PRIMARY KEY,
        home    TEXT    NOT NULL,
        updated INTEGER NOT NULL,
        source  TEXT    NOT NULL
     ) WITHOUT ROWID;",
    // 4: the compressed B2F form, made once for every B2 partner (`compressed` holds the B1 form).
    "CREATE TABLE compressed_b2 (
        number  INTEGER PRIMARY KEY REFERENCES messages (number) ON DELETE CASCADE,
        payload BLOB NOT NULL
     );",
    // 5: Winlink B2F parts: the body's declared charset, every To/Cc recipient of a message (in
    // header order; `call` is the addressee's callsign for routing and listings), and its
    // attachments, bytes as received.
    "ALTER TABLE messages ADD COLUMN charset TEXT NOT NULL DEFAULT '';
     CREATE TABLE recipients (
        number INTEGER NOT NULL REFERENCES messages (number) ON DELETE CASCADE,
        pos    INTEGER NOT NULL,
        cc     INTEGER NOT NULL,
        addr   TEXT    NOT NULL,
        call   TEXT    NOT NULL,
        PRIMARY KEY (number, pos)
     ) WITHOUT ROWID;
     CREATE INDEX recipients_call ON recipients (call);
     CREATE TABLE attachments (
        number INTEGER NOT NULL REFERENCES messages (number) ON DELETE CASCADE,
        pos    INTEGER NOT NULL,
        name   BLOB    NOT NULL,
        data   BLOB    NOT NULL,
        PRIMARY KEY (number, pos)
     );",
    // 6: each user's page length (`OP n`), kept across sessions; NULL: the port's default.
    "ALTER TABLE users ADD COLUMN page_len INTEGER;",
    // 7: the web's traffic chart counts deliveries per day over a bounded time range; this index
    // makes that a range scan instead of a pass over the queue. (Messages per day need no index:
    // they are found by number, see traffic.rs.)
    "CREATE INDEX fwd_done ON fwd_queue (state, updated);",
    // 8: per-request costs independent of the store's size. `tallies` counts messages by type,
    // status, bulletin area (`to_call` of a bulletin, '' otherwise) and `@`, kept by triggers
    // in the writing transaction: the greeting, `I`, `LC` and /metrics read it instead of
    // counting rows. Indexes for the listings that select few rows (`L<`, `L@`, `LT`, `LK`,
    // `LH`). Each index or table a received block touches costs a WAL page per commit, so
    // housekeeping walks by number (messages are numbered in age order) rather than by an
    // index of its own. The partial indexes cost nothing for the common
    // insert (a new bulletin or personal message is neither traffic, killed nor held). SQLite
    // uses a partial index only for a query naming its exact condition: one per status.
    "CREATE TABLE tallies (
        kind   TEXT    NOT NULL,
        status TEXT    NOT NULL,
        area   TEXT    NOT NULL,
        at     TEXT    NOT NULL,
        n      INTEGER NOT NULL,
        PRIMARY KEY (kind, status, area, at)
     ) WITHOUT ROWID;
     INSERT INTO tallies (kind, status, area, at, n)
        SELECT kind, status, CASE kind WHEN 'B' THEN to_call ELSE '' END, at, COUNT(*)
        FROM messages GROUP BY 1, 2, 3, 4;
     CREATE TRIGGER tally_insert AFTER INSERT ON messages BEGIN
        INSERT INTO tallies (kind, status, area, at, n)
        VALUES (NEW.kind, NEW.status, CASE NEW.kind WHEN 'B' THEN NEW.to_call ELSE '' END,
                NEW.at, 1)
        ON CONFLICT (kind, status, area, at) DO UPDATE SET n = n + 1;
     END;
     CREATE TRIGGER tally_delete AFTER DELETE ON messages BEGIN
        UPDATE tallies SET n = n - 1
        WHERE kind = OLD.kind AND status = OLD.status
          AND area = CASE OLD.kind WHEN 'B' THEN OLD.to_call ELSE '' END AND at = OLD.at;
     END;
     CREATE TRIGGER tally_update AFTER UPDATE OF kind, status, to_call, at ON messages
     WHEN OLD.kind IS NOT NEW.kind OR OLD.status IS NOT NEW.status
       OR OLD.to_call IS NOT NEW.to_call OR OLD.at IS NOT NEW.at BEGIN
        UPDATE tallies SET n = n - 1
        WHERE kind = OLD.kind AND status = OLD.status
          AND area = CASE OLD.kind WHEN 'B' THEN OLD.to_call ELSE '' END AND at = OLD.at;
        INSERT INTO tallies (kind, status, area, at, n)
        VALUES (NEW.kind, NEW.status, CASE NEW.kind WHEN 'B' THEN NEW.to_call ELSE '' END,
                NEW.at, 1)
        ON CONFLICT (kind, status, area, at) DO UPDATE SET n = n + 1;
     END;
     CREATE INDEX messages_from ON messages (from_call);
     CREATE INDEX messages_at ON messages (at);
     CREATE INDEX messages_killed ON messages (status) WHERE status = 'K';
     CREATE INDEX messages_held ON messages (status) WHERE status = 'H';
     CREATE INDEX messages_traffic ON messages (kind) WHERE kind = 'T';",
    // 9: each recipient's own read mark (the addressee's is still the message's status). Copies
    // of mail already read or forwarded keep showing as not new, as they did before.
    "ALTER TABLE recipients ADD COLUMN read INTEGER NOT NULL DEFAULT 0;
     UPDATE recipients SET read = 1
      WHERE number IN (SELECT number FROM messages WHERE status != 'N');",
    // 10: the addressee index carries the status (after the number, so a walk by addressee
    // stays in number order): the greeting counts a user's own mail from index entries alone
    // instead of fetching each message's row (1 M store, 500 messages: 1 ms against 5-6 ms).
    "DROP INDEX messages_to;
     CREATE INDEX messages_to ON messages (to_call, number, status);",
    // 11: fewer B-trees written per received message (each one a WAL frame per block, two
    // `pwrite` calls). `bids` keeps the number of the message that brought each BID, so
    // housekeeping finds a BID's message by number and the index on `messages (bid)`, which
    // served only that, goes. `fwd_done` holds only delivered entries, the traffic chart's
    // (its query names `state = 'F'`): queueing a message no longer writes it.
    "ALTER TABLE bids ADD COLUMN number INTEGER;
     UPDATE bids SET number = (SELECT MAX(number) FROM messages m WHERE m.bid = bids.bid);
     DROP INDEX messages_bid;
     DROP INDEX fwd_done;
     CREATE INDEX fwd_done ON fwd_queue (updated) WHERE state = 'F';",
    // 12: the IMAP INBOX's UIDVALIDITY (UIDs are message numbers): drawn once, from the time
    // the store got it, so a store made anew is told apart from the one before.
    // (Written to run again on top of itself: tests take a store back to older versions.)
    "CREATE TABLE IF NOT EXISTS mail_meta (uid_validity INTEGER NOT NULL);
     INSERT INTO mail_meta (uid_validity) SELECT CAST(strftime('%s', 'now') AS INTEGER)
      WHERE NOT EXISTS (SELECT 1 FROM mail_meta);",
    // 13: where each account logged in from (the address, or its network prefix for IPv6),
    // and when last: guessing from elsewhere cannot lock a user out of these places, and
    // connections from them keep a share of the login places under a flood. Kept across
    // restarts; written once per good login, read once at start.
    "CREATE TABLE login_places (
        call   TEXT    NOT NULL,
        prefix TEXT    NOT NULL,
        last   INTEGER NOT NULL,
        PRIMARY KEY (call, prefix)
     ) WITHOUT ROWID;",
    // 14: each user's read marks on bulletins: a bulletin is new for every user until they
    // read it. A row per reader and bulletin read, none when a bulletin is stored; keyed by
    // number first so housekeeping's delete of a bulletin finds its marks (the cascade), and
    // a listing checks a mark with one lookup per bulletin shown, whatever the number of users.
    "CREATE TABLE bulletin_reads (
        number INTEGER NOT NULL REFERENCES messages (number) ON DELETE CASCADE,
        call   TEXT    NOT NULL,
        PRIMARY KEY (number, call)
     ) WITHOUT ROWID;",
    // 15: a partial transfer records the mode it came in (`b0`, `b1`, `b2`), and is offered
    // for resume only in that mode: a B2 file is another file than the B1 one. Kept partials
    // of unknown mode are dropped (the message comes whole next time).
    "DELETE FROM partials;
     ALTER TABLE partials ADD COLUMN mode TEXT NOT NULL DEFAULT '';",
    // 16: message text in a table of its own, kept compressed by the store (texts.rs): the
    // messages' rows keep only their headers, so listings, status changes and housekeeping's
    // walks read and write short rows, and a received message's text is written once to the
    // WAL and once to the database, deflated. The rows are rewritten once here (a store of
    // 1,000,000 messages: docs/operating.md, "Upgrading"); texts moved here stay as they
    // were, uncompressed (`packed` 0).
    "CREATE TABLE texts (
        number INTEGER PRIMARY KEY REFERENCES messages (number) ON DELETE CASCADE,
        rlines INTEGER NOT NULL,
        size   INTEGER NOT NULL,
        packed INTEGER NOT NULL,
        data   BLOB    NOT NULL
     );
     INSERT INTO texts (number, rlines, size, packed, data)
        SELECT number, length(rlines), length(rlines) + length(body), 0,
               CAST(rlines || body AS BLOB)
        FROM messages;
     ALTER TABLE messages DROP COLUMN rlines;
     ALTER TABLE messages DROP COLUMN body;",
    // 17: housekeeping with nothing due costs what is due, not the store's size. `bids_gone`
    // lists the BIDs whose message has been removed, by the time they were seen (a trigger
    // adds each as its message goes), so forgetting old BIDs walks those due instead of the
    // whole history. `expiry` remembers how far the walk for lifetimes got and when the
    // oldest message it left could first be due; a held or killed message made live again
    // resets it. Receiving a message writes neither.
    "CREATE TABLE bids_gone (
        seen INTEGER NOT NULL,
        bid  TEXT    NOT NULL,
        PRIMARY KEY (seen, bid)
     ) WITHOUT ROWID;
     INSERT INTO bids_gone (seen, bid)
        SELECT seen, bid FROM bids b
        WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.number = b.number);
     CREATE TRIGGER bid_gone AFTER DELETE ON messages BEGIN
        INSERT OR IGNORE INTO bids_gone (seen, bid)
        SELECT seen, bid FROM bids WHERE bid = OLD.bid AND number = OLD.number;
     END;
     CREATE TABLE expiry (
        walked_to  INTEGER NOT NULL,
        recheck_at INTEGER NOT NULL,
        lifetimes  TEXT    NOT NULL
     );
     CREATE TRIGGER expiry_reset AFTER UPDATE OF status ON messages
     WHEN OLD.status IN ('H', 'K') AND NEW.status NOT IN ('H', 'K') BEGIN
        DELETE FROM expiry;
     END;",
    // 18: what users' own mail clients need. `messages_area` indexes the open bulletins by
    // area, `@` and number: an NNTP GROUP finds an area's lowest and highest number in two
    // index entries instead of reading every bulletin of the area (10-42 s on 1 M messages);
    // its condition is the one the queries name, so SQLite uses it for them alone, and it
    // holds `kind` and `status` so those queries never read a row to check them again. An
    // attachment keeps the type a client sent it with (`text/plain`...; empty for B2F parts),
    // a submitted reply the ids it answers, and each user their IMAP `\Answered` marks.
    "CREATE INDEX messages_area ON messages (to_call, at, number, kind, status)
        WHERE kind = 'B' AND status NOT IN ('K', 'H');
     ALTER TABLE attachments ADD COLUMN mime TEXT NOT NULL DEFAULT '';
     CREATE TABLE mail_threads (
        number      INTEGER PRIMARY KEY REFERENCES messages (number) ON DELETE CASCADE,
        in_reply_to TEXT    NOT NULL,
        refs        TEXT    NOT NULL
     );
     CREATE TABLE mail_answered (
        number INTEGER NOT NULL REFERENCES messages (number) ON DELETE CASCADE,
        call   TEXT    NOT NULL,
        PRIMARY KEY (number, call)
     ) WITHOUT ROWID;",
    // 19: each user's own IMAP folders (Sent, Drafts, Trash...) and the messages kept in them:
    // the user's copies as their client sent them, apart from `messages`, so nothing here is
    // ever listed, forwarded or delivered. A folder's id is its UIDVALIDITY (AUTOINCREMENT:
    // never given again); its messages' UIDs count up from `uid_next`.
    "CREATE TABLE mail_folders (
        id       INTEGER PRIMARY KEY AUTOINCREMENT,
        call     TEXT    NOT NULL,
        name     TEXT    NOT NULL,
        uid_next INTEGER NOT NULL DEFAULT 1,
        UNIQUE (call, name)
     );
     CREATE TABLE mail_folder_messages (
        folder    INTEGER NOT NULL REFERENCES mail_folders (id) ON DELETE CASCADE,
        uid       INTEGER NOT NULL,
        seen      INTEGER NOT NULL,
        answered  INTEGER NOT NULL,
        created   INTEGER NOT NULL,
        from_addr TEXT    NOT NULL,
        subject   BLOB    NOT NULL,
        size      INTEGER NOT NULL,
        data      BLOB    NOT NULL,
        PRIMARY KEY (folder, uid)
     );",
    // 20: the texts of messages stored together (a received block) deflated together, in one
    // row (texts.rs): a fifth smaller than deflated apart, and one row filling its pages where
    // each text took a page and an overflow page of its own, so a received bulletin costs the
    // disk less (docs/performance.md, "Bytes written per received message"). Such a message
    // has no `texts` row. A block holds consecutive numbers `first..=last`; it goes when the
    // last message of that range does (found by number: no index to write per message).
    "CREATE TABLE text_blocks (
        first INTEGER PRIMARY KEY,
        last  INTEGER NOT NULL,
        sizes BLOB    NOT NULL,
        data  BLOB    NOT NULL
     );
     CREATE TRIGGER text_block_gone AFTER DELETE ON messages BEGIN
        DELETE FROM text_blocks
        WHERE first = (SELECT first FROM text_blocks WHERE first <= OLD.number
                       ORDER BY first DESC LIMIT 1)
          AND last >= OLD.number
          AND NOT EXISTS (SELECT 1 FROM messages m
                          WHERE m.number BETWEEN text_blocks.first AND text_blocks.last);
     END;",
    // 21: a new message's number comes from the highest message's (lib.rs, `next_number`),
    // not from `sqlite_sequence`, which AUTOINCREMENT rewrote (a WAL frame) with every
    // received block; it now holds numbers taken ahead. So that a number is never given
    // twice, `number_floor` keeps the highest number removed while it was the highest.
    "CREATE TABLE number_floor (n INTEGER NOT NULL);
     INSERT INTO number_floor (n)
        SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0);
     CREATE TRIGGER number_floor_keep AFTER DELETE ON messages
     WHEN OLD.number > COALESCE((SELECT MAX(number) FROM messages), 0) BEGIN
        UPDATE number_floor SET n = MAX(n, OLD.number);
     END;",
    // 22: a new message's tallies are counted by the store as it inserts (lib.rs,
    // `Batch::write`), once per key for a transaction: a received block of bulletins to one
    // area is one upsert where this trigger made one per message (the receiver's CPU, bench
    // row 2f). Every insert goes through `insert_batched`; removals and changes are still
    // counted by their triggers. A tool writing rows by hand counts them itself.
    "DROP TRIGGER tally_insert;",
    // 23: the removal and change triggers upsert their -1 as the store's count upserts its +1:
    // a key without a row yet (a message changed or removed in the transaction that inserted
    // it, before `Batch::write` adds its count) gets a row of -1, which that count brings back
    // to 0. The UPDATE before found no row there and lost the decrement. The counts carry over.
    "DROP TRIGGER tally_delete;
     DROP TRIGGER tally_update;
     CREATE TRIGGER tally_delete AFTER DELETE ON messages BEGIN
        INSERT INTO tallies (kind, status, area, at, n)
        VALUES (OLD.kind, OLD.status, CASE OLD.kind WHEN 'B' THEN OLD.to_call ELSE '' END,
                OLD.at, -1)
        ON CONFLICT (kind, status, area, at) DO UPDATE SET n = n - 1;
     END;
     CREATE TRIGGER tally_update AFTER UPDATE OF kind, status, to_call, at ON messages
     WHEN OLD.kind IS NOT NEW.kind OR OLD.status IS NOT NEW.status
       OR OLD.to_call IS NOT NEW.to_call OR OLD.at IS NOT NEW.at BEGIN
        INSERT INTO tallies (kind, status, area, at, n)
        VALUES (OLD.kind, OLD.status, CASE OLD.kind WHEN 'B' THEN OLD.to_call ELSE '' END,
                OLD.at, -1)
        ON CONFLICT (kind, status, area, at) DO UPDATE SET n = n - 1;
        INSERT INTO tallies (kind, status, area, at, n)
        VALUES (NEW.kind, NEW.status, CASE NEW.kind WHEN 'B' THEN NEW.to_call ELSE '' END,
                NEW.at, 1)
        ON CONFLICT (kind, status, area, at) DO UPDATE SET n = n + 1;
     END;",
];

/// The schema version this build writes.
pub const CURRENT_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database up to [`CURRENT_VERSION`]; refuses a database from a newer qtc.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db_err)?;
    if version > CURRENT_VERSION {
        return Err(StoreError::Database(format!(
            "the store has schema version {version}, newer than this qtc knows ({CURRENT_VERSION}): \
             upgrade qtc"
        )));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction().map_err(db_err)?;
        tx.execute_batch(step).map_err(db_err)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)
            .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        tracing::info!(version = i + 1, "store schema migrated");
    }
    Ok(())
}
