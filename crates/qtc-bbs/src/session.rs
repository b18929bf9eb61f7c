//! The per-user interpreter state machine: lines in, the command they name run
//! ([`crate::cmd`]), text, events, store requests and questions out.

use std::collections::VecDeque;
use std::sync::Arc;

use qtc_callsign::Callsign;
use qtc_mail::{StoreError, User};

use crate::ask::{Answer, Ask};
use crate::cmd::send::Draft;
use crate::lines::{Line, LineReader};
use crate::store::{self, BbsStore, Query, Reply, Request};

mod login;
pub(crate) mod paging;
mod types;

use paging::Pager;

pub use types::{Access, Checking, Config, Event, Refusal};

pub(crate) enum State {
    AskCall,
    AskPassword {
        call: Callsign,
    },
    /// Waiting for [`Session::password_checked`] on `call`'s password.
    Verifying {
        call: Callsign,
        purpose: Checking,
        then: Checked,
    },
    Command,
    /// A command prompted for the user's next line (a subject, a password).
    Prompted(NextLine),
    /// A message's text, a line at a time.
    Body(Draft),
    /// Output paused at `More?`.
    More(Pager),
    /// Output going out: the next piece comes when the transport asks ([`Session::more_output`]).
    Flow(Pager),
    /// Waiting for the daemon's [`Session::answer`].
    Asking,
    /// A BBS logged in: its lines are for the forwarding session now.
    Handover,
    Closed,
}

/// What a command does with the line it prompted for.
pub(crate) type NextLine = Box<dyn FnOnce(&mut Session, Vec<u8>) + Send>;

/// What follows a password check.
pub(crate) type Checked = Box<dyn FnOnce(&mut Session, Result<bool, StoreError>) + Send>;

/// One user's conversation with the BBS.
pub struct Session {
    pub(crate) cfg: Arc<Config>,
    access: Access,
    pub(crate) state: State,
    pub(crate) user: Option<User>,
    lines: LineReader,
    pub(crate) out: Vec<u8>,
    pub(crate) events: VecDeque<Event>,
    /// Wrong passwords so far (at login, or `PW`'s current one).
    pub(crate) failures: u32,
    unconsumed: Vec<u8>,
    /// Lines that arrived while the session waited (a store answer, a password check, the end
    /// of an output), taken in order after it.
    waiting: VecDeque<Line>,
    /// Requests not yet taken by the daemon.
    requests: VecDeque<Request>,
    /// Answers still due, taken or not.
    due: usize,
    /// Of those, the ones the user waits for (a silent save does not count).
    awaited: usize,
    /// A sysop who came in over RF (no password) gets sysop rights only after `SYS`.
    pub(crate) sysop_pending: bool,
    /// Lines per page (0: no paging), from the config or the user's record, changed by `OP n`.
    pub(crate) page_len: usize,
    /// Lines the current page may still take before `More?`.
    pub(crate) page_left: usize,
    /// `X`: short prompts.
    pub(crate) expert: bool,
    /// The message read last, for `SR`.
    pub(crate) last_read: Option<u64>,
    /// A question for the daemon, until it takes it.
    asking: Option<Ask>,
    /// When the lines being interpreted arrived (Unix seconds).
    pub(crate) now: i64,
    /// When this session paged the sysop lately (`T`), oldest first.
    pub(crate) pages: VecDeque<i64>,
}

/// Lines typed ahead kept while the session waits; beyond it the daemon stops reading.
const MAX_WAITING: usize = 64;

/// Control-Z: the classic end of a message body.
pub(crate) const CTRL_Z: u8 = 0x1a;

