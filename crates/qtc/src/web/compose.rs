//! Writing mail on the web: a personal message or a bulletin (To, @, subject, text), or a reply
//! to a message the user may read. The fields pass the BBS's own checks (the `S` command's
//! check of To and @, the subject and text checks mail clients' messages pass) and the message
//! is stored the one way a user's message is ([`crate::submission`]: room, allowances, rules;
//! BID, R: line, queued for the partners it routes to). Files may be attached (a multipart
//! field `attachment`, several allowed, within `[limits] max_message` with the text): kept
//! byte for byte with the type the browser gave them, and sent to B2 partners as B2F `File:`
//! parts, as Pat's are.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{FromRequest, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse};
use qtc_callsign::Callsign;
use qtc_mail::dest::DestError;
use qtc_mail::{Attachment, MsgStatus, MsgType, NewMessage, StoreError, MAX_SUBJECT_LEN};

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
        let subject = qtc_mail::charset::decode_header(&m.header.subject);
        d.subject = format!("Re: {}", subject.strip_prefix("Re: ").unwrap_or(&subject));
        d.subject = cut(&d.subject, MAX_SUBJECT_LEN).to_string();
        d.body = quoted(&m);
    }
    Ok(Html(compose_page(&s, &d, web.max_message, None)).into_response())
}

/// Files one message may carry at most.
pub const MAX_FILES: usize = 8;

/// Longest attachment name kept, in bytes.
const MAX_NAME: usize = 100;

/// What a compose post may weigh: the message's text and files, and room for the form.
pub fn body_limit(max_message: usize) -> usize {
    max_message + 64 * 1024
}

/// The form's fields and files, from a multipart post (what the page sends) or a plain form.
async fn read_post(request: Request) -> Result<(Draft, Vec<Attachment>), String> {
    let multipart = request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if !multipart {
        let axum::extract::Form(d) = axum::extract::Form::<Draft>::from_request(request, &())
            .await
            .map_err(|e| e.body_text())?;
        return Ok((d, Vec::new()));
    }
    let mut form = axum::extract::Multipart::from_request(request, &())
        .await
        .map_err(|e| e.body_text())?;
    let (mut d, mut files) = (Draft::default(), Vec::new());
    let too_big = |e: axum::extract::multipart::MultipartError| e.body_text();
    while let Some(field) = form.next_field().await.map_err(too_big)? {
        let name = field.name().unwrap_or("").to_string();
        if name == "attachment" {
            let file_name = field.file_name().unwrap_or("").to_string();
            let mime = qtc_mail::mime_type(field.content_type().unwrap_or(""));
            let data = field.bytes().await.map_err(too_big)?;
            // A file input left empty still sends an empty part without a name.
            if !(file_name.is_empty() && data.is_empty()) {
                files.push(Attachment {
                    name: file_name.into_bytes(),
                    mime,
                    data: data.to_vec(),
                });
            }
            continue;
        }
        let text = field.text().await.map_err(too_big)?;
        match name.as_str() {
            "csrf" => d.csrf = text,
            "kind" => d.kind = text,
            "to" => d.to = text,
            "at" => d.at = text,
            "subject" => d.subject = text,
            "body" => d.body = text,
            _ => {}
        }
    }
    Ok((d, files))
}

/// The attachments, checked: a few at most, within `room` bytes in all, each with a name that
/// cannot become a B2F header (no control characters, no path).
fn checked_files(files: Vec<Attachment>, room: usize) -> Result<Vec<Attachment>, String> {
    if files.len() > MAX_FILES {
        return Err(format!("At most {MAX_FILES} attachments per message."));
    }
    let total: usize = files.iter().map(|f| f.data.len()).sum();
    if total > room {
        return Err(format!(
            "The text and attachments are longer than the {} bytes this BBS takes.",
            room
        ));
    }
    files
        .into_iter()
        .map(|f| {
            let name = String::from_utf8_lossy(&f.name).into_owned();
            // Browsers send the base name; a path from elsewhere loses its folders.
            let base = name.rsplit(['/', '\\']).next().unwrap_or("").trim();
            if base.is_empty() || base.len() > MAX_NAME || base.chars().any(char::is_control) {
                return Err(format!(
                    "An attachment needs a name of 1 to {MAX_NAME} bytes without control characters."
                ));
            }
            Ok(Attachment {
                name: base.as_bytes().to_vec(),
                ..f
            })
        })
        .collect()
}

