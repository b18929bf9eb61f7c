//! One connection, whatever door it came in by and whatever protocol runs on it: the one
//! driver the BBS ports ([`crate::bbs_port`]), the mail ports ([`crate::mail`]) and the
//! forwarding sessions ([`crate::forward`]) run their cores on, the way quinn's
//! `ConnectionDriver` and mini-redis's `Handler` do. It owns what is the same for all of
//! them: the stream (TLS included: at accept or by STARTTLS, [`Connection::start_tls`]), the
//! bytes waiting to go out (at most one piece: output follows the reader), the connection's
//! places (its address's, its place among those logging in, its seat once logged in), the
//! login and idle timers, the daemon's shutdown, the traffic per port, and what a wrong
//! password costs ([`Connection::login_failed`], one policy for every door). A protocol
//! drives it with [`Connection::wait`], giving what else its core waits for.
//!
//! The listeners are here too ([`accept`]): the per-address cap and a place among those
//! logging in are taken at accept, before any TLS handshake; a refused connection is told
//! why in its protocol's words (a TLS client is just closed: it could not read them).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use qtc_callsign::Callsign;

use crate::admission::{AcceptErrors, Admission, Place, Seat};
use crate::clock::{self, Timer};
use crate::link::Codec;
use crate::login::Admitted;
use crate::metrics::Metrics;
use crate::passwords::{Login, Passwords};
use crate::phy::ByteStream;
use crate::stream_io::{read_or_write, Io, Outbox};
use crate::throttle::{AddressSlot, Refused, Throttle};

/// A TLS client gets this long to finish its handshake.
const TLS_HANDSHAKE: Duration = Duration::from_secs(30);

/// One read takes up to this much: a pasted message arrives in a few large reads.
pub const READ_BUF: usize = 16 * 1024;

/// What the connections of every door share: the places, the login throttle, the timers'
/// lengths and the counters.
pub struct Lobby {
    /// Login attempt counts.
    pub throttle: Arc<Throttle>,
    /// Places for connections and sessions.
    pub admission: Arc<Admission>,
    /// The daemon's counters.
    pub metrics: Arc<Metrics>,
    /// Password checks, off this thread and the store's.
    pub passwords: Passwords,
    /// A user who sends no complete line for this long is disconnected (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// A connection that has not logged in this long after connecting is closed.
    pub login_timeout: Duration,
    /// Wrong logins on one connection before it is closed.
    pub login_attempts: u32,
}

/// Why the connection is over, from outside its protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The daemon stops.
    Shutdown,
    /// No login in `[limits] login_timeout`.
    LoginTimeout,
    /// Not logged in, and a newer connection needed its place.
    PlaceNeeded,
    /// No complete line in `[limits] idle_timeout`.
    Idle,
}

impl Ending {
    /// Logs why, and gives the last line a user is told.
    pub fn said(self) -> &'static str {
        match self {
            Ending::Shutdown => "*** The BBS is shutting down. 73!",
            Ending::LoginTimeout => {
                tracing::info!("no login in time: disconnected");
                "*** Login timed out. 73!"
            }
            Ending::PlaceNeeded => {
                tracing::info!("not logged in, and its place was needed: disconnected");
                "*** Too many connections logging in. 73!"
            }
            Ending::Idle => {
                tracing::info!("idle for too long: disconnected");
                "*** You have been idle for too long. 73!"
            }
        }
    }
}

/// What woke the connection up.
pub enum Wake<T> {
    /// Bytes came in: [`Connection::input`].
    Input(usize),
    /// The far end closed its sending side; what it asked for may still be written.
    InputClosed,
    /// Some output went out.
    Wrote,
    /// The stream failed.
    Gone,
    /// The connection is over ([`Ending`]).
    Ended(Ending),
    /// What the core waits for besides.
    Core(T),
}

/// What a wrong password costs ([`Connection::login_failed`]).
pub struct LoginFailed {
    /// Nothing more is read or checked for this long.
    pub pause: Duration,
    /// The connection is closed (after the answer to the login): why.
    pub close: Option<Closing>,
}

/// Why a login failure closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closing {
    /// The address reached the lockout.
    Locked,
    /// The connection used its `[limits] login_attempts`.
    Attempts,
}

