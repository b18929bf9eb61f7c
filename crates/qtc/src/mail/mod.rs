//! The mail ports: SMTP submission, POP3, IMAP and NNTP for users' own clients (`[mail]`).
//! Each connection is a [`crate::connection::Connection`], the driver every door shares (the
//! per-address cap, a place among those logging in, a user's seat at login with the account's
//! cap, the login throttle, the idle and login timers, TLS at accept on the implicit-TLS ports
//! (`imaps_listen`...) or by STARTTLS, the traffic per port); on it
//! [`conn`] drives a sans-IO core from `qtc-email`, whose store requests run on the readers or
//! the store thread ([`store`]).

mod conn;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;

use qtc_email::Settings;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

use crate::connection::{Door, Lobby};

pub use crate::config::mail::{Listener, Protocol};

/// A connection refused at accept, told why (`why` ends in CR LF) in `protocol`'s words: a
/// greeting that says "not now".
fn refusal(protocol: Protocol, why: &str) -> String {
    match protocol {
        Protocol::Smtp => format!("421 4.7.0 {why}"),
        Protocol::Pop3 => format!("-ERR [SYS/TEMP] {why}"),
        Protocol::Imap => format!("* BYE {why}"),
        Protocol::Nntp => format!("400 {why}"),
    }
}

/// What every mail connection shares.
pub struct Shared {
    /// Places, the login throttle and the timers, shared with the BBS ports.
    pub lobby: Arc<Lobby>,
    /// Where store requests run.
    pub backends: store::Backends,
    /// The station, the mail domain, the limits (per connection, TLS and clear-text
    /// passwords are filled in).
    pub settings: Settings,
    /// `[mail] passwords_in_clear`.
    pub passwords_in_clear: bool,
    /// The INBOX's UIDVALIDITY.
    pub uid_validity: u32,
    /// `[tls]`, for STARTTLS and the implicit-TLS listeners.
    pub acceptor: Option<tokio_rustls::TlsAcceptor>,
    /// Hears of every write to the store (IMAP IDLE).
    pub changes: watch::Receiver<u64>,
    /// Who is logged in: a mail login shows there (`U`, Status) as `imap`, `pop3`...
    pub online: Arc<crate::online::Online>,
}

/// Accepts connections on `listener` until shutdown ([`crate::connection::accept`]); an
/// implicit-TLS listener's connections get their handshake there, before the protocol starts.
pub async fn serve(
    listener: TcpListener,
    kind: Listener,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    tasks: TaskTracker,
) {
    let name = match listener.local_addr() {
        Ok(a) => format!("{}:{a}", kind.name()),
        Err(_) => kind.name().to_string(),
    };
    let lobby = shared.lobby.clone();
    let protocol = kind.protocol;
    let door = Door {
        name,
        tls: shared.acceptor.clone().filter(|_| kind.tls),
        span: move |peer: SocketAddr| tracing::info_span!("mail", proto = kind.name(), %peer),
        refusal: move |why: &str| refusal(protocol, why),
        serve: move |conn, peer| conn::serve(conn, peer, kind, shared.clone()),
    };
    crate::connection::accept(listener, door, lobby, shutdown, tasks).await;
}

/// The settings of a connection from `peer` on a listener of `kind`: passwords taken over
/// TLS, from loopback, or everywhere when the sysop allows it; STARTTLS offered on a
/// plain-text listener when `[tls]` is set.
fn settings_for(shared: &Shared, peer: SocketAddr, kind: Listener) -> Settings {
    let mut s = shared.settings.clone();
    s.plain_auth = kind.tls || peer.ip().to_canonical().is_loopback() || shared.passwords_in_clear;
    s.starttls = !kind.tls && shared.acceptor.is_some();
    s
}
