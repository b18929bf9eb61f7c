//! Where the mail cores' store requests run: reads (the INBOX, a rendered message, bulletin
//! areas) on the readers, writes (read marks, kills, submissions) on the store thread.

use std::sync::Arc;

use qtc_email::{Article, Entry, GroupInfo, Reply, Request, Settings};
use qtc_mail::{ListFilter, MessageStore, MsgStatus, MsgType, StoreError};
use qtc_store::Store;

use crate::read_pool::ReadPool;
use crate::store_thread::StoreHandle;
use crate::user_limits::UserLimits;

/// What the requests run on.
#[derive(Clone)]
pub struct Backends {
    /// Reads.
    pub readers: ReadPool,
    /// Writes.
    pub store: StoreHandle,
    /// The per-user allowances for messages entered.
    pub user_limits: Arc<UserLimits>,
}

/// Runs one request; `s` says how messages are rendered.
pub async fn run(req: Request, b: &Backends, s: &Settings) -> Result<Reply, StoreError> {
    let gone = |e: crate::store_thread::StoreGone| StoreError::Database(e.to_string());
    let s = s.clone();
    match req {
        Request::Mailbox { call, sized_after } => b
            .readers
            .call(move |st| mailbox(st, &call, sized_after, &s).map(Reply::Mailbox))
            .await
            .map_err(gone)?,
        Request::Render { number, call } => b
            .readers
            .call(move |st| {
                render(st, number, call.as_deref(), &s).map(|r| Reply::Rendered(r.map(Box::new)))
            })
            .await
            .map_err(gone)?,
        Request::Groups => b.readers.call(groups).await.map_err(gone)?,
        Request::Articles {
            category,
            at,
            from,
            to,
            limit,
        } => b
            .readers
            .call(move |st| articles(st, &category, &at, (from, to), limit))
            .await
            .map_err(gone)?,
        write => run_write(write, b).await,
    }
}

async fn run_write(req: Request, b: &Backends) -> Result<Reply, StoreError> {
    let gone = |e: crate::store_thread::StoreGone| StoreError::Database(e.to_string());
    let limits = b.user_limits.clone();
    b.store
        .call(move |st| match req {
            Request::Seen { number, call, seen: true } => st.mark_read(number, &call).map(|()| Reply::Done),
            Request::Seen { number, call, seen: false } => st.mark_unread(number, &call).map(|()| Reply::Done),
            Request::Kill { number, call } => {
                let outcome = qtc_mail::kill::kill(st, number, &call, false)?;
                Ok(Reply::Killed(outcome == qtc_mail::kill::KillOutcome::Killed))
            }
            Request::Submit(sub) => {
                crate::user_limits::within_allowance(st, &limits, &sub.msg, crate::clock::now())?;
                let files: Vec<qtc_store::Attachment> = sub
                    .files
                    .iter()
                    .map(|(name, data)| qtc_store::Attachment { name: name.clone(), data: data.clone() })
                    .collect();
                let number = st.insert_with_files(&sub.msg, &files, crate::clock::unix_now())?;
                let bid = st.message_head(number)?.map(|m| m.header.bid).unwrap_or_default();
                tracing::info!(from = %sub.msg.from, to = %sub.msg.to, number, %bid, "mail client: message stored");
                Ok(Reply::Stored { number, bid })
            }
            _ => Err(StoreError::Database("not a write".into())),
        })
        .await
        .map_err(gone)?
}

/// The user's personal mail, oldest first, the newest [`qtc_email::MAX_MAILBOX`].
fn mailbox(
    st: &mut Store,
    call: &str,
    sized_after: u64,
    s: &Settings,
) -> Result<Vec<Entry>, StoreError> {
    let f = ListFilter {
        to_or_copy: Some(call.to_string()),
        visible_to: Some(call.to_string()),
        last: Some(qtc_email::MAX_MAILBOX),
        ..Default::default()
    };
    let mut out = Vec::new();
    for h in st
        .list(&f)?
        .into_iter()
        .rev()
        .filter(|h| h.kind != MsgType::Bulletin)
    {
        let size = match h.number > sized_after {
            true => render(st, h.number, Some(call), s)?.map_or(0, |r| r.bytes.len() as u64),
            false => 0,
        };
        out.push(Entry {
            number: h.number,
            seen: h.status != MsgStatus::New,
            size,
            created: h.created,
            from: h.from,
            subject: h.subject,
            bid: h.bid,
        });
    }
    Ok(out)
}

/// Message `number` rendered, if `call` may read it as on the BBS (`None`: bulletins only).
fn render(
    st: &mut Store,
    number: u64,
    call: Option<&str>,
    s: &Settings,
) -> Result<Option<qtc_email::render::Rendered>, StoreError> {
    let Some(m) = st.message(number)? else {
        return Ok(None);
    };
    let h = &m.header;
    let open = !matches!(h.status, MsgStatus::Killed | MsgStatus::Held);
    let mine =
        call.is_some_and(|me| h.to == me || h.from == me || m.copies.iter().any(|c| c == me));
    if !open
        || (h.kind != MsgType::Bulletin && !mine)
        || (call.is_none() && h.kind != MsgType::Bulletin)
    {
        return Ok(None);
    }
    let files: Vec<(Vec<u8>, Vec<u8>)> = st
        .attachments_of(number)?
        .into_iter()
        .map(|a| (a.name, a.data))
        .collect();
    Ok(Some(qtc_email::render::render(&m, &files, s)))
}

fn groups(st: &mut Store) -> Result<Reply, StoreError> {
    Ok(Reply::Groups(
        st.bulletin_areas()?
            .into_iter()
            .map(|(category, at, count, low, high)| GroupInfo {
                category,
                at,
                count,
                low,
                high,
            })
            .collect(),
    ))
}

fn articles(
    st: &mut Store,
    category: &str,
    at: &str,
    range: (u64, u64),
    limit: usize,
) -> Result<Reply, StoreError> {
    Ok(Reply::Articles(
        st.area_bulletins(category, at, range, limit)?
            .into_iter()
            .map(|(number, from, subject, created, bid, size)| Article {
                number,
                from,
                subject,
                created,
                bid,
                size,
            })
            .collect(),
    ))
}
