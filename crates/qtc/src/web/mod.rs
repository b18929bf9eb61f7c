//! The web: mail for every user (log in with the BBS password), the sysop's dashboard, and
//! the Prometheus `/metrics` endpoint, on `[web] listen`.
// Handlers answer `Result<Response, Response>`: an early refusal is a whole response.
#![allow(clippy::result_large_err)]

mod attachments;
mod chart;
mod compose;
mod config;
mod forwarding;
mod guard;
mod housekeeping;
pub mod listener;
mod mail;
mod pages;
pub mod session;
mod status;
pub mod terminal;
mod users;
mod wp;

use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Form, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use qtc_callsign::Callsign;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::Loaded;
use crate::forward::ForwardHandle;
use crate::health::Sources;
use crate::store_thread::StoreHandle;
use session::{Sessions, WebSession};

/// Longest form body accepted.
const MAX_FORM: usize = 16 * 1024;

/// Binds `[web] listen` when it is set.
pub async fn bind(c: &Loaded) -> anyhow::Result<Option<TcpListener>> {
    let Some(w) = &c.web else {
        return Ok(None);
    };
    let a = w.listen;
    TcpListener::bind(a)
        .await
        .map(Some)
        .with_context(|| format!("cannot listen on {a} ([web] listen in {})", c.source))
}

/// What the web handlers share.
pub struct Web {
    /// Forwarding: the partners, sessions, Forward now.
    fwd: ForwardHandle,
    /// The store thread.
    store: StoreHandle,
    /// What the Status and Forwarding pages read.
    health: Sources,
    /// Password checks and hashes, off the event and store threads.
    passwords: crate::passwords::Passwords,
    /// What the overview lists as listeners.
    listeners: Vec<String>,
    /// This listener's bound address, set by [`serve`].
    web_addr: std::sync::OnceLock<String>,
    sessions: Sessions,
    /// Web login attempts per address and account, as on telnet.
    throttle: crate::throttle::Throttle,
    /// Where accounts logged in from (shared with the BBS ports).
    known: Arc<crate::throttle::KnownPlaces>,
    /// `[web] hosts`.
    hosts: Arc<guard::Hosts>,
    /// `[web]` connection caps and idle timeout.
    caps: (usize, usize, std::time::Duration),
    /// The daemon's counters: `/metrics` shows them, the handlers count in them.
    metrics: Arc<crate::metrics::Metrics>,
    /// The per-user allowances, shared with the BBS.
    user_limits: Arc<crate::user_limits::UserLimits>,
    /// `[limits] max_message`: the longest body a user may send.
    max_message: usize,
    /// Applies configuration changes, as SIGHUP does.
    reloader: Arc<crate::reload::Reloader>,
    /// Runs housekeeping now and keeps its last runs.
    housekeeper: Arc<crate::housekeeping::Housekeeper>,
    /// Opens a BBS session for the terminal.
    terminal: terminal::OpenTerminal,
}

/// What the web acts through besides the health model's sources.
pub struct Tools {
    /// Applies configuration changes (the `/config` page), as SIGHUP does.
    pub reloader: Arc<crate::reload::Reloader>,
    /// Runs housekeeping (the `/housekeeping` page) and keeps its last runs.
    pub housekeeper: Arc<crate::housekeeping::Housekeeper>,
    /// Password checks and hashes.
    pub passwords: crate::passwords::Passwords,
    /// The BBS's per-user allowances.
    pub user_limits: Arc<crate::user_limits::UserLimits>,
    /// Where accounts logged in from (shared with the BBS ports).
    pub known: Arc<crate::throttle::KnownPlaces>,
    /// Opens a BBS session for the terminal.
    pub terminal: terminal::OpenTerminal,
}

impl Web {
    /// The dashboard's state for this daemon and its `[web]` settings `w`, answering from
    /// `sources` and acting through `tools`.
    pub fn new(
        c: &Loaded,
        w: &crate::config::web::Web,
        sources: Sources,
        tools: Tools,
    ) -> Arc<Web> {
        let Tools {
            reloader,
            housekeeper,
            passwords,
            user_limits,
            known,
            terminal,
        } = tools;
        let mut listeners = Vec::new();
        for a in &c.telnet.listen {
            listeners.push(format!("telnet {a}"));
        }
        for a in &c.forward.listen {
            listeners.push(format!("forward {a}"));
        }
        for l in &c.mail.listeners {
            listeners.push(format!("{} {}", l.name(), l.addr));
        }
        for p in &c.radio_ports {
            listeners.push(format!("radio {} {}", p.name, p.kind.describe()));
        }
        Arc::new(Web {
            fwd: sources.forward.clone(),
            store: sources.store.clone(),
            metrics: sources.metrics.clone(),
            health: sources,
            passwords,
            listeners,
            web_addr: std::sync::OnceLock::new(),
            sessions: Sessions::default(),
            throttle: crate::throttle::Throttle::new(c.limits.lockout_after, known.clone()),
            known,
            hosts: Arc::new(guard::Hosts::new(&w.hosts)),
            caps: (w.max_connections.get(), w.max_per_address.get(), w.idle),
            user_limits,
            max_message: c.limits.max_message,
            reloader,
            housekeeper,
            terminal,
        })
    }

