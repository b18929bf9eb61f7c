//! TLS for the tests: self-signed certificates, a client that trusts exactly one, and
//! connections from a chosen loopback address.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use super::PATIENCE;

/// Writes a self-signed certificate for 127.0.0.1 and localhost; returns (cert, key) paths.
pub fn self_signed(dir: &Path, name: &str) -> (String, String) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    (cert.display().to_string(), key.display().to_string())
}

/// A TCP connection to `port` from `ip` (any 127.x.y.z reaches the daemon).
pub async fn connect_from(ip: [u8; 4], port: u16) -> TcpStream {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::from((ip, 0))).unwrap();
    sock.connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap()
}

/// A TLS client that trusts exactly the certificate in `ca`.
pub fn tls_client(ca: &Path) -> tokio_rustls::TlsConnector {
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

/// Reads until `what` arrives and returns what came; panics on close or after [`PATIENCE`].
pub async fn read_until<S: tokio::io::AsyncRead + Unpin>(s: &mut S, what: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while super::find(&seen, what.as_bytes()).is_none() {
        let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("never saw {what:?}"))
            .unwrap();
        assert!(n > 0, "closed before {what:?}: {seen:?}");
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}
