//! One user's connection: the BBS interpreter ([`qtc_bbs::Session`]), its stream and codec, and
//! what the daemon does around them (places, timers, the sysop's pages). The interpreter runs
//! in the connection's task; its store requests go to the reader pool or the store thread
//! ([`crate::session_store`]), its password checks to the password pool, its questions to
//! [`crate::online::Online`] (or, for `CONV` and `C`, to the conference and the radio ports,
//! which take the stream until the user is back).
//!
//! [`UserConn::run`] looks at the session after every step ([`UserConn::step`]): its events,
//! its text, then the one thing it waits for (a refusal, a partner's handover, a question, the
//! pause after a failed login, a password check, a store answer, the next piece of a long
//! output). When it waits for nothing, the connection waits for the stream and the daemon
//! ([`UserConn::wait`]). Each kind of event has a method of its own.
//!
//! Output is made a piece at a time, the next only once the last has been written to the
//! stream, while input is still read (so `A` stops it): a reader who stops costs one piece of
//! memory and no work. The connection itself (stream, places, timers, shutdown, what a wrong
//! password costs) is the one driver every door shares, [`Connection`].

use std::time::Duration;

use qtc_bbs::{Answer, Ask, Checking, Event, Refusal, Request, Session};
use qtc_callsign::Callsign;
use tokio::sync::broadcast;

use super::{Shared, UserOpts};
use crate::clock;
use crate::connection::{Closing, Connection, Wake, READ_BUF};
use crate::forward;
use crate::link::Codec;
use crate::online::Presence;
use crate::throttle::Refused;

/// What the connection does after a step.
enum Step {
    /// Look at the session again: it went on.
    Again,
    /// Wait for the stream or the daemon.
    Wait,
    /// Close the connection.
    End,
}

/// A password the session asked to have checked ([`Event::CheckPassword`]).
struct PasswordCheck {
    call: Callsign,
    password: String,
    purpose: Checking,
}

/// A user's connection and the session it drives.
pub(super) struct UserConn<'a> {
    shared: &'a Shared,
    conn: Connection,
    codec: Codec,
    session: Session,
    /// What the codec made of one read.
    app: Vec<u8>,
    /// Only BBS-flagged users may stay (the raw forwarding port).
    partners_only: bool,
    /// How the user came in, as `U` shows it.
    via: String,
    /// The caller's station as `U` shows it, SSID included (an AX.25 link's source callsign).
    station: Option<String>,
    /// The partner's login lines ended in LF (CR LF): its forwarding session's lines will too.
    login_lf: bool,
    /// On the list `U` shows, from login.
    presence: Option<Presence>,
    /// The session asked to close (or was refused): once its text is out, the connection ends.
    closing: bool,
    /// A line that replaces what the session said since the last step (a refused login).
    refusal: Option<String>,
    /// After a failed login: nothing more is read or checked for this long.
    pause: Option<Duration>,
    /// A password check the session waits for.
    check: Option<PasswordCheck>,
    /// A partner logged in: the connection goes to its forwarding session.
    partner: Option<Callsign>,
    /// The secret a partner must answer a challenge from first (it came by another way).
    challenge: Option<String>,
    /// Pages to the sysop, shown to a sysop.
    pages: broadcast::Receiver<String>,
}

impl<'a> UserConn<'a> {
    /// The session on `conn`, come in as `opts` says.
    pub(super) fn new(
        mut conn: Connection,
        codec: Codec,
        opts: UserOpts,
        shared: &'a Shared,
    ) -> Self {
        conn.out.net.extend_from_slice(&opts.initial);
        UserConn {
            shared,
            conn,
            codec,
            session: Session::new(shared.bbs.clone(), opts.access),
            app: Vec::with_capacity(READ_BUF),
            partners_only: opts.partners_only,
            via: opts.via,
            station: opts.station,
            login_lf: false,
            presence: None,
            closing: false,
            refusal: None,
            pause: None,
            check: None,
            partner: None,
            challenge: opts.challenge,
            pages: shared.online.pages(),
        }
    }

