//! XID parameter negotiation fields (AX.25 2.2 section 4.3.3.7, spec §3.8).
//!
//! Information field: `FI=82, GI=80, GL (2 bytes, big-endian)`, then PI/PL/PV triples in
//! ascending PI order, values big-endian. Unknown PIs are skipped; a missing PI is `None`.

use crate::Error;

/// Format indicator.
pub const XID_FI: u8 = 0x82;
/// Group identifier (parameter negotiation).
pub const XID_GI: u8 = 0x80;

const PI_CLASSES: u8 = 0x02;
const PI_HDLC: u8 = 0x03;
const PI_N1_RX: u8 = 0x06;
const PI_WINDOW_RX: u8 = 0x08;
const PI_T1: u8 = 0x09;
const PI_N2: u8 = 0x0A;

/// PI 2, classes of procedures (first byte; the spec's `00 20` example is read as an erratum,
/// so both bytes are OR-ed on receive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Classes {
    /// 0x01: balanced ABM.
    pub balanced: bool,
    /// 0x20: half duplex.
    pub half_duplex: bool,
    /// 0x40: full duplex.
    pub full_duplex: bool,
}

/// PI 3, HDLC optional functions (3 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[allow(clippy::struct_excessive_bools)]
pub struct HdlcFunctions {
    /// Byte 0, 0x02: REJ.
    pub rej: bool,
    /// Byte 0, 0x04: SREJ.
    pub srej: bool,
    /// Byte 0, 0x80: extended address.
    pub extended_address: bool,
    /// Byte 1, 0x04: modulo 8.
    pub mod8: bool,
    /// Byte 1, 0x08: modulo 128.
    pub mod128: bool,
    /// Byte 1, 0x20: TEST.
    pub test: bool,
    /// Byte 1, 0x80: 16-bit FCS.
    pub fcs16: bool,
    /// Byte 2, 0x02: synchronous transmit.
    pub sync_tx: bool,
    /// Byte 2, 0x20: multi-SREJ.
    pub multi_srej: bool,
    /// Byte 2, 0x40: segmenter.
    pub segmenter: bool,
}

impl HdlcFunctions {
    fn to_bytes(self) -> [u8; 3] {
        let bit = |b: bool, v: u8| if b { v } else { 0 };
        [
            bit(self.rej, 0x02) | bit(self.srej, 0x04) | bit(self.extended_address, 0x80),
            bit(self.mod8, 0x04)
                | bit(self.mod128, 0x08)
                | bit(self.test, 0x20)
                | bit(self.fcs16, 0x80),
            bit(self.sync_tx, 0x02) | bit(self.multi_srej, 0x20) | bit(self.segmenter, 0x40),
        ]
    }

    fn from_bytes(b: [u8; 3]) -> Self {
        HdlcFunctions {
            rej: b[0] & 0x02 != 0,
            srej: b[0] & 0x04 != 0,
            extended_address: b[0] & 0x80 != 0,
            mod8: b[1] & 0x04 != 0,
            mod128: b[1] & 0x08 != 0,
            test: b[1] & 0x20 != 0,
            fcs16: b[1] & 0x80 != 0,
            sync_tx: b[2] & 0x02 != 0,
            multi_srej: b[2] & 0x20 != 0,
            segmenter: b[2] & 0x40 != 0,
        }
    }
}

/// The AX.25 2.2 XID parameters. `None` means "not present" (keep the current value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct XidParams {
    /// PI 2.
    pub classes: Option<Classes>,
    /// PI 3.
    pub hdlc: Option<HdlcFunctions>,
    /// PI 6: largest I field we can receive, in **bits**.
    pub n1_rx_bits: Option<u32>,
    /// PI 8: receive window (1–127).
    pub window_rx: Option<u8>,
    /// PI 9: acknowledgement timer T1, in milliseconds.
    pub ack_timer_ms: Option<u32>,
    /// PI 10: retries N2.
    pub retries: Option<u8>,
}

