//! Mail on the web, for every user: the message list (newest first, paged, with filters), one
//! message, and kill/hold/release. A user sees what the BBS would show them (bulletins, their
//! own personal mail, nothing held or killed); the sysop sees everything.
//!
//! A page costs a bounded amount of store work however big the store is. Filters on fields
//! (sender, addressee, `@`, type, status) are one query over the whole store, answered through
//! the store's indexes as the BBS's `L<` is. A text to find in subjects is matched here: the
//! list walks back from the newest message in windows of message numbers (primary-key
//! ranges), at most [`MAX_WINDOWS`] of them per request, and says where it stopped when it
//! found fewer than a page of matches in that span.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use qtc_callsign::Callsign;
use qtc_mail::{ListFilter, Message, MessageHeader, MessageStore, MsgStatus, MsgType, Utc};

use super::pages::{confirm, csrf, esc, line, page, result, subject};
use super::session::WebSession;
use super::{need_csrf, need_login, store, ActionForm, Page, Web};

/// Messages on one page.
pub const PAGE: usize = 50;
/// Message numbers looked at per window.
const WINDOW: u64 = 1000;
/// Windows looked at per request, at most.
const MAX_WINDOWS: u32 = 10;
/// Pages a `?page=N` without `before` may skip (further back: follow the Older links).
const MAX_PAGE: usize = 20;

/// Whether `me` may read a message, as on the BBS: held mail is the sysop's alone until it is
/// released, killed mail is gone, personal mail is its sender's and addressees'.
pub fn may_read(me: &str, sysop: bool, h: &MessageHeader, copies: &[String]) -> bool {
    sysop
        || (!matches!(h.status, MsgStatus::Killed | MsgStatus::Held)
            && (h.kind != MsgType::Personal
                || h.to == me
                || h.from == me
                || copies.iter().any(|c| c == me)))
}

/// Whether `me` may kill a message they may read, as on the BBS: its sender or addressee, or
/// the sysop.
fn may_kill(me: Callsign, sysop: bool, h: &MessageHeader) -> bool {
    let me = me.to_string();
    h.status != MsgStatus::Killed && (sysop || h.to == me || h.from == me)
}

/// The list's query string: filters and where the page starts.
#[derive(serde::Deserialize, Default, Clone)]
#[serde(default)]
pub struct ListQuery {
    kind: String,
    status: String,
    from: String,
    to: String,
    at: String,
    text: String,
    /// Show messages numbered below this (the Older link's keyset).
    before: Option<u64>,
    /// The page's number, for showing (and, without `before`, for skipping pages).
    page: Option<usize>,
}

impl ListQuery {
    /// The store's filter for this query and user (the text is matched here, not by SQL).
    fn filter(&self, s: &WebSession) -> ListFilter {
        let call = |v: &str| {
            let v = v.trim().to_ascii_uppercase();
            (!v.is_empty()).then_some(v)
        };
        let mut status = self.status.chars().next().and_then(MsgStatus::from_letter);
        // Held and killed mail is the sysop's only.
        if !s.sysop() && matches!(status, Some(MsgStatus::Held | MsgStatus::Killed)) {
            status = None;
        }
        ListFilter {
            kind: self.kind.chars().next().and_then(MsgType::from_letter),
            status,
            from: call(&self.from),
            to: call(&self.to),
            at: call(&self.at),
            visible_to: (!s.sysop()).then(|| s.call.to_string()),
            include_killed: s.sysop(),
            // The status column shows this user's own read marks, as on the BBS.
            reader: Some(s.call.to_string()),
            ..Default::default()
        }
    }

    /// The query string for another page with the same filters.
    fn link(&self, before: Option<u64>, page: usize) -> String {
        let mut q = String::from("/messages?");
        for (k, v) in [
            ("kind", &self.kind),
            ("status", &self.status),
            ("from", &self.from),
            ("to", &self.to),
            ("at", &self.at),
            ("text", &self.text),
        ] {
            if !v.trim().is_empty() {
                let _ = write!(q, "{k}={}&", urlencode(v.trim()));
            }
        }
        if let Some(b) = before {
            let _ = write!(q, "before={b}&");
        }
        let _ = write!(q, "page={page}");
        q
    }
}

