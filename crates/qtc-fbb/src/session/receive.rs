//! The partner's turn (FBB batch): its proposals and our answers, then receiving the
//! messages we took, as text or binary blocks, and handing them to the application.

use super::*;

impl Session {
    pub(super) fn emit_partial(&mut self) {
        if self.state != State::Receiving {
            return;
        }
        let Some(RxProgress::Binary(dec)) = self.rx_cur.take() else {
            return;
        };
        let Some(rx) = self.rx.front() else { return };
        if !rx.proposal.mode.is_resumable() {
            return;
        }
        let Some((_, offset)) = dec.header() else {
            return;
        };
        let data = dec.data();
        let file = match (&rx.prefix, offset) {
            (Some(_), off) if off > 0 && data.len() < 6 => return,
            (Some(prefix), off) if off > 0 && off as usize == prefix.len() => {
                let head = prefix.len().min(6);
                if data[..head] == prefix[..head] {
                    [prefix, &data[6..]].concat()
                } else if rx.proposal.mode == Mode::B1 {
                    // FBB's 6 check bytes say the partner's file is not the one we kept a
                    // piece of: drop it (an empty partial), so the next try starts from 0.
                    Vec::new()
                } else {
                    // wl2k-go resumes with the data alone.
                    [prefix, data].concat()
                }
            }
            _ if data.is_empty() => return,
            _ => data.to_vec(),
        };
        self.events.push_back(Event::Partial {
            bid: rx.proposal.bid.clone(),
            mode: rx.proposal.mode,
            data: Bytes::from(file),
        });
    }

    /// The partner's resumed file is not the one we kept the start of: have the application
    /// drop the partial, so the message comes from 0 next time rather than `A<offset>` again.
    pub(super) fn drop_partial(&mut self) {
        if let Some(rx) = self.rx.front() {
            self.events.push_back(Event::Partial {
                bid: rx.proposal.bid.clone(),
                mode: rx.proposal.mode,
                data: Bytes::new(),
            });
        }
    }

    pub(super) fn on_fbb_peer_turn(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if self.answers_in_mbl(&line) {
            // Our `FF` meant nothing to it; it waits for an MBL command.
            self.fall_back_to_mbl();
            self.start_turn(Turn::Mbl);
            return Ok(());
        }
        if !fbb_line_matters(&line)? {
            return Ok(());
        }
        let parsed = FbbLine::parse(&line);
        self.peer_spoke_fbb |= parsed.is_ok();
        match parsed {
            Ok(FbbLine::Proposal(p)) => {
                self.ack_unacked();
                self.incoming.clear();
                self.in_sum = 0;
                self.add_proposal(&line, p)?;
                self.state = State::FbbReadBlock;
                Ok(())
            }
            Ok(FbbLine::NoMore) => {
                self.ack_unacked();
                self.start_turn(Turn::Fbb {
                    peer_ff: true,
                    may_yield: false,
                });
                Ok(())
            }
            Ok(FbbLine::Quit) => {
                self.ack_unacked();
                self.close_clean();
                Ok(())
            }
            Ok(_) => Err(Error::protocol(&line, "expected proposals, FF or FQ")),
            Err(e) => Err(Error::protocol(&line, e.to_string())),
        }
    }

