//! The per-user interpreter state machine.

use std::collections::VecDeque;
use std::sync::Arc;

use qtc_mail::text::visible_line;
use qtc_mail::{
    Callsign, ListFilter, MessageStore, MsgStatus, MsgType, NewMessage, StoreError, User,
    MAX_SUBJECT_LEN,
};

use crate::ask::Ask;
use crate::command::{self, Command, CommandError, ListStatus, ListWhat, SendCmd};
use crate::lines::{Line, LineReader};
use crate::{help, view};

/// The login prompts: whole lines (CR ended) starting with the word, as Winlink clients (wl2k-go
/// reads up to CR and matches `callsign` / `password`) and the old daemons' scripts expect.
const CALLSIGN_PROMPT: &str = "Callsign:";
const PASSWORD_PROMPT: &str = "Password:";

mod node;
mod paging;

use paging::{ListPager, Pager, ReadPager};

/// What every session of one BBS shares.
#[derive(Clone, Debug)]
pub struct Config {
    /// This BBS's callsign, e.g. `N0CALL`.
    pub callsign: String,
    /// Its hierarchical address, e.g. `N0CALL.#NCA.CA.USA.NOAM` (may equal the callsign).
    pub haddr: String,
    /// The longest input line accepted, in bytes.
    pub max_line: usize,
    /// The largest message body accepted, in bytes.
    pub max_message: usize,
    /// Wrong logins before the connection is closed.
    pub max_login_attempts: u32,
    /// Extra lines shown by `I` (the sysop's text), CR separated.
    pub info: String,
    /// Software version shown by `V`.
    pub version: String,
    /// Lines per page before `More?` for telnet users (0: no paging); `OP n` changes it.
    pub page_len_telnet: usize,
    /// Lines per page for AX.25 users, where a long listing takes minutes at 1200 baud.
    pub page_len_radio: usize,
    /// Message bodies go out as stored, escape sequences included (ANSI art); otherwise their
    /// control characters are shown as visible escapes like every other field.
    pub raw_bodies: bool,
}

impl Config {
    /// Defaults for a BBS with this callsign.
    pub fn new(callsign: &str) -> Config {
        Config {
            callsign: callsign.to_ascii_uppercase(),
            haddr: callsign.to_ascii_uppercase(),
            max_line: 255,
            max_message: 2 * 1024 * 1024,
            max_login_attempts: 3,
            info: String::new(),
            version: String::from("qtc"),
            page_len_telnet: 0,
            page_len_radio: 20,
            raw_bodies: false,
        }
    }

    fn prompt(&self) -> String {
        format!("de {}>\r", self.callsign)
    }
}

/// How the user on this session is identified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Telnet: ask for callsign and password.
    Password,
    /// AX.25: the link's source callsign is the identity (no password on RF).
    Callsign(String),
}

/// What the transport must do, besides sending the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Ask the client to stop (true) or resume (false) echoing what is typed (telnet ECHO).
    HideInput(bool),
    /// A login failed; the daemon slows down this source address.
    LoginFailed {
        /// The callsign that was tried; `None` when what was typed is not a callsign (it may
        /// be a password typed at `Callsign:`, so it is never shown or logged).
        call: Option<String>,
    },
    /// Check `call`'s password (argon2: tens of milliseconds, so the transport does it off its
    /// threads, with a dummy check for an unknown callsign so both take as long) and answer
    /// with [`Session::password_checked`]. Input meanwhile waits in the session.
    CheckPassword {
        /// A valid callsign (base call).
        call: String,
        /// What was typed.
        password: String,
    },
    /// A user is in. When `bbs` is true the session stops interpreting: the transport hands the
    /// connection to the forwarding session, with [`Session::take_unconsumed`].
    LoggedIn {
        /// The user's callsign.
        call: String,
        /// Whether the user is a BBS.
        bbs: bool,
    },
    /// `T`: the user pages the sysop; the daemon shows it on every sysop session and logs it.
    PageSysop {
        /// Who pages.
        from: String,
        /// What they said (bounded).
        text: String,
    },
    /// Close the connection once the output is sent.
    Close,
}

