//! Addresses between e-mail and packet mail, as LinBPQ's mail server writes them
//! (`MailTCP.c`, `CreateSMTPMessage`):
//!
//! - `CALL@<this BBS>`: a local user; "this BBS" is the callsign, the hierarchical address or
//!   the configured mail domain.
//! - `CALL@BBS.#REGION.STATE.COUNTRY.CONT`: personal mail routed over packet; the domain is
//!   the hierarchical `@` field as typed at `SP CALL @ ...`.
//! - `bull/CATEGORY@AREA` (`bull/WX@WW`): a bulletin, as `SB CATEGORY @ AREA`.
//! - `nts/ZIP@NTSXX`: NTS traffic, as `ST`.
//! - `CALL%BBS.HADDR@<this BBS>`: JNOS's "user%host hack" (`smtpserv.c`), for clients that
//!   will only send to a domain they know: the part after `%` is the `@`.
//!
//! The sender is always the logged-in call, whatever the client's `From:` says.

use qtc_mail::MsgType;

use crate::Settings;

/// Where a recipient address sends a message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dest {
    /// P, B or T.
    pub kind: MsgType,
    /// The addressee or bulletin category, upper case.
    pub to: String,
    /// The `@` field, upper case; empty for a local user.
    pub at: String,
}

/// Why an address is refused, in words for the client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AddrError(pub String);

/// The destination of a recipient address (`<N0OTH@N0CALL>`, `bull/WX@WW`...).
pub fn parse(address: &str, s: &Settings) -> Result<Dest, AddrError> {
    let a = address.trim().trim_start_matches('<').trim_end_matches('>');
    let a = a.trim().trim_matches('"');
    let (kind, rest) = match a.split_once('/') {
        Some((p, r)) if p.eq_ignore_ascii_case("bull") => (MsgType::Bulletin, r),
        Some((p, r)) if p.eq_ignore_ascii_case("nts") => (MsgType::Traffic, r),
        Some(_) => return Err(AddrError(format!("{a}: unknown prefix (bull/ or nts/)"))),
        None => (MsgType::Personal, a),
    };
    let (to, domain) = rest.split_once('@').unwrap_or((rest, ""));
    let (to, domain) = match to.rsplit_once('%') {
        Some((call, host)) if domain.is_empty() || s.is_ours(domain) => (call, host),
        _ => (to, domain),
    };
    // LinBPQ lets an NTS area end in `.NTS` for clients that want a dot in a domain.
    let domain = match kind {
        MsgType::Traffic => domain.trim_end_matches(".nts").trim_end_matches(".NTS"),
        _ => domain,
    };
    let ours = domain.is_empty() || s.is_ours(domain);
    if kind == MsgType::Personal && !ours && !is_packet_address(domain) {
        // `someone@gmail.com`: mail for the Internet, which this BBS does not reach.
        return Err(AddrError(format!(
            "{to}@{domain}: no Internet gateway here (packet addresses only: CALL@BBS.#REGION...)"
        )));
    }
    let at = if kind == MsgType::Personal && ours {
        String::new()
    } else {
        domain.to_ascii_uppercase()
    };
    check(kind, to, &at)
}

