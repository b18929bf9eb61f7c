//! SMTP submission (RFC 6409 over RFC 5321): EHLO, STARTTLS, AUTH PLAIN and LOGIN with the BBS
//! password, MAIL, RCPT (packet addresses only, see [`crate::addr`]), DATA, RSET, NOOP, QUIT.
//! Nothing is taken before AUTH: the server relays for nobody. Each recipient becomes its own
//! BBS message from the logged-in call. Commands are parsed by `smtp-proto`; DATA's dot
//! unstuffing is its `DataReceiver`.

use std::collections::VecDeque;

use base64::Engine as _;
use qtc_mail::StoreError;
use smtp_proto::request::receiver::DataReceiver;
use smtp_proto::{Request as Cmd, AUTH_LOGIN, AUTH_PLAIN};

use crate::addr::Dest;
use crate::{Core, Event, LineBuffer, LoginRefused, Reply, Request, Settings, Submission};

/// Longest command line (RFC 5321 §4.5.3.1.4 says 512; AUTH lines may be longer).
const MAX_LINE: usize = 2048;
/// Recipients per message.
const MAX_RCPT: usize = 100;

enum State {
    Command,
    /// AUTH LOGIN: the user name, then the password.
    LoginUser,
    LoginPass(String),
    /// AUTH PLAIN without an initial response.
    Plain,
    /// Taking DATA.
    Data(DataReceiver),
    /// Waiting for the daemon (a login, a store answer, the TLS handshake).
    Waiting,
}

/// One SMTP submission session.
pub struct Smtp {
    s: Settings,
    lines: LineBuffer,
    out: Vec<u8>,
    events: VecDeque<Event>,
    state: State,
    user: Option<String>,
    greeted: bool,
    rcpts: Vec<Dest>,
    data: Vec<u8>,
    /// DATA passed its limit: read to its end, then refused.
    too_big: bool,
    /// Messages of the last DATA still to store, and the numbers stored.
    to_store: VecDeque<Submission>,
    stored: Vec<String>,
    closing: bool,
}

impl Smtp {
    /// A session; the greeting is the first output.
    pub fn new(s: Settings) -> Smtp {
        let mut smtp = Smtp {
            lines: LineBuffer::new(MAX_LINE),
            out: Vec::new(),
            events: VecDeque::new(),
            state: State::Command,
            user: None,
            greeted: false,
            rcpts: Vec::new(),
            data: Vec::new(),
            too_big: false,
            to_store: VecDeque::new(),
            stored: Vec::new(),
            closing: false,
            s,
        };
        let hello = format!(
            "220 {} ESMTP qtc {} packet mail",
            smtp.s.domain, smtp.s.version
        );
        smtp.reply(&hello);
        smtp
    }

