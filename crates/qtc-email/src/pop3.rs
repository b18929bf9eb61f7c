//! POP3 (RFC 1939, RFC 2449 CAPA, RFC 2595 STLS): USER/PASS with the BBS password, STAT, LIST,
//! UIDL (the BID, as LinBPQ), RETR (marks the message read, as `R`), TOP, DELE (kills it at
//! QUIT, as `K`), RSET, NOOP, QUIT. The maildrop is the user's personal mail.

use std::collections::VecDeque;

use qtc_mail::StoreError;

use crate::{Core, Entry, Event, LineBuffer, LoginRefused, Reply, Request, Settings};

/// Longest command line (RFC 2449: 255 octets).
const MAX_LINE: usize = 512;

enum State {
    /// Before login; the user name once USER was given.
    Auth(Option<String>),
    Transaction,
    Waiting(Wait),
    Closed,
}

/// What an answer from the daemon is for.
enum Wait {
    Login,
    Mailbox,
    Retr {
        index: usize,
        top: Option<usize>,
    },
    Seen,
    Tls,
    /// Killing the DELE'd messages at QUIT.
    Update,
}

/// One POP3 session.
pub struct Pop3 {
    s: Settings,
    lines: LineBuffer,
    out: Vec<u8>,
    events: VecDeque<Event>,
    state: State,
    user: Option<String>,
    drop: Vec<Entry>,
    deleted: Vec<bool>,
    to_kill: VecDeque<u64>,
}

impl Pop3 {
    /// A session; the greeting is the first output.
    pub fn new(s: Settings) -> Pop3 {
        let mut p = Pop3 {
            lines: LineBuffer::new(MAX_LINE),
            out: Vec::new(),
            events: VecDeque::new(),
            state: State::Auth(None),
            user: None,
            drop: Vec::new(),
            deleted: Vec::new(),
            to_kill: VecDeque::new(),
            s,
        };
        let hello = format!("+OK qtc {} POP3 server ready", p.s.version);
        p.reply(&hello);
        p
    }

