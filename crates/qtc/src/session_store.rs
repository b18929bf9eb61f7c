//! Where each of the interpreter's store requests runs: reads on the reader pool, writes on
//! the store thread (through [`Guarded`], so the per-user allowances apply), a new password's
//! hash on the password pool before its write. The interpreter itself runs in its session's
//! task and waits only for its own answers.

use std::net::IpAddr;
use std::sync::Arc;

use qtc_bbs::{Reply, Request};
use qtc_mail::StoreError;

use crate::passwords::Passwords;
use crate::read_pool::ReadPool;
use crate::store_thread::{StoreGone, StoreHandle};
use crate::throttle::{Guarded, Throttle};
use crate::user_limits::UserLimits;

/// Where a session's store requests go.
pub struct Backends<'a> {
    /// Reads.
    pub readers: &'a ReadPool,
    /// Writes (the one writer).
    pub store: &'a StoreHandle,
    /// Counts a password checked in the store as a login attempt.
    pub throttle: &'a Arc<Throttle>,
    /// The per-user allowances for messages entered.
    pub user_limits: &'a Arc<UserLimits>,
    /// Hashes a new password.
    pub passwords: &'a Passwords,
}

/// Runs `request` for a session from `ip` (none for a radio link); `Err` when the thread that
/// runs it is gone (the request went with it).
pub async fn run(
    request: Request,
    shared: Backends<'_>,
    ip: Option<IpAddr>,
) -> Result<Reply, StoreGone> {
    match request {
        Request::Read(job) => shared.readers.call(move |s| job.run(s)).await,
        Request::Write(job) => {
            let (throttle, limits) = (shared.throttle.clone(), shared.user_limits.clone());
            shared
                .store
                .call(move |s| {
                    // Messages entered count against the user's allowances and the room.
                    let mut guarded = Guarded::new(s, &throttle, ip, &limits);
                    job.run(&mut guarded)
                })
                .await
        }
        Request::NewPassword(p) => {
            // argon2 on the password pool; the store thread only writes the hash.
            let stored = match shared.passwords.hash(p.password.clone()).await {
                Ok(hash) => {
                    let call = p.call.clone();
                    match shared
                        .store
                        .call(move |s| s.set_password_hashed(&call, &hash))
                        .await
                    {
                        Ok(r) => r,
                        Err(gone) => Err(StoreError::Database(gone.to_string())),
                    }
                }
                Err(e) => Err(e),
            };
            Ok(p.stored(stored))
        }
    }
}
