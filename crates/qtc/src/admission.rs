//! Who gets a place on the telnet and forwarding ports. At connect: a cap per source address,
//! then a place among the connections still logging in (when those are all taken, the one
//! waiting longest is closed to make room, so connections that never log in cannot keep a
//! real user out). At login: separate pools for users and for forwarding partners, and one
//! place kept for a sysop when every user place is taken.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::metrics::Metrics;
use crate::throttle::AddressSlots;

/// The sizes of the pools, from the configuration.
pub struct Sizes {
    /// Users logged in at once (the sysop's extra place not counted).
    pub users: usize,
    /// Forwarding partners logged in at once.
    pub partners: usize,
    /// Connections not yet logged in, at once.
    pub logins: usize,
    /// Connections from one address at once, logged in or not.
    pub per_address: usize,
}

/// The places of the BBS ports.
pub struct Admission {
    /// Connections per source address, taken at connect.
    pub per_address: AddressSlots,
    logins: Places,
    users: Arc<Semaphore>,
    sysop: Arc<Semaphore>,
    partners: Arc<Semaphore>,
    sizes: Sizes,
}

/// A logged-in session's place; given back when dropped.
pub type Seat = OwnedSemaphorePermit;

impl Admission {
    /// Pools of the given sizes; closed places are counted in `metrics`.
    pub fn new(sizes: Sizes, metrics: Arc<Metrics>) -> Admission {
        Admission {
            per_address: AddressSlots::new(sizes.per_address),
            logins: Places::new(sizes.logins, metrics),
            users: Arc::new(Semaphore::new(sizes.users)),
            sysop: Arc::new(Semaphore::new(1)),
            partners: Arc::new(Semaphore::new(sizes.partners)),
            sizes,
        }
    }

    /// A place among the connections logging in; may close another (see [`Places`]).
    pub fn enter_login(&self, ip: IpAddr) -> Place {
        self.logins.enter(ip)
    }

    /// A place for a session that has just logged in, or the line that refuses it.
    pub fn seat(&self, sysop: bool, partner: bool) -> Result<Seat, String> {
        if partner {
            return self.partners.clone().try_acquire_owned().map_err(|_| {
                format!(
                    "Sorry, all {} forwarding sessions are in use. Try again later.",
                    self.sizes.partners
                )
            });
        }
        let user = self.users.clone().try_acquire_owned();
        match user {
            Ok(seat) => Ok(seat),
            Err(_) if sysop => self.sysop.clone().try_acquire_owned().map_err(|_| {
                format!(
                    "Sorry, all {} sessions and the sysop's are in use.",
                    self.sizes.users
                )
            }),
            Err(_) => Err(format!(
                "Sorry, all {} sessions are in use. Try again later.",
                self.sizes.users
            )),
        }
    }
}

/// A fixed number of places for connections. When all are taken, a newcomer still gets in:
/// the longest-waiting connection of the address holding the most places is told to go. A
/// flood from a few hosts so only ever displaces itself; to displace a real user an attacker
/// needs as many addresses as there are places, each waiting longer than the user takes.
pub struct Places {
    max: usize,
    waiting: Arc<Mutex<Waiting>>,
    metrics: Arc<Metrics>,
}

#[derive(Default)]
struct Waiting {
    next: u64,
    /// Oldest first: the address and the sender that keeps the [`Place`] open.
    open: BTreeMap<u64, (IpAddr, oneshot::Sender<()>)>,
    per_address: HashMap<IpAddr, usize>,
}

impl Waiting {
    fn remove(&mut self, id: u64) {
        if let Some((ip, _)) = self.open.remove(&id) {
            if let Some(n) = self.per_address.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    self.per_address.remove(&ip);
                }
            }
        }
    }

    /// The longest-waiting place of the address with the most.
    fn victim(&self) -> Option<u64> {
        let most = *self.per_address.values().max()?;
        self.open
            .iter()
            .find(|(_, (ip, _))| self.per_address.get(ip) == Some(&most))
            .map(|(id, _)| *id)
    }
}

