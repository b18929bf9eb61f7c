//! CRC-16/XMODEM (poly 0x1021, init 0, MSB first, no final xor), the check word of B1/B2 payloads.

const POLY: u16 = 0x1021;

/// `TABLES[0]` is the classic byte table; `TABLES[k][b]` is the CRC contribution of byte `b`
/// followed by `k` zero bytes, which lets [`crc16_xmodem`] fold four bytes per step.
const TABLES: [[u16; 256]; 4] = build_tables();

const fn build_tables() -> [[u16; 256]; 4] {
    let mut t = [[0u16; 256]; 4];
    let mut b = 0;
    while b < 256 {
        let mut crc = (b as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
            bit += 1;
        }
        t[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < 4 {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev << 8) ^ t[0][(prev >> 8) as usize];
            b += 1;
        }
        k += 1;
    }
    t
}

/// CRC-16/XMODEM of `data`: polynomial 0x1021, initial value 0, no reflection, no final xor.
///
/// B1 and B2 payloads carry it little-endian in their first two bytes, computed over everything
/// after it (length header and LZHUF stream). Check value: `crc16_xmodem(b"123456789") == 0x31C3`.
#[must_use]
pub fn crc16_xmodem(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let hi = (crc >> 8) as u8 ^ c[0];
        let lo = (crc & 0xff) as u8 ^ c[1];
        crc = TABLES[3][usize::from(hi)]
            ^ TABLES[2][usize::from(lo)]
            ^ TABLES[1][usize::from(c[2])]
            ^ TABLES[0][usize::from(c[3])];
    }
    for &b in chunks.remainder() {
        crc = (crc << 8) ^ TABLES[0][usize::from((crc >> 8) as u8 ^ b)];
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitwise(data: &[u8]) -> u16 {
        let mut crc: u16 = 0;
        for &b in data {
            crc ^= u16::from(b) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ POLY
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    #[test]
    fn check_value() {
        assert_eq!(crc16_xmodem(b"123456789"), 0x31C3);
        assert_eq!(crc16_xmodem(b""), 0);
    }

    #[test]
    fn matches_bitwise_definition() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7919 % 251) as u8).collect();
        for len in 0..40 {
            assert_eq!(
                crc16_xmodem(&data[..len]),
                bitwise(&data[..len]),
                "len {len}"
            );
        }
        assert_eq!(crc16_xmodem(&data), bitwise(&data));
    }
}
