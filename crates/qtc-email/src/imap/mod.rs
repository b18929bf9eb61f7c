//! IMAP4rev1 (RFC 3501) with IDLE (RFC 2177): one mailbox, INBOX, the user's personal mail.
//! `\Seen` is the user's own read mark (the one `LN`/`RN` use); `\Deleted` then EXPUNGE (or
//! CLOSE) kills, as `K`; a UID is the BBS message number, so UIDs never change, and
//! UIDVALIDITY is a number the store draws once when it is created ([`Settings`] carries it).
//! Bulletins are not here: newsreaders get them over NNTP (see the crate's docs).
//!
//! Commands are parsed by `imap-codec` (literals, sequence sets, FETCH and SEARCH grammar);
//! responses are written here. IDLE waits for [`Core::changed`], which the daemon calls when
//! the store has changed: no polling.

mod answers;
mod fetch;
mod search;
mod selected;

use std::collections::VecDeque;

use base64::Engine as _;
use imap_codec::decode::{CommandDecodeError, Decoder, IdleDoneDecodeError};
use imap_codec::imap_types::command::{Command, CommandBody};
use imap_codec::imap_types::core::LiteralMode;
use imap_codec::imap_types::flag::{Flag, StoreType};
use imap_codec::imap_types::mailbox::{ListMailbox, Mailbox};
use imap_codec::imap_types::search::SearchKey;
use imap_codec::imap_types::sequence::SequenceSet;
use imap_codec::{CommandCodec, IdleDoneCodec};
use qtc_mail::StoreError;

use crate::render::Rendered;
use crate::{Core, Entry, Event, LoginRefused, Reply, Request, Settings};
use fetch::Item;

/// The most bytes a command may hold, literals included (an APPEND is refused anyway).
const MAX_COMMAND: usize = 64 * 1024;

/// A message of the selected INBOX.
#[derive(Clone, Debug)]
pub struct Msg {
    /// What the store said of it.
    pub entry: Entry,
    /// `\Deleted` (this session's until EXPUNGE).
    pub deleted: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    NotAuth,
    Auth,
    Selected { read_only: bool },
    Logout,
}

/// What the session waits for.
enum Wait {
    Nothing,
    Login(String),
    /// AUTHENTICATE PLAIN: the client's data line.
    AuthData(String),
    Tls,
    /// SELECT/EXAMINE/STATUS/NOOP/IDLE: the mailbox.
    Mailbox(MailboxFor),
    /// A FETCH going message by message.
    Fetch(Box<FetchJob>),
    /// STORE's read marks, then its answers.
    Store(Box<StoreJob>),
    /// EXPUNGE or CLOSE killing `\Deleted` messages.
    Expunge(Box<ExpungeJob>),
    Idle(String),
}

enum MailboxFor {
    Select { tag: String, read_only: bool },
    Status { tag: String, items: String },
    Refresh { tag: Option<String>, text: String },
}

struct FetchJob {
    tag: String,
    uid: bool,
    items: Vec<Item>,
    todo: VecDeque<usize>,
    /// The message being rendered.
    current: Option<usize>,
}

struct StoreJob {
    tag: String,
    uid: bool,
    silent: bool,
    todo: VecDeque<(usize, bool)>,
    changed: Vec<usize>,
}

struct ExpungeJob {
    tag: String,
    /// CLOSE: no untagged EXPUNGE, back to the authenticated state.
    close: bool,
    todo: VecDeque<u64>,
    /// The message being killed.
    current: Option<u64>,
}

/// One IMAP session.
pub struct Imap {
    s: Settings,
    uid_validity: u32,
    input: Vec<u8>,
    /// The buffer length at which a literal was last agreed to with `+`.
    literal_ack: usize,
    out: Vec<u8>,
    events: VecDeque<Event>,
    state: State,
    wait: Wait,
    user: Option<String>,
    msgs: Vec<Msg>,
    uid_next: u64,
}

impl Imap {
    /// A session; `uid_validity` is the store's. The greeting is the first output.
    pub fn new(s: Settings, uid_validity: u32) -> Imap {
        let mut i = Imap {
            uid_validity,
            input: Vec::new(),
            literal_ack: 0,
            out: Vec::new(),
            events: VecDeque::new(),
            state: State::NotAuth,
            wait: Wait::Nothing,
            user: None,
            msgs: Vec::new(),
            uid_next: 1,
            s,
        };
        let caps = i.capabilities();
        i.line(&format!(
            "* OK [CAPABILITY {caps}] qtc {} IMAP4rev1 ready",
            i.s.version
        ));
        i
    }

