//! The sysop's command line: users, messages, the example config. These open the store
//! directly; SQLite's WAL lets them run beside the daemon.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::{bail, Context};
use clap::Subcommand;
use qtc_callsign::Callsign;
use qtc_mail::text::{visible, visible_bytes, visible_line};
use qtc_mail::{ListFilter, MessageStore, MsgStatus, MsgType, Utc};
use qtc_store::Store;

use crate::config::{Loaded, EXAMPLE};
use crate::out::plural;

/// `qtc user ...`: the sysop manages users.
#[derive(Subcommand)]
pub enum UserCmd {
    /// Add a user. Without --password the password is read from standard input.
    ///
    /// Example: qtc user add N0ABC --sysop   (then type the password)
    Add {
        /// Callsign (no SSID).
        call: String,
        /// The password (visible in the process list: prefer standard input).
        #[arg(long)]
        password: Option<String>,
        /// The user may do everything.
        #[arg(long)]
        sysop: bool,
        /// The user is a BBS (gets the SID and may forward to us).
        #[arg(long)]
        bbs: bool,
    },
    /// List users.
    List,
    /// Delete a user (their mail stays).
    Del {
        /// Callsign.
        call: String,
    },
    /// Change a user's flags.
    ///
    /// Example: qtc user set N0BBB --bbs true --sysop false
    Set {
        /// Callsign.
        call: String,
        /// Sysop rights: true or false.
        #[arg(long)]
        sysop: Option<bool>,
        /// Is a BBS (gets the SID, may forward): true or false.
        #[arg(long)]
        bbs: Option<bool>,
    },
    /// Set a user's password, read from standard input.
    Passwd {
        /// Callsign.
        call: String,
    },
}

/// `qtc msg ...`: the sysop lists, reads and kills messages.
#[derive(Subcommand)]
pub enum MsgCmd {
    /// List messages, newest first (killed ones too, unless --status says otherwise).
    ///
    /// Example: qtc msg list --type B --at WW --since 2d --limit 20
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Only this type: P (personal), B (bulletin) or T (NTS traffic).
        #[arg(long = "type", value_name = "P|B|T", value_parser = parse_type)]
        kind: Option<MsgType>,
        /// Only this status: N new, Y read, F forwarded, K killed, H held...
        #[arg(long, value_name = "LETTER", value_parser = parse_status)]
        status: Option<MsgStatus>,
        /// Only from this callsign.
        #[arg(long, value_name = "CALL")]
        from: Option<String>,
        /// Only to this callsign or bulletin category.
        #[arg(long, value_name = "CALL")]
        to: Option<String>,
        /// Only `@` this BBS or area (its first element or the whole address).
        #[arg(long, value_name = "AT")]
        at: Option<String>,
        /// Only messages stored within this time: 30m, 12h, 2d.
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        since: Option<std::time::Duration>,
        /// At most this many (the newest).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Show one message: headers, R: lines and body.
    Show {
        /// Message number.
        number: u64,
    },
    /// Kill messages: numbers and ranges.
    ///
    /// Example: qtc msg kill 12 15-20
    Kill {
        /// Message numbers (`12`) or ranges (`15-20`).
        #[arg(required = true, value_name = "N|FROM-TO", value_parser = parse_numbers)]
        numbers: Vec<(u64, u64)>,
    },
    /// Hold a message for the sysop: no user sees it and it is not forwarded until released.
    ///
    /// Example: qtc msg hold 12
    Hold {
        /// Message number.
        number: u64,
    },
    /// Release a held message: it becomes new and is queued for forwarding.
    Release {
        /// Message number.
        number: u64,
    },
    /// Store messages from a file of send lines (`SB ALL @ WW < N0ABC $BID`, subject, body,
    /// `/EX`), queued for forwarding like messages written here; "-" reads standard input.
    ///
    /// Example: qtc msg import bulletins.txt
    Import {
        /// The file.
        file: std::path::PathBuf,
    },
}

