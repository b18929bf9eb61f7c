//! Two (and three) real qtc instances forwarding to each other over loopback TCP.

mod common;

use common::Daemon;

/// Logs in to `d` as `call` and sends one message.
fn post(d: &Daemon, call: &str, pw: &str, cmd: &str, subject: &str, body: &str) {
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send(call);
    c.expect("Password:");
    c.send(pw);
    c.expect(">\r\n");
    c.send(cmd);
    c.expect("Subject:");
    c.send(subject);
    c.expect("Enter message");
    c.send_raw(body.as_bytes());
    c.send("/EX");
    let out = c.expect(">\r\n");
    assert!(out.contains("stored"), "{out}");
    c.send("B");
}

fn pair(protocol: &str) -> (Daemon, Daemon) {
    pair_with(protocol, "")
}

/// [`pair`] with `a_extra` added to A's configuration.
fn pair_with(protocol: &str, a_extra: &str) -> (Daemon, Daemon) {
    // B is called: A logs in on B's raw forwarding port as the BBS user N0AAA.
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs"), ("N0USR", "pw", "")],
        &format!(
            "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"{protocol}\"\nroutes = [\"N0AAA\", \"WW\"]\n"
        ),
    );
    let port = b.fwd_port.unwrap();
    let a = Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", "")],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{port}\"\npassword = \"fwdpw\"\nprotocol = \"{protocol}\"\nroutes = [\"N0BBB\", \"WW\"]\n{a_extra}"
        ),
    );
    (a, b)
}

fn forward_both_ways(protocol: &str) {
    let (a, b) = pair(protocol);
    post(
        &a,
        "N0USR",
        "pw",
        "SB ALL @ WW",
        "From A",
        "bulletin from A\r\n",
    );
    post(
        &a,
        "N0USR",
        "pw",
        "SP N0XYZ @ N0BBB",
        "To B",
        "personal via B\r\n",
    );
    post(
        &b,
        "N0USR",
        "pw",
        "SB ALL @ WW",
        "From B",
        "bulletin from B \u{e9}\r\n",
    );
    assert!(a.ctl(&["status"]).contains("N0BBB    2 queued"));
    let out = a.ctl(&["forward", "N0BBB"]);
    assert!(
        out.contains("ok: N0BBB: 1 received, 2 sent"),
        "{out}\n{}",
        b.log()
    );
    let at_b = b.messages();
    assert_eq!(at_b.len(), 3, "{at_b:?}");
    assert!(at_b.iter().any(|m| m.contains("\"subject\":\"From A\"")));
    assert!(at_b.iter().any(|m| m.contains("\"subject\":\"To B\"")));
    let at_a = a.messages();
    assert_eq!(at_a.len(), 3, "{at_a:?}");
    assert!(at_a.iter().any(|m| m.contains("\"subject\":\"From B\"")));
    assert!(a.ctl(&["status"]).contains("N0BBB    0 queued"));
    let mode = match protocol {
        "b1" => "B1",
        "b2" => "B2",
        "b0" => "B0",
        "fbb" => "FbbAscii",
        _ => "Mbl",
    };
    a.wait_for_log(&format!("mode={mode} "));
    // A second call has nothing to do and duplicates nothing.
    let out = a.ctl(&["forward", "N0BBB"]);
    assert!(out.contains("ok: N0BBB: 0 received, 0 sent"), "{out}");
    assert_eq!(b.messages().len(), 3);
}

#[test]
fn b1_both_ways() {
    forward_both_ways("b1");
}

#[test]
fn b2_both_ways() {
    forward_both_ways("b2");
}

#[test]
fn fbb_ascii_both_ways() {
    forward_both_ways("fbb");
}

#[test]
fn b0_both_ways() {
    forward_both_ways("b0");
}

#[test]
fn mbl_both_ways() {
    forward_both_ways("mbl");
}

