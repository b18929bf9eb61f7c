//! IP over AX.25 (`[ip]`): one task owns the sans-IO `qtc_ip::Router` and the TUN device, as
//! the NET/ROM node's task owns its node. The port tasks of the `ip = true` ports hand it the
//! IP and ARP frames they hear ([`IpIn`]) and send what it asks for ([`IpOut`]): UI frames, or
//! I frames on an AX.25 link from the IP callsign to the station (virtual-circuit mode, opened
//! when needed, closed after a while without a datagram: radio/port/datagram_links.rs).
//!
//! Idle, the task sleeps in epoll on the TUN descriptor and its channels: only an ARP request
//! waiting for its answer arms a timer.

mod task;
mod view;

use std::sync::{Arc, Mutex};

use qtc_callsign::Callsign;
use tokio::sync::{mpsc, watch};
use tokio_util::task::TaskTracker;

pub use view::{ArpRow, IpView, RouteRow};

use crate::config::ip::Ip;
use crate::config::Loaded;
use crate::phy::tun::Tun;

/// Frames waiting between the router and a port task, each way; beyond it they are dropped
/// (as frames lost on the air: TCP sends again).
pub const QUEUE: usize = 256;

/// An IP or ARP frame a port task heard, for the router.
#[derive(Debug)]
pub struct IpIn {
    /// The port's index.
    pub port: usize,
    /// The sender.
    pub from: Callsign,
    /// 0xCC (IP) or 0xCD (ARP).
    pub pid: u8,
    /// The information field.
    pub data: Vec<u8>,
}

/// An IP datagram that came to our NET/ROM node, with the node it came from.
pub type FromNetrom = crate::radio::netrom::IpFromNode;

/// A frame the router asks a port task to send from the IP callsign.
#[derive(Debug)]
pub struct IpOut {
    /// The station, or QST.
    pub dest: Callsign,
    /// 0xCC or 0xCD.
    pub pid: u8,
    /// A UI frame, or an I frame on a link to `dest`.
    pub mode: qtc_ip::Mode,
    /// The information field.
    pub data: Vec<u8>,
}

/// A port task's side of the router.
pub struct PortHook {
    /// The port's index.
    pub port: usize,
    /// Our IP callsign.
    pub call: Callsign,
    /// To the router.
    pub to_router: mpsc::Sender<IpIn>,
    /// From the router.
    pub from_router: mpsc::Receiver<IpOut>,
}

/// The running router, as the rest of the daemon sees it.
#[derive(Clone)]
pub struct IpHandle {
    view: Arc<Mutex<IpView>>,
}

impl IpHandle {
    /// The tables and counters now.
    pub fn view(&self) -> IpView {
        let v = self.view.lock().unwrap_or_else(|e| e.into_inner()).clone();
        v.at(crate::clock::unix_now())
    }
}

/// The start-up report's line for IP.
pub fn describe(ip: &Ip, ports: &[crate::config::radio::RadioPort]) -> String {
    crate::config::ip::describe(ip, ports)
}

/// The channels between the router and the IP ports, made before the port tasks start.
pub struct Wiring {
    router: qtc_ip::Config,
    tun_name: String,
    port_names: Vec<String>,
    to_router: mpsc::Sender<IpIn>,
    inbox: mpsc::Receiver<IpIn>,
    hooks: Vec<Option<PortHook>>,
    senders: Vec<Option<mpsc::Sender<IpOut>>>,
    /// IP that came over NET/ROM: the node task's end, and the router's.
    from_netrom: (mpsc::Sender<FromNetrom>, mpsc::Receiver<FromNetrom>),
}

impl Wiring {
    /// A channel pair for every `ip = true` port.
    pub fn new(c: &Loaded, ip: &Ip) -> Wiring {
        let (to_router, inbox) = mpsc::channel(QUEUE);
        let (mut hooks, mut senders) = (Vec::new(), Vec::new());
        for (i, p) in c.radio_ports.iter().enumerate() {
            if p.ip.is_none() {
                hooks.push(None);
                senders.push(None);
                continue;
            }
            let (tx, rx) = mpsc::channel(QUEUE);
            hooks.push(Some(PortHook {
                port: i,
                call: ip.call,
                to_router: to_router.clone(),
                from_router: rx,
            }));
            senders.push(Some(tx));
        }
        Wiring {
            router: ip.router.clone(),
            tun_name: ip.tun.clone(),
            port_names: c.radio_ports.iter().map(|p| p.name.clone()).collect(),
            to_router,
            inbox,
            hooks,
            senders,
            from_netrom: mpsc::channel(QUEUE),
        }
    }

    /// Where the NET/ROM node hands IP datagrams that came to it.
    pub fn netrom_sender(&self) -> mpsc::Sender<FromNetrom> {
        self.from_netrom.0.clone()
    }

    /// Port `i`'s hook, for its task.
    pub fn hook(&mut self, i: usize) -> Option<PortHook> {
        self.hooks.get_mut(i).and_then(Option::take)
    }

    /// Starts the router's task on the TUN device; `netrom` carries its routes over NET/ROM.
    pub fn start(
        self,
        tun: Tun,
        netrom: Option<crate::radio::netrom::NetromHandle>,
        stop: &watch::Receiver<bool>,
        tasks: &TaskTracker,
    ) -> IpHandle {
        drop(self.to_router);
        let (_, from_netrom) = self.from_netrom;
        let view = Arc::new(Mutex::new(IpView::default()));
        tasks.spawn(task::run(task::Setup {
            router: qtc_ip::Router::new(self.router),
            tun,
            tun_name: self.tun_name,
            ports: self.senders,
            port_names: self.port_names,
            inbox: self.inbox,
            netrom,
            from_netrom,
            view: Arc::clone(&view),
            shutdown: stop.clone(),
        }));
        IpHandle { view }
    }
}
