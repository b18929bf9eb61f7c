//! `[mail]`: users' own mail and news clients (SMTP submission, POP3, IMAP, NNTP).

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
    pub(super) pop3_listen: Addrs,
    pub(super) imap_listen: Addrs,
    pub(super) nntp_listen: Addrs,
    /// Local users' mail domain (`CALL@domain`); empty: the station's callsign.
    pub(super) domain: String,
    /// Allow passwords in clear on connections that are neither loopback nor TLS.
    pub(super) plain_auth: bool,
    /// Let NNTP readers read bulletins without a login.
    pub(super) news_without_login: bool,
}

/// `[mail]`, checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mail {
    /// SMTP submission listeners.
    pub smtp: Vec<SocketAddr>,
    /// POP3 listeners.
    pub pop3: Vec<SocketAddr>,
    /// IMAP listeners.
    pub imap: Vec<SocketAddr>,
    /// NNTP listeners.
    pub nntp: Vec<SocketAddr>,
    /// Local users' mail domain, never empty (the callsign when not configured).
    pub domain: String,
    /// Passwords in clear allowed off loopback without TLS.
    pub plain_auth: bool,
    /// NNTP readers read without a login (the default: the BBS login, as LinBPQ).
    pub news_without_login: bool,
}

impl Mail {
    /// Each protocol's listen addresses, by the name the start-up report gives it.
    pub fn listeners(&self) -> [(&'static str, &[SocketAddr]); 4] {
        [
            ("smtp", &self.smtp),
            ("pop3", &self.pop3),
            ("imap", &self.imap),
            ("nntp", &self.nntp),
        ]
    }
}

impl MailCfg {
    /// Checks the values; the error names the key.
    pub(super) fn check(&self, call: &str) -> Result<Mail, super::KeyError> {
        let addrs = |key: &str, a: &Addrs| super::parse_addrs(key, &a.list());
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
        Ok(Mail {
            smtp: addrs("smtp_listen", &self.smtp_listen)?,
            pop3: addrs("pop3_listen", &self.pop3_listen)?,
            imap: addrs("imap_listen", &self.imap_listen)?,
            nntp: addrs("nntp_listen", &self.nntp_listen)?,
            domain: if domain.is_empty() {
                call.to_string()
            } else {
                domain.to_string()
            },
            plain_auth: self.plain_auth,
            news_without_login: self.news_without_login,
        })
    }
}
