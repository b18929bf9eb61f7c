//! Counters for the Prometheus text endpoint (`/metrics` on the web listener). Each is updated
//! where its event happens (atomics, or a small map under a mutex for per-partner and per-kind
//! counts); nothing samples on a timer. Store-held numbers (messages by type and status, queues)
//! are read from the store when the endpoint is scraped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use qtc_callsign::Callsign;

use crate::store_thread::StoreHandle;

/// The daemon's counters: one set per daemon, made in `daemon.rs` and handed (as an
/// `Arc<Metrics>`) to what counts.
#[derive(Default)]
pub struct Metrics {
    telnet_sessions: AtomicI64,
    forward_sessions: AtomicI64,
    login_failures: AtomicU64,
    /// Partner -> (received, sent).
    forwarded: Mutex<BTreeMap<String, (u64, u64)>>,
    errors: Mutex<BTreeMap<&'static str, u64>>,
    /// Port -> bytes in and out.
    ports: Mutex<BTreeMap<String, Arc<PortBytes>>>,
    /// Radio port -> its AX.25 links' counters (links gone and live), as the port last saw them.
    ax25: Mutex<BTreeMap<String, qtc_ax25::LinkStats>>,
}

/// Bytes a port moved: counted where they are read and written (an atomic add, no system call).
#[derive(Debug, Default)]
pub struct PortBytes {
    rx: AtomicU64,
    tx: AtomicU64,
}

