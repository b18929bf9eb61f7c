//! `qtc run`: opens the store, binds the listeners, serves until SIGTERM or SIGINT.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

use crate::admission::{Admission, Sizes};
use crate::bbs_port::{self, PortKind, Shared};
use crate::config::Loaded;
use crate::connection::{Connection, Lobby};
use crate::ctl;
use crate::forward::{schedule, ForwardHandle, Forwarder};
use crate::radio::Radios;
use crate::store_thread::StoreHandle;
use crate::throttle::Throttle;
use tracing::Instrument;

/// How long sessions get to say goodbye at shutdown.
const GRACE: Duration = Duration::from_millis(1500);

fn init_logging(level: &str, json: bool) {
    let filter = crate::config::log_filter_env_or(level);
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // Lines alike are limited, whichever format (crate::log_limit).
    let format = tracing_subscriber::fmt::format();
    if json {
        fmt.json()
            .event_format(crate::log_limit::Limited::new(format.json()))
            .init();
    } else {
        fmt.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .event_format(crate::log_limit::Limited::new(format))
            .init();
    }
}

/// Read-only store connections for the users' queries: two keep one long query from holding
/// up every other user, on the two cores of a small node.
const READERS: usize = 2;

/// Opens the store with its station and quota; returns it and where accounts logged in from
/// (kept across restarts: the lockout's and the login places' exemptions).
fn open_store(c: &Loaded) -> anyhow::Result<(qtc_store::Store, Vec<crate::throttle::PlaceRow>)> {
    let mut store = qtc_store::Store::open(&c.store.dir, c.store.durability)
        .map_err(|e| anyhow::anyhow!("{e} (data directory from [store] dir in {})", c.source))?;
    store.set_station(c.station.clone());
    // Commits never copy the WAL into the database themselves: a thread of its own does.
    store
        .checkpoint_apart()
        .map_err(|e| anyhow::anyhow!("{e} (data directory from [store] dir in {})", c.source))?;
    let quota = match c.store.max_bytes {
        None => qtc_store::Quota::FollowsDisk,
        Some(bytes) => qtc_store::Quota::Bytes(bytes.get()),
    };
    store
        .set_quota(quota)
        .map_err(|e| anyhow::anyhow!("{e} ([store] max_mb in {})", c.source))?;
    if quota == qtc_store::Quota::FollowsDisk {
        // Measured again as the store grows and whenever space may have been freed.
        crate::room::refresh(&mut store);
        tracing::info!(
            mib = store.max_size().unwrap_or(0) / (1024 * 1024),
            "store quota from the free disk space"
        );
    }
    let since = crate::clock::unix_now() - crate::throttle::TRUSTED_FOR.as_secs() as i64;
    let places = store
        .login_places(since, crate::throttle::MAX_ENTRIES)
        .map_err(|e| anyhow::anyhow!("{e} (reading where users logged in from)"))?;
    Ok((store, places))
}

/// What `run` opens before the event loop: the store's thread and the pools beside it.
struct Opened {
    store: StoreHandle,
    /// Where accounts logged in from (the lockout's and the login places' exemptions).
    known: Arc<crate::throttle::KnownPlaces>,
    readers: crate::read_pool::ReadPool,
    packer: crate::cpu_pool::CpuPool,
    passwords: crate::passwords::Passwords,
    /// The mail store's UIDVALIDITY (IMAP).
    uid_validity: u32,
    /// The database file, for the start-up report.
    db_path: std::path::PathBuf,
}

/// The sockets, bound before anything is announced.
struct Listeners {
    bbs: Vec<(TcpListener, PortKind, Option<tokio_rustls::TlsAcceptor>)>,
    mail: Vec<(TcpListener, crate::mail::Listener)>,
    ctl: tokio::net::UnixListener,
    web: Option<TcpListener>,
    /// Our certificate, for the TLS listeners and the mail ports' STARTTLS.
    tls: Option<crate::tls::Ours>,
    /// `[ip]`'s TUN interface, up with its address before the listeners bind (they may listen
    /// on it).
    tun: Option<crate::phy::tun::Tun>,
}

