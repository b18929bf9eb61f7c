//! Slows down and then locks out password guessing, per source address and per target
//! account. An attempt is counted BEFORE the password is checked, so parallel guesses cannot
//! outrun the count; a good login only takes back its own attempt, so an attacker's login on
//! one account never clears the failures against another. No timer: entries are aged whenever
//! they are looked at. [`Guarded`] is the store as a user session sees it, with these checks
//! and the per-user allowances applied.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::user_limits::UserLimits;
use qtc_mail::{
    ListFilter, Message, MessageHeader, MessageStore, MsgStatus, NewMessage, StoreError, User,
};

/// Attempts older than this are forgotten; a lockout lasts this long after the last attempt.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// The longest pause imposed after a failed login.
pub const MAX_DELAY: Duration = Duration::from_secs(16);
/// Keys remembered at most per table; the oldest are dropped beyond it.
const MAX_ENTRIES: usize = 10_000;
/// An address a user logged in from stays theirs this long: a lock on their account (guessing
/// from elsewhere) does not keep them out of it.
pub const TRUSTED_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Clone, Copy)]
struct Record {
    attempts: u32,
    last: Instant,
}

/// Attempt counts per key (an address or an account), aged on every look.
struct Counts<K> {
    map: Mutex<HashMap<K, Record>>,
}

impl<K: Hash + Eq + Clone> Counts<K> {
    fn new() -> Counts<K> {
        Counts {
            map: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Record>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(map: &mut HashMap<K, Record>, key: &K, now: Instant) -> u32 {
        match map.get(key) {
            Some(r) if now.duration_since(r.last) < WINDOW => r.attempts,
            Some(_) => {
                map.remove(key);
                0
            }
            None => 0,
        }
    }

    fn get(&self, key: &K, now: Instant) -> u32 {
        Self::live(&mut self.lock(), key, now)
    }

    fn add(map: &mut HashMap<K, Record>, key: &K, now: Instant) {
        let attempts = Self::live(map, key, now) + 1;
        if map.len() >= MAX_ENTRIES {
            map.retain(|_, r| now.duration_since(r.last) < WINDOW);
        }
        if map.len() < MAX_ENTRIES || map.contains_key(key) {
            map.insert(
                key.clone(),
                Record {
                    attempts,
                    last: now,
                },
            );
        }
    }

    fn take_back(&self, key: &K) {
        let mut map = self.lock();
        if let Some(r) = map.get_mut(key) {
            r.attempts = r.attempts.saturating_sub(1);
            if r.attempts == 0 {
                map.remove(key);
            }
        }
    }
}

/// Login attempt counts per source address and per target account.
pub struct Throttle {
    lockout_after: u32,
    addresses: Counts<IpAddr>,
    accounts: Counts<String>,
    /// (account, address) pairs with a good login within [`TRUSTED_FOR`].
    trusted: Mutex<HashMap<(String, IpAddr), Instant>>,
}

/// One counted attempt, to hand back with [`Throttle::succeeded`] when the password was right.
#[derive(Debug)]
pub struct Attempt {
    ip: Option<IpAddr>,
    account: String,
}

impl Throttle {
    /// Locks an address or an account out after `lockout_after` attempts within [`WINDOW`].
    pub fn new(lockout_after: u32) -> Throttle {
        Throttle {
            lockout_after,
            addresses: Counts::new(),
            accounts: Counts::new(),
            trusted: Mutex::new(HashMap::new()),
        }
    }

    /// True when the address must not even get a login prompt.
    pub fn locked_out(&self, ip: IpAddr, now: Instant) -> bool {
        self.addresses.get(&ip, now) >= self.lockout_after
    }

    /// Counts an attempt on `account` from `ip` (none for a radio link) before its password is
    /// checked; `None` when the address or the account is locked out: then do not check it. An
    /// account lock does not apply at an address the account logged in from before, so nobody
    /// can lock a user out of their own places by guessing from elsewhere.
    pub fn attempt(&self, ip: Option<IpAddr>, account: &str, now: Instant) -> Option<Attempt> {
        let account = account.to_ascii_uppercase();
        // Both tables under their locks at once, so parallel attempts are counted one by one.
        let mut addresses = self.addresses.lock();
        let mut accounts = self.accounts.lock();
        let by_ip = ip.map_or(0, |ip| Counts::live(&mut addresses, &ip, now));
        let by_account = Counts::live(&mut accounts, &account, now);
        let account_locked = by_account >= self.lockout_after && !self.trusted(&account, ip, now);
        if by_ip >= self.lockout_after || account_locked {
            return None;
        }
        if let Some(ip) = ip {
            Counts::add(&mut addresses, &ip, now);
        }
        Counts::add(&mut accounts, &account, now);
        Some(Attempt { ip, account })
    }

    /// The password was right: the attempt does not count against anyone, and the address is
    /// the account's own from now on.
    pub fn succeeded(&self, attempt: Attempt, now: Instant) {
        if let Some(ip) = attempt.ip {
            self.addresses.take_back(&ip);
            let mut trusted = self.trusted.lock().unwrap_or_else(|e| e.into_inner());
            if trusted.len() >= MAX_ENTRIES {
                trusted.retain(|_, at| now.duration_since(*at) < TRUSTED_FOR);
            }
            if trusted.len() < MAX_ENTRIES {
                trusted.insert((attempt.account.clone(), ip), now);
            }
        }
        self.accounts.take_back(&attempt.account);
    }

    /// Whether `account` logged in from `ip` within [`TRUSTED_FOR`] (never for a radio link).
    fn trusted(&self, account: &str, ip: Option<IpAddr>, now: Instant) -> bool {
        let Some(ip) = ip else {
            return false;
        };
        let trusted = self.trusted.lock().unwrap_or_else(|e| e.into_inner());
        trusted
            .get(&(account.to_string(), ip))
            .is_some_and(|at| now.duration_since(*at) < TRUSTED_FOR)
    }

    /// How long to wait before the next prompt after a failure from `ip` (doubling, capped).
    pub fn delay(&self, ip: Option<IpAddr>, now: Instant) -> Duration {
        let n = ip.map_or(1, |ip| self.addresses.get(&ip, now)).max(1);
        Duration::from_secs(1u64 << (n - 1).min(4)).min(MAX_DELAY)
    }
}

/// The store as a login sees it: every password check is first counted by the throttle, and
/// not made at all while the address or the account is locked out. Everything else passes
/// through.
pub struct Guarded<'a> {
    /// The real store.
    pub store: &'a mut dyn MessageStore,
    /// The counts.
    pub throttle: &'a Throttle,
    /// Where the attempt comes from (none for a radio link).
    pub ip: Option<IpAddr>,
    /// The time of the attempt.
    pub now: Instant,
    /// What each user may send.
    pub limits: &'a UserLimits,
}

impl<'a> Guarded<'a> {
    /// The store as a session from `ip` (none for a radio link) sees it now.
    pub fn new(
        store: &'a mut dyn MessageStore,
        throttle: &'a Throttle,
        ip: Option<IpAddr>,
        limits: &'a UserLimits,
    ) -> Guarded<'a> {
        Guarded {
            store,
            throttle,
            ip,
            now: crate::clock::now(),
            limits,
        }
    }
}