/// Form-encodes a query value.
pub(super) fn urlencode(v: &str) -> String {
    let mut o = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            o.push(char::from(b));
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// One page of the list.
struct Found {
    rows: Vec<MessageHeader>,
    /// Where the next (older) page starts, if there may be more.
    older: Option<u64>,
    /// The scan stopped at this number without filling the page (its budget ran out).
    stopped_at: Option<u64>,
}

/// Walks back from `before` (or the newest) in windows of numbers, skipping `skip` matches,
/// until a page is full, the store's start is reached, or the window budget is spent.
fn scan(
    st: &mut dyn MessageStore,
    mut f: ListFilter,
    text: &str,
    before: Option<u64>,
    skip: usize,
) -> Result<Found, qtc_mail::StoreError> {
    let text = text.trim().to_lowercase();
    let top = match before {
        Some(b) => b.saturating_sub(1),
        None => st
            .list(&ListFilter {
                last: Some(1),
                include_killed: true,
                ..Default::default()
            })?
            .first()
            .map_or(0, |h| h.number),
    };
    if text.is_empty() {
        return whole(st, f, top, skip);
    }
    let (mut hi, mut skipped, mut rows) = (top, 0, Vec::new());
    let mut windows = 0;
    while hi > 0 && rows.len() <= PAGE {
        if windows == MAX_WINDOWS {
            return Ok(Found {
                rows,
                older: Some(hi + 1),
                stopped_at: Some(hi + 1),
            });
        }
        windows += 1;
        let lo = hi.saturating_sub(WINDOW - 1).max(1);
        f.range = Some((lo, hi));
        // Without a text to match, SQL stops at what the page still needs.
        f.last = text
            .is_empty()
            .then(|| PAGE + 1 - rows.len() + (skip - skipped));
        for h in st.list(&f)? {
            if !text.is_empty()
                && !String::from_utf8_lossy(&h.subject)
                    .to_lowercase()
                    .contains(&text)
            {
                continue;
            }
            if skipped < skip {
                skipped += 1;
                continue;
            }
            rows.push(h);
            if rows.len() > PAGE {
                break;
            }
        }
        hi = lo - 1;
    }
    let older = (rows.len() > PAGE).then(|| {
        rows.truncate(PAGE);
        rows.last().map_or(0, |h| h.number)
    });
    Ok(Found {
        rows,
        older,
        stopped_at: None,
    })
}

/// A page without a text to match: one query over the whole store, which SQL answers through
/// its indexes (a sender, an addressee, an `@`) or by walking newest first to the page's end,
/// as `L<` does: a rare sender's one message a million numbers back is found at once.
fn whole(
    st: &mut dyn MessageStore,
    mut f: ListFilter,
    top: u64,
    skip: usize,
) -> Result<Found, qtc_mail::StoreError> {
    f.range = Some((1, top));
    f.last = Some(skip + PAGE + 1);
    let mut rows: Vec<MessageHeader> = st.list(&f)?.into_iter().skip(skip).collect();
    let older = (rows.len() > PAGE).then(|| {
        rows.truncate(PAGE);
        rows.last().map_or(0, |h| h.number)
    });
    Ok(Found {
        rows,
        older,
        stopped_at: None,
    })
}

/// `GET /messages`.
pub async fn list(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Page {
    let s = need_login(&web, &headers).await?;
    let f = q.filter(&s);
    let page_no = q.page.unwrap_or(1).clamp(1, usize::MAX / 2);
    // A page number alone skips the pages before it (a few at most); Older links carry `before`.
    let skip = match q.before {
        Some(_) => 0,
        None => (page_no.min(MAX_PAGE) - 1) * PAGE,
    };
    let (text, before) = (q.text.clone(), q.before);
    let found = store(&web, move |st| scan(st, f, &text, before, skip)).await?;
    Ok(Html(page(&s, title(&s), &list_body(&s, &q, page_no, &found))).into_response())
}

fn title(s: &WebSession) -> &'static str {
    if s.sysop() {
        "Messages"
    } else {
        "Mail"
    }
}

fn filters(s: &WebSession, q: &ListQuery) -> String {
    let select = |name: &str, cur: &str, opts: &[(&str, &str)]| {
        let mut o = format!("<label>{name}<select name=\"{}\">", name.to_lowercase());
        for (v, label) in opts {
            let sel = if cur.eq_ignore_ascii_case(v) {
                " selected"
            } else {
                ""
            };
            let _ = write!(o, "<option value=\"{v}\"{sel}>{label}</option>");
        }
        o.push_str("</select></label>");
        o
    };
    let mut statuses = vec![("", "any"), ("N", "new"), ("Y", "read"), ("F", "forwarded")];
    if s.sysop() {
        statuses.extend([("H", "held"), ("K", "killed")]);
    }
    let input = |name: &str, v: &str| {
        format!(
            "<label>{name}<input name=\"{}\" value=\"{}\"></label>",
            name.to_lowercase(),
            esc(v)
        )
    };
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/messages\">{}{}{}{}{}{}\
         <button>Filter</button> <a href=\"/messages\">Clear</a></form>",
        select(
            "Kind",
            &q.kind,
            &[
                ("", "any"),
                ("P", "personal"),
                ("B", "bulletin"),
                ("T", "traffic")
            ]
        ),
        select("Status", &q.status, &statuses),
        input("From", &q.from),
        input("To", &q.to),
        input("At", &q.at),
        input("Text", &q.text),
    )
}

