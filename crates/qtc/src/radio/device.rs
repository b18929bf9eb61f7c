//! The byte side of a radio port: a KISS byte stream (TCP, pty, serial) or AXUDP datagrams.
//! Output goes through a bounded queue: when the far end stops reading, writes wait for
//! writability (epoll) and frames beyond the bound are dropped (AX.25 retransmits).

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use qtc_callsign::Callsign;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UdpSocket;

use super::pty::TtyIo;
use crate::config::radio::{Kind, KissParams};

/// Most bytes of encoded KISS waiting for the device; frames beyond it are dropped.
pub const MAX_KISS_QUEUE: usize = 32 * 1024;
/// Most AXUDP datagrams waiting for the socket.
pub const MAX_UDP_QUEUE: usize = 64;
/// One read from the device takes up to this much.
pub const READ_BUF: usize = 4096;

/// A byte stream a KISS TNC sits on.
pub trait ByteDev: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> ByteDev for T {}

/// An open device.
pub enum Dev {
    /// KISS framing on a byte stream.
    Kiss {
        /// The stream.
        io: Box<dyn ByteDev>,
        /// Incoming KISS state.
        dec: qtc_kiss::Decoder,
        /// Encoded frames not yet written, from `sent` on.
        out: Vec<u8>,
        /// How much of `out` is written.
        sent: usize,
        /// TNC port (channel).
        kiss_port: u8,
    },
    /// AXUDP.
    Udp {
        /// The socket.
        sock: UdpSocket,
        /// Where each callsign lives.
        peers: Vec<(Callsign, SocketAddr)>,
        /// Datagrams not yet sent.
        out: VecDeque<(SocketAddr, Vec<u8>)>,
    },
}

/// Opens the device for `kind`; a KISS modem is sent `params` first.
pub async fn open(kind: &Kind, kiss_port: u8, params: KissParams) -> io::Result<Dev> {
    let kiss = |io: Box<dyn ByteDev>| Dev::Kiss {
        io,
        dec: qtc_kiss::Decoder::new(),
        out: Vec::new(),
        sent: 0,
        kiss_port,
    };
    let mut dev = match kind {
        Kind::KissTcp(addr) => {
            let s = tokio::net::TcpStream::connect(addr).await?;
            let _ = s.set_nodelay(true);
            kiss(Box::new(s))
        }
        Kind::Axudp { listen, peers } => Dev::Udp {
            sock: UdpSocket::bind(listen).await?,
            peers: peers.clone(),
            out: VecDeque::new(),
        },
        Kind::PtyDevice(p) => kiss(Box::new(TtyIo::open(p, None)?)),
        Kind::PtyCreate(p) => kiss(Box::new(TtyIo::create(p)?)),
        Kind::Serial { device, baud } => kiss(Box::new(TtyIo::open(device, Some(*baud))?)),
    };
    dev.queue_params(&params);
    Ok(dev)
}

impl Dev {
    /// Queues the KISS parameter frames that are set (TXDELAY, persistence, slot time, TXtail,
    /// full duplex: spec §1.2), each a one-byte frame; nothing for AXUDP.
    fn queue_params(&mut self, p: &KissParams) {
        let Dev::Kiss { out, kiss_port, .. } = self else {
            return;
        };
        let set = [
            (qtc_kiss::Command::TxDelay, p.txdelay),
            (qtc_kiss::Command::Persistence, p.persist),
            (qtc_kiss::Command::SlotTime, p.slottime),
            (qtc_kiss::Command::TxTail, p.txtail),
            (qtc_kiss::Command::FullDuplex, p.full_duplex.map(u8::from)),
        ];
        for (command, value) in set {
            if let Some(v) = value {
                // One byte, a valid port: encoding cannot fail.
                let _ = qtc_kiss::encode(*kiss_port, command, &[v], out);
            }
        }
    }

    /// Queues one AX.25 frame (no FCS) for sending; false when it was dropped (queue full).
    pub fn queue(&mut self, frame: &[u8]) -> bool {
        match self {
            Dev::Kiss {
                out,
                sent,
                kiss_port,
                ..
            } => {
                if *sent == out.len() {
                    out.clear();
                    *sent = 0;
                }
                if out.len() - *sent + frame.len() * 2 + 4 > MAX_KISS_QUEUE {
                    return false;
                }
                qtc_kiss::encode(*kiss_port, qtc_kiss::Command::Data, frame, out).is_ok()
            }
            Dev::Udp { peers, out, .. } => {
                if out.len() >= MAX_UDP_QUEUE || peers.is_empty() {
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
                let matching: Vec<SocketAddr> = peers
                    .iter()
                    .filter(|(c, _)| dest.is_some_and(|d| d.base() == c.base()))
                    .map(|(_, a)| *a)
                    .collect();
                // Unknown next hop (a UI beacon, say): every peer gets it.
                let targets = if matching.is_empty() {
                    peers.iter().map(|(_, a)| *a).collect()
                } else {
                    matching
                };
                for a in targets {
                    if out.len() < MAX_UDP_QUEUE {
                        out.push_back((a, data.clone()));
                    }
                }
                true
            }
        }
    }

    /// Discards queued output (the device went away).
    pub fn has_output(&self) -> bool {
        match self {
            Dev::Kiss { out, sent, .. } => *sent < out.len(),
            Dev::Udp { out, .. } => !out.is_empty(),
        }
    }

    /// Reads what is there; received AX.25 frames (no FCS) go to `frames`. `Ready(Ok(false))`
    /// means end of stream.
    pub fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        frames: &mut Vec<Vec<u8>>,
    ) -> Poll<io::Result<bool>> {
        match self {
            Dev::Kiss {
                io, dec, kiss_port, ..
            } => {
                let mut rb = ReadBuf::new(buf);
                match Pin::new(io).poll_read(cx, &mut rb) {
                    Poll::Ready(Ok(())) => {
                        let data = rb.filled();
                        if data.is_empty() {
                            return Poll::Ready(Ok(false));
                        }
                        let want = *kiss_port;
                        dec.decode(data, &mut |f| {
                            if f.port == want && f.command == qtc_kiss::Command::Data {
                                frames.push(f.payload);
                            }
                        });
                        Poll::Ready(Ok(true))
                    }
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            }
            Dev::Udp { sock, .. } => {
                let mut rb = ReadBuf::new(buf);
                match sock.poll_recv_from(cx, &mut rb) {
                    Poll::Ready(Ok(_from)) => {
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
        }
    }

    /// Writes queued output until it is all written (`Ready(Ok)`) or the device is full
    /// (`Pending`, woken when writable).
    pub fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Dev::Kiss { io, out, sent, .. } => {
                while *sent < out.len() {
                    match Pin::new(&mut *io).poll_write(cx, &out[*sent..]) {
                        Poll::Ready(Ok(0)) => {
                            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()))
                        }
                        Poll::Ready(Ok(n)) => *sent += n,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => return Poll::Pending,
                    }
                }
                out.clear();
                *sent = 0;
                Poll::Ready(Ok(()))
            }
            Dev::Udp { sock, out, .. } => {
                while let Some((addr, data)) = out.front() {
                    match sock.poll_send_to(cx, data, *addr) {
                        Poll::Ready(Ok(_)) => {
                            out.pop_front();
                        }
                        Poll::Ready(Err(e)) => {
                            // One unreachable peer must not stop the port.
                            tracing::debug!(error = %e, peer = %addr, "AXUDP send failed");
                            out.pop_front();
                        }
                        Poll::Pending => return Poll::Pending,
                    }
                }
                Poll::Ready(Ok(()))
            }
        }
    }
}