impl MessageStore for Guarded<'_> {
    fn check_password(&mut self, call: &str, password: &str) -> Result<bool, StoreError> {
        let Some(attempt) = self.throttle.attempt(self.ip, call, self.now) else {
            tracing::warn!("login refused unchecked: locked out after repeated failures");
            return Ok(false);
        };
        let ok = self.store.check_password(call, password)?;
        if ok {
            self.throttle.succeeded(attempt, self.now);
        }
        Ok(ok)
    }
    fn user(&mut self, call: &str) -> Result<Option<User>, StoreError> {
        self.store.user(call)
    }
    fn update_user(&mut self, user: &User) -> Result<(), StoreError> {
        self.store.update_user(user)
    }
    fn set_password(&mut self, call: &str, password: &str) -> Result<(), StoreError> {
        self.store.set_password(call, password)
    }
    fn insert_message(
        &mut self,
        msg: &NewMessage,
        bbs_call: &str,
        now: i64,
    ) -> Result<u64, StoreError> {
        within_allowance(self.store, self.limits, msg, self.now)?;
        self.store.insert_message(msg, bbs_call, now)
    }
    fn message(&mut self, number: u64) -> Result<Option<Message>, StoreError> {
        self.store.message(number)
    }
    fn list(&mut self, filter: &ListFilter) -> Result<Vec<MessageHeader>, StoreError> {
        self.store.list(filter)
    }
    fn set_status(&mut self, number: u64, status: MsgStatus) -> Result<bool, StoreError> {
        self.store.set_status(number, status)
    }
    fn mark_read(&mut self, number: u64, reader: &str) -> Result<(), StoreError> {
        self.store.mark_read(number, reader)
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
        call: &str,
        sysop: bool,
    ) -> Result<qtc_mail::GreetingCounts, StoreError> {
        self.store.greeting_counts(call, sysop)
    }
    fn categories(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        self.store.categories()
    }
}