/// Runs the daemon until a stop signal.
pub fn run(c: Loaded) -> anyhow::Result<()> {
    init_logging(&c.log.filter, c.log.json);
    raise_fd_limit();
    // Held from before the store opens until after it closes (crate::dir_lock).
    let Some(_lock) = crate::dir_lock::take(&c.store.dir)? else {
        anyhow::bail!(
            "another qtc is using this data directory ({} is locked: a running daemon, or \
             `qtc store pack`, `compact` or `recount`): stop it first",
            c.store.dir.display()
        );
    };
    let (opened, store_thread) = open(&c)?;
    // One thread runs every socket and timer; SQLite has its own. A BBS is I/O-bound, and one
    // event thread means no cross-thread wake-ups (measured: futex calls per forwarded message
    // fell from 3.0 to 1.2).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(serve(&c, opened));
    runtime.shutdown_timeout(Duration::from_millis(200));
    let _ = std::fs::remove_file(ctl::path(&c.store.dir));
    // Every StoreHandle is gone with the runtime's tasks, so the store thread ends after its
    // last job.
    let _ = store_thread.join();
    tracing::info!("stopped");
    result
}

/// Opens the store and starts its thread, the readers, the packing thread and the password
/// checkers.
fn open(c: &Loaded) -> anyhow::Result<(Opened, std::thread::JoinHandle<()>)> {
    let (mut store, places) = open_store(c)?;
    let db_path = store.path().to_path_buf();
    let uid_validity = store
        .uid_validity()
        .map_err(|e| anyhow::anyhow!("{e} (data directory from [store] dir in {})", c.source))?;
    let (store, store_thread) =
        StoreHandle::spawn(store).context("cannot start the store thread")?;
    let (v4, v6) = c.telnet.prefixes;
    let known = Arc::new(crate::throttle::KnownPlaces::new(
        crate::prefix::Grouping { v4, v6 },
        &places,
        crate::clock::unix_now(),
        Some(store.clone()),
    ));
    // The interpreter's queries read beside the writer (WAL), on threads of their own.
    let readers = crate::read_pool::ReadPool::spawn(&c.store.dir, READERS)
        .context("cannot open the store's readers")?;
    // Compressed forms are made on a thread of their own (once per message and form, when a
    // partner's session first sends it): the event and store threads never compress.
    let packer = crate::cpu_pool::CpuPool::new("qtc-pack", 1, crate::cpu_pool::Priority::Normal)
        .context("cannot start the packing thread")?;
    let passwords = crate::passwords::Passwords::new(c.limits.password_checks, readers.clone())
        .context("cannot start the password checkers")?;
    let opened = Opened {
        store,
        known,
        readers,
        packer,
        passwords,
        uid_validity,
        db_path,
    };
    Ok((opened, store_thread))
}

/// The event loop: binds and announces every listener, starts every service, and stops them
/// at a stop signal.
async fn serve(c: &Loaded, o: Opened) -> anyhow::Result<()> {
    // Catch the stop signals before announcing anything, so none can arrive unhandled.
    let stop = stop_signals()?;
    let hup = crate::service::catch_hup()?;
    let tls = crate::service::our_certificate(c)?;
    let acceptor = tls.as_ref().map(|t| t.acceptor.clone());
    let tun = open_tun(c)?;
    let listeners = Listeners {
        tun,
        bbs: bind_bbs_ports(c, &acceptor).await?,
        mail: bind_mail(c).await?,
        ctl: ctl::bind(&c.store.dir)?,
        web: crate::web::bind(c).await?,
        tls,
    };
    announce(c, &listeners, &o.db_path)?;
    tracing::info!("ready");
    let (stop_tx, stop_rx) = watch::channel(false);
    let tasks = TaskTracker::new();
    let metrics = Arc::new(crate::metrics::Metrics::default());
    let forwarder = Arc::new(Forwarder::new(
        o.store.clone(),
        c.station.call,
        c.partners.clone(),
        fbb_config(c),
        o.packer.clone(),
        metrics.clone(),
    ));
    let shared = shared(c, &o, forwarder, metrics);
    start(c, &o, listeners, &shared, hup, &stop_rx, &tasks);
    crate::service::notify("READY=1");
    stop.await;
    tracing::info!("stopping");
    crate::service::notify("STOPPING=1");
    let _ = stop_tx.send(true);
    tasks.close();
    if tokio::time::timeout(GRACE, tasks.wait()).await.is_err() {
        tracing::warn!("some sessions did not finish in time; closing them");
    }
    Ok(())
}

