//! The mail sessions' store work, each request typed with its answer (the shape of qtc-bbs's,
//! from [`qtc_mail::request`]): a core hands out a [`Request`] that carries what its command
//! does with the answer, so the compiler pairs them. The queries run against a [`MailStore`]:
//! the daemon's (SQLite, on its readers or its writer, as the variant says) or
//! [`crate::memory::MemoryMail`] in tests and fuzz targets.
//!
//! A new kind of store work (an IMAP folder's listing, say) is a query here and, if the store
//! must answer something new, a [`MailStore`] method: the daemon's `mail/store.rs` and the
//! memory store implement it.

use qtc_callsign::Callsign;
use qtc_mail::request::{self, Query, StoreKind, Then};
pub use qtc_mail::{Attachment, Thread};
use qtc_mail::{Message, MessageHeader, MsgStatus, MsgType, NewMessage, StoreError};

use crate::addr::Dest;
use crate::folder::{Folder, FolderMark, FolderMessage};
use crate::render::Rendered;
use crate::Settings;

/// The store the mail sessions' queries run against.
pub enum MailKind {}

impl StoreKind for MailKind {
    type Store<'a> = dyn MailStore + 'a;
}

/// The answer to a request of session `C`, for [`crate::Core::answered`].
pub type Reply<C> = request::Reply<C>;

/// A query of session `C` with its answer's way back.
pub type Job<C> = request::Job<C, MailKind>;

/// A store request from session `C`: run it where its variant says.
#[derive(Debug)]
pub enum Request<C> {
    /// A query: any read-only connection.
    Read(Job<C>),
    /// A write (or a question only the writer can answer): the one writer.
    Write(Job<C>),
}

impl<C: 'static> Request<C> {
    pub(crate) fn new<Q: Query<MailKind>>(query: Q, then: Then<C, Q::Answer>) -> Request<C> {
        let job = Job::new(query, then, true);
        match job.writes() {
            true => Request::Write(job),
            false => Request::Read(job),
        }
    }

    /// Runs it against `store` in place (tests, fuzzing): what the daemon does on its threads.
    pub fn run(self, store: &mut dyn MailStore) -> Reply<C> {
        match self {
            Request::Read(job) | Request::Write(job) => job.run(store),
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
    /// The user answered it (IMAP `\Answered`, kept per user).
    pub answered: bool,
    /// The size of its RFC 5322 form in bytes (0 when not asked for, see [`Mailbox`]).
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

impl Entry {
    /// An INBOX entry from a listing's header (its status as `call` sees it), size 0.
    pub fn of(h: MessageHeader, answered: bool) -> Entry {
        Entry {
            number: h.number,
            seen: h.status != MsgStatus::New,
            answered,
            size: 0,
            created: h.created,
            from: h.from,
            subject: h.subject,
            bid: h.bid,
        }
    }
}

impl Entry {
    /// A message kept in a user's folder: UID `uid`, `size` bytes.
    pub fn kept(uid: u64, size: u64, m: FolderMessage) -> Entry {
        Entry {
            number: uid,
            seen: m.seen,
            answered: m.answered,
            size,
            created: m.created,
            from: m.from,
            subject: m.subject,
            bid: String::new(),
        }
    }
}

/// A whole stored message with what mail clients keep of it beyond the BBS's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// The message.
    pub message: Message,
    /// Its attachments, in order.
    pub files: Vec<Attachment>,
    /// What it answers.
    pub thread: Thread,
}

/// A message a client submitted, checked and ready to store: one copy for each destination,
/// stored together or not at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The sender: the logged-in call.
    pub from: Callsign,
    /// Where its copies go, each once.
    pub dests: Vec<Dest>,
    /// Subject bytes.
    pub subject: Vec<u8>,
    /// The text, CR LF line ends.
    pub body: Vec<u8>,
    /// Its attachments.
    pub files: Vec<Attachment>,
    /// What it answers.
    pub thread: Thread,
}

impl Submission {
    /// The BBS messages it makes, one per destination, in order.
    pub fn messages(&self) -> Vec<NewMessage> {
        self.dests
            .iter()
            .map(|d| NewMessage {
                kind: d.kind,
                status: MsgStatus::New,
                to: d.to.clone(),
                at: d.at.clone(),
                from: self.from.to_string(),
                bid: None,
                subject: self.subject.clone(),
                rlines: Vec::new(),
                body: self.body.clone(),
            })
            .collect()
    }
}

/// Where personal mail to an address would go from here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// It stays here (a local user, or a Winlink station collecting here).
    Here,
    /// It is queued for this partner.
    Via(Callsign),
    /// No partner takes it: it would wait here for ever.
    Nowhere,
}

impl Route {
    /// Where the partners' routes (`targets`, in order) send it: the first of them; else here
    /// when its `@` is this BBS (`local`); else nowhere.
    pub fn of(targets: Vec<Callsign>, local: bool) -> Route {
        match targets.into_iter().next() {
            Some(p) => Route::Via(p),
            None if local => Route::Here,
            None => Route::Nowhere,
        }
    }
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
    /// Body lines.
    pub lines: u64,
}

