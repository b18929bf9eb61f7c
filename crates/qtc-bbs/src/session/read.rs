//! `R`, `V`, `RM`/`RN` and `SR`: reading messages, a piece of body at a time.

use std::collections::VecDeque;

use qtc_mail::{
    ListFilter, Message, MessageHeader, MessageStore, MsgStatus, MsgType, StoreError,
    MAX_SUBJECT_LEN,
};

use super::compose::Draft;
use super::paging::{Pager, ReadPager, Reading, BODY_PIECE};
use super::{Session, State};
use crate::command::SendCmd;
use crate::store::{Headers, MessageHead, Query};
use crate::view;

impl Session {
    /// Whether this user may see a message; `copies` are its other recipients (Winlink Cc).
    fn may_read(&self, h: &MessageHeader, copies: &[String]) -> bool {
        let (me, sysop, _) = self.me();
        // Held mail is the sysop's alone until released, even for its sender and addressees.
        sysop
            || (!matches!(h.status, MsgStatus::Killed | MsgStatus::Held)
                && (h.kind != MsgType::Personal
                    || h.to == me
                    || h.from == me
                    || copies.contains(&me)))
    }

    pub(super) fn read(&mut self, numbers: VecDeque<u64>, verbose: bool) {
        let pager = ReadPager {
            numbers,
            verbose,
            current: None,
            text: Vec::new(),
            at: 0,
        };
        self.start_output(Pager::Read(pager));
    }

    /// The head of message `n` is here: shown if this user may read it (and their copy marked
    /// read if they are one of its recipients), then its body follows.
    pub(super) fn read_head(&mut self, mut p: ReadPager, n: u64, m: Option<Box<Message>>) {
        match m {
            Some(m) if self.may_read(&m.header, &m.copies) => {
                let (me, _, _) = self.me();
                view::message_head(&m, p.verbose, &mut p.text);
                self.save(MarkRead {
                    number: n,
                    reader: me,
                });
                self.last_read = Some(n);
                p.current = Some(Reading {
                    head: m,
                    offset: 0,
                    carry: Vec::new(),
                    last: None,
                });
            }
            _ => {
                self.say(&format!("No message #{n} for you.\r"));
                self.page_left = self.page_left.saturating_sub(1);
                if self.page_left == 0 && !p.numbers.is_empty() {
                    self.say(super::paging::MORE);
                    self.state = State::More(Pager::Read(p));
                    return;
                }
            }
        }
        self.read_step(p);
    }

    /// A piece of the current body: made into text, the rest of the message after its end.
    pub(super) fn read_body(&mut self, mut p: ReadPager, piece: Vec<u8>) {
        let Some(mut r) = p.current.take() else {
            return self.read_step(p);
        };
        r.offset += piece.len() as u64;
        r.last = piece.last().copied().or(r.last);
        let ended = piece.len() < BODY_PIECE;
        let mut bytes = std::mem::take(&mut r.carry);
        bytes.extend_from_slice(&piece);
        if !ended {
            let whole = qtc_mail::text::complete_utf8(&bytes);
            r.carry = bytes.split_off(whole);
        }
        view::body_piece(&r.head.charset, &bytes, self.cfg.raw_bodies, &mut p.text);
        if ended {
            view::message_tail(&r.head, r.last, &mut p.text);
        } else {
            p.current = Some(r);
        }
        self.read_step(p);
    }

    pub(super) fn read_mine(&mut self) {
        let (me, _, _) = self.me();
        let f = ListFilter {
            to_or_copy: Some(me),
            status: Some(MsgStatus::New),
            oldest_first: true,
            ..Default::default()
        };
        self.request(Headers(f), Session::read_mine_listed);
    }

    fn read_mine_listed(&mut self, headers: Vec<MessageHeader>) {
        if headers.is_empty() {
            self.say("You have no unread messages.\r");
            return;
        }
        self.read(headers.iter().map(|h| h.number).collect(), false);
    }

    /// `SR`: a personal reply to the sender of message `n` (or of the one read last), with the
    /// subject `Re: ...`; the text follows at once.
    pub(super) fn reply(&mut self, n: Option<u64>) {
        match n.or(self.last_read) {
            Some(number) => {
                let query = MessageHead {
                    number,
                    reader: None,
                };
                self.request(query, move |s, m| s.reply_to(number, m));
            }
            None => self.say("Read a message first, or give its number: SR n\r"),
        }
    }

    fn reply_to(&mut self, n: u64, m: Option<Box<Message>>) {
        let m = match m {
            Some(m) if self.may_read(&m.header, &[]) => m,
            _ => {
                self.say(&format!("No message #{n} for you.\r"));
                return;
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
        self.state = State::Body(Draft::new(cmd, subject));
    }
}

/// `reader` read it: their copy is marked read if they are one of its recipients.
#[derive(Debug)]
struct MarkRead {
    number: u64,
    reader: String,
}

impl Query for MarkRead {
    type Answer = ();
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        store.mark_read(self.number, &self.reader)
    }
}
