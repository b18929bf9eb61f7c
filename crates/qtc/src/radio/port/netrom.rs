//! A port task's NET/ROM side: NODES broadcasts and datagrams heard here go to the node, and
//! what the node sends goes out here, datagrams over an AX.25 link from the node call.
//!
//! A link carries NET/ROM and text side by side, told apart by each I frame's PID (JNOS does
//! the same). A station that calls the node call (never a BBS callsign: the config keeps them
//! apart) gets no BBS session until it sends text: neighbours open such links only to send
//! datagrams, and a greeting on them would be noise (JNOS, too, waits for a line before it
//! starts its mailbox on its interface call). Links that carry only datagrams close after
//! [`LINK_IDLE`](super::datagram_links::LINK_IDLE) without one.

use std::time::Instant;

use qtc_ax25::{Address, CommandResponse, DisconnectReason, Event, Frame, LinkId, Pid};
use qtc_callsign::Callsign;
use tokio::sync::mpsc;

use super::datagram_links::DatagramLinks;
use super::Task;
use crate::radio::netrom::{NetIn, NetOut, PortHook};

/// The broadcast address of NODES.
const NODES: Callsign = match Callsign::new("NODES", 0) {
    Ok(call) => call,
    Err(_) => panic!("NODES is a callsign"),
};

/// The port task's NET/ROM state.
pub(super) struct PortNetrom {
    port: usize,
    call: Callsign,
    to_node: mpsc::Sender<NetIn>,
    /// Links carrying NET/ROM with no session, and when each last carried a datagram.
    links: DatagramLinks,
}

/// Sets the port up for NET/ROM: the node call is ours, NODES broadcasts are taken.
pub(super) fn attach(
    port: &mut qtc_ax25::Port,
    hook: Option<PortHook>,
) -> (Option<PortNetrom>, Option<mpsc::Receiver<NetOut>>) {
    let Some(h) = hook else {
        return (None, None);
    };
    port.add_local(h.call);
    port.add_ui_destination(NODES);
    let n = PortNetrom {
        port: h.port,
        call: h.call,
        to_node: h.to_node,
        links: DatagramLinks::default(),
    };
    (Some(n), Some(h.from_node))
}

/// The next frame from the node; never, without one.
pub(super) async fn next(rx: &mut Option<mpsc::Receiver<NetOut>>) -> Option<NetOut> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

impl Task {
    /// A UI frame: a NODES broadcast goes to the node.
    pub(super) fn netrom_ui(&mut self, f: &Frame) {
        let Some(n) = &mut self.netrom else {
            return;
        };
        if f.address.dest != NODES || f.pid != Some(Pid::NETROM) {
            return;
        }
        let m = NetIn::Nodes {
            port: n.port,
            from: f.address.src,
            info: f.info.clone(),
        };
        if n.to_node.try_send(m).is_err() {
            tracing::debug!(port = %self.name, "NET/ROM node busy, NODES broadcast dropped");
        }
    }

    /// A station calling our node call: a NET/ROM link, no session until it sends text.
    pub(super) fn netrom_defers(
        &mut self,
        now: Instant,
        id: LinkId,
        local: Callsign,
        remote: Callsign,
    ) -> bool {
        let Some(n) = &mut self.netrom else {
            return false;
        };
        n.links
            .accept("NET/ROM", &self.name, n.call, (now, id, local, remote))
    }

    /// Takes the NET/ROM part of a link's events; the rest go on to the link's session.
    pub(super) fn netrom_event(&mut self, now: Instant, id: LinkId, event: Event) -> Option<Event> {
        let calls = self.port.link(id).map(|l| (l.local(), l.remote()));
        let Some(n) = self.netrom.as_mut() else {
            return Some(event);
        };
        match event {
            Event::Datagram { data, .. } => {
                if let Some((_, from)) = calls {
                    let m = NetIn::Datagram {
                        port: n.port,
                        from,
                        data,
                    };
                    if n.to_node.try_send(m).is_err() {
                        tracing::debug!("NET/ROM node busy, datagram dropped");
                    }
                }
                n.links.touch(id, now);
                None
            }
            other if !n.links.contains(id) => Some(other),
            Event::Data(d) => {
                // Text on a NET/ROM link: whoever is there wants the BBS.
                n.links.remove(id);
                if let Some((_, remote)) = calls {
                    self.accept(now, id, remote);
                }
                Some(Event::Data(d))
            }
            Event::Disconnected { reason } => {
                n.links.remove(id);
                // A neighbour that does not answer (or refuses a link) is gone: its routes go,
                // and the node sends what the link lost by another one. A DM on a link that was
                // up is a neighbour that restarted: it is there, and its next link will do.
                let failed = matches!(
                    reason,
                    DisconnectReason::Refused | DisconnectReason::Timeout
                );
                if let (true, Some((_, neighbour))) = (failed, calls) {
                    tracing::info!(port = %self.name, %neighbour, ?reason, "NET/ROM link failed");
                    let m = NetIn::LinkFailed {
                        port: n.port,
                        neighbour,
                    };
                    if n.to_node.try_send(m).is_err() {
                        tracing::debug!("NET/ROM node busy, link failure dropped");
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// A frame from the node.
    pub(super) fn netrom_out(&mut self, now: Instant, out: NetOut) {
        let Some(call) = self.netrom.as_ref().map(|n| n.call) else {
            return;
        };
        match out {
            NetOut::Nodes(info) => {
                let f = Frame::ui(
                    Address::new(NODES, call, CommandResponse::Command),
                    Pid::NETROM,
                    info,
                );
                self.send_frame(&f);
            }
            NetOut::Datagram { neighbour, data } => {
                let Some(id) = self.netrom_link(now, call, neighbour) else {
                    return;
                };
                if let Some(n) = self.netrom.as_mut() {
                    n.links.touch(id, now);
                }
                if let Some(link) = self.port.link_mut(id) {
                    if let Err(e) = link.send_datagram(now, Pid::NETROM, data) {
                        tracing::debug!(%neighbour, error = %e, "NET/ROM datagram dropped");
                    }
                }
            }
        }
    }

    /// The link from the node call to `neighbour`: the one there is, or a new one.
    fn netrom_link(&mut self, now: Instant, call: Callsign, neighbour: Callsign) -> Option<LinkId> {
        let (id, new) = self.datagram_link(now, call, neighbour)?;
        if new {
            tracing::info!(port = %self.name, %neighbour, "NET/ROM link to a neighbour");
            if let Some(n) = self.netrom.as_mut() {
                n.links.insert(id, now);
            }
        }
        Some(id)
    }

    /// The links carrying NET/ROM alone.
    pub(super) fn netrom_links(&self) -> Vec<LinkId> {
        self.netrom
            .as_ref()
            .map(|n| n.links.ids())
            .unwrap_or_default()
    }

    /// When the next NET/ROM link falls idle.
    pub(super) fn netrom_deadline(&self) -> Option<Instant> {
        let n = self.netrom.as_ref()?;
        n.links.deadline()
    }

    /// Closes the NET/ROM links idle for [`LINK_IDLE`](super::datagram_links::LINK_IDLE).
    pub(super) fn netrom_timeout(&mut self, now: Instant) {
        let Some(n) = self.netrom.as_mut() else {
            return;
        };
        let idle = n.links.take_idle(now);
        self.close_idle(now, idle);
    }
}