    /// Serves the user until they leave, the stream ends or the daemon stops.
    pub(super) async fn run(mut self) {
        self.session.start();
        loop {
            match self.step().await {
                Step::Again => {}
                Step::Wait => {
                    if !self.wait().await {
                        break;
                    }
                }
                Step::End => break,
            }
        }
        self.conn.close().await;
        tracing::info!("disconnected");
    }

    /// Acts on what the session said and asked since the last step: its events, its text, then
    /// the one thing it waits for, most urgent first.
    async fn step(&mut self) -> Step {
        while let Some(ev) = self.session.poll_event() {
            self.on_event(ev);
        }
        self.take_text();
        // Whatever waits next (the forwarding session, a conference, a password check, the
        // pause after a failure) comes after what was said so far.
        if self.waits_outside() && self.conn.flush().await.is_err() {
            return Step::End;
        }
        if self.closing {
            return Step::End;
        }
        if let Some(call) = self.partner.take() {
            self.hand_over(call).await;
            return Step::End;
        }
        if let Some(step) = self.on_ask().await {
            return step;
        }
        if let Some(d) = self.pause.take() {
            // Slow down password guessing; input typed meanwhile waits in the socket.
            tokio::time::sleep(d).await;
        }
        if let Some(check) = self.check.take() {
            self.on_password_check(check).await;
            return Step::Again;
        }
        if let Some(request) = self.session.take_request() {
            self.on_store_request(request).await;
            return Step::Again;
        }
        if self.conn.out.is_empty() && self.session.has_more_output() {
            self.session.more_output(clock::unix_now());
            return Step::Again;
        }
        if self.conn.input_closed() && self.conn.out.is_empty() {
            return Step::End;
        }
        Step::Wait
    }

    /// The session waits for something that takes the connection away from its stream a while:
    /// its text goes out first.
    fn waits_outside(&self) -> bool {
        self.closing
            || self.partner.is_some()
            || self.pause.is_some()
            || self.check.is_some()
            || matches!(
                self.session.pending_ask(),
                Some(Ask::Conv { .. } | Ask::Connect { .. })
            )
    }

    /// What the session said, for the stream; a refusal says no more than itself.
    fn take_text(&mut self) {
        // After the events: a password prompt follows the request to stop echoing.
        let said = self.session.take_output();
        match self.refusal.take() {
            None => self.codec.encode_text(&said, &mut self.conn.out.net),
            Some(text) => {
                self.codec
                    .encode_text(text.as_bytes(), &mut self.conn.out.net);
                self.closing = true;
            }
        }
    }

    fn on_event(&mut self, ev: Event) {
        match ev {
            Event::HideInput(h) => self.codec.hide_input(h, &mut self.conn.out.net),
            Event::CheckPassword {
                call,
                password,
                purpose,
            } => {
                self.check = Some(PasswordCheck {
                    call,
                    password,
                    purpose,
                })
            }
            Event::LoginFailed { call } => self.on_login_failed(call),
            Event::LoggedIn { call, bbs } => self.on_logged_in(call, bbs),
            Event::PageSysop { from, text } => {
                self.shared
                    .online
                    .page_sysop(&from.to_string(), &text, clock::unix_now())
            }
            Event::Close => self.closing = true,
        }
    }

    /// A wrong password or callsign: what it costs is the connection's ([`Connection::
    /// login_failed`]); an address that reached the lockout is told so and closed. At the
    /// connection's own limit the interpreter says its goodbye and closes by itself (it counts
    /// the same `[limits] login_attempts`).
    fn on_login_failed(&mut self, call: Option<Callsign>) {
        let failed = self.conn.login_failed(call);
        self.pause = Some(failed.pause);
        if failed.close == Some(Closing::Locked) {
            self.refusal = Some(
                "Login incorrect.\rToo many failed logins from your address. Try again later.\r"
                    .to_string(),
            );
        }
    }