/// What the mail sessions need of a store. Calls are synchronous: the daemon makes them on its
/// store thread or its read-only connections.
pub trait MailStore {
    /// `call`'s personal mail (addressed to them or a copy to them, neither killed nor held),
    /// oldest first, the newest `max` at most; sizes are 0.
    fn mailbox(&mut self, call: Callsign, max: usize) -> Result<Vec<Entry>, StoreError>;
    /// A whole message with its attachments and thread (killed and held ones too).
    fn stored(&mut self, number: u64) -> Result<Option<Stored>, StoreError>;
    /// Sets or clears `call`'s read mark (the one `R` sets).
    fn set_seen(&mut self, number: u64, call: Callsign, seen: bool) -> Result<(), StoreError>;
    /// Sets or clears `call`'s `\Answered` mark.
    fn set_answered(&mut self, number: u64, call: Callsign, on: bool) -> Result<(), StoreError>;
    /// Kills a message as `K` would for `call` (not a sysop here); true when killed now.
    fn kill(&mut self, number: u64, call: Callsign) -> Result<bool, StoreError>;
    /// Whether `call` may send `copies` messages now (the per-user allowances; the sysop and
    /// BBS accounts are exempt): `Err(StoreError::OverLimit)` when not.
    fn may_send(&mut self, call: Callsign, copies: usize) -> Result<(), StoreError>;
    /// Where personal mail to `dest` would go.
    fn route(&mut self, dest: &Dest) -> Result<Route, StoreError>;
    /// Stores every copy of a submission in one transaction, within the sender's allowances
    /// and the store's room, under the hold/reject rules: each copy's number and BID, or
    /// nothing stored.
    fn submit(&mut self, sub: &Submission) -> Result<Vec<(u64, String)>, StoreError>;
    /// One bulletin area with its counts; `None` when it holds nothing.
    fn group(&mut self, category: &str, at: &str) -> Result<Option<GroupInfo>, StoreError>;
    /// Every bulletin area holding bulletins, with its counts.
    fn groups(&mut self) -> Result<Vec<GroupInfo>, StoreError>;
    /// The numbers of one area's bulletins in `from..=to`, oldest first, at most `limit`.
    fn numbers(
        &mut self,
        category: &str,
        at: &str,
        range: (u64, u64),
        limit: usize,
    ) -> Result<Vec<u64>, StoreError>;
    /// Overviews of one area's bulletins numbered `from..=to`, oldest first, at most `limit`.
    fn articles(
        &mut self,
        category: &str,
        at: &str,
        range: (u64, u64),
        limit: usize,
    ) -> Result<Vec<Article>, StoreError>;

    /// `call`'s view of the newest `max` bulletins addressed to `category` (any `@`),
    /// neither killed nor held, oldest first: seen is their read mark; sizes are 0.
    fn bulletins(
        &mut self,
        call: Callsign,
        category: &str,
        max: usize,
    ) -> Result<Vec<Entry>, StoreError>;
    /// `call`'s own folders, by name.
    fn folders(&mut self, call: Callsign) -> Result<Vec<Folder>, StoreError>;
    /// Makes folder `name` of `call` (not there yet: the caller checked).
    fn create_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError>;
    /// Deletes `call`'s folder `name` with what it holds.
    fn delete_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError>;
    /// Renames `call`'s folder `from` to `to` (free: the caller checked); it keeps its
    /// UIDVALIDITY and messages.
    fn rename_folder(&mut self, call: Callsign, from: &str, to: &str) -> Result<(), StoreError>;
    /// The newest `max` messages of `call`'s folder `name`, oldest first, with their sizes
    /// (UIDs as numbers, `bid` empty).
    fn folder_entries(
        &mut self,
        call: Callsign,
        name: &str,
        max: usize,
    ) -> Result<Vec<Entry>, StoreError>;
    /// The bytes of message `uid` of `call`'s folder `name`.
    fn folder_text(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
    ) -> Result<Option<Vec<u8>>, StoreError>;
    /// Keeps `copies` in `call`'s folder `name` (there: the caller checked), all or none
    /// (a full store): their UIDs.
    fn keep_copies(
        &mut self,
        call: Callsign,
        name: &str,
        copies: &[FolderMessage],
    ) -> Result<Vec<u64>, StoreError>;
    /// Sets or clears a mark of message `uid` of `call`'s folder `name`.
    fn set_folder_mark(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
        mark: FolderMark,
        on: bool,
    ) -> Result<(), StoreError>;
    /// Deletes message `uid` of `call`'s folder `name`; true when it was there.
    fn expunge_copy(&mut self, call: Callsign, name: &str, uid: u64) -> Result<bool, StoreError>;
}

/// The most messages an INBOX or a POP3 drop shows: the newest.
pub const MAX_MAILBOX: usize = 1000;

/// The user's INBOX. Sizes are worked out (a render each) only for messages numbered above
/// `sized_after` (the others' are 0): a refresh asks only for new ones.
#[derive(Debug)]
pub struct Mailbox {
    pub(crate) call: Callsign,
    pub(crate) sized_after: u64,
    pub(crate) settings: Settings,
}

