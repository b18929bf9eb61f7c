//! The sysop's web pages that act on the station, over real HTTP on loopback: the
//! configuration forms (`/config`), the white pages (`/wp`) and housekeeping
//! (`/housekeeping`); each refused to users (403) and to a post without the session's CSRF
//! token.
#![allow(clippy::disallowed_methods)]

mod common;

use common::web::{download, http, login, post, post_multipart, ws_connect, Reply, Ws};
use common::{config_path, Daemon};

/// A partner table with comments in and around it, as a sysop writes one.
const PARTNER: &str = "[web]\nlisten = \"127.0.0.1:0\"\n\
    # the neighbour up the hill\n[[partner]]\ncallsign = \"N0BBB\"\n\
    # call it often\ninterval = \"10m\"   # agreed with N0BBB's sysop\n\
    routes = [\"N0BBB\", \"WW\"]\npassword = \"s3cret\"\n";

/// The value of the hidden field `name` in the form `id`.
fn hidden(r: &Reply, id: &str, name: &str) -> String {
    let form = &r.body[r.body.find(&format!("id=\"{id}\"")).expect(id)..];
    let at = form.find(&format!("name=\"{name}\" value=\"")).expect(name) + name.len() + 15;
    form[at..].split('"').next().unwrap().to_string()
}

fn file(d: &Daemon) -> String {
    std::fs::read_to_string(config_path(d.dir.path())).unwrap()
}

/// The form fields of partner #1 (N0BBB) as the page holds them, with `interval`.
fn partner_form(page: &Reply, csrf: &str, interval: &str) -> String {
    let version = hidden(page, "partner-1", "version");
    format!(
        "csrf={csrf}&section=partner&index=0&ident=N0BBB&version={version}&do=save\
         &callsign=N0BBB&connect=&protocol=&routes=N0BBB%2C+WW&interval={interval}\
         &login=&password=&secret="
    )
}

#[test]
fn the_sysop_changes_a_partners_interval_and_it_applies_without_a_restart() {
    let d = Daemon::start(PARTNER);
    let port = d.web_port();
    let before = file(&d);
    let sysop = login(port, "N0SYS", "root").unwrap();
    let page = http(port, "GET", "/config", &sysop, "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("<h1>Configuration</h1>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("name=\"interval\" value=\"10m\""),
        "{}",
        page.body
    );
    assert!(!page.body.contains("s3cret"), "a password is never shown");
    let csrf = page.csrf();
    let status = d.ctl(&["status"]);
    assert!(status.contains("calls every 10m"), "{status}");

    // A user may neither see nor post it; a post without the session's token changes nothing.
    let user = login(port, "N0USR", "pw").unwrap();
    assert_eq!(http(port, "GET", "/config", &user, "").status, 403);
    let user_csrf = http(port, "GET", "/messages", &user, "").csrf();
    let r = http(
        port,
        "POST",
        "/config",
        &user,
        &partner_form(&page, &user_csrf, "1m"),
    );
    assert_eq!(r.status, 403);
    let forged = partner_form(&page, "0123456789abcdef0123456789abcdef", "1m");
    assert_eq!(http(port, "POST", "/config", &sysop, &forged).status, 403);
    assert_eq!(file(&d), before);

    // A wrong value is refused with the key named, and nothing is written.
    let r = http(
        port,
        "POST",
        "/config",
        &sysop,
        &partner_form(&page, &csrf, "soon"),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("[[partner]] #1 (N0BBB) interval") && r.body.contains("soon"),
        "{}",
        r.body
    );
    assert_eq!(file(&d), before);

    // The new interval: written with every comment kept, checked, applied at once.
    let r = http(
        port,
        "POST",
        "/config",
        &sysop,
        &partner_form(&page, &csrf, "5m"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("Saved. Applied now: partners"),
        "{}",
        r.body
    );
    assert_eq!(
        file(&d),
        before.replace("interval = \"10m\"", "interval = \"5m\""),
        "only the interval changed; the password, comments and layout stayed"
    );
    let check = d.cli(&["check"]);
    assert!(check.status.success(), "{check:?}");
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("N0BBB (calls us, up to B1, every 300s)"),
        "{check:?}"
    );
    let status = d.ctl(&["status"]);
    assert!(status.contains("calls every 5m"), "{status}");
    let json = d.ctl(&["status", "--json"]);
    assert!(json.contains("\"interval\":300"), "{json}");
    d.wait_for_log("configuration changed on the web");
    assert!(d.log().contains("by=N0SYS"), "{}", d.log());

    // The same form again is stale: the file changed since it was made.
    let r = http(
        port,
        "POST",
        "/config",
        &sysop,
        &partner_form(&page, &csrf, "7m"),
    );
    assert!(
        r.body
            .contains("the file changed since this page was loaded"),
        "{}",
        r.body
    );
    assert!(file(&d).contains("interval = \"5m\""));

    // A limit is written too, and said to need a restart.
    let page = http(port, "GET", "/config", &sysop, "");
    let version = hidden(&page, "limits-1", "version");
    let r = post(
        port,
        &sysop,
        &csrf,
        "/config",
        &format!("section=limits&index=0&version={version}&do=save&messages_per_hour=5"),
    );
    assert!(
        r.body.contains("Saved. Restart qtc to apply: [limits]"),
        "{}",
        r.body
    );
    assert!(
        file(&d).contains("[limits]\nmessages_per_hour = 5\n"),
        "{:?}",
        file(&d)
    );
}

