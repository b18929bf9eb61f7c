//! Mail for the stations a Winlink partner collects for (its `;FW:` calls): personal mail
//! addressed to such a call here (no `@`, or `@` this BBS) is queued for that partner.

use qtc_callsign::Callsign;
use qtc_mail::StoreError;
use rusqlite::params;

use crate::{db_err, Store};

impl Store {
    /// Queues for `partner` the personal and NTS mail here addressed to one of `calls` that is
    /// not forwarded yet and not queued for it before; returns how many were added.
    pub fn queue_collected(
        &mut self,
        partner: Callsign,
        calls: &[String],
        now: i64,
    ) -> Result<usize, StoreError> {
        let partner_text = partner.to_string();
        let own = crate::station(&self.station)?.call.to_string();
        let tx = self.conn.transaction().map_err(db_err)?;
        let mut added = 0;
        for call in calls {
            added += tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO fwd_queue (number, partner, updated) \
                     SELECT number, ?1, ?2 FROM messages WHERE kind != 'B' AND origin != ?1 \
                     AND status IN ('N', 'Y') AND (at = '' OR at = ?4 OR at LIKE ?4 || '.%') \
                     AND (to_call = ?3 \
                          OR number IN (SELECT number FROM recipients WHERE call = ?3))",
                )
                .and_then(|mut st| {
                    st.execute(params![partner_text, now, call.to_ascii_uppercase(), own])
                })
                .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)?;
        if added > 0 {
            self.queued.bump(partner);
        }
        Ok(added)
    }
}