    /// The user is in: a seat among the sessions (or a refusal), then on the list `U` shows,
    /// or handed to forwarding for a partner.
    fn on_logged_in(&mut self, call: Callsign, bbs: bool) {
        let sysop = self.session.user().is_some_and(|u| u.sysop);
        if let Err(refusal) = self.conn.logged_in(call, sysop, bbs) {
            self.refusal = Some(format!("{refusal}\r"));
            return;
        }
        if !bbs && !self.partners_only {
            let shown = self.station.clone().unwrap_or_else(|| call.to_string());
            self.presence = Some(self.shared.online.join(&shown, &self.via));
        }
        if bbs {
            self.partner = Some(call);
        } else if self.partners_only {
            self.codec.encode_text(
                b"*** This port is for forwarding partners only: use the telnet port.\r",
                &mut self.conn.out.net,
            );
            self.closing = true;
        }
    }

    /// A partner logged in: its forwarding session takes the connection to its end.
    async fn hand_over(&mut self, call: Callsign) {
        self.partner_framing(call);
        let mut initial = self.session.take_unconsumed();
        if let Some(secret) = self.challenge.take() {
            if self.conn.flush().await.is_err() {
                return;
            }
            let (stream, _) = self.conn.parts();
            let challenged =
                crate::partner_trust::challenge(stream, &mut self.codec, call, &secret);
            match challenged.await {
                Some(after) => initial.extend(after),
                None => return,
            }
        }
        // The forwarding session has the partner's own timers.
        self.conn.never_idle();
        let _ = forward::run(
            &self.shared.forwarder,
            &mut self.conn,
            &mut self.codec,
            forward::Side::called(),
            call,
            &initial,
        )
        .await;
    }

    /// The link under a partner's forwarding session: xfbbd doubles 0xFF on its forwarding
    /// link (`iac_escaped`); on the telnet port a client that never spoke telnet is raw; and a
    /// called session's lines end as the partner's login lines did.
    fn partner_framing(&mut self, call: Callsign) {
        let fwd = &self.shared.forwarder;
        if fwd.partner(call).is_some_and(|p| p.iac_escaped) {
            self.codec = Codec::iac();
            return;
        }
        if self.codec.raw_unless_telnet_spoken() {
            tracing::info!(%call, "the partner never spoke telnet: its link is raw (0xFF as it is)");
        }
        self.codec.mirror_line_end(self.login_lf);
    }

    /// The session's question: `CONV` and `C` take the stream until the user is back; `U`,
    /// `J`, `PORTS`, `NODES` and `ROUTES` are answered at once. `None`: no question.
    async fn on_ask(&mut self) -> Option<Step> {
        let ask = self.session.pending_ask()?.clone();
        match ask {
            Ask::Conv { channel } => Some(self.conference(channel).await),
            Ask::Connect { .. } => Some(self.connect_out(&ask).await),
            _ => {
                let answer = self.shared.online.answer(&ask).await?;
                self.session.answer(answer, clock::unix_now());
                Some(Step::Again)
            }
        }
    }

    /// `CONV`: the conference has the stream until the user leaves it.
    async fn conference(&mut self, channel: u16) -> Step {
        let Some(user) = self.user_call() else {
            return Step::End;
        };
        let (stream, shutdown) = self.conn.parts();
        let back = crate::conference::run(
            &self.shared.online,
            user,
            channel,
            self.shared.bbs.max_line,
            stream,
            &mut self.codec,
            shutdown,
        )
        .await;
        if !back {
            return Step::End;
        }
        self.session.answer(Answer::ConvEnded, clock::unix_now());
        Step::Again
    }