#[test]
fn partners_and_rules_are_added_and_removed_after_a_confirmation() {
    let d = Daemon::start(PARTNER);
    let port = d.web_port();
    let sysop = login(port, "N0SYS", "root").unwrap();
    let page = http(port, "GET", "/config", &sysop, "");
    let csrf = page.csrf();
    let version = hidden(&page, "rule-new", "version");
    let add = |fields: &str| {
        let form = format!("section=rule&version={version}&do=add&{fields}");
        post(port, &sysop, &csrf, "/config", &form)
    };
    // No action chosen for the rule: the checker names it, and nothing is written.
    let r = add("action=&field=from&pattern=N0SPAM*");
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body
            .contains("[[rule]] (new) action: choose one of hold, reject"),
        "{}",
        r.body
    );
    let r = add("action=reject&field=from&pattern=N0SPAM*");
    assert!(r.body.contains("Saved. Applied now: rules"), "{}", r.body);
    assert!(file(&d)
        .contains("[[rule]]\naction = \"reject\"\nfield = \"from\"\npattern = \"N0SPAM*\"\n"));
    // Removing asks first.
    let page = http(port, "GET", "/config", &sysop, "");
    let version = hidden(&page, "partner-1", "version");
    let remove = format!("section=partner&index=0&ident=N0BBB&version={version}&do=remove");
    let r = post(port, &sysop, &csrf, "/config", &remove);
    assert!(
        r.body.contains("Remove [[partner]] #1 (N0BBB)"),
        "{}",
        r.body
    );
    assert!(file(&d).contains("N0BBB"));
    let r = post(
        port,
        &sysop,
        &csrf,
        "/config",
        &format!("{remove}&confirm=yes"),
    );
    assert!(
        r.body.contains("Saved. Applied now: partners"),
        "{}",
        r.body
    );
    assert!(!file(&d).contains("N0BBB"), "{}", file(&d));
    let status = d.ctl(&["status"]);
    assert!(!status.contains("N0BBB"), "{status}");
}

