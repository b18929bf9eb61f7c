//! The web in a real browser: headless Chromium driven over WebDriver (chromedriver), with a
//! plain TCP client. A user logs in with the BBS password, writes to the sysop, reads the
//! sysop's reply (sent over telnet) and kills it; the sysop looks at every page. Screenshots
//! of each page at 1280 and 390 px wide go to target/web-screenshots/ (their paths printed). Skipped (with a note) when Debian's
//! `chromium` and `chromium-driver` are not installed, unless QTC_REQUIRE_CHROMIUM is set.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
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
        let mut child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // It says when it listens; its output is read to the end (so it never blocks on it).
        let said = BufReader::new(child.stdout.take().unwrap());
        let (up, started) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in said.lines().map_while(Result::ok) {
                if line.starts_with("ChromeDriver was started successfully") {
                    let _ = up.send(());
                }
            }
        });
        assert!(
            started.recv_timeout(PATIENCE).is_ok(),
            "chromedriver did not start"
        );
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            // How long a page's script may wait (`source_with`): the hang guard.
            "timeouts": { "script": PATIENCE.as_millis() as u64 },
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
    /// may not have finished when it answers. A script in the page waits for the text, woken
    /// by each change of the document (a MutationObserver); a navigation ends that script
    /// (an error) and the next page is asked. Gives up after PATIENCE (the script timeout).
    fn source_with(&self, text: &str) -> String {
        const WAIT: &str = "const [text, done] = arguments;\n\
            const has = () => new XMLSerializer().serializeToString(document).includes(text)\n\
              || document.documentElement.outerHTML.includes(text);\n\
            if (has()) { done(true); return; }\n\
            new MutationObserver((_, o) => { if (has()) { o.disconnect(); done(true); } })\n\
              .observe(document, { subtree: true, childList: true, characterData: true });";
        let path = format!("/session/{}/execute/async", self.session);
        let wait = json!({ "script": WAIT, "args": [text] });
        let deadline = Instant::now() + PATIENCE;
        loop {
            let shown = http_json(self.port, "POST", &path, Some(&wait)).unwrap();
            let s = self.source();
            if (shown["value"] == true && s.contains(text)) || Instant::now() > deadline {
                return s;
            }
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

/// Window sizes the screenshots are taken at: a desktop and a phone (390x844).
const WIDE: (u32, u32) = (1280, 900);
const PHONE: (u32, u32) = (390, 844);

impl Driver {
    fn resize(&self, (width, height): (u32, u32)) {
        self.cmd(
            "POST",
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        );
    }

    /// Runs a script of the test's own in the page (the pages have none).
    fn script(&self, js: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({ "script": js, "args": [] })),
        )
    }

    /// Screenshots of the page at both widths, `NAME-1280.png` and `NAME-390.png`; at the
    /// phone's width the page must not be wider than the screen (tables scroll in their box).
    fn shots(&self, name: &str) {
        for (size, tag) in [(WIDE, "1280"), (PHONE, "390")] {
            self.resize(size);
            let p = self.screenshot(&format!("{name}-{tag}.png"));
            println!("screenshot: {}", p.canonicalize().unwrap_or(p).display());
            let (page, screen) = (
                self.script("return document.documentElement.scrollWidth;"),
                self.script("return document.documentElement.clientWidth;"),
            );
            assert!(
                page.as_u64() <= screen.as_u64(),
                "{name} at {tag}: page {page} px wide on a {screen} px screen"
            );
            let header = self.script(
                "return document.querySelector('header') ? \
                 document.querySelector('header').getBoundingClientRect().width : 0;",
            );
            assert!(
                header.as_f64().unwrap_or(0.0) >= screen.as_f64().unwrap_or(0.0) - 1.0,
                "{name} at {tag}: the header is {header} px on a {screen} px screen"
            );
        }
        self.resize(WIDE);
    }

    /// Whether the element `css` ends within the screen's width (not off to the right in a
    /// table that scrolls).
    fn within_width(&self, css: &str) -> bool {
        let js = format!(
            "return document.querySelector(\"{css}\").getBoundingClientRect().right \
             <= document.documentElement.clientWidth;"
        );
        self.script(&js).as_bool().unwrap_or(false)
    }

    fn log_in(&self, base: &str, call: &str, password: &str) {
        self.go(&format!("{base}/login"));
        self.type_in("input[name=call]", call);
        self.type_in("input[name=password]", password);
        self.click("form button");
    }
}

