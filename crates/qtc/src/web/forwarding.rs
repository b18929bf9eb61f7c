//! The sysop's Forwarding page: each partner's queue, how it connects, its last session's
//! result and time, the next scheduled call, its traffic since start, a Forward now button,
//! and its recent sessions; the sessions in progress. From the health model (crate::health).

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};

use super::pages::{csrf, esc, page};
use super::{need_sysop, store_down, Page, Web};
use crate::health::{bytes, time, LastReport};

/// `GET /forwarding`.
pub async fn show(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_sysop(&web, &headers).await?;
    let h = crate::health::gather(&web.health)
        .await
        .map_err(|_| store_down())?;
    let csrf = csrf(&s);
    let mut b = String::new();
    if h.partners.is_empty() {
        b.push_str("<p>No partners configured.</p>");
    } else {
        // What a sysop looks for first (the button, the queue, the last result) comes first:
        // on a phone it is what fits.
        b.push_str(
            "<table id=\"partners\" class=\"cards\"><tr><th>Partner</th><th>Queued</th>\
             <th>Last session</th><th>Next call</th><th>Connects</th><th>Bytes in / out</th></tr>",
        );
        for p in &h.partners {
            let how = web
                .fwd
                .partners()
                .iter()
                .find(|c| c.call.to_string() == p.call)
                .map_or("not configured".to_string(), |c| c.connect.to_string());
            let last = p
                .last
                .as_ref()
                .map_or("none since start".to_string(), result);
            let next = match (p.next_call, p.interval) {
                (Some(t), _) => time(t),
                (None, Some(_)) => "when mail waits".to_string(),
                (None, None) => "on demand".to_string(),
            };
            let _ = write!(
                b,
                "<tr><td><b>{c}</b> <form class=\"inline\" method=\"post\" action=\"/forward\">\
                 {csrf}<input type=\"hidden\" name=\"partner\" value=\"{c}\">\
                 <button>Forward now</button></form></td><td data-label=\"Queued\">{}</td>\
                 <td data-label=\"Last\">{last}</td><td data-label=\"Next call\">{next}</td>\
                 <td data-label=\"Connects\">{}</td><td data-label=\"Bytes in / out\">{} / {}</td>\
                 </tr>",
                p.queued,
                esc(&how),
                bytes(p.bytes_in),
                bytes(p.bytes_out),
                c = esc(&p.call),
            );
        }
        b.push_str("</table>");
    }
    b.push_str("<h2>In progress</h2>");
    if h.sessions.is_empty() {
        b.push_str("<p>No forwarding session now.</p>");
    } else {
        b.push_str(&super::status::sessions(&h.sessions));
    }
    b.push_str("<h2>History since start</h2>");
    let mut any = false;
    for p in h.partners.iter().filter(|p| !p.history.is_empty()) {
        any = true;
        let _ = write!(
            b,
            "<h3>{}</h3><table><tr><th>Ended</th><th>Role</th><th>Received</th><th>Sent</th>\
             <th>Refused</th><th>Result</th></tr>",
            esc(&p.call)
        );
        for l in &p.history {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                time(l.at),
                l.role,
                l.received,
                l.sent,
                l.refused,
                outcome(l)
            );
        }
        b.push_str("</table>");
    }
    if !any {
        b.push_str("<p>No sessions since start.</p>");
    }
    Ok(Html(page(&s, "Forwarding", &b)).into_response())
}

/// A session's time and result line.
fn result(l: &LastReport) -> String {
    format!("{}<br>{}", time(l.at), outcome(l))
}

/// A session's result line, red when it failed.
fn outcome(l: &LastReport) -> String {
    let class = if l.ok { "" } else { " class=\"err\"" };
    format!("<span{class}>{}</span>", esc(&l.result))
}
