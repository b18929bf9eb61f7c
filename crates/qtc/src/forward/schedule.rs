//! When qtc calls each partner: at once (within [`QUEUED_WITHIN`]) when mail is queued for it
//! that no session has taken yet, again every `interval` while mail is left after a call, and
//! every `poll` to collect the partner's mail (reverse forwarding) when nothing else brought a
//! session. Any session with the partner, whoever called, counts as its poll.
//!
//! One task per partner ([`Schedules`]); it sleeps until its next deadline, a store write (the
//! partner's queue mark may have moved), a session's end, a reload or shutdown: an idle partner
//! with nothing queued costs nothing between polls. Each delay is jittered with randomness
//! from the daemon, so neighbours started together do not call each other in the same
//! moment ([`Plan`] is the arithmetic, given the time and the random numbers).

use std::sync::Arc;
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;
use tokio::sync::watch;

use super::{call, Forwarder};
use crate::clock;
use crate::config::forward::{Connect, Partner};
use crate::radio::Radios;

/// How soon a partner is called once mail is queued for it: a random share of this, so that
/// the mail of a few seconds goes in one session and two neighbours given the same bulletin
/// do not call each other at once.
pub const QUEUED_WITHIN: Duration = Duration::from_secs(5);

/// A partner's calling settings: `interval` and `poll` as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cadence {
    /// After a call that left mail behind, the next one comes this much later; `None`: calls
    /// only on demand and at `poll` (queued mail waits for them too).
    pub interval: Option<Duration>,
    /// With nothing to send, a call this long after the last session; `None`: never.
    pub poll: Option<Duration>,
}

impl Cadence {
    /// Of a configured partner; a partner we cannot call has none.
    pub fn of(p: &Partner) -> Cadence {
        match p.connect {
            Connect::None => Cadence {
                interval: None,
                poll: None,
            },
            _ => Cadence {
                interval: p.interval,
                poll: p.poll,
            },
        }
    }

    fn calls(&self) -> bool {
        self.interval.is_some() || self.poll.is_some()
    }
}

/// Why a call is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Mail was queued that no session has taken.
    Queued,
    /// Mail was left after the last call.
    Retry,
    /// Time to collect the partner's mail.
    Poll,
}

/// A partner's next calls: the schedule's arithmetic, fed the time, what happened and random
/// numbers (it reads no clock and no entropy).
#[derive(Clone, Debug)]
pub struct Plan {
    cadence: Cadence,
    queued: Option<Instant>,
    retry: Option<Instant>,
    poll: Option<Instant>,
}

impl Plan {
    /// A plan starting at `now`: the first poll a jittered `poll` away.
    pub fn new(cadence: Cadence, now: Instant, r: u64) -> Plan {
        Plan {
            cadence,
            queued: None,
            retry: None,
            poll: cadence.poll.map(|p| now + jittered(p, r)),
        }
    }

    /// New settings (a reload): the waits they set count from `now`; a queued call stays.
    pub fn set(&mut self, cadence: Cadence, now: Instant, r: u64) {
        let retry = self.retry.is_some();
        *self = Plan {
            queued: self.queued.filter(|_| cadence.interval.is_some()),
            ..Plan::new(cadence, now, r)
        };
        if retry {
            self.retry = cadence.interval.map(|i| now + jittered(i, r));
        }
    }

    /// Mail was queued that no session has taken yet: a call within [`QUEUED_WITHIN`] (when
    /// the partner has an interval, and none is due sooner).
    pub fn queued(&mut self, now: Instant, r: u64) {
        if self.cadence.interval.is_some() && self.queued.is_none() {
            let share = r % (QUEUED_WITHIN.as_millis() as u64 + 1);
            self.queued = Some(now + Duration::from_millis(share));
        }
    }

    /// A session or call with the partner ended at `now`, leaving mail for it when `left`:
    /// the next poll counts from now, and mail left goes an interval later.
    pub fn ended(&mut self, now: Instant, left: bool, r: u64) {
        self.queued = None;
        self.retry = match (left, self.cadence.interval) {
            (true, Some(i)) => Some(now + jittered(i, r)),
            _ => None,
        };
        self.poll = self
            .cadence
            .poll
            .map(|p| now + jittered(p, r.rotate_left(32)));
    }

