//! The dashboard's HTML: server-rendered, no JavaScript, one small style sheet inline.

use std::fmt::Write as _;

use qtc_mail::{Message, MessageHeader, MsgStatus, User, Utc};

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

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#f6f6f4}\
header{background:#1d3557;color:#fff;padding:.6em 1em;display:flex;gap:1.5em;align-items:center}\
header a{color:#fff;text-decoration:none}header b{font-size:1.1em}\
main{padding:1em;max-width:70em}table{border-collapse:collapse;background:#fff;margin-bottom:1.2em}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.92em}\
th{background:#e9ecef}pre{background:#fff;border:1px solid #ccc;padding:.6em;white-space:pre-wrap}\
form.inline{display:inline}button{cursor:pointer}.msg{padding:.6em;background:#fff;border:1px solid #ccc}\
.err{color:#a00}";

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{} - qtc</title>\
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

pub(super) fn page(s: &WebSession, title: &str, body: &str) -> String {
    format!(
        "{}<header><b>qtc</b><a href=\"/\">Overview</a><a href=\"/status\">Status</a><a href=\"/messages\">Messages</a>\
         <a href=\"/users\">Users</a><span style=\"flex:1\"></span><span>{}</span>\
         <form class=\"inline\" method=\"post\" action=\"/logout\">{}<button>Log out</button></form>\
         </header><main><h1>{}</h1>{body}</main></body></html>",
        head(title),
        esc(&s.call),
        csrf(s),
        esc(title)
    )
}

/// The login form; `token` is its CSRF token (also in the pre-login cookie).
pub fn login(token: &str, error: Option<&str>) -> String {
    let err = error.map_or(String::new(), |e| {
        format!("<p class=\"err\">{}</p>", esc(e))
    });
    format!(
        "{}<header><b>qtc</b></header><main><h1>Sysop login</h1>{err}\
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

/// Listeners, partners with their queues and "forward now", sessions in progress.
pub fn overview(
    s: &WebSession,
    call: &str,
    listeners: &[String],
    partners: &[(String, String, u64)],
    active: &[(String, String)],
) -> String {
    let mut b = format!(
        "<p>BBS {} running qtc {}</p>",
        esc(call),
        env!("CARGO_PKG_VERSION")
    );
    b.push_str("<h2>Listening</h2><table><tr><th>Port</th></tr>");
    for l in listeners {
        let _ = write!(b, "<tr><td>{}</td></tr>", esc(l));
    }
    b.push_str("</table><h2>Forwarding partners</h2>");
    if partners.is_empty() {
        b.push_str("<p>None configured.</p>");
    } else {
        b.push_str("<table><tr><th>Partner</th><th>Connect</th><th>Queued</th><th></th></tr>");
        for (p, how, n) in partners {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{n}</td><td>\
                 <form class=\"inline\" method=\"post\" action=\"/forward\">{}\
                 <input type=\"hidden\" name=\"partner\" value=\"{}\">\
                 <button>Forward now</button></form></td></tr>",
                esc(p),
                esc(how),
                csrf(s),
                esc(p)
            );
        }
        b.push_str("</table>");
    }
    b.push_str("<h2>Forwarding sessions</h2>");
    if active.is_empty() {
        b.push_str("<p>None in progress.</p>");
    } else {
        b.push_str("<table><tr><th>Partner</th><th>Session</th></tr>");
        for (p, what) in active {
            let _ = write!(b, "<tr><td>{}</td><td>{}</td></tr>", esc(p), esc(what));
        }
        b.push_str("</table>");
    }
    b.push_str("<p><a href=\"/metrics\">Metrics</a> (Prometheus text)</p>");
    page(s, "Overview", &b)
}

/// The newest messages.
pub fn messages(s: &WebSession, list: &[MessageHeader]) -> String {
    let mut b = String::from(
        "<table><tr><th>#</th><th>Type</th><th>Status</th><th>Size</th><th>To</th><th>@BBS</th>\
         <th>From</th><th>Date</th><th>Subject</th></tr>",
    );
    for h in list.iter().rev() {
        let _ = write!(
            b,
            "<tr><td><a href=\"/messages/{n}\">{n}</a></td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><a href=\"/messages/{n}\">{}</a></td></tr>",
            h.kind,
            h.status,
            h.size,
            esc(&h.to),
            esc(&h.at),
            esc(&h.from),
            Utc::from_unix(h.created).rfc3339(),
            esc(&String::from_utf8_lossy(&h.subject)),
            n = h.number,
        );
    }
    b.push_str("</table>");
    if list.is_empty() {
        b.push_str("<p>No messages.</p>");
    }
    page(s, "Messages (newest 100)", &b)
}

/// One message with hold, release and kill buttons.
pub fn message(s: &WebSession, m: &Message) -> String {
    let h = &m.header;
    let mut b = format!(
        "<table><tr><th>Number</th><td>{}</td></tr><tr><th>Type</th><td>{}</td></tr>\
         <tr><th>Status</th><td id=\"status\">{}</td></tr><tr><th>To</th><td>{}{}{}</td></tr>\
         <tr><th>From</th><td>{}</td></tr><tr><th>BID</th><td>{}</td></tr>\
         <tr><th>Date</th><td>{}</td></tr><tr><th>Subject</th><td>{}</td></tr></table>",
        h.number,
        h.kind,
        h.status,
        esc(&h.to),
        if h.at.is_empty() { "" } else { "@" },
        esc(&h.at),
        esc(&h.from),
        esc(&h.bid),
        Utc::from_unix(h.created).rfc3339(),
        esc(&String::from_utf8_lossy(&h.subject)),
    );
    let mut text = String::from_utf8_lossy(&m.rlines).into_owned();
    text.push_str(&String::from_utf8_lossy(&m.body));
    let _ = write!(b, "<pre>{}</pre>", esc(&text.replace('\r', "")));
    for (action, label, show) in [
        (
            "hold",
            "Hold",
            !matches!(h.status, MsgStatus::Held | MsgStatus::Killed),
        ),
        ("release", "Release", h.status == MsgStatus::Held),
        ("kill", "Kill", h.status != MsgStatus::Killed),
    ] {
        if show {
            let _ = write!(
                b,
                "<form class=\"inline\" method=\"post\" action=\"/messages/{}\">{}\
                 <input type=\"hidden\" name=\"action\" value=\"{action}\">\
                 <button>{label}</button></form> ",
                h.number,
                csrf(s)
            );
        }
    }
    page(s, &format!("Message #{}", h.number), &b)
}

/// Users, with delete buttons and the add form.
pub fn users(s: &WebSession, list: &[User]) -> String {
    let mut b = String::from(
        "<table><tr><th>Call</th><th>Sysop</th><th>BBS</th><th>Name</th><th>Home BBS</th><th></th></tr>",
    );
    for u in list {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>\
             <form class=\"inline\" method=\"post\" action=\"/users/{}\">{}\
             <input type=\"hidden\" name=\"action\" value=\"delete\">\
             <button>Delete</button></form></td></tr>",
            esc(&u.call),
            if u.sysop { "yes" } else { "" },
            if u.bbs { "yes" } else { "" },
            esc(&u.name),
            esc(&u.home_bbs),
            esc(&u.call),
            csrf(s)
        );
    }
    let _ = write!(
        b,
        "</table><h2>Add a user</h2><form method=\"post\" action=\"/users\">{}\
         <p><label>Callsign <input name=\"call\" required></label> \
         <label>Password <input name=\"password\" type=\"password\" autocomplete=\"new-password\" required></label></p>\
         <p><label><input type=\"checkbox\" name=\"sysop\" value=\"1\"> sysop</label> \
         <label><input type=\"checkbox\" name=\"bbs\" value=\"1\"> BBS (forwarding partner)</label></p>\
         <p><button>Add</button></p></form>",
        csrf(s)
    );
    page(s, "Users", &b)
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
