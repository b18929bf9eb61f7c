//! `kind = "axudp"`: AX.25 frames with their FCS in UDP datagrams (ax25ipd, JNOS, LinBPQ).
//!
//! Only the configured `peers` are heard: a datagram from any other address is dropped. Our
//! answers go to the peers' addresses by callsign, so a station at an address we do not know
//! would get a session whose answers went to someone else (and anyone on the Internet could
//! open one); LinBPQ's AXIP likewise takes only its `MAP` entries unless told otherwise.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use qtc_callsign::Callsign;
use tokio::io::ReadBuf;
use tokio::net::UdpSocket;

use super::{BadKey, Device, Keys, KindDef, KissSetup, Opening, PeerKeys, Spec};

/// Most AXUDP datagrams waiting for the socket.
pub const MAX_UDP_QUEUE: usize = 64;

/// The kind's row. The `--port` argument is `LISTEN:PEER`, each `IP:PORT` (IPv4, or
/// `[IPv6]:PORT`); the peer is the called station.
pub(super) const KIND: KindDef = KindDef {
    name: "axudp",
    arg: "LISTEN_IP:PORT:PEER_IP:PORT",
    check,
    from_arg,
};

fn from_arg(rest: &str, remote: Callsign) -> Option<Keys> {
    let (listen, peer) = rest.match_indices(':').rev().find_map(|(i, _)| {
        let (a, b) = (&rest[..i], &rest[i + 1..]);
        (a.parse::<SocketAddr>().is_ok() && b.parse::<SocketAddr>().is_ok()).then_some((a, b))
    })?;
    Some(Keys {
        listen: listen.to_string(),
        peers: vec![PeerKeys {
            callsign: remote.to_string(),
            address: peer.to_string(),
        }],
        ..Keys::default()
    })
}

/// AXUDP, checked.
#[derive(Debug)]
pub struct Axudp {
    /// Local address.
    pub listen: SocketAddr,
    /// Peers by callsign.
    pub peers: Vec<(Callsign, SocketAddr)>,
}

fn check(k: &Keys) -> Result<super::Kind, BadKey> {
    let listen = k.listen.parse().map_err(|_| {
        BadKey::new(
            "listen",
            format!(
                "expected \"IP:PORT\" such as \"127.0.0.1:10093\", got {:?}",
                k.listen
            ),
        )
    })?;
    let mut peers = Vec::new();
    for peer in &k.peers {
        let call: Callsign = peer
            .callsign
            .parse()
            .map_err(|e| BadKey::new("peers", format!("callsign {:?}: {e}", peer.callsign)))?;
        let addr = peer.address.parse().map_err(|_| {
            BadKey::new(
                "peers",
                format!("expected address \"IP:PORT\", got {:?}", peer.address),
            )
        })?;
        peers.push((call, addr));
    }
    Ok(super::Kind::new(Axudp { listen, peers }))
}

impl Spec for Axudp {
    fn describe(&self) -> String {
        let peers: Vec<String> = self.peers.iter().map(|(c, a)| format!("{c}@{a}")).collect();
        format!("axudp {} peers {}", self.listen, peers.join(","))
    }

    fn for_users(&self) -> String {
        "AX.25 over UDP (AXUDP)".into()
    }

    fn default_modem_baud(&self) -> u32 {
        0
    }

    fn open(&self, _kiss: KissSetup) -> Opening {
        let (listen, peers) = (self.listen, self.peers.clone());
        Box::pin(async move {
            let dev: Box<dyn Device> = Box::new(UdpDev {
                sock: UdpSocket::bind(listen).await?,
                peers,
                out: VecDeque::new(),
            });
            Ok(dev)
        })
    }
}

/// An AXUDP socket.
struct UdpDev {
    sock: UdpSocket,
    /// Where each callsign lives.
    peers: Vec<(Callsign, SocketAddr)>,
    /// Datagrams not yet sent.
    out: VecDeque<(SocketAddr, Vec<u8>)>,
}

impl Device for UdpDev {
    fn queue(&mut self, frame: &[u8]) -> bool {
        if self.out.len() >= MAX_UDP_QUEUE || self.peers.is_empty() {
            return false;
        }
        let dest = qtc_ax25::Address::parse(frame).ok().map(|(a, _)| {
            // The next hop: the first digipeater not yet passed, else the destination.
            a.path
                .as_slice()
                .iter()
                .find(|d| !d.repeated)
                .map_or(a.dest, |d| d.call)
        });
        let mut data = frame.to_vec();
        qtc_ax25::wire::append_fcs(&mut data);
        let matching: Vec<SocketAddr> = self
            .peers
            .iter()
            .filter(|(c, _)| dest.is_some_and(|d| d.base() == c.base()))
            .map(|(_, a)| *a)
            .collect();
        // Unknown next hop (a UI beacon, say): every peer gets it.
        let targets = if matching.is_empty() {
            self.peers.iter().map(|(_, a)| *a).collect()
        } else {
            matching
        };
        for a in targets {
            if self.out.len() < MAX_UDP_QUEUE {
                self.out.push_back((a, data.clone()));
            }
        }
        true
    }

    fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        frames: &mut Vec<Vec<u8>>,
    ) -> Poll<io::Result<bool>> {
        let mut rb = ReadBuf::new(buf);
        match self.sock.poll_recv_from(cx, &mut rb) {
            Poll::Ready(Ok(from)) if !self.peers.iter().any(|(_, a)| *a == from) => {
                tracing::debug!(%from, "AXUDP datagram from an address that is no peer, dropped");
                Poll::Ready(Ok(true))
            }
            Poll::Ready(Ok(_)) => {
                // A bad FCS (or BPQ's 9-byte keepalive) is dropped.
                if let Ok(f) = qtc_ax25::wire::check_fcs(rb.filled()) {
                    frames.push(f.to_vec());
                }
                Poll::Ready(Ok(true))
            }
            // ICMP port unreachable from a peer not up yet: not our socket's fault.
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                Poll::Ready(Ok(true))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((addr, data)) = self.out.front() {
            match self.sock.poll_send_to(cx, data, *addr) {
                Poll::Ready(Ok(_)) => {
                    self.out.pop_front();
                }
                Poll::Ready(Err(e)) => {
                    // One unreachable peer must not stop the port.
                    tracing::debug!(error = %e, peer = %addr, "AXUDP send failed");
                    self.out.pop_front();
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}
