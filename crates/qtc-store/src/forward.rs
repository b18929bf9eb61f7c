//! Store and forward: storing a received block in one transaction, the per-partner queue, the
//! cached compressed form, and partial transfers kept for B1 resume.
//!
//! Exactly-once rules (issue: forwarding): a message leaves a partner's queue only when the
//! caller reports the partner's protocol acknowledgement ([`Store::forwarded`]); a received
//! block is committed before the session acknowledges anything after it.

use qtc_callsign::Callsign;
use qtc_mail::{route, MsgStatus, MsgType, NewMessage, StoreError};
use rusqlite::{params, OptionalExtension};

use crate::parts::{self, Attachment, Recipient};
use crate::{db_err, insert_batched, Batch, Store};

/// A message received from a partner, as the forwarding session delivers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incoming {
    /// P, B or T.
    pub kind: MsgType,
    /// Sender.
    pub from: String,
    /// Addressee.
    pub to: String,
    /// `@` field.
    pub at: String,
    /// BID or MID.
    pub bid: String,
    /// Title bytes.
    pub title: Vec<u8>,
    /// R: lines followed by the body, CR LF line ends.
    pub text: Vec<u8>,
    /// Accepted with "hold" (the session answered H).
    pub hold: bool,
    /// B2F: every `To:`/`Cc:` (empty, or one, when `to`/`at` say it all).
    pub recipients: Vec<Recipient>,
    /// B2F: the attachments.
    pub files: Vec<Attachment>,
    /// B2F: the body's charset as its `Content-Type` declares it (empty: not declared).
    pub charset: String,
}

/// What became of one received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Stored under this number.
    Stored(u64),
    /// Stored but held (a forwarding loop, or the session held it).
    Held(u64),
    /// Its BID was already known: not stored again.
    Duplicate,
    /// A reject rule refused it.
    Rejected,
}

/// A message waiting to go to a partner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Local number.
    pub number: u64,
    /// P, B or T.
    pub kind: MsgType,
    /// Sender.
    pub from: String,
    /// Addressee.
    pub to: String,
    /// `@` field.
    pub at: String,
    /// BID.
    pub bid: String,
    /// Subject bytes.
    pub subject: Vec<u8>,
    /// R: lines (ours first) followed by the body.
    pub text: Vec<u8>,
    /// When it was stored here (Unix seconds): the B2F `Date:`.
    pub created: i64,
    /// The compressed form asked for, if an earlier send (to any partner) made it.
    pub compressed: Option<Vec<u8>>,
    /// B2F recipients, when it has several (`to`/`at` then name the one behind this partner
    /// for a one-addressee form).
    pub recipients: Vec<Recipient>,
    /// B2F attachments (read only for a B2 form still to be made).
    pub files: Vec<Attachment>,
    /// The charset its body came declared in (B2F `Content-Type`); empty: none declared.
    pub charset: String,
}

/// The compressed forms kept, by name, and the table of each: `fbb` (LZHUF of the text as FBB
/// sends it, for B0 and B1 partners), `b2f` (LZHUF of the B2F message, for B2 partners). The
/// names are the forwarding mode table's (`qtc_fbb::Payload::name`).
///
/// A form is made when a partner's session first sends the message in it (never while the
/// message is received and stored) and kept for every other partner that takes it: they are
/// sent stored bytes, and a message no partner takes compressed is never compressed. The
/// store keeps forms as they come; it does not make them.
pub const FORMS: [(&str, &str); 2] = [("fbb", "compressed"), ("b2f", "compressed_b2")];

/// The table holding the compressed form named `form` (number, payload).
pub(crate) fn packed_table(form: &str) -> Result<&'static str, StoreError> {
    FORMS
        .iter()
        .find(|(name, _)| *name == form)
        .map(|(_, table)| *table)
        .ok_or_else(|| StoreError::Database(format!("no table for the compressed form {form:?}")))
}

/// How a partner's session sends queued messages, as the forwarding mode table says
/// (`qtc_fbb::Mode::packed`, `qtc_fbb::Payload::carries_every_part`): what [`Store::pending`]
/// reads with each message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Form {
    /// The compressed form it sends (a name of [`FORMS`]), read where it has been made.
    pub packed: Option<&'static str>,
    /// Its messages carry every recipient and attachment (read for a form still to be made);
    /// else each is addressed to one recipient, one that routes to this partner.
    pub every_part: bool,
}

/// Compressed forms a sending session made, all in one form (its name): (message number,
/// bytes).
pub type MadeForms<'a> = (&'a str, &'a [(u64, &'a [u8])]);

