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

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// Where each account logged in from lately, by network ([`Grouping`]): kept in the store
/// (`login_places`), read once at start. An account lock does not apply at these places, and
/// connections from a place any account logged in from keep a share of the login places
/// ([`crate::admission`]).
pub struct KnownPlaces {
    grouping: Grouping,
    places: Mutex<HashMap<(String, IpAddr), Instant>>,
    /// Each place's latest good login, any account.
    prefixes: Mutex<HashMap<IpAddr, Instant>>,
    store: Option<StoreHandle>,
}

impl KnownPlaces {
    /// The places in `rows` (call, prefix label, last login as Unix seconds, read from the
    /// store at `unix_now`), new ones written to `store`.
    pub fn new(
        grouping: Grouping,
        rows: &[PlaceRow],
        unix_now: i64,
        store: Option<StoreHandle>,
    ) -> KnownPlaces {
        let now = crate::clock::now();
        let k = KnownPlaces {
            grouping,
            places: Mutex::default(),
            prefixes: Mutex::default(),
            store,
        };
        for (call, label, last) in rows.iter().take(MAX_ENTRIES) {
            let age = Duration::from_secs(unix_now.saturating_sub(*last).max(0) as u64);
            if let (Some(prefix), Some(at)) = (grouping.parse(label), now.checked_sub(age)) {
                k.remember(call, prefix, at);
            }
        }
        k
    }

    /// How addresses are grouped.
    pub fn grouping(&self) -> Grouping {
        self.grouping
    }

    /// Whether `account` logged in from `prefix` within [`TRUSTED_FOR`].
    fn trusted(&self, account: &str, prefix: IpAddr, now: Instant) -> bool {
        let places = self.places.lock().unwrap_or_else(|e| e.into_inner());
        places
            .get(&(account.to_string(), prefix))
            .is_some_and(|at| now.duration_since(*at) < TRUSTED_FOR)
    }

    /// Whether any account logged in from `ip`'s network within [`TRUSTED_FOR`].
    pub fn knows(&self, ip: IpAddr, now: Instant) -> bool {
        let prefix = self.grouping.group(ip);
        let prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        prefixes
            .get(&prefix)
            .is_some_and(|at| now.duration_since(*at) < TRUSTED_FOR)
    }

    /// A good login of `account` from `prefix`: remembered here and in the store.
    fn record(&self, account: &str, prefix: IpAddr, now: Instant) {
        let key = (account.to_ascii_uppercase(), prefix);
        let known_since = {
            let places = self.places.lock().unwrap_or_else(|e| e.into_inner());
            places.get(&key).copied()
        };
        self.remember(account, prefix, now);
        // Kept to the day: a user logging in again and again writes nothing more (a burst of
        // logins is no burst of commits for the store thread).
        let fresh = known_since.is_some_and(|t| now.saturating_duration_since(t) < REWRITE_AFTER);
        if let (Some(store), false) = (&self.store, fresh) {
            let (call, unix) = (account.to_string(), crate::clock::unix_now());
            let label = self.grouping.label(prefix);
            let _ = store.submit(move |s| {
                if let Err(e) = s.logged_in_from(&call, &label, unix) {
                    tracing::warn!(error = %e, "cannot keep where a login came from");
                }
            });
        }
    }

    fn remember(&self, account: &str, prefix: IpAddr, at: Instant) {
        let mut places = self.places.lock().unwrap_or_else(|e| e.into_inner());
        bounded_insert(&mut places, (account.to_ascii_uppercase(), prefix), at);
        let mut prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        bounded_insert(&mut prefixes, prefix, at);
    }
}

