//! The sysop command line and start-up errors, through the real binary.

mod common;

use common::{cli, config_path, qtc, Daemon, BASE_CONFIG};

#[test]
fn init_writes_an_example_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let p = config_path(dir.path());
    let out = qtc().arg("init").arg(&p).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("[station]") && text.contains("callsign = \"N0CALL\""));
    // With a self-signed certificate beside it, named in [tls], its key private.
    assert!(text.contains("cert = \"qtc-cert.pem\"\nkey = \"qtc-key.pem\""));
    use std::os::unix::fs::PermissionsExt;
    let key = std::fs::metadata(dir.path().join("qtc-key.pem")).unwrap();
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let tls = said.lines().find(|l| l.starts_with("tls: certificate "));
    let fingerprint = tls.and_then(|l| l.split("SHA-256 fingerprint ").nth(1));
    let fingerprint = fingerprint.unwrap_or_else(|| panic!("no fingerprint in {said}"));
    // Refuses to overwrite.
    assert!(!qtc().arg("init").arg(&p).output().unwrap().status.success());
    // The example, with a free port, starts, and says the fingerprint init did.
    std::fs::write(&p, text.replace("127.0.0.1:6300", "127.0.0.1:0")).unwrap();
    let mut d = Daemon::start_in(dir);
    assert!(d
        .stdout
        .iter()
        .any(|l| l.contains("telnet: listening on 127.0.0.1:")));
    assert!(
        d.stdout.iter().any(|l| l.ends_with(fingerprint)),
        "{:?}",
        d.stdout
    );
    assert!(d.stop().success());
}

#[test]
fn cert_makes_the_pair_tls_names_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(config_path(dir.path()), BASE_CONFIG).unwrap();
    // No [tls]: told what to add.
    let out = cli(dir.path(), &["cert"], "");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success() && said.contains("has no [tls]"),
        "{said}"
    );
    let config = format!(
        "{BASE_CONFIG}[tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\n\
         [mail]\ndomain = \"bbs.example.org\"\n"
    );
    std::fs::write(config_path(dir.path()), config).unwrap();
    let out = cli(dir.path(), &["cert", "--name", "qtc.example.net"], "");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        said.contains("qtc.example.net") && said.contains("bbs.example.org"),
        "{said}"
    );
    let check = cli(dir.path(), &["check"], "");
    let checked = String::from_utf8_lossy(&check.stdout).into_owned();
    let fingerprint = |t: &str| t.lines().find(|l| l.starts_with("tls: ")).map(String::from);
    assert_eq!(fingerprint(&checked), fingerprint(&said), "{checked}");
    // Never over an existing pair.
    let again = cli(dir.path(), &["cert"], "");
    let said = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(
        !again.status.success() && said.contains("exists already"),
        "{said}"
    );
}

