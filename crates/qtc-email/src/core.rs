//! What the four protocol cores share: their settings, the events they hand out, the trait the
//! daemon drives them through, and [`Exchange`], the output and events each core keeps.

use std::collections::VecDeque;

use qtc_callsign::Callsign;
use qtc_mail::request::Query;
use qtc_mail::StoreError;

use crate::store::{MailKind, Reply, Request};

/// What every session needs to know of this BBS and of the connection.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The station's callsign (no SSID).
    pub call: Callsign,
    /// The station's hierarchical address.
    pub haddr: String,
    /// The mail domain of local users (`CALL@domain`); the callsign when none is configured.
    pub domain: String,
    /// The largest message body taken (`[limits] max_message`).
    pub max_message: usize,
    /// A client may send a password in clear on this connection (loopback, after STARTTLS,
    /// or the sysop allows it).
    pub plain_auth: bool,
    /// STARTTLS is offered (`[tls]` is set and the connection is not TLS yet).
    pub starttls: bool,
    /// NNTP readers may read bulletins without a login (`[mail] news_without_login`).
    pub news_without_login: bool,
    /// The software and version named in greetings.
    pub version: String,
}

impl Settings {
    /// TLS runs now: passwords may come, and STARTTLS is not offered again.
    pub(crate) fn tls_started(&mut self) {
        self.starttls = false;
        self.plain_auth = true;
    }

    /// Whether `domain` names this BBS: its callsign, its hierarchical address or the mail
    /// domain (any case).
    pub fn is_ours(&self, domain: &str) -> bool {
        [self.call.base(), &self.haddr, &self.domain]
            .iter()
            .any(|d| d.eq_ignore_ascii_case(domain))
    }

    /// Why a password is refused on this connection (passwords in clear are not taken):
    /// `upgrade`, the protocol's word for STARTTLS, when it is offered; otherwise what the
    /// user can do, not a TLS that is not there.
    pub fn clear_password_refused(&self, upgrade: &str) -> String {
        match self.starttls {
            true => format!("{upgrade} first: no passwords in clear here"),
            false => "no passwords in clear from the network here, and this BBS has no TLS: \
                      log in on the BBS's own host, or ask its sysop for TLS"
                .into(),
        }
    }
}

/// Why a login was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginRefused {
    /// Wrong callsign or password.
    Wrong,
    /// Not now (every place taken, the account locked, too many logins at once): the line
    /// to show.
    Full(String),
    /// The store or the password checks are not available.
    Unavailable,
}

/// What a session `C` asks of the daemon.
#[derive(Debug)]
pub enum Event<C> {
    /// Check this login (counted by the throttle, password checked, a place taken), then call
    /// [`Core::login_done`].
    Login {
        /// The account typed, when it is a user's (a station's call without an SSID); `None`:
        /// anything else, a wrong login (never shown nor logged: it may be a password).
        call: Option<Callsign>,
        /// The password.
        password: String,
    },
    /// Run this where it says, then give its answer to [`Core::answered`] (or, when the
    /// thread that runs it is gone, call [`Core::store_lost`]).
    Store(Request<C>),
    /// Start TLS on the connection after the output so far, then call [`Core::tls_started`].
    StartTls,
    /// Call [`Core::changed`] whenever the store changes (true), or stop (false): IMAP IDLE.
    Watch(bool),
    /// Close the connection once the output is written.
    Close,
}

/// The callsign a client logs in with: `N0USR` or `N0USR@domain`, upper case.
pub(crate) fn account(user: &str) -> String {
    user.split('@')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_uppercase()
}

/// What a core has for the daemon: bytes to send and events, and how many answers it waits
/// for (a login, a store answer, the TLS handshake). Each core holds one.
#[derive(Debug)]
pub struct Exchange<C> {
    out: Vec<u8>,
    events: VecDeque<Event<C>>,
    /// Answers the core waits for.
    due: usize,
    closing: bool,
}

impl<C: Core> Exchange<C> {
    pub(crate) fn new() -> Exchange<C> {
        Exchange {
            out: Vec::new(),
            events: VecDeque::new(),
            due: 0,
            closing: false,
        }
    }