impl Session {
    /// A new session; nothing is sent until [`Session::start`].
    pub fn new(cfg: Arc<Config>, access: Access) -> Session {
        let lines = LineReader::new(cfg.max_line);
        let page_len = match access {
            Access::Password | Access::Verified(_) => cfg.page_len_telnet,
            Access::Callsign(_) | Access::Claimed(_) => cfg.page_len_radio,
        };
        Session {
            cfg,
            access,
            state: State::AskCall,
            user: None,
            lines,
            out: Vec::new(),
            events: VecDeque::new(),
            failures: 0,
            unconsumed: Vec::new(),
            waiting: VecDeque::new(),
            requests: VecDeque::new(),
            due: 0,
            awaited: 0,
            sysop_pending: false,
            page_len,
            page_left: 0,
            expert: false,
            last_read: None,
            asking: None,
            now: 0,
            pages: VecDeque::new(),
        }
    }

    /// Sends the banner and login prompt, or logs an RF user straight in.
    pub fn start(&mut self) {
        match self.access.clone() {
            Access::Password => {
                self.say(&format!(
                    "\r{} BBS ({} {})\r\r",
                    self.cfg.callsign, "qtc", self.cfg.version
                ));
                self.ask_callsign();
            }
            Access::Callsign(call) | Access::Claimed(call) | Access::Verified(call) => {
                self.log_in(call.without_ssid())
            }
        }
    }

    /// Feeds what the user sent.
    pub fn handle_input(&mut self, input: &[u8], now: i64) {
        self.now = now;
        // The line limit is for commands: once logged in, a line of a message may be as long as
        // a message (a paste, a text written without line ends). Before login it stays short,
        // since connections that have not logged in are cheap to open.
        self.lines.set_max(match self.user {
            Some(_) => self.cfg.max_line.max(self.cfg.max_message),
            None => self.cfg.max_line,
        });
        let mut lines = Vec::new();
        self.lines.push(input, |l| lines.push(l));
        for line in lines {
            self.take_line(line, now);
        }
    }

    /// The next store operation the session needs, for the daemon's threads (or
    /// [`Request::run`]); its answer goes to [`Session::store_answered`], in the order taken.
    pub fn take_request(&mut self) -> Option<Request> {
        self.requests.pop_front()
    }

    /// The answer to the oldest request taken: the command goes on, then the lines typed
    /// meanwhile.
    pub fn store_answered(&mut self, reply: Reply, now: i64) {
        let Some(due) = self.due.checked_sub(1) else {
            return;
        };
        self.due = due;
        let awaited = reply.awaited();
        if awaited {
            self.awaited = self.awaited.saturating_sub(1);
        }
        if matches!(self.state, State::Closed) {
            return;
        }
        reply.apply(self);
        if awaited {
            self.prompt_if_idle();
        }
        self.take_waiting(now);
    }

    /// The daemon could not run the oldest request taken (the thread that runs it is gone):
    /// the user is told, and the session ends, since what the command was to do with the
    /// answer went with the request.
    pub fn store_lost(&mut self, error: &StoreError) {
        self.due = self.due.saturating_sub(1);
        if !matches!(self.state, State::Closed) {
            self.store_failed(error);
            self.close();
        }
    }

    /// The question waiting for the daemon, if any; the daemon must call [`Session::answer`]
    /// (for [`Ask::Connect`], once the link is over) before feeding more input.
    pub fn pending_ask(&self) -> Option<&Ask> {
        self.asking.as_ref()
    }

    /// The daemon's answer to the last [`Session::pending_ask`]: shown, then the session goes
    /// on with any lines typed meanwhile.
    pub fn answer(&mut self, answer: Answer, now: i64) {
        let Some(ask) = self.asking.take() else {
            return;
        };
        self.state = State::Command;
        crate::cmd::answered(self, ask, answer);
        self.prompt();
        self.take_waiting(now);
    }

    /// A line from the daemon for this user (a page, for a sysop), shown at once; another
    /// user's words in it are shown with their control characters made visible.
    pub fn notice(&mut self, text: &str) {
        self.say(&format!("\r*** {}\r", qtc_mail::text::visible_line(text)));
    }

