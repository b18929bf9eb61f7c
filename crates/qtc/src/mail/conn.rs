//! One mail connection: a protocol core driven on a [`Connection`] (plain, then TLS after
//! STARTTLS); logins through the connection's throttle, password check and login-failure
//! policy; output written before the next store request is run, so a long FETCH or RETR goes
//! as fast as the client reads.

use std::net::SocketAddr;
use std::sync::Arc;

use qtc_callsign::Callsign;
use qtc_email::{Core, Event, LoginRefused};
use tokio::sync::watch;

use super::{Listener, Protocol, Shared};
use crate::connection::{Connection, Wake};
use crate::throttle::Refused;

/// How a run of the loop ended.
enum Ended {
    Closed,
    StartTls,
}

/// A core and what it waits for on its connection.
struct MailConn<C> {
    shared: Arc<Shared>,
    core: C,
    /// IMAP IDLE: the store's changes are told to the core.
    watching: bool,
    changes: watch::Receiver<u64>,
    /// A wrong login used the connection's attempts (or reached the address's lockout): the
    /// answer is written, then the connection closes.
    close_after_reply: bool,
    protocol: Protocol,
    /// Shown among the users online while logged in.
    presence: Option<crate::online::Presence>,
}

/// Serves one connection on a listener of `kind` until it ends.
pub async fn serve(mut conn: Connection, peer: SocketAddr, kind: Listener, shared: Arc<Shared>) {
    let s = super::settings_for(&shared, peer, kind);
    let protocol = kind.protocol;
    // News is read without a login where the sysop allows it: a reader keeps its
    // displaceable place instead.
    if protocol == Protocol::Nntp && s.news_without_login {
        conn.no_login_deadline();
    }
    match protocol {
        Protocol::Smtp => drive(qtc_email::smtp::Smtp::new(s), conn, protocol, shared).await,
        Protocol::Pop3 => drive(qtc_email::pop3::Pop3::new(s), conn, protocol, shared).await,
        Protocol::Imap => {
            let core = qtc_email::imap::Imap::new(s, shared.uid_validity);
            drive(core, conn, protocol, shared).await
        }
        Protocol::Nntp => drive(qtc_email::nntp::Nntp::new(s), conn, protocol, shared).await,
    }
}

/// Drives `core` on the connection until it ends.
async fn drive<C: Core>(core: C, mut conn: Connection, protocol: Protocol, shared: Arc<Shared>) {
    let mut m = MailConn {
        changes: shared.changes.clone(),
        shared,
        core,
        watching: false,
        close_after_reply: false,
        protocol,
        presence: None,
    };
    tracing::info!("connected");
    while let Ended::StartTls = m.run(&mut conn).await {
        let Some(acceptor) = m.shared.acceptor.clone() else {
            break;
        };
        conn = match conn.start_tls(acceptor).await {
            Some(tls) => tls,
            None => {
                tracing::info!("disconnected");
                return;
            }
        };
        m.core.tls_started();
    }
    // The last answer (a refused login's above all) goes out before the close.
    m.core.take_output(&mut conn.out.net);
    conn.close().await;
    tracing::info!("disconnected");
}

impl<C: Core> MailConn<C> {
    async fn run(&mut self, conn: &mut Connection) -> Ended {
        loop {
            self.core.take_output(&mut conn.out.net);
            if conn.out.is_empty() {
                if let Some(ev) = self.core.poll_event() {
                    match self.event(ev, conn).await {
                        Some(end) => return end,
                        None => continue,
                    }
                }
            }
            let reading = self.core.wants_input();
            let (watching, changes) = (self.watching, &mut self.changes);
            let changed = async move {
                match watching {
                    true => changes.changed().await.is_ok(),
                    false => std::future::pending().await,
                }
            };
            match conn.wait(reading, changed).await {
                Wake::Input(n) => {
                    if conn.input(n).contains(&b'\n') {
                        conn.active();
                    }
                    self.core.handle_input(conn.input(n));
                }
                Wake::Wrote => {}
                Wake::InputClosed | Wake::Gone => return Ended::Closed,
                Wake::Ended(why) => {
                    let _ = why.said();
                    return Ended::Closed;
                }
                Wake::Core(true) => self.core.changed(),
                // The store thread is gone: the daemon is stopping.
                Wake::Core(false) => self.watching = false,
            }
        }
    }

    /// Acts on one event; `Some` when the loop ends.
    async fn event(&mut self, ev: Event<C>, conn: &mut Connection) -> Option<Ended> {
        match ev {
            Event::Login { call, password } => {
                let r = self.login(conn, call, password).await;
                self.core.login_done(r);
                if self.close_after_reply {
                    return Some(Ended::Closed);
                }
            }
            Event::Store(req) => match super::store::run(req, &self.shared.backends).await {
                Ok(reply) => self.core.answered(reply),
                Err(_) => self.core.store_lost(),
            },
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

    async fn login(
        &mut self,
        conn: &mut Connection,
        call: Option<Callsign>,
        password: String,
    ) -> Result<Callsign, LoginRefused> {
        let right = match call {
            Some(call) => {
                let checked = conn.check_password(call, password, crate::passwords::Login::User);
                match checked.await {
                    Ok(right) => right,
                    Err(Refused::Locked) => {
                        let why =
                            format!("Logins to {call} from here are locked. Try again later.");
                        return Err(LoginRefused::Full(why));
                    }
                    Err(Refused::Busy) => {
                        let why =
                            format!("Too many logins to {call} at once. Try again in a moment.");
                        return Err(LoginRefused::Full(why));
                    }
                }
            }
            None => Ok(false),
        };
        let account = match (right, call) {
            (Ok(true), Some(account)) => account,
            (Ok(_), _) => {
                let failed = conn.login_failed(call);
                tokio::time::sleep(failed.pause).await;
                self.close_after_reply = failed.close.is_some();
                return Err(LoginRefused::Wrong);
            }
            (Err(_), _) => return Err(LoginRefused::Unavailable),
        };
        let user = self
            .shared
            .backends
            .readers
            .call(move |s| qtc_mail::MessageStore::user(s, account))
            .await;
        let sysop = matches!(&user, Ok(Ok(Some(u))) if u.sysop);
        conn.logged_in(account, sysop, false)
            .map_err(LoginRefused::Full)?;
        let shown = account.to_string();
        self.presence = Some(self.shared.online.join(&shown, self.protocol.name()));
        Ok(account)
    }
}