    pub(super) fn add_proposal(&mut self, line: &[u8], p: ProposalLine<'_>) -> Result<(), Error> {
        if self.incoming.len() >= MAX_PROPOSALS {
            return Err(Error::protocol(
                line,
                Error::TooManyProposals { max: MAX_PROPOSALS }.to_string(),
            ));
        }
        let mode = self.mode_or_mbl();
        let prop = match p {
            ProposalLine::Fbb(f) => {
                if f.compressed && !mode.is_compressed() {
                    return Err(Error::protocol(
                        line,
                        "FA proposal but no compression agreed",
                    ));
                }
                Proposal {
                    mode: if f.compressed {
                        mode.fa_travels_as()
                    } else {
                        Mode::FbbAscii
                    },
                    kind: f.kind,
                    from: f.from.to_owned(),
                    at: f.at.to_owned(),
                    to: f.to.to_owned(),
                    bid: f.bid.to_owned(),
                    size: f.size,
                    compressed_size: None,
                }
            }
            ProposalLine::B2(b) => {
                if mode != Mode::B2 {
                    return Err(Error::protocol(line, "FC proposal but B2 not agreed"));
                }
                Proposal {
                    mode: Mode::B2,
                    kind: MsgType::Personal,
                    from: String::new(),
                    at: String::new(),
                    to: String::new(),
                    bid: b.mid.to_owned(),
                    size: b.size,
                    compressed_size: Some(b.compressed_size),
                }
            }
        };
        self.in_sum = wp::checksum_add(self.in_sum, trim_end(line));
        self.incoming.push(prop);
        Ok(())
    }

    pub(super) fn on_fbb_block_line(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if ignorable(&line) {
            return Ok(());
        }
        match FbbLine::parse(&line) {
            Ok(FbbLine::Proposal(p)) => self.add_proposal(&line, p),
            Ok(FbbLine::End(chk)) => {
                if let Some(c) = chk {
                    if self.in_sum.wrapping_add(c) != 0 {
                        return Err(Error::ProposalChecksum {
                            expected: wp::checksum_value(self.in_sum),
                            got: c,
                        });
                    }
                }
                self.events
                    .push_back(Event::Proposals(self.incoming.clone()));
                self.state = State::FbbWaitApp;
                Ok(())
            }
            Ok(_) => Err(Error::protocol(&line, "expected a proposal or F>")),
            Err(e) => Err(Error::protocol(&line, e.to_string())),
        }
    }

    pub(super) fn answer_fbb(&mut self, proposals: Vec<Proposal>, answers: Vec<Answer>) {
        let mut codes = Vec::with_capacity(answers.len());
        for (p, a) in proposals.into_iter().zip(answers) {
            let resumable = p.mode.is_resumable();
            let (code, prefix) = match a {
                Answer::Accept => (AnswerCode::Accept, None),
                Answer::AcceptFrom { offset, prefix }
                    if resumable && offset > 0 && prefix.len() >= offset as usize =>
                {
                    (
                        AnswerCode::Resume(offset),
                        Some(prefix.slice(..offset as usize)),
                    )
                }
                Answer::AcceptFrom { .. } => (AnswerCode::Accept, None),
                Answer::Held => (AnswerCode::Held, None),
                Answer::Reject => (AnswerCode::Reject, None),
                Answer::Later => (AnswerCode::Later, None),
                Answer::RejectedByRule => (AnswerCode::RejectedByRule, None),
            };
            if code.sends() {
                self.rx.push_back(RxMsg {
                    proposal: p,
                    prefix,
                });
            }
            codes.push(code);
        }
        let dialect = if self.mode_or_mbl() >= Mode::B1 {
            Dialect::B1
        } else {
            Dialect::Plain
        };
        let mut line = Vec::new();
        wp::emit_answer(&codes, dialect, &mut line);
        self.send_line(&line);
        if self.rx.is_empty() && self.peer_is_winlink() {
            // Winlink software keeps the turn after a whole block is refused: its next
            // block or FF follows.
            self.state = State::FbbWaitPeer;
        } else if self.rx.is_empty() {
            self.start_turn(Turn::Fbb {
                peer_ff: false,
                may_yield: true,
            });
        } else {
            self.rx_cur = None;
            self.state = State::Receiving;
        }
    }

