//! Property tests: escape/unescape round trip and chunking invariance.

use proptest::prelude::*;
use qtc_telnet::{Role, Telnet};

/// Feed `input` in pieces cut at `cuts` (positions, any order, may repeat or exceed the length).
fn feed(role: Role, input: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<u8>) {
    let mut t = Telnet::new(role);
    let (mut app, mut net) = (Vec::new(), Vec::new());
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c % (input.len() + 1)).collect();
    cuts.sort_unstable();
    let mut at = 0;
    for c in cuts {
        t.receive(&input[at..c], &mut app, &mut net);
        at = c;
    }
    t.receive(&input[at..], &mut app, &mut net);
    (app, net)
}

/// Bytes biased towards telnet specials so sequences actually occur.
fn telnetish() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => any::<u8>(),
        3 => Just(255u8),
        2 => 240u8..=254,
        1 => prop_oneof![Just(0u8), Just(1), Just(3), Just(b'\r'), Just(b'\n')],
    ];
    prop::collection::vec(byte, 0..300)
}

proptest! {
    #[test]
    fn receive_undoes_send_raw(chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8)) {
        let mut tx = Telnet::new(Role::Server);
        let mut rx = Telnet::new(Role::Client);
        let mut net = Vec::new();
        let mut want = Vec::new();
        for c in &chunks {
            tx.send_raw(c, &mut net);
            want.extend_from_slice(c);
        }
        let (mut app, mut answers) = (Vec::new(), Vec::new());
        rx.receive(&net, &mut app, &mut answers);
        prop_assert_eq!(app, want);
        prop_assert!(answers.is_empty());
    }

    #[test]
    fn receive_undoes_send_raw_specials(x in telnetish()) {
        let mut tx = Telnet::new(Role::Server);
        let mut net = Vec::new();
        tx.send_raw(&x, &mut net);
        let (app, answers) = feed(Role::Server, &net, &[]);
        prop_assert_eq!(app, x);
        prop_assert!(answers.is_empty());
    }

    #[test]
    fn chunking_invariance(x in telnetish(), cuts in prop::collection::vec(any::<usize>(), 0..12), server in any::<bool>()) {
        let role = if server { Role::Server } else { Role::Client };
        let whole = feed(role, &x, &[]);
        prop_assert_eq!(feed(role, &x, &cuts), whole);
    }

    #[test]
    fn chunking_invariance_random_bytes(x in prop::collection::vec(any::<u8>(), 0..300), cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let whole = feed(Role::Server, &x, &[]);
        prop_assert_eq!(feed(Role::Server, &x, &cuts), whole);
    }

    #[test]
    fn send_output_is_crlf_only(chunks in prop::collection::vec(prop::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'a'), Just(0xFFu8)], 0..32), 0..8)) {
        let mut t = Telnet::new(Role::Server);
        let mut net = Vec::new();
        for c in &chunks { t.send(c, &mut net); }
        // Every CR is followed by LF and every LF preceded by CR; IACs come in pairs.
        for (i, &b) in net.iter().enumerate() {
            if b == b'\r' { prop_assert_eq!(net.get(i + 1), Some(&b'\n')); }
            if b == b'\n' { prop_assert!(i > 0 && net[i - 1] == b'\r'); }
        }
        let iacs = net.iter().filter(|&&b| b == 0xFF).count();
        let want: usize = chunks.iter().flatten().filter(|&&b| b == 0xFF).count();
        prop_assert_eq!(iacs, 2 * want);
        // The number of line ends matches a reference count where CR LF is one.
        let flat: Vec<u8> = chunks.concat();
        let mut ends = 0;
        let mut i = 0;
        while i < flat.len() {
            match flat[i] {
                b'\r' => { ends += 1; if flat.get(i + 1) == Some(&b'\n') { i += 1; } }
                b'\n' => ends += 1,
                _ => {}
            }
            i += 1;
        }
        prop_assert_eq!(net.windows(2).filter(|w| w == b"\r\n").count(), ends);
    }

    #[test]
    fn no_negotiation_storm(x in telnetish()) {
        // Whatever the peer sends, each negotiation gets at most one answer, plus our WILL ECHO
        // offer when a client asks for character mode (DO SUPPRESS-GO-AHEAD). In character mode
        // the echo of typed bytes also goes out; only negotiations are counted here.
        let (_, net) = feed(Role::Server, &x, &[]);
        let verbs = x.windows(2).filter(|w| w[0] == 255 && (251..=254).contains(&w[1])).count();
        let sga_requests = x.windows(3).filter(|w| w == &[255, 253, 3]).count();
        prop_assert!(negotiations(&net) <= verbs + sga_requests);
    }
}

/// WILL/WONT/DO/DONT commands in what we sent (`IAC IAC` is a data byte, not a command).
fn negotiations(net: &[u8]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i + 1 < net.len() {
        match (net[i], net[i + 1]) {
            (255, 255) => i += 2,
            (255, 251..=254) => {
                n += 1;
                i += 3;
            }
            _ => i += 1,
        }
    }
    n
}
