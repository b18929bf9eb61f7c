//! Users' own mail and news clients on the BBS: SMTP submission, POP3, IMAP4rev1 (with IDLE)
//! and NNTP, as sans-IO state machines, and the RFC 5322 form of a BBS message.
//!
//! Nothing here opens a socket, reads a clock or calls the store. Each protocol session takes
//! the client's bytes ([`Core::handle_input`]) and hands back the bytes to send
//! ([`Core::take_output`]) and [`Event`]s: a login to check, one store [`Request`] at a time, a
//! TLS upgrade, a wish to hear of changes (IMAP IDLE), the end. The daemon answers with
//! [`Core::login_done`], [`Core::answered`], [`Core::tls_started`] and [`Core::changed`].
//!
//! # Driving a session
//! 1. Make it ([`smtp::Smtp::new`], [`pop3::Pop3::new`], [`imap::Imap::new`],
//!    [`nntp::Nntp::new`]) with the [`Settings`]; its greeting is in the first output.
//! 2. Feed what the client sends with [`Core::handle_input`] while [`Core::wants_input`].
//! 3. Send [`Core::take_output`], then act on every [`Core::poll_event`]: a store request is
//!    run only once the output before it has been written, so a long FETCH or RETR is made
//!    only as fast as the client reads it.
//! 4. Stop at [`Event::Close`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod addr;
mod core;
pub mod fuzzing;
pub mod imap;
mod lines;
pub mod nntp;
pub mod pop3;
pub mod render;
pub mod smtp;
pub mod submit;

pub use crate::core::{
    Article, Core, Entry, Event, GroupInfo, LoginRefused, Reply, Request, Settings, Submission,
    MAX_MAILBOX,
};
pub use lines::{LineBuffer, LineError};
