//! Fuzz the AX.25 data link: arbitrary frames from the peer mixed with timer expiries and local
//! commands. The link must never panic, must only emit frames that parse back, must keep its
//! output bounded, and must have no timer armed once it is disconnected.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use qtc_ax25::link::{Config, Link, State};
use qtc_ax25::Air;
use qtc_ax25::wire::{Address, CommandResponse, Frame, Path};
use qtc_callsign::Callsign;

fn take<'a>(rest: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(rest.len());
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    head
}

fn byte(rest: &mut &[u8]) -> u8 {
    take(rest, 1).first().copied().unwrap_or(0)
}

fuzz_target!(|data: &[u8]| {
    // A fixed base for the manual clock (the link itself never reads a clock).
    #[allow(clippy::disallowed_methods)]
    let base = Instant::now();
    let mut rest = data;
    let flags = byte(&mut rest);

    let mut cfg = Config::default();
    cfg.prefer_v22 = flags & 1 != 0;
    cfg.srej = flags & 2 != 0;
    cfg.xid = flags & 4 != 0;
    // Air time modelled (1200 bit/s): derived T2, departures reported, busy channel.
    let air = flags & 8 != 0;
    if air {
        cfg.air = Air::kiss(1200);
    }
    cfg.k_mod8 = 1 + (flags >> 5);
    cfg.receive_buffer = 4096;
    cfg.send_buffer = 8192;

    let local: Callsign = "QTC".parse().unwrap();
    let remote: Callsign = "N0CALL-1".parse().unwrap();
    let mut link = Link::new(cfg, local, remote, Path::new());
    let mut now = base;
    if flags & 16 != 0 {
        link.connect(now).unwrap();
    }

    while !rest.is_empty() {
        let op = byte(&mut rest);
        match op & 7 {
            0 => {
                now += Duration::from_millis(u64::from(byte(&mut rest)) * 50);
                link.handle_timeout(now);
            }
            1 => {
                let n = usize::from(byte(&mut rest)) * 4;
                let payload = vec![op; n];
                let _ = link.send(now, &payload);
            }
            2 => link.set_busy(now, byte(&mut rest) & 1 != 0),
            3 => link.disconnect(now),
            4 => link.abort(now),
            5 => {
                let _ = link.connect(now);
            }
            _ => {
                // A frame from the peer: our address field, then fuzz bytes as control, PID and
                // information.
                let cr = match (op >> 3) & 3 {
                    0 => CommandResponse::Command,
                    1 => CommandResponse::Response,
                    2 => CommandResponse::Legacy(false),
                    _ => CommandResponse::Legacy(true),
                };
                let mut bytes = Vec::new();
                Address::new(local, remote, cr).emit(&mut bytes);
                let n = usize::from(byte(&mut rest) % 40);
                bytes.extend_from_slice(take(&mut rest, n));
                let _ = link.handle_bytes(now, &bytes);
                if air {
                    link.channel_busy(now, Duration::from_millis(u64::from(op) * 10));
                }
            }
        }

        let mut frames = 0;
        while let Some(f) = link.poll_transmit(now) {
            frames += 1;
            assert!(frames < 10_000, "poll_transmit does not run dry");
            assert_eq!(f.address.dest, remote);
            assert_eq!(f.address.src, local);
            let wire = f.to_bytes();
            assert_eq!(Frame::parse(&wire, f.modulo).as_ref(), Ok(&f));
            if air {
                // Frames leave the modem one after another, up to a minute ahead.
                link.departs(now + Duration::from_secs(frames.min(60)));
            }
        }
        let mut events = 0;
        while link.poll_event().is_some() {
            events += 1;
            assert!(events < 100_000, "poll_event does not run dry");
        }
        if link.state() == State::Disconnected {
            assert_eq!(link.poll_timeout(), None, "timer armed while disconnected");
        }
        if let Some(t) = link.poll_timeout() {
            // Deadlines are never absurdly far out (T3 is the longest, 300 s; on a modelled
            // channel T1 may wait for departures a minute ahead and a window of the peer's).
            let most = if air { 600 } else { 301 };
            assert!(t <= now + Duration::from_secs(most));
        }
    }
});
