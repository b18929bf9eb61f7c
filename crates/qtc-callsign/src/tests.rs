use super::*;
use proptest::prelude::*;

fn call(s: &str) -> Callsign {
    s.parse().unwrap()
}

#[test]
fn address_parse_display() {
    let c = call("N0CALL-7");
    assert_eq!(c.base(), "N0CALL");
    assert_eq!(c.ssid(), 7);
    assert_eq!(c.to_string(), "N0CALL-7");
    assert_eq!(call("w1aw").to_string(), "W1AW");
    assert_eq!(call("W1AW-0").to_string(), "W1AW");
    assert_eq!(call("K1A-15").ssid(), 15);
    assert_eq!(call("ID").to_string(), "ID");
    assert_eq!(call("BEACON").to_string(), "BEACON");
    assert_eq!("".parse::<Callsign>(), Err(CallsignError::Empty));
    assert_eq!("-1".parse::<Callsign>(), Err(CallsignError::Empty));
    assert_eq!("ABCDEFG".parse::<Callsign>(), Err(CallsignError::TooLong));
    assert_eq!(
        "AB/C".parse::<Callsign>(),
        Err(CallsignError::InvalidChar(b'/'))
    );
    assert_eq!(
        "N0CALL-16".parse::<Callsign>(),
        Err(CallsignError::InvalidSsid)
    );
    assert_eq!(
        "N0CALL-".parse::<Callsign>(),
        Err(CallsignError::InvalidSsid)
    );
    assert_eq!(
        "N0CALL-x".parse::<Callsign>(),
        Err(CallsignError::InvalidSsid)
    );
    assert_eq!(
        "N0CALL-100".parse::<Callsign>(),
        Err(CallsignError::InvalidSsid)
    );
    assert_eq!(Callsign::new("AB", 16), Err(CallsignError::InvalidSsid));
    assert_eq!(c.with_ssid(3).unwrap().to_string(), "N0CALL-3");
    assert_eq!(c.without_ssid().to_string(), "N0CALL");
}

#[test]
fn display_pads_like_text() {
    // Listings align calls with widths; a Callsign must pad as its text did.
    assert_eq!(format!("{:<9}|", call("N0USR")), "N0USR    |");
    assert_eq!(format!("{:>9}|", call("N0USR-7")), "  N0USR-7|");
    assert_eq!(format!("{:<3}|", call("N0CALL-12")), "N0CALL-12|");
}

#[test]
fn station_parses_and_normalises() {
    let c = Callsign::parse_station("n0call-7").unwrap();
    assert_eq!(c.base(), "N0CALL");
    assert_eq!(c.ssid(), 7);
    assert_eq!(c.to_string(), "N0CALL-7");
    assert_eq!(
        Callsign::parse_station("G8BPQ").unwrap().to_string(),
        "G8BPQ"
    );
    assert_eq!(
        Callsign::parse_station(" N0CALL \r").unwrap(),
        call("N0CALL")
    );
    assert_eq!(
        Callsign::parse_station("N0CALL-07").unwrap(),
        call("N0CALL-7")
    );
}

#[test]
fn station_rejects_bad_calls() {
    let err = |s: &str| Callsign::parse_station(s).unwrap_err();
    assert_eq!(err("AB"), StationCallError::Length("AB".into()));
    assert_eq!(err("N0CALLXX"), StationCallError::Length("N0CALLXX".into()));
    assert_eq!(err("N0/CA"), StationCallError::Character("N0/CA".into()));
    assert_eq!(err("ABCDE"), StationCallError::NoDigit("ABCDE".into()));
    assert_eq!(err("N0CALL-16"), StationCallError::Ssid("N0CALL-16".into()));
    assert_eq!(err("N0CALL-"), StationCallError::Ssid("N0CALL-".into()));
    assert_eq!(err("N0CALL-+1"), StationCallError::Ssid("N0CALL-+1".into()));
    // What users and sysops read.
    assert_eq!(
        err("CQ").to_string(),
        "a callsign has 3 to 6 letters and digits, got \"CQ\""
    );
    assert_eq!(
        err("BEACON").to_string(),
        "a callsign has at least one digit, got \"BEACON\""
    );
    assert_eq!(
        "AB/C".parse::<Callsign>().unwrap_err().to_string(),
        "invalid character 0x2f in callsign"
    );
}

#[test]
fn addresses_that_are_not_stations() {
    for text in ["ID", "CQ", "BEACON", "NODES", "QTC", "N0"] {
        let c = call(text);
        assert!(!c.is_station(), "{text}");
        assert!(Callsign::parse_station(text).is_err(), "{text}");
    }
    assert!(call("N0CALL-7").is_station());
    assert!(call("K1A").is_station());
}

#[test]
fn shifted_form() {
    // Spec §2.2 worked example: N0CALL-1 as a source address, without the C and extension bits.
    let c = call("N0CALL-1");
    assert_eq!(c.to_shifted(), [0x9C, 0x60, 0x86, 0x82, 0x98, 0x98, 0x62]);
    assert_eq!(Callsign::from_shifted(&c.to_shifted()), Ok(c));
    // Flag bits in the SSID byte are not the callsign's.
    assert_eq!(
        Callsign::from_shifted(&[0x9C, 0x60, 0x86, 0x82, 0x98, 0x98, 0xE3]),
        Ok(c)
    );
    assert_eq!(
        Callsign::from_shifted(&[0x40; SHIFTED_LEN]),
        Err(CallsignError::Empty)
    );
}

fn arb_callsign() -> impl Strategy<Value = Callsign> {
    ("[A-Z0-9]{1,6}", 0u8..=15).prop_map(|(c, s)| Callsign::new(&c, s).unwrap())
}

proptest! {
    #[test]
    fn callsign_string_roundtrip(c in arb_callsign()) {
        prop_assert_eq!(c.to_string().parse::<Callsign>().unwrap(), c);
    }

    #[test]
    fn callsign_shifted_roundtrip(c in arb_callsign()) {
        prop_assert_eq!(Callsign::from_shifted(&c.to_shifted()).unwrap(), c);
    }

    /// The strict parse accepts exactly the addresses that are station calls, and gives the
    /// same callsign the permissive one does.
    #[test]
    fn station_calls_are_the_addresses_with_three_chars_and_a_digit(c in arb_callsign()) {
        let text = c.to_string();
        prop_assert_eq!(Callsign::parse_station(&text).ok(), c.is_station().then_some(c));
        prop_assert_eq!(
            Callsign::parse_station(&text.to_ascii_lowercase()).ok(),
            c.is_station().then_some(c)
        );
    }

    /// Whatever the strict parse accepts, the permissive one accepts too, as the same call.
    #[test]
    fn every_station_call_is_an_address(text in "[ a-zA-Z0-9/+-]{0,10}") {
        if let Ok(c) = Callsign::parse_station(&text) {
            prop_assert!(c.is_station());
            prop_assert_eq!(c.to_string().parse::<Callsign>(), Ok(c));
            prop_assert_eq!(Callsign::parse_station(&c.to_string()), Ok(c));
        }
    }
}
