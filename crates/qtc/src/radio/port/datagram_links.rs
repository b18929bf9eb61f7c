//! Links a port task keeps for layer-3 datagrams alone (IP's virtual circuits; NET/ROM's
//! links to neighbours are the same kind): opened when a datagram needs one, never given a
//! session unless the far end sends text, and closed after [`LINK_IDLE`] without a datagram.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use qtc_ax25::{LinkId, Path, State};
use qtc_callsign::Callsign;

use super::Task;

/// A link that carried no datagram (and has no session) this long is closed; shorter than T3,
/// so an idle port polls nobody.
pub(super) const LINK_IDLE: Duration = Duration::from_secs(180);

/// The links, and when each last carried a datagram.
#[derive(Default)]
pub(super) struct DatagramLinks(BTreeMap<LinkId, Instant>);

impl DatagramLinks {
    /// Keeps `id` for datagrams, used now.
    pub(super) fn insert(&mut self, id: LinkId, now: Instant) {
        self.0.insert(id, now);
    }

    /// A station calling `ours` (IP's or the node's call) on link `id`: kept for datagrams,
    /// with no session until it sends text. False (and nothing kept) for a call to another of
    /// the port's calls. `what` names the layer in the log line.
    pub(super) fn accept(
        &mut self,
        what: &str,
        port: &str,
        ours: Callsign,
        (now, id, local, remote): (Instant, LinkId, Callsign, Callsign),
    ) -> bool {
        if local != ours {
            return false;
        }
        tracing::info!(port = %port, %remote, "{what} link in");
        self.insert(id, now);
        true
    }

    /// `id` carried a datagram now (if it is one of these).
    pub(super) fn touch(&mut self, id: LinkId, now: Instant) {
        if let Some(t) = self.0.get_mut(&id) {
            *t = now;
        }
    }

    /// Whether `id` is kept for datagrams.
    pub(super) fn contains(&self, id: LinkId) -> bool {
        self.0.contains_key(&id)
    }

    /// The links kept.
    pub(super) fn ids(&self) -> Vec<LinkId> {
        self.0.keys().copied().collect()
    }

    /// `id` is no longer one of these (it went down, or has a session now).
    pub(super) fn remove(&mut self, id: LinkId) {
        self.0.remove(&id);
    }

    /// When the next one falls idle.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.0.values().min().map(|&t| t + LINK_IDLE)
    }

    /// Takes the links idle for [`LINK_IDLE`] at `now`.
    pub(super) fn take_idle(&mut self, now: Instant) -> Vec<LinkId> {
        let idle: Vec<LinkId> = self
            .0
            .iter()
            .filter(|(_, &t)| t + LINK_IDLE <= now)
            .map(|(&id, _)| id)
            .collect();
        for id in &idle {
            self.0.remove(id);
        }
        idle
    }
}

impl Task {
    /// The link from `call` to `dest`: the one there is unless it is going down, or a new one
    /// (`true` with it). `None` when no link can be opened (the port's limit).
    pub(super) fn datagram_link(
        &mut self,
        now: Instant,
        call: Callsign,
        dest: Callsign,
    ) -> Option<(LinkId, bool)> {
        if let Some(id) = self.port.find(call, dest) {
            let usable = self.port.link(id).is_some_and(|l| {
                !matches!(l.state(), State::Disconnected | State::AwaitingRelease)
            });
            if usable {
                return Some((id, false));
            }
        }
        match self.port.connect(now, call, dest, Path::new()) {
            Ok(id) => Some((id, true)),
            Err(e) => {
                tracing::debug!(%dest, error = %e, "no link, datagram dropped");
                None
            }
        }
    }

    /// Disconnects links that fell idle.
    pub(super) fn close_idle(&mut self, now: Instant, ids: Vec<LinkId>) {
        for id in ids {
            if let Some(link) = self.port.link_mut(id) {
                tracing::debug!(remote = %link.remote(), "idle datagram link closed");
                link.disconnect(now);
            }
        }
    }
}
