//! SMTP submission (RFC 6409 over RFC 5321): EHLO, STARTTLS, AUTH PLAIN and LOGIN with the BBS
//! password, MAIL, RCPT (packet addresses only, see [`crate::addr`]), DATA, RSET, NOOP, QUIT.
//! Nothing is taken before AUTH: the server relays for nobody. Each recipient gets its own
//! copy, a BBS message from the logged-in call, and a message is all or nothing: every
//! recipient is checked at RCPT (the address, its route, the sender's allowance: a `452`
//! there), a recipient named twice gets one copy, the copies are stored in one transaction,
//! and once a recipient was put off for now (`452`: the allowance, a full store) the message
//! is refused whole at DATA, so a client that sends it again later sends no copy twice.
//! Commands are parsed in [`parse`]; DATA is read by [`crate::data`].

pub mod parse;
#[cfg(test)]
mod tests;

use qtc_callsign::Callsign;
use qtc_mail::StoreError;

use crate::addr::Dest;
use crate::core::{account, Exchange};
use crate::data::{Body, Taken};
use crate::store::{Recipient, Route, Submission, Submit};
use crate::{Core, LineBuffer, LoginRefused, Settings};
use parse::{AuthAnswer, Command, Mechanism, ParseError};

/// Longest command line (RFC 5321 §4.5.3.1.4 says 512; AUTH lines may be longer).
const MAX_LINE: usize = 2048;
/// Recipients per message.
const MAX_RCPT: usize = 100;

#[derive(Debug)]
enum State {
    Command,
    /// AUTH LOGIN: the user name, then the password.
    LoginUser,
    LoginPass(String),
    /// AUTH PLAIN without an initial response.
    Plain,
    /// Taking DATA.
    Data(Body),
}

/// One SMTP submission session.
pub struct Smtp {
    x: Exchange<Smtp>,
    s: Settings,
    lines: LineBuffer,
    state: State,
    user: Option<Callsign>,
    rcpts: Vec<Dest>,
    /// A recipient of this message was put off for now (`452` at RCPT).
    put_off: bool,
}

impl Smtp {
    /// A session; the greeting is the first output.
    pub fn new(s: Settings) -> Smtp {
        let mut smtp = Smtp {
            x: Exchange::new(),
            lines: LineBuffer::new(MAX_LINE),
            state: State::Command,
            user: None,
            rcpts: Vec::new(),
            put_off: false,
            s,
        };
        let hello = format!(
            "220 {} ESMTP qtc {} packet mail",
            smtp.s.domain, smtp.s.version
        );
        smtp.x.say(&hello);
        smtp
    }

    /// DATA's limit: attachments arrive base64-encoded, a third larger than they are stored.
    fn limit(&self) -> usize {
        self.s.max_message / 3 * 4 + 64 * 1024
    }

    fn run(&mut self) {
        while !self.x.busy() {
            if let State::Data(body) = &mut self.state {
                match body.take(&mut self.lines) {
                    Taken::More => return,
                    Taken::Done(raw) => self.end_data(&raw),
                    Taken::TooBig => self.too_big(false),
                    Taken::Endless => self.too_big(true),
                }
                continue;
            }
            match self.lines.next_line() {
                None => return,
                Some(Err(_)) => self.x.say("500 5.5.2 Line too long"),
                Some(Ok(line)) => self.line(&line),
            }
        }
    }

    fn line(&mut self, line: &[u8]) {
        match std::mem::replace(&mut self.state, State::Command) {
            State::LoginUser => match parse::auth_answer(line) {
                AuthAnswer::Data(u) => {
                    self.state = State::LoginPass(String::from_utf8_lossy(&u).into_owned());
                    self.x.say("334 UGFzc3dvcmQ6");
                }
                answer => self.auth_failed(&answer),
            },
            State::LoginPass(user) => match parse::auth_answer(line) {
                AuthAnswer::Data(p) => self.login(&user, &String::from_utf8_lossy(&p)),
                answer => self.auth_failed(&answer),
            },
            State::Plain => self.plain(&parse::auth_answer(line)),
            _ => match parse::command(line) {
                Ok(cmd) => self.command(cmd),
                Err(ParseError::Unknown) => self.x.say("500 5.5.1 Unknown command"),
                Err(ParseError::Syntax) => self.x.say("501 5.5.4 Syntax error"),
            },
        }
    }

