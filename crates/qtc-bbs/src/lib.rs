//! qtc's BBS command interpreter, the part a human user talks to.
//!
//! It is a sans-IO state machine: the transport (telnet, AX.25) feeds it the bytes the user typed
//! and sends on the text it produces; it reads and writes mail through the
//! [`qtc_mail::MessageStore`] trait and is told the time. It never touches a socket or a clock.
//!
//! # Driving a [`Session`]
//! 1. [`Session::new`] with the shared [`Config`] and how the user was identified ([`Access`]).
//! 2. [`Session::start`] once: greeting or login prompt.
//! 3. For every chunk received: [`Session::handle_input`].
//! 4. After each call: send [`Session::take_output`] (text with CR or CR LF line ends; the
//!    transport converts them to its own) and act on every [`Session::poll_event`].
//!    When [`Session::pending_ask`] returns a question (`U`, `J`, `PORTS`), answer it with
//!    [`Session::answer`] before feeding more input.
//! 5. Stop when an [`Event::Close`] arrives.
#![forbid(unsafe_code)]

mod ask;
mod command;
mod conv;
mod help;
mod lines;
mod session;
mod view;

pub use ask::{Answer, Ask, HeardStation, OnlineUser, PortInfo};
pub use command::{parse, Command, CommandError, ListStatus, ListWhat, SendCmd};
pub use conv::{said, Conv, ConvEvent};
pub use lines::{Line, LineReader};
pub use session::{Access, Config, Event, Session};
