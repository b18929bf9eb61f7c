//! Optional TLS (rustls): on the telnet and forwarding listeners, and on outgoing partner links
//! (`connect = "tls:HOST:PORT"`), so passwords between qtc nodes no longer cross the Internet in
//! clear. Certificates and keys are PEM files named in the config.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("cannot read certificates from {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} holds a bad PEM certificate", path.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{} holds no PEM certificate", path.display());
    }
    Ok(certs)
}

/// The acceptor for TLS listeners: our certificate chain and its private key.
pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<TlsAcceptor> {
    let chain = certs(cert)?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read a PEM private key from {}", key.display()))?;
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("the [tls] certificate and key do not match")?;
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

/// A connector for a partner link that trusts exactly the certificates in `ca` (the partner's
/// own self-signed certificate, or the CA that signed it).
pub fn connector(ca: &Path) -> anyhow::Result<TlsConnector> {
    let mut roots = RootCertStore::empty();
    for c in certs(ca)? {
        roots
            .add(c)
            .with_context(|| format!("{} holds an unusable certificate", ca.display()))?;
    }
    let cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(cfg)))
}

/// The name a partner's certificate must carry.
pub fn server_name(name: &str) -> anyhow::Result<ServerName<'static>> {
    ServerName::try_from(name.to_string())
        .map_err(|_| anyhow::anyhow!("{name:?} is not a DNS name or IP address"))
}
