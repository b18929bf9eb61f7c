//! B1 from partners on links without telnet negotiation: xfbbd calling qtc's raw forwarding
//! port (it doubles 0xFF on every outgoing forwarding link: `iac_escaped`), and raw TCP
//! clients such as JNOS and LinBPQ on qtc's telnet port (it never sends a telnet command, doubles nothing
//! and reads no IAC: the telnet port's rule makes its link raw). Their binary blocks carry CR
//! NUL as it is; qtc undoes xfbbd's doubling and takes the raw client's bytes as they are.

mod common;

use common::{Client, Daemon, Shown};
use qtc_fbb::wire::{block, proposal};

/// A CR LF text of `len` bytes whose B1 file holds both 0xFF and CR NUL (the length header of
/// a 3,328-3,583-byte message always holds CR NUL).
fn awkward_text(len: usize) -> (Vec<u8>, Vec<u8>) {
    let mut x = 0x9e37_79b9_u32;
    let mut text = Vec::with_capacity(len);
    while text.len() < len - 2 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let alphabet = b"abcdefghij KLMNOPQ 0123456789 \xc3\xa4\xc3\xb6 \xe4\xf6\xfc";
        text.push(alphabet[x as usize % alphabet.len()]);
        if x % 61 == 0 {
            text.extend_from_slice(b"\r\n");
        }
    }
    text.truncate(len - 2);
    text.extend_from_slice(b"\r\n");
    let file = qtc_lzhuf::compress_with_crc(&qtc_lzhuf::fbb_text(&text));
    assert!(file.contains(&0xff), "no 0xFF in the compressed file");
    assert!(file.windows(2).any(|w| w == b"\r\0"), "no CR NUL");
    (text, file)
}

fn doubled(data: &[u8]) -> Vec<u8> {
    data.iter()
        .flat_map(|&b| if b == 0xff { vec![0xff, 0xff] } else { vec![b] })
        .collect()
}

/// After the login: SID, one FA proposal, the transfer (0xFF doubled if `escaped`); qtc
/// answers and stores it.
fn send_b1(c: &mut Client, sid: &[u8], bid: &str, text: &[u8], file: &[u8], escaped: bool) {
    c.send_raw(sid);
    let line = format!("FA P N0PTR N0BBS N0USR {bid} {}", text.len());
    let sum = proposal::checksum_value(proposal::checksum_add(0, line.as_bytes()));
    c.send_raw(format!("{line}\rF> {sum:02X}\r").as_bytes());
    c.expect("FS Y");
    let mut wire = Vec::new();
    block::encode(b"escaped", 0, file, &mut wire);
    c.send_raw(&if escaped { doubled(&wire) } else { wire });
    c.expect("FF");
    c.send_raw(b"FQ\r");
    c.expect_close();
}

fn stored_body(d: &Daemon, bid: &str) -> Vec<u8> {
    let listed = d.listed();
    let m = listed
        .iter()
        .find(|m| m.bid == bid)
        .unwrap_or_else(|| panic!("{bid} not stored: {listed:?}\n{}", d.log()));
    Shown::parse(&d.show_raw(m.number)).body
}

#[test]
fn xfbbd_on_the_raw_port_and_a_raw_client_on_the_telnet_port_deliver_b1_intact() {
    let d = Daemon::start_bbs(
        "N0BBS",
        &[
            ("N0PTR", "ptrpw", "--bbs"),
            ("N0JNO", "jnopw", "--bbs"),
            ("N0BPQ", "bpqpw", "--bbs"),
        ],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n\
         [[partner]]\ncallsign = \"N0PTR\"\niac_escaped = true\nroutes = [\"N0PTR\"]\n\
         [[partner]]\ncallsign = \"N0JNO\"\nroutes = [\"N0JNO\"]\n\
         [[partner]]\ncallsign = \"N0BPQ\"\nprotocol = \"b2\"\nroutes = [\"N0BPQ\"]\n",
    );
    let (text, file) = awkward_text(3400);

    // xfbbd: raw port, `.CALL` login, every 0xFF doubled.
    let mut c = Client::connect(d.fwd_port.unwrap());
    c.expect("Callsign:");
    c.send_raw(b".N0PTR\r");
    c.expect("Password:");
    c.send_raw(b"ptrpw\r");
    c.expect(">\r");
    send_b1(
        &mut c,
        b"[FBB-7.0.11-AB1FHMRX$]\r",
        "X1_N0PTR",
        &text,
        &file,
        true,
    );
    assert_eq!(stored_body(&d, "X1_N0PTR"), text);

    // JNOS: telnet port, CR LF login, no telnet command: binary as it is (0xFF single, CR NUL).
    let mut c = Client::connect(d.port);
    c.expect("Callsign:");
    c.send_raw(b"N0JNO\r\n");
    c.expect("Password:");
    c.send_raw(b"jnopw\r\n");
    c.expect(">\r\n");
    send_b1(
        &mut c,
        b"[JNOS-2.0o.2-B1FHIM$]\r\n",
        "J1_N0JNO",
        &text,
        &file,
        false,
    );
    assert_eq!(stored_body(&d, "J1_N0JNO"), text);
}