/// One connection and what it holds (see the module's text).
pub struct Connection {
    stream: Box<dyn ByteStream>,
    /// Bytes for the stream, encoded; at most one piece of a core's output.
    pub out: Outbox,
    buf: Vec<u8>,
    /// `None` on a call out: nobody logs in on it.
    lobby: Option<Arc<Lobby>>,
    /// The address login failures count against (TCP only).
    ip: Option<IpAddr>,
    _address_slot: Option<AddressSlot>,
    login_place: Option<Place>,
    seat: Option<Seat>,
    login_deadline: Timer,
    idle: Timer,
    idle_after: Option<Duration>,
    failures: u32,
    input_closed: bool,
    shutdown: watch::Receiver<bool>,
}

impl Connection {
    /// A connection accepted from `peer` with the places it took, its login and idle timers
    /// running.
    pub fn accepted(
        stream: Box<dyn ByteStream>,
        peer: SocketAddr,
        admitted: Admitted,
        lobby: Arc<Lobby>,
        shutdown: watch::Receiver<bool>,
    ) -> Connection {
        let login_timeout = lobby.login_timeout;
        let mut c = Connection::new(stream, lobby, shutdown);
        c.ip = Some(peer.ip());
        c._address_slot = Some(admitted.address_slot);
        c.login_place = Some(admitted.login_place);
        c.login_deadline.set(Some(clock::now() + login_timeout));
        c
    }

    /// A connection from the air (an AX.25 link, a NET/ROM circuit), or a browser's terminal:
    /// no address, no place among TCP logins; its idle timer runs.
    pub fn new(
        stream: Box<dyn ByteStream>,
        lobby: Arc<Lobby>,
        shutdown: watch::Receiver<bool>,
    ) -> Connection {
        let idle_after = lobby.idle_timeout;
        let mut c = Connection::outgoing(stream, shutdown);
        c.lobby = Some(lobby);
        c.idle_after = idle_after;
        c.active();
        c
    }

    /// A call out (to a forwarding partner): no places, no timers of its own.
    pub fn outgoing(stream: Box<dyn ByteStream>, shutdown: watch::Receiver<bool>) -> Connection {
        Connection {
            stream,
            out: Outbox::new(Vec::new()),
            buf: vec![0u8; READ_BUF],
            lobby: None,
            ip: None,
            _address_slot: None,
            login_place: None,
            seat: None,
            login_deadline: Timer::new(),
            idle: Timer::new(),
            idle_after: None,
            failures: 0,
            input_closed: false,
            shutdown,
        }
    }

    /// Reads take up to `n` bytes from now on (a forwarding session's blocks).
    pub fn read_up_to(&mut self, n: usize) {
        self.buf.resize(n.max(self.buf.len()), 0);
    }

    /// Not closed for want of a login (news read without one keeps only its displaceable
    /// place).
    pub fn no_login_deadline(&mut self) {
        self.login_deadline.set(None);
    }

    /// Not closed when idle (a forwarding session has the partner's own timers).
    pub fn never_idle(&mut self) {
        self.idle_after = None;
        self.idle.set(None);
    }

    /// The far end did something that counts as activity (a complete line).
    pub fn active(&mut self) {
        self.idle.set(self.idle_after.map(|d| clock::now() + d));
    }

    /// The far end closed its sending side.
    pub fn input_closed(&self) -> bool {
        self.input_closed
    }

    /// The bytes of the last [`Wake::Input`].
    pub fn input(&self, n: usize) -> &[u8] {
        &self.buf[..n]
    }

    /// The stream and the shutdown signal, for a part of the session that takes the stream a
    /// while (a conference, a connect out).
    pub fn parts(&mut self) -> (&mut Box<dyn ByteStream>, &mut watch::Receiver<bool>) {
        (&mut self.stream, &mut self.shutdown)
    }