/// One queue entry: a message waiting for a partner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    /// The partner.
    pub partner: String,
    /// Local message number.
    pub number: u64,
    /// BID.
    pub bid: String,
    /// Addressee.
    pub to: String,
    /// `@` field.
    pub at: String,
}

/// What the store knows of one proposed BID: whether it is here already, and the partial
/// transfer kept for it.
pub type ProposalInfo = (bool, Option<Vec<u8>>);

/// What a partner's protocol said about one of our messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FwdOutcome {
    /// It took it (or holds it): done for this partner.
    Sent,
    /// It has it already: done for this partner.
    Refused,
    /// Not now: stays queued.
    Later,
    /// Rejected by the partner's rules: not forwarded, not offered to it again.
    RejectedByRule,
}

/// Whether any partial transfer is kept: most blocks are received with none, and then need
/// no lookup or delete of one per message.
fn any_partials(conn: &rusqlite::Connection) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM partials)")
        .and_then(|mut st| st.query_row([], |r| r.get(0)))
        .map_err(db_err)
}

/// [`Store::queue_counts`]: the partners are found by jumping from one to the next in
/// `fwd_pending`, and each one's count is a range of it, so delivered entries are never read.
pub(crate) const QUEUE_COUNTS: &str = "WITH RECURSIVE p (partner) AS ( \
       SELECT MIN(partner) FROM fwd_queue \
       UNION ALL \
       SELECT (SELECT MIN(partner) FROM fwd_queue WHERE partner > p.partner) FROM p \
       WHERE p.partner IS NOT NULL), \
     c (partner, n) AS MATERIALIZED ( \
       SELECT partner, (SELECT COUNT(*) FROM fwd_queue q \
         JOIN messages m ON m.number = q.number \
         WHERE q.partner = p.partner AND q.state = 'Q' AND m.status NOT IN ('K', 'H')) \
       FROM p WHERE partner IS NOT NULL) \
     SELECT partner, n FROM c WHERE n > 0 ORDER BY partner";

impl Store {
    /// Stores a received block in one transaction. Known BIDs are skipped, not errors.
    pub fn store_received(
        &mut self,
        partner: Callsign,
        msgs: &[Incoming],
        now: i64,
    ) -> Result<Vec<Stored>, StoreError> {
        // The message's origin column and the router's are the call's text.
        let partner = &*partner.to_string();
        let station = crate::station(&self.station)?;
        let tx = crate::tx::Tx::write(&mut self.conn)?;
        let mut results = Vec::with_capacity(msgs.len());
        // The block's texts are kept together, deflated as one (texts.rs).
        let mut batch = Batch::default();
        let partials = any_partials(&tx)?;
        for m in msgs {
            let (rlines, body) = route::split_rlines(&m.text);
            let new = NewMessage {
                kind: m.kind,
                status: if m.hold {
                    MsgStatus::Held
                } else {
                    MsgStatus::New
                },
                to: m.to.clone(),
                at: m.at.clone(),
                from: m.from.clone(),
                bid: Some(m.bid.clone()),
                subject: m.title.clone(),
                rlines: rlines.to_vec(),
                body: body.to_vec(),
            };
            let stored = insert_batched(
                &tx,
                &new,
                station,
                &self.queued,
                (Some(partner), now),
                &mut batch,
            );
            if let Ok((number, status)) = &stored {
                let seen = route::rline_calls(&new.rlines);
                let query = route::RouteQuery {
                    kind: new.kind,
                    to: &new.to,
                    at: &new.at,
                    origin: Some(partner),
                    seen: &seen,
                };
                let route = (*status != MsgStatus::Held).then_some(&query);
                let parts = (m.recipients.as_slice(), m.files.as_slice());
                parts::keep(&tx, *number, parts, route, station, &self.queued, now)?;
                parts::keep_charset(&tx, *number, &m.charset)?;
            }
            // Whatever became of it, a kept partial transfer of it is done with.
            if partials {
                tx.prepare_cached("DELETE FROM partials WHERE bid = ?1")
                    .and_then(|mut st| st.execute([m.bid.to_ascii_uppercase()]))
                    .map_err(db_err)?;
            }
            match stored {
                Ok((n, MsgStatus::Held)) => results.push(Stored::Held(n)),
                Ok((n, _)) => results.push(Stored::Stored(n)),
                Err(StoreError::DuplicateBid(_)) => results.push(Stored::Duplicate),
                Err(StoreError::Rejected(rule)) => {
                    tracing::info!(bid = %m.bid, %rule, "received message refused by rule");
                    results.push(Stored::Rejected);
                }
                Err(e) => return Err(e),
            }
        }
        batch.write(&tx)?;
        tx.commit()?;
        Ok(results)
    }