    fn command(&mut self, cmd: Command) {
        match cmd {
            Command::Hello { extended } => self.hello(extended),
            Command::StartTls => self.starttls(),
            Command::Auth(mechanism, first) => self.auth(mechanism, first.as_deref()),
            Command::Mail => self.mail(),
            Command::Rcpt(address) => self.rcpt(&address),
            Command::Data => self.begin_data(),
            Command::Rset => {
                self.reset();
                self.x.say("250 2.0.0 OK");
            }
            Command::Noop => self.x.say("250 2.0.0 OK"),
            Command::Vrfy => self.x.say("252 2.5.0 Send some mail and see"),
            Command::Quit => {
                self.x.say("221 2.0.0 73");
                self.x.close();
            }
            Command::NotHere => self.x.say("502 5.5.1 Not implemented"),
        }
    }

    fn hello(&mut self, extended: bool) {
        self.reset();
        if !extended {
            return self.x.say(&format!("250 {}", self.s.domain));
        }
        let mut lines = vec![
            self.s.domain.clone(),
            "8BITMIME".into(),
            "PIPELINING".into(),
            format!("SIZE {}", self.limit()),
        ];
        if self.s.starttls {
            lines.push("STARTTLS".into());
        }
        if self.s.plain_auth && self.user.is_none() {
            lines.push("AUTH PLAIN LOGIN".into());
        }
        lines.push("ENHANCEDSTATUSCODES".into());
        let last = lines.len() - 1;
        for (i, l) in lines.iter().enumerate() {
            let sep = if i == last { ' ' } else { '-' };
            self.x.say(&format!("250{sep}{l}"));
        }
    }

    fn starttls(&mut self) {
        if !self.s.starttls {
            return self.x.say("454 4.7.0 TLS not available");
        }
        self.x.say("220 2.0.0 Ready to start TLS");
        // What the client sent after STARTTLS in clear is dropped (RFC 3207 §6).
        self.lines.clear();
        self.x.start_tls();
    }

    fn auth(&mut self, mechanism: Mechanism, first: Option<&str>) {
        if self.user.is_some() {
            return self.x.say("503 5.5.1 Already authenticated");
        }
        if !self.s.plain_auth {
            let why = self.s.clear_password_refused("STARTTLS");
            return self
                .x
                .say(&format!("538 5.7.11 Encryption required: {why}"));
        }
        match (mechanism, first) {
            (Mechanism::Plain, None) => {
                self.state = State::Plain;
                self.x.say("334 ");
            }
            (Mechanism::Plain, Some(data)) => self.plain(&parse::auth_answer(data.as_bytes())),
            (Mechanism::Login, None) => {
                self.state = State::LoginUser;
                self.x.say("334 VXNlcm5hbWU6");
            }
            (Mechanism::Login, Some(user)) => self.line_as(State::LoginUser, user.as_bytes()),
            (Mechanism::Other, _) => self.x.say("504 5.5.4 Use AUTH PLAIN or LOGIN"),
        }
    }

    fn line_as(&mut self, state: State, line: &[u8]) {
        self.state = state;
        self.line(line);
    }

    fn plain(&mut self, answer: &AuthAnswer) {
        match answer {
            AuthAnswer::Data(d) => match parse::split_plain(d) {
                Some((user, pass)) => self.login(&user, &pass),
                None => self.x.say("501 5.5.2 Bad AUTH PLAIN data"),
            },
            other => self.auth_failed(other),
        }
    }

    fn auth_failed(&mut self, answer: &AuthAnswer) {
        match answer {
            AuthAnswer::Cancel => self.x.say("501 5.7.0 Authentication cancelled"),
            _ => self.x.say("501 5.5.2 Bad base64"),
        }
    }

    fn login(&mut self, user: &str, password: &str) {
        self.x.login(account(user), password.to_string());
    }

    fn mail(&mut self) {
        if self.user.is_none() {
            return self.x.say("530 5.7.0 Authentication required");
        }
        self.reset();
        self.x
            .say("250 2.1.0 OK (the sender is the logged-in call)");
    }

    fn rcpt(&mut self, address: &str) {
        let Some(from) = self.user else {
            return self.x.say("530 5.7.0 Authentication required");
        };
        let dest = match crate::addr::parse(address, &self.s) {
            Ok(d) => d,
            Err(e) => return self.x.say(&format!("550 5.1.1 {e}")),
        };
        if self.rcpts.contains(&dest) {
            // One copy per destination, however often the client names it.
            return self.x.say("250 2.1.5 OK (named already: one copy)");
        }
        if self.rcpts.len() >= MAX_RCPT {
            return self.x.say("452 4.5.3 Too many recipients");
        }
        let copies = self.rcpts.len() + 1;
        let query = Recipient {
            from,
            dest: dest.clone(),
            copies,
        };
        self.x
            .ask(query, move |s: &mut Smtp, r| s.rcpt_checked(dest, r));
    }

