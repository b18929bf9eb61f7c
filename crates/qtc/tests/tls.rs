//! TLS on the forwarding and telnet listeners and on a partner link, with self-signed
//! certificates made for the test.

mod common;

use std::path::Path;

use common::Daemon;

/// Writes a self-signed certificate for 127.0.0.1 and localhost; returns (cert, key) paths.
fn self_signed(dir: &Path, name: &str) -> (String, String) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    (cert.display().to_string(), key.display().to_string())
}

fn port_of(d: &Daemon, what: &str) -> u16 {
    let prefix = format!("{what}: listening on ");
    d.stdout
        .iter()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no {what} listener in {:?}", d.stdout))
}

fn tls_receiver(certs: &Path) -> Daemon {
    let (cert, key) = self_signed(certs, "b");
    Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs"), ("N0USR", "pw", "")],
        &format!(
            "tls_listen = [\"127.0.0.1:0\"]\n[tls]\ncert = \"{cert}\"\nkey = \"{key}\"\n\
             [forward]\ntls_listen = [\"127.0.0.1:0\"]\n\
             [[partner]]\ncallsign = \"N0AAA\"\nroutes = [\"N0AAA\", \"WW\"]\n"
        ),
    )
}

fn caller(port: u16, ca: &str) -> Daemon {
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tls:127.0.0.1:{port}\"\n\
             tls_ca = \"{ca}\"\npassword = \"fwdpw\"\nprotocol = \"b1\"\nroutes = [\"WW\"]\n"
        ),
    );
    let file = a.dir.path().join("in.txt");
    std::fs::write(
        &file,
        "SB ALL @ WW < N0ABC $T1_N0ABC\nOver TLS\nsecret \u{ff} stuff\n/EX\n",
    )
    .unwrap();
    a.import(&file, 1);
    a
}

#[test]
fn partners_forward_over_tls_and_check_the_certificate() {
    let certs = tempfile::tempdir().unwrap();
    let b = tls_receiver(certs.path());
    let port = port_of(&b, "forward-tls");
    let ca = certs.path().join("b.crt").display().to_string();
    let a = caller(port, &ca);
    let out = a.forward_ok("N0BBB", &b);
    assert!(out.contains("0 received, 1 sent"), "{out}");
    assert!(b.messages().iter().any(|m| m.contains("Over TLS")));

    // A partner that does not trust B's certificate refuses to talk, and keeps its mail.
    let (other, _) = self_signed(certs.path(), "stranger");
    let c = caller(port, &other);
    let (ok, out) = c.try_ctl(&["forward", "N0BBB"]);
    assert!(!ok && out.contains("TLS"), "{out}");
    assert!(c.fwd_queue(Some("N0BBB")).contains("\n1 queued"));
}

#[test]
fn a_plain_client_on_a_tls_port_gets_nothing_and_the_daemon_goes_on() {
    let certs = tempfile::tempdir().unwrap();
    let b = tls_receiver(certs.path());
    let tls_port = port_of(&b, "telnet-tls");
    let mut plain = common::Client::connect(tls_port);
    plain.send("N0USR");
    let got = plain.expect_close();
    assert!(!got.contains("Callsign"), "{got}");
    // The ordinary telnet port still serves.
    let mut c = b.connect();
    c.expect("Callsign:");
    c.send("N0USR");
    c.expect("Password:");
    c.send("pw");
    c.expect("de N0BBB>");
}
