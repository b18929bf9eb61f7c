//! The login path every port shares (telnet, the forwarding port, AX.25 `SYS`, the mail ports,
//! the web): the places a connection takes at connect, and a password check counted by the
//! throttle before it is made.

use std::net::IpAddr;

use qtc_callsign::Callsign;
use qtc_mail::StoreError;

use crate::admission::{Admission, Place};
use crate::clock;
use crate::passwords::{Login, Passwords};
use crate::throttle::{AddressSlot, Attempt, Refused, Throttle};

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

/// Checks `call`'s password from `ip` (none for a radio link): [`attempt`], then [`verify`].
/// While the address or the account is locked out not even the right password is checked
/// (`Err`: why it was not checked).
pub async fn check(
    throttle: &Throttle,
    passwords: &Passwords,
    ip: Option<IpAddr>,
    call: Callsign,
    password: String,
    login: Login,
) -> Result<Result<bool, StoreError>, Refused> {
    let attempt = attempt(throttle, ip, Some(call))?;
    Ok(verify(throttle, passwords, attempt, Some(call), password, login).await)
}

/// Counts a login to `call` from `ip` before its password is checked, so parallel guesses
/// cannot outrun the lockout; `Err` (logged): it must not be checked. `None`: the name typed
/// is not a callsign; it is counted against the address alone ([`Throttle::attempt`]) and
/// logged without it (it may be a password).
pub fn attempt(
    throttle: &Throttle,
    ip: Option<IpAddr>,
    call: Option<Callsign>,
) -> Result<Attempt, Refused> {
    throttle.attempt(ip, call, clock::now()).inspect_err(|why| {
        let what = match why {
            Refused::Locked => "locked out after repeated failures",
            Refused::Busy => "too many logins to this account at once",
        };
        match call {
            Some(call) => tracing::warn!(%call, "login refused unchecked: {what}"),
            None => tracing::warn!("login refused unchecked: {what}"),
        }
    })
}

/// Checks the password of a counted `attempt` (argon2, on the password pool); a right one
/// takes back its own attempt.
pub async fn verify(
    throttle: &Throttle,
    passwords: &Passwords,
    attempt: Attempt,
    call: Option<Callsign>,
    password: String,
    login: Login,
) -> Result<bool, StoreError> {
    let ok = passwords.check(call, password, login).await;
    if matches!(ok, Ok(true)) {
        attempt.succeeded(throttle, clock::now());
    }
    ok
}
