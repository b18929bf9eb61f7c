//! Input: bytes are cut into lines (or handed to the message reader) and each line goes to
//! the handler of the current state.

use super::*;

impl Session {
    pub(super) fn buffered(&self) -> &[u8] {
        &self.inbuf[self.pos..]
    }

    /// Find the next complete line: (start, end, next position, ended by CR).
    pub(super) fn find_line(
        &mut self,
        max: usize,
    ) -> Result<Option<(usize, usize, usize, bool)>, Error> {
        if self.skip_lf && self.pos < self.inbuf.len() {
            self.skip_lf = false;
            if self.inbuf[self.pos] == b'\n' {
                self.pos += 1;
            }
        }
        let buf = self.buffered();
        match buf.iter().position(|&b| b == b'\r' || b == b'\n') {
            Some(i) if i > max => Err(Error::LineTooLong { max }),
            Some(i) => Ok(Some((
                self.pos,
                self.pos + i,
                self.pos + i + 1,
                buf[i] == b'\r',
            ))),
            None if buf.len() > max => Err(Error::LineTooLong { max }),
            None => Ok(None),
        }
    }

    pub(super) fn take_line(&mut self, max: usize) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.find_line(max)?.map(|(s, e, next, cr)| {
            let line = self.inbuf[s..e].to_vec();
            self.pos = next;
            self.skip_lf = cr;
            trace!(line = %String::from_utf8_lossy(&line), "fbb <");
            line
        }))
    }

    pub(super) fn process(&mut self) {
        loop {
            if self.state == State::Closed {
                self.inbuf.clear();
                self.pos = 0;
                return;
            }
            match self.step() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
        if self.pos > 0 {
            self.inbuf.drain(..self.pos);
            self.pos = 0;
        }
        if !self.waits_for_peer() && self.inbuf.len() > MAX_BUFFERED_INPUT {
            self.fail(Error::InputOverflow {
                max: MAX_BUFFERED_INPUT,
            });
        }
    }

    pub(super) fn step(&mut self) -> Result<bool, Error> {
        match self.state {
            State::Idle
            | State::Closed
            | State::FbbWaitApp
            | State::MblWaitApp
            | State::WaitCommit(_) => Ok(false),
            State::WaitOffer(Turn::Fbb {
                may_yield: true, ..
            }) => {
                // The peer may keep the turn after we refused all it offered (wl2k-go).
                let Some((s, e, next, cr)) = self.find_line(MAX_LINE_LEN)? else {
                    return Ok(false);
                };
                let line = self.inbuf[s..e].to_vec();
                if ignorable(&line) {
                    self.pos = next;
                    self.skip_lf = cr;
                    return Ok(true);
                }
                if matches!(line.as_slice(), [b'F', b'A' | b'B' | b'C', ..]) {
                    self.pos = next;
                    self.skip_lf = cr;
                    debug!("peer keeps the turn after an all-refused block");
                    self.state = State::FbbWaitPeer;
                    self.on_line(line)?;
                    return Ok(true);
                }
                Ok(false)
            }
            State::WaitOffer(_) => Ok(false),
            State::Receiving => self.step_receive(),
            _ => match self.take_line(MAX_LINE_LEN)? {
                None => Ok(false),
                Some(line) => {
                    self.on_line(line)?;
                    Ok(true)
                }
            },
        }
    }

    pub(super) fn on_line(&mut self, line: Vec<u8>) -> Result<(), Error> {
        if matches!(self.state, State::CallerWaitPrompt | State::CalledWaitSid) {
            if let Some(calls) = forwards_line(&line) {
                let room = MAX_PEER_FORWARDS.saturating_sub(self.peer_forwards.len());
                self.peer_forwards.extend(calls.into_iter().take(room));
                return Ok(());
            }
        }
        match self.state {
            State::CallerWaitPrompt => self.on_login_line(line),
            State::CalledWaitSid => self.on_sid_line(line),
            State::MblWaitPrompt => {
                if is_peer_error(&line) {
                    return Err(Error::PeerError(lossy(&line)));
                }
                if is_prompt(&line) {
                    self.start_turn(Turn::Mbl);
                }
                Ok(())
            }
            State::FbbWaitAnswer => self.on_fbb_answer(line),
            State::FbbWaitPeer => self.on_fbb_peer_turn(line),
            State::FbbReadBlock => self.on_fbb_block_line(line),
            State::MblWaitSLine => self.on_mbl_command(line),
            State::MblWaitAnswer => self.on_mbl_answer(line),
            State::MblWaitPromptAfter => {
                if is_peer_error(&line) {
                    return Err(Error::PeerError(lossy(&line)));
                }
                if is_prompt(&line) {
                    self.ack_unacked();
                    self.start_turn(Turn::Mbl);
                }
                Ok(())
            }
            State::MblDone => {
                let l = trim_end(&line);
                if l.eq_ignore_ascii_case(b"B") || l.eq_ignore_ascii_case(b"BYE") {
                    self.close_clean();
                }
                Ok(())
            }
            _ => Err(Error::protocol(&line, "unexpected line")),
        }
    }
}
