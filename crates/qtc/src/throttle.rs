//! Slows down and then locks out addresses that keep failing to log in. No timer: entries are
//! aged whenever they are looked at.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures older than this are forgotten; a lockout lasts this long after the last failure.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// The longest pause imposed after a failed login.
pub const MAX_DELAY: Duration = Duration::from_secs(16);
/// Addresses remembered at most; the oldest are dropped beyond it.
const MAX_ENTRIES: usize = 10_000;

#[derive(Clone, Copy)]
struct Record {
    failures: u32,
    last: Instant,
}

/// Per-address login failure counts.
pub struct Throttle {
    lockout_after: u32,
    records: Mutex<HashMap<IpAddr, Record>>,
}

impl Throttle {
    /// Locks an address out after `lockout_after` failures within [`WINDOW`].
    pub fn new(lockout_after: u32) -> Throttle {
        Throttle {
            lockout_after,
            records: Mutex::new(HashMap::new()),
        }
    }

    fn live(&self, ip: IpAddr, now: Instant) -> Option<Record> {
        let mut map = self.records.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&ip) {
            Some(r) if now.duration_since(r.last) < WINDOW => Some(*r),
            Some(_) => {
                map.remove(&ip);
                None
            }
            None => None,
        }
    }

    /// True when the address must not even get a login prompt.
    pub fn locked_out(&self, ip: IpAddr, now: Instant) -> bool {
        self.live(ip, now)
            .is_some_and(|r| r.failures >= self.lockout_after)
    }

    /// Records a failure; returns how long to wait before the next prompt (doubling, capped).
    pub fn failed(&self, ip: IpAddr, now: Instant) -> Duration {
        let failures = self.live(ip, now).map_or(0, |r| r.failures) + 1;
        let mut map = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ENTRIES {
            map.retain(|_, r| now.duration_since(r.last) < WINDOW);
        }
        if map.len() < MAX_ENTRIES {
            map.insert(
                ip,
                Record {
                    failures,
                    last: now,
                },
            );
        }
        let secs = 1u64 << (failures - 1).min(4);
        Duration::from_secs(secs).min(MAX_DELAY)
    }

    /// Forgets the address's failures after a good login.
    pub fn succeeded(&self, ip: IpAddr) {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ip);
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
    fn backs_off_then_locks_out_then_forgets() {
        let t = Throttle::new(3);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let t0 = crate::clock::now();
        assert_eq!(t.failed(ip, t0), Duration::from_secs(1));
        assert_eq!(t.failed(ip, t0), Duration::from_secs(2));
        assert!(!t.locked_out(ip, t0));
        assert_eq!(t.failed(ip, t0), Duration::from_secs(4));
        assert!(t.locked_out(ip, t0));
        assert!(!t.locked_out(ip, t0 + WINDOW));
        t.failed(ip, t0);
        t.succeeded(ip);
        assert!(!t.locked_out(ip, t0));
    }
}
