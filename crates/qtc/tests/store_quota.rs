//! The store's default quota on a small disk (a 20 MB tmpfs, mounted by the test: it needs
//! root, as CI has): worked out from the free space again as the disk fills and empties, not
//! once at start; and `qtc store check` works on a full disk.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Daemon;

/// A tmpfs of `mb` megabytes mounted on a fresh directory, unmounted when dropped (the
/// directory, kept in the second field, goes after it).
struct Tmpfs(PathBuf, #[allow(dead_code)] tempfile::TempDir);

impl Tmpfs {
    fn new(mb: u32) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("disk");
        std::fs::create_dir(&at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"])
            .arg(&at)
            .status()
            .expect("mount");
        assert!(ok.success(), "mount a tmpfs (needs root)");
        Tmpfs(at, dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The `store:` line of `qtc ctl status`.
fn store_line(d: &Daemon) -> String {
    let status = d.ctl(&["status"]);
    status
        .lines()
        .find(|l| l.starts_with("store:"))
        .unwrap_or_else(|| panic!("{status}"))
        .to_string()
}

/// The quota `store:` names, in MB.
fn quota_mb(line: &str) -> f64 {
    let of = line
        .split(" of ")
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"));
    let mut w = of.split_whitespace();
    let n: f64 = w.next().unwrap().parse().unwrap();
    match w.next().unwrap() {
        "KB" => n / 1e3,
        "MB" => n,
        "GB" => n * 1e3,
        u => panic!("unit {u} in {line}"),
    }
}

/// Writes zeros to `path` until the disk is full.
fn fill(path: &Path) {
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k"])
        .arg(format!("of={}", path.display()))
        .stderr(std::process::Stdio::null())
        .status();
}

/// A daemon with its store on `disk`, users N0USR/pw and N0OTH/x, and `extra` config.
fn on_disk(disk: &Tmpfs, extra: &str) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        common::config_path(dir.path()),
        format!(
            "[station]\ncallsign = \"N0CALL\"\n[store]\ndir = \"{}/data\"\n\
             [telnet]\nlisten = [\"127.0.0.1:0\"]\n{extra}",
            disk.0.display()
        ),
    )
    .unwrap();
    for (call, pw) in [("N0USR", "pw"), ("N0OTH", "x")] {
        let out = common::cli(dir.path(), &["user", "add", call, "--password", pw], "");
        assert!(out.status.success(), "{out:?}");
    }
    Daemon::start_in(dir)
}

/// Sends a message of 40 lines of random characters: the store keeps text compressed, and a
/// repeated line would shrink to a few bytes that fit in pages the file has already.
fn send(d: &Daemon, subject: &str) -> String {
    let mut c = d.login("N0USR", "pw");
    c.send("SP N0OTH");
    c.expect("Subject:");
    c.send(subject);
    c.expect("Enter message");
    c.send(&random_text(subject));
    c.send("/EX");
    c.expect("de N0CALL>")
}

/// 40 lines of random characters (seeded by `subject`), CR LF ended.
fn random_text(subject: &str) -> String {
    let mut x = (subject.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut body = String::new();
    for _ in 0..40 {
        for _ in 0..60 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            body.push(char::from(b'a' + (x % 26) as u8));
        }
        body.push_str("\r\n");
    }
    body
}

#[test]
fn a_small_disk_gives_the_store_room_measured_again_as_space_comes_and_goes() {
    let disk = Tmpfs::new(20);
    let mut d = on_disk(&disk, "");
    // Most of the 20 MB disk (it came out as 0 MiB: 64 MiB were kept free).
    let line = store_line(&d);
    assert!(quota_mb(&line) > 10.0, "{line}");
    assert!(send(&d, "first").contains("stored"));
    // Another program fills the disk: the quota follows, and a message is refused cleanly.
    let other = disk.0.join("other");
    fill(&other);
    let out = send(&d, "on a full disk");
    assert!(out.contains("The message store is full"), "{out}");
    assert!(quota_mb(&store_line(&d)) < 1.0, "{}", store_line(&d));
    // Space freed: taken at once, no restart.
    std::fs::remove_file(&other).unwrap();
    assert!(send(&d, "after the space came back").contains("stored"));
    assert!(quota_mb(&store_line(&d)) > 10.0, "{}", store_line(&d));
    // A stopped daemon's full store is still checked.
    assert!(d.stop().success());
    fill(&other);
    let out = d.cli(&["store", "check"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("is consistent"));
}

/// Sends a message over SMTP (AUTH PLAIN as N0USR); the answer to its end.
fn smtp_send(d: &Daemon, subject: &str) -> String {
    let mut c = common::Client::connect(d.listener_port("smtp"));
    c.expect("220 ");
    c.send("EHLO me");
    c.expect("250 ");
    c.send("AUTH PLAIN AE4wVVNSAHB3");
    c.expect("235 ");
    c.send("MAIL FROM:<n0usr@n0call>");
    c.expect("250 ");
    c.send("RCPT TO:<n0oth@n0call>");
    c.expect("250 ");
    c.send("DATA");
    c.expect("354 ");
    c.send(&format!(
        "Subject: {subject}\r\n\r\n{}.",
        random_text(subject)
    ));
    c.expect_either("250 2.0.0 Stored", "452 4.3.1")
}

/// A message from a mail client (SMTP, NNTP) measures the store's room again, as one typed
/// at the prompt does (before, SMTP and NNTP submissions kept the quota as it was last
/// measured: once it came down on a full disk, they were refused until a user at the prompt
/// sent one).
#[test]
fn a_mail_clients_message_measures_the_room_again() {
    let disk = Tmpfs::new(20);
    let mail = "[mail]\nsmtp_listen = \"127.0.0.1:0\"\nnntp_listen = \"127.0.0.1:0\"\n";
    let d = on_disk(&disk, mail);
    let out = smtp_send(&d, "first");
    assert!(out.contains("Stored"), "{out}\n{}", d.log());
    let out = nntp_post(&d, "first post");
    assert!(out.ends_with("240"), "{out}\n{}", d.log());
    let other = disk.0.join("other");
    fill(&other);
    let out = smtp_send(&d, "on a full disk");
    assert!(out.ends_with("452 4.3.1"), "{out}");
    let out = nntp_post(&d, "posted on a full disk");
    assert!(out.ends_with("441 the message store is full"), "{out}");
    // A message at the prompt measures the full disk: the quota comes down to nothing.
    assert!(send(&d, "at the prompt").contains("The message store is full"));
    assert!(quota_mb(&store_line(&d)) < 1.0, "{}", store_line(&d));
    // Space freed: the mail client's next message measures it again and is taken.
    std::fs::remove_file(&other).unwrap();
    let out = smtp_send(&d, "after the space came back");
    assert!(out.ends_with("250 2.0.0 Stored"), "{out}\n{}", d.log());
    // The same for a news reader's post, after the prompt measured the full disk again.
    fill(&other);
    assert!(send(&d, "full again").contains("The message store is full"));
    std::fs::remove_file(&other).unwrap();
    let out = nntp_post(&d, "posted after the space came back");
    assert!(out.ends_with("240"), "{out}\n{}", d.log());
}

/// Posts a bulletin over NNTP (AUTHINFO as N0USR); the answer to it.
fn nntp_post(d: &Daemon, subject: &str) -> String {
    let mut c = common::Client::connect(d.listener_port("nntp"));
    c.expect("200 ");
    c.send("AUTHINFO USER N0USR");
    c.expect("381 ");
    c.send("AUTHINFO PASS pw");
    c.expect("281 ");
    c.send("POST");
    c.expect("340 ");
    c.send(&format!(
        "Newsgroups: wx.ww\r\nSubject: {subject}\r\n\r\n{}.",
        random_text(subject)
    ));
    c.expect_either("240", "441 the message store is full")
}
