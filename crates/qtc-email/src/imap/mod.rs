//! IMAP4rev1 (RFC 3501) with IDLE (RFC 2177), MOVE (RFC 6851), SPECIAL-USE (RFC 6154) and
//! UIDPLUS's response codes. INBOX is the user's personal mail: `\Seen` is the user's own read
//! mark (the one `LN`/`RN` use); `\Answered` is kept per user; `\Deleted` then EXPUNGE (or
//! CLOSE) kills, as `K`; a UID is the BBS message number, so UIDs never change, and
//! UIDVALIDITY is a number the store draws once when it is created. Beside it, each user's own
//! folders (their copies, never BBS messages) and `Bulletins/CAT`, one per bulletin category,
//! where `\Seen` is the user's BBS read mark and nothing else changes a bulletin
//! ([`crate::folder`]).
//!
//! Commands are parsed by `imap-codec` (literals, sequence sets, FETCH and SEARCH grammar);
//! responses are written here, their texts plain (fetchmail reads words such as EXPUNGE in
//! any untagged line). IDLE waits for [`Core::changed`], which the daemon calls when the store
//! has changed: no polling.
//!
//! The selected mailbox is a list of [`Msg`] whatever it is made of: each place is a query
//! filling it (`mailbox.rs`, [`crate::folder::List`]), the commands of the selected state
//! stay as they are; what a place refuses is said where the command is.

pub(crate) mod fetch;
mod folders;
mod mailbox;
mod search;
mod selected;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_folders;
#[cfg(test)]
mod tests_structure;

use base64::Engine as _;
use imap_codec::decode::{CommandDecodeError, Decoder, IdleDoneDecodeError};
use imap_codec::imap_types::command::{Command, CommandBody};
use imap_codec::imap_types::core::LiteralMode;
use imap_codec::imap_types::extensions::binary::LiteralOrLiteral8;
use imap_codec::imap_types::flag::{Flag, StoreType};
use imap_codec::imap_types::mailbox::{ListMailbox, Mailbox};
use imap_codec::imap_types::search::SearchKey;
use imap_codec::imap_types::sequence::SequenceSet;
use imap_codec::{CommandCodec, IdleDoneCodec};
use qtc_callsign::Callsign;

use crate::core::{account, Exchange};
use crate::folder::{Change, Place};
use crate::store::Entry;
use crate::{Core, LoginRefused, Settings};

/// The most bytes a command may hold, literals included (an APPEND's: [`folders::MAX_APPEND`]).
const MAX_COMMAND: usize = 64 * 1024;

/// A message of the selected mailbox.
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
}

/// What the client's next bytes are.
#[derive(Debug)]
enum Input {
    Commands,
    /// AUTHENTICATE PLAIN: the client's data line for this tag.
    AuthData(String),
    /// IDLE: the client's DONE, for this tag.
    Idle(String),
}

/// One IMAP session.
pub struct Imap {
    x: Exchange<Imap>,
    s: Settings,
    uid_validity: u32,
    input: Vec<u8>,
    /// The buffer length at which a literal was last agreed to with `+`.
    literal_ack: usize,
    state: State,
    expecting: Input,
    /// The tag of the login being checked.
    login_tag: String,
    /// The logged-in call: set in the states after the login.
    user: Option<Callsign>,
    /// Where the selected mailbox's messages come from.
    place: Place,
    /// The selected mailbox's UIDVALIDITY.
    validity: u32,
    msgs: Vec<Msg>,
    uid_next: u64,
    /// A change was heard while the mailbox was being read again: read it once more.
    changed_meanwhile: bool,
}

impl Imap {
    /// A session; `uid_validity` is the store's. The greeting is the first output.
    pub fn new(s: Settings, uid_validity: u32) -> Imap {
        let mut i = Imap {
            x: Exchange::new(),
            uid_validity,
            input: Vec::new(),
            literal_ack: 0,
            state: State::NotAuth,
            expecting: Input::Commands,
            login_tag: String::new(),
            user: None,
            place: Place::Inbox,
            validity: uid_validity,
            msgs: Vec::new(),
            uid_next: 1,
            changed_meanwhile: false,
            s,
        };
        let caps = i.capabilities();
        let hello = format!("* OK [CAPABILITY {caps}] qtc {} ready", i.s.version);
        i.x.say(&hello);
        i
    }

    fn capabilities(&self) -> String {
        let mut c = vec![
            "IMAP4rev1",
            "IDLE",
            "LITERAL+",
            "UNSELECT",
            "ID",
            "NAMESPACE",
            "MOVE",
            "SPECIAL-USE",
            "UIDPLUS",
        ];
        if self.s.starttls {
            c.push("STARTTLS");
        }
        if self.state == State::NotAuth {
            c.push(if self.s.plain_auth {
                "AUTH=PLAIN"
            } else {
                "LOGINDISABLED"
            });
        }
        c.join(" ")
    }

