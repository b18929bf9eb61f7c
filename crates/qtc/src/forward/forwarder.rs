//! What every forwarding session shares ([`Forwarder`]): the partners, one session per
//! partner at a time (a new login of the partner replaces its old session), the BIDs arriving
//! right now (another partner proposing one is told "later"), and each partner's history.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use std::sync::atomic::{AtomicBool, Ordering};

use qtc_callsign::Callsign;
use qtc_fbb::{Mode, Role};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::{greeting, Active, LastResult, PartnerLog, Summary, HISTORY};
use crate::clock;
use crate::config::forward::Partner;
use crate::cpu_pool::CpuPool;
use crate::store_thread::StoreHandle;

/// What every forwarding session shares.
pub struct Forwarder {
    /// The store thread.
    pub store: StoreHandle,
    /// Our callsign.
    pub call: Callsign,
    /// Configured partners; a reload replaces them (sessions in progress keep theirs).
    partners: Mutex<Arc<[Partner]>>,
    /// Where compressed forms are made: neither the event thread nor the store thread.
    pub(super) packer: CpuPool,
    pub(super) base: qtc_fbb::Config,
    /// BID -> partner it is arriving from right now.
    pub(super) in_flight: Mutex<HashMap<String, Callsign>>,
    /// Partner -> its session in progress (at most one each).
    active: Mutex<HashMap<Callsign, Active>>,
    /// Told when a session ends and frees its partner.
    released: Notify,
    /// Partner -> how its last sessions ended, and its traffic.
    log: Mutex<HashMap<Callsign, PartnerLog>>,
    /// Partners a session failed with while our resumed transfer was unacknowledged: they get
    /// whole messages from then on (until restart). 64-bit LinFBB refuses every resume.
    no_resume: Mutex<HashSet<Callsign>>,
    /// Partner -> when its schedule calls it next (Unix seconds).
    next_calls: Mutex<HashMap<Callsign, i64>>,
    /// Partner -> what its schedule looks at: sessions ended, the queue mark last read.
    seen: Mutex<HashMap<Callsign, Seen>>,
    /// Moves at the end of every session or call: the schedules look again.
    ended: watch::Sender<u64>,
    /// The daemon's counters.
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl Forwarder {
    /// Shared state for forwarding with `partners`; `base` holds the session settings, `packer`
    /// makes compressed forms, `metrics` counts sessions, messages and errors.
    pub fn new(
        store: StoreHandle,
        call: Callsign,
        partners: Vec<Partner>,
        base: qtc_fbb::Config,
        packer: CpuPool,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Self {
        Forwarder {
            store,
            call,
            partners: Mutex::new(partners.into()),
            packer,
            base,
            in_flight: Mutex::new(HashMap::new()),
            active: Mutex::new(HashMap::new()),
            released: Notify::new(),
            log: Mutex::new(HashMap::new()),
            no_resume: Mutex::new(HashSet::new()),
            next_calls: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            ended: watch::Sender::new(0),
            metrics,
        }
    }

    /// The configured partner this callsign is, as configured now: a partner is its call
    /// whatever the SSID (`N0BBB-1` on the air is partner `N0BBB`).
    pub fn partner(&self, call: Callsign) -> Option<Partner> {
        let call = call.without_ssid();
        self.partners().iter().find(|p| p.call == call).cloned()
    }

    /// The configured partners, as configured now.
    pub fn partners(&self) -> Arc<[Partner]> {
        self.partners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the partners (a reload): the next session or call with each uses its new
    /// settings.
    pub fn set_partners(&self, partners: Vec<Partner>) {
        *self.partners.lock().unwrap_or_else(|e| e.into_inner()) = partners.into();
    }

    pub(super) fn session_config(&self, partner: Callsign) -> qtc_fbb::Config {
        let mut cfg = self.base.clone();
        let p = self.partner(partner);
        cfg.max_mode = p.as_ref().map_or(Mode::DEFAULT, |p| p.max_mode);
        cfg.secret = p.and_then(|p| p.secret);
        cfg.send_resumes = !self
            .no_resume
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&partner);
        cfg
    }

    /// Sessions in progress, by partner.
    pub fn active(&self) -> Vec<(Callsign, Active)> {
        let map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<_> = map.iter().map(|(k, a)| (*k, a.clone())).collect();
        v.sort_by_key(|(call, _)| *call);
        v
    }

    /// Keeps how a session or call with `partner` ended, as its last result.
    pub fn record(&self, partner: Callsign, role: Role, summary: &Summary) {
        let result = LastResult {
            at: clock::unix_now(),
            role,
            summary: summary.clone(),
        };
        let mut map = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let log = map.entry(partner).or_default();
        log.bytes_in += summary.bytes_in;
        log.bytes_out += summary.bytes_out;
        log.recent.truncate(HISTORY - 1);
        log.recent.push_front(result);
        drop(map);
        self.note_end(partner);
    }

    /// A session or call with `partner` is over: its schedule looks again.
    pub(super) fn note_end(&self, partner: Callsign) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.entry(partner).or_default().ends += 1;
        drop(seen);
        self.ended.send_modify(|n| *n += 1);
    }

    /// How many sessions and calls with `partner` have ended.
    pub(super) fn ends(&self, partner: Callsign) -> u64 {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(&partner).map_or(0, |s| s.ends)
    }

    /// Moves whenever a session or call ends.
    pub(super) fn ended(&self) -> watch::Receiver<u64> {
        self.ended.subscribe()
    }

    /// A session read `partner`'s queue when its mark was `mark`: what was queued up to it is
    /// taken care of (offered, or found refused or deferred).
    pub(super) fn queue_read(&self, partner: Callsign, mark: u64) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let s = seen.entry(partner).or_default();
        s.read_at = s.read_at.max(mark);
    }

