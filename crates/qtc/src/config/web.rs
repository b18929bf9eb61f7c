//! `[web]`: the sysop's dashboard and `/metrics`.

use std::net::SocketAddr;

use serde::Deserialize;

/// `[web]`: off unless `listen` is set.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WebCfg {
    /// "IP:PORT" for the dashboard and `/metrics`; empty: no web listener.
    pub listen: String,
    /// Host names the dashboard answers to; empty: IP addresses and `localhost` only.
    pub hosts: Vec<String>,
    /// A connection with no response for this long is closed ("60s").
    pub idle_timeout: String,
    /// Most web connections at once.
    pub max_connections: usize,
    /// Most web connections from one address at once.
    pub max_per_address: usize,
}

impl Default for WebCfg {
    fn default() -> Self {
        WebCfg {
            listen: String::new(),
            hosts: Vec::new(),
            idle_timeout: "60s".into(),
            max_connections: 256,
            max_per_address: 10,
        }
    }
}

impl WebCfg {
    /// Checks the values; the error names the key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        self.idle()?;
        if self.max_connections == 0 {
            return Err(("max_connections", "expected at least 1".into()));
        }
        if self.max_per_address == 0 {
            return Err(("max_per_address", "expected at least 1".into()));
        }
        self.addr().map(|_| ())
    }

    /// `idle_timeout`, parsed.
    pub fn idle(&self) -> Result<std::time::Duration, (&'static str, String)> {
        super::parse_duration(&self.idle_timeout)
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                (
                    "idle_timeout",
                    format!(
                        "expected a duration such as \"60s\", got {:?}",
                        self.idle_timeout
                    ),
                )
            })
    }

    /// The listen address, `None` when the web listener is off.
    pub fn addr(&self) -> Result<Option<SocketAddr>, (&'static str, String)> {
        if self.listen.trim().is_empty() {
            return Ok(None);
        }
        self.listen.trim().parse().map(Some).map_err(|_| {
            (
                "listen",
                format!(
                    "expected \"IP:PORT\" such as \"127.0.0.1:8080\", got {:?}",
                    self.listen
                ),
            )
        })
    }
}