    /// Waits for the stream (input when `reading`, room for pending output), the daemon
    /// (shutdown, the login and idle timers, a newer connection needing the place) and
    /// `core`, whatever the core waits for besides (`std::future::pending()`: nothing).
    pub async fn wait<T>(&mut self, reading: bool, core: impl Future<Output = T>) -> Wake<T> {
        let buf = (reading && !self.input_closed).then_some(&mut self.buf[..]);
        tokio::select! {
            io = read_or_write(&mut self.stream, self.out.pending(), buf) => match io {
                Io::Read(Ok(0)) => {
                    self.input_closed = true;
                    Wake::InputClosed
                }
                Io::Read(Ok(n)) => Wake::Input(n),
                Io::Wrote(Ok(n)) if n > 0 => {
                    self.out.sent(n);
                    Wake::Wrote
                }
                Io::Wrote(_) | Io::Read(Err(_)) => Wake::Gone,
            },
            _ = self.shutdown.changed() => Wake::Ended(Ending::Shutdown),
            _ = self.login_deadline.fired() => Wake::Ended(Ending::LoginTimeout),
            _ = place_needed(&mut self.login_place) => Wake::Ended(Ending::PlaceNeeded),
            // Moved on after every complete line: a session that trickles bytes without ever
            // finishing a line is as silent as one that sends nothing.
            _ = self.idle.fired() => Wake::Ended(Ending::Idle),
            t = core => Wake::Core(t),
        }
    }

    /// Writes everything pending now (and what TLS holds); `Err` when the stream is gone.
    pub async fn flush(&mut self) -> std::io::Result<()> {
        self.out.write_all(&mut self.stream).await?;
        self.stream.flush().await
    }

    /// `n` bytes of input through `codec`: what the session reads into `app`, the codec's own
    /// answers (telnet negotiation) into the output.
    pub fn decode(&mut self, n: usize, codec: &mut Codec, app: &mut Vec<u8>) {
        codec.decode(&self.buf[..n], app, &mut self.out.net);
    }

    /// A last line after what is pending.
    pub async fn bye(&mut self, codec: &mut Codec, text: &str) {
        self.out.bye(&mut self.stream, codec, text).await;
    }

    /// Writes what is pending and closes the stream (our sending side: an AX.25 link sends
    /// what is left, then DISC).
    pub async fn close(&mut self) {
        let _ = self.flush().await;
        let _ = self.stream.shutdown().await;
    }

    /// Starts TLS (at accept, or after STARTTLS's answer is written): the handshake gets a
    /// bounded time and gives up its place when a newer connection needs it, like a login.
    /// `None`: it failed (logged).
    pub async fn start_tls(mut self, acceptor: tokio_rustls::TlsAcceptor) -> Option<Connection> {
        if self.flush().await.is_err() {
            return None;
        }
        let shake = tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(self.stream));
        let shook = tokio::select! {
            r = shake => r,
            _ = place_needed(&mut self.login_place) => {
                tracing::info!("TLS handshake unfinished, and its place was needed");
                return None;
            }
        };
        match shook {
            Ok(Ok(tls)) => {
                let version = tls.get_ref().1.protocol_version();
                tracing::info!(?version, "TLS started");
                self.stream = Box::new(tls);
                Some(self)
            }
            Ok(Err(e)) => {
                tracing::info!(error = %e, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::info!("TLS handshake timed out");
                None
            }
        }
    }

    /// Checks `call`'s password, the attempt counted by the throttle first
    /// ([`crate::login::check`]); `Err`: it was not checked (locked out, or too many logins
    /// to the account at once). The check does not hold the connection.
    pub fn check_password(
        &self,
        call: Callsign,
        password: String,
        login: Login,
    ) -> impl Future<Output = Result<Result<bool, qtc_mail::StoreError>, Refused>> + Send + 'static
    {
        let (lobby, ip) = (self.lobby.clone(), self.ip);
        async move {
            // Nobody logs in on a call out.
            let Some(lobby) = lobby else {
                return Err(Refused::Locked);
            };
            crate::login::check(&lobby.throttle, &lobby.passwords, ip, call, password, login).await
        }
    }