/// Whether a domain reads as a hierarchical packet address: a station's callsign first
/// (`GB7BPQ.#23.GBR.EURO`), then regions and areas of letters and digits.
fn is_packet_address(domain: &str) -> bool {
    let mut elements = domain.split('.');
    let first = elements.next().unwrap_or("");
    qtc_callsign::Callsign::parse_station(first).is_ok_and(|c| c.ssid() == 0)
        && elements.all(|e| {
            let e = e.strip_prefix('#').unwrap_or(e);
            !e.is_empty() && e.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// Checks a destination as the `S` command does (a callsign or category of at most 6, a
/// hierarchical address of at most 31, one word each), and a personal addressee is a
/// station's callsign.
pub fn check(kind: MsgType, to: &str, at: &str) -> Result<Dest, AddrError> {
    let (to, at) = (to.to_ascii_uppercase(), at.to_ascii_uppercase());
    qtc_mail::dest::check(&to, &at).map_err(|e| AddrError(format!("{to}@{at}: {e}")))?;
    if kind == MsgType::Personal && qtc_callsign::Callsign::parse_station(&to).is_err() {
        return Err(AddrError(format!("{to}: not a callsign")));
    }
    Ok(Dest { kind, to, at })
}

/// A packet address as an e-mail address: `CALL@AT`, a local one `CALL@domain`.
pub fn email(call: &str, at: &str, s: &Settings) -> String {
    if at.is_empty() || qtc_mail::route::is_local(at, s.call) {
        format!("{call}@{}", s.domain)
    } else {
        format!("{call}@{at}")
    }
}

/// The hierarchical address of the BBS a message was first stored at: the `@:` (or `@`) of
/// its oldest R: line; empty when it has none.
pub fn origin(rlines: &[u8]) -> String {
    let text = String::from_utf8_lossy(rlines);
    let Some(last) = text.lines().rfind(|l| l.starts_with("R:")) else {
        return String::new();
    };
    let Some(pos) = last.find('@') else {
        return String::new();
    };
    last[pos + 1..]
        .trim_start_matches(':')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '#')
        .collect::<String>()
        .to_ascii_uppercase()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn settings() -> Settings {
        Settings {
            call: "N0CALL".parse().unwrap(),
            haddr: "N0CALL.#NCA.CA.USA.NOAM".into(),
            domain: "bbs.example.org".into(),
            max_message: 100_000,
            plain_auth: true,
            starttls: false,
            news_without_login: false,
            version: "test".into(),
        }
    }

    #[test]
    fn addresses_as_linbpq_writes_them() {
        let s = settings();
        let d = |a: &str| parse(a, &s);
        let local = Dest {
            kind: MsgType::Personal,
            to: "N0OTH".into(),
            at: String::new(),
        };
        assert_eq!(d("<n0oth@n0call>").unwrap(), local);
        assert_eq!(d("N0OTH@bbs.example.org").unwrap(), local);
        assert_eq!(d("n0oth@N0CALL.#NCA.CA.USA.NOAM").unwrap(), local);
        let far = d("g8bpq@gb7bpq.#23.gbr.euro").unwrap();
        assert_eq!(
            (far.to.as_str(), far.at.as_str()),
            ("G8BPQ", "GB7BPQ.#23.GBR.EURO")
        );
        let b = d("bull/WX@WW").unwrap();
        assert_eq!(
            (b.kind, b.to.as_str(), b.at.as_str()),
            (MsgType::Bulletin, "WX", "WW")
        );
        let jnos = d("g8bpq%gb7bpq.#23.gbr.euro@bbs.example.org").unwrap();
        assert_eq!(
            (jnos.to.as_str(), jnos.at.as_str()),
            ("G8BPQ", "GB7BPQ.#23.GBR.EURO")
        );
        let t = d("nts/12345@ntsca.nts").unwrap();
        assert_eq!((t.kind, t.at.as_str()), (MsgType::Traffic, "NTSCA"));
        for bad in [
            "toolongcall@n0call",
            "x y@z",
            "foo/n0oth@x",
            "notacall@n0call",
        ] {
            assert!(d(bad).is_err(), "{bad}");
        }
        // Internet mail: no gateway, whatever the local part's length.
        for internet in ["someone@gmail.com", "n0oth@example.org"] {
            let e = d(internet).unwrap_err().0;
            assert!(e.contains("no Internet gateway here"), "{internet}: {e}");
        }
        assert_eq!(email("N0USR", "", &s), "N0USR@bbs.example.org");
        assert_eq!(
            email("G8BPQ", "GB7BPQ.#23.GBR.EURO", &s),
            "G8BPQ@GB7BPQ.#23.GBR.EURO"
        );
        assert_eq!(
            origin(
                b"R:261202/1231Z @:N0AAA.#NCA #:7 $:7_N0AAA\r\nR:261202/1200Z 45@N0CCC.NOAM\r\n"
            ),
            "N0CCC.NOAM"
        );
    }
}
