//! `S`, `SP`, `SB`, `ST` (and `SR`'s text): subject, body, and storing the message.

use qtc_mail::{MessageStore, MsgStatus, NewMessage, StoreError, MAX_SUBJECT_LEN};

use super::{Session, State, CTRL_Z};
use crate::command::SendCmd;
use crate::store::Query;

/// A message being written.
pub(super) struct Draft {
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
        self.state = State::Subject { cmd };
        self.say("Subject:\r");
    }

    pub(super) fn got_subject(&mut self, cmd: SendCmd, mut subject: Vec<u8>) {
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

    pub(super) fn body_line(&mut self, mut d: Draft, text: Vec<u8>, now: i64) {
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
    pub(super) fn body_too_large(&mut self, mut d: Draft) {
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
            bbs_call: self.cfg.callsign.clone(),
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

impl Query for BidKnown {
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
    bbs_call: String,
    /// Unix seconds.
    now: i64,
}

impl Query for Insert {
    type Answer = (u64, String);
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<(u64, String), StoreError> {
        let number = store.insert_message(&self.msg, &self.bbs_call, self.now)?;
        let bid = store
            .message_head(number)?
            .map(|m| m.header.bid)
            .unwrap_or_default();
        Ok((number, bid))
    }
}
