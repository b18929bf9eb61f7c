//! TLS on the forwarding, telnet and mail listeners (implicit TLS) and on a partner link,
//! with self-signed certificates made for the test; the handshake's limits on every TLS
//! door.

mod common;

use std::path::Path;

use common::tls::{connect_from, read_until, self_signed, tls_client};
use common::{Daemon, PATIENCE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
    let port = b.listener_port("forward-tls");
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
    let tls_port = b.listener_port("telnet-tls");
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

/// A daemon with every kind of TLS listener for users: telnet and the mail ports' implicit
/// TLS, with `extra` in `[telnet]`.
fn tls_doors(certs: &Path, extra: &str) -> Daemon {
    let (cert, key) = self_signed(certs, "b");
    Daemon::start(&format!(
        "tls_listen = [\"127.0.0.1:0\"]\n{extra}\n\
         [tls]\ncert = \"{cert}\"\nkey = \"{key}\"\n\
         [mail]\nimaps_listen = \"127.0.0.1:0\"\npop3s_listen = \"127.0.0.1:0\"\n\
         smtps_listen = \"127.0.0.1:0\"\nnntps_listen = \"127.0.0.1:0\"\n"
    ))
}

/// Each TLS door and the first words a client gets after its handshake.
const TLS_DOORS: [(&str, &str); 5] = [
    ("telnet-tls", "Callsign:"),
    ("imaps", "* OK"),
    ("pop3s", "+OK"),
    ("smtps", "220 "),
    ("nntps", "20"),
];

/// A TLS client from `ip` that completes its handshake on `port` and reads `greeting`.
async fn greeted(certs: &Path, ip: [u8; 4], port: u16, greeting: &str) {
    let tcp = connect_from(ip, port).await;
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tls_client(&certs.join("b.crt"))
        .connect(name, tcp)
        .await
        .unwrap();
    read_until(&mut tls, greeting).await;
}

/// A handshake that never finishes: the start of a record, then silence.
async fn stuck_handshake(ip: [u8; 4], port: u16) -> tokio::net::TcpStream {
    let mut s = connect_from(ip, port).await;
    s.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    s
}

/// Waits for `s` to be closed by the daemon.
async fn closed(s: &mut tokio::net::TcpStream, what: &str) {
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(PATIENCE, s.read(&mut buf))
        .await
        .unwrap_or_else(|_| panic!("{what} was not closed"));
    assert!(matches!(read, Ok(0) | Err(_)), "{what}: {read:?}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn unfinished_tls_handshakes_hold_no_more_than_their_address_cap() {
    let certs = tempfile::tempdir().unwrap();
    let d = tls_doors(certs.path(), "max_per_address = 2");
    runtime().block_on(async {
        // Every door in turn, each from addresses of its own (the cap counts every door).
        for (i, (door, greeting)) in (1u8..).zip(TLS_DOORS) {
            let port = d.listener_port(door);
            let mut stuck = Vec::new();
            for _ in 0..2 {
                stuck.push(stuck_handshake([127, 0, 1, i], port).await);
            }
            // A third from the same address is closed at once (the daemon accepts in
            // order), not after the handshake's 30 seconds.
            let mut third = connect_from([127, 0, 1, i], port).await;
            closed(&mut third, &format!("the third handshake on {door}")).await;
            // Another address still completes its handshake and is greeted.
            greeted(certs.path(), [127, 0, 2, i], port, greeting).await;
            drop(stuck);
        }
    });
}

#[test]
fn an_unfinished_handshake_on_a_mail_port_gives_its_place_to_a_newcomer() {
    let certs = tempfile::tempdir().unwrap();
    let d = tls_doors(certs.path(), "max_logins = 2");
    let port = d.listener_port("imaps");
    runtime().block_on(async {
        // Both places among the connections logging in held by handshakes that never
        // finish, from two addresses (the per-address cap does not stop them).
        let mut first = stuck_handshake([127, 0, 3, 1], port).await;
        let _second = stuck_handshake([127, 0, 3, 2], port).await;
        // A newcomer is served (the daemon accepts in order); the longest waiting handshake
        // gave up its place.
        greeted(certs.path(), [127, 0, 3, 3], port, "* OK").await;
        closed(&mut first, "the oldest handshake").await;
    });
}