fn start_error(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(config_path(dir.path()), config).unwrap();
    let out = cli(dir.path(), &["run"], "");
    assert!(!out.status.success());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn start_up_errors_name_the_file_key_and_fix() {
    let e = start_error("[station]\ncallsign = \"NOCALL\"\n");
    assert!(
        e.contains("qtc.toml: [station] callsign") && e.contains("digit"),
        "{e}"
    );
    let e = start_error("[telnet]\nlisten = [\"127.0.0.1:0\"]\nlisen = 1\n");
    assert!(e.contains("unknown field `lisen`"), "{e}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let e = start_error(&format!("[telnet]\nlisten = [\"127.0.0.1:{port}\"]\n"));
    assert!(
        e.contains(&format!(
            "cannot listen on 127.0.0.1:{port} ([telnet] listen in"
        )),
        "{e}"
    );
}

#[test]
fn users_are_managed_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(config_path(dir.path()), BASE_CONFIG).unwrap();
    let ok = |args: &[&str], stdin: &str| {
        let out = cli(dir.path(), args, stdin);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    ok(&["user", "add", "n0abc", "--sysop"], "first\n");
    ok(&["user", "add", "N0BBB", "--bbs", "--password", "fwd"], "");
    let list = ok(&["user", "list"], "");
    assert!(list.contains("N0ABC    yes"), "{list}");
    assert!(list.contains("N0BBB          yes"), "{list}");
    let dup = cli(dir.path(), &["user", "add", "N0ABC", "--password", "x"], "");
    assert!(String::from_utf8_lossy(&dup.stderr).contains("exists already"));
    let bad = cli(dir.path(), &["user", "add", "ABC", "--password", "x"], "");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("digit"));
    ok(
        &["user", "set", "N0BBB", "--sysop", "true", "--bbs", "false"],
        "",
    );
    let list = ok(&["user", "list"], "");
    assert!(list.contains("N0BBB    yes"), "{list}");
    let none = cli(dir.path(), &["user", "set", "N0BBB"], "");
    assert!(String::from_utf8_lossy(&none.stderr).contains("--sysop"));
    ok(&["user", "passwd", "N0ABC"], "second\n");
    ok(&["user", "del", "N0BBB"], "");
    assert!(!ok(&["user", "list"], "").contains("N0BBB"));

    // The new password works over telnet, the old one does not.
    let d = Daemon::start_in(dir);
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send("N0ABC");
    c.expect("Password:");
    c.send("first");
    c.expect("Login incorrect.");
    c.expect("Callsign:");
    c.send("N0ABC");
    c.expect("Password:");
    c.send("second");
    c.expect("de N0CALL>");
}

#[test]
fn msg_commands_report_missing_messages() {
    let d = Daemon::start("");
    let out = d.cli(&["msg", "show", "42"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no message #42"));
    let out = d.cli(&["msg", "kill", "42"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no message #42"));
}

#[test]
fn import_stores_and_queues_messages() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        config_path(dir.path()),
        format!("{BASE_CONFIG}[[partner]]\ncallsign = \"N0BBB\"\nroutes = [\"WW\"]\n"),
    )
    .unwrap();
    let file = dir.path().join("in.txt");
    std::fs::write(
        &file,
        b"SB ALL @ WW < N0ABC $B1_N0ABC\nFirst\nbody \xff\n/EX\nSP N0USR\nLocal\nhi\n/EX\nSB ALL @ WW $B1_N0ABC\nDup\nx\n/EX\n",
    )
    .unwrap();
    let out = cli(dir.path(), &["msg", "import", file.to_str().unwrap()], "");
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 2 of 3"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("B1_N0ABC"));
    let q = cli(dir.path(), &["fwd", "queue"], "");
    let q = String::from_utf8_lossy(&q.stdout);
    assert!(
        q.contains("N0BBB") && q.contains("B1_N0ABC") && q.contains("1 queued"),
        "{q}"
    );
    let bad = cli(dir.path(), &["msg", "import", "-"], "SP N0USR\nno end\n");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("line 1: message not ended by /EX"));
}

#[test]
fn check_warns_about_a_partner_called_without_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let partner = |call: &str, pw: &str| {
        format!("[[partner]]\ncallsign = \"{call}\"\nconnect = \"tcp:127.0.0.1:6301\"\npassword = \"{pw}\"\n")
    };
    let text = format!(
        "{BASE_CONFIG}{}{}",
        partner("N0BPQ", ""),
        partner("N0FBB", "pw")
    );
    std::fs::write(config_path(dir.path()), text).unwrap();
    let out = cli(dir.path(), &["check"], "");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("warning: partner N0BPQ: connect is set but password is empty"),
        "{text}"
    );
    assert!(!text.contains("partner N0FBB: connect"), "{text}");
}

