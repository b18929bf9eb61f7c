//! TLS (rustls): our certificate for the TLS listeners (telnet, forwarding, the mail ports'
//! implicit TLS and STARTTLS) with the fingerprint users pin, the self-signed certificate
//! `qtc init` and `qtc cert` make so that mail clients get TLS out of the box, and the
//! connector for outgoing partner links (`connect = "tls:HOST:PORT"`), so passwords between
//! qtc nodes no longer cross the Internet in clear. Certificates and keys are PEM files named
//! in the config.

use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A certificate made here is valid for this many years: users pin it, and a new one means
/// pinning again.
const YEARS_VALID: i64 = 10;

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

/// Our certificate, loaded.
pub struct Ours {
    /// For the TLS listeners and STARTTLS.
    pub acceptor: TlsAcceptor,
    /// The SHA-256 fingerprint of the certificate clients are shown ([`fingerprint`]).
    pub fingerprint: String,
}

/// Loads our certificate chain and its private key (`[tls] cert`, `key`).
pub fn ours(cert: &Path, key: &Path) -> anyhow::Result<Ours> {
    let chain = certs(cert)?;
    let fingerprint = fingerprint(&chain[0]);
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read a PEM private key from {}", key.display()))?;
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("the [tls] certificate and key do not match")?;
    Ok(Ours {
        acceptor: TlsAcceptor::from(Arc::new(cfg)),
        fingerprint,
    })
}

/// A certificate's SHA-256 fingerprint as clients show it (Thunderbird, mutt,
/// `openssl x509 -fingerprint -sha256`): upper-case hex pairs joined by colons.
pub fn fingerprint(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    let pairs: Vec<String> = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    pairs.join(":")
}

/// The start-up report's and `qtc check`'s line about our certificate: users compare the
/// fingerprint with what their client shows, or pin it.
pub fn certificate_line(cert: &Path, fingerprint: &str) -> String {
    format!(
        "tls: certificate {}, SHA-256 fingerprint {fingerprint}",
        cert.display()
    )
}

/// A certificate [`self_signed`] made.
#[derive(Debug)]
pub struct Made {
    /// The names and addresses it is valid for.
    pub names: Vec<String>,
    /// Its SHA-256 fingerprint.
    pub fingerprint: String,
}

/// The names a certificate made here carries: this host's name (and `NAME.local`, its mDNS
/// name, when it has no domain), `extra` (the mail domain, names given to `qtc cert`), the
/// interfaces' addresses, `localhost` and the loopback addresses. A client checks the name or
/// address it connected to against these, even when it trusts the certificate itself.
pub fn host_names(extra: &[String]) -> Vec<String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim().to_ascii_lowercase();
    let mut names = Vec::new();
    if !host.is_empty() && host != "localhost" {
        names.push(host.clone());
        if !host.contains('.') {
            names.push(format!("{host}.local"));
        }
    }
    names.extend(extra.iter().map(|n| n.trim().to_ascii_lowercase()));
    names.extend(interface_addresses());
    names.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| !n.is_empty() && seen.insert(n.clone()));
    names
}

/// The addresses of this host's interfaces that clients elsewhere may connect to: not
/// loopback (named anyway), nor link-local (the same on every link).
fn interface_addresses() -> Vec<String> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let ip = |a: &nix::sys::socket::SockaddrStorage| -> Option<IpAddr> {
        match (a.as_sockaddr_in(), a.as_sockaddr_in6()) {
            (Some(v4), _) => Some(IpAddr::V4(v4.ip())),
            (_, Some(v6)) => Some(IpAddr::V6(v6.ip())),
            _ => None,
        }
    };
    let reachable = |ip: &IpAddr| {
        let local = match ip {
            IpAddr::V4(v4) => v4.is_link_local(),
            IpAddr::V6(v6) => v6.is_unicast_link_local(),
        };
        !(local || ip.is_loopback() || ip.is_unspecified() || ip.is_multicast())
    };
    interfaces
        .filter_map(|i| ip(i.address.as_ref()?))
        .filter(reachable)
        .map(|ip| ip.to_string())
        .collect()
}

/// Makes a self-signed certificate for `names` (the first is its subject), valid from the
/// day of `now` (Unix seconds) for [`YEARS_VALID`] years, and writes it to `cert` (PEM,
/// readable by all: users copy it to pin it) and its new private key to `key` (PEM, the
/// owner's alone, 0600). Neither file may exist: nothing is overwritten.
pub fn self_signed(cert: &Path, key: &Path, names: &[String], now: i64) -> anyhow::Result<Made> {
    let mut params = rcgen::CertificateParams::new(names.to_vec())
        .map_err(|e| anyhow::anyhow!("cannot make a certificate for {names:?}: {e}"))?;
    let subject = names.first().map_or("qtc", String::as_str);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, subject);
    let today = qtc_mail::Utc::from_unix(now);
    let year = i32::try_from(today.year).context("the system clock is off")?;
    // Days 29-31 do not exist in every month of a later year.
    let (month, day) = (today.month as u8, today.day.min(28) as u8);
    params.not_before = rcgen::date_time_ymd(year, month, day);
    params.not_after = rcgen::date_time_ymd(year + YEARS_VALID as i32, month, day);
    let pair = rcgen::KeyPair::generate().context("cannot make a key pair")?;
    let made = params
        .self_signed(&pair)
        .context("cannot sign the certificate")?;
    let mut key_file = create(key, 0o600)?;
    let mut cert_file = match create(cert, 0o644) {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_file(key);
            return Err(e);
        }
    };
    key_file
        .write_all(pair.serialize_pem().as_bytes())
        .with_context(|| format!("cannot write {}", key.display()))?;
    cert_file
        .write_all(made.pem().as_bytes())
        .with_context(|| format!("cannot write {}", cert.display()))?;
    Ok(Made {
        names: names.to_vec(),
        fingerprint: fingerprint(made.der()),
    })
}

/// A new file with `mode` whatever the umask says; an existing one is an error.
fn create(path: &Path, mode: u32) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| match path.exists() {
            true => format!("{} exists already; not overwritten", path.display()),
            false => format!("cannot write {}", path.display()),
        })?;
    // The umask may have taken bits away from a public certificate.
    f.set_permissions(std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))?;
    Ok(f)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_certificate_loads_with_its_key_and_keeps_the_key_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let names = host_names(&["bbs.example.org".into()]);
        assert!(names.contains(&"bbs.example.org".to_string()));
        assert!(names.contains(&"127.0.0.1".to_string()));
        // 2024-02-29: a later year has no February 29th.
        let made = self_signed(&cert, &key, &names, 1_709_164_800).unwrap();
        let ours = ours(&cert, &key).unwrap();
        assert_eq!(ours.fingerprint, made.fingerprint);
        assert_eq!(made.fingerprint.len(), 32 * 3 - 1);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&key), mode(&cert)), (0o600, 0o644));
        // Nothing is overwritten, and a refused pair leaves no half behind.
        let e = self_signed(&cert, &key, &names, 0).unwrap_err();
        assert!(format!("{e:#}").contains("exists already"), "{e:#}");
        let other = dir.path().join("other-key.pem");
        assert!(self_signed(&cert, &other, &names, 0).is_err());
        assert!(!other.exists());
    }

    #[test]
    fn the_fingerprint_is_sha256_in_colon_hex() {
        // SHA-256 of the empty string.
        assert!(fingerprint(b"").starts_with("E3:B0:C4:42:98:FC:1C:14"));
    }
}
