//! The sysop's web dashboard and the Prometheus `/metrics` endpoint, on `[web] listen`.
// Handlers answer `Result<Response, Response>`: an early refusal is a whole response.
#![allow(clippy::result_large_err)]

mod attachments;
mod guard;
pub mod listener;
mod pages;
pub mod session;
mod status;

use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Form, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
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
    let addr = c
        .cfg
        .web
        .addr()
        .map_err(|(k, m)| anyhow::anyhow!("{}: [web] {k}: {m}", c.source))?;
    match addr {
        None => Ok(None),
        Some(a) => TcpListener::bind(a)
            .await
            .map(Some)
            .with_context(|| format!("cannot listen on {a} ([web] listen in {})", c.source)),
    }
}

/// What the web handlers share.
pub struct Web {
    /// Forwarding: the partners, sessions, Forward now.
    fwd: ForwardHandle,
    /// The store thread.
    store: StoreHandle,
    /// What the Status page reads.
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
    /// `[web] hosts`.
    hosts: Arc<guard::Hosts>,
    /// `[web]` connection caps and idle timeout.
    caps: (usize, usize, std::time::Duration),
    /// The sysop's pager, for the pages on the Status page.
    online: Arc<crate::online::Online>,
    /// The daemon's counters: `/metrics` shows them, the handlers count in them.
    metrics: Arc<crate::metrics::Metrics>,
}

