//! Users: profiles, flags and argon2id password hashes. Passwords never leave this module in
//! clear and are never logged.

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, SaltString};
use argon2::{Argon2, PasswordVerifier};
use qtc_mail::{StoreError, User};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db_err, Store};

fn user_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        call: r.get(0)?,
        name: r.get(1)?,
        home_bbs: r.get(2)?,
        sysop: r.get(3)?,
        bbs: r.get(4)?,
        last_listed: r.get::<_, i64>(5)? as u64,
    })
}

const USER_COLUMNS: &str = "call, name, home_bbs, sysop, bbs, last_listed";

pub(crate) fn get(conn: &Connection, call: &str) -> Result<Option<User>, StoreError> {
    conn.query_row(
        &format!("SELECT {USER_COLUMNS} FROM users WHERE call = ?1"),
        [call.to_ascii_uppercase()],
        user_from_row,
    )
    .optional()
    .map_err(db_err)
}

pub(crate) fn check_password(
    conn: &Connection,
    call: &str,
    password: &str,
) -> Result<bool, StoreError> {
    let hash: Option<Option<String>> = conn
        .query_row(
            "SELECT password FROM users WHERE call = ?1",
            [call.to_ascii_uppercase()],
            |r| r.get(0),
        )
        .optional()
        .map_err(db_err)?;
    let Some(Some(hash)) = hash else {
        return Ok(false);
    };
    let Ok(parsed) = PasswordHash::new(&hash) else {
        tracing::warn!(%call, "stored password hash is unreadable; reset it with `qtc user passwd`");
        return Ok(false);
    };
    Ok(Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok())
}

pub(crate) fn update_profile(conn: &Connection, user: &User) -> Result<(), StoreError> {
    let n = conn
        .execute(
            "UPDATE users SET name = ?1, home_bbs = ?2, last_listed = ?3 WHERE call = ?4",
            params![
                user.name,
                user.home_bbs,
                user.last_listed as i64,
                user.call.to_ascii_uppercase()
            ],
        )
        .map_err(db_err)?;
    if n == 0 {
        return Err(StoreError::NoSuchUser(user.call.clone()));
    }
    Ok(())
}

fn hash_password(password: &str) -> Result<String, StoreError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| StoreError::Database(format!("cannot hash password: {e}")))
}

impl Store {
    /// Adds a user. `password` may be `None` for a radio-only user (AX.25 needs none).
    pub fn add_user(
        &mut self,
        call: &str,
        password: Option<&str>,
        sysop: bool,
        bbs: bool,
    ) -> Result<(), StoreError> {
        let call = call.to_ascii_uppercase();
        let hash = password.map(hash_password).transpose()?;
        let res = self.conn.execute(
            "INSERT INTO users (call, sysop, bbs, password) VALUES (?1, ?2, ?3, ?4)",
            params![call, sysop, bbs, hash],
        );
        match res {
            Ok(_) => Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                Err(StoreError::UserExists(call))
            }
            Err(e) => Err(db_err(e)),
        }
    }

    /// Sets a user's password.
    pub fn set_password(&mut self, call: &str, password: &str) -> Result<(), StoreError> {
        let hash = hash_password(password)?;
        let n = self
            .conn
            .execute(
                "UPDATE users SET password = ?1 WHERE call = ?2",
                params![hash, call.to_ascii_uppercase()],
            )
            .map_err(db_err)?;
        if n == 0 {
            return Err(StoreError::NoSuchUser(call.to_ascii_uppercase()));
        }
        Ok(())
    }

    /// Sets a user's sysop and BBS flags (`None` leaves one as it is).
    pub fn set_flags(
        &mut self,
        call: &str,
        sysop: Option<bool>,
        bbs: Option<bool>,
    ) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE users SET sysop = COALESCE(?1, sysop), bbs = COALESCE(?2, bbs) WHERE call = ?3",
                params![sysop, bbs, call.to_ascii_uppercase()],
            )
            .map_err(db_err)?;
        if n == 0 {
            return Err(StoreError::NoSuchUser(call.to_ascii_uppercase()));
        }
        Ok(())
    }

    /// Removes a user; their mail stays.
    pub fn delete_user(&mut self, call: &str) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "DELETE FROM users WHERE call = ?1",
                [call.to_ascii_uppercase()],
            )
            .map_err(db_err)?;
        if n == 0 {
            return Err(StoreError::NoSuchUser(call.to_ascii_uppercase()));
        }
        Ok(())
    }

    /// Every user, sorted by callsign.
    pub fn users(&mut self) -> Result<Vec<User>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {USER_COLUMNS} FROM users ORDER BY call"))
            .map_err(db_err)?;
        let users = stmt
            .query_map([], user_from_row)
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        Ok(users)
    }
}