#[test]
fn the_white_pages_list_and_search_and_housekeeping_runs_from_the_web() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    for (call, pw, home) in [
        ("N0USR", "pw", "N0CALL.#NCA.CA.USA.NOAM"),
        ("N0OTH", "x", "GB7XYZ.#23.GBR.EURO"),
    ] {
        let mut c = d.login(call, pw);
        c.send(&format!("NH {home}"));
        c.expect("de N0CALL>");
        c.send("B");
    }
    let sysop = login(port, "N0SYS", "root").unwrap();
    let user = login(port, "N0USR", "pw").unwrap();
    let wp = http(port, "GET", "/wp", &sysop, "");
    assert_eq!(wp.status, 200, "{}", wp.body);
    assert!(
        wp.body.contains(
            "<td data-label=\"Call\">N0OTH</td><td data-label=\"Home\">GB7XYZ.#23.GBR.EURO</td>"
        ) && wp.body.contains("N0USR"),
        "{}",
        wp.body
    );
    let found = http(port, "GET", "/wp?call=&home=gbr", &sysop, "");
    assert!(
        found.body.contains("N0OTH") && !found.body.contains(">N0USR<"),
        "{}",
        found.body
    );
    let found = http(port, "GET", "/wp?call=n0u", &sysop, "");
    assert!(
        found.body.contains(">N0USR<") && !found.body.contains(">N0OTH<"),
        "{}",
        found.body
    );
    assert_eq!(http(port, "GET", "/wp", &user, "").status, 403);

    // Housekeeping: nothing yet, run now, then the run is listed with who started it.
    let page = http(port, "GET", "/housekeeping", &sysop, "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("None since start."), "{}", page.body);
    let csrf = page.csrf();
    assert_eq!(http(port, "GET", "/housekeeping", &user, "").status, 403);
    let user_csrf = http(port, "GET", "/messages", &user, "").csrf();
    assert_eq!(
        post(port, &user, &user_csrf, "/housekeeping", "").status,
        403
    );
    let forged = "0123456789abcdef0123456789abcdef";
    assert_eq!(post(port, &sysop, forged, "/housekeeping", "").status, 403);
    assert!(!d.log().contains("housekeeping: "), "nothing ran");
    let r = post(port, &sysop, &csrf, "/housekeeping", "");
    assert!(r.body.contains("ok: housekeeping: 0 expired"), "{}", r.body);
    let page = http(port, "GET", "/housekeeping", &sysop, "");
    assert!(
        page.body.contains("<td data-label=\"By\">web N0SYS</td>")
            && page.body.contains("housekeeping: 0 expired"),
        "{}",
        page.body
    );
}

#[test]
fn web_mail_attachments_are_stored_byte_for_byte() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    let user = login(port, "N0USR", "pw").unwrap();
    let form = http(port, "GET", "/compose", &user, "");
    assert!(
        form.body.contains("enctype=\"multipart/form-data\"")
            && form.body.contains("name=\"attachment\"")
            && form.body.contains("up to 2 MiB (2097152 bytes)"),
        "the limit is said up front: {}",
        form.body
    );
    let csrf = form.csrf();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let text = b"line one\nline two\r\n\xff\x00 end".to_vec();
    let fields = [
        ("csrf", csrf.as_str()),
        ("kind", "P"),
        ("to", "N0OTH"),
        ("at", ""),
        ("subject", "Photos from the field day"),
        ("body", "Two files attached."),
    ];
    let files: [(&str, &[u8]); 2] = [("antenna.jpg", &binary), ("notes.txt", &text)];
    let r = post_multipart(port, &user, "/compose", &fields, &files);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Message #1 stored"), "{}", r.body);
    let oth = login(port, "N0OTH", "x").unwrap();
    let page = http(port, "GET", "/messages/1", &oth, "");
    assert!(
        page.body.contains("antenna.jpg</a> (70000 bytes)")
            && page.body.contains("notes.txt</a> (25 bytes)"),
        "{}",
        page.body
    );
    for (i, want) in [&binary, &text].into_iter().enumerate() {
        let (head, got) = download(port, &format!("/messages/1/files/{i}"), &oth);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(&got, want, "attachment {i} byte for byte");
    }
    // On telnet the attachments are listed under the message.
    let mut c = d.login("N0OTH", "x");
    c.send("R 1");
    let shown = c.expect("de N0CALL>");
    assert!(shown.contains("antenna.jpg (70000 bytes)"), "{shown}");

    // A name that would be a header, too many bytes, no session, a forged token: refused.
    let evil: [(&str, &[u8]); 1] = [("a.txt\r\nFile: 1 x", b"x")];
    let r = post_multipart(port, &user, "/compose", &fields, &evil);
    assert_eq!(r.status, 422, "{}", r.body);
    let huge = vec![0u8; 2 * 1024 * 1024 + 1];
    let r = post_multipart(port, &user, "/compose", &fields, &[("big.bin", &huge)]);
    assert!(
        r.status == 413 || r.status == 422,
        "{} {}",
        r.status,
        r.body
    );
    let r = post_multipart(port, "", "/compose", &fields, &files);
    assert_eq!(r.status, 403);
    let mut forged = fields;
    forged[0].1 = "0123456789abcdef0123456789abcdef";
    assert_eq!(
        post_multipart(port, &user, "/compose", &forged, &files).status,
        403
    );
    assert_eq!(d.messages().len(), 1, "{:?}", d.messages());
}

