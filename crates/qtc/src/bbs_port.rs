//! The ports users and partners log in on: the telnet BBS port, the raw forwarding port and
//! (through [`serve_user`]) AX.25 links. One task per connection moves bytes between the stream,
//! the codec (telnet or raw) and the BBS interpreter (run on the store thread); a BBS-flagged
//! user is handed to the forwarding session.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use qtc_bbs::{Access, Event, Session};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::admission::{AcceptErrors, Admission, Place};
use crate::clock;
use crate::forward::{self, Forwarder};
use crate::link::Codec;
use crate::store_thread::StoreHandle;
use crate::throttle::{AddressSlot, Guarded, Throttle};

/// A TLS client gets this long to finish its handshake.
const TLS_HANDSHAKE: Duration = Duration::from_secs(30);

/// One read takes up to this much: a pasted message arrives in a few large reads.
const READ_BUF: usize = 16 * 1024;

/// What every telnet session shares.
pub struct Shared {
    /// Interpreter settings.
    pub bbs: Arc<qtc_bbs::Config>,
    /// The store thread.
    pub store: StoreHandle,
    /// Login attempt counts.
    pub throttle: Arc<Throttle>,
    /// Places for connections and sessions.
    pub admission: Admission,
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
                let admitted = match span.in_scope(|| admit(&shared, peer.ip())) {
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

/// A connection's places, taken at connect.
struct Admitted {
    /// Counts against the connection's address while it is open.
    _address_slot: AddressSlot,
    /// Given up at login.
    login_place: Place,
}

/// The places for a new connection from `ip`, or the line that refuses it: a locked-out
/// address gets none, and one host cannot take the places of the others.
fn admit(shared: &Shared, ip: IpAddr) -> Result<Admitted, &'static str> {
    if shared.throttle.locked_out(ip, clock::now()) {
        tracing::warn!("refused: locked out after repeated login failures");
        return Err("Too many failed logins from your address. Try again later.\r\n");
    }
    let Some(slot) = shared.admission.per_address.take(ip) else {
        tracing::warn!("refused: too many connections from this address");
        return Err("Too many connections from your address. Try again later.\r\n");
    };
    Ok(Admitted {
        _address_slot: slot,
        login_place: shared.admission.enter_login(ip),
    })
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
        _address_slot,
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
/// duplex stream (raw codec, bare CR line ends). Runs the BBS interpreter on the store thread; a
/// BBS-flagged user is handed to the forwarding session. Returns when the user leaves, the
/// stream ends or the daemon stops.
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
    let mut net = initial;
    let session = Session::new(shared.bbs.clone(), access);
    let mut step = match shared
        .store
        .call(move |s| Step::run(session, |sess| sess.start(s)))
        .await
    {
        Ok(step) => step,
        Err(e) => {
            tracing::error!(error = %e, "no store");
            return;
        }
    };
    let mut buf = vec![0u8; READ_BUF];
    let mut app = Vec::with_capacity(READ_BUF);
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
        for ev in step.events.drain(..) {
            match ev {
                Event::HideInput(h) => codec.hide_input(h, &mut net),
                Event::CheckPassword { call, password } => check = Some((call, password)),
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
                    let sysop = step.session.user().is_some_and(|u| u.sysop);
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
                            &mut net,
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
        match &refused {
            None => codec.encode_text(&step.out, &mut net),
            Some(text) => {
                codec.encode_text(text.as_bytes(), &mut net);
                closing = true;
            }
        }
        if !net.is_empty() {
            if stream.write_all(&net).await.is_err() {
                break;
            }
            net.clear();
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
            let initial = step.session.take_unconsumed();
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
        if let Some(&qtc_bbs::Ask::Conv { channel }) = step.session.pending_ask() {
            let call = step
                .session
                .user()
                .map(|u| u.call.clone())
                .unwrap_or_default();
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
            match Step::answer(step.session, qtc_bbs::Answer::ConvEnded, shared).await {
                Some(s) => step = s,
                None => break,
            }
            continue;
        }
        if let Some(ask @ qtc_bbs::Ask::Connect { .. }) = step.session.pending_ask().cloned() {
            let radios = shared.online.radios();
            let local = &shared.bbs.callsign;
            let ended =
                crate::downlink::run(&radios, &ask, local, &mut stream, &mut codec, &mut shutdown)
                    .await;
            let Some(result) = ended else { break };
            match Step::answer(step.session, qtc_bbs::Answer::Disconnected(result), shared).await {
                Some(s) => step = s,
                None => break,
            }
            continue;
        }
        if let Some(d) = pause {
            // Slow down password guessing; input typed meanwhile waits in the socket.
            tokio::time::sleep(d).await;
        }
        if let Some((call, password)) = check {
            // Counted before the check: parallel guesses cannot outrun the lockout, and while
            // the address or the account is locked out not even the right password is checked.
            let ok = match shared.throttle.attempt(throttle_ip, &call, clock::now()) {
                None => {
                    tracing::warn!("login refused unchecked: locked out after repeated failures");
                    Ok(false)
                }
                Some(attempt) => {
                    let ok = shared.passwords.check(&shared.store, &call, password).await;
                    if matches!(ok, Ok(true)) {
                        shared.throttle.succeeded(attempt, clock::now());
                    }
                    ok
                }
            };
            let session = step.session;
            let (throttle, limits) = (shared.throttle.clone(), shared.user_limits.clone());
            step = match shared
                .store
                .call(move |s| {
                    let mut guarded = Guarded::new(s, &throttle, throttle_ip, &limits);
                    Step::run(session, |sess| {
                        sess.password_checked(ok, &mut guarded, clock::unix_now())
                    })
                })
                .await
            {
                Ok(s) => s,
                Err(_) => break,
            };
            continue;
        }
        let n = tokio::select! {
            r = stream.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            page = pages.recv() => {
                // Only a sysop sees pages; a lagging receiver just skips the oldest.
                if let Ok(text) = page {
                    if step.session.user().is_some_and(|u| u.sysop) {
                        step.session.notice(&text);
                        let out = step.session.take_output();
                        codec.encode_text(&out, &mut net);
                    }
                }
                step.out.clear();
                step.events.clear();
                continue;
            },
            _ = shutdown.changed() => {
                let mut bye = Vec::new();
                codec.encode_text(b"\r\n*** The BBS is shutting down. 73!\r\n", &mut bye);
                let _ = stream.write_all(&bye).await;
                break;
            }
            _ = login_deadline.fired() => {
                tracing::info!("no login in time: disconnected");
                let mut bye = Vec::new();
                codec.encode_text(b"\r\n*** Login timed out. 73!\r\n", &mut bye);
                let _ = stream.write_all(&bye).await;
                break;
            }
            _ = async {
                match login_place.as_mut() {
                    Some(p) => p.closed().await,
                    None => std::future::pending().await,
                }
            } => {
                tracing::info!("not logged in, and its place was needed: disconnected");
                let mut bye = Vec::new();
                codec.encode_text(b"\r\n*** Too many connections logging in. 73!\r\n", &mut bye);
                let _ = stream.write_all(&bye).await;
                break;
            }
            // Moved on after every complete line: a session that trickles bytes without ever
            // finishing a line is as silent as one that sends nothing.
            _ = idle.fired() => {
                tracing::info!("idle for too long: disconnected");
                let mut bye = Vec::new();
                codec.encode_text(b"\r\n*** You have been idle for too long. 73!\r\n", &mut bye);
                let _ = stream.write_all(&bye).await;
                break;
            }
        };
        app.clear();
        codec.decode(&buf[..n], &mut app, &mut net);
        if app.iter().any(|&b| b == b'\r' || b == b'\n') {
            idle.set(shared.idle_timeout.map(|d| clock::now() + d));
        }
        if app.is_empty() {
            step.out.clear();
            continue;
        }
        let input = std::mem::take(&mut app);
        let session = step.session;
        let online = shared.online.clone();
        let (throttle, limits) = (shared.throttle.clone(), shared.user_limits.clone());
        step = match shared
            .store
            .call(move |s| {
                let now = clock::unix_now();
                // Messages entered count against the user's allowances; a password checked
                // in the store (PW's old one) counts as a login attempt.
                let mut guarded = Guarded::new(s, &throttle, throttle_ip, &limits);
                let mut step = Step::run(session, |sess| {
                    sess.handle_input(&input, &mut guarded, now);
                    // U, J, PORTS: answered here, before the next input.
                    while let Some(answer) = sess.pending_ask().and_then(|a| online.answer(a)) {
                        sess.answer(answer, &mut guarded, now);
                    }
                });
                step.input = input;
                step
            })
            .await
        {
            Ok(s) => s,
            Err(_) => break,
        };
        app = std::mem::take(&mut step.input);
    }
    let _ = stream.shutdown().await;
    tracing::info!("disconnected");
}

/// A session after one step on the store thread, with what it produced.
struct Step {
    session: Session,
    out: Vec<u8>,
    events: Vec<Event>,
    /// The input buffer, handed back for reuse.
    input: Vec<u8>,
}

impl Step {
    /// Gives the session the daemon's late answer (after `C` or `CONV`), on the store thread
    /// (lines typed meanwhile may need it). `None`: the store thread is gone.
    async fn answer(session: Session, answer: qtc_bbs::Answer, shared: &Shared) -> Option<Step> {
        shared
            .store
            .call(move |s| Step::run(session, |sess| sess.answer(answer, s, clock::unix_now())))
            .await
            .ok()
    }

    fn run(mut session: Session, f: impl FnOnce(&mut Session)) -> Step {
        f(&mut session);
        let out = session.take_output();
        let events = std::iter::from_fn(|| session.poll_event()).collect();
        Step {
            session,
            out,
            events,
            input: Vec::new(),
        }
    }
}