    /// True when output is waiting to be produced: call [`Session::more_output`] once what was
    /// taken has gone out (the socket, the radio link), so a reader who stops costs nothing.
    pub fn has_more_output(&self) -> bool {
        matches!(self.state, State::Flow(_)) && self.due == 0
    }

    /// Produces the next piece of a listing or a read (or asks the store for it).
    pub fn more_output(&mut self, now: i64) {
        if self.due > 0 {
            return;
        }
        if let State::Flow(pager) = std::mem::replace(&mut self.state, State::Command) {
            self.step(pager);
            self.prompt_if_idle();
            self.take_waiting(now);
        }
    }

    /// False while enough typed-ahead lines wait: the transport reads no more until then.
    pub fn wants_input(&self) -> bool {
        self.waiting.len() < MAX_WAITING
            && self.waiting.iter().map(Line::len).sum::<usize>() < self.cfg.max_message
    }

    /// Waiting for something outside the session: a store answer, a password check, the
    /// daemon's answer to a question.
    fn busy(&self) -> bool {
        self.due > 0 || matches!(self.state, State::Verifying { .. } | State::Asking)
    }

    /// An answer is due that the user waits for (a silent save does not count).
    fn awaiting(&self) -> bool {
        self.awaited > 0
    }

    /// Stops at the command until the daemon answers `ask` ([`Session::answer`]).
    pub(crate) fn ask(&mut self, ask: Ask) {
        self.asking = Some(ask);
        self.state = State::Asking;
    }

    /// Asks the store for `query`; `then` goes on with its answer. A failure is said to the
    /// user, and the command ends there.
    pub(crate) fn request<Q: Query<BbsStore>>(
        &mut self,
        query: Q,
        then: impl FnOnce(&mut Session, Q::Answer) + Send + 'static,
    ) {
        self.request_result(query, move |s, answer| match answer {
            Ok(a) => then(s, a),
            Err(e) => s.store_failed(&e),
        });
    }

    /// Hands `request` out; `awaited`: the user waits for its answer.
    pub(crate) fn queue(&mut self, request: Request, awaited: bool) {
        self.requests.push_back(request);
        self.due += 1;
        if awaited {
            self.awaited += 1;
        }
    }

    /// Asks the store for `query`; `then` goes on with its answer or its failure.
    pub(crate) fn request_result<Q: Query<BbsStore>>(
        &mut self,
        query: Q,
        then: impl FnOnce(&mut Session, Result<Q::Answer, StoreError>) + Send + 'static,
    ) {
        self.queue(store::request(query, Box::new(then), true), true);
    }

    /// A write nobody waits for (a read mark, the user's record): no word to the user.
    pub(crate) fn save<Q: Query<BbsStore>>(&mut self, query: Q) {
        let logged = |_: &mut Session, done: Result<Q::Answer, StoreError>| {
            if let Err(e) = done {
                // A guest from RF has no record to update; nothing is lost.
                tracing::debug!(error = %e, "not saved");
            }
        };
        self.queue(store::request(query, Box::new(logged), false), false);
    }

    /// Keeps what the session changed in the user's record (last listed, page length) for the
    /// next session, without a word to the user.
    pub(crate) fn save_user(&mut self) {
        if let Some(user) = self.user.clone() {
            self.save(store::SaveUser(user));
        }
    }

    /// Interprets the lines typed while the session waited, in order, until one makes it wait
    /// again. While output flows only `A` is taken (it aborts); the rest wait for its end.
    fn take_waiting(&mut self, now: i64) {
        self.now = now;
        while !self.busy() {
            let Some(line) = self.waiting.pop_front() else {
                break;
            };
            if matches!(self.state, State::Flow(_)) && !paging::is_abort(&line) {
                self.waiting.push_front(line);
                break;
            }
            self.take_line(line, now);
        }
    }