/// Lines of the original a reply quotes at most (the rest is left out, and said so).
const QUOTED_LINES: usize = 100;

/// The original, quoted for a reply: who wrote it when, then its lines behind `> `.
fn quoted(m: &qtc_mail::Message) -> String {
    let text = m.body_text();
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

fn compose_page(s: &WebSession, d: &Draft, max_message: usize, error: Option<&str>) -> String {
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
        "<form method=\"post\" action=\"/compose\" enctype=\"multipart/form-data\">{}\
         <p><label>Kind <select name=\"kind\" id=\"kind\">{}{}</select></label></p>\
         <p><label>To <input name=\"to\" id=\"to\" value=\"{}\" required maxlength=\"6\" \
         placeholder=\"callsign or category\"></label> \
         <label>@ <input name=\"at\" id=\"at\" value=\"{}\" maxlength=\"31\" \
         placeholder=\"BBS (optional)\"></label></p>\
         <p><label>Subject <input name=\"subject\" id=\"subject\" value=\"{}\" required \
         maxlength=\"{MAX_SUBJECT_LEN}\" size=\"50\"></label></p>\
         <p><textarea name=\"body\" id=\"body\">{}</textarea></p>\
         <p><label>Attachments <input type=\"file\" name=\"attachment\" id=\"attachment\" multiple>\
         </label><br><small id=\"limit\">Up to {MAX_FILES} files; text and files together up to {} \
         ({} bytes). Sent as Winlink attachments, as Pat sends them.</small></p>\
         <p><button id=\"send\">Send</button></p></form>",
        csrf(s),
        opt("P", "personal (SP)"),
        opt("B", "bulletin (SB)"),
        esc(&d.to),
        esc(&d.at),
        esc(&d.subject),
        esc(&d.body),
        crate::health::bytes(max_message as u64),
        max_message,
    );
    page(s, "Compose", &b)
}

/// The message the form describes, or why it cannot be sent: the addressee and `@` pass the
/// check the `S` command and mail clients use, the subject and text the one mail clients'
/// submissions pass.
fn checked(d: &Draft, from: Callsign, max_message: usize) -> Result<NewMessage, String> {
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
pub async fn send(State(web): State<Arc<Web>>, headers: HeaderMap, request: Request) -> Page {
    // Only a logged-in user's post is read at all (it may weigh megabytes).
    if web.session(&headers).await.is_none() {
        return Err(super::not_logged_in());
    }
    let (d, files) = match read_post(request).await {
        Ok(posted) => posted,
        Err(why) => {
            tracing::info!(%why, "web: compose post refused");
            let why = format!(
                "The message could not be read ({why}); attachments and text \
                               together may be up to {} bytes.",
                web.max_message
            );
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                Html(super::pages::error_page(&why)),
            )
                .into_response());
        }
    };
    let s = need_csrf(&web, &headers, &d.csrf).await?;
    let checked = checked(&d, s.call, web.max_message).and_then(|msg| {
        let room = web.max_message.saturating_sub(msg.body.len());
        Ok((checked_files(files, room)?, msg))
    });
    let (files, msg) = match checked {
        Ok(m) => m,
        Err(e) => {
            return Ok((
                StatusCode::UNPROCESSABLE_ENTITY,
                Html(compose_page(&s, &d, web.max_message, Some(&e))),
            )
                .into_response())
        }
    };
    let (limits, to) = (web.user_limits.clone(), msg.to.clone());
    let stored = store(&web, move |st| {
        let when = (crate::clock::now(), crate::clock::unix_now());
        let parts = qtc_store::MailParts {
            files,
            ..Default::default()
        };
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
        Html(compose_page(&s, &d, web.max_message, Some(&why))),
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
        let me = Callsign::parse_station("N0ME").unwrap();
        let m = checked(
            &draft("P", "n0aaa", "n0bbs.#ne.usa", "Hi", "a\r\nb\n"),
            me,
            100,
        )
        .unwrap();
        assert_eq!((m.to.as_str(), m.at.as_str()), ("N0AAA", "N0BBS.#NE.USA"));
        assert_eq!(m.body, b"a\r\nb\r\n");
        assert_eq!(m.kind, MsgType::Personal);
        let b = checked(&draft("B", "ALL", "", "x", ""), me, 100).unwrap();
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
            assert!(checked(&bad, me, 100).is_err(), "{}", bad.to);
        }
        assert_eq!(cut("Re: äöü", 6), "Re: ä");
    }
}