#[test]
fn the_mail_side_shows_on_status_the_overview_and_in_qtc_check() {
    use std::io::{BufRead, BufReader, Write};
    let d =
        Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n[mail]\nimap_listen = [\"127.0.0.1:0\"]\n");
    let port = d.web_port();
    let imap = d
        .stdout
        .iter()
        .find_map(|l| l.strip_prefix("imap: listening on "))
        .expect("the start-up report names the IMAP listener")
        .to_string();
    let check = String::from_utf8_lossy(&d.cli(&["check"]).stdout).into_owned();
    assert!(
        check.contains("imap: would listen on 127.0.0.1:0"),
        "{check}"
    );
    let sysop = login(port, "N0SYS", "root").unwrap();
    let home = http(port, "GET", "/", &sysop, "");
    // As configured (the start-up report says where port 0 went).
    assert!(
        home.body.contains("<td>imap 127.0.0.1:0</td>"),
        "{}",
        home.body
    );

    // A mail client logs in: Status and `qtc ctl status` name it, as they name telnet users.
    let mut s = std::net::TcpStream::connect(&imap).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    s.write_all(b"a1 LOGIN N0USR pw\r\n").unwrap();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.starts_with("a1 ") {
            break;
        }
    }
    assert!(line.starts_with("a1 OK"), "{line}");
    let status = http(port, "GET", "/status", &sysop, "");
    assert!(
        status.body.contains("<tr><td>N0USR</td><td>imap</td>"),
        "{}",
        status.body
    );
    let text = d.ctl(&["status"]);
    assert!(text.contains("N0USR    imap since"), "{text}");
    let json = d.ctl(&["status", "--json"]);
    assert!(
        json.contains("{\"call\":\"N0USR\",\"via\":\"imap\""),
        "{json}"
    );
    s.write_all(b"a2 LOGOUT\r\n").unwrap();

    // The user's page: their last login, and a profile the sysop may change.
    let page = http(port, "GET", "/users/N0USR", &sysop, "");
    assert!(page.body.contains("from 127.0.0.1"), "{}", page.body);
    let csrf = page.csrf();
    let r = post(
        port,
        &sysop,
        &csrf,
        "/users/N0USR",
        "action=profile&name=Pat&home=n0call.%23nca.ca.usa.noam",
    );
    assert!(r.body.contains("name and home BBS saved"), "{}", r.body);
    let page = http(port, "GET", "/users/N0USR", &sysop, "");
    assert!(
        page.body.contains("value=\"Pat\"")
            && page.body.contains("value=\"N0CALL.#NCA.CA.USA.NOAM\""),
        "{}",
        page.body
    );
    let r = post(
        port,
        &sysop,
        &csrf,
        "/users/N0USR",
        "action=profile&name=x&home=a%0Db",
    );
    assert!(r.body.contains("error: a home BBS"), "{}", r.body);
    let user = login(port, "N0USR", "pw").unwrap();
    let user_csrf = http(port, "GET", "/messages", &user, "").csrf();
    let r = post(
        port,
        &user,
        &user_csrf,
        "/users/N0USR",
        "action=profile&name=Me&home=",
    );
    assert_eq!(r.status, 403);
}

