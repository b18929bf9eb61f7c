//! The dashboard in a real browser: headless Chromium driven over WebDriver (chromedriver),
//! with a plain TCP client. Logs in, looks at the pages, kills a message with its button, and
//! saves screenshots to target/web-screenshots/. Skipped (with a note) when Debian's
//! `chromium` and `chromium-driver` are not installed, unless QTC_REQUIRE_CHROMIUM is set.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Daemon, PATIENCE};
use serde_json::{json, Value};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Driver {
    child: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.call("DELETE", &format!("/session/{}", self.session), None);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_json(port: u16, method: &str, path: &str, body: Option<&Value>) -> std::io::Result<Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    // chromedriver keeps the connection open: read the head, then Content-Length bytes.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let body_at = loop {
        if let Some(i) = common::find(&raw, b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(Value::Null);
        }
        raw.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..body_at]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while raw.len() < body_at + len {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    Ok(serde_json::from_slice(&raw[body_at..]).unwrap_or(Value::Null))
}

impl Driver {
    fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + PATIENCE;
        while http_json(port, "GET", "/status", None)
            .ok()
            .and_then(|v| v["value"]["ready"].as_bool())
            != Some(true)
        {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", "--window-size=1100,800",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        }}});
        let v = http_json(port, "POST", "/session", Some(&caps)).unwrap();
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
            .to_string();
        Driver {
            child,
            port,
            session,
            _profile: profile,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = http_json(self.port, method, path, body.as_ref()).unwrap();
        if let Some(e) = v["value"]["error"].as_str() {
            panic!("WebDriver {method} {path}: {e}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    fn cmd(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{what}", self.session), body)
    }

    fn go(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    fn find(&self, css: &str) -> String {
        let v = self.cmd(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        v[ELEMENT].as_str().unwrap().to_string()
    }

    fn type_in(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.cmd(
            "POST",
            &format!("/element/{e}/value"),
            Some(json!({ "text": text })),
        );
    }

    fn click(&self, css: &str) {
        let e = self.find(css);
        self.cmd("POST", &format!("/element/{e}/click"), Some(json!({})));
    }

    fn source(&self) -> String {
        self.cmd("GET", "/source", None)
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The page source once it holds `text`: a click starts a navigation that the WebDriver
    /// may not have finished when it answers. Gives up after common::PATIENCE.
    fn source_with(&self, text: &str) -> String {
        let deadline = std::time::Instant::now() + common::PATIENCE;
        loop {
            let s = self.source();
            if s.contains(text) || std::time::Instant::now() > deadline {
                return s;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn screenshot(&self, name: &str) -> PathBuf {
        let b64 = self.cmd("GET", "/screenshot", None);
        let png = base64_decode(b64.as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/web-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, png).unwrap();
        p
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[test]
fn dashboard_in_headless_chromium() {
    if !Path::new(CHROMEDRIVER).exists() || !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("QTC_REQUIRE_CHROMIUM").is_none(),
            "QTC_REQUIRE_CHROMIUM is set but chromium/chromedriver are missing"
        );
        eprintln!("skipped: apt-get install chromium chromium-driver to run it");
        return;
    }
    let d = Daemon::start(
        "[web]\nlisten = \"127.0.0.1:0\"\n[[partner]]\ncallsign = \"N0BBB\"\nroutes = [\"WW\"]\n",
    );
    let port = d
        .stdout
        .iter()
        .find_map(|l| l.strip_prefix("web: listening on "))
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap();
    let mut c = d.login("N0USR", "pw");
    c.send("SB ALL @ WW");
    c.expect("Subject:");
    c.send("Club meeting Friday");
    c.expect("/EX");
    c.send("At the usual place, 19:00.");
    c.send("/EX");
    c.expect("de N0CALL>");
    c.send("B");

    let base = format!("http://127.0.0.1:{port}");
    let b = Driver::start();
    b.go(&format!("{base}/"));
    assert!(b.source().contains("Sysop login"), "{}", b.source());
    b.screenshot("login.png");
    b.type_in("input[name=call]", "N0SYS");
    b.type_in("input[name=password]", "root");
    b.click("form button");
    let home = b.source_with("<h1>Overview</h1>");
    assert!(home.contains("<h1>Overview</h1>"), "{home}");
    assert!(home.contains("N0BBB"), "{home}");
    b.screenshot("overview.png");
    b.go(&format!("{base}/messages"));
    assert!(b.source().contains("Club meeting Friday"));
    b.screenshot("messages.png");
    b.go(&format!("{base}/messages/1"));
    b.screenshot("message.png");
    b.click("form[action='/messages/1'] input[value=kill] + button");
    let done = b.source_with("kill done");
    assert!(done.contains("kill done"), "{done}");
    assert!(
        d.messages()[0].contains("\"status\":\"K\""),
        "{:?}",
        d.messages()
    );
    b.go(&format!("{base}/users"));
    assert!(b.source().contains("N0SYS"));
    b.screenshot("users.png");
}
