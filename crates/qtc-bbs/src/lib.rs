//! qtc's BBS command interpreter, the part a human user talks to.
//!
//! It is a sans-IO state machine: the transport (telnet, AX.25) feeds it the bytes the user typed
//! and sends on the text it produces. It never touches a socket, a clock or the store: what it
//! needs from the store it asks as a [`Request`] and takes the [`Reply`] as input, so one slow
//! query delays only the user who asked, and its tests run against a memory store. A request
//! carries what its command does with the answer: the compiler pairs them.
//!
//! # Driving a [`Session`]
//! 1. [`Session::new`] with the shared [`Config`] and how the user was identified ([`Access`]).
//! 2. [`Session::start`] once: greeting or login prompt.
//! 3. For every chunk received: [`Session::handle_input`] (while [`Session::wants_input`]).
//! 4. After each call: run every [`Session::take_request`] ([`Request::run`] against a store, or
//!    the daemon's threads as its variant says) and give each reply, in order, to
//!    [`Session::store_answered`] ([`Session::store_lost`] if it could not run); send [`Session::take_output`] (text
//!    with CR or CR LF line ends; the transport converts them to its own) and act on every
//!    [`Session::poll_event`]. When [`Session::pending_ask`] returns a question (`U`, `J`,
//!    `PORTS`), answer it with [`Session::answer`].
//! 5. Once the output is sent, if [`Session::has_more_output`], call [`Session::more_output`]
//!    for the next piece: long output is made only as fast as the user reads it.
//! 6. Stop when an [`Event::Close`] arrives.
#![forbid(unsafe_code)]

mod ask;
mod cmd;
mod conv;
mod lines;
mod session;
mod store;
#[cfg(test)]
mod testing;
mod view;

pub use ask::{
    Answer, Ask, HeardStation, NeighbourInfo, NodeInfo, OnlineUser, PortInfo, RouteInfo,
};
pub use cmd::{parse, Command, CommandError, ListStatus, ListWhat, SendCmd};
pub use conv::{said, Conv, ConvEvent};
pub use lines::{Line, LineReader};
pub use session::{Access, Checking, Config, Event, Refusal, Session};
pub use store::{answer_all, BbsStore, NewPassword, Reply, Request, StoreJob};
