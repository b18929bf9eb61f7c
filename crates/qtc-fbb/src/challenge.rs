//! Answers to the login challenges a partner may put to us when we call it (spec §7).
//!
//! - FBB's `SYS` challenge: five 1-based positions into the shared secret, optionally followed
//!   by a 10-digit number `t`. The answer is the five characters at those positions or, when
//!   `t` is given, the upper-case hex MD5 of `t` written as ten digits followed by the secret.
//! - Winlink's secure login: the partner sends `;PQ: <challenge>` with its SID; the caller puts
//!   `;PR: <answer>` after its own SID. The answer is eight decimal digits taken from the MD5 of
//!   the challenge and the secret (case kept) followed by a fixed 64-byte salt (the one the
//!   Winlink clients use; paclink-unix and Pat publish it).

use md5::{Digest, Md5};

/// The salt of Winlink's secure login (public: every Winlink client carries it).
const WINLINK_SALT: [u8; 64] = [
    77, 197, 101, 206, 190, 249, 93, 200, 51, 243, 93, 237, 71, 94, 239, 138, 68, 108, 70, 185,
    225, 137, 217, 16, 51, 122, 193, 48, 194, 195, 198, 175, 172, 169, 70, 84, 61, 62, 104, 186,
    114, 52, 61, 168, 66, 129, 192, 208, 187, 249, 232, 193, 41, 113, 41, 45, 240, 16, 29, 228,
    208, 228, 61, 20,
];

/// If `line` is an FBB `SYS` challenge, the answer for `secret`. `None` for any other line, and
/// for positions the secret does not have.
pub fn sys_answer(line: &[u8], secret: &str) -> Option<String> {
    let text = std::str::from_utf8(line).ok()?;
    let words: Vec<&str> = text.split_whitespace().collect();
    if !(words.len() == 5 || words.len() == 6)
        || !words.iter().all(|w| w.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let positions = words[..5]
        .iter()
        .map(|w| w.parse::<usize>().ok().filter(|p| (1..=255).contains(p)))
        .collect::<Option<Vec<usize>>>()?;
    if let Some(t) = words.get(5) {
        if t.len() != 10 {
            return None;
        }
        let digest = Md5::digest(format!("{t}{secret}").as_bytes());
        return Some(digest.iter().map(|b| format!("{b:02X}")).collect());
    }
    let chars: Vec<char> = secret.chars().collect();
    positions
        .iter()
        .map(|&p| chars.get(p - 1).copied())
        .collect()
}

/// The challenge of a Winlink `;PQ: ` line.
pub fn winlink_challenge(line: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(line).ok()?.trim();
    let rest = text.strip_prefix(";PQ")?.trim_start_matches(':').trim();
    (!rest.is_empty() && rest.len() <= 32 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| rest.to_string())
}

/// The `;PR: ` answer to `challenge` for `secret`: eight digits.
pub fn winlink_response(challenge: &str, secret: &str) -> String {
    let mut h = Md5::new();
    h.update(challenge.as_bytes());
    h.update(secret.as_bytes());
    h.update(WINLINK_SALT);
    let d = h.finalize();
    // The first four digest bytes, little-endian, the top two bits cleared.
    let n = u32::from_le_bytes([d[0], d[1], d[2], d[3] & 0x3f]);
    let s = format!("{n:08}");
    s[s.len() - 8..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sys_positions_and_md5_form() {
        assert_eq!(
            sys_answer(b"1 2 3 4 5", "SECRETWORD").as_deref(),
            Some("SECRE")
        );
        assert_eq!(
            sys_answer(b" 10 1 6 6 2\r", "SECRETWORD").as_deref(),
            Some("DSTTE")
        );
        // Known answer: MD5("0123456789SECRETWORD").
        let md5 = sys_answer(b"3 1 4 1 5 0123456789", "SECRETWORD").unwrap();
        assert_eq!(md5.len(), 32);
        assert_eq!(
            md5,
            Md5::digest(b"0123456789SECRETWORD")
                .iter()
                .map(|b| format!("{b:02X}"))
                .collect::<String>()
        );
        assert!(md5
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()));
        // Not challenges: other lines, positions past the secret, a short t.
        for line in [
            &b"[FBB-7.0.12-AB1FHMRX$]"[..],
            b"1 2 3 4",
            b"1 2 3 4 99",
            b"1 2 3 4 5 123",
            b"a b c d e",
            b"",
        ] {
            assert_eq!(
                sys_answer(line, "SECRETWORD"),
                None,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn winlink_secure_login() {
        assert_eq!(
            winlink_challenge(b";PQ: 23753528\r").as_deref(),
            Some("23753528")
        );
        assert_eq!(winlink_challenge(b";FW: N0ABC"), None);
        // The published vectors of the Winlink client libraries: the secret's case counts.
        assert_eq!(winlink_response("23753528", "FOOBAR"), "72768415");
        assert_eq!(winlink_response("23753528", "FooBar"), "95074758");
    }
}