    /// The next call and why, if any.
    pub fn next(&self) -> Option<(Instant, Why)> {
        [
            (self.queued, Why::Queued),
            (self.retry, Why::Retry),
            (self.poll, Why::Poll),
        ]
        .into_iter()
        .filter_map(|(at, why)| Some((at?, why)))
        .min_by_key(|(at, _)| *at)
    }

    /// Takes the calls due at `now` (the one call made for them ends in [`Plan::ended`]);
    /// the most urgent reason, if any was due.
    pub fn fire(&mut self, now: Instant) -> Option<Why> {
        let (_, why) = self.next().filter(|(at, _)| *at <= now)?;
        for slot in [&mut self.queued, &mut self.retry, &mut self.poll] {
            if slot.is_some_and(|at| at <= now) {
                *slot = None;
            }
        }
        Some(why)
    }
}

/// `d` less a random share of it, up to a tenth: two nodes' calls drift apart, and a partner
/// is never called later than its setting says.
fn jittered(d: Duration, r: u64) -> Duration {
    let tenth = u64::try_from(d.as_millis() / 10).unwrap_or(u64::MAX);
    d - Duration::from_millis(r % tenth.saturating_add(1))
}

/// The partners' schedules: one task per partner, following its [`Cadence`] (a reload sends
/// a new one; a partner removed ends its task).
pub struct Schedules {
    fwd: Arc<Forwarder>,
    radios: Radios,
    shutdown: watch::Receiver<bool>,
    tasks: tokio_util::task::TaskTracker,
    /// Partner -> its task's cadence. A partner removed by a reload is dropped here, which
    /// ends its task.
    each: std::sync::Mutex<std::collections::HashMap<Callsign, watch::Sender<Cadence>>>,
}

impl Schedules {
    /// Schedules for the partners of `fwd`, calling over TCP or `radios`, spawned on `tasks`
    /// and ending at `shutdown`. None runs until [`Schedules::apply`].
    pub fn new(
        fwd: Arc<Forwarder>,
        radios: Radios,
        shutdown: watch::Receiver<bool>,
        tasks: tokio_util::task::TaskTracker,
    ) -> Schedules {
        Schedules {
            fwd,
            radios,
            shutdown,
            tasks,
            each: Default::default(),
        }
    }

    /// Takes `partners` as the configured ones (at start and at each reload): the forwarder's
    /// next sessions use their settings, and each one's schedule follows its cadence (changed
    /// settings count from now; a partner removed is no longer called).
    pub fn apply(&self, partners: &[Partner]) {
        self.fwd.set_partners(partners.to_vec());
        let mut each = self.each.lock().unwrap_or_else(|e| e.into_inner());
        each.retain(|call, _| partners.iter().any(|p| p.call == *call));
        for p in partners {
            let cadence = Cadence::of(p);
            if let Some(tx) = each.get(&p.call) {
                tx.send_if_modified(|c| std::mem::replace(c, cadence) != cadence);
                continue;
            }
            let (tx, rx) = watch::channel(cadence);
            each.insert(p.call, tx);
            let task = Task {
                fwd: self.fwd.clone(),
                radios: self.radios.clone(),
                partner: p.call,
                plan: Plan::new(cadence, clock::now(), clock::random_seed()),
                ends_seen: self.fwd.ends(p.call),
                tried_at: 0,
            };
            self.tasks.spawn(task.run(rx, self.shutdown.clone()));
        }
    }
}

/// One partner's schedule.
struct Task {
    fwd: Arc<Forwarder>,
    radios: Radios,
    partner: Callsign,
    plan: Plan,
    /// The partner's sessions ended so far, as last seen.
    ends_seen: u64,
    /// The partner's queue mark when we last called it: mail queued up to it was tried.
    tried_at: u64,
}