impl Query<MailKind> for Mailbox {
    type Answer = Vec<Entry>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Vec<Entry>, StoreError> {
        let mut entries = store.mailbox(self.call, MAX_MAILBOX)?;
        for e in entries.iter_mut().filter(|e| e.number > self.sized_after) {
            let r = readable(store, e.number, Some(self.call), &self.settings)?;
            e.size = r.map_or(0, |r| r.bytes.len() as u64);
        }
        Ok(entries)
    }
}

/// Message `number` in RFC 5322 form, if `reader` may read it (`None`: an anonymous news
/// reader, bulletins only).
#[derive(Debug)]
pub struct Render {
    pub(crate) number: u64,
    pub(crate) reader: Option<Callsign>,
    pub(crate) settings: Settings,
}

impl Query<MailKind> for Render {
    type Answer = Option<Box<Rendered>>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        let r = readable(store, self.number, self.reader, &self.settings)?;
        Ok(r.map(Box::new))
    }
}

/// Message `number` rendered if `reader` may read it as on the BBS: neither killed nor held,
/// and a bulletin, or personal mail from, to or copied to the reader.
pub(crate) fn readable(
    store: &mut dyn MailStore,
    number: u64,
    reader: Option<Callsign>,
    s: &Settings,
) -> Result<Option<Rendered>, StoreError> {
    let Some(stored) = store.stored(number)? else {
        return Ok(None);
    };
    let (m, h) = (&stored.message, &stored.message.header);
    let open = !matches!(h.status, MsgStatus::Killed | MsgStatus::Held);
    // The header's calls are the stored text.
    let mine = reader
        .map(|me| me.to_string())
        .is_some_and(|me| h.to == me || h.from == me || m.copies.contains(&me));
    if !open || (h.kind != MsgType::Bulletin && !mine) {
        return Ok(None);
    }
    Ok(Some(crate::render::render(&stored, s)))
}

/// Sets or clears `call`'s read mark (IMAP `\Seen`, POP3 RETR).
#[derive(Debug)]
pub struct Seen {
    pub(crate) number: u64,
    pub(crate) call: Callsign,
    pub(crate) seen: bool,
}

impl Query<MailKind> for Seen {
    type Answer = ();
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<(), StoreError> {
        store.set_seen(self.number, self.call, self.seen)
    }
}

/// Kills a message as `K` would (IMAP EXPUNGE, POP3 DELE): true when killed now.
#[derive(Debug)]
pub struct Kill {
    pub(crate) number: u64,
    pub(crate) call: Callsign,
}

impl Query<MailKind> for Kill {
    type Answer = bool;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<bool, StoreError> {
        store.kill(self.number, self.call)
    }
}

/// SMTP RCPT: may `from` send one more copy (their `copies`th) to `dest`, and where would it
/// go? On the writer: the partners' routes and the allowances' counts are the writer's.
#[derive(Debug)]
pub struct Recipient {
    pub(crate) from: Callsign,
    pub(crate) dest: Dest,
    pub(crate) copies: usize,
}

impl Query<MailKind> for Recipient {
    type Answer = Route;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<Route, StoreError> {
        store.may_send(self.from, self.copies)?;
        match self.dest.kind {
            // Bulletins are kept here and flooded; NTS traffic waits for whoever takes it,
            // as `ST` at the prompt.
            MsgType::Bulletin | MsgType::Traffic => Ok(Route::Here),
            MsgType::Personal => store.route(&self.dest),
        }
    }
}

/// Stores a submission's copies together.
#[derive(Debug)]
pub struct Submit(pub(crate) Box<Submission>);

impl Query<MailKind> for Submit {
    type Answer = Vec<(u64, String)>;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        store.submit(&self.0)
    }
}

/// One bulletin area (NNTP GROUP).
#[derive(Debug)]
pub struct Group {
    pub(crate) category: String,
    pub(crate) at: String,
}

impl Query<MailKind> for Group {
    type Answer = Option<GroupInfo>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        store.group(&self.category, &self.at)
    }
}

/// Every bulletin area (NNTP LIST).
#[derive(Debug)]
pub struct Groups;

impl Query<MailKind> for Groups {
    type Answer = Vec<GroupInfo>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        store.groups()
    }
}

/// The numbers of an area's bulletins (NNTP LISTGROUP).
#[derive(Debug)]
pub struct Numbers {
    pub(crate) category: String,
    pub(crate) at: String,
    pub(crate) range: (u64, u64),
    pub(crate) limit: usize,
}

impl Query<MailKind> for Numbers {
    type Answer = Vec<u64>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        store.numbers(&self.category, &self.at, self.range, self.limit)
    }
}

/// Overviews of an area's bulletins (NNTP OVER).
#[derive(Debug)]
pub struct Articles {
    pub(crate) category: String,
    pub(crate) at: String,
    pub(crate) range: (u64, u64),
    pub(crate) limit: usize,
}

impl Query<MailKind> for Articles {
    type Answer = Vec<Article>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MailStore) -> Result<Self::Answer, StoreError> {
        store.articles(&self.category, &self.at, self.range, self.limit)
    }
}