    fn reply(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    fn limit(&self) -> usize {
        // Attachments arrive base64-encoded: a third larger than they are stored.
        self.s.max_message / 3 * 4 + 64 * 1024
    }

    fn run(&mut self) {
        while !matches!(self.state, State::Waiting) && !self.closing {
            if let State::Data(_) = self.state {
                if !self.take_data() {
                    return;
                }
                continue;
            }
            let Some(line) = self.lines.next_line() else {
                return;
            };
            match line {
                Err(_) => self.reply("500 5.5.2 Line too long"),
                Ok(line) => self.line(&line),
            }
        }
    }

    fn line(&mut self, line: &[u8]) {
        match std::mem::replace(&mut self.state, State::Command) {
            State::LoginUser => {
                let user = b64(line).map(|u| String::from_utf8_lossy(&u).into_owned());
                match user {
                    Some(u) => {
                        self.state = State::LoginPass(u);
                        self.reply("334 UGFzc3dvcmQ6");
                    }
                    None => self.reply("501 5.5.2 Bad base64"),
                }
            }
            State::LoginPass(user) => match b64(line) {
                Some(p) => self.login(&user, &String::from_utf8_lossy(&p)),
                None => self.reply("501 5.5.2 Bad base64"),
            },
            State::Plain => self.plain(line),
            _ => self.command(line),
        }
    }

    fn command(&mut self, line: &[u8]) {
        if line == b"*" {
            return self.reply("501 5.7.0 Authentication cancelled");
        }
        let mut with_end = line.to_vec();
        with_end.extend_from_slice(b"\r\n");
        let cmd = match Cmd::parse(&mut with_end.iter()) {
            Ok(c) => c,
            Err(smtp_proto::Error::UnknownCommand) => {
                return self.reply("500 5.5.1 Unknown command")
            }
            Err(_) => return self.reply("501 5.5.4 Syntax error"),
        };
        match cmd {
            Cmd::Ehlo { .. } => self.ehlo(true),
            Cmd::Helo { .. } | Cmd::Lhlo { .. } => self.ehlo(false),
            Cmd::StartTls => self.starttls(),
            Cmd::Auth {
                mechanism,
                initial_response,
            } => self.auth(mechanism, &initial_response),
            Cmd::Mail { .. } => self.mail(),
            Cmd::Rcpt { to } => self.rcpt(&to.address),
            Cmd::Data => self.begin_data(),
            Cmd::Rset => {
                self.reset();
                self.reply("250 2.0.0 OK");
            }
            Cmd::Noop { .. } => self.reply("250 2.0.0 OK"),
            Cmd::Vrfy { .. } => self.reply("252 2.5.0 Send some mail and see"),
            Cmd::Quit => {
                self.reply("221 2.0.0 73");
                self.closing = true;
                self.events.push_back(Event::Close);
            }
            _ => self.reply("502 5.5.1 Not implemented"),
        }
    }

    fn ehlo(&mut self, extended: bool) {
        self.greeted = true;
        self.reset();
        if !extended {
            return self.reply(&format!("250 {}", self.s.domain));
        }
        let mut lines = vec![
            self.s.domain.clone(),
            "8BITMIME".into(),
            "PIPELINING".into(),
        ];
        lines.push(format!("SIZE {}", self.limit()));
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
            self.reply(&format!("250{sep}{l}"));
        }
    }

    fn starttls(&mut self) {
        if !self.s.starttls {
            return self.reply("454 4.7.0 TLS not available");
        }
        self.reply("220 2.0.0 Ready to start TLS");
        // What the client sent after STARTTLS in clear is dropped (RFC 3207 §6).
        self.lines.clear();
        self.state = State::Waiting;
        self.events.push_back(Event::StartTls);
    }

    fn auth(&mut self, mechanism: u64, initial: &str) {
        if self.user.is_some() {
            return self.reply("503 5.5.1 Already authenticated");
        }
        if !self.s.plain_auth {
            let why = self.s.clear_password_refused("STARTTLS");
            return self.reply(&format!("538 5.7.11 Encryption required: {why}"));
        }
        match mechanism {
            AUTH_PLAIN if initial.is_empty() => {
                self.state = State::Plain;
                self.reply("334 ");
            }
            AUTH_PLAIN => self.plain(initial.as_bytes()),
            AUTH_LOGIN if initial.is_empty() => {
                self.state = State::LoginUser;
                self.reply("334 VXNlcm5hbWU6");
            }
            AUTH_LOGIN => match b64(initial.as_bytes()) {
                Some(u) => {
                    self.state = State::LoginPass(String::from_utf8_lossy(&u).into_owned());
                    self.reply("334 UGFzc3dvcmQ6");
                }
                None => self.reply("501 5.5.2 Bad base64"),
            },
            _ => self.reply("504 5.5.4 Use AUTH PLAIN or LOGIN"),
        }
    }

    fn plain(&mut self, line: &[u8]) {
        match b64(line).as_deref().and_then(split_plain) {
            Some((user, pass)) => self.login(&user, &pass),
            None => self.reply("501 5.5.2 Bad AUTH PLAIN data"),
        }
    }

    fn login(&mut self, user: &str, password: &str) {
        // `N0USR` or `N0USR@domain`: the callsign is the account.
        let call = user
            .split('@')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_uppercase();
        self.state = State::Waiting;
        self.events.push_back(Event::Login {
            call,
            password: password.to_string(),
        });
    }

    fn mail(&mut self) {
        if self.user.is_none() {
            return self.reply("530 5.7.0 Authentication required");
        }
        self.reset();
        self.reply("250 2.1.0 OK (the sender is the logged-in call)");
    }