fn list_body(s: &WebSession, q: &ListQuery, page_no: usize, found: &Found) -> String {
    let mut b = filters(s, q);
    if found.rows.is_empty() {
        b.push_str("<p id=\"empty\">No messages.</p>");
    } else {
        // The status comes right after the number: on a phone (one card per message) it is
        // the first thing under the subject, not off to the right.
        b.push_str(
            "<table id=\"messages\" class=\"cards\"><tr><th>#</th><th>St</th><th>Subject</th>\
             <th>From</th><th>To</th><th>@BBS</th><th>Date</th><th>Type</th><th>Size</th></tr>",
        );
        for h in &found.rows {
            let _ = write!(
                b,
                "<tr><td data-label=\"#\"><a href=\"/messages/{n}\">{n}</a></td>\
                 <td data-label=\"St\">{}</td>\
                 <td class=\"subj\" data-label=\"Subject\"><a href=\"/messages/{n}\">{}</a></td>\
                 <td data-label=\"From\">{}</td><td data-label=\"To\">{}</td>\
                 <td data-label=\"@BBS\">{}</td><td data-label=\"Date\">{}</td>\
                 <td data-label=\"Type\">{}</td><td data-label=\"Size\">{}</td></tr>",
                h.status,
                subject(&h.subject),
                line(h.from.as_bytes()),
                line(h.to.as_bytes()),
                line(h.at.as_bytes()),
                Utc::from_unix(h.created)
                    .rfc3339()
                    .get(..16)
                    .unwrap_or("")
                    .replace('T', " "),
                h.kind,
                h.size,
                n = h.number,
            );
        }
        b.push_str("</table>");
    }
    if let Some(n) = found.stopped_at {
        let _ = write!(
            b,
            "<p>Searched back to #{n} without filling the page; older messages are further back.</p>"
        );
    }
    b.push_str("<p class=\"nav\">");
    if page_no > 1 {
        let _ = write!(b, "<a href=\"{}\">« Newest</a>", esc(&q.link(None, 1)));
    }
    let _ = write!(b, "<span>Page {page_no}</span>");
    if let Some(older) = found.older {
        let _ = write!(
            b,
            "<a id=\"older\" href=\"{}\">Older »</a>",
            esc(&q.link(Some(older), page_no + 1))
        );
    }
    b.push_str("</p>");
    b
}

fn not_found(n: u64) -> Response {
    (
        StatusCode::NOT_FOUND,
        Html(super::pages::error_page(&format!(
            "No message #{n} for you."
        ))),
    )
        .into_response()
}

/// The message `n` if `s` may read it; their copy is marked read (as `R` does).
pub(super) async fn readable(
    web: &Web,
    s: &WebSession,
    n: u64,
    mark: bool,
) -> Result<Message, Response> {
    let (call, sysop) = (s.call, s.sysop());
    let m = store(web, move |st| {
        let m = st.message(n)?;
        match m {
            Some(mut m) if may_read(&call.to_string(), sysop, &m.header, &m.copies) => {
                if let Some(seen) = st.status_seen_by(n, call)? {
                    m.header.status = seen;
                }
                if mark {
                    st.mark_read(n, call)?;
                }
                Ok(Some(m))
            }
            _ => Ok(None),
        }
    })
    .await?;
    m.ok_or_else(|| not_found(n))
}

/// `GET /messages/{n}`.
pub async fn read(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path(n): Path<u64>,
    Query(done): Query<Done>,
) -> Page {
    let s = need_login(&web, &headers).await?;
    let m = readable(&web, &s, n, true).await?;
    Ok(Html(message(&s, &m, done.line(n))).into_response())
}