/// Creates `[ip]`'s TUN interface and gives it the station's address.
fn open_tun(c: &Loaded) -> anyhow::Result<Option<crate::phy::tun::Tun>> {
    let Some(ip) = &c.ip else {
        return Ok(None);
    };
    let r = &ip.router;
    let tun =
        crate::phy::tun::open(&ip.tun, r.address, r.network.len(), ip.mtu).with_context(|| {
            format!(
                "cannot create the TUN interface {} ([ip] tun in {}): qtc needs root or \
                 CAP_NET_ADMIN for it (docs/radio.md, \"IP over AX.25\")",
                ip.tun, c.source
            )
        })?;
    for route in &r.routes {
        crate::phy::tun::add_route(&ip.tun, &route.to.to_string()).with_context(|| {
            format!(
                "cannot route [[ip.route]] {} through {} ({})",
                route.to, ip.tun, c.source
            )
        })?;
    }
    Ok(Some(tun))
}

/// Binds the telnet and forwarding listeners, plain and TLS (`acceptor`).
async fn bind_bbs_ports(
    c: &Loaded,
    acceptor: &Option<tokio_rustls::TlsAcceptor>,
) -> anyhow::Result<Vec<(TcpListener, PortKind, Option<tokio_rustls::TlsAcceptor>)>> {
    let mut listeners = Vec::new();
    for (addrs, kind, tls, key) in [
        (&c.telnet.listen, PortKind::Telnet, None, "[telnet] listen"),
        (
            &c.forward.listen,
            PortKind::Forward,
            None,
            "[forward] listen",
        ),
        (
            &c.telnet.tls_listen,
            PortKind::Telnet,
            acceptor.clone(),
            "[telnet] tls_listen",
        ),
        (
            &c.forward.tls_listen,
            PortKind::Forward,
            acceptor.clone(),
            "[forward] tls_listen",
        ),
    ] {
        for addr in addrs {
            let l = TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} ({key} in {})", c.source))?;
            listeners.push((l, kind, tls.clone()));
        }
    }
    Ok(listeners)
}

/// The start-up report: what this BBS listens on, whom it forwards with, where its data is.
fn announce(c: &Loaded, l: &Listeners, db_path: &std::path::Path) -> anyhow::Result<()> {
    outln!(
        "qtc {}: {} BBS ({}), config: {}",
        env!("CARGO_PKG_VERSION"),
        c.station.call,
        c.station.haddr,
        c.source
    );
    for (l, kind, tls) in &l.bbs {
        let what = match (kind, tls.is_some()) {
            (PortKind::Telnet, false) => "telnet",
            (PortKind::Forward, false) => "forward",
            (PortKind::Telnet, true) => "telnet-tls",
            (PortKind::Forward, true) => "forward-tls",
        };
        outln!("{what}: listening on {}", l.local_addr()?);
    }
    for (l, kind) in &l.mail {
        outln!("{}: listening on {}", kind.name(), l.local_addr()?);
    }
    if let (Some((cert, _)), Some(ours)) = (&c.tls, &l.tls) {
        outln!("{}", crate::tls::certificate_line(cert, &ours.fingerprint));
    }
    for p in &c.partners {
        outln!("partner: {}", p.describe());
    }
    for w in &c.warnings {
        outln!("warning: {w}");
    }
    for line in crate::radio::report_lines(c) {
        outln!("{line}");
    }
    outln!("control: {}", ctl::path(&c.store.dir).display());
    if let Some(l) = &l.web {
        outln!("web: listening on {}", l.local_addr()?);
    }
    outln!("data: {}", db_path.display());
    Ok(())
}