/// `qtc init [FILE]`: the example on standard output; to a file, the example with `[tls]`
/// naming a self-signed certificate made beside it, so that mail clients get TLS out of the
/// box.
pub fn init(file: Option<&Path>) -> anyhow::Result<()> {
    let Some(p) = file else {
        std::io::stdout().write_all(EXAMPLE.as_bytes())?;
        return Ok(());
    };
    let (cert, key) = certificate_names(p);
    for f in [
        p.to_path_buf(),
        p.with_file_name(&cert),
        p.with_file_name(&key),
    ] {
        if f.exists() {
            bail!("{} exists already; not overwritten", f.display());
        }
    }
    let made = make_certificate(&p.with_file_name(&cert), &p.with_file_name(&key), &[])?;
    // Partner passwords go in here: the owner's alone, whatever the umask.
    let mut f = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(p)
    }
    .with_context(|| format!("cannot write {}", p.display()))?;
    f.write_all(crate::config::example_with_tls(&cert, &key).as_bytes())
        .with_context(|| format!("cannot write {}", p.display()))?;
    outln!("wrote {}", p.display());
    made.report()
}

/// The certificate and key `qtc init` makes beside the config `p`, named after it
/// (`qtc.toml`: `qtc-cert.pem`, `qtc-key.pem`), so that configs side by side keep theirs.
fn certificate_names(p: &Path) -> (String, String) {
    let stem = p.file_stem().map_or("qtc".into(), |s| s.to_string_lossy());
    (format!("{stem}-cert.pem"), format!("{stem}-key.pem"))
}

/// A self-signed certificate made for this host and `names`, and what to tell the sysop.
struct MadeCertificate {
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
    made: crate::tls::Made,
}

impl MadeCertificate {
    fn report(&self) -> anyhow::Result<()> {
        outln!(
            "wrote {} (for {}) and its key {} (0600)",
            self.cert.display(),
            self.made.names.join(", "),
            self.key.display()
        );
        outln!(
            "{}",
            crate::tls::certificate_line(&self.cert, &self.made.fingerprint)
        );
        Ok(())
    }
}

fn make_certificate(cert: &Path, key: &Path, names: &[String]) -> anyhow::Result<MadeCertificate> {
    let names = crate::tls::host_names(names);
    let made = crate::tls::self_signed(cert, key, &names, crate::clock::unix_now())?;
    Ok(MadeCertificate {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        made,
    })
}

/// `qtc cert [--name NAME]...`: a self-signed certificate and key where `[tls]` names them,
/// for this host, the mail domain and `names`. Neither file may exist.
pub fn cert(c: &Loaded, names: &[String]) -> anyhow::Result<()> {
    let Some((cert, key)) = &c.tls else {
        bail!(
            "{} has no [tls]: add `[tls]` with `cert = \"qtc-cert.pem\"` and \
             `key = \"qtc-key.pem\"` (beside it), then run this again",
            c.source
        );
    };
    let mut names = names.to_vec();
    // The domain is the callsign when none is set: not a host name.
    if c.mail.domain.contains('.') {
        names.push(c.mail.domain.clone());
    }
    make_certificate(cert, key, &names)?.report()
}

/// `qtc store ...`; one that rewrites the file takes the data directory's lock, so it refuses
/// to start beside a running daemon (also while it opens or closes the store), and a daemon
/// cannot start while it runs.
pub fn store(c: &Loaded, cmd: crate::housekeeping::StoreCmd) -> anyhow::Result<()> {
    let _lock = match cmd.rewrites() {
        None => None,
        Some(name) => match crate::dir_lock::take(&c.store.dir)? {
            Some(lock) => Some(lock),
            None => anyhow::bail!(
                "the qtc daemon, or another `qtc store` command, is using this store ({} is \
                 locked): stop it first, then run `qtc store {name}` again (e.g. systemctl stop \
                 qtc; qtc -c {} store {name}; systemctl start qtc)",
                c.store.dir.display(),
                c.source
            ),
        },
    };
    crate::housekeeping::store_cmd(c, cmd)
}

