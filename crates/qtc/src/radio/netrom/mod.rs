//! The NET/ROM node (`[netrom]`): one task owns the sans-IO `qtc_netrom::Node` and bridges each
//! circuit to a `tokio::io::duplex` stream, as the port tasks do for AX.25 links. The port
//! tasks hand it the NODES broadcasts and datagrams they hear ([`NetIn`]) and send what it
//! asks for ([`NetOut`]): broadcasts as UI frames, datagrams as I frames with PID 0xCF on an
//! AX.25 link from the node call to the neighbour (opened when needed, closed after
//! three minutes without a datagram, as every port's datagram links are).
//!
//! Idle, the task sleeps until its next broadcast: circuits arm timers only while something is
//! outstanding. `qtc ctl nodes`, the web and `NODES` ask the task for its tables
//! ([`NetCmd::View`]): they see what is true at that moment, and nothing is kept up to date
//! for nobody meanwhile.

mod bridge;
mod task;
mod view;

use qtc_callsign::Callsign;
use tokio::io::DuplexStream;
use tokio::sync::{mpsc, oneshot, watch};

pub use task::run;
pub use view::{CircuitRow, NeighbourRow, NetromView, NodeRow, RouteRow, Totals};

/// Frames waiting between the node and a port task, each way; beyond it they are dropped (the
/// circuits' retries cover it, as for frames lost on the air).
pub const QUEUE: usize = 512;

/// What a port task hands the node.
#[derive(Debug)]
pub enum NetIn {
    /// A UI frame to `NODES` with PID 0xCF.
    Nodes {
        /// The port's index.
        port: usize,
        /// The sender.
        from: Callsign,
        /// Its information field.
        info: Vec<u8>,
    },
    /// An I frame with PID 0xCF on a link.
    Datagram {
        /// The port's index.
        port: usize,
        /// The link's far end.
        from: Callsign,
        /// Its information field.
        data: Vec<u8>,
    },
    /// The AX.25 link from the node call to `neighbour` failed: refused (DM), or no answer
    /// within its retries. What it carried is lost.
    LinkFailed {
        /// The port's index.
        port: usize,
        /// The neighbour.
        neighbour: Callsign,
    },
}

/// What the node asks a port task to send.
#[derive(Debug)]
pub enum NetOut {
    /// A NODES broadcast (UI from the node call to `NODES`, PID 0xCF).
    Nodes(Vec<u8>),
    /// A datagram for `neighbour`, over the AX.25 link from the node call.
    Datagram {
        /// The next hop.
        neighbour: Callsign,
        /// The datagram.
        data: Vec<u8>,
    },
}

/// One line for the start-up report: `QTCA:N0QTC-1 on vhf (192), broadcast every 1800 s`.
pub fn describe(node: &qtc_netrom::Config, ports: &[crate::config::radio::RadioPort]) -> String {
    let on: Vec<String> = ports
        .iter()
        .filter(|p| p.netrom_quality > 0)
        .map(|p| format!("{} ({})", p.name, p.netrom_quality))
        .collect();
    format!(
        "{}:{} on {}, broadcast every {} s",
        node.alias,
        node.call,
        on.join(", "),
        node.broadcast.as_secs()
    )
}

/// A port task's side of the node.
pub struct PortHook {
    /// The port's index among the `[[port]]` tables (the node's port number).
    pub port: usize,
    /// The node callsign.
    pub call: Callsign,
    /// To the node.
    pub to_node: mpsc::Sender<NetIn>,
    /// From the node.
    pub from_node: mpsc::Receiver<NetOut>,
}

/// A request to the node's task.
pub enum NetCmd {
    /// Open a circuit for `user` to the node `dest`; the answer comes once it is up (or
    /// failed).
    Connect {
        /// Our user.
        user: Callsign,
        /// The node.
        dest: Callsign,
        /// The circuit's stream.
        reply: oneshot::Sender<Result<Circuit, String>>,
    },
    /// An IP datagram for the node `node`, from the IP router (a `[[ip.route]]` with `netrom`).
    SendIp {
        /// The node.
        node: Callsign,
        /// The datagram.
        datagram: Vec<u8>,
    },
    /// The tables and circuits as they are now.
    View {
        /// Where they go.
        reply: oneshot::Sender<NetromView>,
    },
}

/// A circuit we opened: its stream, and why it ended once it has (`None`: closed as it should
/// be, by either end).
pub struct Circuit {
    /// The circuit's bytes.
    pub stream: DuplexStream,
    /// What went wrong, when the circuit is over (a far end that stopped answering, a reset,
    /// no route any more); the sender is dropped when it ended well.
    pub failure: oneshot::Receiver<String>,
}

/// An IP datagram that came to our node inside a NET/ROM datagram, with the node it came
/// from (for the IP router).
pub type IpFromNode = (Callsign, Vec<u8>);

/// The running node, as the rest of the daemon sees it.
#[derive(Clone)]
pub struct NetromHandle {
    cmd: mpsc::Sender<NetCmd>,
}

impl NetromHandle {
    /// A handle on a task reading `cmd`.
    pub fn new(cmd: mpsc::Sender<NetCmd>) -> NetromHandle {
        NetromHandle { cmd }
    }

    /// The tables, counters and circuits as they are at the moment asked (the node's task
    /// makes them on request: nothing is kept up to date for nobody); empty if the node
    /// has stopped.
    pub async fn view(&self) -> NetromView {
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(NetCmd::View { reply: tx }).await.is_err() {
            return NetromView::default();
        }
        rx.await.unwrap_or_default()
    }

    /// Hands an IP datagram for `node` to the node's task; false when its queue is full (the
    /// datagram is dropped, as one lost on the air).
    pub fn send_ip(&self, node: Callsign, datagram: Vec<u8>) -> bool {
        self.cmd.try_send(NetCmd::SendIp { node, datagram }).is_ok()
    }

    /// The node a user means by `name` (alias or callsign), if known.
    pub async fn find(&self, name: &str) -> Option<NodeRow> {
        self.view().await.find(name).cloned()
    }

    /// Opens a circuit for `user` to the node `name`; the circuit once connected, and the node.
    pub async fn connect(&self, user: Callsign, name: &str) -> Result<(Circuit, NodeRow), String> {
        let node = self
            .find(name)
            .await
            .ok_or_else(|| format!("{name} is no known NET/ROM node"))?;
        let dest: Callsign = node
            .call
            .parse()
            .map_err(|e| format!("{}: {e}", node.call))?;
        let (tx, rx) = oneshot::channel();
        let stopped = || "the NET/ROM node has stopped".to_string();
        self.cmd
            .send(NetCmd::Connect {
                user,
                dest,
                reply: tx,
            })
            .await
            .map_err(|_| stopped())?;
        let circuit = rx.await.map_err(|_| stopped())??;
        Ok((circuit, node))
    }
}

/// What the node's task needs.
pub struct Setup {
    /// The node.
    pub node: qtc_netrom::Node,
    /// Each port's channel, by port index (`None`: no NET/ROM on it).
    pub ports: Vec<Option<mpsc::Sender<NetOut>>>,
    /// Port names, by index, for the view.
    pub port_names: Vec<String>,
    /// From the port tasks.
    pub inbox: mpsc::Receiver<NetIn>,
    /// Requests.
    pub cmds: mpsc::Receiver<NetCmd>,
    /// Where circuits users open to us go.
    pub on_incoming: super::Incoming,
    /// Where IP datagrams that came to our node go (the IP router), with the node they came from.
    pub to_ip: Option<mpsc::Sender<IpFromNode>>,
    /// Stop.
    pub shutdown: watch::Receiver<bool>,
}