    fn run(&mut self) {
        while !self.x.busy() {
            let progressed = match self.expecting {
                Input::AuthData(_) => self.auth_data(),
                Input::Idle(_) => self.idle_done(),
                Input::Commands => self.next_command(),
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
                if self.input.len() > literal_limit(&self.input).saturating_add(MAX_COMMAND) {
                    self.input.clear();
                    self.x.say("* BAD command too long");
                }
                false
            }
            Err(CommandDecodeError::LiteralFound { tag, length, mode }) => {
                let tag = tag.inner().to_string();
                if length as usize > literal_limit(&input) {
                    self.input.clear();
                    self.x.say(&format!("{tag} BAD literal too long"));
                    return false;
                }
                if mode == LiteralMode::Sync && self.literal_ack != input.len() {
                    self.literal_ack = input.len();
                    self.x.say("+ go ahead");
                }
                self.input = input;
                false
            }
            Err(CommandDecodeError::Failed) => {
                let end = line_end(&input);
                let tag = input[..end].split(|&b| b == b' ').next().unwrap_or(b"*");
                let tag = String::from_utf8_lossy(tag).trim().to_string();
                let tag = if tag.is_empty() { "*" } else { &tag };
                self.x.say(&format!("{tag} BAD syntax error"));
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
                self.x.say(&format!("* CAPABILITY {caps}"));
                self.x.say(&format!("{tag} OK CAPABILITY completed"));
            }
            (_, CommandBody::Logout) => {
                self.x.say("* BYE 73");
                self.x.say(&format!("{tag} OK LOGOUT completed"));
                self.x.close();
            }
            (_, CommandBody::Noop) | (_, CommandBody::Check) => {
                self.refresh(Some(tag), "NOOP completed")
            }
            (_, CommandBody::Id { .. }) => {
                self.x.say("* ID (\"name\" \"qtc\")");
                self.x.say(&format!("{tag} OK ID completed"));
            }
            (State::NotAuth, body) => self.not_authenticated(tag, body),
            (_, body) => self.authenticated(tag, body),
        }
    }

    /// The logged-in call, for a store request of the command tagged `tag`. Only the states
    /// after the login dispatch such commands ([`Imap::command`]); were one to come without
    /// it, it is refused as before a login.
    fn user_for(&mut self, tag: &str) -> Option<Callsign> {
        if self.user.is_none() {
            self.x.say(&format!("{tag} BAD log in first"));
        }
        self.user
    }

    fn authenticated(&mut self, tag: String, body: CommandBody<'_>) {
        match (self.state, body) {
            (_, CommandBody::Namespace) => {
                self.x.say("* NAMESPACE ((\"\" \"/\")) NIL NIL");
                self.x.say(&format!("{tag} OK NAMESPACE completed"));
            }
            (
                _,
                CommandBody::List {
                    reference,
                    mailbox_wildcard,
                },
            ) => self.list(
                tag,
                "LIST",
                &folders::name_of(&reference),
                &wildcard(&mailbox_wildcard),
            ),
            (
                _,
                CommandBody::Lsub {
                    reference,
                    mailbox_wildcard,
                },
            ) => self.list(
                tag,
                "LSUB",
                &folders::name_of(&reference),
                &wildcard(&mailbox_wildcard),
            ),
            (_, CommandBody::Create { mailbox }) => {
                self.change(tag, Change::Create(folders::name_of(&mailbox)), "CREATE")
            }
            (_, CommandBody::Delete { mailbox }) => {
                self.change(tag, Change::Delete(folders::name_of(&mailbox)), "DELETE")
            }
            (_, CommandBody::Rename { from, to }) => {
                let change = Change::Rename(folders::name_of(&from), folders::name_of(&to));
                self.change(tag, change, "RENAME")
            }
            (
                _,
                CommandBody::Append {
                    mailbox,
                    flags,
                    date,
                    message,
                },
            ) => {
                let bytes = match message {
                    LiteralOrLiteral8::Literal(l) => l.into_inner().into_owned(),
                    LiteralOrLiteral8::Literal8(l) => l.data.into_owned(),
                };
                self.append(tag, &mailbox, &flags, date.as_ref(), bytes)
            }
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
            | (_, CommandBody::Enable { .. }) => self.x.say(&format!("{tag} OK done")),
            (State::Selected { read_only }, body) => self.selected(tag, read_only, body),
            (_, _) => self.x.say(&format!("{tag} BAD select a mailbox first")),
        }
    }