fn open(c: &Loaded) -> anyhow::Result<Store> {
    let mut store = Store::open(&c.store.dir, c.store.durability)
        .map_err(|e| anyhow::anyhow!("{e} (data directory from [store] dir in {})", c.source))?;
    // 0: no limit here; the daemon works out its quota from the free disk space.
    store.set_max_size(c.store.max_bytes.map_or(0, std::num::NonZeroU64::get))?;
    // Who this BBS is, for what stores, releases or routes a message (R: lines, BIDs).
    store.set_station(c.station.clone());
    Ok(store)
}

/// Opens the store for a command that changes it, and says on standard error which store that
/// is and which configuration chose it: a change to the wrong store is seen at once.
fn open_to_write(c: &Loaded) -> anyhow::Result<Store> {
    let store = open(c)?;
    eprintln!(
        "qtc: store {} (config: {})",
        store.path().display(),
        c.source
    );
    Ok(store)
}

fn read_password(call: Callsign) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    let pw = if stdin.is_terminal() {
        let a = rpassword::prompt_password(format!("Password for {call}: "))?;
        let b = rpassword::prompt_password("Again: ")?;
        if a != b {
            bail!("the passwords differ");
        }
        a
    } else {
        let mut line = String::new();
        stdin.lock().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_string()
    };
    if pw.is_empty() {
        bail!("empty password");
    }
    Ok(pw)
}

/// A user's account as typed on the command line: the call without its SSID.
fn user_call(call: &str) -> anyhow::Result<Callsign> {
    let c = Callsign::parse_station(call).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(c.without_ssid())
}

/// `qtc user ...`.
pub fn user(c: &Loaded, cmd: UserCmd) -> anyhow::Result<()> {
    match cmd {
        UserCmd::Add {
            call,
            password,
            sysop,
            bbs,
        } => {
            let call = user_call(&call)?;
            let pw = match password {
                Some(p) => p,
                None => read_password(call)?,
            };
            open_to_write(c)?.add_user(call, Some(&pw), sysop, bbs)?;
            outln!(
                "added {call}{}{}",
                if sysop { " (sysop)" } else { "" },
                if bbs { " (bbs)" } else { "" }
            );
        }
        UserCmd::List => {
            outln!(
                "{:<8} {:<5} {:<5} {:<12} HOME BBS",
                "CALL",
                "SYSOP",
                "BBS",
                "NAME"
            );
            for u in open(c)?.users()? {
                outln!(
                    "{:<8} {:<5} {:<5} {:<12} {}",
                    u.call,
                    if u.sysop { "yes" } else { "" },
                    if u.bbs { "yes" } else { "" },
                    visible_line(&u.name),
                    visible_line(&u.home_bbs)
                );
            }
        }
        UserCmd::Set { call, sysop, bbs } => {
            let call = user_call(&call)?;
            if sysop.is_none() && bbs.is_none() {
                bail!("give --sysop true|false and/or --bbs true|false");
            }
            open_to_write(c)?.set_flags(call, sysop, bbs)?;
            outln!("{call} updated");
        }
        UserCmd::Del { call } => {
            let call = user_call(&call)?;
            open_to_write(c)?.delete_user(call)?;
            outln!("deleted {call}");
        }
        UserCmd::Passwd { call } => {
            let call = user_call(&call)?;
            let mut store = open_to_write(c)?;
            if store.user(call)?.is_none() {
                bail!("no user {call}");
            }
            let pw = read_password(call)?;
            store.set_password(call, &pw)?;
            outln!("password of {call} changed");
        }
    }
    Ok(())
}

