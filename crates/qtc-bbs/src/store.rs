//! Store work as data, each request typed with its answer. The session never calls the store:
//! a command hands out a [`Request`] (one query, or one write) through
//! [`crate::Session::take_request`] and goes on when its [`Reply`] comes back through
//! [`crate::Session::store_answered`]. A request carries what the command does with its
//! answer, so the compiler pairs the two: an answer that does not fit its request cannot be
//! written. The daemon runs a request on its reader pool or its writer thread (which one, the
//! variant says); tests run it in place against a memory store ([`Request::run`]). One code
//! path for both.

use qtc_callsign::Callsign;
use qtc_mail::request::{self, StoreKind};
use qtc_mail::{Message, MessageStore, StoreError, User};

use crate::session::Session;

pub(crate) use qtc_mail::request::Query;

/// The interpreter's store: any [`MessageStore`] (qtc-store's SQLite, the memory store).
pub enum BbsStore {}

impl StoreKind for BbsStore {
    type Store<'a> = dyn MessageStore + 'a;
}

/// A query or a write of the interpreter, with its answer's way back to the session.
pub type StoreJob = request::Job<Session, BbsStore>;

/// The answer to a [`Request`], for [`crate::Session::store_answered`].
pub type Reply = request::Reply<Session>;

/// What the session does with an answer of type `A`.
pub(crate) type Then<A> = request::Then<Session, A>;

/// A store request from a session, with what the session does with its answer. Run it where
/// its variant says and give the [`Reply`] to [`crate::Session::store_answered`], in the order
/// the requests were taken.
#[derive(Debug)]
pub enum Request {
    /// A query: any read-only connection.
    Read(StoreJob),
    /// A write: the one writer.
    Write(StoreJob),
    /// `PW`: a new password, hashed first (argon2: the daemon does it on its password pool),
    /// then stored.
    NewPassword(NewPassword),
}

impl Request {
    /// Runs it against `store` in place (tests, fuzzing, tools): what the daemon does on its
    /// threads. A new password is stored with [`MessageStore::set_password`].
    pub fn run(self, store: &mut dyn MessageStore) -> Reply {
        match self {
            Request::Read(job) | Request::Write(job) => job.run(store),
            Request::NewPassword(p) => {
                let stored = store.set_password(p.call, &p.password);
                p.stored(stored)
            }
        }
    }
}

/// `PW`'s new password for `call`: the daemon hashes it, stores the hash and answers with
/// [`NewPassword::stored`].
pub struct NewPassword {
    /// The user.
    pub call: Callsign,
    /// The new password.
    pub password: String,
    then: Then<()>,
}

impl NewPassword {
    /// The answer once the password is stored (or could not be).
    pub fn stored(self, result: Result<(), StoreError>) -> Reply {
        let then = self.then;
        Reply::new(true, move |s| then(s, result))
    }
}

impl std::fmt::Debug for NewPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password itself.
        write!(f, "NewPassword {{ call: {:?} }}", self.call)
    }
}

/// `query` as a request whose answer goes to `then`; `awaited`: the user waits for it.
pub(crate) fn request<Q: Query<BbsStore>>(
    query: Q,
    then: Then<Q::Answer>,
    awaited: bool,
) -> Request {
    let job = StoreJob::new(query, then, awaited);
    if job.writes() {
        Request::Write(job)
    } else {
        Request::Read(job)
    }
}

/// `call`'s new password as a request whose answer goes to `then`.
pub(crate) fn new_password(call: Callsign, password: String, then: Then<()>) -> Request {
    Request::NewPassword(NewPassword {
        call,
        password,
        then,
    })
}

/// Answers every request the session has, in order, from `store`: what the daemon does with
/// its threads, done in place (tests, fuzzing, tools).
pub fn answer_all(session: &mut Session, store: &mut dyn MessageStore, now: i64) {
    while let Some(request) = session.take_request() {
        let reply = request.run(store);
        session.store_answered(reply, now);
    }
}

/// Saves the user's profile (name, home BBS, last listed, page length).
#[derive(Debug)]
pub(crate) struct SaveUser(pub(crate) User);

impl Query<BbsStore> for SaveUser {
    type Answer = ();
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        store.update_user(&self.0)
    }
}

/// Headers matching the filter (its `last` is the page size, its range the cursor).
#[derive(Debug)]
pub(crate) struct Headers(pub(crate) qtc_mail::ListFilter);

impl Query<BbsStore> for Headers {
    type Answer = Vec<qtc_mail::MessageHeader>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<Self::Answer, StoreError> {
        store.list(&self.0)
    }
}

/// A message without its body.
#[derive(Debug)]
pub(crate) struct MessageHead {
    /// Its number.
    pub(crate) number: u64,
    /// Whose read mark its status shows (`None`: the message's own).
    pub(crate) reader: Option<Callsign>,
}

impl Query<BbsStore> for MessageHead {
    type Answer = Option<Box<Message>>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<Self::Answer, StoreError> {
        let mut m = store.message_head(self.number)?;
        if let (Some(m), Some(reader)) = (m.as_mut(), self.reader) {
            if let Some(seen) = store.status_seen_by(self.number, reader)? {
                m.header.status = seen;
            }
        }
        Ok(m.map(Box::new))
    }
}