impl Task {
    /// Calls the partner when its plan says until shutdown, or until its schedule is dropped.
    async fn run(
        mut self,
        mut cadence: watch::Receiver<Cadence>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut writes = self.fwd.store.changes();
        let mut ends = self.fwd.ended();
        let mut timer = clock::Timer::new();
        // Mail left from before a restart goes now.
        self.look(true).await;
        loop {
            timer.set(self.publish_next());
            let calls = cadence.borrow().calls();
            tokio::select! {
                _ = timer.fired() => self.fire(&shutdown).await,
                // Store writes and session ends matter only to a partner we call.
                Ok(()) = writes.changed(), if calls => self.look(false).await,
                Ok(()) = ends.changed(), if calls => self.look(false).await,
                changed = cadence.changed() => {
                    if changed.is_err() {
                        self.fwd.set_next_call(self.partner, None);
                        return;
                    }
                    let c = *cadence.borrow_and_update();
                    self.plan.set(c, clock::now(), clock::random_seed());
                    // Said after the status shows it, so a reload's effect can be seen.
                    self.publish_next();
                    let next_call = self.fwd.next_call(self.partner);
                    tracing::info!(partner = %self.partner, ?next_call, "call schedule changed");
                }
                _ = shutdown.changed() => return,
            }
        }
    }

    /// The next call's time: shown as a Unix time in the status, returned for the timer.
    fn publish_next(&self) -> Option<Instant> {
        let next = self.plan.next().map(|(at, _)| at);
        let wall = next.map(|at| {
            let wait = at.saturating_duration_since(clock::now());
            clock::unix_now() + wait.as_secs() as i64
        });
        self.fwd.set_next_call(self.partner, wall);
        next
    }

    /// Sees what changed for the partner: a session that ended (whether mail is left for it),
    /// mail queued that no session or call has taken. `start`: also mail left from before.
    async fn look(&mut self, start: bool) {
        let ends = self.fwd.ends(self.partner);
        if ends != self.ends_seen || start {
            self.ends_seen = ends;
            let left = self.left().await;
            if start {
                if left {
                    self.plan.queued(clock::now(), clock::random_seed());
                }
            } else {
                self.plan.ended(clock::now(), left, clock::random_seed());
            }
        }
        let mark = self.fwd.store.queue_marks().get(self.partner);
        if mark > self.fwd.queue_read_at(self.partner).max(self.tried_at) {
            self.plan.queued(clock::now(), clock::random_seed());
        }
    }

    /// Whether mail waits for the partner.
    async fn left(&self) -> bool {
        // The counts are the queue table's rows: partners by their call's text.
        let partner = self.partner.to_string();
        self.fwd
            .store
            .call(move |s| s.queue_counts())
            .await
            .ok()
            .and_then(Result::ok)
            .is_some_and(|counts| counts.iter().any(|(p, n)| *p == partner && *n > 0))
    }

    /// A call is due: made unless a session with the partner runs (said; its end is seen).
    async fn fire(&mut self, shutdown: &watch::Receiver<bool>) {
        let Some(why) = self.plan.fire(clock::now()) else {
            return;
        };
        if self.fwd.in_session(self.partner) {
            tracing::info!(partner = %self.partner, ?why, "not calling: a session with it is running and carries the mail (its end is looked at)");
            return;
        }
        self.tried_at = self.fwd.store.queue_marks().get(self.partner);
        let summary = call::call(
            self.fwd.clone(),
            &self.radios,
            self.partner,
            shutdown.clone(),
        )
        .await;
        tracing::info!(partner = %self.partner, ?why, %summary, "scheduled call done");
        // Our own call's end, seen here rather than as news.
        self.ends_seen = self.fwd.ends(self.partner);
        let left = self.left().await;
        self.plan.ended(clock::now(), left, clock::random_seed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods)]
    fn base() -> Instant {
        Instant::now()
    }

    const MIN: Duration = Duration::from_secs(60);

    fn cadence(interval: u64, poll: Option<u64>) -> Cadence {
        Cadence {
            interval: Some(Duration::from_secs(interval)),
            poll: poll.map(Duration::from_secs),
        }
    }

