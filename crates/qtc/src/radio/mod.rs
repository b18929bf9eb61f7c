//! The radio side: one tokio task per `[[port]]` owns a `qtc_ax25::Port` and its device, and
//! bridges every AX.25 link to a `tokio::io::duplex` stream whose other end is a BBS session
//! (`bbs_port::serve_user`), a forwarding session, or the `qtc call` terminal.
//!
//! Nothing here polls: the task sleeps in epoll until the device, a duplex stream, a command
//! or the one timer armed at the earliest link deadline (none while no link has a timer) wakes it.

pub mod client;
pub mod ip;
pub mod netrom;
mod port;
mod to_session;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use qtc_callsign::Callsign;
use tokio::io::DuplexStream;
use tokio::sync::{mpsc, oneshot};

pub use port::{run_port, Incoming, PortSetup};

/// Most stations kept in a port's heard list (the oldest goes).
pub const MAX_HEARD: usize = 256;

/// Whose callsign an outgoing link carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Local {
    /// This station's (a forwarding partner's link, `qtc call`): exactly this callsign.
    Station(Callsign),
    /// A user's, connecting out through the node (`C`): the far end sees the user, never the
    /// station, as on JNOS and LinBPQ nodes. The port picks the SSID: the call as given unless
    /// that call is in use on the port (the user's own station heard there, another link),
    /// then 15 minus its SSID (the node convention), then 15, 14, ... down.
    User(Callsign),
}

/// Who is calling in, and which way: what decides whether a forwarding partner's callsign is
/// taken for the partner ([`crate::partner_trust`]).
#[derive(Clone, Debug)]
pub struct Caller {
    /// The callsign it calls from (a circuit's user).
    pub remote: Callsign,
    /// The way it came.
    pub arrival: Arrival,
}

/// The way a caller came in over the air.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// An AX.25 link on a radio port.
    Ax25 {
        /// The port's name.
        port: String,
    },
    /// A NET/ROM circuit.
    Netrom {
        /// The node the connect request came from (its layer-3 origin: only a claim).
        origin: Callsign,
        /// The neighbour it came through: the port's name and the neighbour's callsign.
        port: String,
        /// The neighbour.
        neighbour: Callsign,
        /// We have a learned or locked route to `origin` through that neighbour.
        routed: bool,
    },
}

/// A request to a port task.
pub enum PortCmd {
    /// Open a link; the answer comes once it is up (or has failed). Dropping the answer's
    /// receiver before then abandons the call.
    Connect {
        /// Our callsign on it.
        local: Local,
        /// Who to call.
        remote: Callsign,
        /// Digipeaters.
        via: Vec<Callsign>,
        /// The link once connected.
        reply: ConnectReply,
    },
}

/// Where a port task answers a [`PortCmd::Connect`].
pub type ConnectReply = oneshot::Sender<Result<Outgoing, ConnectError>>;

/// An outgoing link that is up.
#[derive(Debug)]
pub struct Outgoing {
    /// Its bytes.
    pub stream: DuplexStream,
    /// The far end asked for the link in the same moment (their SABMs crossed ours), so both
    /// ends take it for their own call ([`qtc_ax25::Link::crossed`]).
    pub crossed: bool,
    /// Fires if the far end asks for the link after it came up, before any data moved: its
    /// call crossed ours late ([`qtc_ax25::Event::CrossedLate`]).
    pub crossed_late: tokio::sync::oneshot::Receiver<()>,
}

/// Why a call over a radio port brought no link up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// A link between the two callsigns is up already: the station called us a moment ago.
    LinkUp,
    /// Anything else, as a user is told it.
    Failed(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::LinkUp => f.write_str("a link to this station already exists"),
            ConnectError::Failed(why) => f.write_str(why),
        }
    }
}

/// One station heard on a port.
#[derive(Clone, Debug)]
pub struct HeardEntry {
    /// Last frame (Unix seconds).
    pub last: i64,
    /// Frames heard.
    pub frames: u64,
}

/// Stations heard on a port, by callsign.
pub type Heard = Arc<Mutex<BTreeMap<Callsign, HeardEntry>>>;