    pub(super) fn step_receive(&mut self) -> Result<bool, Error> {
        let Some(rx) = self.rx.front() else {
            return Err(Error::InvalidCall("receiving with nothing accepted"));
        };
        if !rx.proposal.mode.is_compressed() {
            return self.step_receive_text();
        }
        if self.rx_cur.is_none() {
            if self.skip_lf && self.pos < self.inbuf.len() {
                self.skip_lf = false;
                if self.inbuf[self.pos] == b'\n' {
                    self.pos += 1;
                }
            }
            if self.pos == self.inbuf.len() {
                return Ok(false);
            }
            self.rx_cur = Some(RxProgress::Binary(Decoder::new(self.cfg.max_message_size)));
        }
        let Some(RxProgress::Binary(dec)) = self.rx_cur.as_mut() else {
            return Err(Error::InvalidCall("binary receive state lost"));
        };
        let input = &self.inbuf[self.pos..];
        if input.is_empty() {
            return Ok(false);
        }
        let (used, frame) = match dec.decode(input) {
            Ok(r) => r,
            Err(e) => {
                // Known-bad data (a wrong sum, a block that does not parse: 0xFF doubled on a
                // link that should not): nothing to resume from.
                self.rx_cur = None;
                return Err(e);
            }
        };
        self.pos += used;
        match frame {
            None => Ok(false),
            Some(Frame::Aborted(reason)) => Err(Error::PeerAborted(lossy(&reason))),
            Some(Frame::Message {
                title,
                offset,
                data,
            }) => {
                self.rx_cur = None;
                let done = self.finish_binary(title, offset, data);
                if matches!(done, Err(Error::ResumeMismatch)) {
                    self.drop_partial();
                }
                done.map(|()| true)
            }
        }
    }

    pub(super) fn finish_binary(
        &mut self,
        title: Vec<u8>,
        offset: u32,
        data: Vec<u8>,
    ) -> Result<(), Error> {
        let Some(rx) = self.rx.front() else {
            return Err(Error::InvalidCall("no message being received"));
        };
        let limits = qtc_lzhuf::Limits::new(self.cfg.max_message_size);
        let decode = |file: &[u8]| match rx.proposal.mode {
            Mode::B0 => qtc_lzhuf::decompress(file, &limits),
            _ => qtc_lzhuf::decompress_with_crc(file, &limits),
        };
        let text = match (&rx.prefix, offset) {
            (Some(prefix), off) if off > 0 => {
                if off as usize != prefix.len() {
                    return Err(Error::ResumeMismatch);
                }
                // FBB style: 6 check bytes, then data from the offset; wl2k-go: data only.
                let head = prefix.len().min(6);
                let mut fbb = None;
                if data.len() >= 6 && data[..head] == prefix[..head] {
                    let mut f = prefix.to_vec();
                    f.extend_from_slice(&data[6..]);
                    fbb = decode(&f).ok();
                }
                match fbb {
                    Some(t) => t,
                    None => {
                        let mut f = prefix.to_vec();
                        f.extend_from_slice(&data);
                        decode(&f).map_err(|_| Error::ResumeMismatch)?
                    }
                }
            }
            (None, off) if off > 0 => {
                return Err(Error::BadBlock("offset in header but no resume asked"))
            }
            _ => decode(&data).map_err(|e| Error::Decompress(e.to_string()))?,
        };
        // A qtc partner escaped its FBB text (wire::body): taken back off.
        let text = if rx.proposal.mode.payload() == crate::Payload::FbbText
            && self.reader() == Reader::Qtc
        {
            wire_body::unescape_owned(text)
        } else {
            text
        };
        let mut proposal = rx.proposal.clone();
        let mut title = title;
        if rx.proposal.mode == Mode::B2 {
            match b2f::Message::parse(&text) {
                Ok(m) => {
                    if title.is_empty() {
                        title = m.subject().to_vec();
                    }
                    if proposal.from.is_empty() {
                        proposal.from = lossy(m.get("From").unwrap_or_default());
                    }
                    if proposal.to.is_empty() {
                        proposal.to = lossy(m.get("To").unwrap_or_default());
                    }
                }
                // It arrived whole (CRC checked): failing the session here would have the
                // partner send it again at every connect and block everything behind it.
                Err(e) => warn!(bid = %proposal.bid, error = %e,
                    "received B2F message does not parse; delivered as it came"),
            }
        }
        if proposal.size as usize != text.len() {
            debug!(bid = %proposal.bid, proposed = proposal.size, got = text.len(), "size differs");
        }
        self.deliver(proposal, title, text);
        Ok(())
    }

