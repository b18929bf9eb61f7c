//! Slows down and then locks out password guessing, per source address (or network, see
//! [`crate::prefix`]) and per target account. An attempt is counted BEFORE the password is
//! checked, so parallel guesses cannot outrun the count; a good login only takes back its own
//! attempt, so an attacker's login on one account never clears the failures against another.
//! Attempts still being checked fill the count as failures do, but are told apart: a refusal
//! because of them says "too many logins at once", not "locked out". No timer: entries are
//! aged whenever they are looked at. [`KnownPlaces`] remembers (in the store, across
//! restarts) where each account logged in from; [`AddressSlots`] caps the connections open
//! from one address. Every login path (telnet, the forwarding port, AX.25 `SYS`, the mail
//! ports, the web) counts its attempts here through [`crate::login::attempt`] and checks the
//! password with [`crate::login::verify`] ([`crate::login::check`] does both); nothing else
//! calls [`Throttle::attempt`].
//!
//! Accounts are callsigns. A name typed at a login that is not a station's call has no
//! account, so it is counted against its address alone (and always refused): guessing such
//! names locks the guesser's address out as guessing passwords does, and fills no account
//! table with whatever was typed.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

use crate::prefix::Grouping;
use crate::store_thread::StoreHandle;

/// Attempts older than this are forgotten; a lockout lasts this long after the last attempt.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// The longest pause imposed after a failed login.
pub const MAX_DELAY: Duration = Duration::from_secs(16);
/// Keys remembered at most per table; the oldest are dropped beyond it.
pub const MAX_ENTRIES: usize = 10_000;
/// An address a user logged in from stays theirs this long: a lock on their account (guessing
/// from elsewhere) does not keep them out of it.
pub const TRUSTED_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Clone, Copy)]
struct Record {
    /// Attempts in the window, those being checked included.
    attempts: u32,
    /// Of those, the ones whose password is being checked now.
    checking: u32,
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

    /// (attempts, of which being checked) in the window.
    fn live(map: &mut HashMap<K, Record>, key: &K, now: Instant) -> (u32, u32) {
        match map.get(key) {
            Some(r) if now.duration_since(r.last) < WINDOW => (r.attempts, r.checking),
            Some(_) => {
                map.remove(key);
                (0, 0)
            }
            None => (0, 0),
        }
    }

    fn get(&self, key: &K, now: Instant) -> (u32, u32) {
        Self::live(&mut self.lock(), key, now)
    }

    fn add(map: &mut HashMap<K, Record>, key: &K, now: Instant) {
        let (attempts, checking) = Self::live(map, key, now);
        if map.len() >= MAX_ENTRIES {
            map.retain(|_, r| now.duration_since(r.last) < WINDOW);
        }
        if map.len() < MAX_ENTRIES || map.contains_key(key) {
            map.insert(
                key.clone(),
                Record {
                    attempts: attempts + 1,
                    checking: checking + 1,
                    last: now,
                },
            );
        }
    }

    /// A check is over; a right password also takes back its attempt.
    fn checked(&self, key: &K, right: bool) {
        let mut map = self.lock();
        if let Some(r) = map.get_mut(key) {
            r.checking = r.checking.saturating_sub(1);
            if right {
                r.attempts = r.attempts.saturating_sub(1);
            }
            if r.attempts == 0 {
                map.remove(key);
            }
        }
    }
}

/// A place's last login is written to the store again once it is this old.
const REWRITE_AFTER: Duration = Duration::from_secs(24 * 3600);

/// A place an account logged in from, as the store keeps it: callsign, network (`addr/len`),
/// last login (Unix seconds).
pub type PlaceRow = (String, String, i64);

/// Places each account keeps: its latest ones. Logging in from a new place forgets the
/// account's oldest, so one account logging in from many addresses makes no more of them
/// known than this (issue 35: 250 addresses made "known" by one account churned a user out).
pub const PLACES_PER_ACCOUNT: usize = 4;

/// Where each account logged in from lately, by network ([`Grouping`]): its latest
/// [`PLACES_PER_ACCOUNT`] places, kept in the store (`login_places`), read once at start. An
/// account lock does not apply at these places, and connections from a place an account
/// logged in from keep a share of the login places ([`crate::admission`]), shared between
/// accounts: each such connection counts for the account that logged in there last.
pub struct KnownPlaces {
    grouping: Grouping,
    tables: Mutex<Known>,
    store: Option<StoreHandle>,
}

