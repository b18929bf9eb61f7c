//! The mail model shared by every part of qtc: messages, users, list filters, and the
//! [`MessageStore`] trait that the BBS interpreter and the forwarding code talk to. Callsigns are
//! qtc-callsign's (`Callsign::parse_station` checks a user's or a BBS's call).
//!
//! Nothing here does I/O. `qtc-store` implements [`MessageStore`] on SQLite; [`memory::MemoryStore`]
//! keeps one in memory for the interpreter's tests and fuzz target.
#![forbid(unsafe_code)]

pub mod charset;
pub mod dest;
pub mod folder;
pub mod kill;
pub mod memory;
mod message;
pub mod request;
pub mod route;
pub mod rules;
mod station;
mod store;
pub mod submitted;
pub mod text;
mod utc;

pub use message::{
    is_valid_bid, mime_type, Attachment, FileInfo, ListFilter, Message, MessageHeader, MsgStatus,
    MsgType, NewMessage, Thread, MAX_AT_LEN, MAX_BID_LEN, MAX_SUBJECT_LEN, MAX_TO_LEN,
};
pub use station::Station;
pub use store::{GreetingCounts, MessageStore, StoreError, User};
pub use utc::Utc;
