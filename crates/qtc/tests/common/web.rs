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

/// A WebSocket client (RFC 6455, just what the tests need): the handshake with a cookie and an
/// optional `Origin`, masked text frames out, text frames in.
pub struct Ws {
    s: TcpStream,
    /// Text received and not yet taken by [`Ws::expect`].
    got: String,
}

/// The answer to a WebSocket handshake: the socket, or the HTTP refusal.
pub fn ws_connect(port: u16, path: &str, cookie: &str, origin: Option<&str>) -> Result<Ws, Reply> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n"
    );
    if !cookie.is_empty() {
        req.push_str(&format!("Cookie: {cookie}\r\n"));
    }
    if let Some(o) = origin {
        req.push_str(&format!("Origin: {o}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // The head, byte by byte: frames may follow it at once.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        if s.read(&mut b).unwrap_or(0) == 0 {
            break;
        }
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    if !head.starts_with("HTTP/1.1 101") {
        // The connection stays open (keep-alive): the body is Content-Length bytes.
        let len = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().to_string())
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        let _ = s.read_exact(&mut body);
        let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok());
        return Err(Reply {
            status: status.unwrap_or(0),
            head,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    Ok(Ws {
        s,
        got: String::new(),
    })
}

impl Ws {
    /// Sends one text frame (masked, as a client must).
    pub fn send(&mut self, text: &str) {
        let data = text.as_bytes();
        let mask = [0x12u8, 0x34, 0x56, 0x78];
        let mut f = vec![0x81u8];
        match data.len() {
            n if n < 126 => f.push(0x80 | n as u8),
            n => {
                f.push(0x80 | 126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        f.extend_from_slice(&mask);
        f.extend(data.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.s.write_all(&f).unwrap();
    }

    /// The next frame: (opcode, payload); `None` when the connection ends.
    fn frame(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 2];
        self.s.read_exact(&mut h).ok()?;
        let mut len = u64::from(h[1] & 0x7f);
        if len == 126 {
            let mut l = [0u8; 2];
            self.s.read_exact(&mut l).ok()?;
            len = u64::from(u16::from_be_bytes(l));
        } else if len == 127 {
            let mut l = [0u8; 8];
            self.s.read_exact(&mut l).ok()?;
            len = u64::from_be_bytes(l);
        }
        let mut data = vec![0u8; len as usize];
        self.s.read_exact(&mut data).ok()?;
        Some((h[0] & 0x0f, data))
    }

    /// Reads text frames until what came holds `what`; returns all of it up to there.
    pub fn expect(&mut self, what: &str) -> String {
        loop {
            if let Some(at) = self.got.find(what) {
                let upto: String = self.got.drain(..at + what.len()).collect();
                return upto;
            }
            match self.frame() {
                Some((1, text)) => self.got.push_str(&String::from_utf8(text).expect("UTF-8")),
                Some((8, _)) | None => panic!("closed before {what:?}; got {:?}", self.got),
                Some(_) => {}
            }
        }
    }

    /// Reads until the server closes; the text that came before.
    pub fn expect_close(&mut self) -> String {
        while let Some((op, data)) = self.frame() {
            match op {
                1 => self.got.push_str(&String::from_utf8_lossy(&data)),
                8 => break,
                _ => {}
            }
        }
        std::mem::take(&mut self.got)
    }
}