    /// The queue mark `partner`'s sessions last read its queue at.
    pub(super) fn queue_read_at(&self, partner: Callsign) -> u64 {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(&partner).map_or(0, |s| s.read_at)
    }

    /// Whether a session with `partner` is running (or starting).
    pub fn in_session(&self, partner: Callsign) -> bool {
        let map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        map.contains_key(&partner)
    }

    /// A partner's recent sessions and traffic since the daemon started.
    pub fn partner_log(&self, partner: Callsign) -> PartnerLog {
        let map = self.log.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&partner).cloned().unwrap_or_default()
    }

    /// Notes when the schedule calls `partner` next (`None`: it does not).
    pub fn set_next_call(&self, partner: Callsign, at: Option<i64>) {
        let mut map = self.next_calls.lock().unwrap_or_else(|e| e.into_inner());
        match at {
            Some(at) => map.insert(partner, at),
            None => map.remove(&partner),
        };
    }

    /// When the schedule calls `partner` next, if it has one.
    pub fn next_call(&self, partner: Callsign) -> Option<i64> {
        let map = self.next_calls.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&partner).copied()
    }

    /// Reserves the partner for one session: its stop, or the session it already has.
    pub(super) fn claim(&self, partner: Callsign, role: Role) -> Result<Claimed, Active> {
        let mut map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = map.get(&partner) {
            return Err(a.clone());
        }
        let claimed = Claimed {
            stop: CancellationToken::new(),
            yielded: Arc::new(AtomicBool::new(false)),
        };
        map.insert(
            partner,
            Active {
                role,
                since: clock::unix_now(),
                mode: None,
                stop: claimed.clone(),
            },
        );
        Ok(claimed)
    }

    /// Our call's session with `partner` gives way to the partner's call, which crossed ours
    /// late on the AX.25 link and is the one kept; nothing if it runs no more.
    pub(super) fn yield_caller(&self, partner: Callsign) {
        let map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = map.get(&partner).filter(|a| a.role == Role::Caller) {
            a.stop.yielded.store(true, Ordering::Relaxed);
            a.stop.stop.cancel();
        }
    }

    /// Whether our call is the one kept when ours and `partner`'s cross ([`lower_call_kept`]).
    pub(super) fn ours_kept(&self, partner: Callsign) -> bool {
        lower_call_kept(self.call, partner)
    }

    /// Takes the partner for a session. A partner that logs in while its own earlier login's
    /// session runs has lost that one (killed, its link down, a cut nobody saw): the old
    /// session is closed, keeping its partial transfer, and this one waits for it to end.
    /// When our call and the partner's meet (calls crossed), both ends keep the call of the
    /// lower callsign ([`Forwarder::ours_kept`]): the other session yields, or this one is not
    /// started (`None`: the session in progress carries the mail both ways).
    pub(super) async fn take(&self, partner: Callsign, role: Role) -> Option<Claimed> {
        let deadline = tokio::time::Instant::now() + greeting::ANSWER_TIME;
        loop {
            // Registered before the check, so a release in between is not missed.
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let old = match self.claim(partner, role) {
                Ok(claimed) => return Some(claimed),
                Err(old) => old,
            };
            match meet(role, old.role, self.ours_kept(partner)) {
                Meet::Relogin => {
                    if !old.stop.stop.is_cancelled() {
                        tracing::warn!(%partner, "the partner logged in again: closing its old session");
                        old.stop.stop.cancel();
                    }
                }
                Meet::Running => return None,
                Meet::OldKept => {
                    tracing::info!(%partner, kept = ?old.role, "calls crossed: the session in progress is kept (the lower callsign's call)");
                    return None;
                }
                Meet::NewKept => {
                    if !old.stop.stop.is_cancelled() {
                        tracing::info!(%partner, kept = ?role, "calls crossed: the other session yields (the lower callsign's call is kept)");
                        old.stop.yielded.store(true, Ordering::Relaxed);
                        old.stop.stop.cancel();
                    }
                }
            }
            if tokio::time::timeout_at(deadline, released).await.is_err() {
                return None;
            }
        }
    }

    pub(super) fn set_mode(&self, partner: Callsign, mode: Mode) {
        if let Some(a) = self
            .active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&partner)
        {
            a.mode = Some(mode);
        }
    }

    pub(super) fn release(&self, partner: Callsign, bids: &HashSet<String>) {
        self.active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&partner);
        let mut fl = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        fl.retain(|bid, p| !(*p == partner && bids.contains(bid)));
        drop(fl);
        self.released.notify_waiters();
    }

    /// Marks a BID as arriving from `partner`; false when another partner is sending it.
    pub(super) fn take_bid(&self, bid: &str, partner: Callsign) -> bool {
        let mut fl = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        match fl.get(bid) {
            Some(p) if *p != partner => false,
            _ => {
                fl.insert(bid.to_string(), partner);
                true
            }
        }
    }
}

