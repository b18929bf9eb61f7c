//! The storage interface the BBS interpreter and the forwarding code use.

use qtc_callsign::Callsign;

use crate::message::{ListFilter, Message, MessageHeader, MsgStatus, MsgType, NewMessage};

/// A BBS user (a human or a forwarding partner).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// Callsign without SSID.
    pub call: Callsign,
    /// First name (`N` command).
    pub name: String,
    /// Home BBS (`NH` command), a hierarchical address or empty.
    pub home_bbs: String,
    /// May do everything.
    pub sysop: bool,
    /// Is a BBS: gets the SID and may forward to us.
    pub bbs: bool,
    /// Highest message number this user has listed with `L`.
    pub last_listed: u64,
    /// Lines per page the user chose with `OP n` (0: no paging); `None`: the port's default.
    pub page_len: Option<usize>,
}

/// What the login greeting tells a user: "You have `mine` messages, `new` new. Latest message
/// is `latest`".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GreetingCounts {
    /// Messages to the user (as addressee or copy), not killed; held ones only for a sysop.
    pub mine: u64,
    /// Of those, the ones not yet read.
    pub new: u64,
    /// The highest message number.
    pub latest: u64,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The BID is already known here (stored now or seen before).
    #[error("BID {0} is already known here")]
    DuplicateBid(String),
    /// A rule of this BBS refuses the message; holds a description of the rule.
    #[error("refused by the rule {0}")]
    Rejected(String),
    /// No such user.
    #[error("no user {0}")]
    NoSuchUser(String),
    /// The user exists already.
    #[error("user {0} exists already")]
    UserExists(String),
    /// The sender has used up their allowance (messages per hour, bytes per day); holds what
    /// to tell them.
    #[error("{0}")]
    OverLimit(String),
    /// The store is full (the disk, or the `[store] max_mb` quota): nothing was written.
    #[error("the message store is full")]
    Full,
    /// The database refused the operation (read-only, corrupt file...).
    #[error("message store: {0}")]
    Database(String),
}

/// Storage the interpreter works against (through `qtc_bbs::Request::run`). Calls are
/// synchronous: the daemon runs them on its store thread (writes) or its read-only connections
/// (queries), never on the async runtime.
pub trait MessageStore {
    /// Looks a user up by callsign (no SSID).
    fn user(&mut self, call: Callsign) -> Result<Option<User>, StoreError>;
    /// Sets `call`'s login password (`PW`).
    fn set_password(&mut self, call: Callsign, password: &str) -> Result<(), StoreError>;
    /// Saves the profile fields of a user (name, home BBS, last listed).
    fn update_user(&mut self, user: &User) -> Result<(), StoreError>;
    /// Stores a message and returns its number. `bbs_call` names this BBS for a generated BID.
    /// Refuses a known BID with [`StoreError::DuplicateBid`] and stores nothing then.
    fn insert_message(
        &mut self,
        msg: &NewMessage,
        bbs_call: Callsign,
        now: i64,
    ) -> Result<u64, StoreError>;
    /// A whole message by number (killed ones included).
    fn message(&mut self, number: u64) -> Result<Option<Message>, StoreError>;
    /// Headers matching the filter, newest (highest number) first, as BBS listings show them.
    fn list(&mut self, filter: &ListFilter) -> Result<Vec<MessageHeader>, StoreError>;
    /// Sets a message's status; false when there is no such message.
    fn set_status(&mut self, number: u64, status: MsgStatus) -> Result<bool, StoreError>;
    /// `reader` read message `number`: when they are its addressee or one of its other
    /// recipients, counts one more reading and marks their copy read (the addressee's is the
    /// message's status; each other recipient has their own mark); a bulletin gets the
    /// reader's own read mark. Nothing for anyone else.
    fn mark_read(&mut self, number: u64, reader: Callsign) -> Result<(), StoreError>;
    /// Message `number`'s status as `reader` sees it (their own read mark on a bulletin or a
    /// copy, as listings show it); `None` when there is no such message. The default is the
    /// message's own status.
    fn status_seen_by(
        &mut self,
        number: u64,
        reader: Callsign,
    ) -> Result<Option<MsgStatus>, StoreError> {
        let _ = reader;
        Ok(self.message_head(number)?.map(|m| m.header.status))
    }
    /// True when the BID has been seen here.
    fn bid_known(&mut self, bid: &str) -> Result<bool, StoreError>;
    /// Number of messages not killed, and the highest message number.
    fn counts(&mut self) -> Result<(u64, u64), StoreError>;
    /// The home BBS the white pages know for a callsign.
    fn home_bbs(&mut self, call: &str) -> Result<Option<String>, StoreError>;
    /// The greeting's counts for `call`; `sysop`: held mail counts too. The default lists the
    /// user's headers; a store should answer from an index or counters, as qtc-store does.
    fn greeting_counts(
        &mut self,
        call: Callsign,
        sysop: bool,
    ) -> Result<GreetingCounts, StoreError> {
        let mine = self.list(&ListFilter {
            to_or_copy: Some(call.to_string()),
            visible_to: (!sysop).then(|| call.to_string()),
            ..Default::default()
        })?;
        Ok(GreetingCounts {
            mine: mine.len() as u64,
            new: mine.iter().filter(|h| h.status == MsgStatus::New).count() as u64,
            latest: self.counts()?.1,
        })
    }
    /// Bulletin areas (`LC`): each addressee of bulletins neither killed nor held, with how
    /// many it has, in alphabetical order. The default lists every bulletin; a store should
    /// keep counts, as qtc-store does.
    fn categories(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        let bulletins = self.list(&ListFilter {
            kind: Some(MsgType::Bulletin),
            // Anyone's view: held mail is left out.
            visible_to: Some(String::new()),
            ..Default::default()
        })?;
        for h in bulletins {
            *counts.entry(h.to).or_default() += 1;
        }
        Ok(counts.into_iter().collect())
    }
    /// A message without its body (`body` empty): what `R` shows before the text, which it
    /// then reads with [`MessageStore::body_chunk`].
    fn message_head(&mut self, number: u64) -> Result<Option<Message>, StoreError> {
        Ok(self.message(number)?.map(|mut m| {
            m.body = Vec::new();
            m
        }))
    }
    /// Up to `len` bytes of message `number`'s body from byte `offset`; shorter (or empty) at
    /// its end and for a message that does not exist.
    fn body_chunk(&mut self, number: u64, offset: u64, len: usize) -> Result<Vec<u8>, StoreError> {
        let body = self.message(number)?.map(|m| m.body).unwrap_or_default();
        let from = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(body.len());
        Ok(body[from..body.len().min(from.saturating_add(len))].to_vec())
    }
}
