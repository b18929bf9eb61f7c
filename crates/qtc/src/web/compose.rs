//! Writing mail on the web: a personal message or a bulletin (To, @, subject, text), or a reply
//! to a message the user may read. The fields pass the BBS's own checks (the `S` command's
//! check of To and @, the subject and text checks mail clients' messages pass) and the message
//! is stored the one way a user's message is ([`crate::submission`]: room, allowances, rules;
//! BID, R: line, queued for the partners it routes to).

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse};
use qtc_mail::dest::DestError;
use qtc_mail::{MsgStatus, MsgType, NewMessage, StoreError, MAX_SUBJECT_LEN};

use super::pages::{csrf, esc, page, result};
use super::session::WebSession;
use super::{need_csrf, need_login, store, Page, Web};

/// `GET /compose` (`?reply=N` fills it in as a reply to message N).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct ComposeQuery {
    reply: Option<u64>,
}

/// What the form holds.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct Draft {
    csrf: String,
    kind: String,
    to: String,
    at: String,
    subject: String,
    body: String,
}

/// `GET /compose`.
pub async fn form(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Query(q): Query<ComposeQuery>,
) -> Page {
    let s = need_login(&web, &headers).await?;
    let mut d = Draft {
        kind: "P".into(),
        ..Default::default()
    };
    if let Some(n) = q.reply {
        // As `SR`: a personal reply to the sender, "Re: " once.
        let m = super::mail::readable(&web, &s, n, false).await?;
        d.to = m.header.from.clone();
        let subject = String::from_utf8_lossy(&m.header.subject).into_owned();
        d.subject = format!("Re: {}", subject.strip_prefix("Re: ").unwrap_or(&subject));
        d.subject = cut(&d.subject, MAX_SUBJECT_LEN).to_string();
        d.body = quoted(&m);
    }
    Ok(Html(compose_page(&s, &d, None)).into_response())
}

/// Lines of the original a reply quotes at most (the rest is left out, and said so).
const QUOTED_LINES: usize = 100;

/// The original, quoted for a reply: who wrote it when, then its lines behind `> `.
fn quoted(m: &qtc_mail::Message) -> String {
    let text = String::from_utf8_lossy(&m.body);
    let text = qtc_mail::text::visible(&text);
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut q = format!(
        "{} wrote on {}:\n",
        m.header.from,
        qtc_mail::Utc::from_unix(m.header.created)
            .rfc3339()
            .get(..16)
            .unwrap_or("")
            .replace('T', " ")
    );
    for l in lines.iter().take(QUOTED_LINES) {
        q.push_str("> ");
        q.push_str(l);
        q.push('\n');
    }
    if lines.len() > QUOTED_LINES {
        q.push_str(&format!("> [{} more lines]\n", lines.len() - QUOTED_LINES));
    }
    q.push('\n');
    q
}

/// The longest prefix of `s` within `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn compose_page(s: &WebSession, d: &Draft, error: Option<&str>) -> String {
    let mut b = String::new();
    if let Some(e) = error {
        let _ = write!(b, "<p class=\"err\" id=\"error\">{}</p>", esc(e));
    }
    let opt = |v: &str, label: &str| {
        let sel = if d.kind.eq_ignore_ascii_case(v) {
            " selected"
        } else {
            ""
        };
        format!("<option value=\"{v}\"{sel}>{label}</option>")
    };
    let _ = write!(
        b,
        "<form method=\"post\" action=\"/compose\">{}\
         <p><label>Kind <select name=\"kind\" id=\"kind\">{}{}</select></label></p>\
         <p><label>To <input name=\"to\" id=\"to\" value=\"{}\" required maxlength=\"6\" \
         placeholder=\"callsign or category\"></label> \
         <label>@ <input name=\"at\" id=\"at\" value=\"{}\" maxlength=\"31\" \
         placeholder=\"BBS (optional)\"></label></p>\
         <p><label>Subject <input name=\"subject\" id=\"subject\" value=\"{}\" required \
         maxlength=\"{MAX_SUBJECT_LEN}\" size=\"50\"></label></p>\
         <p><textarea name=\"body\" id=\"body\">{}</textarea></p>\
         <p><button id=\"send\">Send</button></p></form>",
        csrf(s),
        opt("P", "personal (SP)"),
        opt("B", "bulletin (SB)"),
        esc(&d.to),
        esc(&d.at),
        esc(&d.subject),
        esc(&d.body),
    );
    page(s, "Compose", &b)
}

