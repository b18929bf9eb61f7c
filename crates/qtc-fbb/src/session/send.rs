//! Our turn: proposing our messages (FBB batch) and sending those the partner takes.

use super::*;

impl Session {
    pub(super) fn start_turn(&mut self, turn: Turn) {
        if self.pending.is_empty() {
            if !self.offer_outstanding {
                self.offer_outstanding = true;
                let max = match turn {
                    Turn::Mbl => 1,
                    Turn::Fbb { .. } => self.cfg.max_proposals,
                };
                self.events.push_back(Event::NeedOutgoing { max });
            }
            self.state = State::WaitOffer(turn);
        } else {
            self.propose(turn);
        }
    }

    pub(super) fn propose(&mut self, turn: Turn) {
        match turn {
            Turn::Mbl => self.propose_mbl(),
            Turn::Fbb { peer_ff, .. } => self.propose_fbb(peer_ff),
        }
    }

    /// Build the wire line for `msg` in the current mode, or say why it cannot be sent.
    pub(super) fn prepare(&self, msg: Outgoing) -> Result<OutMsg, (u64, Error)> {
        let mode = self.mode_or_mbl();
        let at = if self.peer_flags.hierarchical {
            msg.at.as_str()
        } else {
            msg.at.split('.').next().unwrap_or("")
        };
        let Ok(size) = u32::try_from(msg.text.len()) else {
            return Err((
                msg.id,
                Error::MessageTooLarge {
                    max: u32::MAX as usize,
                },
            ));
        };
        let mut line = Vec::new();
        let mut file = None;
        let checked = match mode {
            Mode::Mbl => {
                let s = SendLine {
                    kind: msg.kind,
                    to: &msg.to,
                    at: (!at.is_empty()).then_some(at),
                    from: (!msg.from.is_empty()).then_some(msg.from.as_str()),
                    bid: (!msg.bid.is_empty()).then_some(msg.bid.as_str()),
                };
                s.emit(&mut line);
                SendLine::parse(&line).map(|_| ())
            }
            Mode::FbbAscii | Mode::B0 | Mode::B1 => {
                let p = ProposalLine::Fbb(FbbProposal {
                    compressed: mode != Mode::FbbAscii,
                    kind: msg.kind,
                    from: &msg.from,
                    at,
                    to: &msg.to,
                    bid: &msg.bid,
                    size,
                });
                p.emit(&mut line);
                p.validate()
            }
            Mode::B2 => match b2f::Message::parse(&msg.text) {
                Err(e) => Err(e),
                Ok(_) => {
                    let f = self.file_form(&msg, mode);
                    let p = ProposalLine::B2(B2Proposal {
                        cms: false,
                        mid: &msg.bid,
                        size,
                        compressed_size: u32::try_from(f.len()).unwrap_or(u32::MAX),
                    });
                    p.emit(&mut line);
                    file = Some(f);
                    p.validate()
                }
            },
        };
        match checked {
            Ok(()) => Ok(OutMsg { msg, line, file }),
            Err(e) => Err((msg.id, e)),
        }
    }

    pub(super) fn file_form(&self, msg: &Outgoing, mode: Mode) -> Bytes {
        match (mode, &msg.compressed) {
            (Mode::B0, Some(c)) if c.len() >= 6 => c.slice(2..),
            (Mode::B1 | Mode::B2, Some(c)) => c.clone(),
            (Mode::B0, _) => Bytes::from(qtc_lzhuf::compress(&wire_body::file_text(&msg.text))),
            (Mode::B2, _) => Bytes::from(qtc_lzhuf::compress_with_crc(&msg.text)),
            _ => Bytes::from(qtc_lzhuf::compress_with_crc(&wire_body::file_text(
                &msg.text,
            ))),
        }
    }

    pub(super) fn next_sendable(&mut self) -> Option<OutMsg> {
        while let Some(msg) = self.pending.pop_front() {
            match self.prepare(msg) {
                Ok(m) => return Some(m),
                Err((id, e)) => {
                    debug!(id, error = %e, "unsendable message");
                    self.events.push_back(Event::Acknowledged {
                        id,
                        outcome: Outcome::Unsendable(e),
                    });
                }
            }
        }
        None
    }

    pub(super) fn propose_fbb(&mut self, peer_ff: bool) {
        let mut total = 0usize;
        let mut block = Vec::new();
        while block.len() < self.cfg.max_proposals
            && (block.is_empty() || total < self.cfg.block_budget)
        {
            let Some(m) = self.next_sendable() else { break };
            total += m.msg.text.len();
            block.push(m);
        }
        if block.is_empty() {
            if peer_ff {
                self.send_line(b"FQ");
                self.close_clean();
            } else {
                self.send_line(b"FF");
                self.state = State::FbbWaitPeer;
            }
            return;
        }
        let mut sum = 0u8;
        let mut plain = true;
        for m in &block {
            sum = wp::checksum_add(sum, &m.line);
            plain &= m.line.starts_with(b"FB");
            let line = m.line.clone();
            self.send_line(&line);
        }
        // JNOS rewrites a first FB into FA internally and would then reject the checksum
        // (spec §4): plain `F>` after uncompressed proposals.
        let mut end = Vec::new();
        wp::emit_end((!plain).then(|| wp::checksum_value(sum)), &mut end);
        self.send_line(&end);
        self.block = block;
        self.block_after_ff = peer_ff;
        self.state = State::FbbWaitAnswer;
    }