fn be_value(pv: &[u8]) -> Result<u32, Error> {
    if pv.is_empty() || pv.len() > 4 {
        return Err(Error::MalformedXid("numeric value must be 1 to 4 bytes"));
    }
    Ok(pv.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
}

fn push_param(out: &mut Vec<u8>, pi: u8, pv: &[u8]) {
    out.push(pi);
    // Values are at most 4 bytes.
    out.push(pv.len() as u8);
    out.extend_from_slice(pv);
}

/// Big-endian value in at least `min` bytes (without leading zero bytes beyond that).
fn push_number(out: &mut Vec<u8>, pi: u8, v: u32, min: usize) {
    let bytes = v.to_be_bytes();
    let needed = 4 - (v.leading_zeros() as usize / 8).min(3);
    let len = needed.max(min);
    push_param(out, pi, &bytes[4 - len..]);
}

impl XidParams {
    /// Parse an XID information field. An empty field yields all `None`.
    pub fn parse(info: &[u8]) -> Result<XidParams, Error> {
        let mut p = XidParams::default();
        if info.is_empty() {
            return Ok(p);
        }
        let [fi, gi, gl_hi, gl_lo, rest @ ..] = info else {
            return Err(Error::MalformedXid("header too short"));
        };
        if *fi != XID_FI || *gi != XID_GI {
            return Err(Error::MalformedXid("unknown format or group identifier"));
        }
        let gl = usize::from(u16::from_be_bytes([*gl_hi, *gl_lo]));
        let mut group = rest
            .get(..gl)
            .ok_or(Error::MalformedXid("group length beyond end of field"))?;
        while !group.is_empty() {
            let [pi, pl, tail @ ..] = group else {
                return Err(Error::MalformedXid("truncated parameter header"));
            };
            let pl = usize::from(*pl);
            let pv = tail
                .get(..pl)
                .ok_or(Error::MalformedXid("parameter value beyond group"))?;
            group = &tail[pl..];
            match *pi {
                PI_CLASSES => {
                    let bits = pv.iter().fold(0u8, |a, &b| a | b);
                    if pv.is_empty() || pv.len() > 2 {
                        return Err(Error::MalformedXid("classes must be 1 or 2 bytes"));
                    }
                    p.classes = Some(Classes {
                        balanced: bits & 0x01 != 0,
                        half_duplex: bits & 0x20 != 0,
                        full_duplex: bits & 0x40 != 0,
                    });
                }
                PI_HDLC => {
                    let b: [u8; 3] = pv
                        .try_into()
                        .map_err(|_| Error::MalformedXid("HDLC functions must be 3 bytes"))?;
                    p.hdlc = Some(HdlcFunctions::from_bytes(b));
                }
                PI_N1_RX => p.n1_rx_bits = Some(be_value(pv)?),
                PI_WINDOW_RX => {
                    p.window_rx = Some(
                        u8::try_from(be_value(pv)?)
                            .map_err(|_| Error::MalformedXid("window size above 255"))?,
                    );
                }
                PI_T1 => p.ack_timer_ms = Some(be_value(pv)?),
                PI_N2 => {
                    p.retries = Some(
                        u8::try_from(be_value(pv)?)
                            .map_err(|_| Error::MalformedXid("retries above 255"))?,
                    );
                }
                other => tracing::trace!(pi = other, "XID: unknown parameter ignored"),
            }
        }
        Ok(p)
    }

    /// Encoded length of [`XidParams::emit`]'s output.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        let mut v = Vec::new();
        self.emit(&mut v);
        v.len()
    }

    /// Append the encoded information field (header and the present parameters, ascending PI).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let mut group = Vec::with_capacity(32);
        if let Some(c) = self.classes {
            let b = u8::from(c.balanced)
                | (u8::from(c.half_duplex) << 5)
                | (u8::from(c.full_duplex) << 6);
            // Direwolf's reading of the spec: the bits go in the first byte.
            push_param(&mut group, PI_CLASSES, &[b, 0]);
        }
        if let Some(h) = self.hdlc {
            push_param(&mut group, PI_HDLC, &h.to_bytes());
        }
        if let Some(n1) = self.n1_rx_bits {
            push_number(&mut group, PI_N1_RX, n1, 2);
        }
        if let Some(k) = self.window_rx {
            push_param(&mut group, PI_WINDOW_RX, &[k]);
        }
        if let Some(t1) = self.ack_timer_ms {
            push_number(&mut group, PI_T1, t1, 2);
        }
        if let Some(n2) = self.retries {
            push_param(&mut group, PI_N2, &[n2]);
        }
        out.extend_from_slice(&[XID_FI, XID_GI]);
        // At most 6 parameters of at most 6 bytes each.
        out.extend_from_slice(&(group.len() as u16).to_be_bytes());
        out.extend_from_slice(&group);
    }
}
