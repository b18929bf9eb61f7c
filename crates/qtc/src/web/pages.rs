//! The dashboard's HTML: server-rendered, one small style sheet inline; no JavaScript but the
//! terminal's (`/terminal.js`).

use std::fmt::Write as _;

use qtc_callsign::Callsign;

use super::session::WebSession;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

// Narrow screens: the header wraps, tables scroll sideways inside their own box (the page never
// gets wider than the screen), forms take the width they are given; a table of class `cards`
// (one row per thing, buttons in it) becomes one card per row, each cell labelled, so nothing
// is out of sight to the right.
const STYLE: &str = "*{box-sizing:border-box}\
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#f6f6f4}\
header{background:#1d3557;color:#fff;padding:.6em 1em;display:flex;flex-wrap:wrap;gap:.4em 1.2em;\
align-items:center;width:100%}\
header a{color:#fff;text-decoration:none}header b{font-size:1.1em}header .me{margin-left:auto}\
main{padding:1em;max-width:70em}\
table{border-collapse:collapse;margin-bottom:1.2em;display:block;overflow-x:auto;\
width:max-content;max-width:100%}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.92em;vertical-align:top;\
background:#fff}\
th{background:#e9ecef}td.subj{min-width:12em}\
pre{background:#fff;border:1px solid #ccc;padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere}\
form.inline{display:inline}button{cursor:pointer}.msg{padding:.6em;background:#fff;border:1px solid #ccc}\
.err{color:#a00}input,select,textarea{max-width:100%;font:inherit}textarea{width:40em;height:14em}\
form.filters{display:flex;flex-wrap:wrap;gap:.4em .8em;align-items:end;margin-bottom:1em}\
form.filters label{display:flex;flex-direction:column;font-size:.85em}\
form.filters input{width:8em}.nav{display:flex;gap:1em;margin:.5em 0 1em}\
.chart{max-width:100%;height:auto;background:#fff;border:1px solid #ccc}\
.danger{background:#a00;color:#fff;border:1px solid #700;padding:.3em .8em}\
form.config{background:#fff;border:1px solid #ccc;padding:.6em;margin-bottom:1em;max-width:100%}\
form.config .fields{display:flex;flex-wrap:wrap;gap:.5em .8em}\
form.config label{display:flex;flex-direction:column;font-size:.85em;max-width:100%}\
form.config label.flag{flex-direction:row;align-items:center;gap:.3em}\
pre.terminal{background:#111;color:#e8e8e8;min-height:20em;max-height:70vh;overflow-y:auto;\
font-family:ui-monospace,monospace;font-size:.9em}\
form.terminal{display:flex;gap:.4em}form.terminal input{flex:1;font-family:ui-monospace,monospace}\
@media(max-width:480px){header{gap:.3em .9em;padding:.5em .8em}main{padding:.6em}h1{font-size:1.5em}\
table.cards,.cards tbody,.cards tr,.cards td{display:block;width:100%}.cards tr:first-child{display:none}\
.cards tr{margin-bottom:.8em;border:1px solid #ccc}.cards td{border:none;border-bottom:1px solid #eee}\
.cards td[data-label]::before{content:attr(data-label) \": \";font-weight:600}}";

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{} - qtc</title>\
         <style>{STYLE}</style></head><body>",
        esc(title)
    )
}

pub(super) fn csrf(s: &WebSession) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(&s.csrf)
    )
}

/// A page of the logged-in user: the header's links are the ones this user may follow.
pub(super) fn page(s: &WebSession, title: &str, body: &str) -> String {
    let links = if s.sysop() {
        "<a href=\"/\">Overview</a><a href=\"/status\">Status</a>\
         <a href=\"/forwarding\">Forwarding</a><a href=\"/messages\">Messages</a>\
         <a href=\"/compose\">Compose</a><a href=\"/users\">Users</a>\
         <a href=\"/config\">Config</a><a href=\"/housekeeping\">Housekeeping</a>\
         <a href=\"/wp\">WP</a><a href=\"/terminal\">Terminal</a>"
    } else {
        "<a href=\"/messages\">Mail</a><a href=\"/compose\">Compose</a>\
         <a href=\"/terminal\">Terminal</a>"
    };
    format!(
        "{}<header><b>qtc</b>{links}<span class=\"me\">{}</span>\
         <form class=\"inline\" method=\"post\" action=\"/logout\">{}<button>Log out</button></form>\
         </header><main><h1>{}</h1>{body}</main></body></html>",
        head(title),
        esc(&s.call.to_string()),
        csrf(s),
        esc(title)
    )
}

