//! `SR [n]`: a personal reply to the sender of message n (or of the one read last), with the
//! subject `Re: ...`; the text follows at once.

use qtc_mail::{Message, MsgType, MAX_SUBJECT_LEN};

use super::help::Help;
use super::send::{Draft, SendCmd};
use crate::session::{Session, State};
use crate::store::MessageHead;

pub(super) const HELP: Help = Help {
    names: &["SR"],
    usage: "SR [n]",
    what: "reply to the message read last (or n)",
    example: "SR",
};

pub(super) const USAGE: &str = "SR [n]";

impl Session {
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
