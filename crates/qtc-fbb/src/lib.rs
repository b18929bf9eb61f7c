//! qtc-fbb: sans-IO BBS-to-BBS message forwarding: FBB batch (FA/FB, FS, FF/FQ), B0/B1
//! compressed bodies, Winlink B2F (FC) and MBL/RLI one-at-a-time, plus a partner login
//! helper. Facts follow the project spec `fbb-forwarding.md`.
//!
//! # Layers
//! - [`wire`]: parse/emit only. SIDs and mode negotiation, proposals and answers, binary
//!   blocks, B2F messages, MBL lines, and a message's text as the text modes carry it (no line
//!   of it read as protocol: [`wire::body`]). Parsers borrow their input; each limit has its
//!   own [`Error`] variant.
//! - [`Mode`]: the forwarding modes, and the one table of what each means to the session, the
//!   daemon and the store ([`Payload`], stored forms, resumes).
//! - [`Session`]: one forwarding session, caller or called, in the agreed [`Mode`].
//! - [`login::Script`]: expect/send steps to log in to a partner before the session.
//!
//! # Driving a session
//! ```text
//! let mut s = Session::new(Role::Caller, Config::new(our_call));
//! s.start(now);
//! loop {
//!     while s.poll_transmit(&mut buf) > 0 {}   // write buf to the connection
//!     while let Some(ev) = s.poll_event() { /* offer / answer / committed */ }
//!     wait for input (handle_input / handle_eof) or poll_timeout() (handle_timeout)
//! }
//! ```
//! No I/O, no clock: time comes in as `now`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod challenge;
mod error;
pub mod login;
mod mode;
mod session;
pub mod wire;

#[cfg(test)]
mod tests;

pub use bytes::Bytes;
pub use error::Error;
pub use mode::{Mode, Payload};
pub use session::{
    Answer, Config, Event, LineEnd, Outcome, Outgoing, Proposal, Role, Session,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_MESSAGE, MAX_BUFFERED_INPUT, MAX_LINE_LEN,
    MAX_TRANSMIT_CHUNK,
};
pub use wire::proposal::MsgType;
pub use wire::sid::{Flags, SidInfo};
