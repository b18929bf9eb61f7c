//! Our side of a forwarding session: what we offer the partner (read from its queue ahead of
//! time, compressed on the packing thread) and what its acknowledgements record.

use qtc_fbb::{Mode, Outcome, Outgoing, Payload};
use qtc_store::{FwdOutcome, Pending};

use super::{payload, Driver, Made, NextOffer};
use crate::clock;

impl Driver {
    pub(super) async fn offer(&mut self, max: usize) {
        let marks = self.fwd.store.queue_marks();
        if let Some(dry) = self.queue_dry_at.filter(|m| *m == marks.get(self.partner)) {
            self.fwd.queue_read(self.partner, dry);
            if let Err(e) = self.session.offer(clock::now(), Vec::new()) {
                tracing::error!(error = %e, "forwarding session refused our offer");
            }
            return;
        }
        let r = match self.next_offer.take() {
            Some((m, next)) if m == max => next.await,
            _ => self.fetch_offer(max).await,
        };
        let outs = match r {
            Ok(Ok((o, mark, mut made))) => {
                self.fwd.queue_read(self.partner, mark);
                self.queue_dry_at = (o.len() < max).then_some(mark);
                self.made.append(&mut made);
                o
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read the forwarding queue; offering nothing");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        self.offered_max = outs.iter().map(|o| o.id).fold(self.offered_max, u64::max);
        let full = outs.len() == max;
        if let Err(e) = self.session.offer(clock::now(), outs) {
            tracing::error!(error = %e, "forwarding session refused our offer");
        }
        if full {
            // More is likely queued: read (and compress what is not yet) the next block while
            // the partner takes in this one.
            self.next_offer = Some((max, Box::pin(self.fetch_offer(max))));
        }
    }

    /// Starts reading up to `max` of the partner's queue above what this session offered, in
    /// the form the agreed mode sends. The store thread only reads; forms not made yet are
    /// made on the packing thread and come back with the block, to be kept when it is
    /// acknowledged.
    fn fetch_offer(&self, max: usize) -> NextOffer {
        let marks = self.fwd.store.queue_marks().clone();
        let partner = self.partner;
        let after = self.offered_max;
        let mode = self.session.mode();
        let form = payload::form(mode);
        let read = self.fwd.store.start(move |s| {
            // Read before the query: a message queued after it moves the mark.
            let mark = marks.get(partner);
            s.pending(partner, max, after, form).map(|p| (p, mark))
        });
        let (packer, mbo) = (self.fwd.packer.clone(), self.fwd.call.to_string());
        // A task of its own, so the packing starts now, not when the session awaits it.
        let task = tokio::spawn(async move {
            let (pending, mark) = match read.await? {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            // Only compressing goes to another thread; plain FBB, and forms already kept, are
            // sent as stored.
            let to_pack = form.packed.is_some() && pending.iter().any(|p| p.compressed.is_none());
            let convert = move || {
                let mut made = Vec::new();
                let out: Vec<Outgoing> = pending
                    .into_iter()
                    .map(|p| outgoing(p, mode, &mbo, &mut made))
                    .collect();
                (out, made)
            };
            let (out, made) = if to_pack {
                packer
                    .run(convert)
                    .await
                    .map_err(|_| crate::store_thread::StoreGone)?
            } else {
                convert()
            };
            Ok(Ok((out, mark, made)))
        });
        Box::pin(async move { task.await.unwrap_or(Err(crate::store_thread::StoreGone)) })
    }

    pub(super) fn acknowledged(&mut self, acks: Vec<(u64, Outcome)>) {
        let mut outcomes = Vec::new();
        for (id, outcome) in acks {
            let o = match outcome {
                Outcome::Sent | Outcome::Held => FwdOutcome::Sent,
                Outcome::Rejected => FwdOutcome::Refused,
                Outcome::Later => FwdOutcome::Later,
                Outcome::RejectedByRule => FwdOutcome::RejectedByRule,
                Outcome::FormatError | Outcome::Unsendable(_) => {
                    tracing::warn!(partner = %self.partner, number = id, ?outcome, "message not forwardable to this partner");
                    FwdOutcome::RejectedByRule
                }
            };
            match o {
                FwdOutcome::Sent => self.summary.sent += 1,
                FwdOutcome::Refused | FwdOutcome::RejectedByRule => {
                    self.summary.refused += 1;
                    tracing::info!(partner = %self.partner, number = id, outcome = ?outcome, "proposal refused by the partner");
                }
                FwdOutcome::Later => {}
            }
            tracing::debug!(partner = %self.partner, number = id, outcome = ?o, "acknowledged");
            outcomes.push((id, o));
        }
        let partner = self.partner;
        // The forms made for these messages go with their outcomes (the store keeps those
        // still waited for); the rest stay for a later acknowledgement.
        let (kept, rest): (Made, Made) = std::mem::take(&mut self.made)
            .into_iter()
            .partition(|(n, _)| outcomes.iter().any(|(id, _)| id == n));
        self.made = rest;
        let form = self
            .session
            .mode()
            .and_then(Mode::packed)
            .map(Payload::name);
        // Not waited for: the session goes on while the store records it, and the next store
        // call runs after it.
        let _ = self.fwd.store.submit(move |s| {
            let kept: Vec<(u64, &[u8])> = kept.iter().map(|(n, c)| (*n, c.as_ref())).collect();
            let made = form.map(|f| (f, &kept[..]));
            if let Err(e) = s.forwarded(partner, &outcomes, made, clock::unix_now()) {
                // Not recorded: the message will be offered again and refused by BID: no loss.
                tracing::error!(error = %e, "cannot record forwarded messages");
            }
        });
    }
}

/// A queued message in the session's terms. Its compressed form is made once (by the first
/// session that sends it in that form) and, while other partners still wait for the message,
/// kept in the store for them: forms made here are pushed to `made`.
fn outgoing(
    mut p: Pending,
    mode: Option<Mode>,
    mbo: &str,
    made: &mut Vec<(u64, qtc_fbb::Bytes)>,
) -> Outgoing {
    let text = payload::text(mode.map_or(Payload::FbbText, Mode::payload), &mut p, mbo);
    let compressed = mode
        .and_then(Mode::packed)
        .map(|form| match p.compressed.take() {
            Some(c) => qtc_fbb::Bytes::from(c),
            None => {
                let c = qtc_fbb::Bytes::from(payload::pack(form, &text));
                made.push((p.number, c.clone()));
                c
            }
        });
    Outgoing {
        id: p.number,
        kind: p.kind,
        from: p.from,
        at: p.at,
        to: p.to,
        bid: p.bid,
        title: p.subject.into(),
        text,
        compressed,
    }
}