    /// A wrong callsign or password, at any door: counted and logged (only a valid callsign
    /// is logged: anything else may be a password), then a pause growing with the address's
    /// failures; the connection closes at the address's lockout or at its own
    /// `[limits] login_attempts`, after its answer.
    pub fn login_failed(&mut self, call: Option<Callsign>) -> LoginFailed {
        match call {
            Some(call) => tracing::warn!(%call, "login failed"),
            None => tracing::warn!("login failed: not a callsign"),
        }
        self.failures += 1;
        let Some(lobby) = &self.lobby else {
            return LoginFailed {
                pause: Duration::ZERO,
                close: Some(Closing::Attempts),
            };
        };
        lobby.metrics.login_failed();
        let now = clock::now();
        let close = if self.ip.is_some_and(|ip| lobby.throttle.locked_out(ip, now)) {
            Some(Closing::Locked)
        } else if self.failures >= lobby.login_attempts {
            Some(Closing::Attempts)
        } else {
            None
        };
        LoginFailed {
            pause: lobby.throttle.delay(self.ip, now),
            close,
        }
    }

    /// `call` logged in: a seat among the sessions (its account's cap counted), and the
    /// connection no longer waits for a login; `Err`: the line that refuses it.
    pub fn logged_in(&mut self, call: Callsign, sysop: bool, partner: bool) -> Result<(), String> {
        let Some(lobby) = &self.lobby else {
            return Err("Nobody logs in on a call out.".into());
        };
        match lobby.admission.seat(call, sysop, partner) {
            Ok(seat) => self.seat = Some(seat),
            Err(refusal) => {
                tracing::warn!(%call, "refused at login: {refusal}");
                return Err(refusal);
            }
        }
        self.login_place = None;
        self.login_deadline.set(None);
        tracing::info!(%call, "logged in");
        Ok(())
    }

    /// Logged in (holds a seat).
    pub fn is_logged_in(&self) -> bool {
        self.seat.is_some()
    }
}

/// Completes when a newer connection needed the place; never without one.
async fn place_needed(place: &mut Option<Place>) {
    match place.as_mut() {
        Some(p) => p.closed().await,
        None => std::future::pending().await,
    }
}

/// A listener and how its connections are served.
pub struct Door<P, R, F> {
    /// Its name in logs and the metrics (bytes per port).
    pub name: String,
    /// TLS from the first byte.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// The span a connection from this address runs in.
    pub span: P,
    /// A refusal in the protocol's words.
    pub refusal: R,
    /// Serves one connection.
    pub serve: F,
}

/// Accepts connections until shutdown: each is counted on the port, takes its places (or is
/// told why not), gets its TLS handshake if the door has one, and is served in a task of its
/// own.
pub async fn accept<P, R, F, Fut>(
    listener: TcpListener,
    door: Door<P, R, F>,
    lobby: Arc<Lobby>,
    mut shutdown: watch::Receiver<bool>,
    tasks: TaskTracker,
) where
    P: Fn(SocketAddr) -> tracing::Span,
    R: Fn(&str) -> String,
    F: Fn(Connection, SocketAddr) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let bytes = lobby.metrics.port_bytes(&door.name);
    let mut errors = AcceptErrors::new(lobby.metrics.clone());
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning on accept.
                errors.failed(&door.name, &e);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let span = (door.span)(peer);
        let _ = stream.set_nodelay(true);
        let stream: Box<dyn ByteStream> =
            Box::new(crate::metrics::Counted::new(stream, bytes.clone()));
        // Taken before any TLS handshake: a host that opens handshakes and never finishes
        // them holds no more places than one that never logs in.
        let admitted = match span
            .in_scope(|| crate::login::admit(&lobby.throttle, &lobby.admission, peer.ip()))
        {
            Ok(a) => a,
            Err(why) if door.tls.is_none() => {
                tasks.spawn(refuse(stream, (door.refusal)(why)).instrument(span));
                continue;
            }
            Err(_) => continue,
        };
        let conn = Connection::accepted(stream, peer, admitted, lobby.clone(), shutdown.clone());
        match door.tls.clone() {
            None => tasks.spawn((door.serve)(conn, peer).instrument(span)),
            Some(acceptor) => {
                let serve = door.serve.clone();
                tasks.spawn(
                    async move {
                        // The session's own timers take over after the handshake.
                        if let Some(conn) = conn.start_tls(acceptor).await {
                            serve(conn, peer).await;
                        }
                    }
                    .instrument(span),
                )
            }
        };
    }
}

async fn refuse(mut stream: Box<dyn ByteStream>, text: String) {
    let _ = stream.write_all(text.as_bytes()).await;
    let _ = stream.shutdown().await;
}
