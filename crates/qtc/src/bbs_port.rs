//! The ports users and partners log in on: the telnet BBS port, the raw forwarding port and
//! (through [`serve_user`]) AX.25 links. One task per connection moves bytes between the stream,
//! the codec (telnet or raw) and the BBS interpreter (run in that task); a BBS-flagged user is
//! handed to the forwarding session.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use qtc_bbs::{Access, Event, Session};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::admission::{AcceptErrors, Admission, Place};
use crate::clock;
use crate::forward::{self, Forwarder};
use crate::link::Codec;
use crate::store_thread::StoreHandle;
use crate::stream_io::{read_or_write, Io, Outbox};
use crate::throttle::{Refused, Throttle};

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

use crate::login::{admit, Admitted};

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
            Codec::Telnet(Box::new(t))
        }
        PortKind::Forward => Codec::raw(),
    };
    let opts = UserOpts {
        access: Access::Password,
        throttle_ip: Some(peer.ip()),
        partners_only: kind == PortKind::Forward,
        initial: net,
        via: "telnet".to_string(),
        login_place: Some(login_place),
    };
    serve_user(stream, codec, opts, &shared, shutdown).await;
}

/// How a user connection came in, for [`serve_user`].
pub struct UserOpts {
    /// Telnet asks for a password; an AX.25 link's source callsign is the identity.
    pub access: Access,
    /// The address login failures count against (TCP only).
    pub throttle_ip: Option<IpAddr>,
    /// Only BBS-flagged users may stay (the raw forwarding port).
    pub partners_only: bool,
    /// Bytes to send before the banner (telnet's opening negotiation).
    pub initial: Vec<u8>,
    /// How the user came in, as `U` shows it: `telnet` or the radio port's name.
    pub via: String,
    /// The connection's place among those logging in (TCP only), given up at login.
    pub login_place: Option<Place>,
}