    fn reply(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    fn run(&mut self) {
        while matches!(self.state, State::Auth(_) | State::Transaction) {
            let Some(line) = self.lines.next_line() else {
                return;
            };
            match line {
                Err(_) => self.reply("-ERR line too long"),
                Ok(line) => self.line(&String::from_utf8_lossy(&line)),
            }
        }
    }

    fn line(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or("").to_ascii_uppercase();
        let args: Vec<&str> = words.collect();
        match (&self.state, cmd.as_str()) {
            (_, "CAPA") => self.capa(),
            (_, "NOOP") => self.reply("+OK"),
            (_, "QUIT") => self.quit(),
            (State::Auth(_), "STLS") => self.stls(),
            (State::Auth(_), "USER") => self.user_cmd(args.first().copied()),
            (State::Auth(_), "PASS") => self.pass(line),
            (State::Auth(_), _) => self.reply("-ERR log in first (USER, PASS)"),
            (_, "STAT") => self.stat(),
            (_, "LIST") => self.list(args.first().copied(), false),
            (_, "UIDL") => self.list(args.first().copied(), true),
            (_, "RETR") => self.retr(args.first().copied(), None),
            (_, "TOP") => match args.get(1).and_then(|n| n.parse().ok()) {
                Some(n) => self.retr(args.first().copied(), Some(n)),
                None => self.reply("-ERR TOP msg n"),
            },
            (_, "DELE") => self.dele(args.first().copied()),
            (_, "RSET") => {
                self.deleted.iter_mut().for_each(|d| *d = false);
                self.reply("+OK");
            }
            _ => self.reply("-ERR unknown command"),
        }
    }

    fn capa(&mut self) {
        self.reply("+OK capabilities follow");
        let mut caps = vec!["TOP", "UIDL", "RESP-CODES", "AUTH-RESP-CODE", "PIPELINING"];
        if self.s.plain_auth {
            caps.push("USER");
        }
        if self.s.starttls {
            caps.push("STLS");
        }
        for c in caps {
            self.reply(c);
        }
        let imp = format!("IMPLEMENTATION qtc-{}", self.s.version);
        self.reply(&imp);
        self.reply(".");
    }

    fn stls(&mut self) {
        if !self.s.starttls {
            return self.reply("-ERR TLS not available");
        }
        self.reply("+OK begin TLS negotiation");
        self.lines.clear();
        self.state = State::Waiting(Wait::Tls);
        self.events.push_back(Event::StartTls);
    }

    fn user_cmd(&mut self, name: Option<&str>) {
        if !self.s.plain_auth {
            let why = self.s.clear_password_refused("STLS");
            return self.reply(&format!("-ERR [AUTH] {why}"));
        }
        match name {
            Some(n) => {
                let call = n.split('@').next().unwrap_or("").to_ascii_uppercase();
                self.state = State::Auth(Some(call));
                self.reply("+OK send PASS");
            }
            None => self.reply("-ERR USER callsign"),
        }
    }

    fn pass(&mut self, line: &str) {
        let State::Auth(Some(call)) = &self.state else {
            return self.reply("-ERR USER first");
        };
        // The password is the rest of the line: it may hold spaces.
        let password = line.get(5..).unwrap_or("").to_string();
        let call = call.clone();
        self.state = State::Waiting(Wait::Login);
        self.events.push_back(Event::Login { call, password });
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
        self.reply(&format!("+OK {n} {size}"));
    }

    /// The index of message `arg` (1-based), if it exists and is not deleted.
    fn index(&self, arg: Option<&str>) -> Option<usize> {
        let n: usize = arg?.parse().ok()?;
        (n >= 1 && n <= self.drop.len() && !self.deleted[n - 1]).then(|| n - 1)
    }

    fn list(&mut self, arg: Option<&str>, uidl: bool) {
        let item = |i: usize, e: &Entry| match uidl {
            true => format!("{} {}", i + 1, e.bid),
            false => format!("{} {}", i + 1, e.size),
        };
        if arg.is_some() {
            return match self.index(arg) {
                Some(i) => {
                    let line = format!("+OK {}", item(i, &self.drop[i]));
                    self.reply(&line)
                }
                None => self.reply("-ERR no such message"),
            };
        }
        let lines: Vec<String> = self.live().map(|(i, e)| item(i, e)).collect();
        self.reply("+OK");
        for l in lines {
            self.reply(&l);
        }
        self.reply(".");
    }

    fn retr(&mut self, arg: Option<&str>, top: Option<usize>) {
        let Some(index) = self.index(arg) else {
            return self.reply("-ERR no such message");
        };
        self.state = State::Waiting(Wait::Retr { index, top });
        self.events.push_back(Event::Store(Request::Render {
            number: self.drop[index].number,
            call: self.user.clone(),
        }));
    }

    fn dele(&mut self, arg: Option<&str>) {
        match self.index(arg) {
            Some(i) => {
                self.deleted[i] = true;
                self.reply(&format!("+OK message {} deleted", i + 1));
            }
            None => self.reply("-ERR no such message"),
        }
    }

    fn quit(&mut self) {
        if matches!(self.state, State::Transaction) {
            self.to_kill = self
                .drop
                .iter()
                .zip(&self.deleted)
                .filter(|(_, d)| **d)
                .map(|(e, _)| e.number)
                .collect();
            return self.kill_next();
        }
        self.close("+OK 73");
    }

    fn kill_next(&mut self) {
        match self.to_kill.pop_front() {
            Some(number) => {
                self.state = State::Waiting(Wait::Update);
                self.events.push_back(Event::Store(Request::Kill {
                    number,
                    call: self.user.clone().unwrap_or_default(),
                }));
            }
            None => self.close("+OK 73"),
        }
    }

    fn close(&mut self, line: &str) {
        self.reply(line);
        self.state = State::Closed;
        self.events.push_back(Event::Close);
    }

    fn send_message(&mut self, bytes: &[u8], top: Option<usize>) {
        self.reply(&format!("+OK {} octets", bytes.len()));
        let cut = match top {
            None => bytes.len(),
            Some(n) => head_and_lines(bytes, n),
        };
        dot_stuff(&bytes[..cut], &mut self.out);
        self.reply(".");
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
    fn handle_input(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
        self.run();
    }

    fn take_output(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.out);
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn login_done(&mut self, result: Result<String, LoginRefused>) {
        match result {
            Ok(call) => {
                self.user = Some(call.clone());
                self.state = State::Waiting(Wait::Mailbox);
                self.events.push_back(Event::Store(Request::Mailbox {
                    call,
                    sized_after: 0,
                }));
            }
            Err(LoginRefused::Wrong) => {
                self.state = State::Auth(None);
                self.reply("-ERR [AUTH] wrong callsign or password");
            }
            Err(LoginRefused::Full(why)) => self.close(&format!("-ERR [SYS/TEMP] {why}")),
            Err(LoginRefused::Unavailable) => self.close("-ERR [SYS/TEMP] try again later"),
        }
        self.run();
    }

    fn answered(&mut self, reply: Result<Reply, StoreError>) {
        let State::Waiting(wait) = std::mem::replace(&mut self.state, State::Transaction) else {
            return;
        };
        match (wait, reply) {
            (Wait::Mailbox, Ok(Reply::Mailbox(entries))) => {
                self.deleted = vec![false; entries.len()];
                self.drop = entries;
                let size: u64 = self.drop.iter().map(|e| e.size).sum();
                let line = format!("+OK {} messages ({size} octets)", self.drop.len());
                self.reply(&line);
            }
            (Wait::Retr { index, top }, Ok(Reply::Rendered(Some(r)))) => {
                self.send_message(&r.bytes, top);
                if top.is_none() && !self.drop[index].seen {
                    self.drop[index].seen = true;
                    self.state = State::Waiting(Wait::Seen);
                    self.events.push_back(Event::Store(Request::Seen {
                        number: self.drop[index].number,
                        call: self.user.clone().unwrap_or_default(),
                        seen: true,
                    }));
                }
            }
            (Wait::Retr { .. }, Ok(_)) => self.reply("-ERR that message is gone"),
            (Wait::Update, _) => self.kill_next(),
            (Wait::Seen, _) => {}
            (Wait::Mailbox, _) => self.close("-ERR [SYS/TEMP] the message store is not available"),
            (_, _) => self.reply("-ERR the message store is not available"),
        }
        self.run();
    }

    fn tls_started(&mut self) {
        self.s.starttls = false;
        self.s.plain_auth = true;
        self.state = State::Auth(None);
        self.run();
    }

    fn changed(&mut self) {}

    fn wants_input(&self) -> bool {
        matches!(self.state, State::Auth(_) | State::Transaction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(p: &mut Pop3, input: &[u8]) -> String {
        p.handle_input(input);
        let mut out = Vec::new();
        p.take_output(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn a_session() {
        let mut p = Pop3::new(crate::addr::tests::settings());
        assert!(drive(&mut p, b"").starts_with("+OK"));
        drive(&mut p, b"USER n0oth\r\nPASS x y\r\n");
        assert_eq!(
            p.poll_event(),
            Some(Event::Login {
                call: "N0OTH".into(),
                password: "x y".into()
            })
        );
        p.login_done(Ok("N0OTH".into()));
        assert!(matches!(
            p.poll_event(),
            Some(Event::Store(Request::Mailbox { .. }))
        ));
        let e = |n: u64| Entry {
            number: n,
            seen: false,
            size: 10,
            created: 0,
            from: "N0USR".into(),
            subject: b"s".to_vec(),
            bid: format!("{n}_N0CALL"),
        };
        p.answered(Ok(Reply::Mailbox(vec![e(3), e(9)])));
        let out = drive(&mut p, b"STAT\r\nUIDL\r\nDELE 1\r\nLIST\r\nRETR 2\r\n");
        assert!(
            out.contains("+OK 2 20\r\n+OK\r\n1 3_N0CALL\r\n2 9_N0CALL\r\n.\r\n"),
            "{out}"
        );
        assert!(out.contains("+OK\r\n2 10\r\n.\r\n"), "{out}");
        assert!(matches!(
            p.poll_event(),
            Some(Event::Store(Request::Render { number: 9, .. }))
        ));
        let mut r = crate::render::render(&crate::render::tests::message(b".x\r\n"), &[], &p.s);
        r.bytes = b"Subject: s\r\n\r\n.x\r\n".to_vec();
        p.answered(Ok(Reply::Rendered(Some(Box::new(r)))));
        assert!(drive(&mut p, b"").ends_with("\r\n\r\n..x\r\n.\r\n"));
        assert!(matches!(
            p.poll_event(),
            Some(Event::Store(Request::Seen { number: 9, .. }))
        ));
        p.answered(Ok(Reply::Done));
        drive(&mut p, b"QUIT\r\n");
        assert!(matches!(
            p.poll_event(),
            Some(Event::Store(Request::Kill { number: 3, .. }))
        ));
        p.answered(Ok(Reply::Killed(true)));
        assert!(drive(&mut p, b"").ends_with("+OK 73\r\n"));
        assert_eq!(p.poll_event(), Some(Event::Close));
    }
}