    fn not_authenticated(&mut self, tag: String, body: CommandBody<'_>) {
        match body {
            CommandBody::StartTLS if self.s.starttls => {
                self.x.say(&format!("{tag} OK begin TLS negotiation now"));
                self.input.clear();
                self.x.start_tls();
            }
            CommandBody::Login { .. } | CommandBody::Authenticate { .. } if !self.s.plain_auth => {
                let why = self.s.clear_password_refused("STARTTLS");
                self.x.say(&format!("{tag} NO [PRIVACYREQUIRED] {why}"))
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
                    return self
                        .x
                        .say(&format!("{tag} NO [CANNOT] AUTHENTICATE PLAIN only"));
                }
                match initial_response {
                    Some(data) => self.plain(tag, data.declassify()),
                    None => {
                        self.x.say("+ ");
                        self.expecting = Input::AuthData(tag);
                    }
                }
            }
            _ => self.x.say(&format!("{tag} BAD log in first")),
        }
    }

    fn login(&mut self, tag: String, user: &str, password: String) {
        self.login_tag = tag;
        self.x.login(account(user), password);
    }

    fn plain(&mut self, tag: String, data: &[u8]) {
        match crate::smtp::parse::split_plain(data) {
            Some((user, pass)) => self.login(tag, &user, pass),
            None => self
                .x
                .say(&format!("{tag} BAD bad AUTHENTICATE PLAIN data")),
        }
    }

    /// The client's AUTHENTICATE data line; false when more input is needed.
    fn auth_data(&mut self) -> bool {
        let Some(nl) = self.input.iter().position(|&b| b == b'\n') else {
            return false;
        };
        let line: Vec<u8> = self.input.drain(..=nl).collect();
        let Input::AuthData(tag) = std::mem::replace(&mut self.expecting, Input::Commands) else {
            return true;
        };
        let line = line.trim_ascii();
        if line == b"*" {
            self.x.say(&format!("{tag} BAD AUTHENTICATE cancelled"));
            return true;
        }
        match base64::engine::general_purpose::STANDARD.decode(line) {
            Ok(data) => self.plain(tag, &data),
            Err(_) => self.x.say(&format!("{tag} BAD bad base64")),
        }
        true
    }
}

/// The end of the first line in `input` (after its LF), or its length.
fn line_end(input: &[u8]) -> usize {
    input
        .iter()
        .position(|&b| b == b'\n')
        .map_or(input.len(), |p| p + 1)
}

/// A LIST pattern's text.
fn wildcard(pattern: &ListMailbox<'_>) -> String {
    match pattern {
        ListMailbox::Token(t) => String::from_utf8_lossy(t.as_ref()).into_owned(),
        ListMailbox::String(s) => String::from_utf8_lossy(s.as_ref()).into_owned(),
    }
}

/// The largest literal the command in `input` may carry: an APPEND's message, else a few KB.
fn literal_limit(input: &[u8]) -> usize {
    let line = String::from_utf8_lossy(&input[..line_end(input)]).to_ascii_uppercase();
    match line.split(' ').nth(1) {
        Some("APPEND") => folders::MAX_APPEND,
        _ => MAX_COMMAND,
    }
}

/// Whether LIST's `pattern` names `name`: `*` matches anything, `%` anything but a level's
/// `/`; INBOX in any case.
fn wildmat(pattern: &str, name: &str) -> bool {
    if name == "INBOX" {
        return matches(&pattern.to_ascii_uppercase(), name);
    }
    matches(pattern, name)
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.chars().next() {
        None => name.is_empty(),
        Some('*') => (0..=name.len())
            .filter(|&i| name.is_char_boundary(i))
            .any(|i| matches(&pattern[1..], &name[i..])),
        Some('%') => {
            let level = name.find('/').unwrap_or(name.len());
            (0..=level)
                .filter(|&i| name.is_char_boundary(i))
                .any(|i| matches(&pattern[1..], &name[i..]))
        }
        Some(c) => name.starts_with(c) && matches(&pattern[c.len_utf8()..], &name[c.len_utf8()..]),
    }
}

impl Core for Imap {
    const STORE_LOST: &'static str = "* BYE the message store is not available";

    fn exchange(&self) -> &Exchange<Imap> {
        &self.x
    }

    fn exchange_mut(&mut self) -> &mut Exchange<Imap> {
        &mut self.x
    }

    fn handle_input(&mut self, bytes: &[u8]) {
        self.input.extend_from_slice(bytes);
        self.run();
    }

    fn logged_in(&mut self, result: Result<Callsign, LoginRefused>) {
        let tag = std::mem::take(&mut self.login_tag);
        match result {
            Ok(call) => {
                self.user = Some(call);
                self.state = State::Auth;
                let caps = self.capabilities();
                self.x
                    .say(&format!("{tag} OK [CAPABILITY {caps}] logged in"));
            }
            Err(LoginRefused::Wrong) => self.x.say(&format!(
                "{tag} NO [AUTHENTICATIONFAILED] wrong callsign or password"
            )),
            Err(LoginRefused::Full(why)) => self.x.say(&format!("{tag} NO [UNAVAILABLE] {why}")),
            Err(LoginRefused::Unavailable) => self
                .x
                .say(&format!("{tag} NO [UNAVAILABLE] try again later")),
        }
    }

    fn tls_running(&mut self) {
        self.s.tls_started();
    }

    fn changed(&mut self) {
        if let Input::Idle(_) = self.expecting {
            self.refresh_while_idle();
        }
    }

    fn resume(&mut self) {
        self.run();
    }
}