impl PortBytes {
    /// `n` bytes came in.
    pub fn received(&self, n: usize) {
        self.rx.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `n` bytes went out.
    pub fn sent(&self, n: usize) {
        self.tx.fetch_add(n as u64, Ordering::Relaxed);
    }
}

impl Metrics {
    /// The byte counters of the port called `name` (a listener's `telnet:ADDR` or
    /// `forward:ADDR`, `tcp-out` for our calls to partners, a radio port's name).
    pub fn port_bytes(&self, name: &str) -> Arc<PortBytes> {
        self.ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    /// A radio port's AX.25 counters as of now (they only grow).
    pub fn ax25(&self, port: &str, stats: qtc_ax25::LinkStats) {
        let mut m = self.ax25.lock().unwrap_or_else(|e| e.into_inner());
        if m.get(port) != Some(&stats) {
            m.insert(port.to_string(), stats);
        }
    }
}

/// A byte stream whose traffic counts toward a port.
pub struct Counted<S> {
    inner: S,
    bytes: Arc<PortBytes>,
}

impl<S> Counted<S> {
    /// Counts `inner`'s traffic in `bytes`.
    pub fn new(inner: S, bytes: Arc<PortBytes>) -> Counted<S> {
        Counted { inner, bytes }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            self.bytes.received(buf.filled().len() - before);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = r {
            self.bytes.sent(n);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Which session gauge a [`SessionGuard`] counts in.
#[derive(Clone, Copy, Debug)]
pub enum SessionKind {
    /// A telnet connection.
    Telnet,
    /// A forwarding session (either direction, any transport).
    Forward,
}

/// Counts one session while it lives.
pub struct SessionGuard(Arc<Metrics>, SessionKind);

impl SessionGuard {
    /// Counts a session of `kind` in `metrics` until the guard is dropped.
    pub fn new(metrics: &Arc<Metrics>, kind: SessionKind) -> SessionGuard {
        metrics.gauge(kind).fetch_add(1, Ordering::Relaxed);
        SessionGuard(metrics.clone(), kind)
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.0.gauge(self.1).fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    fn gauge(&self, kind: SessionKind) -> &AtomicI64 {
        match kind {
            SessionKind::Telnet => &self.telnet_sessions,
            SessionKind::Forward => &self.forward_sessions,
        }
    }

    /// Telnet connections open now.
    pub fn telnet_sessions(&self) -> i64 {
        self.gauge(SessionKind::Telnet).load(Ordering::Relaxed)
    }

    /// A failed login (any port).
    pub fn login_failed(&self) {
        self.login_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// An error of `kind` ("store", "forward", "accept", ...).
    pub fn error(&self, kind: &'static str) {
        *self
            .errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind)
            .or_default() += 1;
    }

    /// Messages received from (`received`) and delivered to (`sent`) `partner`.
    pub fn forwarded(&self, partner: Callsign, received: u64, sent: u64) {
        if received == 0 && sent == 0 {
            return;
        }
        let mut m = self.forwarded.lock().unwrap_or_else(|e| e.into_inner());
        let e = m.entry(partner.to_string()).or_default();
        e.0 += received;
        e.1 += sent;
    }
}

fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// An AX.25 counter's name, help text and where it is in the link counters.
type Ax25Series = (&'static str, &'static str, fn(&qtc_ax25::LinkStats) -> u64);

/// The Prometheus text exposition (format 0.0.4) of everything in `metrics`; `partners` (the
/// configured ones) are listed even before they forward anything, and `store` is asked for
/// its counts.
pub async fn render(metrics: &Metrics, partners: &[String], store: &StoreHandle) -> String {
    let mut o = String::new();
    render_sessions(&mut o, metrics);
    let partners = render_forwarded(&mut o, metrics, partners);
    render_errors(&mut o, metrics);
    render_ports(&mut o, metrics);
    render_ax25(&mut o, metrics);
    render_store(&mut o, metrics, &partners, store).await;
    o
}

/// The version, the sessions in progress and the failed logins.
fn render_sessions(o: &mut String, metrics: &Metrics) {
    let _ = writeln!(o, "# HELP qtc_build_info The running qtc version.");
    let _ = writeln!(o, "# TYPE qtc_build_info gauge");
    let _ = writeln!(
        o,
        "qtc_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(o, "# HELP qtc_sessions Sessions in progress.");
    let _ = writeln!(o, "# TYPE qtc_sessions gauge");
    let _ = writeln!(
        o,
        "qtc_sessions{{kind=\"telnet\"}} {}",
        metrics.telnet_sessions.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        o,
        "qtc_sessions{{kind=\"forward\"}} {}",
        metrics.forward_sessions.load(Ordering::Relaxed)
    );
    let _ = writeln!(o, "# HELP qtc_login_failures_total Failed logins.");
    let _ = writeln!(o, "# TYPE qtc_login_failures_total counter");
    let _ = writeln!(
        o,
        "qtc_login_failures_total {}",
        metrics.login_failures.load(Ordering::Relaxed)
    );
}

/// Messages forwarded, by partner and direction; returns the partners listed (`partners`
/// first, then any other that forwarded).
fn render_forwarded(o: &mut String, metrics: &Metrics, partners: &[String]) -> Vec<String> {
    let fwd_counts = metrics
        .forwarded
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let _ = writeln!(
        o,
        "# HELP qtc_forwarded_messages_total Messages forwarded, by partner and direction."
    );
    let _ = writeln!(o, "# TYPE qtc_forwarded_messages_total counter");
    let mut partners: Vec<String> = partners.to_vec();
    for p in fwd_counts.keys() {
        if !partners.contains(p) {
            partners.push(p.clone());
        }
    }
    for p in &partners {
        let (rx, tx) = fwd_counts.get(p).copied().unwrap_or_default();
        let l = label(p);
        let _ = writeln!(
            o,
            "qtc_forwarded_messages_total{{partner=\"{l}\",direction=\"in\"}} {rx}"
        );
        let _ = writeln!(
            o,
            "qtc_forwarded_messages_total{{partner=\"{l}\",direction=\"out\"}} {tx}"
        );
    }
    partners
}

/// Errors, by kind (the usual kinds always listed).
fn render_errors(o: &mut String, metrics: &Metrics) {
    let errors = metrics
        .errors
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let _ = writeln!(o, "# HELP qtc_errors_total Errors, by kind.");
    let _ = writeln!(o, "# TYPE qtc_errors_total counter");
    for kind in ["store", "forward", "accept", "web"] {
        let n = errors.get(kind).copied().unwrap_or(0);
        let _ = writeln!(o, "qtc_errors_total{{kind=\"{kind}\"}} {n}");
    }
    for (kind, n) in &errors {
        if !["store", "forward", "accept", "web"].contains(kind) {
            let _ = writeln!(o, "qtc_errors_total{{kind=\"{}\"}} {n}", label(kind));
        }
    }
}

/// Bytes in and out, by port.
fn render_ports(o: &mut String, metrics: &Metrics) {
    let ports: Vec<(String, u64, u64)> = metrics
        .ports
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(k, b)| {
            (
                k.clone(),
                b.rx.load(Ordering::Relaxed),
                b.tx.load(Ordering::Relaxed),
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "# HELP qtc_port_bytes_total Bytes received (in) and sent (out), by port (TCP listeners, \
         our calls to partners, radio ports: AX.25 frames)."
    );
    let _ = writeln!(o, "# TYPE qtc_port_bytes_total counter");
    for (port, rx, tx) in &ports {
        let l = label(port);
        let _ = writeln!(
            o,
            "qtc_port_bytes_total{{port=\"{l}\",direction=\"in\"}} {rx}"
        );
        let _ = writeln!(
            o,
            "qtc_port_bytes_total{{port=\"{l}\",direction=\"out\"}} {tx}"
        );
    }
}

/// The AX.25 link counters, by radio port.
fn render_ax25(o: &mut String, metrics: &Metrics) {
    let ax25 = metrics
        .ax25
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let series: [Ax25Series; 6] = [
        (
            "qtc_ax25_iframes_sent_total",
            "I frames sent for the first time",
            |s| s.i_frames_sent,
        ),
        (
            "qtc_ax25_iframes_resent_total",
            "I frames sent again (retries)",
            |s| s.i_frames_resent,
        ),
        (
            "qtc_ax25_iframes_received_total",
            "I frames received",
            |s| s.i_frames_received,
        ),
        ("qtc_ax25_rej_sent_total", "REJ frames sent", |s| s.rej_sent),
        ("qtc_ax25_srej_sent_total", "SREJ frames sent", |s| {
            s.srej_sent
        }),
        (
            "qtc_ax25_t1_expiries_total",
            "T1 (retry timer) expiries",
            |s| s.t1_expiries,
        ),
    ];
    for (name, help, get) in series {
        let _ = writeln!(o, "# HELP {name} AX.25: {help}, by radio port.");
        let _ = writeln!(o, "# TYPE {name} counter");
        for (port, st) in &ax25 {
            let _ = writeln!(o, "{name}{{port=\"{}\"}} {}", label(port), get(st));
        }
    }
}

/// What the store counts, asked at scrape time: messages by type and status, the queues
/// (`partners` always listed), and whether the store answered.
async fn render_store(o: &mut String, metrics: &Metrics, partners: &[String], store: &StoreHandle) {
    // Read from the store at scrape time.
    let from_store = store
        .call(|s| {
            // Counters kept by the store: the same cost on any store size.
            let by: BTreeMap<(char, char), u64> = s
                .message_tallies()?
                .into_iter()
                .map(|(kind, status, n)| ((kind, status), n))
                .collect();
            Ok::<_, qtc_mail::StoreError>((by, s.queue_counts()?))
        })
        .await;
    match from_store {
        Ok(Ok((by, queues))) => {
            let _ = writeln!(
                o,
                "# HELP qtc_messages Messages in the store, by type (P, B, T) and status (N, Y, F, K, H)."
            );
            let _ = writeln!(o, "# TYPE qtc_messages gauge");
            for ((t, s), n) in &by {
                let _ = writeln!(o, "qtc_messages{{type=\"{t}\",status=\"{s}\"}} {n}");
            }
            let _ = writeln!(
                o,
                "# HELP qtc_queued_messages Messages waiting to be forwarded, by partner."
            );
            let _ = writeln!(o, "# TYPE qtc_queued_messages gauge");
            for p in partners {
                let n = queues.iter().find(|(c, _)| c == p).map_or(0, |(_, n)| *n);
                let _ = writeln!(o, "qtc_queued_messages{{partner=\"{}\"}} {n}", label(p));
            }
            for (p, n) in &queues {
                if !partners.contains(p) {
                    let _ = writeln!(o, "qtc_queued_messages{{partner=\"{}\"}} {n}", label(p));
                }
            }
            let _ = writeln!(
                o,
                "# HELP qtc_store_up 1 when the store answered this scrape."
            );
            let _ = writeln!(o, "# TYPE qtc_store_up gauge");
            let _ = writeln!(o, "qtc_store_up 1");
        }
        _ => {
            metrics.error("store");
            let _ = writeln!(o, "# TYPE qtc_store_up gauge");
            let _ = writeln!(o, "qtc_store_up 0");
        }
    }
}