#[test]
fn the_terminal_is_the_users_own_bbs_session_after_the_web_login() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let port = d.web_port();
    let mut c = d.login("N0OTH", "x");
    c.send("SB ALL");
    c.expect("Subject:");
    c.send("Swap meet");
    c.expect("/EX");
    c.send("Saturday.");
    c.send("/EX");
    c.expect("de N0CALL>");
    let sysop = login(port, "N0SYS", "root").unwrap();
    assert_eq!(http(port, "GET", "/terminal", &sysop, "").status, 200);
    let user = login(port, "N0USR", "pw").unwrap();
    let page = http(port, "GET", "/terminal", &user, "");
    assert!(
        page.body.contains("<script src=\"/terminal.js\">"),
        "{}",
        page.body
    );

    // No cookie, a stale one, another site's page: no session.
    let origin = format!("http://127.0.0.1:{port}");
    let no = |r: Result<Ws, Reply>| r.err().map(|r| r.status);
    assert_eq!(
        no(ws_connect(port, "/terminal/ws", "", Some(&origin))),
        Some(403)
    );
    let stale = "qtc_session=0123456789abcdef0123456789abcdef";
    assert_eq!(
        no(ws_connect(port, "/terminal/ws", stale, Some(&origin))),
        Some(403)
    );
    let evil = ws_connect(port, "/terminal/ws", &user, Some("http://evil.example"));
    assert_eq!(no(evil), Some(403));
    assert!(d.log().contains("terminal refused: from another site"));

    // The user's own session: no second login, every command (LL 1, a message, CONV).
    let mut t = ws_connect(port, "/terminal/ws", &user, Some(&origin)).unwrap();
    let hello = t.expect("de N0CALL>");
    assert!(
        hello.contains("Hello N0USR") && !hello.contains("Password"),
        "{hello}"
    );
    t.send("LL 1");
    let listed = t.expect("de N0CALL>");
    assert!(listed.contains("Swap meet"), "{listed}");
    t.send("R 1");
    assert!(t.expect("de N0CALL>").contains("Saturday."));
    t.send("CONV");
    t.expect("*** Conference");
    c.send("CONV");
    c.expect("*** Conference");
    c.send("hello from telnet");
    assert!(t.expect("hello from telnet").contains("N0OTH"));
    t.send("hi from the web");
    c.expect("hi from the web");
    t.send("/EX");
    t.expect("de N0CALL>");
    // The web's Status names it, as it names telnet users.
    let status = http(port, "GET", "/status", &sysop, "");
    assert!(
        status.body.contains("<tr><td>N0USR</td><td>web</td>"),
        "{}",
        status.body
    );
    t.send("B");
    t.expect_close();
}

#[test]
fn the_terminal_takes_the_bbs_places_and_the_lockout() {
    // One connection per address on the BBS doors; three failed logins lock an address out.
    let d = Daemon::start(
        "max_per_address = 1\n[limits]\nlockout_after = 3\n[web]\nlisten = \"127.0.0.1:0\"\n",
    );
    let port = d.web_port();
    let origin = format!("http://127.0.0.1:{port}");
    let user = login(port, "N0USR", "pw").unwrap();
    let telnet = d.connect();
    let r = ws_connect(port, "/terminal/ws", &user, Some(&origin))
        .err()
        .unwrap();
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(
        r.body.contains("Too many connections from your address"),
        "{}",
        r.body
    );
    drop(telnet);
    d.wait_for_log("disconnected");
    let mut t = ws_connect(port, "/terminal/ws", &user, Some(&origin)).unwrap();
    t.expect("de N0CALL>");
    t.send("B");
    t.expect_close();
    // Wrong passwords from this address lock it out: no terminal either, cookie or not.
    for _ in 0..3 {
        assert!(login(port, "N0OTH", "wrong").is_err());
    }
    let r = ws_connect(port, "/terminal/ws", &user, Some(&origin))
        .err()
        .unwrap();
    assert_eq!(r.status, 429, "{}", r.body);
}
