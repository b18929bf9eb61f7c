//! The BBS in the browser, as LinBPQ's web terminal: `/terminal` is a page with a small
//! script (`/terminal.js`, the only script qtc serves) that opens a WebSocket to
//! `/terminal/ws`. That WebSocket is the logged-in web user's own BBS session, every command,
//! paging and `CONV` included, with no second login: it is opened only for a live web session
//! (its cookie), from a page of this dashboard (the `Origin`, when a browser sends one, must
//! name the host the request came to), and it takes the places every BBS door takes (the
//! address's cap, a place while it starts, a user's seat), refused while the address is locked
//! out. The BBS's text goes out as it comes (the session runs on the raw codec, which sends
//! no telnet commands), in text frames; each frame the browser sends is one typed line.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::listener::Peer;
use super::pages::{error_page, page};
use super::{need_login, Page, Web};

/// Opens a BBS session for a web user: their callsign (checked by the web's login) and
/// address; the stream to the session, or the line that refuses it (the BBS's caps). Made
/// by the daemon, which owns the BBS ports.
pub type OpenTerminal = Arc<
    dyn Fn(qtc_callsign::Callsign, SocketAddr) -> Result<DuplexStream, &'static str> + Send + Sync,
>;

/// The longest line a frame from the browser may carry.
const MAX_FRAME: usize = 4096;

/// One read of the session's output.
const READ: usize = 4096;

/// The script, served from here (no other origin).
const SCRIPT: &str = include_str!("static/terminal.js");

/// `GET /terminal`.
pub async fn show(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_login(&web, &headers).await?;
    let body = "<p>Your BBS session, as on telnet: type a command and press Enter (<code>H</code> \
                for help, <code>B</code> to leave). <span id=\"state\">connecting…</span></p>\
                <pre id=\"screen\" class=\"terminal\"></pre>\
                <form id=\"line\" class=\"terminal\"><input id=\"input\" autocomplete=\"off\" \
                autocapitalize=\"off\" spellcheck=\"false\" aria-label=\"Command\">\
                <button>Send</button></form><script src=\"/terminal.js\"></script>";
    Ok(Html(page(&s, "Terminal", body)).into_response())
}

/// `GET /terminal.js`.
pub async fn script() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/javascript; charset=utf-8"),
        )],
        SCRIPT,
    )
        .into_response()
}

/// `GET /terminal/ws`: the WebSocket, for a logged-in web user from this dashboard's page.
pub async fn ws(
    State(web): State<Arc<Web>>,
    ConnectInfo(Peer(peer, long_lived)): ConnectInfo<Peer>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Page {
    let refuse = |status: StatusCode, why: &str| (status, Html(error_page(why))).into_response();
    let Some(s) = web.session(&headers).await else {
        tracing::warn!(%peer, "web: terminal refused: not logged in");
        return Err(refuse(StatusCode::FORBIDDEN, "Not logged in."));
    };
    if !same_origin(&headers) {
        tracing::warn!(%peer, call = %s.call, "web: terminal refused: from another site (Origin)");
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "The terminal opens from this dashboard only.",
        ));
    }
    if web.throttle.locked_out(peer.ip(), crate::clock::now()) {
        return Err(refuse(StatusCode::TOO_MANY_REQUESTS, super::LOCKED_OUT));
    }
    let call = s.call;
    // A BBS account's session is a forwarding session, which has no place in a browser.
    let user = super::store(&web, move |st| qtc_mail::MessageStore::user(st, call)).await?;
    if user.is_some_and(|u| u.bbs) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "A BBS account forwards; it has no terminal.",
        ));
    }
    let stream = (web.terminal)(call, peer).map_err(|why| {
        tracing::warn!(%peer, call = %s.call, "web: terminal refused: {}", why.trim());
        refuse(StatusCode::TOO_MANY_REQUESTS, why.trim())
    })?;
    tracing::info!(%peer, call = %s.call, "web: terminal opened");
    // The session's own timers govern it from now on, not the web's idle timeout.
    long_lived.set();
    Ok(upgrade
        .max_message_size(MAX_FRAME)
        .max_frame_size(MAX_FRAME)
        .on_upgrade(move |socket| bridge(socket, stream))
        .into_response())
}

/// Whether a browser's `Origin` names the host the request came to (a page of another site
/// may open a WebSocket here; SameSite=Strict keeps the cookie from it, and this refuses it
/// outright). A client that sends no `Origin` is no browser and holds the cookie itself.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin = origin.to_str().ok().and_then(|o| {
        o.strip_prefix("http://")
            .or_else(|| o.strip_prefix("https://"))
    });
    matches!((origin, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h))
}

/// Moves the session's output to the browser (as text, as fast as the browser reads) and the
/// browser's lines to the session, until either side ends.
async fn bridge(mut ws: WebSocket, stream: DuplexStream) {
    let (mut from_bbs, mut to_bbs) = tokio::io::split(stream);
    let mut buf = vec![0u8; READ];
    let mut held = Vec::new();
    loop {
        tokio::select! {
            n = from_bbs.read(&mut buf) => {
                let Ok(n @ 1..) = n else { break };
                held.extend_from_slice(&buf[..n]);
                let text = take_text(&mut held);
                if !text.is_empty() && ws.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            m = ws.recv() => {
                let line = match m {
                    Some(Ok(Message::Text(t))) => t.as_bytes().to_vec(),
                    Some(Ok(Message::Binary(b))) => b.to_vec(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                };
                if to_bbs.write_all(&typed(&line)).await.is_err() {
                    break;
                }
            }
        }
    }
    tracing::info!("web: terminal closed");
    let _ = ws.send(Message::Close(None)).await;
}

/// What a frame from the browser types: its lines, each ended in CR as a terminal sends them.
fn typed(frame: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 1);
    for line in frame.split(|&b| b == b'\n') {
        out.extend(line.iter().filter(|&&b| b != b'\r'));
        out.push(b'\r');
    }
    out
}

/// The session's output read so far, as text: UTF-8 as it is (a character split between two
/// reads waits for its end), any other bytes as ISO-8859-1.
fn take_text(held: &mut Vec<u8>) -> String {
    let whole = qtc_mail::text::complete_utf8(held);
    let text = qtc_mail::charset::decode_8bit(&held[..whole]);
    held.drain(..whole);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_types_lines_and_text_waits_for_whole_characters() {
        assert_eq!(typed(b"LL 1"), b"LL 1\r");
        assert_eq!(typed(b"SP N0A\r\nhello"), b"SP N0A\rhello\r");
        let mut held = "Grü".as_bytes().to_vec();
        held.extend_from_slice(&"ß".as_bytes()[..1]);
        assert_eq!(take_text(&mut held), "Grü");
        held.extend_from_slice(&"ß".as_bytes()[1..]);
        assert_eq!(take_text(&mut held), "ß");
        let mut latin1 = b"K\xf6ln\r".to_vec();
        assert_eq!(take_text(&mut latin1), "Köln\r");
    }

    #[test]
    fn only_this_dashboard_may_open_it() {
        let h = |origin: Option<&str>| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
            if let Some(o) = origin {
                h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
            }
            h
        };
        assert!(same_origin(&h(Some("http://127.0.0.1:8080"))));
        assert!(!same_origin(&h(Some("http://evil.example"))));
        assert!(!same_origin(&h(Some("null"))));
        assert!(same_origin(&h(None)));
    }
}
