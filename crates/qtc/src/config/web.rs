//! `[web]`: the sysop's dashboard and `/metrics`.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use serde::Deserialize;

use super::KeyError;

/// `[web]`: off unless `listen` is set.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(super) struct WebCfg {
    /// "IP:PORT" for the dashboard and `/metrics`; empty: no web listener.
    pub(super) listen: String,
    /// Host names the dashboard answers to; empty: IP addresses and `localhost` only.
    pub(super) hosts: Vec<String>,
    /// A connection with no response for this long is closed ("60s").
    pub(super) idle_timeout: String,
    /// Most web connections at once.
    pub(super) max_connections: usize,
    /// Most web connections from one address at once.
    pub(super) max_per_address: usize,
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

/// `[web]`, checked: the listener is on.
#[derive(Debug, Clone, PartialEq)]
pub struct Web {
    /// The dashboard's and `/metrics`' address.
    pub listen: SocketAddr,
    /// Host names the dashboard answers to; empty: IP addresses and `localhost` only.
    pub hosts: Vec<String>,
    /// A connection with no response for this long is closed.
    pub idle: Duration,
    /// Most web connections at once.
    pub max_connections: NonZeroUsize,
    /// Most web connections from one address at once.
    pub max_per_address: NonZeroUsize,
}

impl WebCfg {
    /// Checks the values; `None` when the web listener is off. The error names the key.
    pub(super) fn check(&self) -> Result<Option<Web>, KeyError> {
        let idle = super::duration("idle_timeout", &self.idle_timeout, "\"60s\"", false)?;
        let max_connections = super::at_least_one("max_connections", self.max_connections)?;
        let max_per_address = super::at_least_one("max_per_address", self.max_per_address)?;
        if self.listen.trim().is_empty() {
            return Ok(None);
        }
        let listen = self.listen.trim().parse().map_err(|_| {
            KeyError::new(
                "listen",
                format!(
                    "expected \"IP:PORT\" such as \"127.0.0.1:8080\", got {:?}",
                    self.listen
                ),
            )
        })?;
        Ok(Some(Web {
            listen,
            hosts: self.hosts.clone(),
            idle,
            max_connections,
            max_per_address,
        }))
    }
}