/// The BBS interpreter's settings.
fn bbs_config(c: &Loaded) -> qtc_bbs::Config {
    let mut bbs = qtc_bbs::Config::new(c.station.call);
    bbs.haddr = c.station.haddr.clone();
    bbs.max_line = c.limits.max_line;
    bbs.max_message = c.limits.max_message;
    bbs.max_login_attempts = c.limits.login_attempts.get();
    bbs.info = c.station.info.replace('\n', "\r");
    bbs.version = env!("CARGO_PKG_VERSION").to_string();
    bbs.page_len_telnet = c.telnet.page_lines;
    bbs.page_len_radio = c.ax25.page_lines;
    bbs.raw_bodies = c.station.raw_bodies;
    bbs
}

/// The forwarding sessions' settings.
fn fbb_config(c: &Loaded) -> qtc_fbb::Config {
    let mut fbb = qtc_fbb::Config::new(c.station.call);
    fbb.software = "QTC".into();
    fbb.version = env!("CARGO_PKG_VERSION").into();
    fbb.idle_timeout = c.forward.idle;
    fbb.max_message_size = c.limits.max_message;
    fbb.max_proposals = c.forward.max_proposals;
    fbb.block_budget = c.forward.block_bytes;
    fbb
}

/// What the connections of every door share: the places, the login throttle, the timers.
fn lobby(c: &Loaded, o: &Opened, metrics: &Arc<crate::metrics::Metrics>) -> Lobby {
    Lobby {
        throttle: Arc::new(Throttle::new(c.limits.lockout_after, o.known.clone())),
        admission: Arc::new(Admission::new(
            Sizes {
                users: c.telnet.max_sessions.get(),
                per_user: c.telnet.max_sessions_per_user.get(),
                partners: c.telnet.max_partner_sessions.get(),
                logins: c.telnet.max_logins.get(),
                per_address: c.telnet.max_per_address.get(),
            },
            metrics.clone(),
            o.known.clone(),
        )),
        metrics: metrics.clone(),
        passwords: o.passwords.clone(),
        idle_timeout: c.limits.idle,
        login_timeout: c.limits.login_timeout,
        login_attempts: c.limits.login_attempts.get(),
    }
}

/// What every BBS session shares, on telnet, forwarding ports and the air.
fn shared(
    c: &Loaded,
    o: &Opened,
    forwarder: Arc<Forwarder>,
    metrics: Arc<crate::metrics::Metrics>,
) -> Arc<Shared> {
    Arc::new(Shared {
        bbs: Arc::new(bbs_config(c)),
        store: o.store.clone(),
        readers: o.readers.clone(),
        lobby: Arc::new(lobby(c, o, &metrics)),
        user_limits: Arc::new(crate::user_limits::UserLimits::new(
            c.limits.messages_per_hour,
            c.limits.bytes_per_day,
        )),
        forwarder,
        passwords: o.passwords.clone(),
        online: Arc::default(),
        metrics,
    })
}

