//! Where each of the interpreter's store requests runs: reads on the reader pool, writes on
//! the store thread (through [`SessionWrites`], so the room left and the per-user allowances
//! apply), a new password's hash on the password pool before its write. The interpreter itself
//! runs in its session's task and waits only for its own answers.

use std::sync::Arc;
use std::time::Instant;

use qtc_bbs::{Reply, Request};
use qtc_callsign::Callsign;
use qtc_mail::{
    ListFilter, Message, MessageHeader, MessageStore, MsgStatus, NewMessage, StoreError, User,
};

use crate::passwords::Passwords;
use crate::read_pool::ReadPool;
use crate::store_thread::{StoreGone, StoreHandle};
use crate::user_limits::UserLimits;

/// Where a session's store requests go.
pub struct Backends<'a> {
    /// Reads.
    pub readers: &'a ReadPool,
    /// Writes (the one writer).
    pub store: &'a StoreHandle,
    /// The per-user allowances for messages entered.
    pub user_limits: &'a Arc<UserLimits>,
    /// Hashes a new password.
    pub passwords: &'a Passwords,
}

/// Runs `request` for a session; `Err` when the thread that runs it is gone (the request went
/// with it).
pub async fn run(request: Request, shared: Backends<'_>) -> Result<Reply, StoreGone> {
    match request {
        Request::Read(job) => shared.readers.call(move |s| job.run(s)).await,
        Request::Write(job) => {
            let limits = shared.user_limits.clone();
            shared
                .store
                .call(move |s| job.run(&mut SessionWrites::new(s, &limits)))
                .await
        }
        Request::NewPassword(p) => {
            // argon2 on the password pool; the store thread only writes the hash.
            let stored = match shared.passwords.hash(p.password.clone()).await {
                Ok(hash) => {
                    let call = p.call;
                    let write = shared
                        .store
                        .call(move |s| s.set_password_hashed(call, &hash));
                    write
                        .await
                        .unwrap_or_else(|gone| Err(StoreError::Database(gone.to_string())))
                }
                Err(e) => Err(e),
            };
            Ok(p.stored(stored))
        }
    }
}

/// The store as a BBS session's writes see it: a new message is stored the way every user's
/// message is ([`crate::submission`]: the room left, the user's allowances, the rules).
/// Everything else passes through.
struct SessionWrites<'a> {
    store: &'a mut qtc_store::Store,
    /// What each user may send.
    limits: &'a UserLimits,
    /// When the write came.
    now: Instant,
}

impl<'a> SessionWrites<'a> {
    fn new(store: &'a mut qtc_store::Store, limits: &'a UserLimits) -> SessionWrites<'a> {
        SessionWrites {
            store,
            limits,
            now: crate::clock::now(),
        }
    }
}

impl MessageStore for SessionWrites<'_> {
    fn insert_message(
        &mut self,
        msg: &NewMessage,
        _bbs_call: Callsign,
        now: i64,
    ) -> Result<u64, StoreError> {
        // The one way a user's message is stored: room, allowances, rules. (The store's
        // station names this BBS in the BID.)
        let parts = qtc_store::MailParts::default();
        let stored = crate::submission::store(
            self.store,
            self.limits,
            std::slice::from_ref(msg),
            &parts,
            (self.now, now),
        )?;
        Ok(stored.first().map_or(0, |(n, _)| *n))
    }
    fn user(&mut self, call: Callsign) -> Result<Option<User>, StoreError> {
        self.store.user(call)
    }
    fn update_user(&mut self, user: &User) -> Result<(), StoreError> {
        self.store.update_user(user)
    }
    fn set_password(&mut self, call: Callsign, password: &str) -> Result<(), StoreError> {
        self.store.set_password(call, password)
    }
    fn message(&mut self, number: u64) -> Result<Option<Message>, StoreError> {
        self.store.message(number)
    }
    fn message_head(&mut self, number: u64) -> Result<Option<Message>, StoreError> {
        self.store.message_head(number)
    }
    fn body_chunk(&mut self, number: u64, offset: u64, len: usize) -> Result<Vec<u8>, StoreError> {
        self.store.body_chunk(number, offset, len)
    }
    fn list(&mut self, filter: &ListFilter) -> Result<Vec<MessageHeader>, StoreError> {
        self.store.list(filter)
    }
    fn set_status(&mut self, number: u64, status: MsgStatus) -> Result<bool, StoreError> {
        self.store.set_status(number, status)
    }
    fn mark_read(&mut self, number: u64, reader: Callsign) -> Result<(), StoreError> {
        self.store.mark_read(number, reader)
    }
    fn status_seen_by(
        &mut self,
        number: u64,
        reader: Callsign,
    ) -> Result<Option<MsgStatus>, StoreError> {
        self.store.status_seen_by(number, reader)
    }
    fn bid_known(&mut self, bid: &str) -> Result<bool, StoreError> {
        self.store.bid_known(bid)
    }
    fn counts(&mut self) -> Result<(u64, u64), StoreError> {
        self.store.counts()
    }
    fn home_bbs(&mut self, call: &str) -> Result<Option<String>, StoreError> {
        self.store.home_bbs(call)
    }
    fn greeting_counts(
        &mut self,
        call: Callsign,
        sysop: bool,
    ) -> Result<qtc_mail::GreetingCounts, StoreError> {
        self.store.greeting_counts(call, sysop)
    }
    fn categories(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        self.store.categories()
    }
}
