//! The mail ports: SMTP submission, POP3, IMAP and NNTP for users' own clients (`[mail]`).
//! One task per connection drives a sans-IO core from `qtc-email` ([`conn`]); its store
//! requests run on the readers or the store thread ([`store`]). Connections take the same
//! places as telnet's (the per-address cap, a place among those logging in, a user's seat at
//! login), logins go through the same throttle and password pool, and idle ones are closed
//! after `[limits] idle_timeout`.

mod conn;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use qtc_email::Settings;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::admission::{AcceptErrors, Admission};
use crate::passwords::Passwords;
use crate::throttle::Throttle;

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
}

/// What every mail connection shares.
pub struct Shared {
    /// Login attempt counts, the same as telnet's.
    pub throttle: Arc<Throttle>,
    /// Places, the same as telnet's.
    pub admission: Arc<Admission>,
    /// Password checks.
    pub passwords: Passwords,
    /// Where store requests run.
    pub backends: store::Backends,
    /// The daemon's counters.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// `[limits] idle_timeout`.
    pub idle_timeout: Option<Duration>,
    /// `[limits] login_timeout`.
    pub login_timeout: Duration,
    /// `[limits] login_attempts`: wrong logins before the connection is closed.
    pub login_attempts: u32,
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

/// Accepts connections until shutdown.
pub async fn serve(
    listener: TcpListener,
    protocol: Protocol,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    tasks: TaskTracker,
) {
    let mut errors = AcceptErrors::new(shared.metrics.clone());
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                errors.failed(protocol.name(), &e);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let span = tracing::info_span!("mail", proto = protocol.name(), %peer);
        let admitted =
            span.in_scope(|| crate::login::admit(&shared.throttle, &shared.admission, peer.ip()));
        let Ok(admitted) = admitted else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (shared, shutdown) = (shared.clone(), shutdown.clone());
        tasks.spawn(
            async move {
                conn::serve(stream, peer, protocol, admitted, &shared, shutdown).await;
            }
            .instrument(span),
        );
    }
}

/// The settings of a connection from `peer`: passwords in clear on loopback (or everywhere
/// when the sysop allows it), STARTTLS offered when `[tls]` is set.
fn settings_for(shared: &Shared, peer: SocketAddr) -> Settings {
    let mut s = shared.settings.clone();
    s.plain_auth = peer.ip().is_loopback() || shared.plain_auth_anywhere;
    s.starttls = shared.acceptor.is_some();
    s
}