impl Web {
    /// The dashboard's state for this daemon, answering from `sources`.
    pub fn new(
        c: &Loaded,
        sources: Sources,
        passwords: crate::passwords::Passwords,
        online: Arc<crate::online::Online>,
    ) -> Arc<Web> {
        let mut listeners = Vec::new();
        for a in &c.telnet_listen {
            listeners.push(format!("telnet {a}"));
        }
        for a in &c.forward_listen {
            listeners.push(format!("forward {a}"));
        }
        for p in &c.radio_ports {
            listeners.push(format!(
                "radio {} {}",
                p.name,
                crate::radio::describe(&p.kind)
            ));
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
            throttle: crate::throttle::Throttle::new(c.cfg.limits.lockout_after),
            hosts: Arc::new(guard::Hosts::new(&c.cfg.web.hosts)),
            caps: (
                c.cfg.web.max_connections,
                c.cfg.web.max_per_address,
                c.cfg
                    .web
                    .idle()
                    .unwrap_or(std::time::Duration::from_secs(60)),
            ),
            online,
        })
    }

    /// The live session of the request, checked against the store: a sysop who was deleted,
    /// demoted or given a new password since the login has no session any more.
    async fn session(&self, headers: &HeaderMap) -> Option<WebSession> {
        let h = headers.get(header::COOKIE)?.to_str().ok()?;
        let id = session::cookie(h, session::COOKIE)?;
        let s = self.sessions.get(id, crate::clock::now())?;
        let call = s.call.clone();
        let stamp = self.store.call(move |st| st.sysop_stamp(&call)).await;
        match stamp {
            Ok(Ok(Some(now))) if session::same(&now, &s.stamp) => Some(s),
            Ok(Ok(_)) => {
                tracing::info!(call = %s.call, "web: session ended: the sysop was deleted, demoted or given a new password");
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
    let listener =
        listener::WebListener::new(listener, max, per_address, idle, web.metrics.clone());
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
    Router::new()
        .route("/metrics", get(metrics))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/", get(overview))
        .route("/status", get(status::status))
        .route("/forward", post(forward_now))
        .route("/messages", get(messages))
        .route("/messages/{n}", get(message).post(message_action))
        .route("/messages/{n}/files/{i}", get(attachments::download))
        .route("/users", get(users).post(user_add))
        .route("/users/{call}", post(user_action))
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

/// The session of a form post whose CSRF token matches, or a refusal.
async fn need_csrf(web: &Web, headers: &HeaderMap, csrf: &str) -> Result<WebSession, Response> {
    let s = web.session(headers).await.ok_or_else(|| {
        (
            StatusCode::FORBIDDEN,
            Html(pages::error_page("Not logged in.")),
        )
            .into_response()
    })?;
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
    let partners: Vec<String> = web.fwd.partners().iter().map(|p| p.call.clone()).collect();
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
    axum::extract::ConnectInfo(listener::Peer(peer)): axum::extract::ConnectInfo<listener::Peer>,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Page {
    let locked = || {
        tracing::warn!(%peer, "web: login refused: locked out after repeated failures");
        (
            StatusCode::TOO_MANY_REQUESTS,
            Html(pages::error_page(
                "Too many failed logins from your address or for this account. Try again later.",
            )),
        )
            .into_response()
    };
    if web.throttle.locked_out(peer.ip(), crate::clock::now()) {
        return Err(locked());
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
    let call = f.call.trim().to_ascii_uppercase();
    // Counted before the check: parallel guesses cannot outrun the lockout.
    let attempt = web
        .throttle
        .attempt(Some(peer.ip()), &call, crate::clock::now())
        .ok_or_else(locked)?;
    let c2 = call.clone();
    let stamp = web.store.call(move |s| s.sysop_stamp(&c2)).await;
    // Checked whoever it is (a dummy check for an unknown call), so that the time taken tells
    // nothing about which callsigns exist or are sysops.
    let checked = web.passwords.check(&web.store, &call, f.password).await;
    let ok = match (stamp, checked) {
        (Ok(Ok(stamp)), Ok(ok)) => Ok(Ok(stamp.filter(|_| ok))),
        (Err(e), _) => Err(e),
        (Ok(Err(e)), _) | (_, Err(e)) => Ok(Err(e)),
    };
    let stamp = match ok {
        Ok(Ok(Some(stamp))) => stamp,
        Ok(Ok(None)) | Ok(Err(_)) => {
            web.metrics.login_failed();
            // What was typed as the callsign is logged only if it is one: it may be a password.
            match qtc_mail::Callsign::parse(&call) {
                Ok(_) => tracing::warn!(%call, %peer, "web: login failed"),
                Err(_) => tracing::warn!(%peer, "web: login failed (not a callsign)"),
            }
            // Slow down guessing: the answer waits 1, 2, 4... up to 16 s, as on telnet.
            let pause = web.throttle.delay(Some(peer.ip()), crate::clock::now());
            tokio::time::sleep(pause).await;
            let t = session::token().map_err(|_| store_down())?;
            return Err(login_page(
                &t,
                Some("Wrong callsign or password, or not a sysop."),
            ));
        }
        Err(_) => return Err(store_down()),
    };
    web.throttle.succeeded(attempt, crate::clock::now());
    let id = web
        .sessions
        .create(&call, stamp, crate::clock::now())
        .map_err(|_| store_down())?;
    tracing::info!(%call, "web: sysop logged in");
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
    let counts = web
        .store
        .call(|s| s.queue_counts())
        .await
        .ok()
        .and_then(|r| r.ok())
        .ok_or_else(store_down)?;
    let mut partners: Vec<(String, String, u64)> = web
        .fwd
        .partners()
        .iter()
        .map(|p| {
            let n = counts
                .iter()
                .find(|(c, _)| *c == p.call)
                .map_or(0, |(_, n)| *n);
            (p.call.clone(), p.connect.to_string(), n)
        })
        .collect();
    for (c, n) in &counts {
        if !partners.iter().any(|(p, _, _)| p == c) {
            partners.push((c.clone(), "not configured".into(), *n));
        }
    }
    let active: Vec<(String, String)> = web
        .fwd
        .active()
        .into_iter()
        .map(|(p, a)| {
            (
                p,
                format!(
                    "{:?} since {}, mode {}",
                    a.role,
                    qtc_mail::Utc::from_unix(a.since).rfc3339(),
                    a.mode.map_or("-".to_string(), |m| m.to_string())
                ),
            )
        })
        .collect();
    let mut listeners = web.listeners.clone();
    listeners.extend(web.web_addr.get().cloned());
    Ok(Html(pages::overview(
        &s,
        web.fwd.call(),
        &listeners,
        &partners,
        &active,
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
    let s = need_csrf(&web, &headers, &f.csrf).await?;
    let partner = f.partner.trim().to_ascii_uppercase();
    tracing::info!(call = %s.call, %partner, "web: forward now");
    // The same call as `qtc ctl forward`, waited for.
    let r = web.fwd.forward_now(&partner).await;
    let line = crate::forward::forward_answer(&partner, &r);
    Ok(Html(pages::result(&s, "Forward now", &line, "/")).into_response())
}

async fn messages(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_login(&web, &headers).await?;
    let list = web
        .store
        .call(|s| {
            use qtc_mail::MessageStore;
            s.list(&qtc_mail::ListFilter {
                include_killed: true,
                last: Some(100),
                ..Default::default()
            })
        })
        .await
        .ok()
        .and_then(|r| r.ok())
        .ok_or_else(store_down)?;
    Ok(Html(pages::messages(&s, &list)).into_response())
}

async fn message(State(web): State<Arc<Web>>, headers: HeaderMap, Path(n): Path<u64>) -> Page {
    let s = need_login(&web, &headers).await?;
    let m = web
        .store
        .call(move |s| {
            use qtc_mail::MessageStore;
            s.message(n)
        })
        .await
        .ok()
        .and_then(|r| r.ok())
        .ok_or_else(store_down)?;
    match m {
        Some(m) => Ok(Html(pages::message(&s, &m)).into_response()),
        None => Err((
            StatusCode::NOT_FOUND,
            Html(pages::error_page(&format!("No message #{n}."))),
        )
            .into_response()),
    }
}

#[derive(serde::Deserialize)]
struct ActionForm {
    csrf: String,
    action: String,
}

async fn message_action(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path(n): Path<u64>,
    Form(f): Form<ActionForm>,
) -> Page {
    let s = need_csrf(&web, &headers, &f.csrf).await?;
    let action = f.action.clone();
    let r = web
        .store
        .call(move |st| {
            use qtc_mail::{MessageStore, MsgStatus};
            match action.as_str() {
                "kill" => st.set_status(n, MsgStatus::Killed),
                "hold" => st.set_status(n, MsgStatus::Held),
                "release" => st.release(n, crate::clock::unix_now()),
                _ => Ok(false),
            }
        })
        .await
        .ok()
        .and_then(|r| r.ok())
        .ok_or_else(store_down)?;
    let line = if r {
        tracing::info!(call = %s.call, number = n, action = %f.action, "web: message changed");
        format!("message #{n}: {} done", f.action)
    } else {
        format!(
            "message #{n}: cannot {} it (no such message, or not held)",
            f.action
        )
    };
    Ok(Html(pages::result(
        &s,
        "Message",
        &line,
        &format!("/messages/{n}"),
    ))
    .into_response())
}

async fn users(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_login(&web, &headers).await?;
    let list = web
        .store
        .call(|s| s.users())
        .await
        .ok()
        .and_then(|r| r.ok())
        .ok_or_else(store_down)?;
    Ok(Html(pages::users(&s, &list)).into_response())
}

#[derive(serde::Deserialize)]
struct UserForm {
    csrf: String,
    call: String,
    password: String,
    #[serde(default)]
    sysop: Option<String>,
    #[serde(default)]
    bbs: Option<String>,
}

async fn user_add(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Form(f): Form<UserForm>,
) -> Page {
    let s = need_csrf(&web, &headers, &f.csrf).await?;
    let call = match qtc_mail::Callsign::parse(f.call.trim()) {
        Ok(c) => c.base().to_string(),
        Err(e) => {
            return Ok(
                Html(pages::result(&s, "Users", &format!("error: {e}"), "/users")).into_response(),
            )
        }
    };
    if f.password.is_empty() {
        return Ok(Html(pages::result(
            &s,
            "Users",
            "error: empty password",
            "/users",
        ))
        .into_response());
    }
    let (sysop, bbs) = (f.sysop.is_some(), f.bbs.is_some());
    let r = match web.passwords.hash(f.password).await {
        Ok(hash) => {
            let c2 = call.clone();
            web.store
                .call(move |st| st.add_user_hashed(&c2, Some(&hash), sysop, bbs))
                .await
                .map_err(|_| store_down())?
        }
        Err(e) => Err(e),
    };
    let line = match r {
        Ok(()) => {
            tracing::info!(by = %s.call, %call, sysop, bbs, "web: user added");
            format!("added {call}")
        }
        Err(e) => format!("error: {e}"),
    };
    Ok(Html(pages::result(&s, "Users", &line, "/users")).into_response())
}

async fn user_action(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path(call): Path<String>,
    Form(f): Form<ActionForm>,
) -> Page {
    let s = need_csrf(&web, &headers, &f.csrf).await?;
    let call = call.to_ascii_uppercase();
    if f.action != "delete" {
        return Ok(Html(pages::result(
            &s,
            "Users",
            "error: unknown action",
            "/users",
        ))
        .into_response());
    }
    if call == s.call {
        return Ok(Html(pages::result(
            &s,
            "Users",
            "error: you cannot delete yourself while logged in",
            "/users",
        ))
        .into_response());
    }
    let c2 = call.clone();
    let r = web
        .store
        .call(move |st| st.delete_user(&c2))
        .await
        .map_err(|_| store_down())?;
    let line = match r {
        Ok(()) => {
            tracing::info!(by = %s.call, %call, "web: user deleted");
            format!("deleted {call}")
        }
        Err(e) => format!("error: {e}"),
    };
    Ok(Html(pages::result(&s, "Users", &line, "/users")).into_response())
}
