//! POP3 (RFC 1939, RFC 2449 CAPA, RFC 2595 STLS): USER/PASS with the BBS password, STAT, LIST,
//! UIDL (the BID, as LinBPQ), RETR (marks the message read, as `R`), TOP, DELE (kills it at
//! QUIT, as `K`), RSET, NOOP, QUIT. The maildrop is the user's personal mail. Commands are
//! parsed in [`parse`].

pub mod parse;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use qtc_callsign::Callsign;
use qtc_mail::StoreError;

use crate::core::{account, Exchange};
use crate::render::Rendered;
use crate::store::{Entry, Kill, Mailbox, Render, Seen};
use crate::{Core, LineBuffer, LoginRefused, Settings};
use parse::{Command, ParseError};

/// Longest command line (RFC 2449: 255 octets).
const MAX_LINE: usize = 512;

#[derive(Debug, PartialEq, Eq)]
enum State {
    /// Before login; the user name once USER was given.
    Auth(Option<String>),
    Transaction,
    /// QUIT: the DELE'd messages are being killed.
    Update,
}

/// One POP3 session.
pub struct Pop3 {
    x: Exchange<Pop3>,
    s: Settings,
    lines: LineBuffer,
    state: State,
    /// The logged-in call (set with the login).
    user: Option<Callsign>,
    drop: Vec<Entry>,
    deleted: Vec<bool>,
}

impl Pop3 {
    /// A session; the greeting is the first output.
    pub fn new(s: Settings) -> Pop3 {
        let mut p = Pop3 {
            x: Exchange::new(),
            lines: LineBuffer::new(MAX_LINE),
            state: State::Auth(None),
            user: None,
            drop: Vec::new(),
            deleted: Vec::new(),
            s,
        };
        let hello = format!("+OK qtc {} POP3 server ready", p.s.version);
        p.x.say(&hello);
        p
    }

    fn run(&mut self) {
        while !self.x.busy() {
            match self.lines.next_line() {
                None => return,
                Some(Err(_)) => self.x.say("-ERR line too long"),
                Some(Ok(line)) => match parse::command(&String::from_utf8_lossy(&line)) {
                    Ok(cmd) => self.command(cmd),
                    Err(ParseError::Unknown) => self.x.say("-ERR unknown command"),
                    Err(ParseError::Usage(u)) => self.x.say(&format!("-ERR usage: {u}")),
                },
            }
        }
    }

    fn command(&mut self, cmd: Command) {
        let authenticated = self.state == State::Transaction;
        match cmd {
            Command::Capa => self.capa(),
            Command::Noop => self.x.say("+OK"),
            Command::Quit => self.quit(),
            Command::Stls if !authenticated => self.stls(),
            Command::User(name) if !authenticated => self.user_cmd(&name),
            Command::Pass(password) if !authenticated => self.pass(password),
            _ if !authenticated => self.x.say("-ERR log in first (USER, PASS)"),
            Command::Stat => self.stat(),
            Command::List(n) => self.list(n, false),
            Command::Uidl(n) => self.list(n, true),
            Command::Retr(n) => self.retr(n, None),
            Command::Top(n, lines) => self.retr(n, Some(lines)),
            Command::Dele(n) => self.dele(n),
            Command::Rset => {
                self.deleted.iter_mut().for_each(|d| *d = false);
                self.x.say("+OK");
            }
            Command::Stls | Command::User(_) | Command::Pass(_) => {
                self.x.say("-ERR already logged in")
            }
        }
    }

    fn capa(&mut self) {
        self.x.say("+OK capabilities follow");
        let mut caps = vec!["TOP", "UIDL", "RESP-CODES", "AUTH-RESP-CODE", "PIPELINING"];
        if self.s.plain_auth {
            caps.push("USER");
        }
        if self.s.starttls {
            caps.push("STLS");
        }
        for c in caps {
            self.x.say(c);
        }
        let imp = format!("IMPLEMENTATION qtc-{}", self.s.version);
        self.x.say(&imp);
        self.x.say(".");
    }

    fn stls(&mut self) {
        if !self.s.starttls {
            return self.x.say("-ERR TLS not available");
        }
        self.x.say("+OK begin TLS negotiation");
        self.lines.clear();
        self.x.start_tls();
    }

    fn user_cmd(&mut self, name: &str) {
        if !self.s.plain_auth {
            let why = self.s.clear_password_refused("STLS");
            return self.x.say(&format!("-ERR [AUTH] {why}"));
        }
        self.state = State::Auth(Some(account(name)));
        self.x.say("+OK send PASS");
    }

    fn pass(&mut self, password: String) {
        let State::Auth(Some(call)) = &self.state else {
            return self.x.say("-ERR USER first");
        };
        let call = call.clone();
        self.x.login(call, password);
    }