/// A port's device as its task last saw it, for `qtc ctl status` and the web.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceState {
    /// The device (TNC connection, pty, serial line, UDP socket) is open.
    pub up: bool,
    /// Since when it has been up or down (Unix seconds).
    pub since: i64,
    /// Why it is down.
    pub reason: Option<String>,
    /// When the task tries to open it again (Unix seconds), while down.
    pub next_retry: Option<i64>,
}

/// What a port task publishes about itself: its device's state and its frame counts.
#[derive(Debug)]
pub struct PortHealth {
    state: tokio::sync::watch::Sender<DeviceState>,
    frames_in: AtomicU64,
    frames_out: AtomicU64,
}

impl Default for PortHealth {
    fn default() -> Self {
        PortHealth {
            state: tokio::sync::watch::Sender::new(DeviceState {
                up: false,
                since: crate::clock::unix_now(),
                reason: Some("opening".into()),
                next_retry: None,
            }),
            frames_in: AtomicU64::new(0),
            frames_out: AtomicU64::new(0),
        }
    }
}

impl PortHealth {
    /// The device opened.
    pub fn up(&self, now: i64) {
        self.state.send_replace(DeviceState {
            up: true,
            since: now,
            reason: None,
            next_retry: None,
        });
    }

    /// The device failed or closed; the task tries again at `retry`.
    pub fn down(&self, now: i64, why: &str, retry: i64) {
        self.state.send_modify(|st| {
            // A failed reopen keeps the time the device went down.
            let since = if st.up { now } else { st.since };
            *st = DeviceState {
                up: false,
                since,
                reason: Some(why.to_string()),
                next_retry: Some(retry),
            };
        });
    }

    /// Completes once the device is open (a test's cue that the port is there).
    #[cfg(test)]
    pub async fn opened(&self) {
        let _ = self.state.subscribe().wait_for(|s| s.up).await;
    }

    /// A frame came in from the device.
    pub fn frame_in(&self) {
        self.frames_in.fetch_add(1, Ordering::Relaxed);
    }

    /// A frame went to the device.
    pub fn frame_out(&self) {
        self.frames_out.fetch_add(1, Ordering::Relaxed);
    }

    /// The device's state now.
    pub fn state(&self) -> DeviceState {
        self.state.borrow().clone()
    }

    /// Frames in and out since start.
    pub fn frames(&self) -> (u64, u64) {
        (
            self.frames_in.load(Ordering::Relaxed),
            self.frames_out.load(Ordering::Relaxed),
        )
    }
}

/// A running port, as the rest of the daemon sees it.
#[derive(Clone)]
pub struct RadioHandle {
    /// Commands to the task.
    pub cmd: mpsc::Sender<PortCmd>,
    /// Its heard list.
    pub heard: Heard,
    /// Its device state and counters.
    pub health: Arc<PortHealth>,
}

/// One radio port's health, as `qtc ctl status --json` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PortReport {
    /// The port's name.
    pub name: String,
    /// Its device.
    #[serde(flatten)]
    pub device: DeviceState,
    /// Frames received from the device since start.
    pub frames_in: u64,
    /// Frames sent to the device since start.
    pub frames_out: u64,
    /// Stations in its heard list.
    pub heard: usize,
}

/// Every running radio port, by name, in the configuration's order, and the NET/ROM node
/// over them.
#[derive(Clone, Default)]
pub struct Radios {
    ports: Arc<Vec<(String, RadioHandle)>>,
    netrom: Option<netrom::NetromHandle>,
    ip: Option<ip::IpHandle>,
}

impl Radios {
    /// A registry of these ports, the first being the default for `C`.
    pub fn new(ports: Vec<(String, RadioHandle)>) -> Radios {
        Radios {
            ports: Arc::new(ports),
            netrom: None,
            ip: None,
        }
    }

    /// The same, with the NET/ROM node running over the ports.
    pub fn with_netrom(self, netrom: netrom::NetromHandle) -> Radios {
        Radios {
            netrom: Some(netrom),
            ..self
        }
    }

    /// The NET/ROM node, when `[netrom]` is on.
    pub fn netrom(&self) -> Option<&netrom::NetromHandle> {
        self.netrom.as_ref()
    }

