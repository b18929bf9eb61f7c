//! One mail connection: bytes between the socket (plain, then TLS after STARTTLS) and a
//! protocol core; logins through the shared throttle and password pool; output written before
//! the next store request is run, so a long FETCH or RETR goes as fast as the client reads.

use std::net::SocketAddr;

use qtc_email::{Core, Event, LoginRefused};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::{Protocol, Shared};
use crate::admission::{Place, Seat};
use crate::clock::{self, Timer};
use crate::login::Admitted;
use crate::stream_io::{read_or_write, Io, Outbox};
use crate::throttle::Refused;

/// One read takes up to this much.
const READ_BUF: usize = 16 * 1024;

/// How a run of the loop ended.
enum Ended {
    Closed,
    StartTls,
}

/// The connection's places, timers and state around its core.
struct Conn<'a> {
    shared: &'a Shared,
    peer: SocketAddr,
    login_place: Option<Place>,
    seat: Option<Seat>,
    idle: Timer,
    login_deadline: Timer,
    failures: u32,
    watching: bool,
    changes: watch::Receiver<u64>,
    protocol: Protocol,
    /// Shown among the users online while logged in.
    presence: Option<crate::online::Presence>,
}

/// Serves one connection until it ends.
pub async fn serve(
    mut tcp: TcpStream,
    peer: SocketAddr,
    protocol: Protocol,
    admitted: Admitted,
    shared: &Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    let Admitted {
        address_slot: _slot,
        login_place,
    } = admitted;
    let s = super::settings_for(shared, peer);
    let mut core: Box<dyn Core + Send> = match protocol {
        Protocol::Smtp => Box::new(qtc_email::smtp::Smtp::new(s)),
        Protocol::Pop3 => Box::new(qtc_email::pop3::Pop3::new(s)),
        Protocol::Imap => Box::new(qtc_email::imap::Imap::new(s, shared.uid_validity)),
        Protocol::Nntp => Box::new(qtc_email::nntp::Nntp::new(s)),
    };
    let mut c = Conn {
        shared,
        peer,
        login_place: Some(login_place),
        seat: None,
        idle: Timer::new(),
        login_deadline: Timer::new(),
        failures: 0,
        watching: false,
        changes: shared.changes.clone(),
        protocol,
        presence: None,
    };
    c.idle.set(shared.idle_timeout.map(|d| clock::now() + d));
    // News is read without a login: a reader keeps its displaceable place instead.
    if protocol != Protocol::Nntp {
        c.login_deadline
            .set(Some(clock::now() + shared.login_timeout));
    }
    tracing::info!("connected");
    if let Ended::StartTls = c.run(&mut tcp, core.as_mut(), &mut shutdown).await {
        let Some(acceptor) = shared.acceptor.clone() else {
            return;
        };
        match tokio::time::timeout(std::time::Duration::from_secs(30), acceptor.accept(tcp)).await {
            Ok(Ok(mut tls)) => {
                core.tls_started();
                c.run(&mut tls, core.as_mut(), &mut shutdown).await;
                let _ = tls.shutdown().await;
            }
            _ => tracing::info!("TLS handshake failed or timed out"),
        }
    } else {
        let _ = tcp.shutdown().await;
    }
    tracing::info!("disconnected");
}