/// Issue 36: qtc cannot know a KISS modem's speed; a port that does not say it is reported
/// with the guess and the key to set, one that does with its speed, AXUDP with neither.
#[test]
fn check_says_when_a_modem_speed_is_a_guess() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{BASE_CONFIG}[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:8001\"\n\
         [[port]]\nname = \"hf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:8002\"\n\
         modem_baud = 300\n\
         [[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:10093\"\n"
    );
    std::fs::write(config_path(dir.path()), text).unwrap();
    let out = cli(dir.path(), &["check"], "");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("radio: {name} ")))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"))
            .to_string()
    };
    let vhf = line("vhf");
    assert!(
        vhf.contains("modem speed not set: assumed 1200 bit/s") && vhf.contains("modem_baud"),
        "{vhf}"
    );
    assert!(line("hf").ends_with(", modem 300 bit/s"), "{text}");
    assert!(!line("udp").contains("modem"), "{text}");
}

#[test]
fn every_command_finds_its_config_by_one_rule_and_names_the_store_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("station-data");
    std::fs::write(
        config_path(dir.path()),
        BASE_CONFIG.replace(
            "[store]\n",
            &format!("[store]\ndir = \"{}\"\n", data.display()),
        ),
    )
    .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        qtc()
            .args(args)
            .current_dir(elsewhere.path())
            .env("QTC_CONFIG", config_path(dir.path()))
            .output()
            .unwrap()
    };
    // $QTC_CONFIG without -c: the user lands in the configured store, which is named.
    let out = run(&["user", "add", "N0ENV", "--password", "pw"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("store {}", data.join("qtc.sqlite").display()))
            && said.contains(&format!("config: {}", config_path(dir.path()).display())),
        "{said}"
    );
    assert!(!elsewhere.path().join("qtc-data").exists());
    let listed = run(&["user", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("N0ENV"));
    // Reading says nothing about the store.
    assert!(listed.stderr.is_empty(), "{listed:?}");

    // Neither -c nor $QTC_CONFIG nor /etc/qtc/qtc.toml: the built-in defaults, named too.
    if !std::path::Path::new("/etc/qtc/qtc.toml").exists() {
        let out = qtc()
            .args(["user", "add", "N0DEF", "--password", "pw"])
            .current_dir(elsewhere.path())
            .env_remove("QTC_CONFIG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("qtc-data/qtc.sqlite (config: built-in defaults)"),
            "{said}"
        );
        assert!(elsewhere.path().join("qtc-data/qtc.sqlite").exists());
    }
}

/// A store with `n` bulletins queued for N0BBB: enough that a listing outgrows a pipe's buffer.
fn many_messages(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        config_path(dir.path()),
        format!("{BASE_CONFIG}[[partner]]\ncallsign = \"N0BBB\"\nroutes = [\"WW\"]\n"),
    )
    .unwrap();
    let file = dir.path().join("in.txt");
    let text: String = (0..n)
        .map(|i| format!("SB ALL @ WW < N0ABC\nBulletin {i}\nbody\n/EX\n"))
        .collect();
    std::fs::write(&file, text).unwrap();
    let out = cli(dir.path(), &["msg", "import", file.to_str().unwrap()], "");
    assert!(out.status.success(), "{out:?}");
    dir
}

#[test]
fn a_reader_that_stops_early_ends_the_listing_quietly() {
    let dir = many_messages(3000);
    for cmd in ["fwd queue", "msg list", "msg list --json"] {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -o pipefail; '{}' -c '{}' {cmd} | head -1",
                env!("CARGO_BIN_EXE_qtc"),
                config_path(dir.path()).display()
            ))
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
        assert!(out.stderr.is_empty(), "{cmd}: {out:?}");
    }
}