/// The places and who logged in at each, kept consistent under one lock.
#[derive(Default)]
struct Known {
    /// Account -> its latest places and its last login at each.
    accounts: HashMap<Callsign, Vec<(IpAddr, Instant)>>,
    /// Network -> the accounts that have it among their latest places, with their last login.
    places: HashMap<IpAddr, Vec<(Callsign, Instant)>>,
}

impl Known {
    /// A login of `account` from `prefix` at `at` (kept if later than what is known).
    fn remember(&mut self, account: Callsign, prefix: IpAddr, at: Instant) {
        if self.accounts.len() >= MAX_ENTRIES && !self.accounts.contains_key(&account) {
            self.forget_stale(at);
            if self.accounts.len() >= MAX_ENTRIES {
                return;
            }
        }
        let mine = self.accounts.entry(account).or_default();
        match mine.iter_mut().find(|(p, _)| *p == prefix) {
            Some((_, t)) => *t = (*t).max(at),
            None => mine.push((prefix, at)),
        }
        let dropped = (mine.len() > PLACES_PER_ACCOUNT).then(|| {
            let oldest = (0..mine.len()).min_by_key(|&i| mine[i].1).unwrap_or(0);
            mine.swap_remove(oldest).0
        });
        if let Some(old) = dropped {
            self.drop_holder(old, account);
        }
        if dropped == Some(prefix) {
            return;
        }
        let holders = self.places.entry(prefix).or_default();
        match holders.iter_mut().find(|(a, _)| *a == account) {
            Some((_, t)) => *t = (*t).max(at),
            None => holders.push((account, at)),
        }
    }

    /// `account` no longer has `prefix` among its places.
    fn drop_holder(&mut self, prefix: IpAddr, account: Callsign) {
        if let Some(holders) = self.places.get_mut(&prefix) {
            holders.retain(|(a, _)| *a != account);
            if holders.is_empty() {
                self.places.remove(&prefix);
            }
        }
    }

    /// Forgets the accounts with no login within [`TRUSTED_FOR`] of `now`.
    fn forget_stale(&mut self, now: Instant) {
        let fresh = |t: &Instant| now.saturating_duration_since(*t) < TRUSTED_FOR;
        self.accounts
            .retain(|_, places| places.iter().any(|(_, t)| fresh(t)));
        self.places.retain(|_, holders| {
            holders.retain(|(_, t)| fresh(t));
            !holders.is_empty()
        });
    }
}

impl KnownPlaces {
    /// The places in `rows` (call, prefix label, last login as Unix seconds, read from the
    /// store at `unix_now`; a row whose call is not one is skipped), new ones written to
    /// `store`.
    pub fn new(
        grouping: Grouping,
        rows: &[PlaceRow],
        unix_now: i64,
        store: Option<StoreHandle>,
    ) -> KnownPlaces {
        let now = crate::clock::now();
        let k = KnownPlaces {
            grouping,
            tables: Mutex::default(),
            store,
        };
        for (call, label, last) in rows {
            let age = Duration::from_secs(unix_now.saturating_sub(*last).max(0) as u64);
            let call = Callsign::parse_station(call);
            if let (Some(prefix), Some(at), Ok(call)) =
                (grouping.parse(label), now.checked_sub(age), call)
            {
                k.lock().remember(call, prefix, at);
            }
        }
        k
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How addresses are grouped.
    pub fn grouping(&self) -> Grouping {
        self.grouping
    }

    /// Whether `prefix` is among `account`'s places, with a login within [`TRUSTED_FOR`].
    fn trusted(&self, account: Callsign, prefix: IpAddr, now: Instant) -> bool {
        let k = self.lock();
        k.accounts.get(&account).is_some_and(|places| {
            places
                .iter()
                .any(|(p, at)| *p == prefix && now.duration_since(*at) < TRUSTED_FOR)
        })
    }

    /// The account whose place `ip`'s network is (the one that logged in there last, within
    /// [`TRUSTED_FOR`]), or `None`: nobody's.
    pub fn whose(&self, ip: IpAddr, now: Instant) -> Option<Callsign> {
        let prefix = self.grouping.group(ip);
        let k = self.lock();
        k.places
            .get(&prefix)?
            .iter()
            .filter(|(_, at)| now.duration_since(*at) < TRUSTED_FOR)
            .max_by_key(|(_, at)| *at)
            .map(|(account, _)| *account)
    }

    /// A good login of `account` from `prefix`: remembered here and in the store.
    fn record(&self, account: Callsign, prefix: IpAddr, now: Instant) {
        let known_since = {
            let mut k = self.lock();
            let since = k
                .accounts
                .get(&account)
                .and_then(|places| places.iter().find(|(p, _)| *p == prefix).map(|(_, t)| *t));
            k.remember(account, prefix, now);
            since
        };
        // Kept to the day: a user logging in again and again writes nothing more (a burst of
        // logins is no burst of commits for the store thread).
        let fresh = known_since.is_some_and(|t| now.saturating_duration_since(t) < REWRITE_AFTER);
        if let (Some(store), false) = (&self.store, fresh) {
            let (call, unix) = (account, crate::clock::unix_now());
            let label = self.grouping.label(prefix);
            let _ = store.submit(move |s| {
                if let Err(e) = s.logged_in_from(call, &label, unix) {
                    tracing::warn!(error = %e, "cannot keep where a login came from");
                }
            });
        }
    }
}

/// Login attempt counts per source network and per target account.
pub struct Throttle {
    counts: Arc<Tables>,
    known: Arc<KnownPlaces>,
}

struct Tables {
    lockout_after: u32,
    addresses: Counts<IpAddr>,
    accounts: Counts<Callsign>,
}

/// Why an attempt was not even checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Failed attempts from the address, or against the account, reached the limit.
    Locked,
    /// Attempts still being checked fill the count (many logins to one account at once).
    Busy,
}

