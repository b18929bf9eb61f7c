//! The partner's side of a forwarding session: our answers to its proposals (known BIDs,
//! the rules, the size limit, the store's room, BIDs arriving from another partner), its
//! blocks stored in one transaction each, and the mail it collects (`;FW:`).

use std::collections::HashSet;

use qtc_fbb::Answer;
use qtc_store::Stored;

use super::Driver;
use crate::clock;

impl Driver {
    /// Queues the personal mail here for the calls the partner announced with `;FW:` (a Winlink
    /// station collecting its own mail): only its own call and calls in its routes count, so a
    /// partner cannot collect anyone's mail by naming them.
    pub(super) async fn queue_collected(&mut self) {
        let routes = self
            .fwd
            .partner(self.partner)
            .map(|p| p.routes.clone())
            .unwrap_or_default();
        let calls: Vec<String> = self
            .session
            .peer_forwards()
            .iter()
            .filter(|c| c.eq_ignore_ascii_case(self.partner.base()) || routes.contains(c))
            .cloned()
            .collect();
        if calls.is_empty() {
            return;
        }
        let partner = self.partner;
        let now = clock::unix_now();
        match self
            .fwd
            .store
            .call(move |s| s.queue_collected(partner, &calls, now))
            .await
        {
            Ok(Ok(n)) if n > 0 => {
                tracing::info!(partner = %self.partner, messages = n, "queued mail the partner collects (;FW:)")
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot queue the mail the partner collects"),
            _ => {}
        }
    }

    pub(super) async fn answer(&mut self, ps: Vec<qtc_fbb::Proposal>) {
        let partner = self.partner;
        let bids = resume_keys(&ps);
        // The largest proposal decides whether the store is asked to make room.
        let largest = ps
            .iter()
            .map(|p| u64::from(p.size.max(p.compressed_size.unwrap_or(0))))
            .max()
            .unwrap_or(0);
        let addressed: Vec<[String; 3]> = ps
            .iter()
            .map(|p| [p.from.clone(), p.to.clone(), p.at.clone()])
            .collect();
        let need = crate::room::need(largest);
        let measure = self.room.must_measure(need);
        let known = self
            .fwd
            .store
            .call(move |s| {
                let room = measure.then(|| crate::room::room(s, need));
                let verdicts: Vec<_> = addressed
                    .iter()
                    .zip(&bids)
                    .map(|([from, to, at], (bid, _))| {
                        s.rule_action(&qtc_mail::rules::RuleInput {
                            from,
                            to,
                            at,
                            bid,
                            subject: b"",
                        })
                    })
                    .collect();
                s.proposal_info(&bids).map(|k| (k, room, verdicts))
            })
            .await;
        let (known, mut room, verdicts) = match known {
            Ok(Ok((known, measured, verdicts))) => {
                (known, self.room.begin_block(measured), verdicts)
            }
            _ => {
                // No store: ask for everything later rather than lose or refuse anything.
                let later = vec![Answer::Later; ps.len()];
                let _ = self.session.answer(clock::now(), later);
                return;
            }
        };
        let mut seen_here = HashSet::new();
        let mut answers = Vec::with_capacity(ps.len());
        for ((p, (known, partial)), verdict) in ps.iter().zip(known).zip(verdicts) {
            let bid = p.bid.to_ascii_uppercase();
            let max = self.fwd.base.max_message_size;
            let too_large =
                p.size as usize > max || p.compressed_size.is_some_and(|c| c as usize > max);
            let a = if known || (!bid.is_empty() && !seen_here.insert(bid.clone())) {
                Answer::Reject
            } else if verdict == Some(qtc_mail::rules::RuleAction::Reject) {
                Answer::RejectedByRule
            } else if too_large {
                // Refused before a byte of it moves (FBB `R`, MBL `NO`): taking it would only
                // fail the transfer, and the partner would offer it again every session.
                tracing::warn!(
                    partner = %partner, %bid, size = p.size, max,
                    "proposal refused: larger than [limits] max_message"
                );
                Answer::RejectedByRule
            } else if crate::room::need(u64::from(p.size)) > room {
                // A full store refuses before the transfer: the partner keeps the message.
                tracing::warn!(
                    partner = %partner, %bid, size = p.size, room,
                    "proposal deferred: the message store is full"
                );
                Answer::Later
            } else if bid.is_empty() {
                room -= crate::room::need(u64::from(p.size));
                Answer::Accept
            } else if !self.fwd.take_bid(&bid, partner) {
                Answer::Later
            } else {
                self.taken.insert(bid.clone());
                room -= crate::room::need(u64::from(p.size));
                match partial {
                    Some(prefix) if prefix.len() > 6 => Answer::AcceptFrom {
                        offset: prefix.len() as u32,
                        prefix: prefix.into(),
                    },
                    _ => Answer::Accept,
                }
            };
            tracing::debug!(partner = %partner, %bid, answer = ?a, "proposal");
            answers.push(a);
        }
        self.room.end_block(room);
        if let Err(e) = self.session.answer(clock::now(), answers) {
            tracing::error!(error = %e, "forwarding session refused our answers");
        }
    }

    /// Stores the received block (the session's acknowledgement follows once it is safe).
    pub(super) async fn commit_block(&mut self) {
        match self.store_block().await {
            Ok(()) => {
                if let Err(e) = self.session.committed(clock::now()) {
                    tracing::error!(error = %e, "forwarding session refused the commit");
                }
            }
            Err(why) => {
                // Nothing acknowledged: the partner keeps the block and offers it again later.
                tracing::error!(partner = %self.partner, error = %why, "cannot store the received block; closing");
                self.session.close(clock::now());
                self.fail(why);
            }
        }
    }

    /// Stores the messages received in this block in one transaction and counts them.
    pub(super) async fn store_block(&mut self) -> Result<(), String> {
        let block = std::mem::take(&mut self.block);
        let partner = self.partner;
        let bids: Vec<String> = block.iter().map(|m| m.bid.to_ascii_uppercase()).collect();
        let r = self
            .fwd
            .store
            .call(move |s| {
                let now = clock::unix_now();
                s.store_received(partner, &block, now)
            })
            .await;
        match r {
            Ok(Ok(stored)) => {
                // The session's end logs the count at info; per block and per message is
                // debug (a log write per block shows in the syscall count).
                for (bid, st) in bids.iter().zip(&stored) {
                    match st {
                        Stored::Held(n) => {
                            tracing::warn!(partner = %self.partner, %bid, number = n, "received and held")
                        }
                        other => {
                            tracing::debug!(partner = %self.partner, %bid, outcome = ?other, "received")
                        }
                    }
                }
                let kept = stored
                    .iter()
                    .filter(|s| matches!(s, Stored::Stored(_) | Stored::Held(_)))
                    .count();
                tracing::debug!(partner = %self.partner, stored = kept, of = stored.len(), "block received");
                self.summary.received += kept;
                let mut fl = self.fwd.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                for bid in &bids {
                    fl.remove(bid);
                    self.taken.remove(bid);
                }
                drop(fl);
                Ok(())
            }
            Ok(Err(e)) => Err(format!("store: {e}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Each proposal's BID, and the mode in which a kept partial of it may be resumed: a
/// resumable mode (B1, B2), and a partial only in the mode it came in (a B2 start is another
/// file).
fn resume_keys(ps: &[qtc_fbb::Proposal]) -> Vec<(String, Option<&'static str>)> {
    ps.iter()
        .map(|p| {
            let mode = p.mode.is_resumable().then(|| p.mode.name());
            (p.bid.to_ascii_uppercase(), mode)
        })
        .collect()
}
