//! TLS on the forwarding and telnet listeners and on a partner link, with self-signed
//! certificates made for the test.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use common::{Daemon, PATIENCE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

/// A TCP connection to `port` from `ip` (any 127.x.y.z reaches the daemon).
async fn connect_from(ip: [u8; 4], port: u16) -> TcpStream {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::from((ip, 0))).unwrap();
    sock.connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap()
}

/// A TLS client that trusts exactly the certificate in `ca`.
fn tls_client(ca: &Path) -> tokio_rustls::TlsConnector {
    use rustls_pki_types::pem::PemObject;
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
}

/// Reads until `what` arrives; panics on close or after [`PATIENCE`].
async fn read_until<S: tokio::io::AsyncRead + Unpin>(s: &mut S, what: &str) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while common::find(&seen, what.as_bytes()).is_none() {
        let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("never saw {what:?}"))
            .unwrap();
        assert!(n > 0, "closed before {what:?}: {seen:?}");
        seen.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn unfinished_tls_handshakes_hold_no_more_than_their_address_cap() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(certs.path(), "b");
    let d = Daemon::start(&format!(
        "tls_listen = [\"127.0.0.1:0\"]\nmax_per_address = 2\n\
         [tls]\ncert = \"{cert}\"\nkey = \"{key}\"\n"
    ));
    let port = port_of(&d, "telnet-tls");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Two handshakes from one address that never finish: the start of a record, then
        // silence.
        let mut stuck = Vec::new();
        for _ in 0..2 {
            let mut s = connect_from([127, 0, 0, 1], port).await;
            s.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
            stuck.push(s);
        }
        // A third from the same address is closed at once (the daemon accepts in order), not
        // after the handshake's 30 seconds.
        let mut third = connect_from([127, 0, 0, 1], port).await;
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(PATIENCE, third.read(&mut buf))
            .await
            .expect("the third handshake from one address was not closed");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        // Another address still completes its handshake and gets the login prompt.
        let tcp = connect_from([127, 0, 0, 2], port).await;
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let ca = certs.path().join("b.crt");
        let mut tls = tls_client(&ca).connect(name, tcp).await.unwrap();
        read_until(&mut tls, "Callsign:").await;
        drop(stuck);
    });
}