    fn line(&mut self, l: &str) {
        self.out.extend_from_slice(l.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    fn capabilities(&self) -> String {
        let mut c = vec![
            "IMAP4rev1",
            "IDLE",
            "LITERAL+",
            "UNSELECT",
            "ID",
            "NAMESPACE",
        ];
        if self.s.starttls {
            c.push("STARTTLS");
        }
        if self.user.is_none() {
            c.push(if self.s.plain_auth {
                "AUTH=PLAIN"
            } else {
                "LOGINDISABLED"
            });
        }
        c.join(" ")
    }

    fn run(&mut self) {
        while matches!(self.wait, Wait::Nothing | Wait::AuthData(_) | Wait::Idle(_))
            && self.state != State::Logout
        {
            let progressed = match &self.wait {
                Wait::AuthData(_) => self.auth_data(),
                Wait::Idle(_) => self.idle_done(),
                _ => self.next_command(),
            };
            if !progressed {
                return;
            }
        }
    }

    /// Parses and runs one command; false when more input is needed.
    fn next_command(&mut self) -> bool {
        let input = std::mem::take(&mut self.input);
        let result = CommandCodec::default().decode(&input);
        match result {
            Ok((rest, cmd)) => {
                let used = input.len() - rest.len();
                self.literal_ack = 0;
                self.command(cmd);
                self.input = input[used..].to_vec();
                true
            }
            Err(CommandDecodeError::Incomplete) => {
                self.input = input;
                if self.input.len() > MAX_COMMAND {
                    self.input.clear();
                    self.line("* BAD command too long");
                }
                false
            }
            Err(CommandDecodeError::LiteralFound { tag, length, mode }) => {
                let tag = tag.inner().to_string();
                if length as usize > MAX_COMMAND {
                    self.input.clear();
                    self.line(&format!("{tag} BAD literal too long"));
                    return false;
                }
                if mode == LiteralMode::Sync && self.literal_ack != input.len() {
                    self.literal_ack = input.len();
                    self.line("+ go ahead");
                }
                self.input = input;
                false
            }
            Err(CommandDecodeError::Failed) => {
                let end = input
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(input.len(), |p| p + 1);
                let tag = input[..end].split(|&b| b == b' ').next().unwrap_or(b"*");
                let tag = String::from_utf8_lossy(tag).trim().to_string();
                self.line(&format!(
                    "{} BAD syntax error",
                    if tag.is_empty() { "*" } else { &tag }
                ));
                self.input = input[end..].to_vec();
                true
            }
        }
    }

    fn command(&mut self, cmd: Command<'_>) {
        let tag = cmd.tag.inner().to_string();
        match (self.state, cmd.body) {
            (_, CommandBody::Capability) => {
                let caps = self.capabilities();
                self.line(&format!("* CAPABILITY {caps}"));
                self.line(&format!("{tag} OK CAPABILITY completed"));
            }
            (_, CommandBody::Logout) => {
                self.line("* BYE 73");
                self.line(&format!("{tag} OK LOGOUT completed"));
                self.state = State::Logout;
                self.events.push_back(Event::Close);
            }
            (_, CommandBody::Noop) | (_, CommandBody::Check) => {
                self.refresh(Some(tag), "NOOP completed")
            }
            (_, CommandBody::Id { .. }) => {
                self.line("* ID (\"name\" \"qtc\")");
                self.line(&format!("{tag} OK ID completed"));
            }
            (State::NotAuth, body) => self.not_authenticated(tag, body),
            (_, CommandBody::Namespace) => {
                self.line("* NAMESPACE ((\"\" \"/\")) NIL NIL");
                self.line(&format!("{tag} OK NAMESPACE completed"));
            }
            (
                _,
                CommandBody::List {
                    mailbox_wildcard, ..
                },
            ) => self.list(&tag, "LIST", &mailbox_wildcard),
            (
                _,
                CommandBody::Lsub {
                    mailbox_wildcard, ..
                },
            ) => self.list(&tag, "LSUB", &mailbox_wildcard),
            (_, CommandBody::Select { mailbox, .. }) => self.select(tag, &mailbox, false),
            (_, CommandBody::Examine { mailbox, .. }) => self.select(tag, &mailbox, true),
            (
                _,
                CommandBody::Status {
                    mailbox,
                    item_names,
                },
            ) => {
                let items = format!("{item_names:?}").to_ascii_uppercase();
                self.status(tag, &mailbox, items)
            }
            (_, CommandBody::Subscribe { .. })
            | (_, CommandBody::Unsubscribe { .. })
            | (_, CommandBody::Enable { .. }) => self.line(&format!("{tag} OK done")),
            (State::Selected { read_only }, body) => self.selected(tag, read_only, body),
            (_, _) => self.line(&format!(
                "{tag} NO [CANNOT] not here: the one mailbox is INBOX (bulletins are on NNTP)"
            )),
        }
    }

    fn not_authenticated(&mut self, tag: String, body: CommandBody<'_>) {
        match body {
            CommandBody::StartTLS if self.s.starttls => {
                self.line(&format!("{tag} OK begin TLS negotiation now"));
                self.input.clear();
                self.wait = Wait::Tls;
                self.events.push_back(Event::StartTls);
            }
            CommandBody::Login { .. } | CommandBody::Authenticate { .. } if !self.s.plain_auth => {
                let why = self.s.clear_password_refused("STARTTLS");
                self.line(&format!("{tag} NO [PRIVACYREQUIRED] {why}"))
            }
            CommandBody::Login { username, password } => {
                let call = String::from_utf8_lossy(username.as_ref()).into_owned();
                let password = String::from_utf8_lossy(password.declassify().as_ref()).into_owned();
                self.login(tag, &call, password);
            }
            CommandBody::Authenticate {
                mechanism,
                initial_response,
            } => {
                if !format!("{mechanism}").eq_ignore_ascii_case("PLAIN") {
                    return self.line(&format!("{tag} NO [CANNOT] AUTHENTICATE PLAIN only"));
                }
                match initial_response {
                    Some(data) => self.plain(tag, data.declassify()),
                    None => {
                        self.line("+ ");
                        self.wait = Wait::AuthData(tag);
                    }
                }
            }
            _ => self.line(&format!("{tag} BAD log in first")),
        }
    }

    fn login(&mut self, tag: String, user: &str, password: String) {
        let call = user
            .split('@')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_uppercase();
        self.wait = Wait::Login(tag);
        self.events.push_back(Event::Login { call, password });
    }

    fn plain(&mut self, tag: String, data: &[u8]) {
        match crate::smtp::split_plain(data) {
            Some((user, pass)) => self.login(tag, &user, pass),
            None => self.line(&format!("{tag} BAD bad AUTHENTICATE PLAIN data")),
        }
    }

    /// The client's AUTHENTICATE data line; false when more input is needed.
    fn auth_data(&mut self) -> bool {
        let Some(nl) = self.input.iter().position(|&b| b == b'\n') else {
            return false;
        };
        let line: Vec<u8> = self.input.drain(..=nl).collect();
        let Wait::AuthData(tag) = std::mem::replace(&mut self.wait, Wait::Nothing) else {
            return true;
        };
        let line = line.trim_ascii();
        if line == b"*" {
            self.line(&format!("{tag} BAD AUTHENTICATE cancelled"));
            return true;
        }
        match base64::engine::general_purpose::STANDARD.decode(line) {
            Ok(data) => self.plain(tag, &data),
            Err(_) => self.line(&format!("{tag} BAD bad base64")),
        }
        true
    }

    fn list(&mut self, tag: &str, what: &str, pattern: &ListMailbox<'_>) {
        let p = match pattern {
            ListMailbox::Token(t) => String::from_utf8_lossy(t.as_ref()).into_owned(),
            ListMailbox::String(s) => String::from_utf8_lossy(s.as_ref()).into_owned(),
        };
        if p.is_empty() {
            self.line(&format!("* {what} (\\Noselect) \"/\" \"\""));
        } else if wildmat(&p.to_ascii_uppercase(), "INBOX") {
            self.line(&format!("* {what} (\\HasNoChildren) \"/\" INBOX"));
        }
        self.line(&format!("{tag} OK {what} completed"));
    }

    fn select(&mut self, tag: String, mailbox: &Mailbox<'_>, read_only: bool) {
        self.state = State::Auth;
        if !is_inbox(mailbox) {
            return self.line(&format!(
                "{tag} NO [NONEXISTENT] only INBOX here (bulletins are on NNTP)"
            ));
        }
        self.ask_mailbox(MailboxFor::Select { tag, read_only }, 0);
    }

    fn status(&mut self, tag: String, mailbox: &Mailbox<'_>, items: String) {
        if !is_inbox(mailbox) {
            return self.line(&format!("{tag} NO [NONEXISTENT] only INBOX here"));
        }
        self.ask_mailbox(MailboxFor::Status { tag, items }, u64::MAX);
    }

    fn ask_mailbox(&mut self, why: MailboxFor, sized_after: u64) {
        let call = self.user.clone().unwrap_or_default();
        self.wait = Wait::Mailbox(why);
        self.events
            .push_back(Event::Store(Request::Mailbox { call, sized_after }));
    }

    /// Asks for the mailbox again and tells the client what changed (NOOP, IDLE).
    fn refresh(&mut self, tag: Option<String>, text: &str) {
        if !matches!(self.state, State::Selected { .. }) {
            if let Some(tag) = tag {
                self.line(&format!("{tag} OK {text}"));
            }
            return;
        }
        let after = self.msgs.last().map_or(0, |m| m.entry.number);
        self.ask_mailbox(
            MailboxFor::Refresh {
                tag,
                text: text.to_string(),
            },
            after,
        );
    }
}

fn is_inbox(m: &Mailbox<'_>) -> bool {
    match m {
        Mailbox::Inbox => true,
        Mailbox::Other(o) => String::from_utf8_lossy(o.as_ref()).eq_ignore_ascii_case("INBOX"),
    }
}

/// `*` and `%` patterns (LIST).
fn wildmat(pattern: &str, name: &str) -> bool {
    match pattern.chars().next() {
        None => name.is_empty(),
        Some('*') | Some('%') => (0..=name.len()).any(|i| wildmat(&pattern[1..], &name[i..])),
        Some(c) => name.starts_with(c) && wildmat(&pattern[c.len_utf8()..], &name[c.len_utf8()..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(i: &mut Imap, input: &[u8]) -> String {
        i.handle_input(input);
        let mut out = Vec::new();
        i.take_output(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn entry(n: u64, seen: bool) -> Entry {
        Entry {
            number: n,
            seen,
            size: 100,
            created: 1_796_214_665,
            from: "N0USR".into(),
            subject: b"hello".to_vec(),
            bid: format!("{n}_N0CALL"),
        }
    }

    #[test]
    fn login_select_fetch_store_expunge_idle() {
        let mut i = Imap::new(crate::addr::tests::settings(), 42);
        assert!(drive(&mut i, b"").contains("AUTH=PLAIN"));
        drive(&mut i, b"a LOGIN n0oth {1}\r\n");
        assert!(drive(&mut i, b"x\r\n").is_empty());
        assert_eq!(
            i.poll_event(),
            Some(Event::Login {
                call: "N0OTH".into(),
                password: "x".into()
            })
        );
        i.login_done(Ok("N0OTH".into()));
        assert!(drive(&mut i, b"b SELECT INBOX\r\n").contains("a OK"));
        assert!(matches!(
            i.poll_event(),
            Some(Event::Store(Request::Mailbox { .. }))
        ));
        i.answered(Ok(Reply::Mailbox(vec![entry(3, true), entry(8, false)])));
        let sel = drive(&mut i, b"c UID FETCH 8 (FLAGS BODY[])\r\n");
        assert!(
            sel.contains("* 2 EXISTS")
                && sel.contains("[UIDVALIDITY 42]")
                && sel.contains("[UNSEEN 2]"),
            "{sel}"
        );
        let Some(Event::Store(Request::Render { number: 8, .. })) = i.poll_event() else {
            panic!()
        };
        let r = crate::render::render(&crate::render::tests::message(b"hi\r\n"), &[], &i.s);
        i.answered(Ok(Reply::Rendered(Some(Box::new(r)))));
        let f = drive(&mut i, b"");
        assert!(
            f.starts_with("* 2 FETCH (UID 8 FLAGS (\\Seen) BODY[] {"),
            "{f}"
        );
        assert!(matches!(
            i.poll_event(),
            Some(Event::Store(Request::Seen {
                number: 8,
                seen: true,
                ..
            }))
        ));
        i.answered(Ok(Reply::Done));
        assert!(drive(&mut i, b"").contains("c OK UID FETCH"));
        assert!(drive(&mut i, b"d SEARCH UNSEEN\r\n").contains("* SEARCH\r\n"));
        drive(&mut i, b"e STORE 1 +FLAGS (\\Deleted)\r\nf EXPUNGE\r\n");
        assert!(matches!(
            i.poll_event(),
            Some(Event::Store(Request::Kill { number: 3, .. }))
        ));
        i.answered(Ok(Reply::Killed(true)));
        assert!(drive(&mut i, b"").contains("* 1 EXPUNGE\r\nf OK EXPUNGE"));
        assert!(drive(&mut i, b"g IDLE\r\n").starts_with("+ idling"));
        assert_eq!(i.poll_event(), Some(Event::Watch(true)));
        i.changed();
        assert!(matches!(
            i.poll_event(),
            Some(Event::Store(Request::Mailbox { .. }))
        ));
        i.answered(Ok(Reply::Mailbox(vec![entry(8, true), entry(9, false)])));
        assert!(drive(&mut i, b"DONE\r\n").contains("* 2 EXISTS\r\ng OK IDLE"));
        assert_eq!(i.poll_event(), Some(Event::Watch(false)));
    }
}
