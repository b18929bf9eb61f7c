//! `S`, `SP`, `SB`, `ST` (and `SR`'s text): subject, body, and storing the message.

use qtc_callsign::Callsign;
use qtc_mail::dest::DestError;
use qtc_mail::{
    MessageStore, MsgStatus, MsgType, NewMessage, StoreError, MAX_BID_LEN, MAX_SUBJECT_LEN,
};

use super::help::Help;
use super::CommandError;
use crate::session::{Session, State, CTRL_Z};
use crate::store::{BbsStore, Query};

pub(super) const HELP: Help = Help {
    names: &["S", "SP", "SB", "ST"],
    usage: "S[P|B|T] to[@bbs] [< from] [$bid]",
    what: "send personal, bulletin, NTS",
    example: "SP N0XYZ @ N0BBS",
};

const USAGE: &str = "S[P|B|T] to[@bbs] [< from] [$bid]";

/// A parsed `S` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendCmd {
    /// P, B or T.
    pub kind: MsgType,
    /// Addressee, upper case.
    pub to: String,
    /// `@` address, upper case, may be empty.
    pub at: String,
    /// `< FROM`, when given.
    pub from: Option<String>,
    /// `$BID`, when given.
    pub bid: Option<String>,
}

/// `S[P|B|T]`'s arguments: `to[@at] [< from] [$bid]`.
pub(super) fn parse(kind: MsgType, args: &[&str]) -> Result<SendCmd, CommandError> {
    let mut tokens = args.iter().map(|t| t.to_ascii_uppercase());
    let first = tokens.next().ok_or(CommandError::Usage(USAGE))?;
    let (to, mut at) = match first.split_once('@') {
        // `SP N0X@` names no BBS: a typo, not local mail.
        Some((_, "")) => return Err(CommandError::Usage(USAGE)),
        Some((to, at)) => (to.to_string(), at.to_string()),
        None => (first.clone(), String::new()),
    };
    let mut from = None;
    let mut bid = None;
    // Each marker may stand alone (`@ N0BBS`) or be attached (`@N0BBS`).
    while let Some(tok) = tokens.next() {
        let first = tok.chars().next().unwrap_or(' ');
        let (marker, attached) = tok.split_at(first.len_utf8());
        let value = if attached.is_empty() {
            tokens.next().ok_or(CommandError::Usage(USAGE))?
        } else {
            attached.to_string()
        };
        match marker {
            "@" => at = value,
            "<" => from = Some(value),
            "$" => bid = Some(value),
            _ => return Err(CommandError::Usage(USAGE)),
        }
    }
    qtc_mail::dest::check(&to, &at).map_err(|e| match e {
        DestError::TooLong { field, max } => CommandError::TooLong { field, max },
        DestError::To(_) | DestError::At(_) => CommandError::Usage(USAGE),
    })?;
    if let Some(bid) = &bid {
        if bid.len() > MAX_BID_LEN {
            return Err(CommandError::TooLong {
                field: "the BID",
                max: MAX_BID_LEN,
            });
        }
        if !qtc_mail::is_valid_bid(bid) {
            return Err(CommandError::Usage(USAGE));
        }
    }
    Ok(SendCmd {
        kind,
        to,
        at,
        from,
        bid,
    })
}

/// A message being written.
pub(crate) struct Draft {
    cmd: SendCmd,
    subject: Vec<u8>,
    body: Vec<u8>,
    too_large: bool,
}

impl Draft {
    pub(super) fn new(cmd: SendCmd, subject: Vec<u8>) -> Draft {
        Draft {
            cmd,
            subject,
            body: Vec::new(),
            too_large: false,
        }
    }
}

impl Session {
    pub(super) fn start_send(&mut self, cmd: SendCmd) {
        let (me, sysop, bbs) = self.me();
        if let Some(from) = &cmd.from {
            if *from != me && !sysop && !bbs {
                self.say("*** Only the sysop or a BBS may send as another station.\r");
                return;
            }
        }
        match cmd.bid.clone() {
            Some(bid) => self.request(BidKnown { bid }, move |s, known| s.send_checked(cmd, known)),
            None => self.send_checked(cmd, false),
        }
    }

