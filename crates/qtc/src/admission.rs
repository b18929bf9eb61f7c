//! Who gets a place on the telnet and forwarding ports. At connect: a cap per source address
//! (per network for IPv6, see [`crate::prefix`]), then a place among the connections still
//! logging in. When those are all taken the one waiting longest of the network holding the
//! most is closed to make room, and half the places are kept for networks some account logged
//! in from before ([`KnownPlaces`]): connections that never log in, from however many
//! addresses, cannot keep out people who log in from where they usually do. At login:
//! separate pools for users and for forwarding partners, one place kept for a sysop when
//! every user place is taken, and a cap per account across every door (telnet, AX.25,
//! NET/ROM, the mail ports), so one account cannot hold every user place.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use qtc_callsign::Callsign;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::metrics::Metrics;
use crate::throttle::{AddressSlot, AddressSlots, KnownPlaces};

/// The sizes of the pools, from the configuration.
pub struct Sizes {
    /// Users logged in at once (the sysop's extra place not counted).
    pub users: usize,
    /// Sessions of one account at once (sysops and partners exempt).
    pub per_user: usize,
    /// Forwarding partners logged in at once.
    pub partners: usize,
    /// Connections not yet logged in, at once.
    pub logins: usize,
    /// Connections from one address at once, logged in or not.
    pub per_address: usize,
}

/// The places of the BBS ports.
pub struct Admission {
    /// Connections per source address (or network), taken at connect.
    per_address: AddressSlots,
    logins: Places,
    users: Arc<Semaphore>,
    sysop: Arc<Semaphore>,
    partners: Arc<Semaphore>,
    /// Sessions open per account, for the cap per account.
    accounts: Arc<Mutex<HashMap<Callsign, usize>>>,
    sizes: Sizes,
}

/// A logged-in session's place, and its share of its account's; given back when dropped.
#[derive(Debug)]
pub struct Seat {
    _place: OwnedSemaphorePermit,
    _account: Option<AccountShare>,
}

/// One of an account's sessions, counted against its cap while held.
#[derive(Debug)]
struct AccountShare {
    call: Callsign,
    accounts: Arc<Mutex<HashMap<Callsign, usize>>>,
}

impl Drop for AccountShare {
    fn drop(&mut self) {
        let mut map = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.call) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.call);
            }
        }
    }
}

impl Admission {
    /// Pools of the given sizes; closed places are counted in `metrics`; `known` says which
    /// networks accounts logged in from (and how addresses group).
    pub fn new(sizes: Sizes, metrics: Arc<Metrics>, known: Arc<KnownPlaces>) -> Admission {
        Admission {
            per_address: AddressSlots::new(sizes.per_address),
            logins: Places::new(sizes.logins, metrics, known),
            users: Arc::new(Semaphore::new(sizes.users)),
            sysop: Arc::new(Semaphore::new(1)),
            partners: Arc::new(Semaphore::new(sizes.partners)),
            accounts: Arc::default(),
            sizes,
        }
    }

    /// One more connection from `ip`'s network, or `None` when it has its cap already.
    pub fn take_address(&self, ip: IpAddr) -> Option<AddressSlot> {
        self.per_address
            .take(self.logins.known.grouping().group(ip))
    }

    /// A place among the connections logging in; may close another (see [`Places`]), or
    /// `None` when every place is held by connections it may not close.
    pub fn enter_login(&self, ip: IpAddr) -> Option<Place> {
        self.logins.enter(ip)
    }

