//! The control field (spec §2.3), modulo 8 and modulo 128.

use crate::Error;

/// Sequence-number modulus of a link. The frame itself does not say which is in use: it is fixed
/// by SABM (8) or SABME (128) and kept in the link state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Modulo {
    /// AX.25 2.0 and 2.2 basic: 3-bit sequence numbers, 1-byte control field.
    #[default]
    Mod8,
    /// AX.25 2.2 extended: 7-bit sequence numbers, 2-byte I and S control fields.
    Mod128,
}

impl Modulo {
    /// 8 or 128.
    #[must_use]
    pub fn value(self) -> u8 {
        match self {
            Modulo::Mod8 => 8,
            Modulo::Mod128 => 128,
        }
    }

    /// `value() - 1`, the mask for sequence numbers.
    #[must_use]
    pub fn mask(self) -> u8 {
        self.value() - 1
    }
}

/// Supervisory frame kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Supervisory {
    /// Receive Ready.
    Rr,
    /// Receive Not Ready.
    Rnr,
    /// Reject (go back N).
    Rej,
    /// Selective reject.
    Srej,
}

impl Supervisory {
    fn bits(self) -> u8 {
        match self {
            Supervisory::Rr => 0x01,
            Supervisory::Rnr => 0x05,
            Supervisory::Rej => 0x09,
            Supervisory::Srej => 0x0D,
        }
    }

    fn from_bits(b: u8) -> Self {
        match (b >> 2) & 3 {
            0 => Supervisory::Rr,
            1 => Supervisory::Rnr,
            2 => Supervisory::Rej,
            _ => Supervisory::Srej,
        }
    }
}

/// Unnumbered frame kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unnumbered {
    /// Set Asynchronous Balanced Mode Extended (connect, modulo 128).
    Sabme,
    /// Set Asynchronous Balanced Mode (connect, modulo 8).
    Sabm,
    /// Disconnect.
    Disc,
    /// Disconnected Mode.
    Dm,
    /// Unnumbered Acknowledge.
    Ua,
    /// Frame Reject.
    Frmr,
    /// Unnumbered Information.
    Ui,
    /// Exchange Identification.
    Xid,
    /// Test.
    Test,
}

impl Unnumbered {
    const ALL: [Unnumbered; 9] = [
        Unnumbered::Sabme,
        Unnumbered::Sabm,
        Unnumbered::Disc,
        Unnumbered::Dm,
        Unnumbered::Ua,
        Unnumbered::Frmr,
        Unnumbered::Ui,
        Unnumbered::Xid,
        Unnumbered::Test,
    ];

    /// The control byte with P/F = 0.
    fn bits(self) -> u8 {
        match self {
            Unnumbered::Sabme => 0x6F,
            Unnumbered::Sabm => 0x2F,
            Unnumbered::Disc => 0x43,
            Unnumbered::Dm => 0x0F,
            Unnumbered::Ua => 0x63,
            Unnumbered::Frmr => 0x87,
            Unnumbered::Ui => 0x03,
            Unnumbered::Xid => 0xAF,
            Unnumbered::Test => 0xE3,
        }
    }

    /// Short name, for errors and logs.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Unnumbered::Sabme => "SABME",
            Unnumbered::Sabm => "SABM",
            Unnumbered::Disc => "DISC",
            Unnumbered::Dm => "DM",
            Unnumbered::Ua => "UA",
            Unnumbered::Frmr => "FRMR",
            Unnumbered::Ui => "UI",
            Unnumbered::Xid => "XID",
            Unnumbered::Test => "TEST",
        }
    }

    /// Whether this frame type may carry an information field.
    #[must_use]
    pub fn has_info(self) -> bool {
        matches!(
            self,
            Unnumbered::Frmr | Unnumbered::Ui | Unnumbered::Xid | Unnumbered::Test
        )
    }
}

const PF_U: u8 = 0x10;

/// A decoded control field. Sequence numbers are always below the link's modulus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Control {
    /// Information frame.
    I {
        /// Send sequence number N(S).
        ns: u8,
        /// Receive sequence number N(R).
        nr: u8,
        /// Poll bit.
        poll: bool,
    },
    /// Supervisory frame.
    S {
        /// Which one.
        kind: Supervisory,
        /// N(R).
        nr: u8,
        /// Poll/final bit.
        pf: bool,
    },
    /// Unnumbered frame.
    U {
        /// Which one.
        kind: Unnumbered,
        /// Poll/final bit.
        pf: bool,
    },
}