/// The message the form describes, or why it cannot be sent: the addressee and `@` pass the
/// check the `S` command and mail clients use, the subject and text the one mail clients'
/// submissions pass.
fn checked(d: &Draft, from: &str, max_message: usize) -> Result<NewMessage, String> {
    let kind = match d.kind.as_str() {
        "B" => MsgType::Bulletin,
        _ => MsgType::Personal,
    };
    let (to, at) = (
        d.to.trim().to_ascii_uppercase(),
        d.at.trim().to_ascii_uppercase(),
    );
    qtc_mail::dest::check(&to, &at).map_err(|e| match e {
        DestError::TooLong { .. } => sentence(&e.to_string()),
        _ => "To must be one callsign or category, @ one BBS address (letters, digits, . and #)."
            .into(),
    })?;
    let subject = qtc_mail::submitted::subject(&d.subject).map_err(|e| sentence(&e.0))?;
    let body = qtc_mail::submitted::body(&d.body, max_message).map_err(|e| sentence(&e.0))?;
    Ok(NewMessage {
        kind,
        status: MsgStatus::New,
        to,
        at,
        from: from.to_string(),
        bid: None,
        subject,
        rlines: Vec::new(),
        body,
    })
}

/// `words` as a sentence: a capital first, a full stop last.
fn sentence(words: &str) -> String {
    let mut c = words.chars();
    match c.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), c.as_str()),
        None => String::new(),
    }
}

/// `POST /compose`: stores the message, or shows the form again with the reason.
pub async fn send(State(web): State<Arc<Web>>, headers: HeaderMap, Form(d): Form<Draft>) -> Page {
    let s = need_csrf(&web, &headers, &d.csrf).await?;
    let msg = match checked(&d, &s.call, web.max_message) {
        Ok(m) => m,
        Err(e) => {
            return Ok((
                StatusCode::UNPROCESSABLE_ENTITY,
                Html(compose_page(&s, &d, Some(&e))),
            )
                .into_response())
        }
    };
    let (limits, to) = (web.user_limits.clone(), msg.to.clone());
    let stored = store(&web, move |st| {
        let when = (crate::clock::now(), crate::clock::unix_now());
        let parts = qtc_store::MailParts::default();
        let stored = crate::submission::store(st, &limits, &[msg], &parts, when);
        Ok(stored.map(|copies| copies.into_iter().next().unwrap_or_default()))
    })
    .await?;
    let why = match stored {
        Ok((n, bid)) => {
            tracing::info!(call = %s.call, number = n, %bid, %to, "web: message stored");
            let line = format!("Message #{n} stored, BID {bid}.");
            return Ok(Html(result(&s, "Sent", &line, &format!("/messages/{n}"))).into_response());
        }
        Err(StoreError::DuplicateBid(bid)) => format!("BID {bid} exists already: not stored."),
        Err(StoreError::Full) => {
            tracing::warn!("message store full: message not stored");
            "The message store is full: not stored. Please tell the sysop.".into()
        }
        Err(StoreError::Rejected(_)) => "This BBS does not accept that message.".into(),
        Err(StoreError::OverLimit(why)) => format!("{why}: not stored."),
        Err(_) => return Err(super::store_down()),
    };
    Ok((
        StatusCode::UNPROCESSABLE_ENTITY,
        Html(compose_page(&s, &d, Some(&why))),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(kind: &str, to: &str, at: &str, subject: &str, body: &str) -> Draft {
        Draft {
            kind: kind.into(),
            to: to.into(),
            at: at.into(),
            subject: subject.into(),
            body: body.into(),
            ..Default::default()
        }
    }

    #[test]
    fn drafts_pass_the_bbs_checks() {
        let m = checked(
            &draft("P", "n0aaa", "n0bbs.#ne.usa", "Hi", "a\r\nb\n"),
            "N0ME",
            100,
        )
        .unwrap();
        assert_eq!((m.to.as_str(), m.at.as_str()), ("N0AAA", "N0BBS.#NE.USA"));
        assert_eq!(m.body, b"a\r\nb\r\n");
        assert_eq!(m.kind, MsgType::Personal);
        let b = checked(&draft("B", "ALL", "", "x", ""), "N0ME", 100).unwrap();
        assert_eq!((b.kind, b.at.as_str()), (MsgType::Bulletin, ""));
        for bad in [
            draft("P", "N0A < N0SYS", "", "s", ""),
            draft("P", "N0A", "X $BID", "s", ""),
            draft("P", "TOOLONGCALL", "", "s", ""),
            draft("P", "N0A", "", " ", ""),
            draft("P", "N0A", "", "s\x1b[2J", ""),
            draft("P", "N0A", "", "s", "end\x1a"),
            draft("P", "N0A", "", "s", &"x".repeat(200)),
        ] {
            assert!(checked(&bad, "N0ME", 100).is_err(), "{}", bad.to);
        }
        assert_eq!(cut("Re: äöü", 6), "Re: ä");
    }
}