enum State {
    AskCall,
    AskPassword {
        call: String,
    },
    /// `SYS` on RF: waiting for the sysop's password.
    SysPassword,
    /// Waiting for [`Session::password_checked`] on `call`'s login (or on `SYS` when `sys`).
    Verifying {
        call: String,
        sys: bool,
    },
    Command,
    Subject {
        cmd: SendCmd,
    },
    Body(Draft),
    /// Output paused at `More?`.
    More(Pager),
    /// Waiting for the daemon's [`Session::answer`].
    Asking,
    /// `PW`: the current password, then the new one twice.
    PwOld,
    PwNew,
    PwAgain {
        new: Vec<u8>,
    },
    /// A BBS logged in: its lines are for the forwarding session now.
    Handover,
    Closed,
}

struct Draft {
    cmd: SendCmd,
    subject: Vec<u8>,
    body: Vec<u8>,
    too_large: bool,
}

/// One user's conversation with the BBS.
pub struct Session {
    cfg: Arc<Config>,
    access: Access,
    state: State,
    user: Option<User>,
    lines: LineReader,
    out: Vec<u8>,
    events: VecDeque<Event>,
    failures: u32,
    unconsumed: Vec<u8>,
    /// Lines that arrived while a password was being checked, taken in order after it.
    waiting: VecDeque<Line>,
    /// A sysop who came in over RF (no password) gets sysop rights only after `SYS`.
    sysop_pending: bool,
    /// Lines per page (0: no paging), from the config or the user's record, changed by `OP n`.
    page_len: usize,
    /// `X`: short prompts.
    expert: bool,
    /// The message read last, for `SR`.
    last_read: Option<u64>,
    /// A question for the daemon, until it takes it.
    asking: Option<Ask>,
}

/// The most lines one listing shows.
pub const MAX_LIST: usize = 1000;

/// Control-Z: the classic end of a message body.
const CTRL_Z: u8 = 0x1a;

impl Session {
    /// A new session; nothing is sent until [`Session::start`].
    pub fn new(cfg: Arc<Config>, access: Access) -> Session {
        let lines = LineReader::new(cfg.max_line);
        let page_len = match access {
            Access::Password => cfg.page_len_telnet,
            Access::Callsign(_) => cfg.page_len_radio,
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
            sysop_pending: false,
            page_len,
            expert: false,
            last_read: None,
            asking: None,
        }
    }

    /// Sends the banner and login prompt, or logs an RF user straight in.
    pub fn start(&mut self, store: &mut dyn MessageStore) {
        match self.access.clone() {
            Access::Password => {
                self.say(&format!(
                    "\r{} BBS ({} {})\r\r",
                    self.cfg.callsign, "qtc", self.cfg.version
                ));
                self.ask_callsign();
            }
            Access::Callsign(call) => self.log_in(&call, store),
        }
    }

    /// Feeds what the user sent.
    pub fn handle_input(&mut self, input: &[u8], store: &mut dyn MessageStore, now: i64) {
        let mut lines = Vec::new();
        self.lines.push(input, |l| lines.push(l));
        for line in lines {
            self.take_line(line, store, now);
        }
    }

    /// Takes the answer to [`Event::CheckPassword`]: logs the user in (or grants `SYS`) or
    /// counts a failure, then interprets the lines that arrived meanwhile.
    pub fn password_checked(
        &mut self,
        result: Result<bool, StoreError>,
        store: &mut dyn MessageStore,
        now: i64,
    ) {
        let State::Verifying { call, sys } = std::mem::replace(&mut self.state, State::Command)
        else {
            return;
        };
        if sys {
            self.sys_checked(call, result);
            self.prompt();
        } else {
            self.login_checked(call, result, store);
        }
        self.take_waiting(store, now);
    }

    /// Interprets the lines typed while the session waited for the daemon, in order, until one
    /// makes it wait again.
    fn take_waiting(&mut self, store: &mut dyn MessageStore, now: i64) {
        while !matches!(self.state, State::Verifying { .. } | State::Asking) {
            let Some(line) = self.waiting.pop_front() else {
                break;
            };
            self.take_line(line, store, now);
        }
    }

