//! The AX.25 wire layer: parse and emit only, no state (spec §2).
//!
//! [`Frame::parse`] borrows the input and never panics; [`Frame::emit`] appends to a caller-owned
//! buffer of [`Frame::buffer_len`] bytes. KISS carries frames without FCS; AXUDP/AXIP and the air
//! add one ([`fcs`], [`append_fcs`], [`check_fcs`]).

mod address;
mod control;
mod fcs;
mod frame;
mod xid;

pub use address::{
    Address, CommandResponse, Digipeater, Path, ADDRESS_LEN, MAX_ADDRESS_FIELD, MAX_DIGIPEATERS,
};
pub use control::{Control, Modulo, Supervisory, Unnumbered};
pub use fcs::{append_fcs, check_fcs, fcs, FCS_RESIDUE};
pub use frame::{Frame, Pid, MAX_INFO_LEN};
pub use xid::{Classes, HdlcFunctions, XidParams, XID_FI, XID_GI};

#[cfg(test)]
mod tests;