/// One message, with the buttons this user may use; `note` first (what a button did).
fn message(s: &WebSession, m: &Message, note: Option<String>) -> String {
    let h = &m.header;
    let mut b = note
        .map(|l| format!("<p id=\"result\">{}</p>", esc(&l)))
        .unwrap_or_default();
    // Further `To:`s are addressees as much as the first; `Cc:`s are copies (as `R` shows).
    let mut to = h.to.clone();
    if !h.at.is_empty() {
        to = format!("{to} @ {}", h.at);
    }
    let further = m.further_to();
    b += &format!(
        "<table id=\"header\"><tr><th>Number</th><td>{}</td></tr><tr><th>Type</th><td>{}</td></tr>\
         <tr><th>Status</th><td id=\"status\">{}</td></tr><tr><th>To</th><td id=\"to\">{}{}{}</td></tr>",
        h.number,
        h.kind,
        h.status,
        line(to.as_bytes()),
        if further.is_empty() { "" } else { ", " },
        line(further.join(", ").as_bytes()),
    );
    if !m.cc.is_empty() {
        let _ = write!(
            b,
            "<tr><th>Cc</th><td id=\"cc\">{}</td></tr>",
            line(m.cc.join(", ").as_bytes())
        );
    }
    let _ = write!(
        b,
        "<tr><th>From</th><td>{}</td></tr><tr><th>BID</th><td>{}</td></tr>\
         <tr><th>Date</th><td>{}</td></tr><tr><th>Subject</th><td id=\"subject\">{}</td></tr></table>",
        line(h.from.as_bytes()),
        line(h.bid.as_bytes()),
        Utc::from_unix(h.created).rfc3339(),
        subject(&h.subject),
    );
    // As telnet shows it: the body in the charset its sender declared (Winlink's ISO-8859-1).
    let mut text = String::new();
    if s.sysop() {
        text.push_str(&qtc_mail::charset::decode_8bit(&m.rlines));
    }
    text.push_str(&m.body_text());
    let _ = write!(
        b,
        "<pre id=\"body\">{}</pre>",
        esc(&qtc_mail::text::visible(&text.replace('\r', "")))
    );
    if !m.files.is_empty() {
        b.push_str("<h2>Attachments</h2><ul>");
        for (i, f) in m.files.iter().enumerate() {
            let _ = write!(
                b,
                "<li><a href=\"/messages/{}/files/{i}\">{}</a> ({} bytes)</li>",
                h.number,
                line(&f.name),
                f.size
            );
        }
        b.push_str("</ul>");
    }
    b.push_str("<p class=\"nav\">");
    let _ = write!(
        b,
        "<a id=\"reply\" href=\"/compose?reply={}\">Reply</a>",
        h.number
    );
    let mut buttons = Vec::new();
    if s.sysop() {
        if !matches!(h.status, MsgStatus::Held | MsgStatus::Killed) {
            buttons.push(("hold", "Hold"));
        }
        if h.status == MsgStatus::Held {
            buttons.push(("release", "Release"));
        }
    }
    if may_kill(s.call, s.sysop(), h) {
        buttons.push(("kill", "Kill…"));
    }
    for (action, label) in buttons {
        let _ = write!(
            b,
            "<form class=\"inline\" method=\"post\" action=\"/messages/{}\">{}\
             <input type=\"hidden\" name=\"action\" value=\"{action}\">\
             <button>{label}</button></form>",
            h.number,
            csrf(s)
        );
    }
    b.push_str("</p>");
    page(s, &format!("Message #{}", h.number), &b)
}

