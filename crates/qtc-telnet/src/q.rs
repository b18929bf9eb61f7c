//! RFC 1143 "Q method" state for one side of one option.

use crate::cmd::{DO, DONT, IAC, WILL, WONT};
use crate::Error;

/// RFC 1143 states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Q {
    #[default]
    No,
    Yes,
    WantNo,
    WantYes,
}

/// The verbs that enable and disable one side on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wire {
    yes: u8,
    no: u8,
}

impl Wire {
    /// Our side: we send WILL / WONT.
    pub(crate) const US: Wire = Wire {
        yes: WILL,
        no: WONT,
    };
    /// The peer's side: we send DO / DONT.
    pub(crate) const HIM: Wire = Wire { yes: DO, no: DONT };
}

/// One side of one option: state plus the one-bit queue ("opposite requested").
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Side {
    state: Q,
    opposite: bool,
}

fn emit(to_net: &mut Vec<u8>, verb: u8, option: u8) {
    to_net.extend_from_slice(&[IAC, verb, option]);
}

impl Side {
    pub(crate) fn is_enabled(&self) -> bool {
        self.state == Q::Yes
    }

    #[cfg(test)]
    pub(crate) fn state(&self) -> (Q, bool) {
        (self.state, self.opposite)
    }

    /// The peer sent the enabling verb (WILL for him, DO for us).
    pub(crate) fn received_enable(
        &mut self,
        acceptable: bool,
        wire: Wire,
        option: u8,
        to_net: &mut Vec<u8>,
    ) -> Result<(), Error> {
        match (self.state, self.opposite) {
            (Q::No, _) => {
                if acceptable {
                    self.state = Q::Yes;
                    emit(to_net, wire.yes, option);
                } else {
                    emit(to_net, wire.no, option);
                }
            }
            (Q::Yes, _) => {}
            (Q::WantNo, false) => {
                self.state = Q::No;
                return Err(Error::NegotiationMismatch { option });
            }
            (Q::WantNo, true) => {
                self.state = Q::Yes;
                self.opposite = false;
                return Err(Error::NegotiationMismatch { option });
            }
            (Q::WantYes, false) => self.state = Q::Yes,
            (Q::WantYes, true) => {
                self.state = Q::WantNo;
                self.opposite = false;
                emit(to_net, wire.no, option);
            }
        }
        Ok(())
    }

    /// The peer sent the disabling verb (WONT for him, DONT for us).
    pub(crate) fn received_disable(
        &mut self,
        wire: Wire,
        option: u8,
        to_net: &mut Vec<u8>,
    ) -> Result<(), Error> {
        match (self.state, self.opposite) {
            (Q::No, _) => {}
            (Q::Yes, _) => {
                self.state = Q::No;
                emit(to_net, wire.no, option);
            }
            (Q::WantNo, false) | (Q::WantYes, _) => {
                self.state = Q::No;
                self.opposite = false;
            }
            (Q::WantNo, true) => {
                self.state = Q::WantYes;
                self.opposite = false;
                emit(to_net, wire.yes, option);
            }
        }
        Ok(())
    }

    /// We want the option enabled.
    pub(crate) fn request_enable(&mut self, wire: Wire, option: u8, to_net: &mut Vec<u8>) {
        match (self.state, self.opposite) {
            (Q::No, _) => {
                self.state = Q::WantYes;
                emit(to_net, wire.yes, option);
            }
            (Q::WantNo, false) => self.opposite = true,
            (Q::WantYes, true) => self.opposite = false,
            // Already enabled, or already heading there.
            (Q::Yes, _) | (Q::WantNo, true) | (Q::WantYes, false) => {}
        }
    }

    /// We want the option disabled.
    pub(crate) fn request_disable(&mut self, wire: Wire, option: u8, to_net: &mut Vec<u8>) {
        match (self.state, self.opposite) {
            (Q::Yes, _) => {
                self.state = Q::WantNo;
                emit(to_net, wire.no, option);
            }
            (Q::WantYes, false) => self.opposite = true,
            (Q::WantNo, true) => self.opposite = false,
            (Q::No, _) | (Q::WantNo, false) | (Q::WantYes, true) => {}
        }
    }
}