    /// Up to `limit` messages queued for `partner`, oldest first, numbered above `after` (a
    /// session passes the highest number it has offered, so nothing is offered twice in it),
    /// read as `form` says (its compressed form where it has been made, its parts).
    pub fn pending(
        &mut self,
        partner: Callsign,
        limit: usize,
        after: u64,
        form: Form,
    ) -> Result<Vec<Pending>, StoreError> {
        const QUEUED: &str = "FROM fwd_queue q JOIN messages m ON m.number = q.number \
                              LEFT JOIN texts t ON t.number = m.number";
        const WHERE: &str = "WHERE q.partner = ?1 AND q.state = 'Q' AND q.number > ?3 \
                             AND m.status NOT IN ('K', 'H') ORDER BY q.number LIMIT ?2";
        let columns = format!(
            "SELECT m.number, m.kind, m.from_call, m.to_call, m.at, m.bid, m.subject, \
             m.created, m.charset, {}",
            crate::texts::columns("t")
        );
        let sql = match form.packed {
            None => format!("{columns}, NULL {QUEUED} {WHERE}"),
            Some(name) => format!(
                "{columns}, c.payload {QUEUED} LEFT JOIN {} c ON c.number = m.number {WHERE}",
                packed_table(name)?
            ),
        };
        // One read transaction for the block and its parts.
        let tx = crate::tx::Tx::read(&mut self.conn)?;
        let mut stmt = tx.prepare_cached(&sql).map_err(db_err)?;
        let rows = stmt
            .query_map(
                params![partner.to_string(), limit as i64, after as i64],
                |r| {
                    let text = crate::texts::Row::from_columns(r, 9)?;
                    Ok((
                        text,
                        Pending {
                            number: r.get::<_, i64>(0)? as u64,
                            kind: MsgType::from_letter(
                                r.get::<_, String>(1)?.chars().next().unwrap_or('P'),
                            )
                            .unwrap_or(MsgType::Personal),
                            from: r.get(2)?,
                            to: r.get(3)?,
                            at: r.get(4)?,
                            bid: r.get(5)?,
                            subject: r.get(6)?,
                            text: Vec::new(),
                            created: r.get(7)?,
                            charset: r.get(8)?,
                            compressed: r.get(13)?,
                            recipients: Vec::new(),
                            files: Vec::new(),
                        },
                    ))
                },
            )
            .map_err(db_err)?;
        let rows = rows.collect::<Result<Vec<_>, _>>().map_err(db_err)?;
        drop(stmt);
        let mut pending = Vec::with_capacity(rows.len());
        for (text, mut p) in rows {
            // Not in a row of its own: in a block (texts.rs).
            let text = match text {
                Some(text) => Some(text),
                None => crate::texts::get(&tx, p.number)?,
            };
            let (rlines, body) = match text {
                Some(text) => text.split()?,
                None => (Vec::new(), Vec::new()),
            };
            p.text = route::join_rlines(&rlines, &body);
            pending.push(p);
        }
        let station = crate::station(&self.station)?;
        parts::complete(&tx, &mut pending, partner, form.every_part, station)?;
        tx.commit()?;
        Ok(pending)
    }