    /// A place for `call`'s session that has just logged in, or the line that refuses it. A
    /// user's sessions are capped per account, at every door together: one account cannot
    /// take the places of the others. Sysops and partners are not capped (a partner has one
    /// forwarding session at a time anyway).
    pub fn seat(&self, call: Callsign, sysop: bool, partner: bool) -> Result<Seat, String> {
        if partner {
            let place = self.partners.clone().try_acquire_owned().map_err(|_| {
                format!(
                    "Sorry, all {} forwarding sessions are in use. Try again later.",
                    self.sizes.partners
                )
            })?;
            return Ok(Seat {
                _place: place,
                _account: None,
            });
        }
        let account = match sysop {
            true => None,
            false => Some(self.account_share(call)?),
        };
        let place = match self.users.clone().try_acquire_owned() {
            Ok(place) => place,
            Err(_) if sysop => self.sysop.clone().try_acquire_owned().map_err(|_| {
                format!(
                    "Sorry, all {} sessions and the sysop's are in use.",
                    self.sizes.users
                )
            })?,
            Err(_) => {
                return Err(format!(
                    "Sorry, all {} sessions are in use. Try again later.",
                    self.sizes.users
                ))
            }
        };
        Ok(Seat {
            _place: place,
            _account: account,
        })
    }

    /// One more session of `call`, or the line that says it has its share.
    fn account_share(&self, call: Callsign) -> Result<AccountShare, String> {
        let mut map = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        let held = map.entry(call).or_insert(0);
        if *held >= self.sizes.per_user {
            let max = self.sizes.per_user;
            drop(map);
            tracing::warn!(%call, max, "refused at login: the account has its sessions already");
            return Err(format!(
                "Sorry, {call} has {max} sessions open here already, the most one account may \
                 have. Close one and try again."
            ));
        }
        *held += 1;
        Ok(AccountShare {
            call,
            accounts: self.accounts.clone(),
        })
    }
}

/// A fixed number of places for connections. When all are taken, a newcomer still gets in:
/// the longest-waiting connection of the party holding the most places is told to go. A
/// connection from a network some account logged in from lately belongs to that account's
/// party; any other to its network's. Half the places are kept for the accounts' parties: a
/// newcomer from elsewhere only ever displaces others from elsewhere, so a flood from any number
/// of new addresses churns among itself, and one account's places (however many addresses it
/// logged in from) count as one party, which only displaces itself.
pub struct Places {
    max: usize,
    /// Places only connections from known networks may take.
    reserved: usize,
    waiting: Arc<Mutex<Waiting>>,
    metrics: Arc<Metrics>,
    known: Arc<KnownPlaces>,
}

/// Who a connection waiting to log in counts for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Party {
    /// A network the account logged in from lately ([`KnownPlaces::whose`]).
    Account(Callsign),
    /// A network no account logged in from lately.
    Stranger(IpAddr),
}

impl Party {
    fn known(&self) -> bool {
        matches!(self, Party::Account(_))
    }
}

#[derive(Default)]
struct Waiting {
    next: u64,
    /// Oldest first: the party and the sender that keeps the [`Place`] open.
    open: BTreeMap<u64, (Party, oneshot::Sender<()>)>,
    /// Places held per party.
    per_party: HashMap<Party, usize>,
    /// Places held by strangers.
    strangers: usize,
}

impl Waiting {
    fn remove(&mut self, id: u64) {
        if let Some((party, _)) = self.open.remove(&id) {
            if !party.known() {
                self.strangers -= 1;
            }
            if let Some(n) = self.per_party.get_mut(&party) {
                *n -= 1;
                if *n == 0 {
                    self.per_party.remove(&party);
                }
            }
        }
    }

    /// The longest-waiting place of the party with the most, among known or unknown ones.
    fn victim(&self, known: bool) -> Option<u64> {
        let most = self
            .per_party
            .iter()
            .filter(|(p, _)| p.known() == known)
            .map(|(_, n)| *n)
            .max()?;
        self.open
            .iter()
            .find(|(_, (p, _))| p.known() == known && self.per_party.get(p) == Some(&most))
            .map(|(id, _)| *id)
    }

