//! The web over real HTTP on loopback: login, CSRF refusal, web mail for users (visibility,
//! compose, reply, kill own with confirmation), the sysop's pages (messages paged and
//! filtered, users edited and locked, forwarding, the traffic chart), forward now, /metrics.
#![allow(clippy::disallowed_methods)]

mod common;

use common::web::{http, login, post, Reply};
use common::Daemon;

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
    // A wrong password and a login post without its cookie are refused.
    assert_eq!(login(port, "N0SYS", "wrong").unwrap_err().status, 403);
    assert_eq!(login(port, "N0USR", "nope").unwrap_err().status, 403);
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
    // Back on the message, which says what happened and shows its new status.
    assert_eq!(r.status, 303, "{}", r.body);
    let back = r.header("location").unwrap();
    assert_eq!(back, "/messages/1?hold=done");
    let page = http(port, "GET", &back, &cookie, "");
    assert!(
        page.body
            .contains("<p id=\"result\">message #1: hold done</p>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<td id=\"status\">H</td>"),
        "{}",
        page.body
    );
    assert!(d.messages()[0].contains("\"status\":\"H\""));
    let r = http(
        port,
        "POST",
        "/messages/1",
        &cookie,
        &format!("csrf={csrf}&action=release"),
    );
    assert_eq!(
        r.header("location").as_deref(),
        Some("/messages/1?release=done")
    );
    // Kill asks again first; only the confirmed post kills.
    let r = http(
        port,
        "POST",
        "/messages/1",
        &cookie,
        &format!("csrf={csrf}&action=kill"),
    );
    assert!(
        r.status == 200 && r.body.contains("id=\"question\"") && r.body.contains("confirm"),
        "{}",
        r.body
    );
    assert!(d.messages()[0].contains("\"status\":\"N\""));
    let r = http(
        port,
        "POST",
        "/messages/1",
        &cookie,
        &format!("csrf={csrf}&action=kill&confirm=yes"),
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
    assert!(
        users.body.contains("<a href=\"/users/N0NEW\">N0NEW</a>"),
        "{}",
        users.body
    );
    let r = http(
        port,
        "POST",
        "/users/N0NEW",
        &cookie,
        &format!("csrf={csrf}&action=delete"),
    );
    assert!(r.body.contains("Delete user N0NEW?"), "{}", r.body);
    let r = http(
        port,
        "POST",
        "/users/N0NEW",
        &cookie,
        &format!("csrf={csrf}&action=delete&confirm=yes"),
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
    let fwd = http(port, "GET", "/forwarding", &cookie, "");
    assert!(
        fwd.body.contains("<td><b>N0BBB</b>")
            && fwd
                .body
                .contains("<td data-label=\"Connects\">tcp:127.0.0.1:")
            && fwd.body.contains(
                "<td data-label=\"Queued\">1</td><td data-label=\"Last\">none since start</td>\
                 <td data-label=\"Next call\">on demand</td>"
            ),
        "one queued: {}",
        fwd.body
    );
    assert!(
        fwd.body.contains("No sessions since start."),
        "{}",
        fwd.body
    );
    let csrf = fwd.csrf();
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
            && st.body.contains("1 telnet, 1 logged in, 0 forwarding")
            && st.body.contains("<td>N0USR</td><td>telnet</td>"),
        "{}",
        st.body
    );
    // The Forwarding page has the session in its history, with the bytes both ways.
    let fwd = http(port, "GET", "/forwarding", &cookie, "");
    assert!(
        fwd.body.contains("<h3>N0BBB</h3>")
            && fwd
                .body
                .contains("<td>outgoing</td><td>0</td><td>1</td><td>0</td>")
            && !fwd.body.contains("<td>0 B / 0 B</td>"),
        "{}",
        fwd.body
    );
    // `qtc ctl status --json` has them too, and who is online.
    let status: serde_json::Value = serde_json::from_str(&a.ctl(&["status", "--json"])).unwrap();
    let p = &status["partners"][0];
    assert!(
        p["bytes_in"].as_u64().unwrap() > 0 && p["bytes_out"].as_u64().unwrap() > 0,
        "{status}"
    );
    assert_eq!(p["history"].as_array().unwrap().len(), 1, "{status}");
    assert_eq!(status["users"][0]["call"], "N0USR", "{status}");
    assert_eq!(status["users"][0]["via"], "telnet", "{status}");
    assert!(status["users"][0]["since"].as_i64().unwrap() > 0);
    drop(c);
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
    d.wait_for_log("web: login refused: locked out");
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

/// The number in "Message #N stored".
fn stored_number(r: &Reply) -> u64 {
    let at = r.body.find("Message #").expect("stored") + 9;
    r.body[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn users_read_write_reply_and_kill_their_own_mail() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    let sys = login(port, "N0SYS", "root").unwrap();
    let sys_csrf = http(port, "GET", "/", &sys, "").csrf();
    // Mail that N0USR may and may not see.
    post_message(&d); // #1: N0USR -> N0OTH, over telnet
    let r = post(
        port,
        &sys,
        &sys_csrf,
        "/compose",
        "kind=P&to=N0OTH&at=&subject=private+matter&body=for+N0OTH+only",
    );
    let private = stored_number(&r);
    let r = post(
        port,
        &sys,
        &sys_csrf,
        "/compose",
        "kind=B&to=ALL&at=&subject=club+news&body=meeting",
    );
    let bulletin = stored_number(&r);

    // The user's web: mail only, the sysop's pages refused.
    let usr = login(port, "n0usr", "pw").unwrap();
    let home = http(port, "GET", "/", &usr, "");
    assert_eq!(home.header("location").as_deref(), Some("/messages"));
    let list = http(port, "GET", "/messages", &usr, "");
    assert!(
        list.body.contains("<h1>Mail</h1>") && !list.body.contains("href=\"/users\""),
        "{}",
        list.body
    );
    assert!(list.body.contains("web &lt;test&gt;") && list.body.contains("club news"));
    assert!(!list.body.contains("private matter"), "{}", list.body);
    for page in ["/users", "/status", "/forwarding", "/users/N0OTH"] {
        assert_eq!(http(port, "GET", page, &usr, "").status, 403, "{page}");
    }
    assert_eq!(
        http(port, "GET", &format!("/messages/{private}"), &usr, "").status,
        404
    );
    let csrf = list.csrf();
    let r = post(port, &usr, &csrf, "/forward", "partner=N0BBB");
    assert_eq!(r.status, 403);
    // Held mail is the sysop's alone, even for its sender.
    let r = post(port, &sys, &sys_csrf, "/messages/1", "action=hold");
    assert_eq!(r.status, 303);
    assert_eq!(http(port, "GET", "/messages/1", &usr, "").status, 404);
    post(port, &sys, &sys_csrf, "/messages/1", "action=release");
    // Nor may a user hold, or kill someone else's bulletin.
    assert_eq!(
        post(port, &usr, &csrf, "/messages/1", "action=hold").status,
        403
    );
    let r = post(
        port,
        &usr,
        &csrf,
        &format!("/messages/{bulletin}"),
        "action=kill&confirm=yes",
    );
    assert_eq!(r.status, 403);

    // Compose: the BBS's checks, then stored as the BBS stores it.
    let r = post(
        port,
        &usr,
        &csrf,
        "/compose",
        "kind=P&to=N0SYS+%3C+N0OTH&at=&subject=x&body=y",
    );
    assert!(
        r.status == 422 && r.body.contains("id=\"error\""),
        "{}",
        r.body
    );
    let r = post(
        port,
        &usr,
        &csrf,
        "/compose",
        "kind=P&to=n0sys&at=&subject=Question+%3Cb%3E&body=line+one%0D%0Aline+two",
    );
    assert!(r.body.contains("stored, BID"), "{}", r.body);
    let asked = stored_number(&r);
    let json = d
        .messages()
        .into_iter()
        .find(|m| m.contains(&format!("\"number\":{asked},")))
        .unwrap();
    assert!(
        json.contains("\"from\":\"N0USR\"")
            && json.contains(&format!("\"bid\":\"{asked}_N0CALL\"")),
        "{json}"
    );
    // An R: line of this BBS, then the text with CR LF line ends, as the BBS stores it.
    let shown = String::from_utf8_lossy(&d.show_raw(asked)).into_owned();
    assert!(
        shown.contains("\n\nR:") && shown.ends_with("\r\nline one\r\nline two\r\n"),
        "{shown:?}"
    );

    // The sysop replies on the web: the form is filled in from the message.
    let form = http(port, "GET", &format!("/compose?reply={asked}"), &sys, "");
    assert!(
        form.body.contains("value=\"N0USR\"")
            && form.body.contains("value=\"Re: Question &lt;b&gt;\"")
            // The original, quoted.
            && form.body.contains("N0USR wrote on ")
            && form.body.contains("\n&gt; line one\n&gt; line two\n\n</textarea>"),
        "{}",
        form.body
    );
    let r = post(
        port,
        &sys,
        &sys_csrf,
        "/compose",
        "kind=P&to=N0USR&at=&subject=Re%3A+Question&body=the+answer",
    );
    let reply = stored_number(&r);
    let one = http(port, "GET", &format!("/messages/{reply}"), &usr, "");
    assert!(one.body.contains("the answer"), "{}", one.body);
    assert!(
        one.body.contains("<td id=\"status\">N</td>"),
        "shown as it was"
    );
    let one = http(port, "GET", &format!("/messages/{reply}"), &usr, "");
    assert!(
        one.body.contains("<td id=\"status\">Y</td>"),
        "read now: {}",
        one.body
    );

    // Kill own: asked again, then done; gone from the user's list.
    let r = post(
        port,
        &usr,
        &csrf,
        &format!("/messages/{reply}"),
        "action=kill",
    );
    assert!(r.body.contains("Yes, do it"), "{}", r.body);
    let r = post(
        port,
        &usr,
        &csrf,
        &format!("/messages/{reply}"),
        "action=kill&confirm=yes",
    );
    assert!(r.body.contains("kill done"), "{}", r.body);
    let list = http(port, "GET", "/messages", &usr, "");
    assert!(!list.body.contains("the answer") && !list.body.contains(">Re: Question<"));
    // Killed and held messages cannot be asked for with a filter either.
    let list = http(port, "GET", "/messages?status=K", &usr, "");
    assert!(!list.body.contains(">Re: Question<"), "{}", list.body);
}

#[test]
fn the_sysop_pages_filters_and_edits_users() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    let sys = login(port, "N0SYS", "root").unwrap();
    let csrf = http(port, "GET", "/", &sys, "").csrf();
    for i in 1..=60 {
        let (kind, to) = if i % 10 == 0 {
            ("B", "ALL")
        } else {
            ("P", "N0OTH")
        };
        let r = post(
            port,
            &sys,
            &csrf,
            "/compose",
            &format!("kind={kind}&to={to}&at=&subject=number+{i}&body=text"),
        );
        assert_eq!(stored_number(&r), i);
    }
    // Newest first, 50 to a page; Older goes on by keyset, ?page=2 lands on the same page.
    let p1 = http(port, "GET", "/messages", &sys, "");
    let first = p1.body.find(">number 60<").unwrap();
    assert!(first < p1.body.find(">number 59<").unwrap());
    assert!(p1.body.contains(">number 11<") && !p1.body.contains(">number 10<"));
    assert!(
        p1.body.contains("href=\"/messages?before=11&amp;page=2\""),
        "{}",
        p1.body
    );
    let p2 = http(port, "GET", "/messages?before=11&page=2", &sys, "");
    let p2b = http(port, "GET", "/messages?page=2", &sys, "");
    for p in [&p2, &p2b] {
        assert!(p.body.contains(">number 10<") && p.body.contains(">number 1<"));
        assert!(!p.body.contains(">number 11<") && !p.body.contains("id=\"older\""));
        assert!(p.body.contains("Page 2"));
    }
    // Filters: kind, text, to; and the links keep them.
    let b = http(port, "GET", "/messages?kind=B", &sys, "");
    assert_eq!(
        b.body
            .matches("<tr><td data-label=\"#\"><a href=\"/messages/")
            .count(),
        6,
        "{}",
        b.body
    );
    let t = http(port, "GET", "/messages?text=NUMBER+5", &sys, "");
    assert!(t.body.contains(">number 5<") && t.body.contains(">number 59<"));
    assert!(!t.body.contains(">number 4<"));
    let none = http(port, "GET", "/messages?to=N0XYZ", &sys, "");
    assert!(none.body.contains("id=\"empty\""), "{}", none.body);

    // The traffic chart counts today's 60 messages.
    let home = http(port, "GET", "/", &sys, "");
    assert!(
        home.body.contains("<svg class=\"chart\" id=\"traffic\"")
            && home.body.contains("60 stored, 0 forwarded in 30 days"),
        "{}",
        home.body
    );

    // Users: flags, lock (the user's session ends and logins fail everywhere), unlock,
    // a new password.
    let usr = login(port, "N0USR", "pw").unwrap();
    let edit = http(port, "GET", "/users/n0usr", &sys, "");
    assert!(edit.body.contains("<h1>User N0USR</h1>"), "{}", edit.body);
    let r = post(port, &sys, &csrf, "/users/N0USR", "action=flags&bbs=1");
    assert!(
        r.body.contains("N0USR: sysop false, BBS true"),
        "{}",
        r.body
    );
    let r = post(port, &sys, &csrf, "/users/N0USR", "action=lock");
    assert!(r.body.contains("N0USR: locked"), "{}", r.body);
    assert_eq!(
        http(port, "GET", "/messages", &usr, "").status,
        303,
        "session ended"
    );
    assert_eq!(login(port, "N0USR", "pw").unwrap_err().status, 403);
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send("N0USR");
    c.expect("Password:");
    c.send("pw");
    c.expect("Login incorrect.");
    let users = http(port, "GET", "/users", &sys, "");
    assert!(
        users
            .body
            .contains("N0USR</a></td><td></td><td>yes</td><td>yes</td>"),
        "{}",
        users.body
    );
    post(port, &sys, &csrf, "/users/N0USR", "action=unlock");
    login(port, "N0USR", "pw").unwrap();
    let r = post(
        port,
        &sys,
        &csrf,
        "/users/N0USR",
        "action=password&password=n3w",
    );
    assert!(r.body.contains("new password set"), "{}", r.body);
    login(port, "N0USR", "n3w").unwrap();
    // The sysop cannot lock or demote themself while logged in.
    let r = post(port, &sys, &csrf, "/users/N0SYS", "action=flags");
    assert!(r
        .body
        .contains("error: you cannot take your own sysop flag"));
}

/// The web shows each user's own read mark on a bulletin, as the BBS does.
#[test]
fn a_bulletin_is_read_on_the_web_by_whoever_read_it() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    let mut c = d.login("N0OTH", "x");
    c.send("SB ALL");
    c.expect("Subject:");
    c.send("club news");
    c.expect("Enter message");
    c.send("meeting\r\n/EX");
    c.expect("de N0CALL>");
    let usr = login(port, "N0USR", "pw").unwrap();
    let sys = login(port, "N0SYS", "root").unwrap();
    let row = |cookie: &str| {
        let list = http(port, "GET", "/messages", cookie, "").body;
        let at = list.find("club news").expect("the bulletin listed");
        let start = list[..at].rfind("<tr>").unwrap();
        list[start..].split("</tr>").next().unwrap().to_string()
    };
    assert!(
        row(&usr).contains("<td data-label=\"St\">N</td>"),
        "{}",
        row(&usr)
    );
    let read = http(port, "GET", "/messages/1", &usr, "");
    assert!(
        read.body.contains("<td id=\"status\">N</td>"),
        "{}",
        read.body
    );
    assert!(
        row(&usr).contains("<td data-label=\"St\">Y</td>"),
        "{}",
        row(&usr)
    );
    assert!(
        row(&sys).contains("<td data-label=\"St\">N</td>"),
        "{}",
        row(&sys)
    );
    let mut t = d.login("N0SYS", "root");
    t.send("LB");
    assert!(t.expect("de N0CALL>").contains(" BN "));
}
