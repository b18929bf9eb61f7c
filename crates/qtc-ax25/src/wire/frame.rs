//! A whole AX.25 frame: address, control, PID, information (spec §2.1). No flags, no FCS.

use super::{Address, Control, Modulo, Supervisory, Unnumbered};
use crate::Error;

/// Longest information field accepted (Direwolf's limit; a v2.0 peer cannot know our N1).
pub const MAX_INFO_LEN: usize = 2048;

/// Protocol identifier (spec §2.4), present in I and UI frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pid(pub u8);

impl Pid {
    /// X.25 PLP / ROSE.
    pub const ROSE: Pid = Pid(0x01);
    /// Segmentation fragment.
    pub const SEGMENT: Pid = Pid(0x08);
    /// ARPA IP.
    pub const IP: Pid = Pid(0xCC);
    /// ARPA ARP.
    pub const ARP: Pid = Pid(0xCD);
    /// NET/ROM.
    pub const NETROM: Pid = Pid(0xCF);
    /// No layer 3: plain text, what a BBS uses.
    pub const NO_LAYER3: Pid = Pid(0xF0);
    /// Escape: more PID bytes follow (not interpreted here; treated as a one-byte PID).
    pub const ESCAPE: Pid = Pid(0xFF);
}

/// One AX.25 frame as carried in a KISS data frame.
///
/// `pid` is `Some` exactly for I and UI frames after [`Frame::parse`]; [`Frame::emit`] writes
/// [`Pid::NO_LAYER3`] for an I/UI frame built with `None`, and writes no PID otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Address field.
    pub address: Address,
    /// Control field.
    pub control: Control,
    /// Protocol identifier (I and UI only).
    pub pid: Option<Pid>,
    /// Information field (empty when the frame type has none).
    pub info: Vec<u8>,
    /// Modulus the control field is encoded in (matters for I and S frames only).
    pub modulo: Modulo,
}

impl Frame {
    /// Parse a frame. `modulo` is the link's modulus (the frame does not say).
    ///
    /// Never panics; every malformation is an [`Error`].
    pub fn parse(bytes: &[u8], modulo: Modulo) -> Result<Frame, Error> {
        let (address, alen) = Address::parse(bytes)?;
        let rest = bytes.get(alen..).ok_or(Error::MissingControl)?;
        let (control, clen) = Control::parse(rest, modulo)?;
        let rest = rest.get(clen..).ok_or(Error::MissingControl)?;
        let (pid, info) = if control.has_pid() {
            let (&p, info) = rest.split_first().ok_or(Error::MissingPid)?;
            (Some(Pid(p)), info)
        } else {
            (None, rest)
        };
        if !info.is_empty() && !control.allows_info() {
            return Err(Error::UnexpectedInfo(control.name()));
        }
        if info.len() > MAX_INFO_LEN {
            return Err(Error::InfoTooLong { len: info.len() });
        }
        Ok(Frame {
            address,
            control,
            pid,
            info: info.to_vec(),
            modulo,
        })
    }

    /// Encoded length.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        self.address.buffer_len()
            + self.control.buffer_len(self.modulo)
            + usize::from(self.control.has_pid())
            + self.info.len()
    }

    /// Append the encoded frame (no FCS) to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.reserve(self.buffer_len());
        self.address.emit(out);
        self.control.emit(self.modulo, out);
        if self.control.has_pid() {
            out.push(self.pid.unwrap_or(Pid::NO_LAYER3).0);
        }
        out.extend_from_slice(&self.info);
    }

    /// The encoded frame as a new vector.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.buffer_len());
        self.emit(&mut v);
        v
    }

    /// An unnumbered frame without information field (SABM, SABME, DISC, DM, UA).
    #[must_use]
    pub fn unnumbered(address: Address, kind: Unnumbered, pf: bool) -> Frame {
        Frame {
            address,
            control: Control::U { kind, pf },
            pid: if kind == Unnumbered::Ui {
                Some(Pid::NO_LAYER3)
            } else {
                None
            },
            info: Vec::new(),
            modulo: Modulo::Mod8,
        }
    }

    /// A UI frame.
    #[must_use]
    pub fn ui(address: Address, pid: Pid, info: Vec<u8>) -> Frame {
        Frame {
            address,
            control: Control::U {
                kind: Unnumbered::Ui,
                pf: false,
            },
            pid: Some(pid),
            info,
            modulo: Modulo::Mod8,
        }
    }

    /// A supervisory frame.
    #[must_use]
    pub fn supervisory(
        address: Address,
        kind: Supervisory,
        nr: u8,
        pf: bool,
        modulo: Modulo,
    ) -> Frame {
        Frame {
            address,
            control: Control::S { kind, nr, pf },
            pid: None,
            info: Vec::new(),
            modulo,
        }
    }

    /// An information frame.
    #[must_use]
    pub fn information(
        address: Address,
        ns: u8,
        nr: u8,
        poll: bool,
        pid: Pid,
        info: Vec<u8>,
        modulo: Modulo,
    ) -> Frame {
        Frame {
            address,
            control: Control::I { ns, nr, poll },
            pid: Some(pid),
            info,
            modulo,
        }
    }
}