    fn live(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.drop
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.deleted[*i])
    }

    fn stat(&mut self) {
        let (n, size) = self
            .live()
            .fold((0, 0), |(n, s), (_, e)| (n + 1, s + e.size));
        self.x.say(&format!("+OK {n} {size}"));
    }

    /// The index of message `n` (1-based), if it exists and is not deleted.
    fn index(&self, n: usize) -> Option<usize> {
        (n >= 1 && n <= self.drop.len() && !self.deleted[n - 1]).then(|| n - 1)
    }

    fn list(&mut self, n: Option<usize>, uidl: bool) {
        let item = |i: usize, e: &Entry| match uidl {
            true => format!("{} {}", i + 1, e.bid),
            false => format!("{} {}", i + 1, e.size),
        };
        if let Some(n) = n {
            return match self.index(n) {
                Some(i) => {
                    let line = format!("+OK {}", item(i, &self.drop[i]));
                    self.x.say(&line)
                }
                None => self.x.say("-ERR no such message"),
            };
        }
        let lines: Vec<String> = self.live().map(|(i, e)| item(i, e)).collect();
        self.x.say("+OK");
        for l in lines {
            self.x.say(&l);
        }
        self.x.say(".");
    }

    fn retr(&mut self, n: usize, top: Option<usize>) {
        let Some(index) = self.index(n) else {
            return self.x.say("-ERR no such message");
        };
        let query = Render {
            number: self.drop[index].number,
            reader: self.user,
            settings: self.s.clone(),
        };
        self.x.ask(query, move |p: &mut Pop3, r| match r {
            Ok(Some(r)) => p.send_message(index, &r, top),
            Ok(None) => p.x.say("-ERR that message is gone"),
            Err(_) => p.x.say("-ERR the message store is not available"),
        });
    }

    fn send_message(&mut self, index: usize, r: &Rendered, top: Option<usize>) {
        self.x.say(&format!("+OK {} octets", r.bytes.len()));
        let cut = match top {
            None => r.bytes.len(),
            Some(n) => head_and_lines(&r.bytes, n),
        };
        dot_stuff(&r.bytes[..cut], self.x.out());
        self.x.say(".");
        let Some(call) = self.user else {
            return;
        };
        if top.is_none() && !self.drop[index].seen {
            // RETR reads it, as `R` does.
            self.drop[index].seen = true;
            let query = Seen {
                number: self.drop[index].number,
                call,
                seen: true,
            };
            self.x.ask(query, |_: &mut Pop3, _| {});
        }
    }

    fn dele(&mut self, n: usize) {
        match self.index(n) {
            Some(i) => {
                self.deleted[i] = true;
                self.x.say(&format!("+OK message {} deleted", i + 1));
            }
            None => self.x.say("-ERR no such message"),
        }
    }

    fn quit(&mut self) {
        if self.state != State::Transaction {
            self.x.say("+OK 73");
            return self.x.close();
        }
        self.state = State::Update;
        let to_kill = self
            .drop
            .iter()
            .zip(&self.deleted)
            .filter(|(_, d)| **d)
            .map(|(e, _)| e.number)
            .collect();
        self.kill_next(to_kill);
    }

    /// Kills the DELE'd messages one by one, then says goodbye (RFC 1939's UPDATE state).
    fn kill_next(&mut self, mut to_kill: VecDeque<u64>) {
        let (Some(number), Some(call)) = (to_kill.pop_front(), self.user) else {
            self.x.say("+OK 73");
            return self.x.close();
        };
        let query = Kill { number, call };
        self.x
            .ask(query, move |p: &mut Pop3, _| p.kill_next(to_kill));
    }

    fn opened(&mut self, mailbox: Result<Vec<Entry>, StoreError>) {
        match mailbox {
            Ok(entries) => {
                self.state = State::Transaction;
                self.deleted = vec![false; entries.len()];
                self.drop = entries;
                let size: u64 = self.drop.iter().map(|e| e.size).sum();
                let line = format!("+OK {} messages ({size} octets)", self.drop.len());
                self.x.say(&line);
            }
            Err(_) => {
                self.x
                    .say("-ERR [SYS/TEMP] the message store is not available");
                self.x.close();
            }
        }
    }
}

/// The length of the header and the first `n` body lines of a message.
fn head_and_lines(bytes: &[u8], n: usize) -> usize {
    let body = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(bytes.len(), |p| p + 4);
    let mut end = body;
    for _ in 0..n {
        match bytes[end..].iter().position(|&b| b == b'\n') {
            Some(p) => end += p + 1,
            None => return bytes.len(),
        }
    }
    end
}

/// Appends `text` with every line starting with `.` doubled, ended by CR LF (RFC 1939 §3;
/// NNTP the same).
pub fn dot_stuff(text: &[u8], out: &mut Vec<u8>) {
    let mut at_line_start = true;
    for &b in text {
        if at_line_start && b == b'.' {
            out.push(b'.');
        }
        out.push(b);
        at_line_start = b == b'\n';
    }
    if !text.is_empty() && !text.ends_with(b"\r\n") {
        out.extend_from_slice(b"\r\n");
    }
}

impl Core for Pop3 {
    const STORE_LOST: &'static str = "-ERR [SYS/TEMP] the message store is not available";

    fn exchange(&self) -> &Exchange<Pop3> {
        &self.x
    }

    fn exchange_mut(&mut self) -> &mut Exchange<Pop3> {
        &mut self.x
    }

    fn handle_input(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
        self.run();
    }

    fn logged_in(&mut self, result: Result<Callsign, LoginRefused>) {
        match result {
            Ok(call) => {
                self.user = Some(call);
                let query = Mailbox {
                    call,
                    sized_after: 0,
                    settings: self.s.clone(),
                };
                self.x.ask(query, Pop3::opened);
            }
            Err(LoginRefused::Wrong) => {
                self.state = State::Auth(None);
                self.x.say("-ERR [AUTH] wrong callsign or password");
            }
            Err(LoginRefused::Full(why)) => {
                self.x.say(&format!("-ERR [SYS/TEMP] {why}"));
                self.x.close();
            }
            Err(LoginRefused::Unavailable) => {
                self.x.say("-ERR [SYS/TEMP] try again later");
                self.x.close();
            }
        }
    }

    fn tls_running(&mut self) {
        self.s.tls_started();
        self.state = State::Auth(None);
    }

    fn resume(&mut self) {
        self.run();
    }
}