    pub(super) fn step_receive_text(&mut self) -> Result<bool, Error> {
        let mbl = self.mode_or_mbl() == Mode::Mbl;
        match self.rx_cur.take() {
            None => {
                let Some(title) = self.take_line(MAX_LINE_LEN)? else {
                    return Ok(false);
                };
                if let Some(t) = text_before_end(&title) {
                    let t = t.to_vec();
                    self.finish_text(t, Vec::new());
                } else {
                    self.rx_cur = Some(RxProgress::Body {
                        title,
                        body: Vec::new(),
                    });
                }
                Ok(true)
            }
            Some(RxProgress::Body { title, mut body }) => {
                let max = self.cfg.max_message_size;
                let line = match self.take_line(max.saturating_sub(body.len()).max(MAX_LINE_LEN)) {
                    Ok(Some(l)) => l,
                    Ok(None) if mbl && self.buffered().first() == Some(&CTRL_Z) => {
                        // LinBPQ ends a message with `CR ^Z` and no CR after it, then waits
                        // for our prompt (a CR that does follow is an ignored empty line).
                        self.pos += 1;
                        self.skip_lf = false;
                        self.finish_text(title, body);
                        return Ok(true);
                    }
                    Ok(None) => {
                        self.rx_cur = Some(RxProgress::Body { title, body });
                        return Ok(false);
                    }
                    Err(_) => return Err(Error::MessageTooLarge { max }),
                };
                let end = text_before_end(&line);
                if end.is_none() && mbl && line.eq_ignore_ascii_case(b"/EX") {
                    self.finish_text(title, body);
                    return Ok(true);
                }
                let part = end.unwrap_or(&line);
                if end.is_none() || !part.is_empty() {
                    match self.reader() {
                        Reader::Qtc => wire_body::unescape_line(part, &mut body),
                        Reader::Other => body.extend_from_slice(part),
                    }
                    body.extend_from_slice(b"\r\n");
                }
                if body.len() > max {
                    return Err(Error::MessageTooLarge { max });
                }
                if end.is_some() {
                    self.finish_text(title, body);
                } else {
                    self.rx_cur = Some(RxProgress::Body { title, body });
                }
                Ok(true)
            }
            Some(other) => {
                self.rx_cur = Some(other);
                Err(Error::InvalidCall("text receive state lost"))
            }
        }
    }

    pub(super) fn finish_text(&mut self, title: Vec<u8>, body: Vec<u8>) {
        if let Some(rx) = self.rx.front() {
            let p = rx.proposal.clone();
            self.deliver(p, title, body);
        }
    }

    pub(super) fn deliver(&mut self, proposal: Proposal, title: Vec<u8>, text: Vec<u8>) {
        self.rx.pop_front();
        self.rx_cur = None;
        self.events.push_back(Event::Received {
            proposal,
            title: Bytes::from(title),
            text: Bytes::from(text),
        });
        if self.rx.is_empty() {
            self.events.push_back(Event::BlockComplete);
            self.state = State::WaitCommit(if self.mode_or_mbl().is_batch() {
                AfterCommit::FbbTurn
            } else {
                AfterCommit::MblPrompt
            });
        }
    }
}

/// Where a line of a message's text ends the message: a ^Z as its first byte (none of the line
/// is text) or as its last (the text before it is). The text before the end, or `None` when
/// the line does not end the message: a ^Z anywhere else is text, as JNOS reads it (and qtc
/// sends a body's ^Z only so: `wire::body`).
fn text_before_end(line: &[u8]) -> Option<&[u8]> {
    match line {
        [CTRL_Z, ..] => Some(&[]),
        [text @ .., CTRL_Z] => Some(text),
        _ => None,
    }
}
