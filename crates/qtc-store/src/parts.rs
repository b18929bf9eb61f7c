//! The Winlink B2F parts a message may carry besides its body: every `To:`/`Cc:` recipient and
//! the attachments (`File:`), kept as received so they are forwarded byte-identical to B2
//! partners, routed for every recipient, and listed to users.

use qtc_callsign::Callsign;
use qtc_mail::{route, FileInfo, StoreError};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db_err, queue_in, Pending, QueueMarks, Station, Store};

/// One addressee of a B2F message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipient {
    /// A `Cc:` (else a `To:`).
    pub cc: bool,
    /// The address as written (`N0ABC`, `N0ABC@N0BBS`, `SMTP:a@b.org`).
    pub addr: String,
}

impl Recipient {
    /// (callsign, `@` part) of the address, upper case; a scheme such as `SMTP:` is dropped.
    pub fn split(&self) -> (String, String) {
        let addr = self.addr.rsplit(':').next().unwrap_or_default();
        let (call, at) = addr.split_once('@').unwrap_or((addr, ""));
        (
            call.trim().to_ascii_uppercase(),
            at.trim().to_ascii_uppercase(),
        )
    }
}

/// One attachment, bytes as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// The name from its `File:` header.
    pub name: Vec<u8>,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// Keeps the recipients and attachments of message `number` (inside the caller's transaction)
/// and, unless `route` is `None` (a held message), queues it for the partners every recipient
/// routes to. A B2 form already made from the message alone is dropped, to be made again with
/// its parts.
pub(crate) fn keep(
    tx: &Connection,
    number: u64,
    (recipients, files): (&[Recipient], &[Attachment]),
    route: Option<&route::RouteQuery<'_>>,
    station: &Station,
    queued: &QueueMarks,
    now: i64,
) -> Result<(), StoreError> {
    if recipients.len() <= 1 && files.is_empty() {
        return Ok(());
    }
    for (pos, r) in recipients.iter().enumerate() {
        let (call, at) = r.split();
        tx.prepare_cached(
            "INSERT INTO recipients (number, pos, cc, addr, call) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut st| st.execute(params![number as i64, pos as i64, r.cc, r.addr, call]))
        .map_err(db_err)?;
        if let Some(route) = route {
            let q = route::RouteQuery {
                to: &call,
                at: &at,
                ..*route
            };
            queue_in(tx, number, &q, station, queued, now)?;
        }
    }
    for (pos, f) in files.iter().enumerate() {
        tx.prepare_cached(
            "INSERT INTO attachments (number, pos, name, data) VALUES (?1, ?2, ?3, ?4)",
        )
        .and_then(|mut st| st.execute(params![number as i64, pos as i64, f.name, f.data]))
        .map_err(db_err)?;
    }
    tx.prepare_cached("DELETE FROM compressed_b2 WHERE number = ?1")
        .and_then(|mut st| st.execute([number as i64]))
        .map_err(db_err)?;
    Ok(())
}

/// Keeps the body's declared charset of message `number` (nothing when none was declared).
pub(crate) fn keep_charset(tx: &Connection, number: u64, charset: &str) -> Result<(), StoreError> {
    if charset.is_empty() {
        return Ok(());
    }
    tx.prepare_cached("UPDATE messages SET charset = ?1 WHERE number = ?2")
        .and_then(|mut st| st.execute(params![charset, number as i64]))
        .map_err(db_err)?;
    Ok(())
}

fn recipients(conn: &rusqlite::Connection, number: u64) -> Result<Vec<Recipient>, StoreError> {
    conn.prepare_cached("SELECT cc, addr FROM recipients WHERE number = ?1 ORDER BY pos")
        .and_then(|mut st| {
            st.query_map([number as i64], |r| {
                Ok(Recipient {
                    cc: r.get(0)?,
                    addr: r.get(1)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db_err)
}

fn attachments(conn: &rusqlite::Connection, number: u64) -> Result<Vec<Attachment>, StoreError> {
    conn.prepare_cached("SELECT name, data FROM attachments WHERE number = ?1 ORDER BY pos")
        .and_then(|mut st| {
            st.query_map([number as i64], |r| {
                Ok(Attachment {
                    name: r.get(0)?,
                    data: r.get(1)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db_err)
}

/// Fills in what `partner` needs of the parts of messages queued for it: a form that carries
/// every part (`every_part`: B2F), unless already made and read with the message, gets every
/// recipient and attachment; a one-addressee form (FBB text) is addressed to a recipient that
/// routes to this partner when the first `To:` does not (a `Cc:` for a station behind it).
pub(crate) fn complete(
    conn: &rusqlite::Connection,
    pending: &mut [Pending],
    partner: Callsign,
    every_part: bool,
    station: &Station,
) -> Result<(), StoreError> {
    let routes_here = |p: &Pending, to: &str, at: &str| {
        let q = route::RouteQuery {
            kind: p.kind,
            to,
            at,
            origin: None,
            seen: &[],
        };
        route::targets(&q, station.call, &station.partners).contains(&partner)
    };
    for p in pending.iter_mut() {
        if every_part && p.compressed.is_some() {
            continue;
        }
        let all = recipients(conn, p.number)?;
        if every_part {
            p.files = attachments(conn, p.number)?;
        } else if !all.is_empty() && !routes_here(p, &p.to, &p.at) {
            if let Some((to, at)) = all
                .iter()
                .map(Recipient::split)
                .find(|(to, at)| routes_here(p, to, at))
            {
                (p.to, p.at) = (to, at);
            }
        }
        p.recipients = all;
    }
    Ok(())
}

/// Addressees other than `to`, those of them sent as Cc, and the file list.
type Shown = (Vec<String>, Vec<String>, Vec<FileInfo>);

/// What a reader sees of the parts: the addressees other than `to` (and which were Cc),
/// and the file list.
pub(crate) fn shown(
    conn: &rusqlite::Connection,
    number: u64,
    to: &str,
) -> Result<Shown, StoreError> {
    let others = conn
        .prepare_cached(
            "SELECT call, cc FROM recipients WHERE number = ?1 AND call != ?2 ORDER BY pos",
        )
        .and_then(|mut st| {
            st.query_map(params![number as i64, to], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db_err)?;
    let cc = others.iter().filter(|o| o.1).map(|o| o.0.clone()).collect();
    let copies = others.into_iter().map(|o| o.0).collect();
    let files = conn
        .prepare_cached("SELECT name, length(data) FROM attachments WHERE number = ?1 ORDER BY pos")
        .and_then(|mut st| {
            st.query_map([number as i64], |r| {
                Ok(FileInfo {
                    name: r.get(0)?,
                    size: r.get::<_, i64>(1)? as u64,
                })
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db_err)?;
    Ok((copies, cc, files))
}

impl Store {
    /// Attachment `pos` (from 0) of message `number`.
    pub fn attachment(
        &mut self,
        number: u64,
        pos: usize,
    ) -> Result<Option<Attachment>, StoreError> {
        self.conn
            .query_row(
                "SELECT name, data FROM attachments WHERE number = ?1 AND pos = ?2",
                params![number as i64, pos as i64],
                |r| {
                    Ok(Attachment {
                        name: r.get(0)?,
                        data: r.get(1)?,
                    })
                },
            )
            .optional()
            .map_err(db_err)
    }
}