impl Conn<'_> {
    async fn run<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
        core: &mut (dyn Core + Send),
        shutdown: &mut watch::Receiver<bool>,
    ) -> Ended {
        let mut out = Outbox::new(Vec::new());
        let mut buf = vec![0u8; READ_BUF];
        loop {
            core.take_output(&mut out.net);
            if out.is_empty() {
                if let Some(ev) = core.poll_event() {
                    match self.event(ev, core).await {
                        Some(end) => return end,
                        None => continue,
                    }
                }
            }
            let reading = core.wants_input();
            let n = tokio::select! {
                io = read_or_write(stream, out.pending(), reading.then_some(&mut buf[..])) => match io {
                    Io::Read(Ok(0)) | Io::Read(Err(_)) | Io::Wrote(Ok(0) | Err(_)) => return Ended::Closed,
                    Io::Wrote(Ok(n)) => { out.sent(n); continue; }
                    Io::Read(Ok(n)) => n,
                },
                _ = self.changes.changed(), if self.watching => { core.changed(); continue; }
                _ = shutdown.changed() => return Ended::Closed,
                _ = self.login_deadline.fired() => { tracing::info!("no login in time"); return Ended::Closed; }
                _ = async { match self.login_place.as_mut() { Some(p) => p.closed().await, None => std::future::pending().await } } => {
                    tracing::info!("not logged in, and its place was needed");
                    return Ended::Closed;
                }
                _ = self.idle.fired() => { tracing::info!("idle for too long"); return Ended::Closed; }
            };
            if buf[..n].contains(&b'\n') {
                self.idle
                    .set(self.shared.idle_timeout.map(|d| clock::now() + d));
            }
            core.handle_input(&buf[..n]);
        }
    }

    /// Acts on one event; `Some` when the loop ends.
    async fn event(&mut self, ev: Event, core: &mut (dyn Core + Send)) -> Option<Ended> {
        match ev {
            Event::Login { call, password } => {
                let r = self.login(&call, password).await;
                let refused_for_good = matches!(r, Err(LoginRefused::Wrong))
                    && self.failures >= self.shared.login_attempts;
                core.login_done(r);
                if refused_for_good {
                    return Some(Ended::Closed);
                }
            }
            Event::Store(req) => {
                let r = super::store::run(req, &self.shared.backends, &self.shared.settings).await;
                core.answered(r);
            }
            Event::StartTls => return Some(Ended::StartTls),
            Event::Watch(on) => {
                self.watching = on;
                // Changes before IDLE were told by the command that started it.
                self.changes.mark_unchanged();
            }
            Event::Close => return Some(Ended::Closed),
        }
        None
    }

    async fn login(&mut self, call: &str, password: String) -> Result<String, LoginRefused> {
        let sh = self.shared;
        let ip = Some(self.peer.ip());
        let valid = qtc_callsign::Callsign::parse_station(call).is_ok_and(|c| c.ssid() == 0);
        let ok = match valid {
            true => {
                crate::login::check(
                    &sh.throttle,
                    &sh.passwords,
                    ip,
                    call,
                    password,
                    crate::passwords::Login::User,
                )
                .await
            }
            false => Ok(Ok(false)),
        };
        let ok = match ok {
            Ok(ok) => ok,
            Err(Refused::Locked) => {
                let why = format!("Logins to {call} from here are locked. Try again later.");
                return Err(LoginRefused::Full(why));
            }
            Err(Refused::Busy) => {
                let why = format!("Too many logins to {call} at once. Try again in a moment.");
                return Err(LoginRefused::Full(why));
            }
        };
        match ok {
            Ok(true) => {}
            Ok(false) => {
                self.failures += 1;
                sh.metrics.login_failed();
                match valid {
                    true => tracing::warn!(%call, "login failed"),
                    false => tracing::warn!("login failed: not a callsign"),
                }
                tokio::time::sleep(sh.throttle.delay(ip, clock::now())).await;
                return Err(LoginRefused::Wrong);
            }
            Err(_) => return Err(LoginRefused::Unavailable),
        }
        let c = call.to_string();
        let user = sh
            .backends
            .readers
            .call(move |s| qtc_mail::MessageStore::user(s, &c))
            .await;
        let sysop = matches!(&user, Ok(Ok(Some(u))) if u.sysop);
        match sh.admission.seat(sysop, false) {
            Ok(seat) => self.seat = Some(seat),
            Err(refusal) => return Err(LoginRefused::Full(refusal)),
        }
        self.login_place = None;
        self.login_deadline.set(None);
        self.presence = Some(sh.online.join(call, self.protocol.name()));
        tracing::info!(%call, "logged in");
        Ok(call.to_string())
    }
}