/// Whether, when our call and the partner's cross, ours is kept: both ends keep the call of
/// the lower callsign (the base call, then the SSID: [`Callsign`]'s order), so both keep the
/// same one. Calls that differ only in an SSID's spelling (`N0AAA`, `N0AAA-0`) are one
/// station: neither is kept.
pub(super) fn lower_call_kept(ours: Callsign, partner: Callsign) -> bool {
    ours < partner
}

/// What a session about to start does about the partner's session in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Meet {
    /// The partner logged in again: its old session is dead from its side and is closed.
    Relogin,
    /// Our call's session is running: a second call of ours is not made.
    Running,
    /// Calls crossed and the session in progress is the one both ends keep.
    OldKept,
    /// Calls crossed and the new one is kept: the one in progress yields.
    NewKept,
}

/// The rule [`Forwarder::take`] applies when a session in the role `new` meets one in the role
/// `old` with the same partner; `ours_kept`: our call is the one kept when calls cross.
pub(super) fn meet(new: Role, old: Role, ours_kept: bool) -> Meet {
    match (new, old) {
        (Role::Called, Role::Called) => Meet::Relogin,
        (Role::Caller, Role::Caller) => Meet::Running,
        _ if (new == Role::Caller) == ours_kept => Meet::NewKept,
        _ => Meet::OldKept,
    }
}

/// What a partner's schedule looks at.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    /// Sessions and calls ended.
    ends: u64,
    /// The queue mark its sessions last read the queue at.
    read_at: u64,
}

