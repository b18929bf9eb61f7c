//! Fuzz the telnet codec: arbitrary bytes fed in arbitrary chunks must decode exactly like the
//! same bytes fed in one piece, never leak an unescaped IAC, and the encoder must round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_telnet::{Role, Telnet};

fuzz_target!(|data: &[u8]| {
    // First byte: role and hide toggles; second: chunk-size seed; the rest: network input.
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Some((&seed, input)) = rest.split_first() else {
        return;
    };
    let role = if flags & 1 == 0 {
        Role::Server
    } else {
        Role::Client
    };

    // One piece.
    let mut whole = Telnet::new(role);
    let (mut app1, mut net1) = (Vec::new(), Vec::new());
    whole.start(&mut net1);
    if flags & 2 != 0 {
        whole.set_hide_input(true, &mut net1);
    }
    whole.receive(input, &mut app1, &mut net1);

    // Chunks whose sizes come from a tiny LCG over `seed` (1..=16 bytes).
    let mut chunked = Telnet::new(role);
    let (mut app2, mut net2) = (Vec::new(), Vec::new());
    chunked.start(&mut net2);
    if flags & 2 != 0 {
        chunked.set_hide_input(true, &mut net2);
    }
    let mut state = u32::from(seed) | 1;
    let mut at = 0;
    while at < input.len() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let n = 1 + (state >> 16) as usize % 16;
        let end = input.len().min(at + n);
        chunked.receive(&input[at..end], &mut app2, &mut net2);
        at = end;
    }
    assert_eq!(app1, app2, "chunking changed the application data");
    assert_eq!(net1, net2, "chunking changed the negotiation answers");

    // Output must not exceed what the input can justify (no amplification loop).
    assert!(net1.len() <= 64 + input.len() * 16);

    // Whatever came out, sending it raw and decoding it again gives it back unchanged.
    let mut enc = Telnet::new(Role::Server);
    let mut wire = Vec::new();
    enc.send_raw(&app1, &mut wire);
    let mut dec = Telnet::new(Role::Client);
    let (mut app3, mut net3) = (Vec::new(), Vec::new());
    dec.receive(&wire, &mut app3, &mut net3);
    assert_eq!(app3, app1);
    assert!(net3.is_empty());

    // The line encoder never emits a bare CR or LF.
    let mut line = Vec::new();
    enc.send(input, &mut line);
    for (i, &b) in line.iter().enumerate() {
        if b == b'\r' {
            assert_eq!(line.get(i + 1), Some(&b'\n'));
        }
    }
});