    fn send_checked(&mut self, cmd: SendCmd, bid_known: bool) {
        if bid_known {
            let bid = cmd.bid.unwrap_or_default();
            self.say(&format!("*** BID {bid} exists already: not sent.\r"));
            return;
        }
        self.next_line(move |s, subject| s.got_subject(cmd, subject));
        self.say("Subject:\r");
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
        self.state = State::Body(Draft::new(cmd, subject));
        self.say("Enter message, end with /EX or ^Z:\r");
    }

    pub(crate) fn body_line(&mut self, mut d: Draft, text: Vec<u8>, now: i64) {
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
                self.too_large(&mut d);
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
            self.store_draft(d, now);
        }
        self.prompt_if_idle();
    }

    /// A body line longer than a whole message may be: the message will not be stored.
    pub(crate) fn body_too_large(&mut self, mut d: Draft) {
        self.too_large(&mut d);
        self.state = State::Body(d);
    }

    fn too_large(&mut self, d: &mut Draft) {
        if !d.too_large {
            let max = self.cfg.max_message;
            self.say(&format!(
                "*** Message too large (more than {max} bytes): it will not be stored. End it with /EX.\r"
            ));
        }
        d.too_large = true;
    }

    fn store_draft(&mut self, d: Draft, now: i64) {
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
        let size = msg.body.len();
        let query = Insert {
            msg,
            bbs_call: self.cfg.callsign,
            now,
        };
        self.request_result(query, move |s, stored| s.stored(stored, size));
    }

    fn stored(&mut self, reply: Result<(u64, String), StoreError>, size: usize) {
        match reply {
            Ok((number, bid)) => {
                tracing::info!(number, %bid, "message stored");
                self.say(&format!(
                    "Message #{number} stored, BID {bid}, {size} bytes.\r"
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
}

/// Whether a BID is known here.
#[derive(Debug)]
struct BidKnown {
    bid: String,
}

impl Query<BbsStore> for BidKnown {
    type Answer = bool;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<bool, StoreError> {
        store.bid_known(&self.bid)
    }
}

/// Stores a new message; answers its number and its BID (generated when none was given).
#[derive(Debug)]
struct Insert {
    msg: NewMessage,
    /// This BBS, for a generated BID.
    bbs_call: Callsign,
    /// Unix seconds.
    now: i64,
}

impl Query<BbsStore> for Insert {
    type Answer = (u64, String);
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<(u64, String), StoreError> {
        let number = store.insert_message(&self.msg, self.bbs_call, self.now)?;
        let bid = store
            .message_head(number)?
            .map(|m| m.header.bid)
            .unwrap_or_default();
        Ok((number, bid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::{parse, Command};

    #[test]
    fn send_forms() {
        let s = |l| match parse(l).unwrap() {
            Command::Send(s) => s,
            other => panic!("{other:?}"),
        };
        let a = s("SP n0usr@n0bbs.#nca.ca.usa.noam < N0ABC $123_N0ABC");
        assert_eq!(a.kind, MsgType::Personal);
        assert_eq!(a.to, "N0USR");
        assert_eq!(a.at, "N0BBS.#NCA.CA.USA.NOAM");
        assert_eq!(a.from.as_deref(), Some("N0ABC"));
        assert_eq!(a.bid.as_deref(), Some("123_N0ABC"));
        let b = s("SB ALL @ WW $X1");
        assert_eq!(
            (b.kind, b.to.as_str(), b.at.as_str()),
            (MsgType::Bulletin, "ALL", "WW")
        );
        assert_eq!(s("S N0USR").kind, MsgType::Personal);
        assert_eq!(s("ST 12345 @ NTSCA").kind, MsgType::Traffic);
        assert!(matches!(parse("SP"), Err(CommandError::Usage(_))));
        // Found by fuzzing: a non-ASCII word after the addressee, and a non-ASCII @.
        assert!(matches!(
            parse("SP N0XYZ \u{e9}"),
            Err(CommandError::Usage(_))
        ));
        assert!(matches!(
            parse("SP N0XYZ @ A\u{e9}\u{e9}"),
            Err(CommandError::Usage(_))
        ));
        assert!(matches!(parse("SP N0USR @"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("SP N0X@"), Err(CommandError::Usage(_))));
        assert!(matches!(
            parse("SP N0X@ < N0Y"),
            Err(CommandError::Usage(_))
        ));
        assert!(matches!(
            parse("SP N0USRXX"),
            Err(CommandError::TooLong { max: 6, .. })
        ));
        assert!(matches!(
            parse("SB ALL $1234567890123"),
            Err(CommandError::TooLong { max: 12, .. })
        ));
    }
}
