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

/// Sends a message of 40 lines of random characters: the store keeps text compressed, and a
/// repeated line would shrink to a few bytes that fit in pages the file has already.
fn send(d: &Daemon, subject: &str) -> String {
    let mut c = d.login("N0USR", "pw");
    c.send("SP N0OTH");
    c.expect("Subject:");
    c.send(subject);
    c.expect("Enter message");
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
    c.send(&body);
    c.send("/EX");
    c.expect("de N0CALL>")
}

#[test]
fn a_small_disk_gives_the_store_room_measured_again_as_space_comes_and_goes() {
    let disk = Tmpfs::new(20);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        common::config_path(dir.path()),
        format!(
            "[station]\ncallsign = \"N0CALL\"\n[store]\ndir = \"{}/data\"\n\
             [telnet]\nlisten = [\"127.0.0.1:0\"]\n",
            disk.0.display()
        ),
    )
    .unwrap();
    for (call, pw) in [("N0USR", "pw"), ("N0OTH", "x")] {
        let out = common::cli(dir.path(), &["user", "add", call, "--password", pw], "");
        assert!(out.status.success(), "{out:?}");
    }
    let mut d = Daemon::start_in(dir);
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