    fn rcpt(&mut self, address: &str) {
        if self.user.is_none() {
            return self.reply("530 5.7.0 Authentication required");
        }
        if self.rcpts.len() >= MAX_RCPT {
            return self.reply("452 4.5.3 Too many recipients");
        }
        match crate::addr::parse(address, &self.s) {
            Ok(d) => {
                self.rcpts.push(d);
                self.reply("250 2.1.5 OK");
            }
            Err(e) => self.reply(&format!("550 5.1.1 {e}")),
        }
    }

    fn begin_data(&mut self) {
        if self.user.is_none() {
            return self.reply("530 5.7.0 Authentication required");
        }
        if self.rcpts.is_empty() {
            return self.reply("503 5.5.1 RCPT first");
        }
        self.reply("354 End data with <CR><LF>.<CR><LF>");
        self.data.clear();
        self.too_big = false;
        self.state = State::Data(DataReceiver::new());
    }

    /// Feeds buffered bytes to DATA; true when it ended.
    fn take_data(&mut self) -> bool {
        let rest = self.lines.take_rest();
        let State::Data(receiver) = &mut self.state else {
            return false;
        };
        let mut iter = rest.iter();
        let mut chunk = Vec::new();
        let done = receiver.ingest(&mut iter, &mut chunk);
        let left = iter.as_slice().to_vec();
        if self.data.len() + chunk.len() > self.limit() {
            self.too_big = true;
            self.data.clear();
        } else if !self.too_big {
            self.data.extend_from_slice(&chunk);
        }
        self.lines.push(&left);
        if done {
            self.state = State::Command;
            self.end_data();
        }
        done
    }

    fn end_data(&mut self) {
        if self.too_big {
            self.reset();
            return self.reply(&format!("552 5.3.4 Larger than {} bytes", self.limit()));
        }
        let parsed = match crate::submit::parse(&self.data, self.s.max_message) {
            Ok(p) => p,
            Err(e) => {
                self.reset();
                return self.reply(&format!("554 5.6.0 {e}"));
            }
        };
        let from = self.user.clone().unwrap_or_default();
        self.to_store = self
            .rcpts
            .iter()
            .map(|d| crate::submit::submission(&parsed, d, &from))
            .collect();
        self.stored.clear();
        self.data.clear();
        self.store_next();
    }

    fn store_next(&mut self) {
        match self.to_store.pop_front() {
            Some(sub) => {
                self.state = State::Waiting;
                self.events
                    .push_back(Event::Store(Request::Submit(Box::new(sub))));
            }
            None => {
                let line = format!("250 2.0.0 Stored as {}", self.stored.join(", "));
                self.reset();
                self.reply(&line);
            }
        }
    }

    fn reset(&mut self) {
        self.rcpts.clear();
        self.data.clear();
        self.to_store.clear();
    }
}

/// Base64 of an AUTH line.
fn b64(line: &[u8]) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(line.trim_ascii())
        .ok()
}

/// `authzid NUL authcid NUL password` (RFC 4616): (authcid, password).
pub fn split_plain(data: &[u8]) -> Option<(String, String)> {
    let mut it = data.split(|&b| b == 0);
    let (_authz, user, pass) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    Some((
        String::from_utf8_lossy(user).into_owned(),
        String::from_utf8_lossy(pass).into_owned(),
    ))
}

