//! `qtc`: the packet-radio BBS daemon and its sysop command line.

mod cli;
mod clock;
mod config;
mod daemon;
mod store_thread;
mod telnet_server;
mod throttle;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// qtc: an event-driven packet-radio BBS (telnet now; FBB forwarding and AX.25 to come).
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
}

fn main() -> ExitCode {
    let args = Cli::parse();
    let result = match args.command {
        Cmd::Init { file } => cli::init(file.as_deref()),
        Cmd::Run => config::load(args.config.as_deref()).and_then(daemon::run),
        Cmd::User(cmd) => config::load(args.config.as_deref()).and_then(|c| cli::user(&c, cmd)),
        Cmd::Msg(cmd) => config::load(args.config.as_deref()).and_then(|c| cli::msg(&c, cmd)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qtc: {e:#}");
            ExitCode::FAILURE
        }
    }
}
