//! The ARP table: which station (callsign, radio port) has which address. Learned entries age
//! out after the table's life, checked when they are read: nothing runs on a clock. The table
//! is bounded; when full, a new entry takes the place of the one that would expire first.
//! Static entries (the config's `[[ip.arp]]`) never age, are never replaced by what is heard,
//! and do not count against the bound.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

/// Default most learned entries.
pub const DEFAULT_MAX_ENTRIES: usize = 256;
/// Default life of a learned entry (JNOS's ARPLIFE: 15 minutes).
pub const DEFAULT_LIFE: Duration = Duration::from_secs(15 * 60);

/// One entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The station's callsign.
    pub call: Callsign,
    /// The radio port it was heard on (or the config puts it on).
    pub port: usize,
    /// When it expires; `None` for a static entry.
    pub expires: Option<Instant>,
}

/// What [`ArpTable::learn`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    /// A new entry, or one that now names another station or port.
    New,
    /// The same station again: its life starts over.
    Refreshed,
    /// A static entry holds the address: nothing changed.
    Static,
}

/// The table.
#[derive(Debug, Clone)]
pub struct ArpTable {
    entries: BTreeMap<Ipv4Addr, Entry>,
    max: usize,
    life: Duration,
    learned: usize,
}

impl ArpTable {
    /// An empty table of at most `max` learned entries that live `life`.
    #[must_use]
    pub fn new(max: usize, life: Duration) -> ArpTable {
        ArpTable {
            entries: BTreeMap::new(),
            max: max.max(1),
            life,
            learned: 0,
        }
    }

    /// Adds a static entry (replacing whatever was there).
    pub fn add_static(&mut self, ip: Ipv4Addr, call: Callsign, port: usize) {
        let old = self.entries.insert(
            ip,
            Entry {
                call,
                port,
                expires: None,
            },
        );
        if old.is_some_and(|e| e.expires.is_some()) {
            self.learned -= 1;
        }
    }

    /// The live entry for `ip`.
    #[must_use]
    pub fn lookup(&self, now: Instant, ip: Ipv4Addr) -> Option<&Entry> {
        self.entries
            .get(&ip)
            .filter(|e| e.expires.is_none_or(|t| t > now))
    }

    /// Whether `ip` has a live entry.
    #[must_use]
    pub fn knows(&self, now: Instant, ip: Ipv4Addr) -> bool {
        self.lookup(now, ip).is_some()
    }

    /// Notes that `call` on `port` has `ip`.
    pub fn learn(&mut self, now: Instant, ip: Ipv4Addr, call: Callsign, port: usize) -> Learned {
        let expires = Some(now + self.life);
        if let Some(e) = self.entries.get_mut(&ip) {
            if e.expires.is_none() {
                return Learned::Static;
            }
            let same = e.call == call && e.port == port && e.expires.is_some_and(|t| t > now);
            *e = Entry {
                call,
                port,
                expires,
            };
            return if same {
                Learned::Refreshed
            } else {
                Learned::New
            };
        }
        if self.learned >= self.max {
            self.make_room(now);
        }
        self.entries.insert(
            ip,
            Entry {
                call,
                port,
                expires,
            },
        );
        self.learned += 1;
        Learned::New
    }

    /// Drops the expired entries, or failing that the one closest to expiring.
    fn make_room(&mut self, now: Instant) {
        let before = self.entries.len();
        self.entries
            .retain(|_, e| e.expires.is_none_or(|t| t > now));
        self.learned -= before - self.entries.len();
        if self.learned < self.max {
            return;
        }
        let oldest = self
            .entries
            .iter()
            .filter_map(|(ip, e)| e.expires.map(|t| (t, *ip)))
            .min();
        if let Some((_, ip)) = oldest {
            self.entries.remove(&ip);
            self.learned -= 1;
        }
    }

    /// The live entries, by address.
    pub fn entries(&self, now: Instant) -> impl Iterator<Item = (Ipv4Addr, &Entry)> {
        self.entries
            .iter()
            .filter(move |(_, e)| e.expires.is_none_or(|t| t > now))
            .map(|(ip, e)| (*ip, e))
    }

    /// Learned entries held, expired or not (at most the bound).
    #[must_use]
    pub fn learned_len(&self) -> usize {
        self.learned
    }
}