    /// Whom a newcomer displaces: a stranger only other strangers, and only when the places
    /// strangers may hold are full; someone from a known network a stranger first.
    fn make_room(&self, max: usize, reserved: usize, known: bool) -> Result<Option<u64>, ()> {
        let full = self.open.len() >= max;
        if known {
            if !full {
                return Ok(None);
            }
            return self
                .victim(false)
                .or_else(|| self.victim(true))
                .map(Some)
                .ok_or(());
        }
        if !full && self.strangers < max.saturating_sub(reserved) {
            return Ok(None);
        }
        self.victim(false).map(Some).ok_or(())
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
    /// `max` places, half of them kept for networks in `known`; each one closed to make room
    /// is counted in `metrics`.
    pub fn new(max: usize, metrics: Arc<Metrics>, known: Arc<KnownPlaces>) -> Places {
        let max = max.max(1);
        Places {
            max,
            reserved: max / 2,
            waiting: Default::default(),
            metrics,
            known,
        }
    }

    /// A place for a new connection from `ip`; may close another. `None` when only places
    /// this connection may not take are left.
    pub fn enter(&self, ip: IpAddr) -> Option<Place> {
        let party = match self.known.whose(ip, crate::clock::now()) {
            Some(account) => Party::Account(account),
            None => Party::Stranger(self.known.grouping().group(ip)),
        };
        let known = party.known();
        let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match w.make_room(self.max, self.reserved, known) {
                Ok(None) => break,
                // Dropping its sender tells the chosen connection to go.
                Ok(Some(id)) => {
                    w.remove(id);
                    self.metrics.error("places_full");
                }
                Err(()) => return None,
            }
        }
        let (tx, evicted) = oneshot::channel();
        let id = w.next;
        w.next += 1;
        *w.per_party.entry(party.clone()).or_insert(0) += 1;
        w.open.insert(id, (party, tx));
        if !known {
            w.strangers += 1;
        }
        Some(Place {
            id,
            waiting: self.waiting.clone(),
            evicted,
        })
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

    fn nobody_known() -> Arc<KnownPlaces> {
        Arc::new(KnownPlaces::new(Default::default(), &[], 0, None))
    }

    /// Whether the place is still open (not told to go).
    fn open(p: &mut Place) -> bool {
        let waker = std::task::Waker::noop();
        !p.poll_closed(&mut std::task::Context::from_waker(waker))
    }

    #[test]
    fn the_busiest_address_makes_room() {
        // Five places, three of them for strangers.
        let pool = Places::new(5, Arc::default(), nobody_known());
        let (user, flood): (IpAddr, IpAddr) =
            ("192.0.2.1".parse().unwrap(), "192.0.2.66".parse().unwrap());
        let mut mine = pool.enter(user).unwrap();
        let mut first = pool.enter(flood).unwrap();
        let mut second = pool.enter(flood).unwrap();
        let _third = pool.enter(flood).unwrap();
        // The flood's oldest is told to go; the user, waiting longer, keeps the place.
        assert!(!open(&mut first));
        assert!(open(&mut mine) && open(&mut second));
        drop(second);
        assert_eq!(pool.waiting.lock().unwrap().open.len(), 2);
        assert_eq!(
            pool.waiting.lock().unwrap().per_party[&Party::Stranger(flood)],
            1
        );
    }

    #[test]
    fn a_flood_from_new_addresses_never_displaces_a_known_one() {
        let unix = 1_800_000_000;
        let rows = [("N0USR".to_string(), "192.0.2.1/32".to_string(), unix - 60)];
        let known = Arc::new(KnownPlaces::new(Default::default(), &rows, unix, None));
        let pool = Places::new(200, Arc::default(), known);
        let user: IpAddr = "192.0.2.1".parse().unwrap();
        let mut mine = pool.enter(user).unwrap();
        // 250 addresses, each reconnecting: the flood churns through its own 100 places.
        let mut flood = Vec::new();
        for round in 0..4u8 {
            for a in 0..250u8 {
                flood.push(pool.enter(IpAddr::from([10, round, 0, a])).unwrap());
            }
        }
        assert!(open(&mut mine));
        let open_flood = flood
            .iter_mut()
            .filter_map(|p| open(p).then_some(()))
            .count();
        assert_eq!(open_flood, 100);
        // A second known connection takes a stranger's place when all are full.
        let mut again = pool.enter(user).unwrap();
        assert!(open(&mut again) && open(&mut mine));
    }

    #[test]
    fn one_account_known_at_many_addresses_is_one_party() {
        let unix = 1_800_000_000;
        let mut rows = vec![("N0USR".to_string(), "192.0.2.1/32".to_string(), unix - 60)];
        // Another account logged in once from each of 250 addresses.
        rows.extend((0..250u8).map(|a| ("N0ATK".to_string(), format!("10.1.0.{a}/32"), unix)));
        let known = Arc::new(KnownPlaces::new(Default::default(), &rows, unix, None));
        let pool = Places::new(200, Arc::default(), known);
        let user: IpAddr = "192.0.2.1".parse().unwrap();
        let mut mine: Vec<Place> = (0..3).map(|_| pool.enter(user).unwrap()).collect();
        // It churns connections that never log in from all of them.
        let mut churn = Vec::new();
        for _ in 0..4 {
            for a in 0..250u8 {
                churn.extend(pool.enter(IpAddr::from([10, 1, 0, a])));
            }
        }
        assert!(mine.iter_mut().all(open));
    }

    #[test]
    fn an_ipv6_network_is_one_party() {
        let pool = Places::new(4, Arc::default(), nobody_known());
        let one = |i: u16| IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, i]);
        let mut a = pool.enter(one(1)).unwrap();
        let mut b = pool
            .enter(IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]))
            .unwrap();
        let mut c = pool.enter(one(2)).unwrap();
        // Two strangers' places: the /64 holding both loses its oldest, not the other network.
        assert!(!open(&mut a) && open(&mut b) && open(&mut c));
    }

    fn call(text: &str) -> Callsign {
        Callsign::parse_station(text).unwrap()
    }

    #[test]
    fn users_partners_and_the_sysop_have_their_own_places() {
        let a = Admission::new(
            Sizes {
                users: 1,
                per_user: 1,
                partners: 1,
                logins: 4,
                per_address: 4,
            },
            Arc::default(),
            nobody_known(),
        );
        let _user = a.seat(call("N0USR"), false, false).unwrap();
        assert!(a
            .seat(call("N0TWO"), false, false)
            .unwrap_err()
            .contains("all 1 sessions"));
        let _partner = a.seat(call("N0BBS"), false, true).unwrap();
        assert!(a.seat(call("N0BBT"), false, true).is_err());
        let _sysop = a.seat(call("N0SYS"), true, false).unwrap();
        assert!(a.seat(call("N0SYS"), true, false).is_err());
    }

    #[test]
    fn one_account_takes_no_more_than_its_share() {
        let a = Admission::new(
            Sizes {
                users: 20,
                per_user: 3,
                partners: 1,
                logins: 4,
                per_address: 4,
            },
            Arc::default(),
            nobody_known(),
        );
        let mine: Vec<Seat> = (0..3)
            .map(|_| a.seat(call("n0usr"), false, false).unwrap())
            .collect();
        let refused = a.seat(call("N0USR"), false, false).unwrap_err();
        assert!(refused.contains("N0USR has 3 sessions"), "{refused}");
        // Everyone else still gets in, and the sysop is not capped.
        let _other = a.seat(call("N0TWO"), false, false).unwrap();
        let _sysop: Vec<Seat> = (0..5)
            .map(|_| a.seat(call("N0SYS"), true, false).unwrap())
            .collect();
        // A session given back is the account's again.
        drop(mine);
        assert!(a.seat(call("N0USR"), false, false).is_ok());
        assert!(!a.accounts.lock().unwrap().contains_key(&call("N0USR")));
    }
}
