//! The qtc daemon and its sysop commands, as a library: the `qtc` binary (main.rs) parses the
//! command line and calls in here; the fuzz crate reaches the configuration checks through it.

#[macro_use]
mod out;

mod admission;
mod bbs_port;
pub mod cli;
mod clock;
mod conference;
pub mod config;
pub mod config_file;
mod connection;
mod cpu_pool;
mod ctl;
pub mod daemon;
mod dir_lock;
mod downlink;
mod forward;
mod health;
pub mod housekeeping;
mod import;
mod link;
mod log_limit;
mod login;
mod mail;
mod metrics;
mod online;
mod partner_trust;
mod passwords;
pub mod phy;
mod prefix;
pub use out::closed_pipe;
pub mod radio;
mod read_pool;
mod reload;
mod room;
pub mod service;
mod session_store;
mod store_thread;
mod stream_io;
mod submission;
mod throttle;
mod tls;
mod user_limits;
mod web;

/// `qtc password-helper` (hidden): one argon2 check or hash for the daemon, in a process of its
/// own so that its 19 MiB are returned to the system when it exits.
pub use passwords::helper_main as password_helper;