/// Serves one user over any byte stream: a TCP connection (telnet or raw) or an AX.25 link's
/// duplex stream (raw codec, bare CR line ends). The BBS interpreter runs here, in the
/// connection's task; its store requests go to the reader pool or the store thread
/// ([`crate::session_store`]). Output is made a piece at a time, the next only once the last has
/// been written to the stream, while input is still read (so `A` stops it): a reader who stops
/// costs one piece of memory and no work. A BBS-flagged user is handed to the forwarding
/// session. Returns when the user leaves, the stream ends or the daemon stops.
pub async fn serve_user<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    mut codec: Codec,
    opts: UserOpts,
    shared: &Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    let UserOpts {
        access,
        throttle_ip,
        partners_only,
        initial,
        via,
        mut login_place,
    } = opts;
    let mut _presence = None;
    let mut pages = shared.online.pages();
    let mut out = Outbox::new(initial);
    let mut session = Session::new(shared.bbs.clone(), access);
    session.start();
    let mut buf = vec![0u8; READ_BUF];
    let mut app = Vec::with_capacity(READ_BUF);
    // The client closed its sending side (`printf 'LL\r' | nc -N`): what it asked for is still
    // written, then the session ends.
    let mut input_closed = false;
    let mut idle = clock::Timer::new();
    idle.set(shared.idle_timeout.map(|d| clock::now() + d));
    // Connect to completed login: bounded, however the bytes trickle in.
    let mut login_deadline = clock::Timer::new();
    login_deadline.set(
        login_place
            .is_some()
            .then(|| clock::now() + shared.login_timeout),
    );
    let mut _seat = None;
    loop {
        let mut closing = false;
        // A refusal replaces what the session said (a greeting, a prompt).
        let mut refused: Option<String> = None;
        let mut pause = None;
        let mut partner = None;
        let mut check = None;
        while let Some(ev) = session.poll_event() {
            match ev {
                Event::HideInput(h) => codec.hide_input(h, &mut out.net),
                Event::CheckPassword {
                    call,
                    password,
                    purpose,
                } => check = Some((call, password, purpose)),
                Event::LoginFailed { call } => {
                    // Only a valid callsign is logged: anything else may be a password.
                    match call {
                        Some(call) => tracing::warn!(%call, "login failed"),
                        None => tracing::warn!("login failed: not a callsign"),
                    }
                    shared.metrics.login_failed();
                    pause = Some(shared.throttle.delay(throttle_ip, clock::now()));
                    if throttle_ip.is_some_and(|ip| shared.throttle.locked_out(ip, clock::now())) {
                        refused = Some(
                            "Login incorrect.\rToo many failed logins from your address. \
                             Try again later.\r"
                                .to_string(),
                        );
                    }
                }
                Event::LoggedIn { call, bbs } => {
                    let sysop = session.user().is_some_and(|u| u.sysop);
                    match shared.admission.seat(sysop, bbs) {
                        Ok(seat) => _seat = Some(seat),
                        Err(refusal) => {
                            tracing::warn!(%call, "refused at login: {refusal}");
                            refused = Some(format!("{refusal}\r"));
                            continue;
                        }
                    }
                    login_place = None;
                    login_deadline.set(None);
                    tracing::info!(%call, "logged in");
                    if !bbs && !partners_only {
                        _presence = Some(shared.online.join(&call, &via));
                    }
                    if bbs {
                        partner = Some(call);
                    } else if partners_only {
                        codec.encode_text(
                            b"*** This port is for forwarding partners only: use the telnet port.\r",
                            &mut out.net,
                        );
                        closing = true;
                    }
                }
                Event::PageSysop { from, text } => {
                    shared.online.page_sysop(&from, &text, clock::unix_now())
                }
                Event::Close => closing = true,
            }
        }
        // After the events: a password prompt follows the request to stop echoing. A refused
        // login says no more than the refusal.
        let said = session.take_output();
        match &refused {
            None => codec.encode_text(&said, &mut out.net),
            Some(text) => {
                codec.encode_text(text.as_bytes(), &mut out.net);
                closing = true;
            }
        }
        // Whatever waits next (the forwarding session, a conference, a password check, the
        // pause after a failure) comes after what was said so far.
        let blocking = closing
            || partner.is_some()
            || pause.is_some()
            || check.is_some()
            || matches!(
                session.pending_ask(),
                Some(qtc_bbs::Ask::Conv { .. } | qtc_bbs::Ask::Connect { .. })
            );
        if blocking && !out.write_all(&mut stream).await {
            break;
        }
        if closing {
            break;
        }
        if let Some(call) = partner {
            if partners_only
                && shared
                    .forwarder
                    .partner(&call)
                    .is_some_and(|p| p.iac_escaped)
            {
                // xfbbd doubles 0xFF on its forwarding link to our raw port.
                codec = Codec::iac();
            }
            let initial = session.take_unconsumed();
            let _ = forward::run(
                &shared.forwarder,
                &mut stream,
                &mut codec,
                qtc_fbb::Role::Called,
                &call,
                &initial,
                &mut shutdown,
            )
            .await;
            break;
        }
        if let Some(&qtc_bbs::Ask::Conv { channel }) = session.pending_ask() {
            let call = session.user().map(|u| u.call.clone()).unwrap_or_default();
            let back = crate::conference::run(
                &shared.online,
                &call,
                channel,
                shared.bbs.max_line,
                &mut stream,
                &mut codec,
                &mut shutdown,
            )
            .await;
            if !back {
                break;
            }
            session.answer(qtc_bbs::Answer::ConvEnded, clock::unix_now());
            continue;
        }
        if let Some(ask @ qtc_bbs::Ask::Connect { .. }) = session.pending_ask().cloned() {
            let radios = shared.online.radios();
            let user = session.user().map(|u| u.call.clone()).unwrap_or_default();
            let ended =
                crate::downlink::run(&radios, &ask, &user, &mut stream, &mut codec, &mut shutdown)
                    .await;
            let Some(answer) = ended else { break };
            session.answer(answer, clock::unix_now());
            continue;
        }
        // U, J, PORTS: answered at once.
        if let Some(answer) = session.pending_ask().and_then(|a| shared.online.answer(a)) {
            session.answer(answer, clock::unix_now());
            continue;
        }
        if let Some(d) = pause {
            // Slow down password guessing; input typed meanwhile waits in the socket.
            tokio::time::sleep(d).await;
        }
        if let Some((call, password, purpose)) = check {
            match check_password(shared, throttle_ip, &call, password, purpose).await {
                Ok(ok) => session.password_checked(ok, clock::unix_now()),
                Err(why) => session.password_refused(why, clock::unix_now()),
            }
            continue;
        }
        if let Some(request) = session.take_request() {
            let backends = crate::session_store::Backends {
                readers: &shared.readers,
                store: &shared.store,
                user_limits: &shared.user_limits,
                passwords: &shared.passwords,
            };
            match crate::session_store::run(request, backends).await {
                Ok(reply) => session.store_answered(reply, clock::unix_now()),
                Err(gone) => session.store_lost(&qtc_mail::StoreError::Database(gone.to_string())),
            }
            continue;
        }
        if out.is_empty() && session.has_more_output() {
            session.more_output(clock::unix_now());
            continue;
        }
        if input_closed && out.is_empty() {
            break;
        }
        let reading = session.wants_input() && !input_closed;
        let n = tokio::select! {
            io = read_or_write(&mut stream, out.pending(), reading.then_some(&mut buf[..])) => match io {
                Io::Read(Ok(0)) => {
                    input_closed = true;
                    continue;
                }
                Io::Wrote(Ok(0) | Err(_)) | Io::Read(Err(_)) => break,
                Io::Wrote(Ok(n)) => {
                    out.sent(n);
                    continue;
                }
                Io::Read(Ok(n)) => n,
            },
            page = pages.recv() => {
                // Only a sysop sees pages; a lagging receiver just skips the oldest.
                if let Ok(text) = page {
                    if session.user().is_some_and(|u| u.sysop) {
                        session.notice(&text);
                    }
                }
                continue;
            },
            _ = shutdown.changed() => {
                out.bye(&mut stream, &mut codec, "*** The BBS is shutting down. 73!").await;
                break;
            }
            _ = login_deadline.fired() => {
                tracing::info!("no login in time: disconnected");
                out.bye(&mut stream, &mut codec, "*** Login timed out. 73!").await;
                break;
            }
            _ = async {
                match login_place.as_mut() {
                    Some(p) => p.closed().await,
                    None => std::future::pending().await,
                }
            } => {
                tracing::info!("not logged in, and its place was needed: disconnected");
                out.bye(&mut stream, &mut codec, "*** Too many connections logging in. 73!").await;
                break;
            }
            // Moved on after every complete line: a session that trickles bytes without ever
            // finishing a line is as silent as one that sends nothing.
            _ = idle.fired() => {
                tracing::info!("idle for too long: disconnected");
                out.bye(&mut stream, &mut codec, "*** You have been idle for too long. 73!").await;
                break;
            }
        };
        app.clear();
        codec.decode(&buf[..n], &mut app, &mut out.net);
        if app.iter().any(|&b| b == b'\r' || b == b'\n') {
            idle.set(shared.idle_timeout.map(|d| clock::now() + d));
        }
        if !app.is_empty() {
            session.handle_input(&app, clock::unix_now());
        }
    }
    let _ = stream.shutdown().await;
    tracing::info!("disconnected");
}

/// Checks `call`'s password for a session from `ip` (none for a radio link). A login and
/// `SYS` go through the throttle ([`crate::login::check`]). `PW`'s current password (the user
/// is logged in already) is not a login attempt: the session bounds it.
async fn check_password(
    shared: &Shared,
    ip: Option<IpAddr>,
    call: &str,
    password: String,
    purpose: qtc_bbs::Checking,
) -> Result<Result<bool, qtc_mail::StoreError>, qtc_bbs::Refusal> {
    // A partner's login must not wait for a burst of users' logins.
    let login = match shared.forwarder.partner(call) {
        Some(_) => crate::passwords::Login::Partner,
        None => crate::passwords::Login::User,
    };
    if purpose == qtc_bbs::Checking::Current {
        return Ok(shared.passwords.check(call, password, login).await);
    }
    crate::login::check(
        &shared.throttle,
        &shared.passwords,
        ip,
        call,
        password,
        login,
    )
    .await
    .map_err(|why| match why {
        Refused::Locked => qtc_bbs::Refusal::Locked,
        Refused::Busy => qtc_bbs::Refusal::Busy,
    })
}
