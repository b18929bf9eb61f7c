//! The web over real HTTP/1.1 on loopback: one request per connection, the login form.

use std::io::{Read, Write};
use std::net::TcpStream;

use super::PATIENCE;

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    /// The value of the first `Set-Cookie` for `name`.
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            if !k.eq_ignore_ascii_case("set-cookie") {
                return None;
            }
            let v = v.trim();
            let first = v.split(';').next()?;
            let (n, val) = first.split_once('=')?;
            (n == name).then(|| val.to_string())
        })
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    /// The CSRF token in the page's first form.
    pub fn csrf(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .expect("a csrf field")
            + 19;
        self.body[at..at + 32].to_string()
    }
}

/// One HTTP/1.1 request with `Connection: close`.
pub fn http(port: u16, method: &str, path: &str, cookie: &str, form: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    if !cookie.is_empty() {
        req.push_str(&format!("Cookie: {cookie}\r\n"));
    }
    if method == "POST" {
        req.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            form.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(form);
    s.write_all(req.as_bytes()).unwrap();
    reply(&mut s)
}

/// Logs in through the form; returns the session cookie header value.
pub fn login(port: u16, call: &str, pw: &str) -> Result<String, Reply> {
    let form = http(port, "GET", "/login", "", "");
    assert_eq!(form.status, 200, "{}", form.body);
    let pre = form.cookie("qtc_login").expect("a login cookie");
    let token = form.csrf();
    assert_eq!(pre, token);
    let r = http(
        port,
        "POST",
        "/login",
        &format!("qtc_login={pre}"),
        &format!("csrf={token}&call={call}&password={pw}"),
    );
    match r.cookie("qtc_session") {
        Some(id) if r.status == 303 => {
            let set = r.header("set-cookie").unwrap();
            assert!(
                set.contains("HttpOnly") && set.contains("SameSite=Strict"),
                "{set}"
            );
            assert_eq!(id.len(), 32);
            Ok(format!("qtc_session={id}"))
        }
        _ => Err(r),
    }
}

/// A form post with the session's token.
pub fn post(port: u16, cookie: &str, csrf: &str, path: &str, form: &str) -> Reply {
    http(port, "POST", path, cookie, &format!("csrf={csrf}&{form}"))
}

/// A `multipart/form-data` post (what the compose page sends): text `fields`, then `files`
/// as parts named `attachment`, each (file name, bytes).
pub fn post_multipart(
    port: u16,
    cookie: &str,
    path: &str,
    fields: &[(&str, &str)],
    files: &[(&str, &[u8])],
) -> Reply {
    let boundary = "----qtcTestBoundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (k, v) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    for (name, data) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"attachment\"; \
                 filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: {cookie}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    // A refusal may come (and the connection close) before the whole body is sent.
    let _ = s.write_all(&body);
    reply(&mut s)
}

/// Reads a whole answer.
fn reply(s: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// A GET whose answer is bytes (a download): (head, body bytes).
pub fn download(port: u16, path: &str, cookie: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: {cookie}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let end = super::find(&raw, b"\r\n\r\n").unwrap();
    let body = raw.split_off(end + 4);
    (String::from_utf8_lossy(&raw).into_owned(), body)
}
