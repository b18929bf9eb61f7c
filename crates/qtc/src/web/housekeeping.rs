//! The sysop's `/housekeeping` page: the daily run's hour and the lifetimes in force, the last
//! runs since start (when, who started it, how long, what it did) and a *Run now* button (the
//! same run as `qtc ctl housekeep`; the page waits for it and shows its summary line).

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};

use super::pages::{csrf, esc, page, result};
use super::{need_sysop, need_sysop_csrf, CsrfOnly, Page, Web};
use crate::health::time;

/// `GET /housekeeping`.
pub async fn show(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_sysop(&web, &headers).await?;
    let h = &web.housekeeper;
    let set = h.settings();
    let l = set.lifetimes;
    let next = crate::clock::unix_now()
        + crate::housekeeping::secs_until(crate::clock::unix_now(), set.hour);
    let days = |d: u32| {
        if d == 0 {
            "forever".to_string()
        } else {
            format!("{d} days")
        }
    };
    let mut b = format!(
        "<p>Daily at {:02}:00 UTC; next run {}. Lifetimes: personal mail read or forwarded \
         {}, unread {}; bulletins {}; killed messages {}; BIDs {}; partial transfers {} \
         (<a href=\"/config#housekeeping\">change</a>).</p>",
        set.hour,
        time(next),
        days(l.personal_read),
        days(l.personal_unread),
        days(l.bulletin),
        days(l.killed),
        days(l.bid),
        days(l.partial),
    );
    if h.running() {
        b.push_str("<p class=\"msg\" id=\"running\">A run is going now.</p>");
    }
    let _ = write!(
        b,
        "<form method=\"post\" action=\"/housekeeping\">{}<button id=\"run\">Run now</button></form>\
         <h2>Last runs since start</h2>",
        csrf(&s)
    );
    let runs = h.runs();
    if runs.is_empty() {
        b.push_str("<p>None since start.</p>");
    } else {
        b.push_str(
            "<table id=\"runs\" class=\"cards\"><tr><th>Ended</th><th>Started by</th><th>Took</th>\
             <th>Result</th></tr>",
        );
        for r in &runs {
            let class = if r.ok { "" } else { " class=\"err\"" };
            let _ = write!(
                b,
                "<tr><td data-label=\"Ended\">{}</td><td data-label=\"By\">{}</td>\
                 <td data-label=\"Took\">{:.1} s</td><td data-label=\"Result\"{class}>{}</td></tr>",
                time(r.at),
                esc(&r.by),
                r.took.as_secs_f64(),
                esc(&r.line)
            );
        }
        b.push_str("</table>");
    }
    Ok(Html(page(&s, "Housekeeping", &b)).into_response())
}

/// `POST /housekeeping`: runs it now and waits for it.
pub async fn run(State(web): State<Arc<Web>>, headers: HeaderMap, Form(f): Form<CsrfOnly>) -> Page {
    let s = need_sysop_csrf(&web, &headers, &f.csrf).await?;
    tracing::info!(by = %s.call, "web: housekeeping run now");
    let line = match web.housekeeper.run_now(&format!("web {}", s.call)).await {
        Ok(line) => format!("ok: {line}"),
        Err(e) => format!("error: {e}"),
    };
    Ok(Html(result(&s, "Housekeeping", &line, "/housekeeping")).into_response())
}
