//! The qtc daemon and its sysop commands, as a library: the `qtc` binary (main.rs) parses the
//! command line and calls in here; the fuzz crate reaches the configuration checks through it.

mod admission;
mod bbs_port;
pub mod cli;
mod clock;
pub mod config;
mod ctl;
pub mod daemon;
mod forward;
pub mod housekeeping;
mod import;
mod link;
mod metrics;
pub mod radio;
mod room;
pub mod service;
mod store_thread;
mod throttle;
mod tls;
mod user_limits;
mod web;
