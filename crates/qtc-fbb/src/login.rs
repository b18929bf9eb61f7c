//! Logging in to a partner before forwarding (spec §7): a small expect/send script, sans-IO.
//!
//! Matching is a case-insensitive substring search over the text received since the last
//! match. [`Script::standard`] works against qtc (`Callsign:` / `Password:`), JNOS
//! (`login:` / `Password:`), LinBPQ (`user:` / `password:`) and LinFBB (`Callsign :` /
//! `Password :`); its password step is optional, because a partner that needs none (FBB's
//! `.CALL` login) goes straight to its SID or prompt.
//!
//! Drive it like the session: `start(now)`, `handle_input`, `handle_timeout`, drain
//! `poll_transmit` and `poll_event`; on [`LoginEvent::Done`] hand `leftover` to
//! [`crate::Session::handle_input`].

use crate::Error;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Default time allowed for the whole login.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(60);
/// Received text kept while looking for a pattern.
pub const MAX_LOGIN_BUFFER: usize = 4096;

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Wait until any of these appears (case-insensitive substring).
    Expect(Vec<String>),
    /// Like `Expect`, but skipped when a SID (`[` at a line start) or a prompt line (ending
    /// in `>`) shows up first.
    ExpectOptional(Vec<String>),
    /// Send this text followed by the script's line end.
    Send(String),
    /// Send this step only if the preceding optional expect matched.
    SendIfMatched(String),
}

/// What the script reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginEvent {
    /// Every step done; `leftover` is input after the last match (feed it to the session).
    Done {
        /// Unconsumed input.
        leftover: Vec<u8>,
    },
    /// The login failed (timeout, connection closed, a failure text).
    Failed(Error),
}

/// An expect/send login script and its progress.
#[derive(Debug, Clone)]
pub struct Script {
    steps: Vec<Step>,
    line_end: Vec<u8>,
    timeout: Duration,
    fail_on: Vec<String>,
    idx: usize,
    last_matched: bool,
    started: bool,
    finished: bool,
    buf: Vec<u8>,
    out: Vec<u8>,
    deadline: Option<Instant>,
    events: VecDeque<LoginEvent>,
}

fn find_ci(hay: &[u8], needle: &str) -> Option<usize> {
    let n = needle.as_bytes();
    if n.is_empty() {
        return Some(0);
    }
    hay.windows(n.len()).position(|w| w.eq_ignore_ascii_case(n))
}

/// Start of a SID or prompt line in `buf`, if any.
fn find_session_start(buf: &[u8]) -> Option<usize> {
    let mut line_start = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i == line_start && b == b'[' {
            return Some(i);
        }
        if b == b'\r' || b == b'\n' {
            let line = buf[line_start..i].trim_ascii_end();
            if line.last() == Some(&b'>') {
                return Some(line_start);
            }
            line_start = i + 1;
        }
    }
    None
}

impl Script {
    /// A script of `steps`, CR LF line ends, [`DEFAULT_LOGIN_TIMEOUT`].
    pub fn new(steps: Vec<Step>) -> Script {
        Script {
            steps,
            line_end: b"\r\n".to_vec(),
            timeout: DEFAULT_LOGIN_TIMEOUT,
            fail_on: Vec::new(),
            idx: 0,
            last_matched: false,
            started: false,
            finished: false,
            buf: Vec::new(),
            out: Vec::new(),
            deadline: None,
            events: VecDeque::new(),
        }
    }

    /// The default login: wait for `callsign` / `login:` / `user:`, send `user`; then, if a
    /// password prompt comes, send `password`.
    pub fn standard(user: &str, password: &str) -> Script {
        let mut s = Script::new(vec![
            Step::Expect(vec!["callsign".into(), "login:".into(), "user:".into()]),
            Step::Send(user.into()),
            Step::ExpectOptional(vec!["password".into()]),
            Step::SendIfMatched(password.into()),
        ]);
        s.fail_on = vec![
            "login incorrect".into(),
            "invalid password".into(),
            "access denied".into(),
        ];
        s
    }