/// One counted attempt. [`Attempt::succeeded`] when the password was right; dropped
/// otherwise, it stays counted as a failure.
#[derive(Debug)]
pub struct Attempt {
    counts: Arc<Tables>,
    ip: Option<IpAddr>,
    /// `None`: the name typed is not a callsign (counted at the address alone).
    account: Option<Callsign>,
    right: bool,
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tables")
    }
}

impl Attempt {
    /// The password was right: the attempt does not count against anyone, and the address is
    /// the account's own from now on.
    pub fn succeeded(mut self, throttle: &Throttle, now: Instant) {
        self.right = true;
        if let (Some(ip), Some(account)) = (self.ip, self.account) {
            throttle.known.record(account, ip, now);
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if let Some(ip) = self.ip {
            self.counts.addresses.checked(&ip, self.right);
        }
        if let Some(account) = &self.account {
            self.counts.accounts.checked(account, self.right);
        }
    }
}

impl Throttle {
    /// Locks an address or an account out after `lockout_after` attempts within [`WINDOW`];
    /// `known` holds where accounts logged in from (and how addresses group).
    pub fn new(lockout_after: u32, known: Arc<KnownPlaces>) -> Throttle {
        Throttle {
            counts: Arc::new(Tables {
                lockout_after,
                addresses: Counts::new(),
                accounts: Counts::new(),
            }),
            known,
        }
    }

    /// True when the address must not even get a login prompt: its failures reached the limit.
    pub fn locked_out(&self, ip: IpAddr, now: Instant) -> bool {
        let (attempts, checking) = self.counts.addresses.get(&self.group(ip), now);
        attempts - checking >= self.counts.lockout_after
    }

    fn group(&self, ip: IpAddr) -> IpAddr {
        self.known.grouping.group(ip)
    }

