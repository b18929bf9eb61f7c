//! `qtc ctl status --json`: a radio port's device going down when its KISS TCP peer goes away
//! and up again when it comes back, with the time it changed and when qtc retries.
#![allow(clippy::disallowed_methods)]

mod common;

use std::net::TcpListener;
use std::time::Instant;

use common::{Daemon, PATIENCE};

/// Waits for the daemon's `nth` word that the port "vhf" opened (`up`) or went down, then asks
/// for the status until it shows that (the port notes the change just after it logs it);
/// returns that port's object.
fn port_when(d: &Daemon, up: bool, nth: usize) -> serde_json::Value {
    let said = if up { "device open" } else { "device down" };
    d.wait_for_log_count(&format!("{said} port=vhf"), nth);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let status: serde_json::Value =
            serde_json::from_str(&d.ctl(&["status", "--json"])).unwrap();
        let port = status["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "vhf")
            .cloned()
            .unwrap();
        if port["up"] == up {
            return port;
        }
        assert!(
            Instant::now() < deadline,
            "port never {}: {port}\n--- log ---\n{}",
            if up { "up" } else { "down" },
            d.log()
        );
    }
}

#[test]
fn a_radio_port_shows_down_and_up_as_its_kiss_peer_goes_and_comes_back() {
    let tnc = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = tnc.local_addr().unwrap();
    let d = Daemon::start_bbs(
        "N0BBB",
        &[],
        &format!("[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"{addr}\"\n"),
    );
    let (conn, _) = tnc.accept().unwrap();
    let up = port_when(&d, true, 1);
    assert!(up["reason"].is_null() && up["next_retry"].is_null(), "{up}");
    assert_eq!(up["heard"], 0);

    // The TNC goes away: the connection closes and nothing listens any more.
    drop(conn);
    drop(tnc);
    let down = port_when(&d, false, 1);
    assert_eq!(down["reason"], "the far end hung up", "{down}");
    assert!(down["since"].as_i64() >= up["since"].as_i64());
    assert!(
        down["next_retry"].as_i64() >= down["since"].as_i64(),
        "{down}"
    );
    let text = d.ctl(&["status"]);
    assert!(
        text.contains("vhf      DOWN since") && text.contains("the far end hung up"),
        "{text}"
    );

    // It comes back on the same address: qtc's next retry finds it.
    let tnc = TcpListener::bind(addr).unwrap();
    let (_conn, _) = tnc.accept().unwrap();
    let again = port_when(&d, true, 2);
    assert!(again["since"].as_i64() >= down["since"].as_i64(), "{again}");
    let status: serde_json::Value = serde_json::from_str(&d.ctl(&["status", "--json"])).unwrap();
    assert!(status["store"]["bytes"].as_u64() > Some(0), "{status}");
    assert!(status["partners"].as_array().unwrap().is_empty());
}
