//! The ports users and partners log in on: the telnet BBS port, the raw forwarding port and
//! (through [`serve_user`]) AX.25 links. One task per connection drives it ([`conn`]): bytes
//! between the stream, the codec (telnet or raw) and the BBS interpreter (run in that task); a
//! BBS-flagged user is handed to the forwarding session.

mod conn;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use qtc_bbs::Access;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::admission::{AcceptErrors, Admission, Place};
use crate::forward::Forwarder;
use crate::link::Codec;
use crate::login::{admit, Admitted};
use crate::store_thread::StoreHandle;
use crate::throttle::Throttle;

/// A TLS client gets this long to finish its handshake.
const TLS_HANDSHAKE: Duration = Duration::from_secs(30);

/// One read takes up to this much: a pasted message arrives in a few large reads.
const READ_BUF: usize = 16 * 1024;

/// What every telnet session shares.
pub struct Shared {
    /// Interpreter settings.
    pub bbs: Arc<qtc_bbs::Config>,
    /// The store thread (the one writer).
    pub store: StoreHandle,
    /// Read-only connections for the interpreter's queries.
    pub readers: crate::read_pool::ReadPool,
    /// Login attempt counts.
    pub throttle: Arc<Throttle>,
    /// Places for connections and sessions.
    pub admission: Arc<Admission>,
    /// Messages per hour and bytes per day for each user.
    pub user_limits: Arc<crate::user_limits::UserLimits>,
    /// A user who sends no complete line for this long is disconnected (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// A connection that has not logged in this long after connecting is closed.
    pub login_timeout: Duration,
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

/// Accepts connections until shutdown.
pub async fn serve(
    listener: TcpListener,
    kind: PortKind,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    tasks: TaskTracker,
) {
    let name = match (kind, listener.local_addr()) {
        (PortKind::Telnet, Ok(a)) => format!("telnet:{a}"),
        (PortKind::Forward, Ok(a)) => format!("forward:{a}"),
        (PortKind::Telnet, Err(_)) => "telnet".to_string(),
        (PortKind::Forward, Err(_)) => "forward".to_string(),
    };
    let bytes = shared.metrics.port_bytes(&name);
    let mut errors = AcceptErrors::new(shared.metrics.clone());
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let span = match kind {
                    PortKind::Telnet => tracing::info_span!("telnet", %peer),
                    PortKind::Forward => tracing::info_span!("fwdport", %peer),
                };
                let _ = stream.set_nodelay(true);
                let stream = crate::metrics::Counted::new(stream, bytes.clone());
                // The address cap and a place among the connections logging in are taken
                // before any TLS handshake: a host that opens handshakes and never finishes
                // them holds no more places than one that never logs in.
                let admitted =
                    match span.in_scope(|| admit(&shared.throttle, &shared.admission, peer.ip())) {
                        Ok(a) => a,
                        // A TLS client could not read a plain refusal: it is just closed, before
                        // its handshake costs anything.
                        Err(refusal) if tls.is_none() => {
                            tasks.spawn(refuse(stream, refusal).instrument(span));
                            continue;
                        }
                        Err(_) => continue,
                    };
                let (shared, shutdown) = (shared.clone(), shutdown.clone());
                match tls.clone() {
                    None => {
                        tasks.spawn(
                            connection(stream, peer, kind, admitted, shared, shutdown)
                                .instrument(span),
                        );
                    }
                    Some(acceptor) => {
                        tasks.spawn(
                            async move {
                                let mut admitted = admitted;
                                // The handshake gets a bounded time, and gives up its place
                                // when a newer connection needs it, like a login; the
                                // session's own timers take over after it.
                                let shake =
                                    tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(stream));
                                let shook = tokio::select! {
                                    r = shake => r,
                                    _ = admitted.login_place.closed() => {
                                        tracing::info!("TLS handshake unfinished, and its place was needed");
                                        return;
                                    }
                                };
                                match shook {
                                    Ok(Ok(tls)) => {
                                        connection(tls, peer, kind, admitted, shared, shutdown)
                                            .await
                                    }
                                    Ok(Err(e)) => {
                                        tracing::info!(error = %e, "TLS handshake failed")
                                    }
                                    Err(_) => tracing::info!("TLS handshake timed out"),
                                }
                            }
                            .instrument(span),
                        );
                    }
                }
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning on accept.
                errors.failed(&name, &e);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

async fn refuse<S: AsyncWrite + Unpin>(mut stream: S, text: &str) {
    let _ = stream.write_all(text.as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    peer: SocketAddr,
    kind: PortKind,
    admitted: Admitted,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) {
    let Admitted {
        address_slot: _address_slot,
        login_place,
    } = admitted;
    let _counted = (kind == PortKind::Telnet).then(|| {
        crate::metrics::SessionGuard::new(&shared.metrics, crate::metrics::SessionKind::Telnet)
    });
    tracing::info!("connected");
    let mut net = Vec::with_capacity(READ_BUF);
    let codec = match kind {
        PortKind::Telnet => {
            let mut t = qtc_telnet::Telnet::new(qtc_telnet::Role::Server);
            t.start(&mut net);
            Codec::from_telnet(t)
        }
        PortKind::Forward => Codec::forward_port(),
    };
    let opts = UserOpts {
        access: Access::Password,
        challenge: None,
        throttle_ip: Some(peer.ip()),
        partners_only: kind == PortKind::Forward,
        initial: net,
        via: "telnet".to_string(),
        station: None,
        login_place: Some(login_place),
    };
    serve_user(stream, codec, opts, &shared, shutdown).await;
}

/// How a user connection came in, for [`serve_user`].
pub struct UserOpts {
    /// Telnet asks for a password; an AX.25 link's source callsign is the identity.
    pub access: Access,
    /// A forwarding partner's call by a way the sysop did not give for it: the secret it must
    /// answer a challenge from before its forwarding session ([`crate::partner_trust`]).
    pub challenge: Option<String>,
    /// The address login failures count against (TCP only).
    pub throttle_ip: Option<IpAddr>,
    /// Only BBS-flagged users may stay (the raw forwarding port).
    pub partners_only: bool,
    /// Bytes to send before the banner (telnet's opening negotiation).
    pub initial: Vec<u8>,
    /// How the user came in, as `U` shows it: `telnet` or the radio port's name.
    pub via: String,
    /// The caller's station as `U` shows it, SSID included (an AX.25 link's source callsign).
    pub station: Option<String>,
    /// The connection's place among those logging in (TCP only), given up at login.
    pub login_place: Option<Place>,
}

/// Serves one user over any byte stream: a TCP connection (telnet or raw) or an AX.25 link's
/// duplex stream (raw codec, bare CR line ends), through a [`conn::UserConn`]. Returns when the
/// user leaves, the stream ends or the daemon stops.
pub async fn serve_user<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    codec: Codec,
    opts: UserOpts,
    shared: &Shared,
    shutdown: watch::Receiver<bool>,
) {
    conn::UserConn::new(stream, codec, opts, shared, shutdown)
        .run()
        .await;
}