    /// Counts an attempt on `account` from `ip` (none for a radio link) before its password is
    /// checked; refused when the address or the account is locked out (or full of attempts
    /// being checked): then do not check it. An account lock does not apply at a place the
    /// account logged in from before, so nobody can lock a user out of their own places by
    /// guessing from elsewhere. `account` `None`: the name typed is not a callsign, counted
    /// against the address alone.
    pub fn attempt(
        &self,
        ip: Option<IpAddr>,
        account: Option<Callsign>,
        now: Instant,
    ) -> Result<Attempt, Refused> {
        let ip = ip.map(|ip| self.group(ip));
        let t = &self.counts;
        // Both tables under their locks at once, so parallel attempts are counted one by one.
        let mut addresses = t.addresses.lock();
        let mut accounts = t.accounts.lock();
        let (by_ip, ip_checking) = ip.map_or((0, 0), |ip| Counts::live(&mut addresses, &ip, now));
        let (by_account, account_checking) =
            account.map_or((0, 0), |a| Counts::live(&mut accounts, &a, now));
        let at_home = match (ip, account) {
            (Some(ip), Some(account)) => self.known.trusted(account, ip, now),
            _ => false,
        };
        let account_full = by_account >= t.lockout_after && !at_home;
        if by_ip >= t.lockout_after || account_full {
            let failed = by_ip - ip_checking >= t.lockout_after
                || (account_full && by_account - account_checking >= t.lockout_after);
            return Err(if failed {
                Refused::Locked
            } else {
                Refused::Busy
            });
        }
        if let Some(ip) = ip {
            Counts::add(&mut addresses, &ip, now);
        }
        if let Some(account) = &account {
            Counts::add(&mut accounts, account, now);
        }
        Ok(Attempt {
            counts: t.clone(),
            ip,
            account,
            right: false,
        })
    }

    /// How long to wait before the next prompt after a failure from `ip` (doubling, capped).
    pub fn delay(&self, ip: Option<IpAddr>, now: Instant) -> Duration {
        let n = ip
            .map_or(1, |ip| self.counts.addresses.get(&self.group(ip), now).0)
            .max(1);
        Duration::from_secs(1u64 << (n - 1).min(4)).min(MAX_DELAY)
    }
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

    fn throttle(lockout: u32) -> Throttle {
        Throttle::new(
            lockout,
            Arc::new(KnownPlaces::new(Grouping::default(), &[], 0, None)),
        )
    }

    /// A callsign written in a test.
    fn call(text: &str) -> Callsign {
        text.parse().unwrap()
    }

    /// The account a login names.
    fn acct(text: &str) -> Option<Callsign> {
        Some(call(text))
    }

    /// A name typed that is not a callsign has no account: its failures count against the
    /// address it came from, which locks as for any guess, and lock no account.
    #[test]
    fn a_name_that_is_no_callsign_counts_against_its_address_alone() {
        let t = throttle(3);
        let now = crate::clock::now();
        let (guesser, other): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for _ in 0..3 {
            drop(t.attempt(Some(guesser), None, now).unwrap());
        }
        assert_eq!(
            t.attempt(Some(guesser), None, now).unwrap_err(),
            Refused::Locked
        );
        assert!(t.locked_out(guesser, now));
        assert!(t.attempt(Some(guesser), acct("N0USR"), now).is_err());
        assert!(t.attempt(Some(other), None, now).is_ok());
        assert!(t.attempt(Some(other), acct("N0USR"), now).is_ok());
    }

    #[test]
    fn an_account_lock_keeps_out_new_addresses_but_not_the_users_own() {
        let t = throttle(3);
        let now = crate::clock::now();
        let (home, attacker, stranger): (IpAddr, IpAddr, IpAddr) = (
            "10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            "10.0.0.3".parse().unwrap(),
        );
        // The user logs in from home once.
        t.attempt(Some(home), acct("n0usr"), now)
            .unwrap()
            .succeeded(&t, now);
        // Someone else guesses the account's password until it locks.
        for _ in 0..3 {
            assert!(t.attempt(Some(attacker), acct("N0USR"), now).is_ok());
        }
        assert_eq!(
            t.attempt(Some(attacker), acct("N0USR"), now).unwrap_err(),
            Refused::Locked
        );
        assert!(t.attempt(Some(stranger), acct("N0USR"), now).is_err());
        assert!(
            t.attempt(None, acct("N0USR"), now).is_err(),
            "a radio link has no address to trust"
        );
        // The user still gets in from home.
        assert!(t.attempt(Some(home), acct("N0USR"), now).is_ok());
        // Until the trust runs out.
        let later = now + TRUSTED_FOR + Duration::from_secs(1);
        for _ in 0..3 {
            let _ = t.attempt(Some(attacker), acct("N0USR"), later);
        }
        assert!(t.attempt(Some(home), acct("N0USR"), later).is_err());
    }