    fn take_line(&mut self, line: Line, store: &mut dyn MessageStore, now: i64) {
        match self.state {
            State::Closed => {}
            State::Handover => {
                if let Line::Text(t) = line {
                    self.unconsumed.extend_from_slice(&t);
                    self.unconsumed.push(b'\r');
                }
            }
            // Bounded by what one input chunk holds: the daemon answers before reading more.
            State::Verifying { .. } | State::Asking => self.waiting.push_back(line),
            _ => self.handle_line(line, store, now),
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

    /// True while a message is being written (so a dropped connection loses only that draft).
    pub fn is_writing(&self) -> bool {
        matches!(self.state, State::Subject { .. } | State::Body(_))
    }

    fn say(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
    }

    fn ask_callsign(&mut self) {
        self.say(&format!("{CALLSIGN_PROMPT}\r"));
    }

    fn prompt(&mut self) {
        if self.expert {
            self.say(">\r");
        } else {
            let p = self.cfg.prompt();
            self.say(&p);
        }
    }

    fn close(&mut self) {
        self.state = State::Closed;
        self.events.push_back(Event::Close);
    }

    fn store_failed(&mut self, e: &StoreError) {
        tracing::warn!(error = %e, "message store operation failed");
        self.say("*** The message store is not available right now; please try again later.\r");
    }

    fn handle_line(&mut self, line: Line, store: &mut dyn MessageStore, now: i64) {
        let text = match line {
            Line::Text(t) => t,
            Line::TooLong => {
                let max = self.cfg.max_line;
                self.say(&format!(
                    "*** Line too long (more than {max} bytes): ignored.\r"
                ));
                if matches!(self.state, State::Command) {
                    self.prompt();
                }
                return;
            }
        };
        match std::mem::replace(&mut self.state, State::Command) {
            State::AskCall => self.got_callsign(&text),
            State::AskPassword { call } => self.got_password(call, &text),
            State::SysPassword => self.got_sys_password(&text),
            State::Command => {
                self.command(&text, store);
                if matches!(self.state, State::Command) {
                    self.prompt();
                }
            }
            State::More(pager) => {
                if let Err(e) = self.more(pager, &text, store) {
                    self.store_failed(&e);
                }
                if matches!(self.state, State::Command) {
                    self.prompt();
                }
            }
            State::PwOld => self.pw_old(&text, store),
            State::PwNew => self.pw_new(text),
            State::PwAgain { new } => self.pw_again(new, &text, store),
            State::Subject { cmd } => self.got_subject(cmd, text),
            State::Body(draft) => self.body_line(draft, text, store, now),
            s @ (State::Handover | State::Closed | State::Verifying { .. } | State::Asking) => {
                self.state = s
            }
        }
    }

    fn login_failed(&mut self, call: Option<String>) {
        self.failures += 1;
        self.events.push_back(Event::LoginFailed { call });
        if self.failures >= self.cfg.max_login_attempts {
            self.say("Too many failed logins. Goodbye.\r");
            self.close();
        } else {
            self.state = State::AskCall;
            self.ask_callsign();
        }
    }

    fn got_callsign(&mut self, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        // FBB partners log in as `.CALL` to ask for a transparent channel.
        let text = text.trim().trim_start_matches('.');
        if text.is_empty() {
            self.state = State::AskCall;
            self.ask_callsign();
            return;
        }
        match Callsign::parse(text) {
            Ok(call) => {
                self.state = State::AskPassword {
                    call: call.base().to_string(),
                };
                self.events.push_back(Event::HideInput(true));
                // A line end first: on telnet the request to stop echoing goes out just before
                // this text, and the prompt must start its own line.
                self.say(&format!("\r{PASSWORD_PROMPT}\r"));
            }
            Err(_) => {
                // Not echoed back nor logged: it may be a password typed a line early.
                self.say("That is not a callsign (3 to 6 letters and digits, one a digit).\r");
                self.login_failed(None);
            }
        }
    }

    fn got_password(&mut self, call: String, text: &[u8]) {
        self.events.push_back(Event::HideInput(false));
        // The client did not echo the line end either.
        self.say("\r");
        let password = String::from_utf8_lossy(text).into_owned();
        self.check_password(call, password, false);
    }

    fn check_password(&mut self, call: String, password: String, sys: bool) {
        self.events.push_back(Event::CheckPassword {
            call: call.clone(),
            password,
        });
        self.state = State::Verifying { call, sys };
    }

    fn login_checked(
        &mut self,
        call: String,
        result: Result<bool, StoreError>,
        store: &mut dyn MessageStore,
    ) {
        match result {
            Ok(true) => self.log_in(&call, store),
            Ok(false) => {
                tracing::info!(%call, "login failed");
                self.say("Login incorrect.\r");
                self.login_failed(Some(call));
            }
            Err(e) => {
                self.store_failed(&e);
                self.close();
            }
        }
    }

    fn got_sys_password(&mut self, text: &[u8]) {
        let (call, _, _) = self.me();
        let password = String::from_utf8_lossy(text).trim().to_string();
        self.check_password(call, password, true);
    }

    fn sys_checked(&mut self, call: String, result: Result<bool, StoreError>) {
        match result {
            Ok(true) => {
                self.sysop_pending = false;
                if let Some(u) = self.user.as_mut() {
                    u.sysop = true;
                }
                tracing::info!(%call, "sysop rights granted");
                self.say("Sysop rights granted.\r");
            }
            Ok(false) => {
                tracing::warn!(%call, "SYS: wrong password");
                self.events
                    .push_back(Event::LoginFailed { call: Some(call) });
                self.say("Wrong password.\r");
            }
            Err(e) => self.store_failed(&e),
        }
    }

    fn log_in(&mut self, call: &str, store: &mut dyn MessageStore) {
        let user = match store.user(call) {
            Ok(Some(u)) => u,
            // An RF caller we have never seen: a guest with a default profile.
            Ok(None) => User {
                call: call.to_string(),
                name: String::new(),
                home_bbs: String::new(),
                sysop: false,
                bbs: false,
                last_listed: 0,
                page_len: None,
            },
            Err(e) => {
                self.store_failed(&e);
                self.close();
                return;
            }
        };
        tracing::info!(call = %user.call, bbs = user.bbs, "logged in");
        self.events.push_back(Event::LoggedIn {
            call: user.call.clone(),
            bbs: user.bbs,
        });
        if user.bbs {
            self.user = Some(user);
            self.state = State::Handover;
            return;
        }
        let mut user = user;
        if let Some(n) = user.page_len {
            self.page_len = n;
        }
        if user.sysop && matches!(self.access, Access::Callsign(_)) {
            // The link callsign is no proof: sysop rights wait for SYS and a password.
            user.sysop = false;
            self.sysop_pending = true;
        }
        let mine = ListFilter {
            to_or_copy: Some(user.call.clone()),
            // Held mail is not counted for anyone but the sysop.
            visible_to: (!user.sysop).then(|| user.call.clone()),
            ..Default::default()
        };
        let greeting = store.list(&mine).and_then(|m| Ok((m, store.counts()?)));
        let name = if user.name.is_empty() {
            user.call.clone()
        } else {
            visible_line(&user.name).into_owned()
        };
        self.say(&format!(
            "Hello {name}, welcome to {} BBS.\r",
            self.cfg.callsign
        ));
        match greeting {
            Ok((mine, (_, latest))) => {
                let new = mine.iter().filter(|h| h.status == MsgStatus::New).count();
                let s = if mine.len() == 1 { "" } else { "s" };
                self.say(&format!(
                    "You have {} message{s}, {new} new. Latest message is {latest}, last listed is {}.\r",
                    mine.len(),
                    user.last_listed
                ));
            }
            Err(e) => self.store_failed(&e),
        }
        self.say("Type H for help.\r");
        self.user = Some(user);
        self.state = State::Command;
        self.prompt();
    }

    fn me(&self) -> (String, bool, bool) {
        match &self.user {
            Some(u) => (u.call.clone(), u.sysop, u.bbs),
            None => (String::new(), false, false),
        }
    }

    fn command(&mut self, text: &[u8], store: &mut dyn MessageStore) {
        let text = String::from_utf8_lossy(text);
        // A stray Ctrl-Z outside a message means nothing.
        let text = text.trim_matches(|c: char| c == CTRL_Z as char || c.is_whitespace());
        let cmd = match command::parse(text) {
            Ok(c) => c,
            Err(CommandError::Unknown(w)) => {
                self.say(&format!("Unknown command {w}. Type H for help.\r"));
                return;
            }
            Err(e @ CommandError::TooLong { .. }) => {
                self.say(&format!("*** {e}.\r"));
                return;
            }
            Err(e) => {
                self.say(&format!("{}\r", capitalise(&e.to_string())));
                return;
            }
        };
        let result = match cmd {
            Command::Empty => Ok(()),
            Command::Help(None) => {
                self.say(&help::all());
                Ok(())
            }
            Command::Help(Some(c)) => {
                self.say(&help::one(&c));
                Ok(())
            }
            Command::List(what) => self.list(what, store),
            Command::Categories => self.categories(store),
            Command::Users => {
                self.ask(Ask::Users);
                Ok(())
            }
            Command::Heard => {
                self.ask(Ask::Heard);
                Ok(())
            }
            Command::Ports => {
                self.ask(Ask::Ports);
                Ok(())
            }
            Command::Conv(channel) => {
                self.ask(Ask::Conv { channel });
                Ok(())
            }
            Command::Connect { port, call, via } => {
                self.connect(port, call, via);
                Ok(())
            }
            Command::Talk(text) => {
                self.page_sysop(text);
                Ok(())
            }
            Command::Reply(n) => self.reply(n, store),
            Command::PageLength(n) => {
                if let Some(n) = n {
                    self.page_len = n;
                    if let Some(user) = self.user.as_mut() {
                        user.page_len = Some(n);
                        self.save_user(store);
                    }
                }
                match self.page_len {
                    0 => self.say("Paging off.\r"),
                    n => self.say(&format!("{n} lines per page.\r")),
                }
                Ok(())
            }
            Command::Abort => {
                self.say("Nothing to abort.\r");
                Ok(())
            }
            Command::Expert => {
                self.expert = !self.expert;
                self.say(if self.expert {
                    "Expert mode: short prompts.\r"
                } else {
                    "Expert mode off.\r"
                });
                Ok(())
            }
            Command::Password => {
                self.ask_hidden("Old password: ");
                self.state = State::PwOld;
                Ok(())
            }
            Command::Read { numbers, verbose } => self.read(&numbers, verbose, store),
            Command::ReadMine => self.read_mine(store),
            Command::Kill(numbers) => self.kill(&numbers, store),
            Command::KillMine => self.kill_mine(store),
            Command::Send(cmd) => self.start_send(cmd, store),
            Command::Name(name) => self.set_profile(store, |u| u.name = name),
            Command::HomeBbs(h) => self.set_profile(store, |u| u.home_bbs = h),
            Command::WhitePages(call) => store.home_bbs(&call).map(|home| match home {
                Some(h) => self.say(&format!("{call}: home BBS {}\r", visible_line(&h))),
                None => self.say(&format!("No white pages entry for {call}.\r")),
            }),
            Command::Sys => {
                if self.sysop_pending {
                    self.state = State::SysPassword;
                    self.say("Password:\r");
                } else if self.me().1 {
                    self.say("You have sysop rights already.\r");
                } else {
                    self.say("*** Only a sysop may use SYS.\r");
                }
                Ok(())
            }
            Command::Info => self.info(store),
            Command::Version => {
                self.say(&format!("qtc {}\r", self.cfg.version));
                Ok(())
            }
            Command::Bye => {
                let (call, _, _) = self.me();
                self.say(&format!("73 {call}, de {}. Goodbye.\r", self.cfg.callsign));
                self.close();
                Ok(())
            }
        };
        if let Err(e) = result {
            self.store_failed(&e);
        }
    }

    fn list(&mut self, what: ListWhat, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let (me, sysop, _) = self.me();
        let update_last = what.is_new_since_last();
        let mut f = ListFilter {
            visible_to: (!sysop).then(|| me.clone()),
            kind: what.kind,
            range: what.range,
            from: what.from,
            to: what.to,
            at: what.at,
            oldest_first: what.oldest_first,
            ..Default::default()
        };
        if update_last {
            f.after = self.user.as_ref().map(|u| u.last_listed);
        }
        if what.mine {
            f.to_or_copy = Some(me.clone());
        }
        match what.status {
            None => {}
            Some(ListStatus::Held | ListStatus::Killed) if !sysop => {
                self.say("*** Only the sysop may list held or killed messages.\r");
                return Ok(());
            }
            Some(ListStatus::UnreadMine) => {
                f.to_or_copy = Some(me);
                f.status = Some(MsgStatus::New);
            }
            Some(ListStatus::Read) => f.status = Some(MsgStatus::Read),
            Some(ListStatus::Held) => f.status = Some(MsgStatus::Held),
            Some(ListStatus::Killed) => f.status = Some(MsgStatus::Killed),
        }
        // A listing is bounded: a new user's first L on a big store must not hold the store
        // thread (and every other user) for seconds.
        let (left, capped) = match what.last {
            Some(n) if n <= MAX_LIST => (n, false),
            _ => (MAX_LIST, true),
        };
        let pager = ListPager {
            filter: f,
            cursor: None,
            left,
            capped,
            update_last,
        };
        self.page(Pager::List(pager), store)
    }

    /// Plain `L` listed messages up to `highest`: the next plain `L` starts above it.
    fn listed_up_to(&mut self, highest: u64, store: &mut dyn MessageStore) {
        let Some(user) = self.user.as_mut() else {
            return;
        };
        if highest <= user.last_listed {
            return;
        }
        user.last_listed = highest;
        self.save_user(store);
    }

    /// Keeps what the session changed in the user's record (last listed, page length) for the
    /// next session, without a word to the user.
    fn save_user(&mut self, store: &mut dyn MessageStore) {
        let Some(user) = self.user.clone() else {
            return;
        };
        if let Err(e) = store.update_user(&user) {
            // A guest from RF has no record to update; nothing is lost.
            tracing::debug!(error = %e, "user record not saved");
        }
    }

    /// `LC`: bulletin addressees (categories) among the newest bulletins, with counts.
    fn categories(&mut self, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let f = ListFilter {
            kind: Some(MsgType::Bulletin),
            last: Some(MAX_LIST),
            ..Default::default()
        };
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for h in store.list(&f)? {
            *counts.entry(h.to).or_default() += 1;
        }
        if counts.is_empty() {
            self.say("No bulletins.\r");
            return Ok(());
        }
        let cells: Vec<String> = counts
            .iter()
            .map(|(to, n)| format!("{to:<6} {n:>4}"))
            .collect();
        // Six to a line: 72 columns.
        for row in cells.chunks(6) {
            self.say(&row.join(" "));
            self.say("\r");
        }
        self.say("LB > name lists one category.\r");
        Ok(())
    }

    fn may_read(&self, h: &qtc_mail::MessageHeader) -> bool {
        self.may_read_copy(h, &[])
    }

    /// [`Session::may_read`], where `copies` are the message's other recipients (Winlink Cc).
    fn may_read_copy(&self, h: &qtc_mail::MessageHeader, copies: &[String]) -> bool {
        let (me, sysop, _) = self.me();
        // Held mail is the sysop's alone until released, even for its sender and addressees.
        sysop
            || (!matches!(h.status, MsgStatus::Killed | MsgStatus::Held)
                && (h.kind != MsgType::Personal
                    || h.to == me
                    || h.from == me
                    || copies.contains(&me)))
    }

    fn read(
        &mut self,
        numbers: &[u64],
        verbose: bool,
        store: &mut dyn MessageStore,
    ) -> Result<(), StoreError> {
        let pager = ReadPager {
            numbers: numbers.iter().copied().collect(),
            verbose,
            text: Vec::new(),
            at: 0,
        };
        self.page(Pager::Read(pager), store)
    }

    /// Renders message `n` into `text` if this user may read it, and marks their copy read if
    /// they are one of its recipients. False: no such message for this user.
    fn open_message(
        &mut self,
        n: u64,
        verbose: bool,
        text: &mut Vec<u8>,
        store: &mut dyn MessageStore,
    ) -> Result<bool, StoreError> {
        let (me, _, _) = self.me();
        match store.message(n)? {
            Some(m) if self.may_read_copy(&m.header, &m.copies) => {
                view::message(&m, verbose, self.cfg.raw_bodies, text);
                // Marks this reader's copy read when they are a recipient.
                store.mark_read(n, &me)?;
                self.last_read = Some(n);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn read_mine(&mut self, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let (me, _, _) = self.me();
        let f = ListFilter {
            to_or_copy: Some(me),
            status: Some(MsgStatus::New),
            oldest_first: true,
            ..Default::default()
        };
        let numbers: Vec<u64> = store.list(&f)?.iter().map(|h| h.number).collect();
        if numbers.is_empty() {
            self.say("You have no unread messages.\r");
            return Ok(());
        }
        self.read(&numbers, false, store)
    }

    /// `SR`: a personal reply to the sender of message `n` (or of the one read last), with the
    /// subject `Re: ...`; the text follows at once.
    fn reply(&mut self, n: Option<u64>, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let Some(n) = n.or(self.last_read) else {
            self.say("Read a message first, or give its number: SR n\r");
            return Ok(());
        };
        let m = match store.message(n)? {
            Some(m) if self.may_read(&m.header) => m,
            _ => {
                self.say(&format!("No message #{n} for you.\r"));
                return Ok(());
            }
        };
        let mut subject = b"Re: ".to_vec();
        let original = &m.header.subject;
        subject.extend_from_slice(original.strip_prefix(b"Re: ").unwrap_or(original));
        subject.truncate(MAX_SUBJECT_LEN);
        let cmd = SendCmd {
            kind: MsgType::Personal,
            to: m.header.from.clone(),
            at: String::new(),
            from: None,
            bid: None,
        };
        self.say(&format!(
            "To {}, subject: {}\r",
            cmd.to,
            String::from_utf8_lossy(&subject)
        ));
        self.say("Enter message, end with /EX or ^Z:\r");
        self.state = State::Body(Draft {
            cmd,
            subject,
            body: Vec::new(),
            too_large: false,
        });
        Ok(())
    }

    /// A prompt whose answer the client should not show.
    fn ask_hidden(&mut self, prompt: &str) {
        self.events.push_back(Event::HideInput(true));
        self.say(prompt);
    }

    /// The hidden answer arrived: the client shows input again.
    fn hidden_answered(&mut self) {
        self.events.push_back(Event::HideInput(false));
        self.say("\r");
    }

    fn pw_old(&mut self, text: &[u8], store: &mut dyn MessageStore) {
        self.hidden_answered();
        let (me, _, _) = self.me();
        match store.check_password(&me, &String::from_utf8_lossy(text)) {
            Ok(true) => {
                self.ask_hidden("New password: ");
                self.state = State::PwNew;
            }
            Ok(false) => {
                self.say("Wrong password: not changed.\r");
                self.prompt();
            }
            Err(e) => {
                self.store_failed(&e);
                self.prompt();
            }
        }
    }

    fn pw_new(&mut self, new: Vec<u8>) {
        self.hidden_answered();
        if new.trim_ascii().is_empty() {
            self.say("Empty password: not changed.\r");
            self.prompt();
            return;
        }
        self.ask_hidden("Again: ");
        self.state = State::PwAgain { new };
    }

    fn pw_again(&mut self, new: Vec<u8>, again: &[u8], store: &mut dyn MessageStore) {
        self.hidden_answered();
        let (me, _, _) = self.me();
        if new != again {
            self.say("The two differ: not changed.\r");
        } else {
            match store.set_password(&me, &String::from_utf8_lossy(&new)) {
                Ok(()) => {
                    tracing::info!(call = %me, "password changed by the user");
                    self.say("Password changed.\r");
                }
                Err(e) => self.store_failed(&e),
            }
        }
        self.prompt();
    }

    fn kill(&mut self, numbers: &[u64], store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let (me, sysop, _) = self.me();
        for &n in numbers {
            match store.message(n)? {
                Some(m) if m.header.status == MsgStatus::Killed => {
                    self.say(&format!("Message #{n} is already killed.\r"));
                }
                Some(m) if !sysop && m.header.status == MsgStatus::Held => {
                    self.say(&format!("No message #{n} for you.\r"));
                }
                Some(m) if sysop || m.header.to == me || m.header.from == me => {
                    store.set_status(n, MsgStatus::Killed)?;
                    self.say(&format!("Message #{n} killed.\r"));
                }
                Some(m) if self.may_read(&m.header) => {
                    self.say(&format!("*** You may not kill message #{n}.\r"));
                }
                _ => self.say(&format!("No message #{n} for you.\r")),
            }
        }
        Ok(())
    }

    fn kill_mine(&mut self, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let (me, _, _) = self.me();
        // The addressee's alone: a copy's reader killing it would kill it for the addressee.
        let f = ListFilter {
            to: Some(me),
            status: Some(MsgStatus::Read),
            kind: Some(MsgType::Personal),
            ..Default::default()
        };
        let numbers: Vec<u64> = store.list(&f)?.iter().map(|h| h.number).collect();
        if numbers.is_empty() {
            self.say("You have no read messages to kill.\r");
            return Ok(());
        }
        for n in numbers.into_iter().rev() {
            store.set_status(n, MsgStatus::Killed)?;
            self.say(&format!("Message #{n} killed.\r"));
        }
        Ok(())
    }

    fn start_send(&mut self, cmd: SendCmd, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let (me, sysop, bbs) = self.me();
        if let Some(from) = &cmd.from {
            if *from != me && !sysop && !bbs {
                self.say("*** Only the sysop or a BBS may send as another station.\r");
                return Ok(());
            }
        }
        if let Some(bid) = &cmd.bid {
            if store.bid_known(bid)? {
                self.say(&format!("*** BID {bid} exists already: not sent.\r"));
                return Ok(());
            }
        }
        self.state = State::Subject { cmd };
        self.say("Subject:\r");
        Ok(())
    }

    fn got_subject(&mut self, cmd: SendCmd, mut subject: Vec<u8>) {
        while subject.last().is_some_and(|b| b.is_ascii_whitespace()) {
            subject.pop();
        }
        if subject.is_empty() || subject.contains(&CTRL_Z) {
            self.say("No subject: message cancelled.\r");
            self.prompt();
            return;
        }
        if subject.len() > MAX_SUBJECT_LEN {
            self.say(&format!(
                "*** Subject longer than {MAX_SUBJECT_LEN} bytes: cut.\r"
            ));
            subject.truncate(MAX_SUBJECT_LEN);
        }
        self.state = State::Body(Draft {
            cmd,
            subject,
            body: Vec::new(),
            too_large: false,
        });
        self.say("Enter message, end with /EX or ^Z:\r");
    }

    fn body_line(&mut self, mut d: Draft, text: Vec<u8>, store: &mut dyn MessageStore, now: i64) {
        let trimmed = text.trim_ascii();
        if trimmed.eq_ignore_ascii_case(b"/ABORT") {
            self.say("Message cancelled.\r");
            self.prompt();
            return;
        }
        let (content, end) = match text.iter().position(|&b| b == CTRL_Z) {
            Some(pos) => (&text[..pos], true),
            None if trimmed.eq_ignore_ascii_case(b"/EX") => (&text[..0], true),
            None => (&text[..], false),
        };
        // With ^Z, text before it on the same line is the last body line.
        if !end || !content.is_empty() {
            if d.body.len() + content.len() + 2 > self.cfg.max_message {
                if !d.too_large {
                    let max = self.cfg.max_message;
                    self.say(&format!(
                        "*** Message too large (more than {max} bytes): it will not be stored. End it with /EX.\r"
                    ));
                }
                d.too_large = true;
            } else if !d.too_large {
                d.body.extend_from_slice(content);
                d.body.extend_from_slice(b"\r\n");
            }
        }
        if !end {
            self.state = State::Body(d);
            return;
        }
        if !d.too_large {
            self.save(d, store, now);
        }
        self.prompt();
    }

    fn save(&mut self, d: Draft, store: &mut dyn MessageStore, now: i64) {
        let (me, _, _) = self.me();
        let msg = NewMessage {
            kind: d.cmd.kind,
            status: MsgStatus::New,
            to: d.cmd.to,
            at: d.cmd.at,
            from: d.cmd.from.unwrap_or(me),
            bid: d.cmd.bid,
            subject: d.subject,
            rlines: Vec::new(),
            body: d.body,
        };
        match store.insert_message(&msg, &self.cfg.callsign, now) {
            Ok(n) => {
                let bid = store
                    .message(n)
                    .ok()
                    .flatten()
                    .map(|m| m.header.bid)
                    .unwrap_or_default();
                tracing::info!(number = n, %bid, to = %msg.to, "message stored");
                self.say(&format!(
                    "Message #{n} stored, BID {bid}, {} bytes.\r",
                    msg.body.len()
                ));
            }
            Err(StoreError::DuplicateBid(bid)) => {
                self.say(&format!("*** BID {bid} exists already: not stored.\r"));
            }
            Err(StoreError::Full) => {
                tracing::warn!("message store full: message not stored");
                self.say(
                    "*** The message store is full: message not stored. Please tell the sysop.\r",
                );
            }
            Err(StoreError::Rejected(_)) => {
                self.say("*** This BBS does not accept that message: not stored.\r");
            }
            Err(StoreError::OverLimit(why)) => {
                self.say(&format!("*** {why}: message not stored.\r"));
            }
            Err(e) => self.store_failed(&e),
        }
    }

    fn set_profile(
        &mut self,
        store: &mut dyn MessageStore,
        change: impl FnOnce(&mut User),
    ) -> Result<(), StoreError> {
        let Some(user) = self.user.as_mut() else {
            return Ok(());
        };
        change(user);
        let user = user.clone();
        match store.update_user(&user) {
            Ok(()) => {
                self.say("Saved.\r");
                Ok(())
            }
            Err(StoreError::NoSuchUser(_)) => {
                self.say("Noted for this session (you have no user record here).\r");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn info(&mut self, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        let (active, latest) = store.counts()?;
        self.say(&format!(
            "{} BBS, {} - qtc {}.\r{active} active messages, latest #{latest}.\r",
            self.cfg.callsign, self.cfg.haddr, self.cfg.version
        ));
        if !self.cfg.info.is_empty() {
            let info = self.cfg.info.clone();
            self.say(&info);
            if !info.ends_with('\r') && !info.ends_with('\n') {
                self.say("\r");
            }
        }
        Ok(())
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