    #[test]
    fn queued_mail_goes_within_seconds_and_a_poll_only_after_quiet() {
        let t0 = base();
        let mut p = Plan::new(cadence(60, Some(3600)), t0, 7);
        let (first, why) = p.next().unwrap();
        assert_eq!(why, Why::Poll);
        assert!(first - t0 <= Duration::from_secs(3600) && first - t0 >= 54 * MIN);
        p.queued(t0, 123_456);
        let (at, why) = p.next().unwrap();
        assert_eq!(why, Why::Queued);
        assert!(at - t0 <= QUEUED_WITHIN);
        // More mail before the call does not put it off.
        p.queued(t0 + Duration::from_secs(1), 999);
        assert_eq!(p.next().unwrap().0, at);
        assert_eq!(p.fire(at), Some(Why::Queued));
        // All sent: nothing until the poll, counted from the session's end.
        let end = at + Duration::from_secs(3);
        p.ended(end, false, 5);
        let (next, why) = p.next().unwrap();
        assert_eq!(why, Why::Poll);
        assert!(next - end >= 54 * MIN);
        assert_eq!(p.fire(next - Duration::from_millis(1)), None);
    }

    #[test]
    fn mail_left_is_tried_again_an_interval_later() {
        let t0 = base();
        let mut p = Plan::new(cadence(900, None), t0, 1);
        assert_eq!(p.next(), None, "no poll: nothing until mail comes");
        p.queued(t0, 0);
        assert_eq!(p.fire(t0), Some(Why::Queued));
        p.ended(t0, true, 77);
        let (at, why) = p.next().unwrap();
        assert_eq!(why, Why::Retry);
        assert!(at - t0 <= Duration::from_secs(900) && at - t0 >= Duration::from_secs(810));
        p.ended(at, false, 3);
        assert_eq!(p.next(), None);
    }

    #[test]
    fn without_an_interval_only_polls_and_demand_call() {
        let t0 = base();
        let c = Cadence {
            interval: None,
            poll: Some(Duration::from_secs(600)),
        };
        let mut p = Plan::new(c, t0, 9);
        p.queued(t0, 0);
        assert_eq!(p.next().unwrap().1, Why::Poll);
        p.ended(t0, true, 0);
        assert_eq!(p.next().unwrap().1, Why::Poll);
        let mut none = Plan::new(
            Cadence {
                interval: None,
                poll: None,
            },
            t0,
            9,
        );
        none.queued(t0, 0);
        assert_eq!(none.next(), None);
    }

    #[test]
    fn two_partners_started_together_are_not_called_in_step() {
        let t0 = base();
        let (mut a, mut b) = (
            Plan::new(cadence(15, Some(15)), t0, clock::random_seed()),
            Plan::new(cadence(15, Some(15)), t0, clock::random_seed()),
        );
        let mut apart = Vec::new();
        for _ in 0..10 {
            let (ta, tb) = (a.next().unwrap().0, b.next().unwrap().0);
            apart.push(if ta > tb { ta - tb } else { tb - ta });
            a.fire(ta);
            b.fire(tb);
            a.ended(ta, false, clock::random_seed());
            b.ended(tb, false, clock::random_seed());
        }
        assert!(
            apart.iter().any(|d| *d > Duration::from_millis(5)),
            "{apart:?}"
        );
    }

    #[test]
    fn a_reload_counts_from_now_and_keeps_a_queued_call() {
        let t0 = base();
        let mut p = Plan::new(cadence(60, Some(600)), t0, 4);
        p.queued(t0, 1000);
        let later = t0 + Duration::from_secs(30);
        p.set(cadence(60, Some(60)), later, 4);
        assert_eq!(
            p.next().unwrap(),
            (t0 + Duration::from_secs(1), Why::Queued)
        );
        p.fire(t0 + Duration::from_secs(1));
        let (at, why) = p.next().unwrap();
        assert_eq!(why, Why::Poll);
        assert!(at > later && at - later <= MIN);
    }
}
