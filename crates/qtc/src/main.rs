//! `qtc`: the packet-radio BBS daemon and its sysop command line.

use qtc::{cli, config_file, daemon, housekeeping, radio, service};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// qtc: an event-driven packet-radio BBS: telnet users, FBB forwarding, AX.25 over KISS and AXUDP.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Configuration file (TOML). Without it: $QTC_CONFIG, else /etc/qtc/qtc.toml if it exists,
    /// else the built-in defaults (data in ./qtc-data).
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
    /// Write a fully commented example configuration; to a file, with a self-signed
    /// certificate beside it (FILE-cert.pem, FILE-key.pem) named in its [tls].
    ///
    /// Example: qtc init qtc.toml
    Init {
        /// Where to write it (default: standard output, without a certificate).
        file: Option<PathBuf>,
    },
    /// Make a self-signed certificate and its key where [tls] cert and key name them (neither
    /// may exist yet), for this host's name, localhost, the [mail] domain and each --name.
    /// Prints its SHA-256 fingerprint, which users pin.
    ///
    /// Example: qtc -c /etc/qtc/qtc.toml cert --name bbs.example.org
    Cert {
        /// Another name clients reach this host by (repeat for more).
        #[arg(long = "name", value_name = "HOST")]
        names: Vec<String>,
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
    /// Check the message store (works while the daemon runs).
    #[command(subcommand)]
    Store(housekeeping::StoreCmd),
    /// Check the configuration without starting: prints what qtc would listen on.
    ///
    /// Example: qtc -c /etc/qtc/qtc.toml check
    Check,
    /// Connect to a station over AX.25 and talk: a terminal on a KISS TNC or AXUDP.
    ///
    /// Lines typed go out (CR line ends), received text is printed; exits when the link is down.
    ///
    /// Example: qtc call --port kiss-tcp:127.0.0.1:8001 --mycall N0ZZZ N0AAA via N0DIG
    Call {
        /// The radio port as KIND:ARGS, a `[[port]]` in one argument: kiss-tcp:HOST:PORT, say
        /// (docs/radio.md, "qtc call"; a wrong one lists every kind).
        #[arg(long)]
        port: String,
        /// Our callsign on the link (with SSID if wanted, N0ZZZ-1).
        #[arg(long)]
        mycall: String,
        /// The station to call.
        remote: String,
        /// Digipeaters: `via DIGI1 DIGI2` (the word via is optional).
        via: Vec<String>,
    },
    /// The daemon's password checker (one argon2 run per process; not for people).
    #[command(name = "password-helper", hide = true)]
    PasswordHelper,
}

fn main() -> ExitCode {
    let args = Cli::parse();
    let config = args.config;
    let load = move || config_file::load(config);
    let result = match args.command {
        Cmd::Init { file } => cli::init(file.as_deref()),
        Cmd::Run => load().and_then(daemon::run),
        Cmd::Cert { names } => load().and_then(|c| cli::cert(&c, &names)),
        Cmd::User(cmd) => load().and_then(|c| cli::user(&c, cmd)),
        Cmd::Msg(cmd) => load().and_then(|c| cli::msg(&c, cmd)),
        Cmd::Ctl(cmd) => load().and_then(|c| cli::ctl(&c, cmd)),
        Cmd::Fwd(cmd) => load().and_then(|c| cli::fwd(&c, cmd)),
        Cmd::Store(cmd) => load().and_then(|c| cli::store(&c, cmd)),
        Cmd::Check => load().and_then(|c| service::check(&c)),
        Cmd::Call {
            port,
            mycall,
            remote,
            via,
        } => radio::client::run(&port, &mycall, &remote, &via),
        Cmd::PasswordHelper => qtc::password_helper(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output has gone (`qtc fwd queue | head -1`): nothing to report.
        Err(e) if qtc::closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qtc: {e:#}");
            ExitCode::FAILURE
        }
    }
}
