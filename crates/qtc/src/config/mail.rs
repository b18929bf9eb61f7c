//! `[mail]`: users' own mail and news clients (SMTP submission, POP3, IMAP, NNTP), each
//! protocol on plain-text ports (STARTTLS when `[tls]` is set) and implicit-TLS ports
//! (`smtps_listen`, `pop3s_listen`, `imaps_listen`, `nntps_listen`: 465, 995, 993, 563).

use std::net::SocketAddr;

use serde::Deserialize;

/// One address or a list of them (`"127.0.0.1:2525"` or `["127.0.0.1:2525", "[::1]:2525"]`).
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(untagged)]
pub(super) enum Addrs {
    /// None given.
    #[default]
    None,
    /// One address.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Addrs {
    fn list(&self) -> Vec<String> {
        match self {
            Addrs::None => Vec::new(),
            Addrs::One(a) if a.trim().is_empty() => Vec::new(),
            Addrs::One(a) => vec![a.trim().to_string()],
            Addrs::Many(v) => v.clone(),
        }
    }
}

/// `[mail]` as written.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub(super) struct MailCfg {
    pub(super) smtp_listen: Addrs,
    pub(super) smtps_listen: Addrs,
    pub(super) pop3_listen: Addrs,
    pub(super) pop3s_listen: Addrs,
    pub(super) imap_listen: Addrs,
    pub(super) imaps_listen: Addrs,
    pub(super) nntp_listen: Addrs,
    pub(super) nntps_listen: Addrs,
    /// Local users' mail domain (`CALL@domain`); empty: the station's callsign.
    pub(super) domain: String,
    /// Take passwords on plain-text connections from any address (its first name was
    /// `plain_auth`, which read like the SASL mechanism).
    #[serde(alias = "plain_auth")]
    pub(super) passwords_in_clear: bool,
    /// Let NNTP readers read bulletins without a login.
    pub(super) news_without_login: bool,
}

/// Which protocol a mail listener speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// SMTP submission.
    Smtp,
    /// POP3.
    Pop3,
    /// IMAP4rev1.
    Imap,
    /// NNTP.
    Nntp,
}

impl Protocol {
    /// Its name in logs and the start-up report.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Smtp => "smtp",
            Protocol::Pop3 => "pop3",
            Protocol::Imap => "imap",
            Protocol::Nntp => "nntp",
        }
    }
}

/// Every kind of mail listener, in the order they are reported: the protocol, and whether it
/// speaks TLS from the first byte.
const KINDS: [(Protocol, bool); 8] = [
    (Protocol::Smtp, false),
    (Protocol::Smtp, true),
    (Protocol::Pop3, false),
    (Protocol::Pop3, true),
    (Protocol::Imap, false),
    (Protocol::Imap, true),
    (Protocol::Nntp, false),
    (Protocol::Nntp, true),
];

/// One mail listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    /// What it speaks.
    pub protocol: Protocol,
    /// TLS from the first byte (the `*s_listen` keys); otherwise plain text, with STARTTLS
    /// when `[tls]` is set.
    pub tls: bool,
    /// Where.
    pub addr: SocketAddr,
}

impl Listener {
    /// `smtp`, `smtps`, `imap`...: its name in the start-up report, logs and metrics.
    pub fn name(&self) -> &'static str {
        name_of(self.protocol, self.tls)
    }

    /// Its key in `[mail]`: `imaps_listen`...
    pub fn key(&self) -> String {
        format!("{}_listen", self.name())
    }
}

/// The name of a kind of listener ([`Listener::name`]).
fn name_of(protocol: Protocol, tls: bool) -> &'static str {
    match (protocol, tls) {
        (Protocol::Smtp, false) => "smtp",
        (Protocol::Smtp, true) => "smtps",
        (Protocol::Pop3, false) => "pop3",
        (Protocol::Pop3, true) => "pop3s",
        (Protocol::Imap, false) => "imap",
        (Protocol::Imap, true) => "imaps",
        (Protocol::Nntp, false) => "nntp",
        (Protocol::Nntp, true) => "nntps",
    }
}

/// `[mail]`, checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mail {
    /// Every listener, in the order of [`KINDS`].
    pub listeners: Vec<Listener>,
    /// Local users' mail domain, never empty (the callsign when not configured).
    pub domain: String,
    /// Passwords in clear allowed off loopback without TLS.
    pub passwords_in_clear: bool,
    /// NNTP readers read without a login (the default: the BBS login, as LinBPQ).
    pub news_without_login: bool,
}

impl Mail {
    /// Whether any listener speaks TLS from the first byte (they need `[tls]`).
    pub fn any_tls(&self) -> bool {
        self.listeners.iter().any(|l| l.tls)
    }

