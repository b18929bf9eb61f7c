//! What the sysop's tools (`qtc ctl`, the web dashboard, the health model) may do with
//! forwarding: read each partner's state and call one now. Made in `daemon.rs`; the
//! forwarding internals (BIDs in flight, the packer, session settings) stay behind it.

use std::sync::Arc;

use qtc_callsign::Callsign;
use tokio::sync::watch;

use super::{call, forward_answer, Active, Forwarder, PartnerLog, Summary};
use crate::config::forward::Partner;
use crate::radio::Radios;

/// A handle on forwarding for the sysop's tools.
#[derive(Clone)]
pub struct ForwardHandle {
    fwd: Arc<Forwarder>,
    radios: Radios,
    stop: watch::Receiver<bool>,
}

impl ForwardHandle {
    /// Forwarding through `fwd`; calls go out over TCP or `radios` and end at `stop`.
    pub fn new(fwd: Arc<Forwarder>, radios: Radios, stop: watch::Receiver<bool>) -> Self {
        ForwardHandle { fwd, radios, stop }
    }

    /// Our callsign.
    pub fn call(&self) -> Callsign {
        self.fwd.call
    }

    /// The configured partners, as configured now.
    pub fn partners(&self) -> Arc<[Partner]> {
        self.fwd.partners()
    }

    /// A partner's recent sessions (newest first) and byte totals since the daemon started.
    pub fn partner_log(&self, partner: Callsign) -> PartnerLog {
        self.fwd.partner_log(partner)
    }

    /// When the schedule calls `partner` next, if it has one.
    pub fn next_call(&self, partner: Callsign) -> Option<i64> {
        self.fwd.next_call(partner)
    }

    /// Sessions in progress, by partner.
    pub fn active(&self) -> Vec<(Callsign, Active)> {
        self.fwd.active()
    }

    /// Calls `partner` now and waits until the session ends (`qtc ctl forward`, the web's
    /// Forward now).
    pub async fn forward_now(&self, partner: Callsign) -> Summary {
        call::call(self.fwd.clone(), &self.radios, partner, self.stop.clone()).await
    }

    /// Calls the partner `name` names (as the sysop typed it) now and waits until the session
    /// ends: the one-line answer of `qtc ctl forward` and the web's Forward now
    /// ([`forward_answer`]). A name that is no callsign, or has an SSID, is no partner.
    pub async fn forward_named(&self, name: &str) -> String {
        match Callsign::parse_station(name) {
            Ok(partner) if partner.ssid() == 0 => {
                forward_answer(partner, &self.forward_now(partner).await)
            }
            _ => format!(
                "error: {} is not a configured [[partner]]",
                name.trim().to_ascii_uppercase()
            ),
        }
    }
}