/// Inserts (or moves later) `key`, keeping at most [`MAX_ENTRIES`]: beyond it the places past
/// [`TRUSTED_FOR`] go, and a new key waits for room.
fn bounded_insert<K: Hash + Eq>(map: &mut HashMap<K, Instant>, key: K, at: Instant) {
    if map.len() >= MAX_ENTRIES && !map.contains_key(&key) {
        map.retain(|_, t| at.saturating_duration_since(*t) < TRUSTED_FOR);
    }
    if map.len() < MAX_ENTRIES || map.contains_key(&key) {
        let e = map.entry(key).or_insert(at);
        *e = (*e).max(at);
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
    accounts: Counts<String>,
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
    account: String,
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
        if let Some(ip) = self.ip {
            throttle.known.record(&self.account, ip, now);
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if let Some(ip) = self.ip {
            self.counts.addresses.checked(&ip, self.right);
        }
        self.counts.accounts.checked(&self.account, self.right);
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
    /// guessing from elsewhere.
    pub fn attempt(
        &self,
        ip: Option<IpAddr>,
        account: &str,
        now: Instant,
    ) -> Result<Attempt, Refused> {
        let account = account.to_ascii_uppercase();
        let ip = ip.map(|ip| self.group(ip));
        let t = &self.counts;
        // Both tables under their locks at once, so parallel attempts are counted one by one.
        let mut addresses = t.addresses.lock();
        let mut accounts = t.accounts.lock();
        let (by_ip, ip_checking) = ip.map_or((0, 0), |ip| Counts::live(&mut addresses, &ip, now));
        let (by_account, account_checking) = Counts::live(&mut accounts, &account, now);
        let at_home = ip.is_some_and(|ip| self.known.trusted(&account, ip, now));
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
        Counts::add(&mut accounts, &account, now);
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
        t.attempt(Some(home), "n0usr", now)
            .unwrap()
            .succeeded(&t, now);
        // Someone else guesses the account's password until it locks.
        for _ in 0..3 {
            assert!(t.attempt(Some(attacker), "N0USR", now).is_ok());
        }
        assert_eq!(
            t.attempt(Some(attacker), "N0USR", now).unwrap_err(),
            Refused::Locked
        );
        assert!(t.attempt(Some(stranger), "N0USR", now).is_err());
        assert!(
            t.attempt(None, "N0USR", now).is_err(),
            "a radio link has no address to trust"
        );
        // The user still gets in from home.
        assert!(t.attempt(Some(home), "N0USR", now).is_ok());
        // Until the trust runs out.
        let later = now + TRUSTED_FOR + Duration::from_secs(1);
        for _ in 0..3 {
            let _ = t.attempt(Some(attacker), "N0USR", later);
        }
        assert!(t.attempt(Some(home), "N0USR", later).is_err());
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
            let _ = t.attempt(Some(IpAddr::from([10, 9, 0, i])), "N0USR", now);
        }
        assert!(t
            .attempt(Some(IpAddr::from([10, 9, 0, 99])), "N0USR", now)
            .is_err());
        assert!(t
            .attempt(Some("10.0.0.1".parse().unwrap()), "N0USR", now)
            .is_ok());
        assert!(known.knows("10.0.0.1".parse().unwrap(), now));
        assert!(!known.knows("10.0.0.2".parse().unwrap(), now));
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
            .map(|_| t.attempt(Some(ip), "N0SYS", t0).unwrap())
            .collect();
        assert_eq!(t.attempt(Some(ip), "N0SYS", t0).unwrap_err(), Refused::Busy);
        assert!(!t.locked_out(ip, t0));
        // They fail: now it is a lockout.
        drop(held);
        assert_eq!(
            t.attempt(Some(ip), "N0SYS", t0).unwrap_err(),
            Refused::Locked
        );
        assert!(t.locked_out(ip, t0));
        // Another address is refused too: the account is locked.
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(t.attempt(Some(other), "n0sys", t0).is_err());
        // A good login on another account takes back only its own attempt.
        t.attempt(Some(other), "N0USR", t0)
            .unwrap()
            .succeeded(&t, t0);
        assert!(t.locked_out(ip, t0));
        assert_eq!(t.delay(Some(ip), t0), Duration::from_secs(4));
        assert!(!t.locked_out(ip, t0 + WINDOW));
        assert!(t.attempt(Some(ip), "N0SYS", t0 + WINDOW).is_ok());
    }

    #[test]
    fn an_ipv6_network_counts_as_one_address() {
        let t = throttle(3);
        let now = crate::clock::now();
        for i in 1..=3u16 {
            let ip = IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, i]);
            drop(t.attempt(Some(ip), &format!("N{i}X"), now).unwrap());
        }
        assert!(t.locked_out(IpAddr::from([0x2001, 0xdb8, 0, 1, 9, 9, 9, 9]), now));
        assert!(!t.locked_out(IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]), now));
    }
}