    /// A line for each listener where nobody on another host could ever give a password:
    /// plain text off loopback, with neither STARTTLS (`tls`: `[tls]` is set) nor
    /// `passwords_in_clear`. `qtc check` and the start-up report print them.
    pub fn password_warnings(&self, tls: bool) -> Vec<String> {
        if tls || self.passwords_in_clear {
            return Vec::new();
        }
        let plain_off_loopback = self
            .listeners
            .iter()
            .filter(|l| !l.tls && !l.addr.ip().to_canonical().is_loopback());
        plain_off_loopback
            .map(|l| {
                // News is read without a login only when the sysop allows it.
                let what = match l.protocol {
                    Protocol::Nntp if self.news_without_login => {
                        "news is read there without a login, but nobody on another host can post"
                    }
                    Protocol::Nntp => {
                        "nobody on another host can log in there to read or post news"
                    }
                    _ => "nobody on another host can ever log in there",
                };
                format!(
                    "{} on {}: {what}: no password is taken in clear over the network and there \
                     is no [tls] for STARTTLS; set [tls] (`qtc cert` makes a certificate), or \
                     [mail] passwords_in_clear = true on a trusted LAN",
                    l.name(),
                    l.addr
                )
            })
            .collect()
    }
}

impl MailCfg {
    /// The addresses written for one kind of listener.
    fn addrs(&self, protocol: Protocol, tls: bool) -> &Addrs {
        match (protocol, tls) {
            (Protocol::Smtp, false) => &self.smtp_listen,
            (Protocol::Smtp, true) => &self.smtps_listen,
            (Protocol::Pop3, false) => &self.pop3_listen,
            (Protocol::Pop3, true) => &self.pop3s_listen,
            (Protocol::Imap, false) => &self.imap_listen,
            (Protocol::Imap, true) => &self.imaps_listen,
            (Protocol::Nntp, false) => &self.nntp_listen,
            (Protocol::Nntp, true) => &self.nntps_listen,
        }
    }

    /// Checks the values; the error names the key.
    pub(super) fn check(&self, call: qtc_callsign::Callsign) -> Result<Mail, super::KeyError> {
        let domain = self.domain.trim();
        if !domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '#'))
        {
            return Err(super::KeyError::new(
                "domain",
                format!("expected a domain such as \"bbs.example.org\", got {domain:?}"),
            ));
        }
        let mut listeners = Vec::new();
        for (protocol, tls) in KINDS {
            let key = format!("{}_listen", name_of(protocol, tls));
            for addr in super::parse_addrs(&key, &self.addrs(protocol, tls).list())? {
                listeners.push(Listener {
                    protocol,
                    tls,
                    addr,
                });
            }
        }
        Ok(Mail {
            listeners,
            domain: if domain.is_empty() {
                call.to_string()
            } else {
                domain.to_string()
            },
            passwords_in_clear: self.passwords_in_clear,
            news_without_login: self.news_without_login,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(text: &str) -> Mail {
        let cfg: MailCfg = toml::from_str(text).unwrap();
        cfg.check("N0CALL".parse().unwrap()).unwrap()
    }

    #[test]
    fn listeners_are_named_by_protocol_and_tls_in_key_order() {
        let m = mail(
            "imaps_listen = \"0.0.0.0:993\"\nsmtp_listen = [\"127.0.0.1:587\", \"[::1]:587\"]\n\
             nntps_listen = \"[::]:563\"\n",
        );
        let named: Vec<String> = m
            .listeners
            .iter()
            .map(|l| format!("{} {}", l.key(), l.addr))
            .collect();
        assert_eq!(
            named,
            [
                "smtp_listen 127.0.0.1:587",
                "smtp_listen [::1]:587",
                "imaps_listen 0.0.0.0:993",
                "nntps_listen [::]:563"
            ]
        );
        assert!(m.any_tls());
    }

    #[test]
    fn a_plain_listener_off_loopback_without_tls_is_named() {
        let m = mail(
            "imap_listen = [\"127.0.0.1:143\", \"0.0.0.0:143\"]\nnntp_listen = \"[::]:119\"\n",
        );
        let w = m.password_warnings(false);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("imap on 0.0.0.0:143: nobody on another host"));
        assert!(w[1].starts_with("nntp on [::]:119: nobody on another host can log in"));
        assert!(w[0].contains("passwords_in_clear = true"));
        // STARTTLS, or the sysop's word, lets them log in.
        assert!(m.password_warnings(true).is_empty());
        let lan = mail("imap_listen = \"0.0.0.0:143\"\npasswords_in_clear = true\n");
        assert!(lan.password_warnings(false).is_empty());
        // The key's first name still works.
        let old = mail("imap_listen = \"0.0.0.0:143\"\nplain_auth = true\n");
        assert!(old.passwords_in_clear);
        // Anonymous readers still read where the sysop lets them.
        let open = mail("nntp_listen = \"[::]:119\"\nnews_without_login = true\n");
        let w = open.password_warnings(false);
        assert!(w[0].starts_with("nntp on [::]:119: news is read there without a login"));
    }
}
