//! The router's task: datagrams from the TUN device, frames from the ports, one timer.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use qtc_ip::{Event, Router, Transmit};
use tokio::sync::{mpsc, watch};

use super::{IpIn, IpOut, IpView};
use crate::clock;
use crate::phy::tun::Tun;

/// Most datagrams read from the TUN device per wake-up: frames from the air get their turn.
const READS_PER_WAKE: usize = 32;
/// Datagrams waiting for the TUN device to take them; beyond it they are dropped.
const TO_HOST_QUEUE: usize = 256;

/// What the router's task needs.
pub struct Setup {
    /// The router.
    pub router: Router,
    /// The TUN device, open and up.
    pub tun: Tun,
    /// Its name.
    pub tun_name: String,
    /// Each port's channel, by port index (`None`: no IP there).
    pub ports: Vec<Option<mpsc::Sender<IpOut>>>,
    /// Port names, by index, for the view and the log.
    pub port_names: Vec<String>,
    /// From the port tasks.
    pub inbox: mpsc::Receiver<IpIn>,
    /// The NET/ROM node, for routes over NET/ROM.
    pub netrom: Option<crate::radio::netrom::NetromHandle>,
    /// IP that came over NET/ROM, with the node it came from.
    pub from_netrom: mpsc::Receiver<super::FromNetrom>,
    /// Where the task publishes its tables.
    pub view: Arc<Mutex<IpView>>,
    /// Stop.
    pub shutdown: watch::Receiver<bool>,
}

struct Task {
    router: Router,
    tun: Option<Tun>,
    tun_name: String,
    rx: Vec<u8>,
    to_host: VecDeque<Vec<u8>>,
    ports: Vec<Option<mpsc::Sender<IpOut>>>,
    port_names: Vec<String>,
    netrom: Option<crate::radio::netrom::NetromHandle>,
    view: Arc<Mutex<IpView>>,
    /// The tables changed since the view was made.
    dirty: bool,
    /// Frames and datagrams a full queue refused.
    dropped: u64,
}

/// Runs the router until shutdown.
pub async fn run(setup: Setup) {
    let Setup {
        router,
        tun,
        tun_name,
        ports,
        port_names,
        mut inbox,
        netrom,
        mut from_netrom,
        view,
        mut shutdown,
    } = setup;
    let cfg = router.config();
    tracing::info!(address = %cfg.address, network = %cfg.network, tun = %tun_name, "IP router up");
    let mut t = Task {
        rx: vec![0u8; 65536],
        router,
        tun: Some(tun),
        tun_name,
        to_host: VecDeque::new(),
        ports,
        port_names,
        netrom,
        view,
        dirty: true,
        dropped: 0,
    };
    let mut timer = clock::Timer::new();
    let (mut inbox_open, mut netrom_open) = (true, true);
    loop {
        t.drain(clock::now());
        timer.set(t.router.poll_timeout());
        tokio::select! {
            () = poll_fn(|cx| t.poll_tun(cx)) => {}
            m = inbox.recv(), if inbox_open => match m {
                Some(m) => t.input(clock::now(), m),
                None => inbox_open = false,
            },
            m = from_netrom.recv(), if netrom_open => match m {
                Some((node, d)) => t.router.handle_netrom(clock::now(), node, &d),
                None => netrom_open = false,
            },
            () = timer.fired() => t.router.handle_timeout(clock::now()),
            _ = shutdown.changed() => break,
        }
    }
}

impl Task {
    /// Settles the router: datagrams to the host and the ports, events to the log, the view.
    fn drain(&mut self, now: Instant) {
        while let Some(tx) = self.router.poll_transmit() {
            self.send(tx);
        }
        while let Some(e) = self.router.poll_event() {
            self.dirty = true;
            self.log(&e);
        }
        let mut v = self.view.lock().unwrap_or_else(|e| e.into_inner());
        if self.dirty {
            self.dirty = false;
            *v = IpView::of(
                &self.router,
                &self.tun_name,
                &self.port_names,
                now,
                clock::unix_now(),
            );
        } else {
            v.stats.clear();
            v.stats.extend(self.router.stats().named());
        }
    }

    fn send(&mut self, tx: Transmit) {
        match tx {
            Transmit::Host(d) => {
                log_datagram("to the host", &d);
                if self.to_host.len() < TO_HOST_QUEUE {
                    self.to_host.push_back(d);
                } else {
                    self.dropped += 1;
                }
            }
            Transmit::Radio {
                port,
                dest,
                pid,
                mode,
                data,
            } => {
                let Some(Some(ch)) = self.ports.get(port) else {
                    return;
                };
                if ch
                    .try_send(IpOut {
                        dest,
                        pid,
                        mode,
                        data,
                    })
                    .is_err()
                {
                    self.dropped += 1;
                    tracing::debug!(
                        port,
                        dropped = self.dropped,
                        "port queue full, IP frame dropped"
                    );
                }
            }
            Transmit::NetRom { node, data } => {
                let sent = self.netrom.as_ref().is_some_and(|n| n.send_ip(node, data));
                if !sent {
                    self.dropped += 1;
                    tracing::debug!(%node, "NET/ROM node busy, IP datagram dropped");
                }
            }
        }
    }

    fn input(&mut self, now: Instant, m: IpIn) {
        if m.pid == qtc_ip::wire::PID_ARP {
            self.dirty = true;
        }
        self.router
            .handle_frame(now, m.port, m.from, m.pid, &m.data);
    }

    fn log(&self, e: &Event) {
        let port = |i: usize| self.port_names.get(i).map_or("?", String::as_str);
        match e {
            Event::ArpLearned { ip, call, port: p } => {
                tracing::info!("ARP: {ip} is {call} on {}", port(*p));
            }
            Event::ArpFailed { ip } => tracing::info!("ARP: no answer for {ip}"),
            Event::AddressClaimed { call, port: p } => tracing::warn!(
                "ARP: {call} on {} claims our address {}",
                port(*p),
                self.router.config().address
            ),
            _ => {}
        }
    }

    /// Writes what waits for the host and reads what the host sent; `Ready` when anything
    /// moved.
    fn poll_tun(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(tun) = self.tun.as_mut() else {
            return Poll::Pending;
        };
        let mut progress = false;
        let mut failed = None;
        while let Some(d) = self.to_host.front() {
            match tun.poll_send(cx, d) {
                Poll::Ready(r) => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "datagram to the host refused");
                    }
                    self.to_host.pop_front();
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        let now = clock::now();
        for _ in 0..READS_PER_WAKE {
            match tun.poll_recv(cx, &mut self.rx) {
                Poll::Ready(Ok(n)) => {
                    log_datagram("from the host", &self.rx[..n]);
                    self.router.handle_host(now, &self.rx[..n]);
                    progress = true;
                }
                Poll::Ready(Err(e)) => {
                    failed = Some(e);
                    break;
                }
                Poll::Pending => break,
            }
        }
        if let Some(e) = failed {
            tracing::error!(error = %e, "the TUN device failed: IP stops");
            self.tun = None;
            progress = true;
        }
        if progress {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// A datagram in the debug log: source, destination, protocol, length.
fn log_datagram(what: &str, d: &[u8]) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    if let Ok((h, _)) = qtc_ip::wire::Header::parse(d) {
        tracing::debug!(src = %h.src, dst = %h.dst, proto = h.protocol, len = d.len(), "IP {what}");
    }
}