    /// Use `end` after sent text (JNOS needs CR LF, the default).
    pub fn with_line_end(mut self, end: &[u8]) -> Script {
        self.line_end = end.to_vec();
        self
    }

    /// Allow `timeout` for the whole login.
    pub fn with_timeout(mut self, timeout: Duration) -> Script {
        self.timeout = timeout;
        self
    }

    /// Fail when any of these texts arrives.
    pub fn with_failure_texts(mut self, texts: Vec<String>) -> Script {
        self.fail_on = texts;
        self
    }

    /// Arm the timer and run leading send steps.
    pub fn start(&mut self, now: Instant) {
        if self.started {
            return;
        }
        self.started = true;
        self.deadline = Some(now + self.timeout);
        self.run();
    }

    /// Text received from the partner.
    pub fn handle_input(&mut self, _now: Instant, bytes: &[u8]) {
        if self.finished {
            return;
        }
        self.buf.extend_from_slice(bytes);
        if let Some(t) = self
            .fail_on
            .iter()
            .find(|t| find_ci(&self.buf, t).is_some())
        {
            tracing::debug!(text = %t, "login failure text");
            self.fail(Error::Login("partner refused the login"));
            return;
        }
        self.run();
        if !self.finished && self.buf.len() > MAX_LOGIN_BUFFER {
            let cut = self.buf.len() - MAX_LOGIN_BUFFER / 2;
            self.buf.drain(..cut);
        }
    }

    /// The connection closed.
    pub fn handle_eof(&mut self, _now: Instant) {
        if !self.finished {
            self.fail(Error::Login("connection closed during login"));
        }
    }