    pub(super) fn send_text_message(&mut self, m: &OutMsg) {
        let title = clean_title(&m.msg.title);
        self.send_line(&title);
        let eol = self.cfg.line_end.as_bytes();
        wire_body::emit_text(&m.msg.text, self.reader(), eol, &mut self.out);
    }

    pub(super) fn send_binary_message(&mut self, m: &mut OutMsg, resume: u32) {
        let mode = self.mode_or_mbl();
        let file = match &m.file {
            Some(f) => f.clone(),
            None => {
                let f = self.file_form(&m.msg, mode);
                m.file = Some(f.clone());
                f
            }
        };
        let off = if mode == Mode::B0 || !self.cfg.send_resumes || resume as usize > file.len() {
            0
        } else {
            resume as usize
        };
        self.resumed_unacked |= off > 0;
        let title = clean_title(&m.msg.title);
        let pad = if mode == Mode::B2 {
            OffsetPad::Zero
        } else {
            OffsetPad::Space
        };
        let mut enc = Encoder::new();
        enc.header(&title, off as u32, pad, &mut self.out);
        if off > 0 && (mode == Mode::B1 || (mode == Mode::B2 && !self.peer_is_winlink())) {
            // FBB resume: the first 6 bytes (CRC + length) as a block of their own let the
            // receiver check it is the same file, then the data from the offset (spec §5).
            // LinBPQ wants them in B2 too (its `NeedRestartHeader`, FBBRoutines.c, sends them
            // so itself); wl2k-go sends Winlink software the data alone.
            enc.block(&file[..file.len().min(6)], &mut self.out);
        }
        enc.data(&file[off..], &mut self.out);
        enc.finish(&mut self.out);
    }

    pub(super) fn on_fbb_answer(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if self.answers_in_mbl(&line) {
            self.fall_back_to_mbl();
            let block = std::mem::take(&mut self.block);
            let plain = block.iter().all(|m| m.line.starts_with(b"FB"));
            for m in block.into_iter().rev() {
                self.pending.push_front(m.msg);
            }
            if plain {
                // Our bare `F>` read as MBL's reverse-forward request: its `S` lines or
                // `*** DONE` come next.
                self.state = State::MblWaitSLine;
            } else {
                self.start_turn(Turn::Mbl);
            }
            return Ok(());
        }
        if !fbb_line_matters(&line)? {
            return Ok(());
        }
        let codes = match FbbLine::parse(&line) {
            Ok(FbbLine::Answer(codes)) => {
                self.peer_spoke_fbb = true;
                codes
            }
            Ok(_) => return Err(Error::protocol(&line, "expected an FS answer")),
            Err(e) => return Err(Error::protocol(&line, e.to_string())),
        };
        if codes.len() != self.block.len() {
            return Err(Error::protocol(
                &line,
                Error::AnswerCount {
                    expected: self.block.len(),
                    got: codes.len(),
                }
                .to_string(),
            ));
        }
        let block = std::mem::take(&mut self.block);
        let compressed = self.mode_or_mbl().is_compressed();
        let mut any_sent = false;
        for (mut m, code) in block.into_iter().zip(codes) {
            let id = m.msg.id;
            let outcome = match code {
                AnswerCode::Accept | AnswerCode::Resume(_) | AnswerCode::Held => {
                    let resume = if let AnswerCode::Resume(o) = code {
                        o
                    } else {
                        0
                    };
                    if compressed {
                        self.send_binary_message(&mut m, resume);
                    } else {
                        self.send_text_message(&m);
                    }
                    let o = if code == AnswerCode::Held {
                        Outcome::Held
                    } else {
                        Outcome::Sent
                    };
                    self.unacked.push((id, o));
                    any_sent = true;
                    continue;
                }
                AnswerCode::Reject => Outcome::Rejected,
                AnswerCode::Later => Outcome::Later,
                AnswerCode::RejectedByRule => Outcome::RejectedByRule,
                AnswerCode::FormatError => Outcome::FormatError,
            };
            self.events.push_back(Event::Acknowledged { id, outcome });
        }
        if !any_sent && self.peer_is_winlink() {
            // Winlink software refusing a whole block sends neither FF nor proposals: it
            // waits for our next block (LinBPQ goes on the same way).
            debug!("partner refused the whole block; our turn goes on");
            self.start_turn(Turn::Fbb {
                peer_ff: self.block_after_ff,
                may_yield: false,
            });
        } else {
            self.state = State::FbbWaitPeer;
        }
        Ok(())
    }
}