#[test]
fn web_mail_and_dashboard_in_headless_chromium() {
    if !Path::new(CHROMEDRIVER).exists() || !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("QTC_REQUIRE_CHROMIUM").is_none(),
            "QTC_REQUIRE_CHROMIUM is set but chromium/chromedriver are missing"
        );
        eprintln!("skipped: apt-get install chromium chromium-driver to run it");
        return;
    }
    let d = Daemon::start(
        "[web]\nlisten = \"127.0.0.1:0\"\n[[partner]]\ncallsign = \"N0BBB\"\nroutes = [\"WW\"]\n\
         interval = \"1h\"\n",
    );
    let port = d.web_port();
    let mut c = d.login("N0OTH", "x");
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
    b.resize(WIDE);
    // A user logs in with the BBS password and writes to the sysop.
    b.go(&format!("{base}/"));
    assert!(b.source().contains("<h1>Log in</h1>"), "{}", b.source());
    b.shots("login");
    b.log_in(&base, "N0USR", "pw");
    let mail = b.source_with("<h1>Mail</h1>");
    assert!(mail.contains("Club meeting Friday"), "{mail}");
    b.shots("user-mail");
    b.resize(PHONE);
    assert!(
        b.within_width("#messages td[data-label='St']"),
        "a user's mail status is off the screen at 390 px"
    );
    b.resize(WIDE);
    b.click("header a[href='/compose']");
    b.source_with("<h1>Compose</h1>");
    b.type_in("#to", "N0SYS");
    b.type_in("#subject", "Antenna question");
    b.type_in("#body", "Which coax do you use?\nThanks, Pat");
    b.shots("compose");
    b.click("#send");
    let sent = b.source_with("stored, BID");
    assert!(sent.contains("Message #2 stored, BID 2_N0CALL."), "{sent}");

    // The sysop answers over telnet.
    let mut sys = d.login("N0SYS", "root");
    sys.send("R 2");
    sys.expect("Which coax do you use?");
    sys.send("SR");
    sys.expect("Enter message");
    sys.send("RG-213, with N connectors.");
    sys.send("/EX");
    sys.expect("de N0CALL>");

    // The user reads the reply on the web.
    b.go(&format!("{base}/messages"));
    let mail = b.source_with("Re: Antenna question");
    assert!(mail.contains("Re: Antenna question"), "{mail}");
    b.click("a[href='/messages/3']");
    let reply = b.source_with("RG-213");
    assert!(reply.contains("RG-213, with N connectors."), "{reply}");
    assert!(
        !reply.contains("R:"),
        "a user sees no routing lines: {reply}"
    );
    b.shots("user-message");
    // Kill it: asked again first.
    b.click("form[action='/messages/3'] input[value=kill] + button");
    let q = b.source_with("id=\"question\"");
    assert!(q.contains("Kill message #3"), "{q}");
    b.shots("confirm-kill");
    b.click("button.danger");
    let done = b.source_with("kill done");
    assert!(done.contains("kill done"), "{done}");
    // The BBS in the browser: the user's own session over the WebSocket, no second login.
    b.click("header a[href='/terminal']");
    let term = b.source_with("de N0CALL&gt;");
    assert!(term.contains("Hello N0USR"), "{term}");
    b.type_in("#input", "LL 1");
    b.click("#line button");
    // The newest message this user may read: their own to the sysop (the reply is killed).
    let listed = b.source_with("Antenna question\nde N0CALL&gt;");
    assert!(
        listed.contains("LL 1\nMsg#") && listed.contains("Antenna question\nde N0CALL&gt;"),
        "what was typed, then the listing: {listed}"
    );
    b.shots("terminal");
    b.type_in("#input", "B");
    b.click("#line button");
    b.source_with("disconnected");
    b.click("header form button");
    b.source_with("<h1>Log in</h1>");

    // The sysop's pages.
    b.log_in(&base, "N0SYS", "root");
    let home = b.source_with("<h1>Overview</h1>");
    assert!(home.contains("id=\"traffic\""), "{home}");
    b.shots("overview");
    for (path, title, name) in [
        ("/messages", "<h1>Messages</h1>", "messages"),
        (
            "/messages?kind=B",
            "Club meeting Friday",
            "messages-filtered",
        ),
        ("/messages/2", "Which coax", "message"),
        ("/forwarding", "<h1>Forwarding</h1>", "forwarding"),
        ("/status", "<h1>Status</h1>", "status"),
        ("/users", "<h1>Users</h1>", "users"),
        ("/users/N0USR", "<h1>User N0USR</h1>", "user-edit"),
        ("/compose?reply=2", "Re: Antenna question", "sysop-reply"),
        ("/config", "<h1>Configuration</h1>", "config"),
        ("/housekeeping", "<h1>Housekeeping</h1>", "housekeeping"),
        ("/wp", "<h1>White pages</h1>", "wp"),
        ("/terminal", "de N0CALL&gt;", "sysop-terminal"),
    ] {
        b.go(&format!("{base}{path}"));
        let page = b.source_with(title);
        assert!(page.contains(title), "{path}: {page}");
        b.shots(name);
    }
    // Forward now with a partner that only calls us: the result, then the history.
    b.go(&format!("{base}/forwarding"));
    b.click("form[action='/forward'] button");
    let r = b.source_with("id=\"result\"");
    assert!(r.contains("error: N0BBB"), "{r}");
    b.go(&format!("{base}/forwarding"));
    let f = b.source_with("<h3>N0BBB</h3>");
    assert!(f.contains("<h3>N0BBB</h3>"), "{f}");
    b.shots("forwarding-history");
    // On a phone the button and the partner's state are on the screen, not off to the right.
    b.resize(PHONE);
    for css in [
        "form[action='/forward'] button",
        "#partners td[data-label='Queued']",
        "#partners td[data-label='Last']",
    ] {
        assert!(b.within_width(css), "{css} is off the screen at 390 px");
    }
    // Everything a sysop acts on fits the width: a message's status, a partner's next call
    // and Forward now on Status, the configuration's buttons, housekeeping's Run now.
    for (path, title, css) in [
        (
            "/messages",
            "<h1>Messages</h1>",
            "#messages td[data-label='St']",
        ),
        (
            "/status",
            "<h1>Status</h1>",
            "#status-partners td[data-label='Next call']",
        ),
        (
            "/status",
            "<h1>Status</h1>",
            "#status-partners form[action='/forward'] button",
        ),
        (
            "/config",
            "<h1>Configuration</h1>",
            "#partner-1 button[value=remove]",
        ),
        (
            "/config",
            "<h1>Configuration</h1>",
            "#limits-1 button[value=save]",
        ),
        ("/housekeeping", "<h1>Housekeeping</h1>", "#run"),
    ] {
        b.go(&format!("{base}{path}"));
        b.source_with(title);
        assert!(
            b.within_width(css),
            "{path}: {css} is off the screen at 390 px"
        );
    }
    b.resize(WIDE);
    // The sysop changes the partner's interval in the browser: applied, said so.
    b.go(&format!("{base}/config"));
    b.source_with("<h1>Configuration</h1>");
    b.script("document.querySelector('#partner-1 input[name=interval]').value = '';");
    b.type_in("#partner-1 input[name=interval]", "45m");
    b.click("#partner-1 button[value=save]");
    let saved = b.source_with("id=\"result\"");
    assert!(saved.contains("Saved. Applied now: partners"), "{saved}");
    b.shots("config-saved");
    assert!(d.ctl(&["status"]).contains("calls every 45m"));
    assert!(
        d.messages()
            .iter()
            .any(|m| m.contains("\"number\":3,") && m.contains("\"status\":\"K\"")),
        "{:?}",
        d.messages()
    );
}
