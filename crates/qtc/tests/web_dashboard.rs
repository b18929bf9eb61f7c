//! The sysop's web dashboard and /metrics over real HTTP on loopback: login, CSRF refusal,
//! killing a message, forward now.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::{Daemon, PATIENCE};

#[derive(Debug)]
struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    /// The value of the first `Set-Cookie` for `name`.
    fn cookie(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            if !k.eq_ignore_ascii_case("set-cookie") {
                return None;
            }
            let v = v.trim();
            let first = v.split(';').next()?;
            let (n, val) = first.split_once('=')?;
            (n == name).then(|| val.to_string())
        })
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    /// The CSRF token in the page's first form.
    fn csrf(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .expect("a csrf field")
            + 19;
        self.body[at..at + 32].to_string()
    }
}

/// One HTTP/1.1 request with `Connection: close`.
fn http(port: u16, method: &str, path: &str, cookie: &str, form: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    if !cookie.is_empty() {
        req.push_str(&format!("Cookie: {cookie}\r\n"));
    }
    if method == "POST" {
        req.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            form.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(form);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap();
    Reply {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// Logs in through the form; returns the session cookie header value.
fn login(port: u16, call: &str, pw: &str) -> Result<String, Reply> {
    let form = http(port, "GET", "/login", "", "");
    assert_eq!(form.status, 200, "{}", form.body);
    let pre = form.cookie("qtc_login").expect("a login cookie");
    let token = form.csrf();
    assert_eq!(pre, token);
    let r = http(
        port,
        "POST",
        "/login",
        &format!("qtc_login={pre}"),
        &format!("csrf={token}&call={call}&password={pw}"),
    );
    match r.cookie("qtc_session") {
        Some(id) if r.status == 303 => {
            let set = r.header("set-cookie").unwrap();
            assert!(
                set.contains("HttpOnly") && set.contains("SameSite=Strict"),
                "{set}"
            );
            assert_eq!(id.len(), 32);
            Ok(format!("qtc_session={id}"))
        }
        _ => Err(r),
    }
}

fn post_message(d: &Daemon) {
    let mut c = d.login("N0USR", "pw");
    c.send("SP N0OTH");
    c.expect("Subject:");
    c.send("web <test>");
    c.expect("/EX");
    c.send("hello from telnet");
    c.send("/EX");
    c.expect("de N0CALL>");
    c.send("B");
}

#[test]
fn login_csrf_kill_and_metrics() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    // Without a session every page sends you to the login form.
    let r = http(port, "GET", "/", "", "");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location").as_deref(), Some("/login"));
    // Wrong password, a non-sysop, and a login post without its cookie are refused.
    assert_eq!(login(port, "N0SYS", "wrong").unwrap_err().status, 403);
    assert_eq!(login(port, "N0USR", "pw").unwrap_err().status, 403);
    let r = http(
        port,
        "POST",
        "/login",
        "",
        "csrf=00&call=N0SYS&password=root",
    );
    assert_eq!(r.status, 403);
    let cookie = login(port, "n0sys", "root").unwrap();

    let home = http(port, "GET", "/", &cookie, "");
    assert_eq!(home.status, 200);
    assert!(home.body.contains("<h1>Overview</h1>"), "{}", home.body);
    assert!(!home.body.contains("<script"), "no JavaScript");
    let csrf = home.csrf();

    post_message(&d);
    let list = http(port, "GET", "/messages", &cookie, "");
    assert!(list.body.contains("web &lt;test&gt;"), "{}", list.body);
    let one = http(port, "GET", "/messages/1", &cookie, "");
    assert!(one.body.contains("hello from telnet"), "{}", one.body);
    assert_eq!(one.csrf(), csrf, "one token per session");

    // A form post with a wrong or missing token is refused and changes nothing.
    let r = http(
        port,
        "POST",
        "/messages/1",
        &cookie,
        "csrf=0123456789abcdef0123456789abcdef&action=kill",
    );
    assert_eq!(r.status, 403);
    let r = http(port, "POST", "/messages/1", &cookie, "action=kill");
    assert!(r.status >= 400, "{}", r.status);
    assert!(
        d.messages()[0].contains("\"status\":\"N\""),
        "{:?}",
        d.messages()
    );
    // Without the session cookie the right token is not enough either.
    let r = http(
        port,
        "POST",
        "/messages/1",
        "",
        &format!("csrf={csrf}&action=kill"),
    );
    assert_eq!(r.status, 403);

    let r = http(
        port,
        "POST",
        "/messages/1",
        &cookie,
        &format!("csrf={csrf}&action=hold"),
    );
    assert!(r.body.contains("hold done"), "{}", r.body);
    assert!(d.messages()[0].contains("\"status\":\"H\""));
    let r = http(
        port,
        "POST",
        "/messages/1",
        &cookie,
        &format!("csrf={csrf}&action=release"),
    );
    assert!(r.body.contains("release done"), "{}", r.body);
    let r = http(
        port,
        "POST",
        "/messages/1",
        &cookie,
        &format!("csrf={csrf}&action=kill"),
    );
    assert_eq!(r.status, 200);
    assert!(r.body.contains("kill done"), "{}", r.body);
    assert!(
        d.messages()[0].contains("\"status\":\"K\""),
        "{:?}",
        d.messages()
    );

    // Users: add one, see it, delete it.
    let r = http(
        port,
        "POST",
        "/users",
        &cookie,
        &format!("csrf={csrf}&call=n0new&password=s3cret&bbs=1"),
    );
    assert!(r.body.contains("added N0NEW"), "{}", r.body);
    let users = http(port, "GET", "/users", &cookie, "");
    assert!(users.body.contains("<td>N0NEW</td>"), "{}", users.body);
    let r = http(
        port,
        "POST",
        "/users/N0NEW",
        &cookie,
        &format!("csrf={csrf}&action=delete"),
    );
    assert!(r.body.contains("deleted N0NEW"), "{}", r.body);

    let m = http(port, "GET", "/metrics", "", "");
    assert_eq!(m.status, 200);
    assert!(m
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    for line in [
        "qtc_login_failures_total 2",
        "qtc_messages{type=\"P\",status=\"K\"} 1",
        "qtc_sessions{kind=\"telnet\"} 0",
        "qtc_sessions{kind=\"forward\"} 0",
        "qtc_store_up 1",
    ] {
        assert!(
            m.body.lines().any(|l| l == line),
            "no {line:?} in\n{}",
            m.body
        );
    }

    // The telnet listener counted the sessions' bytes both ways (the HTTP scrapes are not on it).
    for dir in ["in", "out"] {
        let series = format!(
            "qtc_port_bytes_total{{port=\"telnet:127.0.0.1:{}\",direction=\"{dir}\"}}",
            d.port
        );
        assert!(d.metric(&series).is_some_and(|n| n > 0), "{series}");
    }

    // Logging out ends the session.
    let r = http(port, "POST", "/logout", &cookie, &format!("csrf={csrf}"));
    assert_eq!(r.status, 303);
    assert_eq!(http(port, "GET", "/", &cookie, "").status, 303);
}

#[test]
fn forward_now_calls_the_partner() {
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0AAA\"\nroutes = [\"N0AAA\"]\n",
    );
    let a = Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", ""), ("N0SYS", "root", "--sysop")],
        &format!(
            "[web]\nlisten = \"127.0.0.1:0\"\n[[partner]]\ncallsign = \"N0BBB\"\n\
             connect = \"tcp:127.0.0.1:{}\"\npassword = \"fwdpw\"\nroutes = [\"N0BBB\", \"WW\"]\n",
            b.fwd_port.unwrap()
        ),
    );
    let mut c = a.connect();
    c.expect("Callsign:");
    c.send("N0USR");
    c.expect("Password:");
    c.send("pw");
    c.expect(">\r\n");
    c.send("SB ALL @ WW");
    c.expect("Subject:");
    c.send("via the web");
    c.expect("Enter message");
    c.send("bulletin body");
    c.send("/EX");
    c.expect(">\r\n");

    let port = a.web_port();
    let cookie = login(port, "N0SYS", "root").unwrap();
    let home = http(port, "GET", "/", &cookie, "");
    assert!(home.body.contains("<td>N0BBB</td>"), "{}", home.body);
    assert!(
        home.body.contains("<td>1</td>"),
        "one queued: {}",
        home.body
    );
    let csrf = home.csrf();
    let r = http(port, "POST", "/forward", &cookie, "csrf=bad&partner=N0BBB");
    assert_eq!(r.status, 403);
    let r = http(
        port,
        "POST",
        "/forward",
        &cookie,
        &format!("csrf={csrf}&partner=n0bbb"),
    );
    assert!(
        r.body.contains("ok: N0BBB: 0 received, 1 sent"),
        "{}\n{}",
        r.body,
        a.log()
    );
    assert_eq!(b.messages().len(), 1);
    // The Status page keeps the call as the partner's last result (the health model).
    let st = http(port, "GET", "/status", &cookie, "");
    assert!(
        st.status == 200
            && st.body.contains("ok: N0BBB: 0 received, 1 sent")
            && st.body.contains("on demand")
            && st.body.contains("1 telnet, 0 forwarding"),
        "{}",
        st.body
    );
    let m = http(port, "GET", "/metrics", "", "");
    for line in [
        "qtc_forwarded_messages_total{partner=\"N0BBB\",direction=\"out\"} 1",
        "qtc_forwarded_messages_total{partner=\"N0BBB\",direction=\"in\"} 0",
        "qtc_queued_messages{partner=\"N0BBB\"} 0",
    ] {
        assert!(
            m.body.lines().any(|l| l == line),
            "no {line:?} in\n{}",
            m.body
        );
    }
}

#[test]
fn repeated_login_failures_lock_the_address_out() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n[limits]\nlockout_after = 2\n");
    let port = d.web_port();
    assert_eq!(login(port, "N0SYS", "bad1").unwrap_err().status, 403);
    assert_eq!(login(port, "N0SYS", "bad2").unwrap_err().status, 403);
    // Locked out now: even the right password is refused.
    assert_eq!(login(port, "N0SYS", "root").unwrap_err().status, 429);
    assert!(
        d.log().contains("web: login refused: locked out"),
        "{}",
        d.log()
    );
}

#[test]
fn a_page_from_telnet_shows_on_the_status_page() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    let cookie = login(port, "N0SYS", "root").unwrap();
    let st = http(port, "GET", "/status", &cookie, "");
    assert!(st.body.contains("None since start."), "{}", st.body);
    let mut u = d.login("N0USR", "pw");
    u.send("T hello <b>sysop</b>");
    u.expect("The sysop has been paged.");
    let st = http(port, "GET", "/status", &cookie, "");
    assert!(
        st.status == 200
            && st
                .body
                .contains("<td>N0USR</td><td>hello &lt;b&gt;sysop&lt;/b&gt;</td>"),
        "{}",
        st.body
    );
}
