//! Fuzz the callsign parsers and the R: line helpers of the mail model: no input may panic, a
//! parsed callsign is canonical (its text parses back to itself), a station call is an address
//! and an address is a station call exactly when `is_station` says so, and splitting R: lines
//! loses no byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_mail::route::{join_rlines, rline, rline_calls, split_rlines};
use qtc_callsign::Callsign;
use qtc_mail::{is_valid_bid, MAX_AT_LEN};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(call) = Callsign::parse_station(&text) {
        let shown = call.to_string();
        assert_eq!(Callsign::parse_station(&shown), Ok(call));
        assert_eq!(shown.parse::<Callsign>(), Ok(call));
        assert!(call.is_station());
        assert!((3..=6).contains(&call.base().len()));
        assert!(call.ssid() <= 15);
        assert_eq!(call.without_ssid().ssid(), 0);
    }
    if let Ok(call) = text.parse::<Callsign>() {
        let shown = call.to_string();
        assert_eq!(shown.parse::<Callsign>(), Ok(call));
        assert_eq!(Callsign::parse_station(&shown).ok(), call.is_station().then_some(call));
        assert_eq!(Callsign::from_shifted(&call.to_shifted()), Ok(call));
    }

    let (rlines, body) = split_rlines(data);
    // Nothing is lost but the blank line before a body's own `R:` line, which joining puts
    // back (as CR LF).
    let dropped = &data[rlines.len()..data.len() - body.len()];
    assert!(dropped.is_empty() || dropped == b"\r\n" || dropped == b"\n");
    assert!(dropped.is_empty() || body.trim_ascii_start().starts_with(b"R:"));
    if dropped != b"\n" {
        assert_eq!(join_rlines(rlines, body), data);
    }
    assert!(rlines.is_empty() || rlines.starts_with(b"R:"));
    for call in rline_calls(rlines) {
        assert!(!call.is_empty());
        assert!(call
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() && !b.is_ascii_lowercase()));
    }

    // Our own R: line, with an address and a BID from the input as its callers pass them: the
    // BID valid (ASCII), the address within MAX_AT_LEN bytes (the config checks no more).
    // Unrestricted, `rline` panics (route.rs `line.truncate(79)` off a char boundary, a
    // non-ASCII BID): see docs/fuzzing.md.
    if let Some((haddr, bid)) = text.split_once('$') {
        if haddr.len() <= MAX_AT_LEN && is_valid_bid(bid) {
            let line = rline(1_700_000_000, haddr, 12_345, bid);
            assert!(line.ends_with(b"\r\n"));
            assert!(line.len() <= 79 + 2);
        }
    }
});