impl Control {
    /// Parse the control field at the start of `bytes`. Returns it and its length (1 or 2).
    pub fn parse(bytes: &[u8], modulo: Modulo) -> Result<(Control, usize), Error> {
        let &b0 = bytes.first().ok_or(Error::MissingControl)?;
        if b0 & 0x03 == 0x03 {
            let bits = b0 & !PF_U;
            let kind = Unnumbered::ALL
                .into_iter()
                .find(|k| k.bits() == bits)
                .ok_or(Error::UnknownControl(b0))?;
            return Ok((
                Control::U {
                    kind,
                    pf: b0 & PF_U != 0,
                },
                1,
            ));
        }
        match modulo {
            Modulo::Mod8 => {
                let nr = b0 >> 5;
                let pf = b0 & 0x10 != 0;
                let c = if b0 & 1 == 0 {
                    Control::I {
                        ns: (b0 >> 1) & 7,
                        nr,
                        poll: pf,
                    }
                } else {
                    Control::S {
                        kind: Supervisory::from_bits(b0),
                        nr,
                        pf,
                    }
                };
                Ok((c, 1))
            }
            Modulo::Mod128 => {
                let &b1 = bytes.get(1).ok_or(Error::MissingControl)?;
                let nr = b1 >> 1;
                let pf = b1 & 1 != 0;
                let c = if b0 & 1 == 0 {
                    Control::I {
                        ns: b0 >> 1,
                        nr,
                        poll: pf,
                    }
                } else {
                    // S frame first byte is 0000SS01: the high nibble is reserved.
                    if b0 & 0xF0 != 0 {
                        return Err(Error::UnknownControl(b0));
                    }
                    Control::S {
                        kind: Supervisory::from_bits(b0),
                        nr,
                        pf,
                    }
                };
                Ok((c, 2))
            }
        }
    }

    /// Encoded length for this modulus.
    #[must_use]
    pub fn buffer_len(&self, modulo: Modulo) -> usize {
        match (self, modulo) {
            (Control::U { .. }, _) | (_, Modulo::Mod8) => 1,
            _ => 2,
        }
    }

    /// Append the encoded field. Sequence numbers are masked to the modulus.
    pub fn emit(&self, modulo: Modulo, out: &mut Vec<u8>) {
        let m = modulo.mask();
        match (*self, modulo) {
            (Control::U { kind, pf }, _) => out.push(kind.bits() | if pf { PF_U } else { 0 }),
            (Control::I { ns, nr, poll }, Modulo::Mod8) => {
                out.push(((nr & m) << 5) | (u8::from(poll) << 4) | ((ns & m) << 1));
            }
            (Control::S { kind, nr, pf }, Modulo::Mod8) => {
                out.push(((nr & m) << 5) | (u8::from(pf) << 4) | kind.bits());
            }
            (Control::I { ns, nr, poll }, Modulo::Mod128) => {
                out.extend_from_slice(&[(ns & m) << 1, ((nr & m) << 1) | u8::from(poll)]);
            }
            (Control::S { kind, nr, pf }, Modulo::Mod128) => {
                out.extend_from_slice(&[kind.bits(), ((nr & m) << 1) | u8::from(pf)]);
            }
        }
    }

    /// The P/F bit.
    #[must_use]
    pub fn pf(&self) -> bool {
        match *self {
            Control::I { poll, .. } => poll,
            Control::S { pf, .. } | Control::U { pf, .. } => pf,
        }
    }

    /// Whether a PID byte follows (I and UI frames).
    #[must_use]
    pub fn has_pid(&self) -> bool {
        matches!(
            self,
            Control::I { .. }
                | Control::U {
                    kind: Unnumbered::Ui,
                    ..
                }
        )
    }

    /// Whether an information field is allowed (I, SREJ with multi-SREJ list, FRMR, UI, XID,
    /// TEST).
    #[must_use]
    pub fn allows_info(&self) -> bool {
        match self {
            Control::I { .. } => true,
            Control::S { kind, .. } => *kind == Supervisory::Srej,
            Control::U { kind, .. } => kind.has_info(),
        }
    }

    /// Short name, for errors and logs.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Control::I { .. } => "I",
            Control::S { kind, .. } => match kind {
                Supervisory::Rr => "RR",
                Supervisory::Rnr => "RNR",
                Supervisory::Rej => "REJ",
                Supervisory::Srej => "SREJ",
            },
            Control::U { kind, .. } => kind.name(),
        }
    }
}