    fn rcpt_checked(&mut self, dest: Dest, route: Result<Route, StoreError>) {
        match route {
            Ok(Route::Here | Route::Via(_)) => {
                self.rcpts.push(dest);
                self.x.say("250 2.1.5 OK");
            }
            Ok(Route::Nowhere) => {
                let bbs = dest.at.split('.').next().unwrap_or_default();
                self.x.say(&format!(
                    "550 5.1.2 no route to {bbs}: it would wait here (ask the sysop for a partner that takes it)"
                ));
            }
            Err(e) => {
                self.put_off |= matches!(e, StoreError::OverLimit(_) | StoreError::Full);
                self.x.say(&store_refusal(&e))
            }
        }
    }

    /// Forgets the message being given (its recipients).
    fn reset(&mut self) {
        self.rcpts.clear();
        self.put_off = false;
    }

    fn begin_data(&mut self) {
        if self.user.is_none() {
            return self.x.say("530 5.7.0 Authentication required");
        }
        if self.put_off {
            self.reset();
            return self.x.say(
                "452 4.5.3 A recipient cannot take it now: nothing stored, send it again later",
            );
        }
        if self.rcpts.is_empty() {
            return self.x.say("503 5.5.1 RCPT first");
        }
        self.x.say("354 End data with <CR><LF>.<CR><LF>");
        self.state = State::Data(Body::new(self.limit()));
    }

    /// DATA passed the limit: refused, and closed if the client went on past the bound.
    fn too_big(&mut self, endless: bool) {
        self.state = State::Command;
        self.reset();
        let line = format!("552 5.3.4 Larger than {} bytes", self.limit());
        match endless {
            false => self.x.say(&line),
            true => {
                self.x.say(&format!("{line}: closing"));
                self.x.close();
            }
        }
    }

    fn end_data(&mut self, raw: &[u8]) {
        self.state = State::Command;
        let Some(from) = self.user else {
            return self.x.say("530 5.7.0 Authentication required");
        };
        let dests = std::mem::take(&mut self.rcpts);
        self.reset();
        let parsed = match crate::submit::parse(raw, self.s.max_message) {
            Ok(p) => p,
            Err(e) => return self.x.say(&format!("554 5.6.0 {e}")),
        };
        let sub = Submission {
            from,
            dests,
            subject: parsed.subject,
            body: parsed.body,
            files: parsed.files,
            thread: parsed.thread,
        };
        self.x.ask(Submit(Box::new(sub)), Smtp::stored);
    }

    fn stored(&mut self, stored: Result<Vec<(u64, String)>, StoreError>) {
        match stored {
            Ok(copies) => {
                let list: Vec<String> = copies
                    .iter()
                    .map(|(n, bid)| format!("#{n} ({bid})"))
                    .collect();
                self.x
                    .say(&format!("250 2.0.0 Stored as {}", list.join(", ")));
            }
            Err(e) => self.x.say(&store_refusal(&e)),
        }
    }
}

/// A store's refusal as an SMTP reply: nothing of the message was stored.
fn store_refusal(e: &StoreError) -> String {
    match e {
        StoreError::Full => "452 4.3.1 The message store is full".to_string(),
        StoreError::OverLimit(why) => format!("452 4.5.3 {why}"),
        StoreError::Rejected(_) => "554 5.7.1 This BBS does not accept that message".into(),
        StoreError::DuplicateBid(b) => format!("554 5.6.0 BID {b} exists already"),
        _ => "451 4.3.0 The message store is not available".into(),
    }
}

impl Core for Smtp {
    const STORE_LOST: &'static str = "421 4.3.0 The message store is not available: closing";

    fn exchange(&self) -> &Exchange<Smtp> {
        &self.x
    }

    fn exchange_mut(&mut self) -> &mut Exchange<Smtp> {
        &mut self.x
    }

    fn handle_input(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
        self.run();
    }

    fn logged_in(&mut self, result: Result<Callsign, LoginRefused>) {
        match result {
            Ok(call) => {
                self.x.say(&format!("235 2.7.0 Welcome {call}"));
                self.user = Some(call);
            }
            Err(LoginRefused::Wrong) => self.x.say("535 5.7.8 Wrong callsign or password"),
            Err(LoginRefused::Full(why)) => self.x.say(&format!("454 4.7.0 {why}")),
            Err(LoginRefused::Unavailable) => {
                self.x.say("454 4.7.0 Temporary authentication failure")
            }
        }
    }

    fn tls_running(&mut self) {
        // RFC 3207 §4.2: forget everything learned before the handshake.
        self.s.tls_started();
        self.state = State::Command;
        self.reset();
    }

    fn resume(&mut self) {
        self.run();
    }
}
