//! `[housekeeping]`: the daily run and message lifetimes.

use serde::Deserialize;

/// `[housekeeping]`: when it runs and how long things live (days; 0 = forever).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(super) struct HousekeepingCfg {
    /// UTC hour of the daily run (0 to 23).
    pub(super) hour: u32,
    /// Personal and NTS mail once read or forwarded.
    pub(super) personal_read: u32,
    /// Personal and NTS mail never read.
    pub(super) personal_unread: u32,
    /// Bulletins.
    pub(super) bulletin: u32,
    /// Killed messages before they are removed for good.
    pub(super) killed: u32,
    /// BIDs of messages no longer here.
    pub(super) bid: u32,
    /// Partial B1 transfers kept for resume.
    pub(super) partial: u32,
}

impl Default for HousekeepingCfg {
    fn default() -> Self {
        let l = qtc_store::Lifetimes::default();
        HousekeepingCfg {
            hour: 3,
            personal_read: l.personal_read,
            personal_unread: l.personal_unread,
            bulletin: l.bulletin,
            killed: l.killed,
            bid: l.bid,
            partial: l.partial,
        }
    }
}

/// `[housekeeping]`, checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Housekeeping {
    /// UTC hour of the daily run (0 to 23).
    pub hour: u32,
    /// How long things live.
    pub lifetimes: qtc_store::Lifetimes,
}

impl HousekeepingCfg {
    /// Checks the values; the error names the key.
    pub(super) fn check(&self) -> Result<Housekeeping, super::KeyError> {
        if self.hour > 23 {
            return Err(super::KeyError::new(
                "hour",
                format!("expected a UTC hour from 0 to 23, got {}", self.hour),
            ));
        }
        Ok(Housekeeping {
            hour: self.hour,
            lifetimes: qtc_store::Lifetimes {
                personal_read: self.personal_read,
                personal_unread: self.personal_unread,
                bulletin: self.bulletin,
                killed: self.killed,
                bid: self.bid,
                partial: self.partial,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_stores() {
        assert_eq!(
            HousekeepingCfg::default().check().unwrap().lifetimes,
            qtc_store::Lifetimes::default()
        );
        assert!(HousekeepingCfg {
            hour: 24,
            ..Default::default()
        }
        .check()
        .is_err());
    }
}
