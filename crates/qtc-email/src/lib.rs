//! Users' own mail and news clients on the BBS: SMTP submission, POP3, IMAP4rev1 (with IDLE)
//! and NNTP, as sans-IO state machines, and the RFC 5322 form of a BBS message.
//!
//! Nothing here opens a socket, reads a clock or calls the store. Each protocol session takes
//! the client's bytes ([`Core::handle_input`]) and hands back the bytes to send
//! ([`Core::take_output`]) and [`Event`]s: a login to check, a store [`Request`], a TLS
//! upgrade, a wish to hear of changes (IMAP IDLE), the end. A store request is typed with its
//! answer ([`store`], the shape of qtc-bbs's, from [`qtc_mail::request`]): it carries what its
//! command does with the answer, so no answer can go to the wrong command. The daemon answers
//! with [`Core::login_done`], [`Core::answered`], [`Core::tls_started`] and
//! [`Core::changed`].
//!
//! Each protocol is a parser (`smtp/parse.rs`, `pop3/parse.rs`, `nntp/parse.rs`; IMAP's is
//! `imap-codec`) and a handler beside it. A new command touches the protocol's parser (its
//! variant and its word), its handler, and the handler's tests; a new kind of store work adds
//! a query in [`store`] and, if the store must answer something new, a [`store::MailStore`]
//! method (the daemon's `mail/store.rs`, [`memory::MemoryMail`]).
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
pub mod data;
pub mod folder;
pub mod fuzzing;
pub mod imap;
pub mod kept;
mod lines;
pub mod memory;
pub mod nntp;
pub mod pop3;
pub mod render;
pub mod smtp;
pub mod store;
pub mod submit;
#[cfg(test)]
mod testing;

pub use crate::core::{Core, Event, Exchange, LoginRefused, Settings};
pub use lines::{LineBuffer, LineError};
pub use store::{
    Article, Attachment, Entry, GroupInfo, MailStore, Reply, Request, Route, Stored, Submission,
    Thread, MAX_MAILBOX,
};