    /// The live session of the request, checked against the store: a user who was deleted,
    /// locked, promoted, demoted or given a new password since the login has no session any more.
    async fn session(&self, headers: &HeaderMap) -> Option<WebSession> {
        let h = headers.get(header::COOKIE)?.to_str().ok()?;
        let id = session::cookie(h, session::COOKIE)?;
        let s = self.sessions.get(id, crate::clock::now())?;
        let call = s.call;
        let stamp = self.store.call(move |st| st.login_stamp(call)).await;
        match stamp {
            Ok(Ok(Some(now))) if session::same(&now, &s.stamp) => Some(s),
            Ok(Ok(_)) => {
                tracing::info!(call = %s.call, "web: session ended: the user was deleted, locked, promoted, demoted or given a new password");
                self.sessions.remove(id);
                None
            }
            Ok(Err(_)) | Err(_) => None,
        }
    }
}

/// Serves the dashboard and `/metrics` until shutdown.
pub async fn serve(listener: TcpListener, web: Arc<Web>, mut stop: watch::Receiver<bool>) {
    if let Ok(a) = listener.local_addr() {
        let _ = web.web_addr.set(format!("web {a}"));
    }
    let (max, per_address, idle) = web.caps;
    let web_metrics = web.metrics.clone();
    let listener = listener::WebListener::new(
        listener,
        max,
        per_address,
        idle,
        web.metrics.clone(),
        web.known.clone(),
    );
    let app = router(web).into_make_service_with_connect_info::<listener::Peer>();
    let r = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stop.changed().await;
        })
        .await;
    if let Err(e) = r {
        web_metrics.error("web");
        tracing::warn!(error = %e, "web listener failed");
    }
}

fn router(web: Arc<Web>) -> Router {
    let hosts = web.hosts.clone();
    // A message with its attachments may weigh what `[limits] max_message` allows.
    let compose_limit = axum::extract::DefaultBodyLimit::max(compose::body_limit(web.max_message));
    Router::new()
        .route("/metrics", get(metrics))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/", get(overview))
        .route("/status", get(status::status))
        .route("/forwarding", get(forwarding::show))
        .route("/forward", post(forward_now))
        .route("/messages", get(mail::list))
        .route("/messages/{n}", get(mail::read).post(mail::action))
        .route("/messages/{n}/files/{i}", get(attachments::download))
        .route(
            "/compose",
            get(compose::form).post(compose::send).layer(compose_limit),
        )
        .route("/users", get(users::list).post(users::add))
        .route("/users/{call}", get(users::edit).post(users::action))
        .route("/config", get(config::show).post(config::save))
        .route(
            "/housekeeping",
            get(housekeeping::show).post(housekeeping::run),
        )
        .route("/wp", get(wp::list))
        .route("/terminal", get(terminal::show))
        .route("/terminal.js", get(terminal::script))
        .route("/terminal/ws", get(terminal::ws))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_FORM))
        .layer(axum::middleware::from_fn_with_state(hosts, guard::guard))
        .layer(axum::middleware::from_fn_with_state(
            web.metrics.clone(),
            count_store_down,
        ))
        .with_state(web)
}

/// A page or an error, as the handlers answer.
type Page = Result<Response, Response>;

fn store_down() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Html(pages::error_page("The message store is not available.")),
    )
        .into_response()
}

/// Counts each [`store_down`] answer (the only 503) as a store error.
async fn count_store_down(
    State(metrics): State<Arc<crate::metrics::Metrics>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let response = next.run(request).await;
    if response.status() == StatusCode::SERVICE_UNAVAILABLE {
        metrics.error("store");
    }
    response
}

/// The session of a page view, or a redirect to the login form.
async fn need_login(web: &Web, headers: &HeaderMap) -> Result<WebSession, Response> {
    web.session(headers)
        .await
        .ok_or_else(|| Redirect::to("/login").into_response())
}

