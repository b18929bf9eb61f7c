//! What the four protocol cores share: their settings, the events and store requests they hand
//! out, and the answers they take.

use qtc_mail::{NewMessage, StoreError};

/// What every session needs to know of this BBS and of the connection.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The station's callsign (upper case).
    pub call: String,
    /// The station's hierarchical address.
    pub haddr: String,
    /// The mail domain of local users (`CALL@domain`); the callsign when none is configured.
    pub domain: String,
    /// The largest message body taken (`[limits] max_message`).
    pub max_message: usize,
    /// A client may send a password in clear on this connection (loopback, after STARTTLS,
    /// or the sysop allows it).
    pub plain_auth: bool,
    /// STARTTLS is offered (`[tls]` is set and the connection is not TLS yet).
    pub starttls: bool,
    /// The software and version named in greetings.
    pub version: String,
}

impl Settings {
    /// Whether `domain` names this BBS: its callsign, its hierarchical address or the mail
    /// domain (any case).
    pub fn is_ours(&self, domain: &str) -> bool {
        [&self.call, &self.haddr, &self.domain]
            .iter()
            .any(|d| d.eq_ignore_ascii_case(domain))
    }

    /// Why a password is refused on this connection (passwords in clear are not taken):
    /// `upgrade`, the protocol's word for STARTTLS, when it is offered; otherwise what the
    /// user can do, not a TLS that is not there.
    pub fn clear_password_refused(&self, upgrade: &str) -> String {
        match self.starttls {
            true => format!("{upgrade} first: no passwords in clear here"),
            false => "no passwords in clear from the network here, and this BBS has no TLS: \
                      log in on the BBS's own host, or ask its sysop for TLS"
                .into(),
        }
    }
}

/// One message of a user's INBOX (their personal mail) as POP3 and IMAP see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The BBS message number: the IMAP UID.
    pub number: u64,
    /// The user's own read mark.
    pub seen: bool,
    /// The size of its RFC 5322 form in bytes (0 when not asked for, see [`Request::Mailbox`]).
    pub size: u64,
    /// When it was stored here, Unix seconds (IMAP INTERNALDATE).
    pub created: i64,
    /// Its sender's callsign.
    pub from: String,
    /// Its subject bytes.
    pub subject: Vec<u8>,
    /// Its BID: the POP3 UIDL.
    pub bid: String,
}

/// A message a client submitted, checked and ready to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The message (its sender is the logged-in call).
    pub msg: NewMessage,
    /// Its attachments: file name and bytes (B2F `File:` parts).
    pub files: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A newsgroup: one bulletin area (category and `@`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInfo {
    /// The bulletin category (`to`), upper case.
    pub category: String,
    /// The `@` field, upper case (may be empty).
    pub at: String,
    /// Bulletins in it (neither killed nor held).
    pub count: u64,
    /// Its lowest and highest message number (0, 0 when empty).
    pub low: u64,
    /// See `low`.
    pub high: u64,
}

/// One article's overview (NNTP OVER).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Article {
    /// The message number: the article number in every group.
    pub number: u64,
    /// Sender's callsign.
    pub from: String,
    /// Subject bytes.
    pub subject: Vec<u8>,
    /// Stored at, Unix seconds.
    pub created: i64,
    /// The BID: its Message-ID is `<BID@domain>`.
    pub bid: String,
    /// Body size in bytes.
    pub size: u64,
}

/// A store operation a session needs. The daemon runs reads on its readers and writes on the
/// store thread, as for the BBS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The user's personal mail (addressed to them or a copy to them, neither killed nor
    /// held), oldest first, the newest [`MAX_MAILBOX`] at most. Sizes are worked out only for
    /// messages numbered above `sized_after` (the others' are 0): a refresh asks only for new
    /// ones.
    Mailbox {
        /// The user.
        call: String,
        /// Sizes for numbers above this.
        sized_after: u64,
    },
    /// Message `number` in RFC 5322 form, if `call` may read it (`None`: anyone may read
    /// bulletins).
    Render {
        /// The message.
        number: u64,
        /// The reader; `None` for an anonymous news reader (bulletins only).
        call: Option<String>,
    },
    /// Sets or clears `call`'s read mark on a message (IMAP `\Seen`, as `R` sets it).
    Seen {
        /// The message.
        number: u64,
        /// Whose mark.
        call: String,
        /// Read or unread.
        seen: bool,
    },
    /// Kills a message as `K` would for `call` (IMAP EXPUNGE, POP3 DELE).
    Kill {
        /// The message.
        number: u64,
        /// Who asks.
        call: String,
    },
    /// Stores a submitted message, within the user's allowances.
    Submit(Box<Submission>),
    /// Every bulletin area with its counts.
    Groups,
    /// Overviews of the bulletins of one area numbered `from..=to`, oldest first, at most
    /// `limit`.
    Articles {
        /// The category.
        category: String,
        /// The `@` field.
        at: String,
        /// Lowest number.
        from: u64,
        /// Highest number.
        to: u64,
        /// At most this many.
        limit: usize,
    },
}

/// The most messages an INBOX or a POP3 drop shows: the newest.
pub const MAX_MAILBOX: usize = 1000;

/// The answer to a [`Request`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// For [`Request::Mailbox`].
    Mailbox(Vec<Entry>),
    /// For [`Request::Render`]: the message, or `None` when it is gone or not the reader's.
    Rendered(Option<Box<crate::render::Rendered>>),
    /// For [`Request::Kill`]: killed now (false: not theirs to kill, or gone).
    Killed(bool),
    /// For [`Request::Submit`]: its number and BID.
    Stored {
        /// Number.
        number: u64,
        /// BID.
        bid: String,
    },
    /// For [`Request::Groups`].
    Groups(Vec<GroupInfo>),
    /// For [`Request::Articles`].
    Articles(Vec<Article>),
    /// For the other writes.
    Done,
}

/// Why a login was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginRefused {
    /// Wrong callsign or password.
    Wrong,
    /// Not now (every place taken, the account locked, too many logins at once): the line
    /// to show.
    Full(String),
    /// The store or the password checks are not available.
    Unavailable,
}

/// What a session asks of the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Check this login (counted by the throttle, password checked, a place taken), then call
    /// [`Core::login_done`].
    Login {
        /// The callsign typed, upper case.
        call: String,
        /// The password.
        password: String,
    },
    /// Run this, then call [`Core::answered`].
    Store(Request),
    /// Start TLS on the connection after the output so far, then call [`Core::tls_started`].
    StartTls,
    /// Call [`Core::changed`] whenever the store changes (true), or stop (false): IMAP IDLE.
    Watch(bool),
    /// Close the connection once the output is written.
    Close,
}

/// A protocol session, as the daemon drives it.
pub trait Core {
    /// Bytes from the client.
    fn handle_input(&mut self, bytes: &[u8]);
    /// Appends what is to be sent to `out`.
    fn take_output(&mut self, out: &mut Vec<u8>);
    /// The next thing the session asks for.
    fn poll_event(&mut self) -> Option<Event>;
    /// The answer to [`Event::Login`]: the user's callsign, or why not.
    fn login_done(&mut self, result: Result<String, LoginRefused>);
    /// The answer to [`Event::Store`].
    fn answered(&mut self, reply: Result<Reply, StoreError>);
    /// TLS now runs on the connection (after [`Event::StartTls`]).
    fn tls_started(&mut self);
    /// The store changed (while watching).
    fn changed(&mut self);
    /// Whether the session takes input now (false while it waits for an answer).
    fn wants_input(&self) -> bool;
}
