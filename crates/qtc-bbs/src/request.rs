//! Store work as data. The session never calls the store: it hands out a [`Request`] (one
//! query, or one write) through [`crate::Session::take_request`] and goes on when the
//! [`Reply`] comes back through [`crate::Session::store_answered`]. [`apply`] runs a request
//! against a [`MessageStore`]; the daemon runs it on its reader pool or its writer thread (see
//! [`Request::access`]), tests run it in place against a memory store. One code path for both.

use qtc_mail::{
    GreetingCounts, ListFilter, Message, MessageHeader, MessageStore, MsgStatus, MsgType,
    NewMessage, StoreError, User,
};

/// The most bulletins `LC` counts categories over (the newest).
const CATEGORIES_OVER: usize = 1000;

/// One store operation a session needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A user's record.
    User {
        /// Callsign, no SSID.
        call: String,
    },
    /// The greeting's counts for `call`.
    MailCounts {
        /// The user.
        call: String,
        /// Held mail counts too.
        sysop: bool,
    },
    /// Headers matching the filter (its `last` is the page size, its range the cursor).
    List(ListFilter),
    /// `LC`: bulletin categories with counts.
    Categories,
    /// `I`: active messages and the latest number.
    Counts,
    /// `WP`: the home BBS the white pages know.
    HomeBbs {
        /// The callsign looked up.
        call: String,
    },
    /// Whether a BID is known here.
    BidKnown {
        /// The BID.
        bid: String,
    },
    /// A message without its body.
    MessageHead {
        /// Its number.
        number: u64,
        /// Whose read mark its status shows (`None`: the message's own).
        reader: Option<String>,
    },
    /// A piece of a message's body.
    Body {
        /// The message.
        number: u64,
        /// From this byte.
        offset: u64,
        /// At most this many bytes.
        len: usize,
    },
    /// `reader` read it: their copy is marked read if they are one of its recipients.
    MarkRead {
        /// The message.
        number: u64,
        /// Who read it.
        reader: String,
    },
    /// `K n`: kill it if `me` may (the check and the kill in one step on the writer).
    Kill {
        /// The message.
        number: u64,
        /// Who asks.
        me: String,
        /// With sysop rights.
        sysop: bool,
    },
    /// `KM`: kill every read personal message to `me`.
    KillRead {
        /// The addressee.
        me: String,
    },
    /// Store a new message.
    Insert {
        /// The message.
        msg: NewMessage,
        /// This BBS, for a generated BID.
        bbs_call: String,
        /// Unix seconds.
        now: i64,
    },
    /// Save the user's profile (name, home BBS, last listed, page length).
    UpdateUser(User),
    /// `PW`: a new password (the daemon hashes it on its password pool, then stores the hash).
    SetPassword {
        /// The user.
        call: String,
        /// The new password.
        password: String,
    },
}

/// Where a request may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreAccess {
    /// A read: any read-only connection.
    Read,
    /// A write: the one writer.
    Write,
    /// A password hash first (argon2, on the password pool), then a write.
    Password,
}

impl Request {
    /// Where the daemon runs it.
    pub fn access(&self) -> StoreAccess {
        match self {
            // A login's lookup queues behind the writes before it: a partner whose link was
            // reset logs in again only after its previous session's last write (and release).
            Request::User { .. } => StoreAccess::Write,
            Request::MailCounts { .. }
            | Request::List(_)
            | Request::Categories
            | Request::Counts
            | Request::HomeBbs { .. }
            | Request::BidKnown { .. }
            | Request::MessageHead { .. }
            | Request::Body { .. } => StoreAccess::Read,
            Request::MarkRead { .. }
            | Request::Kill { .. }
            | Request::KillRead { .. }
            | Request::Insert { .. }
            | Request::UpdateUser(_) => StoreAccess::Write,
            Request::SetPassword { .. } => StoreAccess::Password,
        }
    }
}

/// What `K n` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillOutcome {
    /// Killed now.
    Killed,
    /// It was killed before.
    AlreadyKilled,
    /// The user may read it but not kill it (someone else's bulletin).
    Forbidden,
    /// No such message, or none this user may see.
    NotYours,
}

/// The answer to a [`Request`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// For [`Request::User`].
    User(Option<User>),
    /// For [`Request::MailCounts`].
    MailCounts(GreetingCounts),
    /// For [`Request::List`].
    Headers(Vec<MessageHeader>),
    /// For [`Request::Categories`]: category and count, by name.
    Categories(Vec<(String, usize)>),
    /// For [`Request::Counts`].
    Counts {
        /// Messages not killed.
        active: u64,
        /// The highest number.
        latest: u64,
    },
    /// For [`Request::HomeBbs`].
    HomeBbs(Option<String>),
    /// For [`Request::BidKnown`].
    BidKnown(bool),
    /// For [`Request::MessageHead`]: the message, its body empty.
    Message(Option<Box<Message>>),
    /// For [`Request::Body`].
    Body(Vec<u8>),
    /// For [`Request::Kill`].
    Killed(KillOutcome),
    /// For [`Request::KillRead`]: the numbers killed, oldest first.
    KilledRead(Vec<u64>),
    /// For [`Request::Insert`].
    Stored {
        /// Its number.
        number: u64,
        /// Its BID (generated when none was given).
        bid: String,
    },
    /// For the other writes.
    Done,
}

