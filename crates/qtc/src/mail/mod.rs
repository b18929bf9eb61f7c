//! The mail ports: SMTP submission, POP3, IMAP and NNTP for users' own clients (`[mail]`).
//! Each connection is a [`crate::connection::Connection`], the driver every door shares (the
//! per-address cap, a place among those logging in, a user's seat at login with the account's
//! cap, the login throttle, the idle and login timers, STARTTLS, the traffic per port); on it
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

/// Which protocol a listener speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// SMTP submission.
    Smtp,
    /// POP3.
    Pop3,
    /// IMAP4rev1.
    Imap,
    /// NNTP.
    Nntp,
}

impl Protocol {
    /// Its name in logs and the start-up report.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Smtp => "smtp",
            Protocol::Pop3 => "pop3",
            Protocol::Imap => "imap",
            Protocol::Nntp => "nntp",
        }
    }

    /// A connection refused at accept, told why (`why` ends in CR LF) in the protocol's
    /// words: a greeting that says "not now".
    pub fn refusal(self, why: &str) -> String {
        match self {
            Protocol::Smtp => format!("421 4.7.0 {why}"),
            Protocol::Pop3 => format!("-ERR [SYS/TEMP] {why}"),
            Protocol::Imap => format!("* BYE {why}"),
            Protocol::Nntp => format!("400 {why}"),
        }
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
    /// `[mail] plain_auth`.
    pub plain_auth_anywhere: bool,
    /// The INBOX's UIDVALIDITY.
    pub uid_validity: u32,
    /// `[tls]`, for STARTTLS.
    pub acceptor: Option<tokio_rustls::TlsAcceptor>,
    /// Hears of every write to the store (IMAP IDLE).
    pub changes: watch::Receiver<u64>,
    /// Who is logged in: a mail login shows there (`U`, Status) as `imap`, `pop3`...
    pub online: Arc<crate::online::Online>,
}

/// Accepts connections until shutdown ([`crate::connection::accept`]).
pub async fn serve(
    listener: TcpListener,
    protocol: Protocol,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    tasks: TaskTracker,
) {
    let name = match listener.local_addr() {
        Ok(a) => format!("{}:{a}", protocol.name()),
        Err(_) => protocol.name().to_string(),
    };
    let lobby = shared.lobby.clone();
    let door = Door {
        name,
        tls: None,
        span: move |peer: SocketAddr| tracing::info_span!("mail", proto = protocol.name(), %peer),
        refusal: move |why: &str| protocol.refusal(why),
        serve: move |conn, peer| conn::serve(conn, peer, protocol, shared.clone()),
    };
    crate::connection::accept(listener, door, lobby, shutdown, tasks).await;
}

/// The settings of a connection from `peer`: passwords in clear on loopback (or everywhere
/// when the sysop allows it), STARTTLS offered when `[tls]` is set.
fn settings_for(shared: &Shared, peer: SocketAddr) -> Settings {
    let mut s = shared.settings.clone();
    s.plain_auth = peer.ip().is_loopback() || shared.plain_auth_anywhere;
    s.starttls = shared.acceptor.is_some();
    s
}