    /// Call when `poll_timeout()` has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if !self.finished && self.deadline.is_some_and(|d| now >= d) {
            self.fail(Error::Login("timed out"));
        }
    }

    /// Bytes to send; returns how many were appended.
    #[must_use]
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> usize {
        let n = self.out.len();
        buf.append(&mut self.out);
        n
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<LoginEvent> {
        self.events.pop_front()
    }

    /// Deadline of the login.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.finished {
            None
        } else {
            self.deadline
        }
    }

    /// How many of its lines the script sends without waiting for a prompt first (a LinBPQ
    /// FBBPORT-style `{login}`, `{password}`): a partner that prompts anyway (JNOS) shows
    /// that many prompts after them, which are not a refused login.
    pub fn blind_sends(&self) -> usize {
        let mut prompted = false;
        let mut blind = 0;
        for step in &self.steps {
            match step {
                Step::Expect(_) | Step::ExpectOptional(_) => prompted = true,
                Step::Send(_) | Step::SendIfMatched(_) => {
                    blind += usize::from(!prompted);
                    prompted = false;
                }
            }
        }
        blind
    }

    /// Whether the script has finished (done or failed).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn fail(&mut self, e: Error) {
        self.finished = true;
        self.deadline = None;
        self.events.push_back(LoginEvent::Failed(e));
    }

    fn run(&mut self) {
        while !self.finished {
            let Some(step) = self.steps.get(self.idx).cloned() else {
                self.finished = true;
                self.deadline = None;
                let leftover = std::mem::take(&mut self.buf);
                self.events.push_back(LoginEvent::Done { leftover });
                return;
            };
            match step {
                Step::Send(text) => self.send(&text),
                Step::SendIfMatched(text) => {
                    if self.last_matched {
                        self.send(&text);
                    }
                }
                Step::Expect(any) | Step::ExpectOptional(any) => {
                    let optional = matches!(self.steps[self.idx], Step::ExpectOptional(_));
                    let hit = any
                        .iter()
                        .filter_map(|p| find_ci(&self.buf, p).map(|i| i + p.len()))
                        .min();
                    let skip = if optional {
                        find_session_start(&self.buf)
                    } else {
                        None
                    };
                    match (hit, skip) {
                        (Some(end), s) if s.is_none_or(|s| end <= s) => {
                            self.buf.drain(..end);
                            self.last_matched = true;
                        }
                        (_, Some(s)) => {
                            self.buf.drain(..s);
                            self.last_matched = false;
                        }
                        _ => return,
                    }
                }
            }
            self.idx += 1;
        }
    }

    fn send(&mut self, text: &str) {
        // What came before we answer is the rest of the prompt; drop it so a SID right after
        // our answer starts a line.
        self.buf.clear();
        self.out.extend_from_slice(text.as_bytes());
        self.out.extend_from_slice(&self.line_end);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::tests::util::base_time;

    fn run(prompts: &[&[u8]], user: &str) -> (Vec<u8>, Option<LoginEvent>) {
        let now = base_time();
        let mut s = Script::standard(user, "secret");
        s.start(now);
        let mut out = Vec::new();
        for p in prompts {
            s.handle_input(now, p);
            let _ = s.poll_transmit(&mut out);
        }
        (out, s.poll_event())
    }

    #[test]
    fn partners() {
        for (prompts, _) in [
            (
                &[
                    &b"qtc BBS\r\nCallsign: "[..],
                    b"Password: ",
                    b"[QTC-0.1.0-B2FHMR$]\r",
                ][..],
                "qtc",
            ),
            (
                &[
                    &b"\r\nJNOS (n0bbs)\r\n\r\nlogin: "[..],
                    b"Password: ",
                    b"[JNOS-2.0o.2-B1FHIM$]\r",
                ][..],
                "jnos",
            ),
            (
                &[&b"user:"[..], b"password:", b"[BPQ-6.0.25.23-B2FWIHJM$]\r"][..],
                "bpq",
            ),
            (
                &[
                    &b"Callsign : "[..],
                    b"Password : ",
                    b"[FBB-7.0.12-AB1FHMRX$]\r",
                ][..],
                "fbb",
            ),
        ] {
            let (out, ev) = run(prompts, "N0PTR");
            assert_eq!(out, b"N0PTR\r\nsecret\r\n");
            // Done as soon as the password is sent; the SID goes to the session.
            assert_eq!(ev, Some(LoginEvent::Done { leftover: vec![] }));
        }
    }

    #[test]
    fn fbb_dot_login_needs_no_password() {
        // b1_inbound_transcript.txt: `.CALL` login, then the SID straight away.
        let (out, ev) = run(
            &[
                b"\xff\xfc\x01\r\nN0BBS BBS. TELNET Access\r\n\r\nCallsign : ",
                b"[FBB-7.0.12-AB1FHMRX$]\rN0BBS BBS, QTH FN31PR.\r",
            ],
            ".N0PTR",
        );
        assert_eq!(out, b".N0PTR\r\n");
        assert_eq!(
            ev,
            Some(LoginEvent::Done {
                leftover: b"[FBB-7.0.12-AB1FHMRX$]\rN0BBS BBS, QTH FN31PR.\r".to_vec()
            })
        );
    }

    #[test]
    fn sends_before_any_prompt_are_counted() {
        let blind = Script::new(vec![Step::Send("N0AAA".into()), Step::Send("pw".into())]);
        assert_eq!(blind.blind_sends(), 2);
        assert_eq!(Script::standard("N0AAA", "pw").blind_sends(), 0);
        let mixed = Script::new(vec![
            Step::Send("x".into()),
            Step::Expect(vec!["login:".into()]),
            Step::Send("N0AAA".into()),
        ]);
        assert_eq!(mixed.blind_sends(), 1);
    }

    #[test]
    fn timeout_and_failure() {
        let now = base_time();
        let mut s = Script::standard("N0PTR", "x");
        s.start(now);
        s.handle_timeout(now + Duration::from_secs(1));
        assert_eq!(s.poll_event(), None);
        s.handle_timeout(now + DEFAULT_LOGIN_TIMEOUT);
        assert_eq!(
            s.poll_event(),
            Some(LoginEvent::Failed(Error::Login("timed out")))
        );
        let mut s = Script::standard("N0PTR", "x");
        s.start(now);
        s.handle_input(now, b"login: ");
        s.handle_input(now, b"\r\nLogin incorrect\r\nlogin: ");
        assert!(matches!(s.poll_event(), Some(LoginEvent::Failed(_))));
    }
}
