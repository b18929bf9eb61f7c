//! The ports users and partners log in on: the telnet BBS port, the raw forwarding port and
//! (through [`serve_user`]) AX.25 links and NET/ROM circuits. Each connection is a
//! [`Connection`] (places, timers, TLS, shutdown: [`crate::connection`]) on which [`conn`]
//! drives the BBS interpreter, with the link's codec (telnet or raw); a BBS-flagged user is
//! handed to the forwarding session on the same connection.

mod conn;

use std::net::SocketAddr;
use std::sync::Arc;

use qtc_bbs::Access;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

use crate::connection::{Connection, Door, Lobby};
use crate::forward::Forwarder;
use crate::link::Codec;
use crate::partner_trust::Grant;
use crate::phy::ByteStream;
use crate::store_thread::StoreHandle;

/// What every BBS session shares.
pub struct Shared {
    /// Interpreter settings.
    pub bbs: Arc<qtc_bbs::Config>,
    /// The store thread (the one writer).
    pub store: StoreHandle,
    /// Read-only connections for the interpreter's queries.
    pub readers: crate::read_pool::ReadPool,
    /// Places, the login throttle and the timers, shared with the mail ports.
    pub lobby: Arc<Lobby>,
    /// Messages per hour and bytes per day for each user.
    pub user_limits: Arc<crate::user_limits::UserLimits>,
    /// Forwarding, for partners logging in.
    pub forwarder: Arc<Forwarder>,
    /// Password checks, off this thread and the store's.
    pub passwords: crate::passwords::Passwords,
    /// Who is on, the radio ports, the sysop's pager (`U`, `J`, `PORTS`, `T`).
    pub online: Arc<crate::online::Online>,
    /// The daemon's counters.
    pub metrics: Arc<crate::metrics::Metrics>,
}

/// Which port a connection came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortKind {
    /// The telnet BBS port: users and partners, telnet codec.
    Telnet,
    /// The raw forwarding port: partners only, no escaping.
    Forward,
}

/// Accepts connections until shutdown ([`crate::connection::accept`]).
pub async fn serve(
    listener: TcpListener,
    kind: PortKind,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    tasks: TaskTracker,
) {
    let label = match kind {
        PortKind::Telnet => "telnet",
        PortKind::Forward => "forward",
    };
    let name = match listener.local_addr() {
        Ok(a) => format!("{label}:{a}"),
        Err(_) => label.to_string(),
    };
    let lobby = shared.lobby.clone();
    let door = Door {
        name,
        tls,
        span: move |peer: SocketAddr| match kind {
            PortKind::Telnet => tracing::info_span!("telnet", %peer),
            PortKind::Forward => tracing::info_span!("fwdport", %peer),
        },
        refusal: |why: &str| why.to_string(),
        serve: move |conn, _peer| connection(conn, kind, shared.clone()),
    };
    crate::connection::accept(listener, door, lobby, shutdown, tasks).await;
}

async fn connection(conn: Connection, kind: PortKind, shared: Arc<Shared>) {
    let _counted = (kind == PortKind::Telnet).then(|| {
        crate::metrics::SessionGuard::new(&shared.metrics, crate::metrics::SessionKind::Telnet)
    });
    tracing::info!("connected");
    let mut initial = Vec::new();
    let codec = match kind {
        PortKind::Telnet => {
            let mut t = qtc_telnet::Telnet::new(qtc_telnet::Role::Server);
            t.start(&mut initial);
            Codec::from_telnet(t)
        }
        PortKind::Forward => Codec::forward_port(),
    };
    let opts = UserOpts {
        access: Access::Password,
        challenge: None,
        partners_only: kind == PortKind::Forward,
        initial,
        via: "telnet".to_string(),
        station: None,
    };
    serve_user(conn, codec, opts, &shared).await;
}

/// How a user connection came in, for [`serve_user`].
pub struct UserOpts {
    /// Telnet asks for a password; an AX.25 link's source callsign (or a browser's logged-in
    /// user) is the identity.
    pub access: Access,
    /// A forwarding partner's call by a way the sysop did not give for it: the secret it must
    /// answer a challenge from before its forwarding session ([`crate::partner_trust`]).
    pub challenge: Option<String>,
    /// Only BBS-flagged users may stay (the raw forwarding port).
    pub partners_only: bool,
    /// Bytes to send before the banner (telnet's opening negotiation).
    pub initial: Vec<u8>,
    /// How the user came in, as `U` shows it: `telnet` or the radio port's name.
    pub via: String,
    /// The caller's station as `U` shows it, SSID included (an AX.25 link's source callsign).
    pub station: Option<String>,
}

/// Serves one user on `conn`: a TCP connection (telnet or raw), an AX.25 link's or a NET/ROM
/// circuit's stream (raw codec, bare CR line ends), through a [`conn::UserConn`]. Returns when
/// the user leaves, the stream ends or the daemon stops.
pub async fn serve_user(conn: Connection, codec: Codec, opts: UserOpts, shared: &Shared) {
    conn::UserConn::new(conn, codec, opts, shared).run().await;
}

/// Serves a BBS session to `call`, whose identity the link has given (an AX.25 link's source,
/// a NET/ROM circuit's user), over any byte stream with the raw codec: the session starts
/// logged in (a seat, the account's cap counted) as `grant` says for a forwarding partner's
/// call ([`crate::partner_trust`]), and runs until the user leaves, the stream ends or the
/// daemon stops. `via` is how `U` shows where they are; `station` the caller's station with
/// its SSID, if it differs from `call`.
pub async fn serve_identified(
    stream: Box<dyn ByteStream>,
    call: qtc_callsign::Callsign,
    grant: &Grant,
    via: &str,
    station: Option<String>,
    shared: &Shared,
    shutdown: watch::Receiver<bool>,
) {
    let conn = Connection::new(stream, shared.lobby.clone(), shutdown);
    let opts = UserOpts {
        access: grant.access(call),
        challenge: grant.secret(),
        partners_only: false,
        initial: Vec::new(),
        via: via.to_string(),
        station,
    };
    serve_user(conn, Codec::raw(), opts, shared).await;
}