/// A refusal: the page is the sysop's.
fn sysops_only() -> Response {
    (
        StatusCode::FORBIDDEN,
        Html(pages::error_page("This page is for the sysop.")),
    )
        .into_response()
}

/// The session of a sysop's page view, or a redirect to the login form, or a refusal.
async fn need_sysop(web: &Web, headers: &HeaderMap) -> Result<WebSession, Response> {
    let s = need_login(web, headers).await?;
    if !s.sysop() {
        return Err(sysops_only());
    }
    Ok(s)
}

/// The session of a sysop's form post whose CSRF token matches, or a refusal.
async fn need_sysop_csrf(
    web: &Web,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<WebSession, Response> {
    let s = need_csrf(web, headers, csrf).await?;
    if !s.sysop() {
        return Err(sysops_only());
    }
    Ok(s)
}

/// Runs `f` on the store thread; a store that is not there or fails is a 503 page.
async fn store<T: Send + 'static>(
    web: &Web,
    f: impl FnOnce(&mut qtc_store::Store) -> Result<T, qtc_mail::StoreError> + Send + 'static,
) -> Result<T, Response> {
    web.store
        .call(f)
        .await
        .ok()
        .and_then(|r| r.ok())
        .ok_or_else(store_down)
}

/// The refusal of a post without a session.
fn not_logged_in() -> Response {
    (
        StatusCode::FORBIDDEN,
        Html(pages::error_page("Not logged in.")),
    )
        .into_response()
}

/// The session of a form post whose CSRF token matches, or a refusal.
async fn need_csrf(web: &Web, headers: &HeaderMap, csrf: &str) -> Result<WebSession, Response> {
    let s = web.session(headers).await.ok_or_else(not_logged_in)?;
    if !session::same(&s.csrf, csrf) {
        tracing::warn!(call = %s.call, "web: form refused: CSRF token does not match");
        return Err((
            StatusCode::FORBIDDEN,
            Html(pages::error_page(
                "This form is stale or did not come from this dashboard (CSRF check failed).",
            )),
        )
            .into_response());
    }
    Ok(s)
}

async fn metrics(State(web): State<Arc<Web>>) -> Response {
    let partners: Vec<String> = web
        .fwd
        .partners()
        .iter()
        .map(|p| p.call.to_string())
        .collect();
    let body = crate::metrics::render(&web.metrics, &partners, &web.store).await;
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

async fn login_form() -> Response {
    match session::token() {
        Ok(t) => login_page(&t, None),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "no randomness").into_response(),
    }
}

fn login_page(token: &str, error: Option<&str>) -> Response {
    let cookie = format!(
        "{}={token}; Path=/login; HttpOnly; SameSite=Strict",
        session::PRE_COOKIE
    );
    let mut r = Html(pages::login(token, error)).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    if error.is_some() {
        *r.status_mut() = StatusCode::FORBIDDEN;
    }
    r
}

#[derive(serde::Deserialize)]
struct LoginForm {
    call: String,
    password: String,
    csrf: String,
}

async fn login(
    State(web): State<Arc<Web>>,
    axum::extract::ConnectInfo(listener::Peer(peer, _)): axum::extract::ConnectInfo<listener::Peer>,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Page {
    if web.throttle.locked_out(peer.ip(), crate::clock::now()) {
        tracing::warn!(%peer, "web: login refused: locked out after repeated failures");
        return Err(too_many(LOCKED_OUT));
    }
    // The login form's token must match the cookie set with the form (double submit).
    let pre = headers
        .get(header::COOKIE)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| session::cookie(h, session::PRE_COOKIE))
        .unwrap_or("");
    if pre.is_empty() || !session::same(pre, &f.csrf) {
        return Err((
            StatusCode::FORBIDDEN,
            Html(pages::error_page(
                "The login form is stale (CSRF check failed): load it again.",
            )),
        )
            .into_response());
    }
    let typed = f.call.trim().to_ascii_uppercase();
    let (call, stamp) = checked_login(&web, peer, &typed, f.password).await?;
    tracing::info!(%call, sysop = session::is_sysop(&stamp), "web: logged in");
    let id = web
        .sessions
        .create(call, stamp, crate::clock::now())
        .map_err(|_| store_down())?;
    let mut r = Redirect::to("/").into_response();
    let cookie = format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict",
        session::COOKIE
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(r)
}

/// The refusal of a login the throttle would not check.
const LOCKED_OUT: &str =
    "Too many failed logins from your address or for this account. Try again later.";

fn too_many(why: &str) -> Response {
    (StatusCode::TOO_MANY_REQUESTS, Html(pages::error_page(why))).into_response()
}