    #[test]
    fn the_places_an_account_used_come_back_from_the_store() {
        // What the store kept from before a restart: N0USR logged in from home a day ago.
        let unix = 1_800_000_000;
        let rows = [(
            "N0USR".to_string(),
            "10.0.0.1/32".to_string(),
            unix - 86_400,
        )];
        let known = Arc::new(KnownPlaces::new(Grouping::default(), &rows, unix, None));
        let t = Throttle::new(10, known.clone());
        let now = crate::clock::now();
        for i in 0..11 {
            let _ = t.attempt(Some(IpAddr::from([10, 9, 0, i])), acct("N0USR"), now);
        }
        assert!(t
            .attempt(Some(IpAddr::from([10, 9, 0, 99])), acct("N0USR"), now)
            .is_err());
        assert!(t
            .attempt(Some("10.0.0.1".parse().unwrap()), acct("N0USR"), now)
            .is_ok());
        assert_eq!(
            known.whose("10.0.0.1".parse().unwrap(), now),
            Some(call("N0USR"))
        );
        assert_eq!(known.whose("10.0.0.2".parse().unwrap(), now), None);
    }

    #[test]
    fn an_account_keeps_only_its_latest_places() {
        let known = KnownPlaces::new(Grouping::default(), &[], 0, None);
        let t0 = crate::clock::now();
        let home: IpAddr = "10.0.0.1".parse().unwrap();
        known.record(call("N0USR"), home, t0);
        // Another account logs in from 250 addresses, one after another.
        for i in 0..250u32 {
            let at = t0 + Duration::from_secs(u64::from(i) + 1);
            known.record(
                call("n0atk"),
                IpAddr::from((0x0a09_0000 + i).to_be_bytes()),
                at,
            );
        }
        let now = t0 + Duration::from_secs(300);
        let theirs = (0..250u32)
            .filter(|&i| {
                let ip = IpAddr::from((0x0a09_0000 + i).to_be_bytes());
                known.whose(ip, now).is_some()
            })
            .count();
        assert_eq!(theirs, PLACES_PER_ACCOUNT);
        assert_eq!(known.whose(home, now), Some(call("N0USR")));
        assert!(known.trusted(call("N0ATK"), IpAddr::from([10, 9, 0, 249]), now));
        assert!(!known.trusted(call("N0ATK"), IpAddr::from([10, 9, 0, 0]), now));
        // A place two accounts share stays known while either has it.
        known.record(call("N0ATK"), home, now);
        assert_eq!(known.whose(home, now), Some(call("N0ATK")));
        for i in 0..PLACES_PER_ACCOUNT as u64 {
            known.record(
                call("N0ATK"),
                IpAddr::from([10, 8, 0, i as u8]),
                now + Duration::from_secs(i + 1),
            );
        }
        assert_eq!(known.whose(home, now), Some(call("N0USR")));
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
        let t = throttle(3);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let t0 = crate::clock::now();
        // Three attempts in flight at once: the fourth is refused before any is checked, as
        // too many at once (none has failed yet).
        let held: Vec<_> = (0..3)
            .map(|_| t.attempt(Some(ip), acct("N0SYS"), t0).unwrap())
            .collect();
        assert_eq!(
            t.attempt(Some(ip), acct("N0SYS"), t0).unwrap_err(),
            Refused::Busy
        );
        assert!(!t.locked_out(ip, t0));
        // They fail: now it is a lockout.
        drop(held);
        assert_eq!(
            t.attempt(Some(ip), acct("N0SYS"), t0).unwrap_err(),
            Refused::Locked
        );
        assert!(t.locked_out(ip, t0));
        // Another address is refused too: the account is locked.
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(t.attempt(Some(other), acct("n0sys"), t0).is_err());
        // A good login on another account takes back only its own attempt.
        t.attempt(Some(other), acct("N0USR"), t0)
            .unwrap()
            .succeeded(&t, t0);
        assert!(t.locked_out(ip, t0));
        assert_eq!(t.delay(Some(ip), t0), Duration::from_secs(4));
        assert!(!t.locked_out(ip, t0 + WINDOW));
        assert!(t.attempt(Some(ip), acct("N0SYS"), t0 + WINDOW).is_ok());
    }

    #[test]
    fn an_ipv6_network_counts_as_one_address() {
        let t = throttle(3);
        let now = crate::clock::now();
        for i in 1..=3u16 {
            let ip = IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, i]);
            drop(t.attempt(Some(ip), acct(&format!("N{i}X")), now).unwrap());
        }
        assert!(t.locked_out(IpAddr::from([0x2001, 0xdb8, 0, 1, 9, 9, 9, 9]), now));
        assert!(!t.locked_out(IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]), now));
    }
}
