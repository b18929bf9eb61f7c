//! Calendar dates in UTC from Unix seconds, as BBS listings and R: lines print them.
//! (Howard Hinnant's days-to-civil algorithm; no time zone database needed: BBSes use UTC.)

/// A broken-down UTC time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utc {
    /// Full year, e.g. 2026.
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
    /// 0 to 59.
    pub second: u32,
}

impl Utc {
    /// Converts seconds since the Unix epoch.
    pub fn from_unix(secs: i64) -> Utc {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Utc {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem % 3600 / 60) as u32,
            second: (rem % 60) as u32,
        }
    }

    /// `MMDD/HHMM`, the Date/Time column of a listing.
    pub fn list_stamp(&self) -> String {
        format!(
            "{:02}{:02}/{:02}{:02}",
            self.month, self.day, self.hour, self.minute
        )
    }

    /// `YYMMDD/HHMMZ`, the stamp of an R: line.
    pub fn rline_stamp(&self) -> String {
        format!(
            "{:02}{:02}{:02}/{:02}{:02}Z",
            self.year.rem_euclid(100),
            self.month,
            self.day,
            self.hour,
            self.minute
        )
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339), for JSON output.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        let t = Utc::from_unix(0);
        assert_eq!(t.rfc3339(), "1970-01-01T00:00:00Z");
        // 2026-12-02 12:31:05 UTC
        let t = Utc::from_unix(1_796_214_665);
        assert_eq!(t.rfc3339(), "2026-12-02T12:31:05Z");
        assert_eq!(t.list_stamp(), "1202/1231");
        assert_eq!(t.rline_stamp(), "261202/1231Z");
        assert_eq!(
            Utc::from_unix(951_782_400).rfc3339(),
            "2000-02-29T00:00:00Z"
        );
    }
}
