//! Killing a message as a user may: `K n` at the BBS prompt, IMAP's EXPUNGE and POP3's DELE
//! run the same rules.

use crate::{MessageStore, MsgStatus, MsgType, StoreError};

/// What `K n` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillOutcome {
    /// Killed now.
    Killed,
    /// It was killed before.
    AlreadyKilled,
    /// The user may read it but not kill it (someone else's bulletin).
    Forbidden,
    /// No such message, or none this user may see.
    NotYours,
}

/// Kills message `number` if `me` (with sysop rights or not) may: the check and the kill run
/// back to back on the one writer, so nothing changes between. `K n` runs it, and so do
/// IMAP's EXPUNGE and POP3's DELE.
pub fn kill(
    store: &mut dyn MessageStore,
    number: u64,
    me: &str,
    sysop: bool,
) -> Result<KillOutcome, StoreError> {
    let Some(m) = store.message_head(number)? else {
        return Ok(KillOutcome::NotYours);
    };
    let h = &m.header;
    Ok(match h.status {
        MsgStatus::Killed => KillOutcome::AlreadyKilled,
        // Held mail is the sysop's alone until released.
        MsgStatus::Held if !sysop => KillOutcome::NotYours,
        _ if sysop || h.to == me || h.from == me => {
            store.set_status(number, MsgStatus::Killed)?;
            KillOutcome::Killed
        }
        // Someone else's bulletin is readable, not killable; their personal mail is unseen.
        _ if h.kind != MsgType::Personal => KillOutcome::Forbidden,
        _ => KillOutcome::NotYours,
    })
}