/// `qtc msg ...`.
pub fn msg(c: &Loaded, cmd: MsgCmd) -> anyhow::Result<()> {
    let changes = matches!(
        cmd,
        MsgCmd::Kill { .. } | MsgCmd::Hold { .. } | MsgCmd::Release { .. } | MsgCmd::Import { .. }
    );
    let mut store = if changes { open_to_write(c)? } else { open(c)? };
    match cmd {
        MsgCmd::List {
            json,
            kind,
            status,
            from,
            to,
            at,
            since,
            limit,
        } => {
            let upper = |s: Option<String>| s.map(|s| s.to_ascii_uppercase());
            let filter = ListFilter {
                kind,
                status,
                from: upper(from),
                to: upper(to),
                at: upper(at),
                include_killed: status.is_none(),
                ..Default::default()
            };
            let oldest = since.map(|age| crate::clock::unix_now() - age.as_secs() as i64);
            msg_list(&mut store, &filter, oldest, limit, json)?;
        }
        MsgCmd::Show { number } => msg_show(&mut store, number)?,
        MsgCmd::Import { file } => msg_import(c, &mut store, &file)?,
        MsgCmd::Hold { number } => {
            if !store.hold(number)? {
                bail!("no message #{number} to hold (none, killed, or held already)");
            }
            outln!("message #{number} held");
        }
        MsgCmd::Release { number } => {
            if !store.release(number, crate::clock::unix_now())? {
                bail!("no held message #{number}");
            }
            outln!("message #{number} released");
        }
        MsgCmd::Kill { numbers } => msg_kill(&mut store, numbers)?,
    }
    Ok(())
}

/// `qtc msg list`: the headers matching `filter`, stored since `oldest`, at most `limit`.
fn msg_list(
    store: &mut Store,
    filter: &ListFilter,
    oldest: Option<i64>,
    limit: Option<usize>,
    json: bool,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let listed = store.list(filter)?;
    let wanted = listed
        .into_iter()
        .filter(|h| oldest.is_none_or(|t| h.created >= t))
        .take(limit.unwrap_or(usize::MAX));
    for h in wanted {
        // As users see it: RFC 2047 words (Winlink subjects) decoded.
        let subject = qtc_mail::charset::decode_header(&h.subject);
        if json {
            let v = serde_json::json!({
                "number": h.number,
                "type": h.kind.letter().to_string(),
                "status": h.status.letter().to_string(),
                "to": h.to,
                "at": h.at,
                "from": h.from,
                "bid": h.bid,
                "subject": subject,
                "size": h.size,
                "date": Utc::from_unix(h.created).rfc3339(),
            });
            writeln!(out, "{v}")?;
        } else {
            writeln!(
                out,
                "{:<6} {}{} {:>7} {:<6} {:<12} {:<6} {:<12} {} {}",
                h.number,
                h.kind.letter(),
                h.status.letter(),
                h.size,
                visible_line(&h.to),
                visible_line(&h.at),
                visible_line(&h.from),
                visible_line(&h.bid),
                Utc::from_unix(h.created).rfc3339(),
                visible_line(&subject)
            )?;
        }
    }
    Ok(())
}

