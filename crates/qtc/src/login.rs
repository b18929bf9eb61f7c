//! The login path every port shares (telnet, the forwarding port, the mail ports): the places
//! a connection takes at connect, and a password check counted by the throttle before it is
//! made.

use std::net::IpAddr;

use qtc_mail::StoreError;

use crate::admission::{Admission, Place};
use crate::clock;
use crate::passwords::{Login, Passwords};
use crate::throttle::{AddressSlot, Throttle};

/// A connection's places, taken at connect.
pub struct Admitted {
    /// Counts against the connection's address while it is open.
    pub address_slot: AddressSlot,
    /// Given up at login.
    pub login_place: Place,
}

/// The places for a new connection from `ip`, or the line that refuses it: a locked-out
/// address gets none, and one host cannot take the places of the others.
pub fn admit(
    throttle: &Throttle,
    admission: &Admission,
    ip: IpAddr,
) -> Result<Admitted, &'static str> {
    if throttle.locked_out(ip, clock::now()) {
        tracing::warn!("refused: locked out after repeated login failures");
        return Err("Too many failed logins from your address. Try again later.\r\n");
    }
    let Some(slot) = admission.per_address.take(ip) else {
        tracing::warn!("refused: too many connections from this address");
        return Err("Too many connections from your address. Try again later.\r\n");
    };
    Ok(Admitted {
        address_slot: slot,
        login_place: admission.enter_login(ip),
    })
}

/// Checks `call`'s password from `ip` (none for a radio link). Counted before the check:
/// parallel guesses cannot outrun the lockout, and while the address or the account is locked
/// out not even the right password is checked. A right one takes back its own attempt.
pub async fn check(
    throttle: &Throttle,
    passwords: &Passwords,
    ip: Option<IpAddr>,
    call: &str,
    password: String,
    login: Login,
) -> Result<bool, StoreError> {
    let Some(attempt) = throttle.attempt(ip, call, clock::now()) else {
        tracing::warn!("login refused unchecked: locked out after repeated failures");
        return Ok(false);
    };
    let ok = passwords.check(call, password, login).await;
    if matches!(ok, Ok(true)) {
        throttle.succeeded(attempt, clock::now());
    }
    ok
}
