//! The login path every port shares (telnet, the forwarding port, the mail ports): the places
//! a connection takes at connect, and a password check counted by the throttle before it is
//! made.

use std::net::IpAddr;

use qtc_mail::StoreError;

use crate::admission::{Admission, Place};
use crate::clock;
use crate::passwords::{Login, Passwords};
use crate::throttle::{AddressSlot, Refused, Throttle};

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
    let Some(slot) = admission.take_address(ip) else {
        tracing::warn!("refused: too many connections from this address");
        return Err("Too many connections from your address. Try again later.\r\n");
    };
    let Some(login_place) = admission.enter_login(ip) else {
        tracing::warn!("refused: every place for connections logging in is taken");
        return Err("Too many connections logging in. Try again later.\r\n");
    };
    Ok(Admitted {
        address_slot: slot,
        login_place,
    })
}

/// Checks `call`'s password from `ip` (none for a radio link). Counted before the check:
/// parallel guesses cannot outrun the lockout, and while the address or the account is locked
/// out not even the right password is checked (`Err`: why it was not checked). A right one
/// takes back its own attempt.
pub async fn check(
    throttle: &Throttle,
    passwords: &Passwords,
    ip: Option<IpAddr>,
    call: &str,
    password: String,
    login: Login,
) -> Result<Result<bool, StoreError>, Refused> {
    let attempt = match throttle.attempt(ip, call, clock::now()) {
        Ok(a) => a,
        Err(why @ Refused::Locked) => {
            tracing::warn!(%call, "login refused unchecked: locked out after repeated failures");
            return Err(why);
        }
        Err(why @ Refused::Busy) => {
            tracing::warn!(%call, "login refused unchecked: too many logins to this account at once");
            return Err(why);
        }
    };
    let ok = passwords.check(call, password, login).await;
    if matches!(ok, Ok(true)) {
        attempt.succeeded(throttle, clock::now());
    }
    Ok(ok)
}