#[test]
fn msg_list_filters_and_kill_takes_numbers_and_ranges() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(config_path(dir.path()), BASE_CONFIG).unwrap();
    let file = dir.path().join("in.txt");
    std::fs::write(
        &file,
        "SB ALL @ WW < N0ABC\nOne\nx\n/EX\nSP N0USR < N0ABC\nTwo\nx\n/EX\n\
         SB ALL @ EU < N0XYZ\nThree\nx\n/EX\nSP N0OTH < N0XYZ\nFour\nx\n/EX\nSB ALL @ WW < N0XYZ\nFive\nx\n/EX\n",
    )
    .unwrap();
    let out = cli(dir.path(), &["msg", "import", file.to_str().unwrap()], "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 5 of 5 messages"));
    let list = |args: &[&str]| -> Vec<u64> {
        let mut all = vec!["msg", "list", "--json"];
        all.extend_from_slice(args);
        let out = cli(dir.path(), &all, "");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["number"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(list(&[]), [5, 4, 3, 2, 1]);
    assert_eq!(list(&["--type", "P"]), [4, 2]);
    assert_eq!(list(&["--from", "n0xyz", "--type", "b"]), [5, 3]);
    assert_eq!(list(&["--to", "N0USR"]), [2]);
    assert_eq!(list(&["--at", "WW"]), [5, 1]);
    assert_eq!(list(&["--limit", "2"]), [5, 4]);
    assert_eq!(list(&["--since", "1h"]).len(), 5);
    assert!(!cli(dir.path(), &["msg", "list", "--type", "X"], "")
        .status
        .success());

    let out = cli(dir.path(), &["msg", "kill", "1", "3-4"], "");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with("3 messages killed\n"),
        "{out:?}"
    );
    assert_eq!(list(&["--status", "K"]), [4, 3, 1]);
    assert_eq!(list(&["--status", "N"]), [5, 2]);
    let out = cli(dir.path(), &["msg", "kill", "5", "40-45"], "");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no message #40-45 (1 message killed)"),
        "{out:?}"
    );
    assert!(!cli(dir.path(), &["msg", "kill", "9-2"], "")
        .status
        .success());
}

#[test]
fn msg_hold_keeps_a_message_from_users_and_partners_until_released() {
    let d = Daemon::start("");
    let mut c = d.login("N0OTH", "x");
    c.send("SB ALL");
    c.expect("Subject:");
    c.send("doubtful");
    c.expect("Enter message");
    c.send("text\r\n/EX");
    c.expect("de N0CALL>");
    let out = d.cli(&["msg", "hold", "1"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("message #1 held"));
    let mut u = d.login("N0USR", "pw");
    u.send("LB");
    assert!(u.expect("de N0CALL>").contains("No messages."));
    // Twice, or a message that is not there: said so.
    let out = d.cli(&["msg", "hold", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no message #1 to hold"));
    assert!(d.cli(&["msg", "release", "1"]).status.success());
    u.send("LB");
    assert!(u.expect("de N0CALL>").contains("doubtful"));
}

/// The README's commands work as written: the quick start's daemon keeps its log out of the
/// terminal the user then runs `telnet` in, and on a packaged install `qtc check` runs as the
/// `qtc` user, who can read the config (root:qtc 0640).
#[test]
fn the_readmes_commands_work_in_their_order() {
    let readme = include_str!("../../../README.md");
    let run = readme
        .lines()
        .find(|l| l.contains("qtc run") && l.trim_end().contains(" &"))
        .expect("the quick start's `qtc run &`");
    assert!(
        run.contains("2>"),
        "the log would go into the telnet terminal: {run}"
    );
    for line in readme.lines().filter(|l| l.contains("qtc check")) {
        let line = line.trim();
        if line.starts_with("qtc check") || line.contains("&& qtc check") {
            panic!("the packaged config is root:qtc 0640: {line}");
        }
    }
}

/// A config only its owner and group may read: the error says how to run qtc (tests run as
/// root, so the check is made as nobody, with util-linux `setpriv`).
#[test]
fn an_unreadable_config_says_to_run_qtc_as_its_user() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_path(dir.path());
    std::fs::write(&path, BASE_CONFIG).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_qtc"))
        .arg("-c")
        .arg(&path)
        .arg("check")
        .output()
        .expect("setpriv (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("Permission denied") && err.contains("sudo -u qtc"),
        "{err}"
    );
}