/// `POST /messages/{n}`: kill (asked again first), hold, release.
pub async fn action(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path(n): Path<u64>,
    Form(f): Form<ActionForm>,
) -> Page {
    let s = need_csrf(&web, &headers, &f.csrf).await?;
    let m = readable(&web, &s, n, false).await?;
    let allowed = match f.action.as_str() {
        "kill" => may_kill(s.call, s.sysop(), &m.header),
        "hold" | "release" => s.sysop(),
        _ => false,
    };
    let back = format!("/messages/{n}");
    if !allowed {
        let line = format!("message #{n}: you may not {} it", f.action);
        return Ok((
            StatusCode::FORBIDDEN,
            Html(result(&s, "Message", &line, &back)),
        )
            .into_response());
    }
    if f.action == "kill" && f.confirm != "yes" {
        let question = format!(
            "Kill message #{n} ({}) from {} to {}? It cannot be read afterwards.",
            qtc_mail::text::visible_line(&qtc_mail::charset::decode_header(&m.header.subject)),
            m.header.from,
            m.header.to
        );
        return Ok(Html(confirm(
            &s,
            "Kill a message",
            &question,
            &back,
            &[("action", "kill")],
            &back,
        ))
        .into_response());
    }
    let action = f.action.clone();
    let done = store(&web, move |st| match action.as_str() {
        "kill" => st.set_status(n, MsgStatus::Killed),
        "hold" => st.hold(n),
        _ => st.release(n, crate::clock::unix_now()),
    })
    .await?;
    if done {
        tracing::info!(call = %s.call, number = n, action = %f.action, "web: message changed");
    }
    // Hold and release: back on the message, which says what happened (a kill leaves nothing
    // to show a user, so it gets its own page).
    if f.action != "kill" {
        let outcome = if done { "done" } else { "failed" };
        let to = format!("/messages/{n}?{}={outcome}", f.action);
        return Ok(axum::response::Redirect::to(&to).into_response());
    }
    let line = if done {
        format!("message #{n}: {} done", f.action)
    } else {
        format!("message #{n}: cannot {} it now", f.action)
    };
    Ok(Html(result(&s, "Message", &line, &back)).into_response())
}

/// What a hold or release that came back to the message page did (`?hold=done`).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct Done {
    hold: String,
    release: String,
}