    /// `C`: the link out has the stream until it is over.
    async fn connect_out(&mut self, ask: &Ask) -> Step {
        let radios = self.shared.online.radios();
        let Some(user) = self.user_call() else {
            return Step::End;
        };
        let (stream, shutdown) = self.conn.parts();
        let ended =
            crate::downlink::run(&radios, ask, user, stream, &mut self.codec, shutdown).await;
        match ended {
            Some(answer) => {
                self.session.answer(answer, clock::unix_now());
                Step::Again
            }
            None => Step::End,
        }
    }

    /// The logged-in user's callsign (`CONV` and `C` come only after a login).
    fn user_call(&self) -> Option<Callsign> {
        self.session.user().map(|u| u.call)
    }

    /// Checks a password on the password pool and gives the session the result.
    async fn on_password_check(&mut self, c: PasswordCheck) {
        let now = || clock::unix_now();
        let login = pool_for(self.shared, c.call);
        // `PW`'s current password (the user is logged in already) is not a login attempt: the
        // session bounds it. A login and `SYS` go through the connection's throttle.
        let checked = match c.purpose {
            Checking::Current => Ok(self
                .shared
                .passwords
                .check(Some(c.call), c.password, login)
                .await),
            _ => {
                let check = self.conn.check_password(c.call, c.password, login);
                check.await.map_err(|why| match why {
                    Refused::Locked => Refusal::Locked,
                    Refused::Busy => Refusal::Busy,
                })
            }
        };
        match checked {
            Ok(ok) => self.session.password_checked(ok, now()),
            Err(why) => self.session.password_refused(why, now()),
        }
    }

    /// Runs a store request where it belongs and gives the session the answer.
    async fn on_store_request(&mut self, request: Request) {
        let backends = crate::session_store::Backends {
            readers: &self.shared.readers,
            store: &self.shared.store,
            user_limits: &self.shared.user_limits,
            passwords: &self.shared.passwords,
        };
        match crate::session_store::run(request, backends).await {
            Ok(reply) => self.session.store_answered(reply, clock::unix_now()),
            Err(gone) => self
                .session
                .store_lost(&qtc_mail::StoreError::Database(gone.to_string())),
        }
    }

    /// Waits for the connection (input, room for output, the daemon: [`Connection::wait`])
    /// and a page to the sysop; false when the connection ends.
    async fn wait(&mut self) -> bool {
        let reading = self.session.wants_input();
        match self.conn.wait(reading, self.pages.recv()).await {
            Wake::Input(n) => {
                self.on_input(n);
                true
            }
            Wake::InputClosed | Wake::Wrote => true,
            Wake::Gone => false,
            Wake::Core(page) => {
                self.on_page(page);
                true
            }
            Wake::Ended(why) => {
                let text = why.said();
                self.conn.bye(&mut self.codec, text).await;
                false
            }
        }
    }

    /// `n` bytes from the user: through the codec to the session.
    fn on_input(&mut self, n: usize) {
        self.app.clear();
        self.conn.decode(n, &mut self.codec, &mut self.app);
        if !self.conn.is_logged_in() {
            self.login_lf |= self.app.contains(&b'\n');
        }
        if self.app.iter().any(|&b| b == b'\r' || b == b'\n') {
            self.conn.active();
        }
        if !self.app.is_empty() {
            self.session.handle_input(&self.app, clock::unix_now());
        }
    }

    /// A page to the sysop: only a sysop sees it; a lagging receiver just skips the oldest.
    fn on_page(&mut self, page: Result<String, broadcast::error::RecvError>) {
        if let Ok(text) = page {
            if self.session.user().is_some_and(|u| u.sysop) {
                self.session.notice(&text);
            }
        }
    }
}

/// The pool a password check runs on: a partner's login must not wait for a burst of users'.
fn pool_for(shared: &Shared, call: Callsign) -> crate::passwords::Login {
    match shared.forwarder.partner(call) {
        Some(_) => crate::passwords::Login::Partner,
        None => crate::passwords::Login::User,
    }
}