/// Starts a task per listener, radio port and scheduled partner, housekeeping, the control
/// socket, the web and the service's signals; each stops when `stop` turns true.
fn start(
    c: &Loaded,
    o: &Opened,
    listeners: Listeners,
    shared: &Arc<Shared>,
    hup: tokio::signal::unix::Signal,
    stop: &watch::Receiver<bool>,
    tasks: &TaskTracker,
) {
    for (l, kind, tls) in listeners.bbs {
        let serve = bbs_port::serve(l, kind, tls, shared.clone(), stop.clone(), tasks.clone());
        tasks.spawn(serve);
    }
    let radios = start_radios(c, shared, listeners.tun, stop, tasks);
    let acceptor = listeners.tls.map(|t| t.acceptor);
    let mail = mail_shared(c, shared, acceptor, o.uid_validity);
    for (l, kind) in listeners.mail {
        let serve = crate::mail::serve(l, kind, mail.clone(), stop.clone(), tasks.clone());
        tasks.spawn(serve);
    }
    let housekeeper = Arc::new(crate::housekeeping::Housekeeper::new(
        o.store.clone(),
        c.housekeeping,
        shared.metrics.clone(),
    ));
    tasks.spawn(housekeeper.clone().schedule(stop.clone()));
    let schedules = Arc::new(schedule::Schedules::new(
        shared.forwarder.clone(),
        radios.clone(),
        stop.clone(),
        tasks.clone(),
    ));
    schedules.apply(&c.partners);
    let reloader = Arc::new(crate::reload::Reloader::new(
        c,
        o.store.clone(),
        housekeeper.clone(),
        schedules,
    ));
    crate::service::start(hup, reloader.clone(), stop, tasks);
    // What the sysop's tools (ctl, web) answer from.
    let sources = crate::health::Sources {
        forward: ForwardHandle::new(shared.forwarder.clone(), radios.clone(), stop.clone()),
        store: o.store.clone(),
        radios,
        metrics: shared.metrics.clone(),
        online: shared.online.clone(),
    };
    tasks.spawn(ctl::serve(
        listeners.ctl,
        sources.clone(),
        stop.clone(),
        tasks.clone(),
        housekeeper.clone(),
    ));
    if let (Some(l), Some(w)) = (listeners.web, &c.web) {
        let tools = crate::web::Tools {
            reloader,
            housekeeper,
            passwords: o.passwords.clone(),
            user_limits: shared.user_limits.clone(),
            known: o.known.clone(),
            terminal: bbs_for_web(shared, stop, tasks),
        };
        let web = crate::web::Web::new(c, w, sources, tools);
        tasks.spawn(crate::web::serve(l, web, stop.clone()));
    }
}