impl Core for Smtp {
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
        self.state = State::Command;
        match result {
            Ok(call) => {
                self.reply(&format!("235 2.7.0 Welcome {call}"));
                self.user = Some(call);
            }
            Err(LoginRefused::Wrong) => self.reply("535 5.7.8 Wrong callsign or password"),
            Err(LoginRefused::Full(why)) => self.reply(&format!("454 4.7.0 {why}")),
            Err(LoginRefused::Unavailable) => {
                self.reply("454 4.7.0 Temporary authentication failure")
            }
        }
        self.run();
    }

    fn answered(&mut self, reply: Result<Reply, StoreError>) {
        self.state = State::Command;
        match reply {
            Ok(Reply::Stored { number, bid }) => {
                self.stored.push(format!("#{number} ({bid})"));
                self.store_next();
            }
            Ok(_) => self.store_next(),
            Err(e) => {
                let line = match e {
                    StoreError::Full => "452 4.3.1 The message store is full".to_string(),
                    StoreError::OverLimit(why) => format!("452 4.5.3 {why}"),
                    StoreError::Rejected(_) => {
                        "554 5.7.1 This BBS does not accept that message".into()
                    }
                    StoreError::DuplicateBid(b) => format!("554 5.6.0 BID {b} exists already"),
                    _ => "451 4.3.0 The message store is not available".into(),
                };
                let stored = std::mem::take(&mut self.stored);
                self.reset();
                match stored.is_empty() {
                    true => self.reply(&line),
                    false => self.reply(&format!("{line} (stored before: {})", stored.join(", "))),
                }
            }
        }
        self.run();
    }

    fn tls_started(&mut self) {
        // RFC 3207 §4.2: forget everything learned before the handshake.
        self.s.starttls = false;
        self.s.plain_auth = true;
        self.greeted = false;
        self.state = State::Command;
        self.reset();
        self.run();
    }

    fn changed(&mut self) {}

    fn wants_input(&self) -> bool {
        !matches!(self.state, State::Waiting) && !self.closing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(s: &mut Smtp, input: &[u8]) -> String {
        s.handle_input(input);
        let mut out = Vec::new();
        s.take_output(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn submission_after_auth_only() {
        let mut s = Smtp::new(crate::addr::tests::settings());
        assert!(drive(&mut s, b"").starts_with("220 bbs.example.org"));
        let ehlo = drive(&mut s, b"EHLO me\r\n");
        assert!(ehlo.contains("250-AUTH PLAIN LOGIN"), "{ehlo}");
        assert!(drive(&mut s, b"MAIL FROM:<x@y>\r\n").starts_with("530"));
        drive(&mut s, b"AUTH PLAIN AE4wVVNSAHB3\r\n");
        assert_eq!(
            s.poll_event(),
            Some(Event::Login {
                call: "N0USR".into(),
                password: "pw".into()
            })
        );
        assert!(!s.wants_input());
        s.login_done(Ok("N0USR".into()));
        let out = drive(
            &mut s,
            b"MAIL FROM:<anyone@else>\r\nRCPT TO:<n0oth@n0call>\r\nRCPT TO:<x@>\r\nDATA\r\n",
        );
        assert!(
            out.contains("235 2.7.0") && out.contains("550 5.1.1") && out.contains("354"),
            "{out}"
        );
        drive(&mut s, b"Subject: hi\r\n\r\n..dot\r\nbody\r\n.\r\n");
        let Some(Event::Store(Request::Submit(sub))) = s.poll_event() else {
            panic!("no submit")
        };
        assert_eq!(
            (sub.msg.to.as_str(), sub.msg.from.as_str()),
            ("N0OTH", "N0USR")
        );
        assert_eq!(sub.msg.body, b".dot\r\nbody\r\n");
        s.answered(Ok(Reply::Stored {
            number: 5,
            bid: "5_N0CALL".into(),
        }));
        assert!(drive(&mut s, b"QUIT\r\n").contains("250 2.0.0 Stored as #5 (5_N0CALL)\r\n221"));
    }

    #[test]
    fn no_plain_auth_in_clear_unless_allowed() {
        let mut set = crate::addr::tests::settings();
        set.plain_auth = false;
        set.starttls = true;
        let mut s = Smtp::new(set);
        let ehlo = drive(&mut s, b"EHLO me\r\n");
        assert!(
            ehlo.contains("STARTTLS") && !ehlo.contains("AUTH"),
            "{ehlo}"
        );
        assert!(drive(&mut s, b"AUTH PLAIN AE4wVVNSAHB3\r\n").starts_with("538"));
        assert!(drive(&mut s, b"STARTTLS\r\nEHLO injected\r\n").starts_with("220"));
        assert_eq!(s.poll_event(), Some(Event::StartTls));
        s.tls_started();
        assert!(drive(&mut s, b"EHLO me\r\n").contains("AUTH PLAIN LOGIN"));
    }

    #[test]
    fn without_tls_a_refused_password_is_not_sent_to_starttls() {
        let mut set = crate::addr::tests::settings();
        set.plain_auth = false;
        let mut s = Smtp::new(set);
        let refused = drive(&mut s, b"AUTH PLAIN AE4wVVNSAHB3\r\n");
        assert!(
            refused.contains("\n538 ") && !refused.contains("STARTTLS"),
            "{refused}"
        );
        assert!(refused.contains("ask its sysop for TLS"), "{refused}");
    }
}