fn write_b_config(dir: &std::path::Path, max_mb: u32, port: u16) {
    std::fs::write(
        common::config_path(dir),
        format!(
            "[station]\ncallsign = \"N0BBB\"\n[store]\ndurability = \"normal\"\nmax_mb = {max_mb}\n\
             [log]\nlevel = \"debug\"\n[telnet]\nlisten = [\"127.0.0.1:0\"]\n\
             [forward]\nlisten = [\"127.0.0.1:{port}\"]\n\
             [[partner]]\ncallsign = \"N0AAA\"\nroutes = [\"N0AAA\"]\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_full_receiver_defers_before_the_transfer_and_catches_up_later() {
    let port = common::free_port();
    let dir = tempfile::tempdir().unwrap();
    write_b_config(dir.path(), 1, port);
    let out = common::cli(
        dir.path(),
        &["user", "add", "N0AAA", "--bbs", "--password", "fwdpw"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let mut b = Daemon::start_in(dir);
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
             password = \"fwdpw\"\nprotocol = \"b1\"\nroutes = [\"WW\"]\n"
        ),
    );
    // 30 bulletins of 60 KB: more than B's 1 MiB store holds. Random characters, which the
    // store's compression (text is kept deflated) cannot shrink below that.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut file = String::new();
    for i in 0..30 {
        file.push_str(&format!("SB ALL @ WW < N0ABC $FULL{i}_N0ABC\nBig {i}\n"));
        for _ in 0..60 * 1024 / 65 {
            let line: String = (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b'!' + (x % 94) as u8)
                })
                .collect();
            file.push_str(&line);
            file.push('\n');
        }
        file.push_str("/EX\n");
    }
    let path = a.dir.path().join("big.txt");
    std::fs::write(&path, file).unwrap();
    a.import(&path, 30);

    // B defers what it has no room for before any of it moves (FS `=`): the session ends
    // cleanly, and only what B stored was sent.
    let out = a.forward_ok("N0BBB", &b);
    let stored = b.messages().len();
    assert!(stored < 30, "{stored}");
    assert!(out.contains(&format!("{stored} sent")), "{out}");
    b.wait_for_log("proposal deferred: the message store is full");
    assert!(
        !b.log().contains("cannot store the received block"),
        "nothing was sent only to be dropped: {}",
        b.log()
    );
    // What B could not store is still queued at A: nothing was marked forwarded unseen.
    assert!(a
        .fwd_queue(Some("N0BBB"))
        .contains(&format!("\n{} queued", 30 - stored)));

    // The sysop makes room; the next call delivers the rest, each message once.
    b.stop();
    let dir = std::mem::replace(&mut b.dir, tempfile::tempdir().unwrap());
    drop(b);
    write_b_config(dir.path(), 0, port);
    let b = Daemon::start_in(dir);
    let out = a.forward_ok("N0BBB", &b);
    assert!(out.contains(&format!("{} sent", 30 - stored)), "{out}");
    let all = b.messages();
    assert_eq!(all.len(), 30, "{all:?}");
    for i in 0..30 {
        let bid = format!("\"bid\":\"FULL{i}_N0ABC\"");
        assert_eq!(all.iter().filter(|m| m.contains(&bid)).count(), 1, "{bid}");
    }
}

#[test]
fn a_traced_partner_has_its_protocol_lines_logged_as_json() {
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0AAA\"\n",
    );
    let port = b.fwd_port.unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        common::config_path(dir.path()),
        format!(
            "[station]\ncallsign = \"N0AAA\"\n[store]\ndurability = \"normal\"\n\
             [log]\nlevel = \"info\"\nformat = \"json\"\n[telnet]\nlisten = [\"127.0.0.1:0\"]\n\
             [[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
             password = \"fwdpw\"\ntrace = true\n"
        ),
    )
    .unwrap();
    let a = Daemon::start_in(dir);
    a.forward_ok("N0BBB", &b);
    let log = a.log();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let traced: Vec<String> = lines
        .iter()
        .filter(|v| v["target"] == "qtc::trace")
        .map(|v| {
            v["fields"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        traced.iter().any(|l| l.starts_with("< [QTC-")),
        "{traced:?}"
    );
    assert!(traced.iter().any(|l| l == "> FF"), "{traced:?}");
    assert!(!log.contains("fwdpw"), "the password is never logged");
}

/// A body submitted by SMTP that ends a message wherever it is read raw (`/EX`, LinFBB's
/// `/AB`, JNOS's 127-byte pieces), each end followed by send lines, and led by a forged R:
/// line; and one a partner relays in B1 with ^Z lines too (issue 35; `common::forging`): in
/// every mode both arrive at the other qtc whole, byte for byte, and nothing is forged.
#[test]
fn a_body_written_to_forge_mail_arrives_whole_and_forges_nothing_in_every_mode() {
    use common::forging;
    for protocol in ["mbl", "fbb", "b0", "b1", "b2"] {
        let extra = format!(
            "[mail]\nsmtp_listen = \"127.0.0.1:0\"\n[forward]\nlisten = [\"127.0.0.1:0\"]\n{}",
            forging::RELAY_PARTNER
        );
        let (a, b) = pair_with(protocol, &extra);
        let out = a.cli(&["user", "add", "N0PTR", "--bbs", "--password", "ptrpw"]);
        assert!(out.status.success(), "{out:?}");
        let smtp = std::net::TcpStream::connect(("127.0.0.1", a.listener_port("smtp"))).unwrap();
        let sent = [
            forging::text(&forging::smtp_lines()),
            forging::text(&forging::relayed_lines()),
        ];
        forging::submit(smtp, "N0USR", "pw", "N0XYZ@N0BBB", "forging", &sent[0]);
        let relay = std::net::TcpStream::connect(("127.0.0.1", a.fwd_port.unwrap())).unwrap();
        forging::deliver_b1(
            relay,
            "N0PTR",
            "ptrpw",
            ("N0XYZ", "N0BBB"),
            "RELAY1_N0PTR",
            &sent[1],
        );
        let out = a.forward_ok("N0BBB", &b);
        assert!(out.contains("0 received, 2 sent"), "{protocol}: {out}");
        let at_b = b.listed();
        assert_eq!(at_b.len(), 2, "{protocol}: {at_b:?}\n{}", b.log());
        for m in &at_b {
            assert_eq!(m.to, "N0XYZ", "{m:?}");
            let want = &sent[usize::from(m.bid == "RELAY1_N0PTR")];
            let stored = b.stored_body(m.number);
            assert!(
                stored == *want,
                "{protocol}: {} stored as {:?}",
                m.bid,
                String::from_utf8_lossy(&stored)
            );
        }
    }
}