    fn take_line(&mut self, line: Line, now: i64) {
        match self.state {
            State::Closed => {}
            State::Handover => {
                if let Line::Text(t) = line {
                    self.unconsumed.extend_from_slice(&t);
                    self.unconsumed.push(b'\r');
                }
            }
            _ if self.busy() => self.waiting.push_back(line),
            State::Flow(_) if paging::is_abort(&line) => {
                self.state = State::Command;
                self.prompt_if_idle();
                // Lines typed before the `A` waited for the output's end: that is now.
                self.take_waiting(now);
            }
            State::Flow(_) => self.waiting.push_back(line),
            _ => self.handle_line(line, now),
        }
    }

    /// Text to send, with CR or CR LF line ends; empties the buffer.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The next thing the transport must do.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Lines that arrived after a BBS logged in, for the forwarding session.
    pub fn take_unconsumed(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.unconsumed)
    }

    /// The logged-in user, if any.
    pub fn user(&self) -> Option<&User> {
        self.user.as_ref()
    }

    pub(crate) fn say(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
    }

    /// Waits for the user's next line, for `then` (a subject, a password).
    pub(crate) fn next_line(&mut self, then: impl FnOnce(&mut Session, Vec<u8>) + Send + 'static) {
        self.state = State::Prompted(Box::new(then));
    }

    pub(crate) fn prompt(&mut self) {
        if self.expert {
            self.say(">\r");
        } else {
            let p = self.cfg.prompt();
            self.say(&p);
        }
    }

    /// The prompt, once a command is over and nothing it asked for is due.
    pub(crate) fn prompt_if_idle(&mut self) {
        if matches!(self.state, State::Command) && !self.awaiting() {
            self.prompt();
        }
    }

    pub(crate) fn close(&mut self) {
        self.state = State::Closed;
        self.events.push_back(Event::Close);
    }

    pub(crate) fn store_failed(&mut self, e: &StoreError) {
        tracing::warn!(error = %e, "message store operation failed");
        self.say("*** The message store is not available right now; please try again later.\r");
    }

    fn handle_line(&mut self, line: Line, now: i64) {
        let writing = matches!(self.state, State::Body(_));
        let text = match line {
            Line::Text(t) if writing || t.len() <= self.cfg.max_line => t,
            Line::TooLong if writing => {
                if let State::Body(d) = std::mem::replace(&mut self.state, State::Command) {
                    self.body_too_large(d);
                }
                return;
            }
            Line::Text(_) | Line::TooLong => {
                let max = self.cfg.max_line;
                self.say(&format!(
                    "*** Line too long (more than {max} bytes): ignored.\r"
                ));
                self.prompt_if_idle();
                return;
            }
        };
        // Keys that send escape sequences (arrows) are dropped, except from the text of a
        // message where the station keeps ANSI art as it was typed.
        let mut text = text;
        if !(writing && self.cfg.raw_bodies) {
            if let std::borrow::Cow::Owned(kept) = crate::lines::without_escapes(&text) {
                text = kept;
            }
        }
        match std::mem::replace(&mut self.state, State::Command) {
            State::AskCall => self.got_callsign(&text),
            State::AskPassword { call } => self.got_password(call, &text),
            State::Command => {
                self.command(&text);
                self.prompt_if_idle();
            }
            State::More(pager) => {
                self.more(pager, &text);
                self.prompt_if_idle();
            }
            State::Prompted(then) => then(self, text),
            State::Body(draft) => self.body_line(draft, text, now),
            s @ (State::Handover
            | State::Closed
            | State::Verifying { .. }
            | State::Asking
            | State::Flow(_)) => self.state = s,
        }
    }

    /// The user's callsign, sysop rights and BBS flag (empty and false before login).
    pub(crate) fn me(&self) -> (String, bool, bool) {
        match &self.user {
            Some(u) => (u.call.to_string(), u.sysop, u.bbs),
            None => (String::new(), false, false),
        }
    }

    /// The user's callsign (`None` before login).
    pub(crate) fn my_call(&self) -> Option<Callsign> {
        self.user.as_ref().map(|u| u.call)
    }
}

#[cfg(test)]
mod tests;
