//! Where each of the interpreter's store requests runs: reads on the reader pool, writes on
//! the store thread (through [`Guarded`], so the per-user allowances apply), a new password's
//! hash on the password pool before its write. The interpreter itself runs in its session's
//! task and waits only for its own answers.

use std::net::IpAddr;
use std::sync::Arc;

use qtc_bbs::{Reply, Request, StoreAccess};
use qtc_mail::StoreError;

use crate::passwords::Passwords;
use crate::read_pool::ReadPool;
use crate::store_thread::StoreHandle;
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

/// Runs `request` for a session from `ip` (none for a radio link).
pub async fn run(
    request: Request,
    shared: Backends<'_>,
    ip: Option<IpAddr>,
) -> Result<Reply, StoreError> {
    let gone = |e: crate::store_thread::StoreGone| StoreError::Database(e.to_string());
    match request.access() {
        StoreAccess::Read => shared
            .readers
            .call(move |s| qtc_bbs::apply(request, s))
            .await
            .map_err(gone)?,
        StoreAccess::Write => {
            let (throttle, limits) = (shared.throttle.clone(), shared.user_limits.clone());
            shared
                .store
                .call(move |s| {
                    // A new message: the room it may take is measured now (a quota that
                    // follows the disk), not as it was at start.
                    if matches!(request, Request::Insert { .. }) {
                        crate::room::refresh(s);
                    }
                    // Messages entered count against the user's allowances.
                    let mut guarded = Guarded::new(s, &throttle, ip, &limits);
                    qtc_bbs::apply(request, &mut guarded)
                })
                .await
                .map_err(gone)?
        }
        StoreAccess::Password => {
            let Request::SetPassword { call, password } = request else {
                return Err(StoreError::Database("not a password request".into()));
            };
            // argon2 on the password pool; the store thread only writes the hash.
            let hash = shared.passwords.hash(password).await?;
            shared
                .store
                .call(move |s| s.set_password_hashed(&call, &hash))
                .await
                .map_err(gone)??;
            Ok(Reply::Done)
        }
    }
}