/// Runs one request against a store.
pub fn apply(request: Request, store: &mut dyn MessageStore) -> Result<Reply, StoreError> {
    Ok(match request {
        Request::User { call } => Reply::User(store.user(&call)?),
        Request::MailCounts { call, sysop } => {
            Reply::MailCounts(store.greeting_counts(&call, sysop)?)
        }
        Request::List(filter) => Reply::Headers(store.list(&filter)?),
        Request::Categories => Reply::Categories(categories(store)?),
        Request::Counts => {
            let (active, latest) = store.counts()?;
            Reply::Counts { active, latest }
        }
        Request::HomeBbs { call } => Reply::HomeBbs(store.home_bbs(&call)?),
        Request::BidKnown { bid } => Reply::BidKnown(store.bid_known(&bid)?),
        Request::MessageHead { number, reader } => {
            let mut m = store.message_head(number)?;
            if let (Some(m), Some(reader)) = (m.as_mut(), reader) {
                if let Some(seen) = store.status_seen_by(number, &reader)? {
                    m.header.status = seen;
                }
            }
            Reply::Message(m.map(Box::new))
        }
        Request::Body {
            number,
            offset,
            len,
        } => Reply::Body(store.body_chunk(number, offset, len)?),
        Request::MarkRead { number, reader } => {
            store.mark_read(number, &reader)?;
            Reply::Done
        }
        Request::Kill { number, me, sysop } => Reply::Killed(kill(store, number, &me, sysop)?),
        Request::KillRead { me } => Reply::KilledRead(kill_read(store, &me)?),
        Request::Insert { msg, bbs_call, now } => {
            let number = store.insert_message(&msg, &bbs_call, now)?;
            let bid = store
                .message_head(number)?
                .map(|m| m.header.bid)
                .unwrap_or_default();
            Reply::Stored { number, bid }
        }
        Request::UpdateUser(user) => {
            store.update_user(&user)?;
            Reply::Done
        }
        Request::SetPassword { call, password } => {
            store.set_password(&call, &password)?;
            Reply::Done
        }
    })
}

fn categories(store: &mut dyn MessageStore) -> Result<Vec<(String, usize)>, StoreError> {
    let f = ListFilter {
        kind: Some(MsgType::Bulletin),
        last: Some(CATEGORIES_OVER),
        ..Default::default()
    };
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for h in store.list(&f)? {
        *counts.entry(h.to).or_default() += 1;
    }
    Ok(counts.into_iter().collect())
}

/// The check and the kill run back to back on the one writer, so nothing changes between.
fn kill(
    store: &mut dyn MessageStore,
    number: u64,
    me: &str,
    sysop: bool,
) -> Result<KillOutcome, StoreError> {
    let Some(m) = store.message_head(number)? else {
        return Ok(KillOutcome::NotYours);
    };
    let h = &m.header;
    Ok(match h.status {
        MsgStatus::Killed => KillOutcome::AlreadyKilled,
        // Held mail is the sysop's alone until released.
        MsgStatus::Held if !sysop => KillOutcome::NotYours,
        _ if sysop || h.to == me || h.from == me => {
            store.set_status(number, MsgStatus::Killed)?;
            KillOutcome::Killed
        }
        // Someone else's bulletin is readable, not killable; their personal mail is unseen.
        _ if h.kind != MsgType::Personal => KillOutcome::Forbidden,
        _ => KillOutcome::NotYours,
    })
}

fn kill_read(store: &mut dyn MessageStore, me: &str) -> Result<Vec<u64>, StoreError> {
    // The addressee's alone: a copy's reader killing it would kill it for the addressee.
    let f = ListFilter {
        to: Some(me.to_string()),
        status: Some(MsgStatus::Read),
        kind: Some(MsgType::Personal),
        oldest_first: true,
        ..Default::default()
    };
    let numbers: Vec<u64> = store.list(&f)?.iter().map(|h| h.number).collect();
    for &n in &numbers {
        store.set_status(n, MsgStatus::Killed)?;
    }
    Ok(numbers)
}

/// Answers every request the session has, in order, from `store`: what the daemon does with
/// its threads, done in place (tests, fuzzing, tools).
pub fn answer_all(session: &mut crate::Session, store: &mut dyn MessageStore, now: i64) {
    while let Some(request) = session.take_request() {
        let reply = apply(request, store);
        session.store_answered(reply, now);
    }
}
