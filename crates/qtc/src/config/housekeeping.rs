//! `[housekeeping]`: the daily run and message lifetimes.

use serde::Deserialize;

/// `[housekeeping]`: when it runs and how long things live (days; 0 = forever).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HousekeepingCfg {
    /// UTC hour of the daily run (0 to 23).
    pub hour: u32,
    /// Personal and NTS mail once read or forwarded.
    pub personal_read: u32,
    /// Personal and NTS mail never read.
    pub personal_unread: u32,
    /// Bulletins.
    pub bulletin: u32,
    /// Killed messages before they are removed for good.
    pub killed: u32,
    /// BIDs of messages no longer here.
    pub bid: u32,
    /// Partial B1 transfers kept for resume.
    pub partial: u32,
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

impl HousekeepingCfg {
    /// Checks the values; the error names the key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.hour > 23 {
            return Err((
                "hour",
                format!("expected a UTC hour from 0 to 23, got {}", self.hour),
            ));
        }
        Ok(())
    }

    /// The store's lifetimes.
    pub fn lifetimes(&self) -> qtc_store::Lifetimes {
        qtc_store::Lifetimes {
            personal_read: self.personal_read,
            personal_unread: self.personal_unread,
            bulletin: self.bulletin,
            killed: self.killed,
            bid: self.bid,
            partial: self.partial,
        }
    }
}
