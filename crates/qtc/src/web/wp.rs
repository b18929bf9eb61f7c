//! The sysop's `/wp` page: the white pages (each callsign's home BBS, learned from R: lines
//! and users' `NH`), in callsign order, 50 to a page, searched by a callsign's start and by a
//! home BBS. A page reads a bounded part of the table however large it is: the callsign is
//! its key; a home BBS is matched while walking it, at most [`SCAN`] entries per page, and the
//! page says where it stopped.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};

use super::mail::urlencode;
use super::pages::{esc, page};
use super::{need_sysop, store, Page, Web};
use crate::health::time;

/// Entries on one page.
const PAGE: usize = 50;
/// Entries looked at per page at most when a home BBS is searched for.
const SCAN: usize = 2000;

/// `GET /wp?call=N0A&home=GBR&after=N0AZZ`.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct WpQuery {
    call: String,
    home: String,
    after: String,
}

/// `GET /wp`.
pub async fn list(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Query(q): Query<WpQuery>,
) -> Page {
    let s = need_sysop(&web, &headers).await?;
    let (call, home, after) = (
        q.call.trim().to_string(),
        q.home.trim().to_string(),
        q.after.trim().to_ascii_uppercase(),
    );
    let found = {
        let (call, home, after) = (call.clone(), home.clone(), after.clone());
        store(&web, move |st| {
            st.white_pages(&call, &home, &after, PAGE, SCAN)
        })
        .await?
    };
    let mut b = format!(
        "<form class=\"filters\" method=\"get\" action=\"/wp\">\
         <label>Callsign starts with<input name=\"call\" value=\"{}\"></label>\
         <label>Home BBS holds<input name=\"home\" value=\"{}\"></label>\
         <button>Search</button> <a href=\"/wp\">Clear</a></form>",
        esc(&call),
        esc(&home)
    );
    if found.entries.is_empty() {
        b.push_str("<p id=\"empty\">No entries here.</p>");
    } else {
        b.push_str(
            "<table id=\"wp\" class=\"cards\"><tr><th>Call</th><th>Home BBS</th>\
             <th>Learned</th></tr>",
        );
        for e in &found.entries {
            let how = if e.by_user {
                "set by the user (NH)"
            } else {
                "from an R: line"
            };
            let when = if e.updated > 0 {
                format!("{}, {how}", time(e.updated))
            } else {
                how.to_string()
            };
            let _ = write!(
                b,
                "<tr><td data-label=\"Call\">{}</td><td data-label=\"Home\">{}</td>\
                 <td data-label=\"Learned\">{when}</td></tr>",
                esc(&qtc_mail::text::visible_line(&e.call)),
                esc(&qtc_mail::text::visible_line(&e.home)),
            );
        }
        b.push_str("</table>");
    }
    if let Some(next) = &found.next {
        if found.entries.len() < PAGE {
            let _ = write!(b, "<p>Searched up to {}.</p>", esc(next));
        }
        let _ = write!(
            b,
            "<p class=\"nav\"><a id=\"next\" href=\"/wp?call={}&amp;home={}&amp;after={}\">Next »</a></p>",
            urlencode(&call),
            urlencode(&home),
            urlencode(next)
        );
    }
    Ok(Html(page(&s, "White pages", &b)).into_response())
}
