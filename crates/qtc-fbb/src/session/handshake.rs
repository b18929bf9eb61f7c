//! The handshake: SIDs, the mode both ends agree on, our SID.

use super::*;

impl Session {
    /// As caller, a line before the partner's prompt: its SID, a login challenge, or the
    /// prompt, at which we send our SID and take the first turn.
    pub(super) fn on_login_line(&mut self, line: Vec<u8>) -> Result<(), Error> {
        let line = without_telnet_commands(line);
        if Sid::is_sid_line(&line) {
            if let Ok(s) = Sid::parse(&line) {
                self.seen_sid = Some(s.to_info());
            }
        } else if let Some(c) = challenge::winlink_challenge(&line) {
            self.winlink_challenge = Some(c);
        } else if let Some(answer) = self
            .cfg
            .secret
            .as_deref()
            .and_then(|secret| challenge::sys_answer(&line, secret))
        {
            debug!("answering the partner's SYS challenge");
            self.send_line(answer.as_bytes());
        } else if is_prompt(&line) {
            let sid = self.seen_sid.take();
            let mode = self.connect(sid);
            let ours = self.our_sid(mode);
            self.send_line(ours.as_bytes());
            if let Some(c) = self.winlink_challenge.take() {
                match self.cfg.secret.as_deref() {
                    Some(secret) => {
                        let pr = format!(";PR: {}", challenge::winlink_response(&c, secret));
                        self.send_line(pr.as_bytes());
                    }
                    None => warn!(
                        "the partner asks for a Winlink secure login (;PQ) and no secret is set"
                    ),
                }
            }
            if mode.is_batch() {
                self.start_turn(Turn::Fbb {
                    peer_ff: false,
                    may_yield: false,
                });
            } else {
                self.state = State::MblWaitPrompt;
            }
        }
        Ok(())
    }

    /// As called, the caller's first line: its SID (or an MBL `S` line from a partner that
    /// sends none).
    pub(super) fn on_sid_line(&mut self, line: Vec<u8>) -> Result<(), Error> {
        let line = without_telnet_commands(line);
        if ignorable(&line) {
            return Ok(());
        }
        if Sid::is_sid_line(&line) {
            let sid = Sid::parse(&line)
                .map_err(|e| Error::protocol(&line, format!("bad SID: {e}")))?
                .to_info();
            let mode = self.connect(Some(sid));
            if mode.is_batch() {
                self.state = State::FbbWaitPeer;
            } else {
                self.send_mbl_prompt();
                self.state = State::MblWaitSLine;
            }
            Ok(())
        } else if SendLine::is_send_line(&line) {
            // An MBL partner that sends no SID.
            self.connect(None);
            self.state = State::MblWaitSLine;
            self.on_line(line)
        } else if matches!(trim_end(&line), b"B" | b"b" | b"BYE" | b"bye") {
            // A partner that logs off before forwarding anything (xfbbd closes quietly).
            self.close_clean();
            Ok(())
        } else {
            Err(Error::protocol(&line, "expected the caller's SID"))
        }
    }

    pub(super) fn our_sid(&self, mode: Mode) -> String {
        Sid {
            name: &self.cfg.software,
            version: &self.cfg.version,
            flags: Flags::ours(mode),
        }
        .to_string()
    }

    pub(super) fn connect(&mut self, sid: Option<SidInfo>) -> Mode {
        self.peer_flags = sid.as_ref().map(|s| s.flags).unwrap_or_default();
        let mode = Mode::negotiate(
            &Flags::ours(self.cfg.max_mode),
            &self.peer_flags,
            self.cfg.max_mode,
        );
        debug!(?mode, peer = ?sid, "fbb connected");
        self.mode = Some(mode);
        self.peer = sid.clone();
        self.events.push_back(Event::Connected {
            peer_sid: sid,
            mode,
        });
        mode
    }

    pub(super) fn peer_is_winlink(&self) -> bool {
        self.peer.as_ref().is_some_and(SidInfo::is_winlink_client)
    }
}

/// A line before the SID without the telnet commands a partner's software may put before it on
/// a link that speaks no telnet (`wire::sid::skip_telnet_commands`).
fn without_telnet_commands(line: Vec<u8>) -> Vec<u8> {
    match skip_telnet_commands(&line) {
        rest if rest.len() == line.len() => line,
        rest => rest.to_vec(),
    }
}