    /// Runs `f` with `synchronous = NORMAL`: its commit goes to disk with the next synced one.
    /// Only for writes that may be lost to a power cut without losing or doubling mail.
    fn unsynced<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err)?;
        let r = f(self);
        self.conn
            .pragma_update(None, "synchronous", self.durability.synchronous())
            .map_err(db_err)?;
        r
    }

    /// For each proposed BID (and the mode it comes compressed in, if it does): is it known
    /// here, and the partial transfer kept for it in that mode, if any. One read transaction
    /// for the whole block.
    pub fn proposal_info(
        &mut self,
        bids: &[(String, Option<&str>)],
    ) -> Result<Vec<ProposalInfo>, StoreError> {
        let tx = crate::tx::Tx::read(&mut self.conn)?;
        let mut out = Vec::with_capacity(bids.len());
        let partials = any_partials(&tx)?;
        for (bid, compressed) in bids {
            if bid.is_empty() {
                out.push((false, None));
                continue;
            }
            let known = crate::bid_known_in(&tx, bid)?;
            let partial = match compressed {
                Some(mode) if !known && partials => tx
                    .prepare_cached("SELECT data FROM partials WHERE bid = ?1 AND mode = ?2")
                    .and_then(|mut st| {
                        st.query_row(params![bid.to_ascii_uppercase(), mode], |r| r.get(0))
                            .optional()
                    })
                    .map_err(db_err)?,
                _ => None,
            };
            out.push((known, partial));
        }
        tx.commit()?;
        Ok(out)
    }

    /// Records what a partner's protocol said of our messages, in one transaction. A personal
    /// message done for every partner becomes `F` (forwarded). `made`: the compressed forms the
    /// session made for these messages (message number, bytes), all in one form; each is kept
    /// for the partners that still wait for its message (one deferred here included), and not
    /// written at all for a message nobody waits for any more, the usual case of a message
    /// forwarded to one partner.
    ///
    /// This commit is not synced to disk on its own (the next synced commit carries it): if a
    /// power cut loses it, the messages are offered again and the partner refuses them by BID,
    /// and a lost form is made again. Nothing is lost or doubled, and the sender saves one disk
    /// sync per block.
    pub fn forwarded(
        &mut self,
        partner: Callsign,
        outcomes: &[(u64, FwdOutcome)],
        made: Option<MadeForms<'_>>,
        now: i64,
    ) -> Result<(), StoreError> {
        self.unsynced(|s| s.record_forwarded(partner, outcomes, made, now))
    }

    fn record_forwarded(
        &mut self,
        partner: Callsign,
        outcomes: &[(u64, FwdOutcome)],
        made: Option<MadeForms<'_>>,
        now: i64,
    ) -> Result<(), StoreError> {
        let partner = partner.to_string();
        let tx = self.conn.transaction().map_err(db_err)?;
        for &(number, outcome) in outcomes {
            let state = match outcome {
                FwdOutcome::Sent | FwdOutcome::Refused => "F",
                FwdOutcome::RejectedByRule => "R",
                FwdOutcome::Later => continue,
            };
            tx.prepare_cached(
                "UPDATE fwd_queue SET state = ?1, updated = ?2 WHERE number = ?3 AND partner = ?4",
            )
            .and_then(|mut st| st.execute(params![state, now, number as i64, partner]))
            .map_err(db_err)?;
            tx.prepare_cached(
                "UPDATE messages SET status = 'F' WHERE number = ?1 AND kind != 'B' \
                 AND status IN ('N', 'Y') \
                 AND NOT EXISTS (SELECT 1 FROM fwd_queue WHERE number = ?1 AND state = 'Q')",
            )
            .and_then(|mut st| st.execute([number as i64]))
            .map_err(db_err)?;
        }
        if let Some((form, items)) = made {
            let sql = format!(
                "INSERT OR REPLACE INTO {} (number, payload) SELECT ?1, ?2 \
                 WHERE EXISTS (SELECT 1 FROM fwd_queue WHERE number = ?1 AND state = 'Q')",
                packed_table(form)?
            );
            for (number, payload) in items {
                tx.prepare_cached(&sql)
                    .and_then(|mut st| st.execute(params![*number as i64, payload]))
                    .map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(())
    }

    /// Messages still queued, per partner: (partner, count), sorted by partner.
    pub fn queue_counts(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self.conn.prepare(QUEUE_COUNTS).map_err(db_err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        Ok(rows)
    }

    /// The queue itself, optionally for one partner, by partner then number.
    pub fn queue(&mut self, partner: Option<&str>) -> Result<Vec<Queued>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT q.partner, m.number, m.bid, m.to_call, m.at FROM fwd_queue q \
                 JOIN messages m ON m.number = q.number \
                 WHERE q.state = 'Q' AND m.status NOT IN ('K', 'H') AND (?1 IS NULL OR q.partner = ?1) \
                 ORDER BY q.partner, m.number",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map([partner.map(|p| p.to_ascii_uppercase())], |r| {
                Ok(Queued {
                    partner: r.get(0)?,
                    number: r.get::<_, i64>(1)? as u64,
                    bid: r.get(2)?,
                    to: r.get(3)?,
                    at: r.get(4)?,
                })
            })
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        Ok(rows)
    }

    /// Forgets the kept start of a transfer that turned out not to match the partner's file,
    /// so the message is taken from the start next time.
    pub fn drop_partial(&mut self, bid: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "DELETE FROM partials WHERE bid = ?1",
                params![bid.to_ascii_uppercase()],
            )
            .map_err(db_err)?;
        Ok(())
    }

    /// Keeps the first bytes of an interrupted transfer in `mode` (its name: `b1`, `b2`)
    /// for a later resume in the same mode.
    pub fn save_partial(
        &mut self,
        bid: &str,
        partner: Callsign,
        mode: &str,
        data: &[u8],
        now: i64,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO partials (bid, partner, data, updated, mode) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    bid.to_ascii_uppercase(),
                    partner.to_string(),
                    data,
                    now,
                    mode
                ],
            )
            .map_err(db_err)?;
        Ok(())
    }
}