/// Counts a message a user entered (at the BBS or on the web) against their allowances, or
/// refuses it; sysops and BBS accounts are exempt.
pub fn within_allowance(
    store: &mut dyn MessageStore,
    limits: &UserLimits,
    msg: &NewMessage,
    now: Instant,
) -> Result<(), StoreError> {
    let exempt = store.user(&msg.from)?.is_some_and(|u| u.sysop || u.bbs);
    if !exempt {
        let size = (msg.body.len() + msg.subject.len()) as u64;
        if let Err(why) = limits.take(&msg.from, size, now) {
            tracing::warn!(from = %msg.from, "message refused: {why}");
            return Err(StoreError::OverLimit(why));
        }
    }
    Ok(())
}

/// Counts open connections per address, so one host cannot take every session.
pub struct AddressSlots {
    max: usize,
    open: std::sync::Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection's place; the count goes down when it is dropped.
pub struct AddressSlot {
    ip: IpAddr,
    open: std::sync::Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl AddressSlots {
    /// At most `max` connections from one address.
    pub fn new(max: usize) -> AddressSlots {
        AddressSlots {
            max,
            open: Default::default(),
        }
    }

    /// A place for one more connection from `ip`, or `None` when it has `max` already.
    pub fn take(&self, ip: IpAddr) -> Option<AddressSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            ip,
            open: self.open.clone(),
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_lock_keeps_out_new_addresses_but_not_the_users_own() {
        let t = Throttle::new(3);
        let now = crate::clock::now();
        let (home, attacker, stranger): (IpAddr, IpAddr, IpAddr) = (
            "10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            "10.0.0.3".parse().unwrap(),
        );
        // The user logs in from home once.
        let a = t.attempt(Some(home), "n0usr", now).unwrap();
        t.succeeded(a, now);
        // Someone else guesses the account's password until it locks.
        for _ in 0..3 {
            assert!(t.attempt(Some(attacker), "N0USR", now).is_some());
        }
        assert!(t.attempt(Some(attacker), "N0USR", now).is_none());
        assert!(t.attempt(Some(stranger), "N0USR", now).is_none());
        assert!(
            t.attempt(None, "N0USR", now).is_none(),
            "a radio link has no address to trust"
        );
        // The user still gets in from home.
        assert!(t.attempt(Some(home), "N0USR", now).is_some());
        // Until the trust runs out.
        let later = now + TRUSTED_FOR + Duration::from_secs(1);
        for _ in 0..3 {
            t.attempt(Some(attacker), "N0USR", later);
        }
        assert!(t.attempt(Some(home), "N0USR", later).is_none());
    }

    #[test]
    fn address_slots_are_counted_and_given_back() {
        let s = AddressSlots::new(2);
        let ip: IpAddr = "192.0.2.9".parse().unwrap();
        let a = s.take(ip).unwrap();
        let _b = s.take(ip).unwrap();
        assert!(s.take(ip).is_none());
        assert!(s.take("192.0.2.10".parse().unwrap()).is_some());
        drop(a);
        assert!(s.take(ip).is_some());
    }

    #[test]
    fn counts_before_the_check_and_locks_address_and_account() {
        let t = Throttle::new(3);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let t0 = crate::clock::now();
        // Three attempts in flight at once: the fourth is refused before any is checked.
        let held: Vec<_> = (0..3)
            .map(|_| t.attempt(Some(ip), "N0SYS", t0).unwrap())
            .collect();
        assert!(t.attempt(Some(ip), "N0SYS", t0).is_none());
        assert!(t.locked_out(ip, t0));
        // Another address is refused too: the account is locked.
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(t.attempt(Some(other), "n0sys", t0).is_none());
        // A good login on another account takes back only its own attempt.
        let mine = t.attempt(Some(other), "N0USR", t0).unwrap();
        t.succeeded(mine, t0);
        assert!(t.locked_out(ip, t0));
        assert_eq!(t.delay(Some(ip), t0), Duration::from_secs(4));
        drop(held);
        assert!(!t.locked_out(ip, t0 + WINDOW));
        assert!(t.attempt(Some(ip), "N0SYS", t0 + WINDOW).is_some());
    }
}
