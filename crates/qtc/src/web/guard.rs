//! What every web response and request goes through: the Host check (a page reached through
//! a name the sysop did not configure is refused, which stops DNS rebinding) and the headers
//! that forbid framing (clickjacking) and content sniffing.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The host names the dashboard answers to.
pub struct Hosts {
    /// `[web] hosts`, lower case; empty: IP literals and `localhost` only.
    names: Vec<String>,
}

impl Hosts {
    /// From `[web] hosts`.
    pub fn new(names: &[String]) -> Hosts {
        Hosts {
            names: names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// True when a `Host:` header value names this dashboard.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        // Strip the port: "[::1]:8080", "127.0.0.1:8080", "bbs.example:8080".
        let name = match host.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or(""),
            None => host.rsplit_once(':').map_or(host.as_str(), |(n, _)| n),
        };
        if self.names.is_empty() {
            // An IP literal cannot be rebound to another address by DNS.
            return name == "localhost" || name.parse::<std::net::IpAddr>().is_ok();
        }
        self.names.iter().any(|n| n == name)
    }
}

/// Refuses a request whose Host is not ours; adds the security headers to every answer.
pub async fn guard(State(hosts): State<Arc<Hosts>>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("");
    let mut r = if hosts.allows(host) {
        next.run(req).await
    } else {
        tracing::warn!(host = %qtc_mail::text::visible_line(host), "web: refused: Host not in [web] hosts");
        (
            StatusCode::MISDIRECTED_REQUEST,
            "This dashboard does not answer to that host name ([web] hosts).\n",
        )
            .into_response()
    };
    let h = r.headers_mut();
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("frame-ancestors 'none'"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_by_default_and_configured() {
        let any = Hosts::new(&[]);
        for ok in ["127.0.0.1:8080", "[::1]:8080", "localhost:1", "10.0.0.5"] {
            assert!(any.allows(ok), "{ok}");
        }
        assert!(!any.allows("attacker.example:8080"));
        assert!(!any.allows(""));
        let named = Hosts::new(&["BBS.example.org".into()]);
        assert!(named.allows("bbs.example.org:8080"));
        assert!(!named.allows("127.0.0.1:8080"));
    }
}