/// `qtc msg show N`.
fn msg_show(store: &mut Store, number: u64) -> anyhow::Result<()> {
    let Some(m) = store.message(number)? else {
        bail!("no message #{number}");
    };
    let h = &m.header;
    let mut out = std::io::stdout().lock();
    writeln!(out, "Number:  {}", h.number)?;
    writeln!(out, "Type:    {}  Status: {}", h.kind, h.status)?;
    writeln!(
        out,
        "To:      {}{}{}",
        visible_line(&h.to),
        if h.at.is_empty() { "" } else { "@" },
        visible_line(&h.at)
    )?;
    // As `R` shows them: further `To:`s are addressees as much as the first, `Cc:`s copies.
    for (label, calls) in [("To:", m.further_to().join(" ")), ("Cc:", m.cc.join(" "))] {
        if !calls.is_empty() {
            writeln!(out, "{label:<8} {}", visible_line(&calls))?;
        }
    }
    writeln!(out, "From:    {}", visible_line(&h.from))?;
    writeln!(out, "BID:     {}", visible_line(&h.bid))?;
    writeln!(out, "Date:    {}", Utc::from_unix(h.created).rfc3339())?;
    writeln!(out, "Size:    {}", h.size)?;
    // Winlink subjects may be RFC 2047 encoded: shown decoded, as the BBS shows them.
    let subject = qtc_mail::charset::decode_header(&h.subject);
    writeln!(out, "Subject: {}\n", visible_line(&subject))?;
    // On a terminal the text is shown as `R` shows it (in its declared charset, escape
    // sequences shown, not acted on); piped (to a file, a script) it goes out byte for byte.
    if out.is_terminal() {
        out.write_all(&visible_bytes(&m.rlines))?;
        if m.charset.is_empty() {
            out.write_all(&visible_bytes(&m.body))?;
        } else {
            out.write_all(visible(&m.body_text()).as_bytes())?;
        }
    } else {
        out.write_all(&m.rlines)?;
        out.write_all(&m.body)?;
    }
    Ok(())
}

/// `qtc msg import FILE`.
fn msg_import(c: &Loaded, store: &mut Store, file: &Path) -> anyhow::Result<()> {
    let data = if file.as_os_str() == "-" {
        let mut d = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut d)?;
        d
    } else {
        std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    let msgs = crate::import::parse(&data, c.station.call, c.limits.max_message)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let results = store.insert_many(&msgs, crate::clock::unix_now())?;
    let mut stored = 0;
    for (m, r) in msgs.iter().zip(&results) {
        match r {
            Ok(_) => stored += 1,
            Err(e) => eprintln!(
                "skipped {} to {}: {e}",
                m.bid.as_deref().unwrap_or("?"),
                m.to
            ),
        }
    }
    outln!("imported {stored} of {} messages", msgs.len());
    Ok(())
}

/// `qtc msg kill N FROM-TO...`.
fn msg_kill(store: &mut Store, numbers: Vec<(u64, u64)>) -> anyhow::Result<()> {
    let mut killed = 0;
    let mut missing = Vec::new();
    for (first, last) in numbers {
        let mut any = false;
        for number in first..=last {
            if store.set_status(number, MsgStatus::Killed)? {
                outln!("message #{number} killed");
                killed += 1;
                any = true;
            }
        }
        if !any {
            missing.push(if first == last {
                format!("#{first}")
            } else {
                format!("#{first}-{last}")
            });
        }
    }
    if !missing.is_empty() {
        bail!(
            "no message {} ({} killed)",
            missing.join(", "),
            plural(killed, "message")
        );
    }
    if killed > 1 {
        outln!("{} killed", plural(killed, "message"));
    }
    Ok(())
}

/// Longest range `qtc msg kill` takes at once: a typo such as `1-99999999` is refused, not run.
const MAX_KILL_RANGE: u64 = 100_000;

fn parse_numbers(text: &str) -> Result<(u64, u64), String> {
    let number = |t: &str| {
        t.trim()
            .trim_start_matches('#')
            .parse::<u64>()
            .map_err(|_| {
                format!("expected a message number or a range such as 15-20, got {text:?}")
            })
    };
    let (first, last) = match text.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(text)?, number(text)?),
    };
    if first > last {
        return Err(format!("the range {text} runs backwards"));
    }
    if last - first >= MAX_KILL_RANGE {
        return Err(format!("the range {text} is longer than {MAX_KILL_RANGE}"));
    }
    Ok((first, last))
}

fn parse_type(text: &str) -> Result<MsgType, String> {
    let mut chars = text.chars();
    match (chars.next().and_then(MsgType::from_letter), chars.next()) {
        (Some(t), None) => Ok(t),
        _ => Err(format!("expected P, B or T, got {text:?}")),
    }
}