/// What the `[mail]` ports share: the telnet ports' throttle, places and password pool.
fn mail_shared(
    c: &Loaded,
    shared: &Shared,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    uid_validity: u32,
) -> Arc<crate::mail::Shared> {
    Arc::new(crate::mail::Shared {
        lobby: shared.lobby.clone(),
        backends: crate::mail::store::Backends {
            readers: shared.readers.share(),
            store: shared.store.clone(),
            user_limits: shared.user_limits.clone(),
        },
        settings: qtc_email::Settings {
            call: c.station.call,
            haddr: c.station.haddr.clone(),
            domain: c.mail.domain.clone(),
            max_message: c.limits.max_message,
            plain_auth: false,
            starttls: false,
            news_without_login: c.mail.news_without_login,
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        passwords_in_clear: c.mail.passwords_in_clear,
        uid_validity,
        acceptor,
        changes: shared.store.changes(),
        online: shared.online.clone(),
    })
}

/// Binds the `[mail]` listeners.
async fn bind_mail(c: &Loaded) -> anyhow::Result<Vec<(TcpListener, crate::mail::Listener)>> {
    let mut out = Vec::new();
    for kind in &c.mail.listeners {
        let addr = kind.addr;
        let l = TcpListener::bind(addr).await.with_context(|| {
            format!(
                "cannot listen on {addr} ([mail] {} in {})",
                kind.key(),
                c.source
            )
        })?;
        out.push((l, *kind));
    }
    Ok(out)
}

/// Starts one task per `[[port]]`, and the NET/ROM node over them when `[netrom]` is on;
/// incoming links to our BBS callsigns and circuits to our node get a BBS session (a
/// BBS-flagged caller is handed to forwarding, as on telnet).
fn start_radios(
    c: &Loaded,
    shared: &Arc<Shared>,
    tun: Option<crate::phy::tun::Tun>,
    stop: &watch::Receiver<bool>,
    tasks: &TaskTracker,
) -> Radios {
    use crate::radio::{self, PortSetup, RadioHandle};
    let mut handles = Vec::new();
    let mut ports = Vec::new();
    let mut wiring = c.netrom.as_ref().map(|n| NetromWiring::new(c, n));
    let mut ip = c.ip.as_ref().map(|i| radio::ip::Wiring::new(c, i));
    for (i, p) in c.radio_ports.iter().enumerate() {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let heard = radio::Heard::default();
        ports.push(crate::online::Port {
            name: p.name.clone(),
            what: p.kind.for_users(),
            heard: heard.clone(),
        });
        let health = std::sync::Arc::<radio::PortHealth>::default();
        let on_incoming = bbs_for_callers(shared, stop, tasks, &p.name, false);
        tasks.spawn(radio::run_port(
            PortSetup {
                port: p.clone(),
                locals: c.ax25.bbs_calls.clone(),
                accept: true,
                on_incoming: Some(on_incoming),
                heard: heard.clone(),
                health: health.clone(),
                metrics: shared.metrics.clone(),
                netrom: wiring.as_mut().and_then(|w| w.hooks[i].take()),
                ip: ip.as_mut().and_then(|w| w.hook(i)),
            },
            rx,
            stop.clone(),
        ));
        handles.push((
            p.name.clone(),
            RadioHandle {
                cmd: tx,
                heard,
                health,
            },
        ));
    }
    let mut radios = Radios::new(handles);
    if let Some(w) = wiring {
        let on_incoming = bbs_for_callers(shared, stop, tasks, "netrom", true);
        let to_ip = ip.as_ref().map(radio::ip::Wiring::netrom_sender);
        radios = radios.with_netrom(w.start(c, on_incoming, to_ip, stop, tasks));
    }
    if let (Some(w), Some(tun)) = (ip, tun) {
        let netrom = radios.netrom().cloned();
        radios = radios.with_ip(w.start(tun, netrom, stop, tasks));
    }
    shared.online.set_ports(ports, radios.clone());
    radios
}

/// Where callers over the air go: a BBS session each, as a forwarding partner only by the way
/// the sysop gave for it (or after its challenge: [`crate::partner_trust`]). `via` is the
/// radio port's name, or `netrom` for circuits (`U` shows it).
fn bbs_for_callers(
    shared: &Arc<Shared>,
    stop: &watch::Receiver<bool>,
    tasks: &TaskTracker,
    via: &str,
    circuits: bool,
) -> crate::radio::Incoming {
    let (sh, st, tk, name) = (shared.clone(), stop.clone(), tasks.clone(), via.to_string());
    Arc::new(move |stream, caller| {
        let remote = caller.remote;
        let span = if circuits {
            tracing::info_span!("netrom", user = %remote)
        } else {
            tracing::info_span!("ax25", port = %name, %remote)
        };
        let (sh, st, via) = (sh.clone(), st.clone(), name.clone());
        tk.spawn(
            async move {
                let radios = sh.online.radios();
                let grant = crate::partner_trust::grant(&sh.forwarder, &radios, &caller).await;
                let station = Some(remote.to_string());
                let stream = Box::new(stream);
                bbs_port::serve_identified(stream, remote, &grant, &via, station, &sh, st).await;
            }
            .instrument(span),
        );
    })
}

/// The web terminal's way in: a BBS session for a user the web's login checked, over a pipe
/// the web bridges to its WebSocket, with the places every BBS door takes (the address's cap,
/// a place while it starts, then a user's seat), or the line that refuses it.
fn bbs_for_web(
    shared: &Arc<Shared>,
    stop: &watch::Receiver<bool>,
    tasks: &TaskTracker,
) -> crate::web::terminal::OpenTerminal {
    let (sh, st, tk) = (shared.clone(), stop.clone(), tasks.clone());
    Arc::new(move |call, peer| {
        let lobby = sh.lobby.clone();
        let admitted = crate::login::admit(&lobby.throttle, &lobby.admission, peer.ip())?;
        // Bounded both ways: the session's output waits for the browser to take it.
        let (bbs_end, web_end) = tokio::io::duplex(16 * 1024);
        let conn = Connection::accepted(Box::new(bbs_end), peer, admitted, lobby, st.clone());
        let opts = bbs_port::UserOpts {
            access: qtc_bbs::Access::Verified(call),
            challenge: None,
            partners_only: false,
            initial: Vec::new(),
            via: "web".to_string(),
            station: None,
        };
        let sh = sh.clone();
        let span = tracing::info_span!("terminal", %peer, %call);
        tk.spawn(
            async move {
                bbs_port::serve_user(conn, crate::link::Codec::raw(), opts, &sh).await;
            }
            .instrument(span),
        );
        Ok(web_end)
    })
}

/// The channels between the NET/ROM node and the ports with a NET/ROM quality.
struct NetromWiring {
    node: qtc_netrom::Config,
    to_node: tokio::sync::mpsc::Sender<crate::radio::netrom::NetIn>,
    inbox: tokio::sync::mpsc::Receiver<crate::radio::netrom::NetIn>,
    /// Each port's hook, taken by its task.
    hooks: Vec<Option<crate::radio::netrom::PortHook>>,
    /// The node's side of each port's channel.
    senders: Vec<Option<tokio::sync::mpsc::Sender<crate::radio::netrom::NetOut>>>,
}

impl NetromWiring {
    fn new(c: &Loaded, n: &crate::config::netrom::Netrom) -> NetromWiring {
        use crate::radio::netrom::{PortHook, QUEUE};
        use tokio::sync::mpsc::channel;
        let (to_node, inbox) = channel(QUEUE);
        let mut hooks = Vec::new();
        let mut senders = Vec::new();
        for (i, p) in c.radio_ports.iter().enumerate() {
            if p.netrom_quality == 0 {
                hooks.push(None);
                senders.push(None);
                continue;
            }
            let (tx, rx) = channel(QUEUE);
            hooks.push(Some(PortHook {
                port: i,
                call: n.node.call,
                to_node: to_node.clone(),
                from_node: rx,
            }));
            senders.push(Some(tx));
        }
        NetromWiring {
            node: n.node.clone(),
            to_node,
            inbox,
            hooks,
            senders,
        }
    }

    /// Starts the node's task.
    fn start(
        self,
        c: &Loaded,
        on_incoming: crate::radio::Incoming,
        to_ip: Option<tokio::sync::mpsc::Sender<crate::radio::netrom::IpFromNode>>,
        stop: &watch::Receiver<bool>,
        tasks: &TaskTracker,
    ) -> crate::radio::netrom::NetromHandle {
        use crate::radio::netrom::{self, NetromHandle};
        drop(self.to_node);
        let (cmd_tx, cmds) = tokio::sync::mpsc::channel(16);
        let mut node = self.node;
        node.first_circuit_id = crate::clock::start_salt();
        // Two nodes started together must not broadcast in step.
        node.seed = crate::clock::random_seed();
        tasks.spawn(netrom::run(netrom::Setup {
            node: qtc_netrom::Node::new(node, crate::clock::now()),
            ports: self.senders,
            port_names: c.radio_ports.iter().map(|p| p.name.clone()).collect(),
            inbox: self.inbox,
            cmds,
            on_incoming,
            shutdown: stop.clone(),
            to_ip,
        }));
        NetromHandle::new(cmd_tx)
    }
}

/// Raises the open-file limit to its hard limit: every connection is a descriptor, and the
/// usual soft limit of 1024 let idle web connections starve every listener.
fn raise_fd_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => tracing::info!(from = soft, to = hard, "open-file limit raised"),
            Err(e) => tracing::warn!(error = %e, soft, hard, "cannot raise the open-file limit"),
        },
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot read the open-file limit"),
    }
}

/// Installs the SIGTERM and SIGINT handlers now; the future completes at the first signal.
fn stop_signals() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot catch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot catch SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
