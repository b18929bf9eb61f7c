//! `qtc`: the packet-radio BBS daemon and its sysop command line.

mod bbs_port;
mod cli;
mod clock;
mod config;
mod ctl;
mod daemon;
mod forward;
mod import;
mod link;
mod store_thread;
mod throttle;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// qtc: an event-driven packet-radio BBS: telnet users, FBB forwarding (AX.25 to come).
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Configuration file (TOML). Without it qtc runs on its built-in defaults.
    #[arg(short, long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the BBS daemon (stop it with Ctrl-C or SIGTERM).
    ///
    /// Example: qtc -c /etc/qtc/qtc.toml run
    Run,
    /// Write a fully commented example configuration.
    ///
    /// Example: qtc init qtc.toml
    Init {
        /// Where to write it (default: standard output).
        file: Option<PathBuf>,
    },
    /// Manage users.
    #[command(subcommand)]
    User(cli::UserCmd),
    /// Look at and kill messages (works while the daemon runs).
    #[command(subcommand)]
    Msg(cli::MsgCmd),
    /// Ask the running daemon to do something (over its control socket).
    #[command(subcommand)]
    Ctl(cli::CtlCmd),
    /// Look at the forwarding queues (works while the daemon runs).
    #[command(subcommand)]
    Fwd(cli::FwdCmd),
}

fn main() -> ExitCode {
    let args = Cli::parse();
    let result = match args.command {
        Cmd::Init { file } => cli::init(file.as_deref()),
        Cmd::Run => config::load(args.config.as_deref()).and_then(daemon::run),
        Cmd::User(cmd) => config::load(args.config.as_deref()).and_then(|c| cli::user(&c, cmd)),
        Cmd::Msg(cmd) => config::load(args.config.as_deref()).and_then(|c| cli::msg(&c, cmd)),
        Cmd::Ctl(cmd) => config::load(args.config.as_deref()).and_then(|c| cli::ctl(&c, cmd)),
        Cmd::Fwd(cmd) => config::load(args.config.as_deref()).and_then(|c| cli::fwd(&c, cmd)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qtc: {e:#}");
            ExitCode::FAILURE
        }
    }
}
