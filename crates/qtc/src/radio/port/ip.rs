//! A port task's IP side: IP and ARP frames heard here (UI frames to the IP callsign or to QST,
//! and I frames with PID 0xCC or 0xCD on any link) go to the router, and what the router sends
//! goes out here: UI frames, or I frames on a link from the IP callsign (virtual-circuit mode).
//!
//! A station that calls the IP callsign gets no BBS session until it sends text: JNOS opens
//! such links only to carry datagrams (as NET/ROM neighbours do to the node call, which may
//! be the same call). Links that carry only datagrams close when idle (datagram_links.rs).

use std::time::Instant;

use qtc_ax25::{Address, CommandResponse, Event, Frame, LinkId, Pid};
use qtc_callsign::Callsign;
use qtc_ip::{Mode, QST};
use tokio::sync::mpsc;

use super::datagram_links::DatagramLinks;
use super::Task;
use crate::radio::ip::{IpIn, IpOut, PortHook};

/// The port task's IP state.
pub(super) struct PortIp {
    port: usize,
    call: Callsign,
    to_router: mpsc::Sender<IpIn>,
    /// Links carrying only datagrams.
    links: DatagramLinks,
    /// Frames the router's full queue refused.
    dropped: u64,
}

/// Sets the port up for IP: the IP callsign is ours, UI frames to QST are taken.
pub(super) fn attach(
    port: &mut qtc_ax25::Port,
    hook: Option<PortHook>,
) -> (Option<PortIp>, Option<mpsc::Receiver<IpOut>>) {
    let Some(h) = hook else {
        return (None, None);
    };
    port.add_local(h.call);
    port.add_ui_destination(QST);
    let ip = PortIp {
        port: h.port,
        call: h.call,
        to_router: h.to_router,
        links: DatagramLinks::default(),
        dropped: 0,
    };
    (Some(ip), Some(h.from_router))
}

/// The next frame from the router; never, without IP.
pub(super) async fn next(rx: &mut Option<mpsc::Receiver<IpOut>>) -> Option<IpOut> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn is_ip(pid: Pid) -> bool {
    pid == Pid::IP || pid == Pid::ARP
}

impl PortIp {
    fn hand_to_router(&mut self, from: Callsign, pid: Pid, data: Vec<u8>) {
        let m = IpIn {
            port: self.port,
            from,
            pid: pid.0,
            data,
        };
        if self.to_router.try_send(m).is_err() {
            self.dropped += 1;
            tracing::debug!(dropped = self.dropped, "IP router busy, frame dropped");
        }
    }
}

impl Task {
    /// A UI frame: IP or ARP to the IP callsign or to QST goes to the router.
    pub(super) fn ip_ui(&mut self, f: &Frame) {
        let Some(ip) = &mut self.ip else {
            return;
        };
        let Some(pid) = f.pid.filter(|&p| is_ip(p)) else {
            return;
        };
        if f.address.dest == ip.call || f.address.dest == QST {
            ip.hand_to_router(f.address.src, pid, f.info.clone());
        }
    }

    /// A station calling the IP callsign: a link for datagrams, no session until it sends text.
    pub(super) fn ip_defers(
        &mut self,
        now: Instant,
        id: LinkId,
        local: Callsign,
        remote: Callsign,
    ) -> bool {
        let Some(ip) = &mut self.ip else {
            return false;
        };
        ip.links
            .accept("IP", &self.name, ip.call, (now, id, local, remote))
    }

    /// Takes the IP part of a link's events (datagrams with PID 0xCC or 0xCD on any link, and
    /// everything on a link kept for datagrams); the rest go on.
    pub(super) fn ip_event(&mut self, now: Instant, id: LinkId, event: Event) -> Option<Event> {
        let calls = self.port.link(id).map(|l| (l.local(), l.remote()));
        let Some(ip) = self.ip.as_mut() else {
            return Some(event);
        };
        match event {
            Event::Datagram { pid, data } if is_ip(pid) => {
                if let Some((_, from)) = calls {
                    ip.hand_to_router(from, pid, data);
                }
                ip.links.touch(id, now);
                None
            }
            other if !ip.links.contains(id) => Some(other),
            Event::Data(d) => {
                // Text on an IP link: whoever is there wants the BBS.
                ip.links.remove(id);
                if let Some((_, remote)) = calls {
                    self.accept(now, id, remote);
                }
                Some(Event::Data(d))
            }
            Event::Disconnected { .. } => {
                ip.links.remove(id);
                None
            }
            _ => None,
        }
    }

    /// A frame from the router.
    pub(super) fn ip_out(&mut self, now: Instant, out: IpOut) {
        let Some(call) = self.ip.as_ref().map(|ip| ip.call) else {
            return;
        };
        let pid = Pid(out.pid);
        if out.mode == Mode::Datagram || out.dest == QST {
            let f = Frame::ui(
                Address::new(out.dest, call, CommandResponse::Command),
                pid,
                out.data,
            );
            // The frame holds the modem too: the links' timers count it.
            self.port.sent_other(now, f.buffer_len());
            self.send_frame(&f);
            return;
        }
        let Some((id, new)) = self.datagram_link(now, call, out.dest) else {
            return;
        };
        if let Some(ip) = self.ip.as_mut() {
            if new {
                tracing::info!(port = %self.name, dest = %out.dest, "IP link to a station");
            }
            ip.links.insert(id, now);
        }
        if let Some(link) = self.port.link_mut(id) {
            if let Err(e) = link.send_datagram(now, pid, out.data) {
                tracing::debug!(dest = %out.dest, error = %e, "IP datagram dropped");
            }
        }
    }

    /// When the next IP link falls idle.
    pub(super) fn ip_deadline(&self) -> Option<Instant> {
        self.ip.as_ref()?.links.deadline()
    }

    /// Closes the IP links that fell idle.
    pub(super) fn ip_timeout(&mut self, now: Instant) {
        if let Some(ip) = self.ip.as_mut() {
            let idle = ip.links.take_idle(now);
            self.close_idle(now, idle);
        }
    }
}