/// A session's hold on its partner: what ends it, and whether it ended because calls crossed
/// and the other one was kept.
#[derive(Clone, Debug)]
pub struct Claimed {
    /// Ends the session.
    pub(super) stop: CancellationToken,
    /// Set before `stop` when the session yields to a crossed call.
    pub(super) yielded: Arc<AtomicBool>,
}

impl Forwarder {
    /// Books the end of a session with `partner`: frees it for the next one, counts it, keeps
    /// its result.
    pub(super) fn finish(
        &self,
        partner: Callsign,
        role: Role,
        taken: &HashSet<String>,
        summary: &Summary,
        resumed_unacked: bool,
    ) {
        self.release(partner, taken);
        self.metrics
            .forwarded(partner, summary.received as u64, summary.sent as u64);
        if summary.busy && summary.error.is_none() {
            // It yielded to a crossed call, which carries the mail: no result of its own.
            tracing::info!(%partner, %summary, "forwarding session yielded");
            self.note_end(partner);
            return;
        }
        if summary.error.is_some() {
            self.metrics.error("forward");
            if resumed_unacked {
                tracing::warn!(%partner, "the session failed during a transfer we resumed at its request: sending it whole messages from now on");
                self.no_resume
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(partner);
            }
        }
        self.record(partner, role, summary);
        match &summary.error {
            None => tracing::info!(%partner, %summary, "forwarding session ended"),
            Some(_) => tracing::warn!(%partner, %summary, "forwarding session failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`lower_call_kept`] of two calls as written.
    fn kept_lower(ours: &str, partner: &str) -> bool {
        lower_call_kept(ours.parse().unwrap(), partner.parse().unwrap())
    }

    /// Both ends apply the rule to the same two callsigns: exactly one keeps its call.
    #[test]
    fn crossed_calls_keep_the_lower_callsign_on_both_ends() {
        for (a, b) in [
            ("N0AAA", "N0BBB"),
            ("n0bbb", "N0AAB"),
            ("N0AAA", "N0AAA-1"),
            ("N0AAA-2", "N0AAA-10"),
            ("W1AW", "N0AAA-3"),
        ] {
            assert_ne!(kept_lower(a, b), kept_lower(b, a), "{a} {b}");
        }
        assert!(kept_lower("N0AAA", "N0BBB"));
        assert!(kept_lower("N0AAA-2", "N0AAA-10"));
        assert!(!kept_lower("N0AAA", "N0AAA-0"));
        assert!(!kept_lower("N0AAA-0", "N0AAA"));
    }

    /// Two nodes whose calls cross: on each end one session meets the other (each end's own
    /// call as caller, the partner's as called, in either order). Both ends keep the same call,
    /// so exactly one session runs, on both ends in the same roles.
    #[test]
    fn crossed_calls_settle_on_one_session_whichever_starts_first() {
        let (a, b) = ("N0AAA", "N0BBB");
        for (first, second) in [(Role::Caller, Role::Called), (Role::Called, Role::Caller)] {
            for (first_b, second_b) in [(Role::Caller, Role::Called), (Role::Called, Role::Caller)]
            {
                assert_eq!(kept(a, b, first, second), a);
                assert_eq!(kept(b, a, first_b, second_b), a);
            }
        }
    }

    /// The call `us` keeps of its session with `them` in progress (`first`) and the one that
    /// came (`second`): its caller's callsign.
    fn kept<'a>(us: &'a str, them: &'a str, first: Role, second: Role) -> &'a str {
        let caller_of = |r: Role| if r == Role::Caller { us } else { them };
        match meet(second, first, kept_lower(us, them)) {
            Meet::NewKept => caller_of(second),
            Meet::OldKept => caller_of(first),
            other => panic!("{us}: {other:?}"),
        }
    }

    #[test]
    fn a_second_call_or_login_of_the_same_kind_is_not_a_crossing() {
        for ours_kept in [true, false] {
            assert_eq!(meet(Role::Caller, Role::Caller, ours_kept), Meet::Running);
            assert_eq!(meet(Role::Called, Role::Called, ours_kept), Meet::Relogin);
        }
    }
}