    /// A line to send (CR LF is added).
    pub(crate) fn say(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// The output, for bytes written as they are (literals, message text).
    pub(crate) fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Asks the store for `query`; `then` goes on with its answer. Nothing else is read until
    /// it comes.
    pub(crate) fn ask<Q: Query<MailKind>>(
        &mut self,
        query: Q,
        then: impl FnOnce(&mut C, Result<Q::Answer, StoreError>) + Send + 'static,
    ) {
        self.due += 1;
        self.events
            .push_back(Event::Store(Request::new(query, Box::new(then))));
    }

    /// Asks the daemon to check a login to `account` ([`account`]'s text).
    pub(crate) fn login(&mut self, account: String, password: String) {
        self.due += 1;
        let call = Callsign::parse_station(&account)
            .ok()
            .filter(|c| c.ssid() == 0);
        self.events.push_back(Event::Login { call, password });
    }

    /// Asks for TLS after the output so far.
    pub(crate) fn start_tls(&mut self) {
        self.due += 1;
        self.events.push_back(Event::StartTls);
    }

    /// Starts or stops hearing of changes.
    pub(crate) fn watch(&mut self, on: bool) {
        self.events.push_back(Event::Watch(on));
    }

    /// Ends the session once the output is written; nothing more is read.
    pub(crate) fn close(&mut self) {
        if !self.closing {
            self.closing = true;
            self.events.push_back(Event::Close);
        }
    }

    /// An answer came (a login, a store answer, the TLS handshake).
    pub(crate) fn answer_came(&mut self) {
        self.due = self.due.saturating_sub(1);
    }

    /// Whether the core waits for an answer or is closing: it reads nothing then.
    pub(crate) fn busy(&self) -> bool {
        self.due > 0 || self.closing
    }

    /// Whether a store answer is on its way.
    pub(crate) fn asking(&self) -> bool {
        self.due > 0
    }
}

/// A protocol session, as the daemon drives it: bytes and answers in, bytes and [`Event`]s
/// out. Its store work comes out as typed requests whose answers carry on what asked for them.
pub trait Core: Sized + Send + 'static {
    /// What the session says before it closes when the store is lost.
    const STORE_LOST: &'static str;
    /// The output and events the core keeps (each core holds one [`Exchange`]).
    fn exchange(&self) -> &Exchange<Self>;
    /// The same, to change.
    fn exchange_mut(&mut self) -> &mut Exchange<Self>;
    /// Bytes from the client.
    fn handle_input(&mut self, bytes: &[u8]);
    /// What the protocol says to a login's outcome ([`Core::login_done`] calls it).
    fn logged_in(&mut self, result: Result<Callsign, LoginRefused>);
    /// What the protocol forgets once TLS runs ([`Core::tls_started`] calls it).
    fn tls_running(&mut self);
    /// The store changed (while watching).
    fn changed(&mut self) {}
    /// Goes on with input that waited for an answer.
    fn resume(&mut self);

    /// The answer to [`Event::Login`]: the user's callsign, or why not; then the input that
    /// waited.
    fn login_done(&mut self, result: Result<Callsign, LoginRefused>) {
        self.exchange_mut().answer_came();
        self.logged_in(result);
        self.resume();
    }
    /// TLS now runs on the connection (after [`Event::StartTls`]); then the input that
    /// waited.
    fn tls_started(&mut self) {
        self.exchange_mut().answer_came();
        self.tls_running();
        self.resume();
    }

    /// Whether the session takes input now (false while it waits for an answer, and once it
    /// is closing).
    fn wants_input(&self) -> bool {
        !self.exchange().busy()
    }
    /// The daemon could not run the last store request (the thread that runs it is gone):
    /// the client is told, and the session ends.
    fn store_lost(&mut self) {
        let x = self.exchange_mut();
        x.answer_came();
        x.say(Self::STORE_LOST);
        x.close();
    }
    /// Appends what is to be sent to `out`.
    fn take_output(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.exchange_mut().out);
    }
    /// The next thing the session asks for.
    fn poll_event(&mut self) -> Option<Event<Self>> {
        self.exchange_mut().events.pop_front()
    }
    /// The answer to [`Event::Store`]: what asked for it goes on, then the input that waited.
    fn answered(&mut self, reply: Reply<Self>) {
        self.exchange_mut().answer_came();
        reply.apply(self);
        self.resume();
    }
}