/// A connection's place. [`Place::closed`] completes when a newer connection took it; dropping
/// the place (at login or disconnect) gives it back.
pub struct Place {
    id: u64,
    waiting: Arc<Mutex<Waiting>>,
    evicted: oneshot::Receiver<()>,
}

impl Places {
    /// `max` places; each one closed to make room is counted in `metrics`.
    pub fn new(max: usize, metrics: Arc<Metrics>) -> Places {
        Places {
            max: max.max(1),
            waiting: Default::default(),
            metrics,
        }
    }

    /// A place for a new connection from `ip`; may close another.
    pub fn enter(&self, ip: IpAddr) -> Place {
        let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        while w.open.len() >= self.max {
            // Dropping its sender tells the chosen connection to go.
            let Some(id) = w.victim() else { break };
            w.remove(id);
            self.metrics.error("places_full");
        }
        let (tx, evicted) = oneshot::channel();
        let id = w.next;
        w.next += 1;
        w.open.insert(id, (ip, tx));
        *w.per_address.entry(ip).or_insert(0) += 1;
        Place {
            id,
            waiting: self.waiting.clone(),
            evicted,
        }
    }
}

impl Place {
    /// Completes when a newer connection needed this place.
    pub async fn closed(&mut self) {
        let _ = (&mut self.evicted).await;
    }

    /// [`Place::closed`] for a hand-written `poll`: ready once the place was taken.
    pub fn poll_closed(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        std::pin::Pin::new(&mut self.evicted).poll(cx).is_ready()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        w.remove(self.id);
    }
}

/// A failure this long after the previous one starts a new run, logged again.
const QUIET: std::time::Duration = std::time::Duration::from_secs(60);

/// Logs failing `accept` calls once per run of failures (out of file descriptors, say) instead
/// of once per call: while descriptors are short, accept fails, works once, fails again, so a
/// run ends only after a minute without failures. Every failure is counted in the metrics.
pub struct AcceptErrors {
    last: Option<std::time::Instant>,
    metrics: Arc<Metrics>,
}

impl AcceptErrors {
    /// No failures yet; they will be counted in `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> AcceptErrors {
        AcceptErrors {
            last: None,
            metrics,
        }
    }

    /// An accept failed: the first of a run is logged as a warning.
    pub fn failed(&mut self, listener: &str, e: &std::io::Error) {
        self.metrics.error("accept");
        let now = crate::clock::now();
        if !matches!(self.last, Some(t) if now.duration_since(t) < QUIET) {
            tracing::warn!(%listener, error = %e, "accept failed; backing off (not logged again until a minute without failures)");
        }
        self.last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_busiest_address_makes_room() {
        let pool = Places::new(3, Arc::default());
        let (user, flood): (IpAddr, IpAddr) =
            ("192.0.2.1".parse().unwrap(), "192.0.2.66".parse().unwrap());
        let mut mine = pool.enter(user);
        let mut first = pool.enter(flood);
        let mut second = pool.enter(flood);
        let _third = pool.enter(flood);
        // The flood's oldest is told to go; the user, waiting longer, keeps the place.
        first.closed().await;
        for p in [&mut mine, &mut second] {
            tokio::select! {
                biased;
                _ = p.closed() => panic!("closed the wrong place"),
                _ = std::future::ready(()) => {}
            }
        }
        drop(second);
        assert_eq!(pool.waiting.lock().unwrap().open.len(), 2);
        assert_eq!(pool.waiting.lock().unwrap().per_address[&flood], 1);
    }

    #[test]
    fn users_partners_and_the_sysop_have_their_own_places() {
        let a = Admission::new(
            Sizes {
                users: 1,
                partners: 1,
                logins: 4,
                per_address: 4,
            },
            Arc::default(),
        );
        let _user = a.seat(false, false).unwrap();
        assert!(a.seat(false, false).unwrap_err().contains("all 1 sessions"));
        let _partner = a.seat(false, true).unwrap();
        assert!(a.seat(false, true).is_err());
        let _sysop = a.seat(true, false).unwrap();
        assert!(a.seat(true, false).is_err());
    }
}