impl Done {
    /// The line the message page shows first, if any.
    fn line(&self, n: u64) -> Option<String> {
        let (action, outcome) = match (self.hold.as_str(), self.release.as_str()) {
            (o, _) if !o.is_empty() => ("hold", o),
            (_, o) if !o.is_empty() => ("release", o),
            _ => return None,
        };
        Some(match outcome {
            "done" => format!("message #{n}: {action} done"),
            _ => format!("message #{n}: cannot {action} it now"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: MsgType, status: MsgStatus, to: &str, from: &str) -> MessageHeader {
        MessageHeader {
            number: 1,
            kind,
            status,
            to: to.into(),
            at: String::new(),
            from: from.into(),
            bid: "1_N0BBS".into(),
            subject: b"s".to_vec(),
            size: 1,
            created: 0,
        }
    }

    #[test]
    fn users_read_what_the_bbs_shows_them() {
        use MsgStatus::*;
        use MsgType::*;
        let p = header(Personal, New, "N0AAA", "N0BBB");
        assert!(may_read("N0AAA", false, &p, &[]));
        assert!(may_read("N0BBB", false, &p, &[]));
        assert!(!may_read("N0CCC", false, &p, &[]));
        assert!(may_read("N0CCC", false, &p, &["N0CCC".into()]));
        assert!(may_read("N0CCC", true, &p, &[]));
        let held = header(Personal, Held, "N0AAA", "N0BBB");
        assert!(!may_read("N0AAA", false, &held, &[]), "held is the sysop's");
        assert!(may_read("N0SYS", true, &held, &[]));
        let b = header(Bulletin, New, "ALL", "N0BBB");
        assert!(may_read("N0CCC", false, &b, &[]));
        assert!(!may_kill("N0CCC".parse().unwrap(), false, &b));
        assert!(may_kill("N0BBB".parse().unwrap(), false, &b));
        assert!(!may_read(
            "N0BBB",
            false,
            &header(Bulletin, Killed, "ALL", "N0BBB"),
            &[]
        ));
    }

    /// A store of `n` bulletins with the subjects "n1" to "nN".
    fn store_of(n: usize) -> (tempfile::TempDir, qtc_store::Store) {
        let dir = tempfile::tempdir().unwrap();
        let mut st = qtc_store::Store::open(dir.path(), qtc_store::Durability::Normal).unwrap();
        st.set_station(qtc_mail::Station::new("N0BBS".parse().unwrap()));
        st.insert_many(&bulletins("N0USR", 1..=n), 0).unwrap();
        (dir, st)
    }

    /// Bulletins from `from` with the subjects `n1`, `n2`...
    fn bulletins(from: &str, n: std::ops::RangeInclusive<usize>) -> Vec<qtc_mail::NewMessage> {
        n.map(|i| qtc_mail::NewMessage {
            kind: MsgType::Bulletin,
            status: MsgStatus::New,
            to: "ALL".into(),
            at: String::new(),
            from: from.into(),
            bid: None,
            subject: format!("n{i}").into_bytes(),
            rlines: Vec::new(),
            body: Vec::new(),
        })
        .collect()
    }

    #[test]
    fn a_page_reads_a_bounded_span_of_a_big_store() {
        let total = (WINDOW * u64::from(MAX_WINDOWS)) as usize + 500;
        let (_dir, mut st) = store_of(total);
        // The newest page, then the next by keyset.
        let f = ListFilter::default();
        let p1 = scan(&mut st, f.clone(), "", None, 0).unwrap();
        assert_eq!(p1.rows.len(), PAGE);
        assert_eq!(p1.rows[0].number, total as u64);
        let older = p1.older.unwrap();
        assert_eq!(older, total as u64 - PAGE as u64 + 1);
        let p2 = scan(&mut st, f.clone(), "", Some(older), 0).unwrap();
        assert_eq!(p2.rows[0].number, older - 1);
        // `?page=3` skips two pages.
        let p3 = scan(&mut st, f.clone(), "", None, 2 * PAGE).unwrap();
        assert_eq!(p3.rows[0].number, total as u64 - 2 * PAGE as u64);
        // A text nothing matches stops after the window budget and says where.
        let none = scan(&mut st, f.clone(), "no such words", None, 0).unwrap();
        assert!(none.rows.is_empty());
        let stop = total as u64 - WINDOW * u64::from(MAX_WINDOWS) + 1;
        assert_eq!((none.stopped_at, none.older), (Some(stop), Some(stop)));
        // Going on from there reaches the start.
        let rest = scan(&mut st, f.clone(), "N17", Some(stop), 0).unwrap();
        let found: Vec<u64> = rest.rows.iter().map(|h| h.number).collect();
        assert_eq!(
            found,
            [179, 178, 177, 176, 175, 174, 173, 172, 171, 170, 17]
        );
        assert_eq!((rest.stopped_at, rest.older), (None, None));
    }

    #[test]
    fn a_rare_sender_is_found_however_far_back() {
        // The sender's one message is the oldest of 12,001: found on the first page.
        let (_dir, mut st) = store_of(0);
        st.insert_many(&bulletins("N0RARE", 1..=1), 0).unwrap();
        st.insert_many(&bulletins("N0USR", 2..=12_001), 0).unwrap();
        let f = ListFilter {
            from: Some("N0RARE".into()),
            ..Default::default()
        };
        let found = scan(&mut st, f, "", None, 0).unwrap();
        let numbers: Vec<u64> = found.rows.iter().map(|h| h.number).collect();
        assert_eq!(numbers, [1]);
        assert_eq!((found.stopped_at, found.older), (None, None));
    }

    #[test]
    fn a_message_shows_as_telnet_shows_it() {
        // From Pat: the subject RFC 2047 encoded, the body in ISO-8859-1 and declared so, a
        // second `To:` and a `Cc:`.
        let m = Message {
            header: MessageHeader {
                subject: b"=?ISO-8859-1?Q?Gr=FC=DFe_aus_K=F6ln?=".to_vec(),
                ..header(MsgType::Personal, MsgStatus::New, "N0USR", "N0PAT")
            },
            rlines: Vec::new(),
            body: b"Gr\xfc\xdfe aus K\xf6ln\r\n".to_vec(),
            read_count: 0,
            copies: vec!["N0OTH".into(), "N0CC".into()],
            cc: vec!["N0CC".into()],
            files: Vec::new(),
            charset: "ISO-8859-1".into(),
        };
        let html = message(&WebSession::for_test("N0USR", false), &m, None);
        assert!(
            html.contains("<td id=\"subject\">Grüße aus Köln</td>"),
            "{html}"
        );
        assert!(html.contains(">Grüße aus Köln\n</pre>"), "{html}");
        assert!(html.contains("<td id=\"to\">N0USR, N0OTH</td>"), "{html}");
        assert!(html.contains("<td id=\"cc\">N0CC</td>"), "{html}");
        assert!(!html.contains("Copies"), "{html}");
        // Undeclared 8-bit text that is not UTF-8 reads as ISO-8859-1, not as U+FFFD.
        let undeclared = Message {
            charset: String::new(),
            ..m
        };
        let html = message(&WebSession::for_test("N0USR", false), &undeclared, None);
        assert!(html.contains(">Grüße aus Köln\n</pre>"), "{html}");
    }

    #[test]
    fn links_keep_the_filters() {
        let q = ListQuery {
            from: "n0a b".into(),
            text: "a&b".into(),
            ..Default::default()
        };
        assert_eq!(
            q.link(Some(90), 2),
            "/messages?from=n0a%20b&text=a%26b&before=90&page=2"
        );
    }
}