fn parse_status(text: &str) -> Result<MsgStatus, String> {
    let mut chars = text.chars();
    match (chars.next().and_then(MsgStatus::from_letter), chars.next()) {
        (Some(s), None) => Ok(s),
        _ => Err(format!(
            "expected a status letter (N, Y, F, K, H...), got {text:?}"
        )),
    }
}

fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    crate::config::parse_duration(text)
        .ok_or_else(|| format!("expected an age such as 30m, 12h or 2d, got {text:?}"))
}

/// `qtc ctl ...`: commands sent to the running daemon over its control socket.
#[derive(Subcommand)]
pub enum CtlCmd {
    /// Call a partner now and forward; waits until the session ends and prints its result.
    ///
    /// Example: qtc ctl forward N0BBB
    Forward {
        /// The partner's callsign.
        call: String,
    },
    /// The station's health: forwarding sessions, each partner's queue, last result and next
    /// call, radio ports (up or down, retry, frames, heard), telnet users, the store's size.
    ///
    /// Example: qtc ctl status --json | jq '.ports[] | {name, up}'
    Status {
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Stations heard on each radio port, most recent first.
    ///
    /// Example: qtc ctl heard
    Heard,
    /// The NET/ROM node: nodes known with their routes, neighbours, circuits open.
    ///
    /// Example: qtc ctl nodes
    Nodes {
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The IP router: its ARP table (learned and static), routes, counters since start.
    ///
    /// Example: qtc ctl ip
    Ip {
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Run housekeeping now (expire old mail, forget old BIDs) and print what it did.
    ///
    /// Example: qtc ctl housekeep
    Housekeep,
}

/// `qtc fwd ...`: the forwarding queues.
#[derive(Subcommand)]
pub enum FwdCmd {
    /// What waits to be forwarded, for one partner or all.
    ///
    /// Example: qtc fwd queue N0BBB
    Queue {
        /// Only this partner.
        call: Option<String>,
    },
}

/// `qtc ctl ...`.
pub fn ctl(c: &Loaded, cmd: CtlCmd) -> anyhow::Result<()> {
    let request = match cmd {
        CtlCmd::Forward { call } => format!("forward {}", user_call(&call)?),
        CtlCmd::Status { json: false } => "status".to_string(),
        CtlCmd::Status { json: true } => "status json".to_string(),
        CtlCmd::Heard => "heard".to_string(),
        CtlCmd::Nodes { json: false } => "nodes".to_string(),
        CtlCmd::Nodes { json: true } => "nodes json".to_string(),
        CtlCmd::Ip { json: false } => "ip".to_string(),
        CtlCmd::Ip { json: true } => "ip json".to_string(),
        CtlCmd::Housekeep => "housekeep".to_string(),
    };
    let answer = crate::ctl::client(&c.store.dir, &request)?;
    std::io::stdout().write_all(answer.as_bytes())?;
    if answer.starts_with("error:") {
        bail!("the daemon reported an error");
    }
    Ok(())
}

/// `qtc fwd ...`.
pub fn fwd(c: &Loaded, cmd: FwdCmd) -> anyhow::Result<()> {
    let FwdCmd::Queue { call } = cmd;
    let call = call.as_deref().map(user_call).transpose()?;
    let queue = open(c)?.queue(call.map(|c| c.to_string()).as_deref())?;
    outln!(
        "{:<8} {:>6} {:<12} {:<6} AT",
        "PARTNER",
        "MSG#",
        "BID",
        "TO"
    );
    for q in &queue {
        outln!(
            "{:<8} {:>6} {:<12} {:<6} {}",
            q.partner,
            q.number,
            q.bid,
            q.to,
            q.at
        );
    }
    outln!("{} queued", queue.len());
    Ok(())
}