/// Checks `call`'s password from `peer` through the throttle, as every port does
/// ([`crate::login`]): the user's callsign and login stamp, or the page that refuses.
async fn checked_login(
    web: &Web,
    peer: std::net::SocketAddr,
    call: &str,
    password: String,
) -> Result<(Callsign, String), Response> {
    // What was typed, as a callsign once; a name that is not one has no account, but it is
    // counted at the address and checked (a dummy check) as any other.
    let account = Callsign::parse_station(call).ok();
    let attempt =
        crate::login::attempt(&web.throttle, Some(peer.ip()), account).map_err(|why| {
            too_many(match why {
                crate::throttle::Refused::Locked => LOCKED_OUT,
                crate::throttle::Refused::Busy => {
                    "Too many logins to this account at once. Try again in a moment."
                }
            })
        })?;
    // Read before the check: a password changed meanwhile ends the session at its next page.
    let stamp = match account {
        Some(a) => web.store.call(move |s| s.login_stamp(a)).await,
        None => Ok(Ok(None)),
    };
    let stamp = stamp.map_err(|_| store_down())?;
    // Checked whoever it is (a dummy check for an unknown call), so that the time taken tells
    // nothing about which callsigns exist or are sysops.
    let login = crate::passwords::Login::User;
    let checked = crate::login::verify(
        &web.throttle,
        &web.passwords,
        attempt,
        account,
        password,
        login,
    )
    .await;
    if let (Ok(Some(stamp)), Ok(true), Some(account)) = (stamp, checked, account) {
        return Ok((account, stamp));
    }
    web.metrics.login_failed();
    // What was typed as the callsign is logged only if it is one: it may be a password.
    match account {
        Some(call) => tracing::warn!(%call, %peer, "web: login failed"),
        None => tracing::warn!(%peer, "web: login failed (not a callsign)"),
    }
    // Slow down guessing: the answer waits 1, 2, 4... up to 16 s, as on telnet.
    let pause = web.throttle.delay(Some(peer.ip()), crate::clock::now());
    tokio::time::sleep(pause).await;
    let t = session::token().map_err(|_| store_down())?;
    Err(login_page(&t, Some("Wrong callsign or password.")))
}

/// A button's form post on a message or a user: what to do, and what goes with it.
#[derive(serde::Deserialize)]
struct ActionForm {
    csrf: String,
    action: String,
    /// `yes` once the user confirmed a destructive action.
    #[serde(default)]
    confirm: String,
    /// A user's new password.
    #[serde(default)]
    password: String,
    /// A user's sysop flag (a checkbox: present when ticked).
    #[serde(default)]
    sysop: Option<String>,
    /// A user's BBS flag.
    #[serde(default)]
    bbs: Option<String>,
    /// A user's name (`N`), as the sysop sets it.
    #[serde(default)]
    name: String,
    /// A user's home BBS (`NH`), as the sysop sets it.
    #[serde(default)]
    home: String,
}

#[derive(serde::Deserialize)]
struct CsrfOnly {
    csrf: String,
}

async fn logout(State(web): State<Arc<Web>>, headers: HeaderMap, Form(f): Form<CsrfOnly>) -> Page {
    need_csrf(&web, &headers, &f.csrf).await?;
    if let Some(id) = headers
        .get(header::COOKIE)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| session::cookie(h, session::COOKIE))
    {
        web.sessions.remove(id);
    }
    let mut r = Redirect::to("/login").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("qtc_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    Ok(r)
}

async fn overview(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_login(&web, &headers).await?;
    if !s.sysop() {
        return Ok(Redirect::to("/messages").into_response());
    }
    let now = crate::clock::unix_now();
    let days = store(&web, move |st| st.traffic_per_day(chart::DAYS, now)).await?;
    let mut listeners = web.listeners.clone();
    listeners.extend(web.web_addr.get().cloned());
    Ok(Html(pages::overview(
        &s,
        web.fwd.call(),
        &listeners,
        &chart::svg(&days),
    ))
    .into_response())
}

#[derive(serde::Deserialize)]
struct ForwardForm {
    csrf: String,
    partner: String,
}

async fn forward_now(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Form(f): Form<ForwardForm>,
) -> Page {
    let s = need_sysop_csrf(&web, &headers, &f.csrf).await?;
    let partner = f.partner.trim().to_ascii_uppercase();
    tracing::info!(call = %s.call, %partner, "web: forward now");
    // The same call as `qtc ctl forward`, waited for.
    let line = web.fwd.forward_named(&partner).await;
    Ok(Html(pages::result(&s, "Forward now", &line, "/forwarding")).into_response())
}
