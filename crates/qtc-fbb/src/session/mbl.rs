//! MBL/RLI: one message at a time with `S` lines, and the fall-back to it from FBB.

use super::*;

impl Session {
    pub(super) fn propose_mbl(&mut self) {
        if let Some(m) = self.next_sendable() {
            let line = m.line.clone();
            self.send_line(&line);
            self.block = vec![m];
            self.state = State::MblWaitAnswer;
            return;
        }
        match self.role {
            Role::Caller if self.cfg.mbl_reverse => {
                self.send_line(b"F>");
                self.state = State::MblWaitSLine;
            }
            Role::Caller => {
                self.send_line(b"B");
                self.close_clean();
            }
            Role::Called => {
                self.send_line(b"*** Done");
                self.state = State::MblDone;
            }
        }
    }

    /// LinBPQ takes FBB batch mode only from other BPQs: to anyone else it answers our SID
    /// with a bare MBL prompt `>` and ignores `FA`/`FB`/`FF`. A bare `>` as the partner's
    /// first answer after our SID therefore means it speaks MBL.
    pub(super) fn answers_in_mbl(&self, line: &[u8]) -> bool {
        self.role == Role::Caller && !self.peer_spoke_fbb && trim_end(line) == b">"
    }

    pub(super) fn fall_back_to_mbl(&mut self) {
        warn!(
            peer = ?self.peer.as_ref().map(|s| &s.name),
            "the partner answers FBB proposals with an MBL prompt: going on in MBL \
             (set its protocol to mbl to avoid the detour)"
        );
        self.mode = Some(Mode::Mbl);
        self.fell_back = true;
        self.events.push_back(Event::Connected {
            peer_sid: self.peer.clone(),
            mode: Mode::Mbl,
        });
    }

    pub(super) fn on_mbl_command(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if ignorable(&line) {
            return Ok(());
        }
        let l = trim_end(&line);
        if SendLine::is_send_line(l) {
            let s = SendLine::parse(l).map_err(|e| Error::protocol(&line, e.to_string()))?;
            self.incoming = vec![Proposal {
                mode: Mode::Mbl,
                kind: s.kind,
                from: s.from.unwrap_or_default().to_owned(),
                at: s.at.unwrap_or_default().to_owned(),
                to: s.to.to_owned(),
                bid: s.bid.unwrap_or_default().to_owned(),
                size: 0,
                compressed_size: None,
            }];
            self.events
                .push_back(Event::Proposals(self.incoming.clone()));
            self.state = State::MblWaitApp;
            return Ok(());
        }
        if l.eq_ignore_ascii_case(b"B") || l.eq_ignore_ascii_case(b"BYE") {
            self.close_clean();
            return Ok(());
        }
        match self.role {
            Role::Called if l == b"F>" || l == b"F" => {
                // The caller asks us to reverse-forward.
                self.start_turn(Turn::Mbl);
                Ok(())
            }
            Role::Called if is_prompt(l) => Ok(()),
            Role::Caller if is_prompt(l) && !is_mbl_done(l) && !self.pending.is_empty() => {
                // The called side hands the turn back (LinBPQ's `F>` after a fall-back): ours.
                self.start_turn(Turn::Mbl);
                Ok(())
            }
            Role::Caller if is_mbl_done(l) || is_prompt(l) => {
                // The called side has nothing (more) for us.
                self.send_line(b"B");
                self.close_clean();
                Ok(())
            }
            _ if is_peer_error(l) => Err(Error::PeerError(lossy(l))),
            _ => Err(Error::protocol(&line, "expected an S command")),
        }
    }

    pub(super) fn answer_mbl(&mut self, proposals: Vec<Proposal>, answers: Vec<Answer>) {
        let ext = self.peer_flags.extended_answers;
        for (p, a) in proposals.into_iter().zip(answers) {
            let ans = match a {
                Answer::Accept | Answer::AcceptFrom { .. } | Answer::Held => MblAnswer::Ok,
                Answer::Reject => MblAnswer::No,
                Answer::Later => MblAnswer::Later,
                Answer::RejectedByRule => MblAnswer::Reject,
            };
            self.send_line(ans.as_str(ext).as_bytes());
            if ans == MblAnswer::Ok {
                self.rx.push_back(RxMsg {
                    proposal: p,
                    prefix: None,
                });
            }
        }
        if self.rx.is_empty() {
            self.send_mbl_prompt();
            self.state = State::MblWaitSLine;
        } else {
            self.rx_cur = None;
            self.state = State::Receiving;
        }
    }

    pub(super) fn on_mbl_answer(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if ignorable(&line) || is_prompt(&line) {
            return Ok(());
        }
        if is_peer_error(&line) {
            return Err(Error::PeerError(lossy(&line)));
        }
        let ans = MblAnswer::parse(&line).map_err(|e| Error::protocol(&line, e.to_string()))?;
        let Some(m) = self.block.pop() else {
            return Err(Error::protocol(&line, "answer without an S line"));
        };
        let outcome = match ans {
            MblAnswer::Ok => {
                self.send_text_message(&m);
                self.unacked.push((m.msg.id, Outcome::Sent));
                None
            }
            MblAnswer::No => Some(Outcome::Rejected),
            MblAnswer::Reject => Some(Outcome::RejectedByRule),
            MblAnswer::Later => Some(Outcome::Later),
        };
        if let Some(outcome) = outcome {
            self.events.push_back(Event::Acknowledged {
                id: m.msg.id,
                outcome,
            });
        }
        self.state = State::MblWaitPromptAfter;
        Ok(())
    }
}
