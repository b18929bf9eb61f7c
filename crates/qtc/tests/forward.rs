//! Two (and three) real qtc instances forwarding to each other over loopback TCP.

mod common;

use common::Daemon;

/// Logs in to `d` as `call` and sends one message.
fn post(d: &Daemon, call: &str, pw: &str, cmd: &str, subject: &str, body: &str) {
    let mut c = d.connect();
    c.expect("Callsign: ");
    c.send(call);
    c.expect("Password: ");
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
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{port}\"\npassword = \"fwdpw\"\nprotocol = \"{protocol}\"\nroutes = [\"N0BBB\", \"WW\"]\n"
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
    assert!(a.log().contains(&format!("mode={mode} ")), "{}", a.log());
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