/// One line of someone else's text (a subject, a callsign from the wire), safe to show.
pub(super) fn line(b: &[u8]) -> String {
    esc(&qtc_mail::text::visible_line(&String::from_utf8_lossy(b)))
}

/// A subject as the BBS shows it: RFC 2047 encoded words (Winlink's) decoded, safe to show.
pub(super) fn subject(b: &[u8]) -> String {
    esc(&qtc_mail::text::visible_line(
        &qtc_mail::charset::decode_header(b),
    ))
}

/// A page that asks again before `action` is done: the same form with `confirm=yes`.
pub(super) fn confirm(
    s: &WebSession,
    title: &str,
    question: &str,
    action_url: &str,
    fields: &[(&str, &str)],
    back: &str,
) -> String {
    let mut hidden = String::new();
    for (k, v) in fields {
        let _ = write!(
            hidden,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            esc(k),
            esc(v)
        );
    }
    page(
        s,
        title,
        &format!(
            "<p class=\"msg\" id=\"question\">{}</p>\
             <form method=\"post\" action=\"{}\">{}{hidden}\
             <input type=\"hidden\" name=\"confirm\" value=\"yes\">\
             <button class=\"danger\">Yes, do it</button> <a href=\"{}\">No, go back</a></form>",
            esc(question),
            esc(action_url),
            csrf(s),
            esc(back)
        ),
    )
}

/// The login form; `token` is its CSRF token (also in the pre-login cookie).
pub fn login(token: &str, error: Option<&str>) -> String {
    let err = error.map_or(String::new(), |e| {
        format!("<p class=\"err\">{}</p>", esc(e))
    });
    format!(
        "{}<header><b>qtc</b></header><main><h1>Log in</h1><p>Your BBS callsign and password.</p>{err}\
         <form method=\"post\" action=\"/login\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <p><label>Callsign <input name=\"call\" autocomplete=\"username\" required></label></p>\
         <p><label>Password <input name=\"password\" type=\"password\" autocomplete=\"current-password\" required></label></p>\
         <p><button>Log in</button></p></form></main></body></html>",
        head("Login"),
        esc(token)
    )
}

/// A page with one message (an error) and no session.
pub fn error_page(text: &str) -> String {
    format!(
        "{}<header><b>qtc</b></header><main><p class=\"err\">{}</p>\
         <p><a href=\"/\">Back</a></p></main></body></html>",
        head("Error"),
        esc(text)
    )
}

/// The outcome of an action, with a link back.
pub fn result(s: &WebSession, title: &str, line: &str, back: &str) -> String {
    page(
        s,
        title,
        &format!(
            "<p class=\"msg\" id=\"result\">{}</p><p><a href=\"{}\">Back</a></p>",
            esc(line),
            esc(back)
        ),
    )
}

/// The station, its listeners and the traffic chart.
pub fn overview(s: &WebSession, call: Callsign, listeners: &[String], chart: &str) -> String {
    let mut b = format!(
        "<p>BBS {call} running qtc {}</p><h2>Traffic, last {} days</h2>{chart}",
        env!("CARGO_PKG_VERSION"),
        super::chart::DAYS
    );
    b.push_str("<h2>Listening</h2><table><tr><th>Port</th></tr>");
    for l in listeners {
        let _ = write!(b, "<tr><td>{}</td></tr>", esc(l));
    }
    b.push_str(
        "</table><p><a href=\"/forwarding\">Forwarding</a> · \
         <a href=\"/metrics\">Metrics</a> (Prometheus text)</p>",
    );
    page(s, "Overview", &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