    /// The same, with the IP router running over the ports.
    pub fn with_ip(self, ip: ip::IpHandle) -> Radios {
        Radios {
            ip: Some(ip),
            ..self
        }
    }

    /// The IP router, when `[ip]` is on.
    pub fn ip(&self) -> Option<&ip::IpHandle> {
        self.ip.as_ref()
    }

    /// The ports' names, in the configuration's order.
    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.ports.iter().map(|(n, _)| n.clone())
    }

    /// The port called `name` (any case: users type `c vhf`), by its configured name.
    pub fn find(&self, name: &str) -> Option<String> {
        self.ports
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(n, _)| n.clone())
    }

    /// Calls `remote` via `via` from `local` on port `name`; the link's stream once it is up.
    /// Dropping the future before then abandons the call (the link is aborted).
    pub async fn connect(
        &self,
        name: &str,
        local: Local,
        remote: Callsign,
        via: Vec<Callsign>,
    ) -> Result<Outgoing, ConnectError> {
        let stopped = || ConnectError::Failed(format!("radio port {name} has stopped"));
        let h = self
            .ports
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h)
            .ok_or_else(|| ConnectError::Failed(format!("no radio port {name:?} is running")))?;
        let (tx, rx) = oneshot::channel();
        h.cmd
            .send(PortCmd::Connect {
                local,
                remote,
                via,
                reply: tx,
            })
            .await
            .map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }

    /// Every port's health, by name.
    pub fn health(&self) -> Vec<PortReport> {
        self.ports
            .iter()
            .map(|(name, h)| {
                let (frames_in, frames_out) = h.health.frames();
                PortReport {
                    name: name.clone(),
                    device: h.health.state(),
                    frames_in,
                    frames_out,
                    heard: h.heard.lock().unwrap_or_else(|e| e.into_inner()).len(),
                }
            })
            .collect()
    }

    /// The heard lists, as `qtc ctl heard` prints them.
    pub fn heard_report(&self) -> String {
        let mut out = String::new();
        if self.ports.is_empty() {
            out.push_str("no radio ports\n");
        }
        for (name, h) in self.ports.iter() {
            out.push_str(&format!("port {name}:\n"));
            let map = h.heard.lock().unwrap_or_else(|e| e.into_inner());
            if map.is_empty() {
                out.push_str("  nothing heard\n");
            }
            let mut v: Vec<_> = map.iter().collect();
            v.sort_by_key(|e| std::cmp::Reverse(e.1.last));
            for (call, e) in v {
                out.push_str(&format!(
                    "  {:<9} {} {}\n",
                    call.to_string(),
                    qtc_mail::Utc::from_unix(e.last).rfc3339(),
                    crate::out::plural(e.frames as usize, "frame")
                ));
            }
        }
        out
    }
}

/// Notes a frame from `call` in the heard list.
fn heard(list: &Heard, call: Callsign, now: i64) {
    let mut map = list.lock().unwrap_or_else(|e| e.into_inner());
    if !map.contains_key(&call) && map.len() >= MAX_HEARD {
        if let Some(oldest) = map.iter().min_by_key(|(_, e)| e.last).map(|(c, _)| *c) {
            map.remove(&oldest);
        }
    }
    let e = map.entry(call).or_insert(HeardEntry {
        last: now,
        frames: 0,
    });
    e.last = now;
    e.frames += 1;
}

/// The start-up report's lines for the radio ports and the NET/ROM node: what the daemon
/// prints when it starts and `qtc check` when it would.
pub fn report_lines(c: &crate::config::Loaded) -> Vec<String> {
    let ports = c
        .radio_ports
        .iter()
        .map(|p| format!("radio: {} {}{}", p.name, p.kind.describe(), p.speed_note()));
    let node = c
        .netrom
        .iter()
        .map(|n| format!("netrom: {}", netrom::describe(&n.node, &c.radio_ports)));
    let ip =
        c.ip.iter()
            .map(|i| format!("ip: {}", ip::describe(i, &c.radio_ports)));
    ports.chain(node).chain(ip).collect()
}
