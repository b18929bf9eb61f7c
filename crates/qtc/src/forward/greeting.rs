//! What a partner we called says before its SID, read without any I/O: the SID (the session is
//! under way), a refusal (it did not take our login), or nothing decisive yet. Without this a
//! refused login looked like a silent partner, and the call waited out the session's 5-minute
//! idle timeout.

use qtc_callsign::Callsign;

/// Texts partners send when they refuse a login (qtc, JNOS, LinBPQ, LinFBB), matched
/// case-insensitively; the login script fails on them too.
pub const FAILURE_TEXTS: &[&str] = &[
    "login incorrect",
    "invalid password",
    "password incorrect",
    "incorrect password",
    "wrong password",
    "bad password",
    "access denied",
];

/// What qtc tells a partner whose login it does not take because a forwarding session with it
/// is running (calls crossed, or it called twice); qtc, calling, ends its call quietly on it.
pub const BUSY: &str = "*** A forwarding session with you is already running.";

/// The prompts a partner sends again after refusing a login.
const PROMPTS_AGAIN: &[&str] = &[
    "callsign:",
    "callsign :",
    "login:",
    "user:",
    "password:",
    "password :",
];

/// How long a partner has to answer each step of a call: the connection, the login prompts,
/// its SID. A partner that says nothing for this long is named as silent rather than waited
/// for until the session's 5-minute idle timeout.
pub const ANSWER_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// Received text kept while waiting; a banner longer than this loses its start, never a SID.
const MAX_KEPT: usize = 4096;

/// What has been heard so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Heard {
    /// A SID or prompt line: the session is under way.
    Sid,
    /// The partner refused the login.
    Refused,
    /// The partner has a forwarding session with us running ([`BUSY`]).
    Busy,
    /// Nothing decisive yet.
    Waiting,
}

/// Watches what the partner we called says up to its SID. The session reads the same input
/// (an FBB partner's `SYS` challenge comes before the SID and is the session's to answer).
#[derive(Debug, Default)]
pub struct AfterLogin {
    buf: Vec<u8>,
    /// Prompts still to come for answers our script sent before any prompt.
    early: usize,
}

impl AfterLogin {
    /// Watching after a login script that sent `early` answers before any prompt: a partner
    /// that prompts anyway (JNOS reads them as typed ahead) shows that many prompts first.
    pub fn new(early: usize) -> AfterLogin {
        AfterLogin {
            buf: Vec::new(),
            early,
        }
    }

    /// Adds received text and says what it amounts to. A refusal counts only before the SID:
    /// a message may say anything.
    pub fn input(&mut self, bytes: &[u8]) -> Heard {
        self.buf.extend_from_slice(bytes);
        let start = session_start(&self.buf);
        let before = &self.buf[..start.unwrap_or(self.buf.len())];
        let prompts = PROMPTS_AGAIN
            .iter()
            .map(|p| count_ci(before, p))
            .sum::<usize>();
        if contains_ci(before, BUSY) {
            return Heard::Busy;
        }
        if prompts > self.early || FAILURE_TEXTS.iter().any(|r| contains_ci(before, r)) {
            return Heard::Refused;
        }
        if start.is_some() {
            self.buf = Vec::new();
            return Heard::Sid;
        }
        if self.buf.len() > MAX_KEPT {
            // The prompts seen in what is dropped are not seen again.
            let cut = self.buf.len() - MAX_KEPT / 2;
            let dropped = PROMPTS_AGAIN
                .iter()
                .map(|p| count_ci(&self.buf[..cut], p))
                .sum();
            self.early = self.early.saturating_sub(dropped);
            self.buf.drain(..cut);
        }
        Heard::Waiting
    }
}

/// The partner did not take our login.
pub fn refused(partner: Callsign) -> String {
    format!("{partner} refused our login (password)")
}

/// The partner hung up before its SID.
pub fn closed(partner: Callsign) -> String {
    format!("{partner} closed the connection before its SID")
}

/// The partner said no SID in time.
pub fn no_sid(partner: Callsign) -> String {
    format!("no SID from {partner} in {} s", ANSWER_TIME.as_secs())
}

/// How often `needle` occurs in `hay`, case-insensitively (`password:` inside `password :`
/// counts once: the two never overlap).
fn count_ci(hay: &[u8], needle: &str) -> usize {
    hay.windows(needle.len())
        .filter(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
        .count()
}

fn contains_ci(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Where a SID (`[` at a line start) or a complete prompt line (ending in `>`) begins.
fn session_start(buf: &[u8]) -> Option<usize> {
    let mut line_start = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i == line_start && b == b'[' {
            return Some(i);
        }
        if b == b'\r' || b == b'\n' {
            if buf[line_start..i].trim_ascii_end().last() == Some(&b'>') {
                return Some(line_start);
            }
            line_start = i + 1;
        }
    }
    None
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn qtc_refusal_is_heard_at_once() {
        let mut a = AfterLogin::default();
        assert_eq!(a.input(b"\r"), Heard::Waiting);
        assert_eq!(a.input(b"Login incorrect.\r"), Heard::Refused);
    }

    #[test]
    fn prompts_for_answers_sent_early_are_no_refusal() {
        // `script = [{ send = "{login}" }, { send = "{password}" }]` against JNOS: its
        // `login:` and `Password:` come after both answers, then its SID.
        let mut a = AfterLogin::new(2);
        assert_eq!(a.input(b"\r\nJNOS (n0jns)\r\n\r\nlogin: "), Heard::Waiting);
        assert_eq!(a.input(b"Password: \xff\xfb\x01"), Heard::Waiting);
        assert_eq!(a.input(b"\r\n[JNOS-2.0o.2-B1FHIM$]\r\n"), Heard::Sid);
        // One prompt more than answers sent is a refusal.
        let mut b = AfterLogin::new(1);
        assert_eq!(b.input(b"login: Password: "), Heard::Refused);
    }

    #[test]
    fn a_second_prompt_is_a_refusal() {
        let mut a = AfterLogin::default();
        assert_eq!(a.input(b"\r\nCallsign: "), Heard::Refused);
    }

    #[test]
    fn the_sid_after_a_banner_or_a_challenge_starts_the_session() {
        let mut a = AfterLogin::default();
        assert_eq!(a.input(b"Welcome to N0BPQ's BBS\r"), Heard::Waiting);
        assert_eq!(a.input(b"3 1 4 1 5 0123456789\r"), Heard::Waiting);
        assert_eq!(a.input(b"[BPQ-6.0.25.23-B2FWIHJM$]\r"), Heard::Sid);
    }

    #[test]
    fn prompt_words_after_the_sid_are_not_a_refusal() {
        let mut a = AfterLogin::default();
        assert_eq!(
            a.input(b"[QTC-0.1-B2FHM$]\rFA P N0A N0B N0C password: 12\r"),
            Heard::Sid
        );
    }

    #[test]
    fn an_mbl_prompt_without_a_sid_starts_the_session() {
        let mut a = AfterLogin::default();
        assert_eq!(a.input(b"de N0MBL>"), Heard::Waiting);
        assert_eq!(a.input(b"\r"), Heard::Sid);
    }

    #[test]
    fn a_long_banner_is_bounded() {
        let mut a = AfterLogin::default();
        for _ in 0..100 {
            assert_eq!(a.input(&[b'x'; 1000]), Heard::Waiting);
        }
        assert!(a.buf.len() <= MAX_KEPT + 1000);
    }
}
