//! Users: profiles, flags and argon2id password hashes. Passwords never leave this module in
//! clear and are never logged.

use argon2::password_hash::{
    rand_core::OsRng, Output, ParamsString, PasswordHash, Salt, SaltString,
};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use qtc_callsign::Callsign;
use qtc_mail::{StoreError, User};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db_err, Store};

fn user_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<User> {
    let call: String = r.get(0)?;
    Ok(User {
        // Every way in checks the call (the CLI, the web, the config's partners); a row edited
        // by hand into something else is an error, not a user.
        call: Callsign::parse_station(&call).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })?,
        name: r.get(1)?,
        home_bbs: r.get(2)?,
        sysop: r.get(3)?,
        bbs: r.get(4)?,
        last_listed: r.get::<_, i64>(5)? as u64,
        // A value no page length can be (edited by hand) falls back to the port's default.
        page_len: r
            .get::<_, Option<i64>>(6)?
            .and_then(|n| usize::try_from(n).ok()),
    })
}

const USER_COLUMNS: &str = "call, name, home_bbs, sysop, bbs, last_listed, page_len";

pub(crate) fn get(conn: &Connection, call: &str) -> Result<Option<User>, StoreError> {
    conn.query_row(
        &format!("SELECT {USER_COLUMNS} FROM users WHERE call = ?1"),
        [call.to_ascii_uppercase()],
        user_from_row,
    )
    .optional()
    .map_err(db_err)
}

/// argon2's working memory (19 MiB with the default parameters), allocated at the first hash
/// and reused by every later one made with the same value; freed with it.
///
/// The daemon never holds one: it hashes in a short-lived helper process (see
/// [`verify_password`]), because glibc, once a block this size is freed, raises its mmap
/// threshold and keeps later blocks in the heap: a daemon that had checked a few logins in
/// process kept ~140 MB it no longer used, and even one kept block is 19 MiB of resident memory.
#[derive(Default)]
pub(crate) struct Argon2Memory(Vec<Block>);

impl Argon2Memory {
    /// `password`'s hash with these algorithm, version, parameters and salt (the output length
    /// is the parameters'), computed in the kept memory.
    fn hash(
        &mut self,
        password: &str,
        algorithm: Algorithm,
        version: Version,
        params: Params,
        salt: Salt<'_>,
    ) -> argon2::password_hash::Result<Output> {
        let n = params.block_count();
        if self.0.len() < n {
            self.0.resize(n, Block::default());
        }
        let len = params.output_len().unwrap_or(Params::DEFAULT_OUTPUT_LEN);
        let mut salt_buf = [0u8; 64];
        let salt = salt.decode_b64(&mut salt_buf)?;
        let argon = Argon2::new(algorithm, version, params);
        let blocks = &mut self.0[..n];
        Output::init_with(len, |out| {
            Ok(argon.hash_password_into_with_memory(
                password.as_bytes(),
                salt,
                out,
                &mut *blocks,
            )?)
        })
    }

    /// Whether `password` matches the PHC string `phc` (any argon2 variant and parameters).
    fn verify(
        &mut self,
        password: &str,
        phc: &PasswordHash<'_>,
    ) -> argon2::password_hash::Result<bool> {
        let (Some(salt), Some(expected)) = (phc.salt, &phc.hash) else {
            return Ok(false);
        };
        let algorithm = Algorithm::try_from(phc.algorithm)?;
        let version = phc
            .version
            .map(Version::try_from)
            .transpose()?
            .unwrap_or_default();
        let params = Params::try_from(phc)?;
        // `Output`'s comparison takes constant time.
        Ok(self.hash(password, algorithm, version, params, salt)? == *expected)
    }

    /// A new argon2id PHC string for `password` with a random salt and the default parameters.
    fn phc(&mut self, password: &str) -> argon2::password_hash::Result<String> {
        let salt = SaltString::generate(&mut OsRng);
        let params = Params::default();
        let out = self.hash(
            password,
            Algorithm::Argon2id,
            Version::V0x13,
            params.clone(),
            salt.as_salt(),
        )?;
        Ok(PasswordHash {
            algorithm: Algorithm::Argon2id.ident(),
            version: Some(Version::V0x13.into()),
            params: ParamsString::try_from(&params)?,
            salt: Some(salt.as_salt()),
            hash: Some(out),
        }
        .to_string())
    }
}

/// Marks a locked account's stored hash (as in /etc/shadow): no PHC string starts with it, and
/// unlocking takes it off, so the password survives a lock.
const LOCKED: &str = "!";

/// A user's stored password hash (PHC string); `None` for an unknown user, one without a
/// password (radio only) or a locked one: every password login refuses those.
pub(crate) fn password_hash(
    conn: &Connection,
    call: Callsign,
) -> Result<Option<String>, StoreError> {
    let hash: Option<Option<String>> = conn
        .query_row(
            "SELECT password FROM users WHERE call = ?1 AND substr(password, 1, 1) != '!'",
            [call.to_string()],
            |r| r.get(0),
        )
        .optional()
        .map_err(db_err)?;
    Ok(hash.flatten())
}

/// Whether `password` matches the stored hash `phc` (any argon2 variant and parameters). A hash
/// that cannot be read matches nothing. Costs one argon2 run (19 MiB, ~30 ms with the defaults).
pub fn verify_password(phc: &str, password: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        tracing::warn!("stored password hash is unreadable; reset it with `qtc user passwd`");
        return false;
    };
    Argon2Memory::default()
        .verify(password, &parsed)
        .unwrap_or(false)
}

/// A new argon2id hash (PHC string) of `password`, with a random salt and the default parameters.
pub fn hash_password(password: &str) -> Result<String, StoreError> {
    hash_in(&mut Argon2Memory::default(), password)
}

/// A hash with the default parameters that no password is known to match: verified in place of
/// a missing one, so that a login for an unknown callsign takes as long as for a known one.
pub const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$cXRjLWR1bW15LXNhbHQ$8hwDtjvFqqZ6r2Yx0Fn0Od4SmgbTzC0V5oBDqsQQkYk";

pub(crate) fn update_profile(conn: &Connection, user: &User) -> Result<(), StoreError> {
    let n = conn
        .execute(
            "UPDATE users SET name = ?1, home_bbs = ?2, last_listed = ?3, page_len = ?4 \
             WHERE call = ?5",
            params![
                user.name,
                user.home_bbs,
                user.last_listed as i64,
                user.page_len.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
                user.call.to_string()
            ],
        )
        .map_err(db_err)?;
    if n == 0 {
        return Err(StoreError::NoSuchUser(user.call.to_string()));
    }
    Ok(())
}

fn hash_in(memory: &mut Argon2Memory, password: &str) -> Result<String, StoreError> {
    memory
        .phc(password)
        .map_err(|e| StoreError::Database(format!("cannot hash password: {e}")))
}

impl Store {
    /// `call`'s stored password hash, for checking elsewhere with [`verify_password`] (with
    /// [`DUMMY_HASH`] when there is none). Cheap: no hashing here.
    pub fn password_hash(&mut self, call: Callsign) -> Result<Option<String>, StoreError> {
        password_hash(&self.conn, call)
    }

    /// Adds a user. `password` may be `None` for a radio-only user (AX.25 needs none).
    pub fn add_user(
        &mut self,
        call: Callsign,
        password: Option<&str>,
        sysop: bool,
        bbs: bool,
    ) -> Result<(), StoreError> {
        let hash = password.map(|p| hash_in(&mut self.argon2, p)).transpose()?;
        self.add_user_hashed(call, hash.as_deref(), sysop, bbs)
    }

    /// Adds a user whose password hash ([`hash_password`]) was made elsewhere (the daemon makes
    /// it off the store thread); `None`: no password (radio only).
    pub fn add_user_hashed(
        &mut self,
        call: Callsign,
        hash: Option<&str>,
        sysop: bool,
        bbs: bool,
    ) -> Result<(), StoreError> {
        let call = call.to_string();
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
    pub fn set_password(&mut self, call: Callsign, password: &str) -> Result<(), StoreError> {
        let hash = hash_in(&mut self.argon2, password)?;
        self.set_password_hashed(call, &hash)
    }

    /// Sets a user's password from a hash ([`hash_password`]) made elsewhere (the daemon makes
    /// it off the store thread). It unlocks a locked user.
    pub fn set_password_hashed(&mut self, call: Callsign, hash: &str) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE users SET password = ?1 WHERE call = ?2",
                params![hash, call.to_string()],
            )
            .map_err(db_err)?;
        if n == 0 {
            return Err(StoreError::NoSuchUser(call.to_string()));
        }
        Ok(())
    }

    /// Sets a user's sysop and BBS flags (`None` leaves one as it is).
    pub fn set_flags(
        &mut self,
        call: Callsign,
        sysop: Option<bool>,
        bbs: Option<bool>,
    ) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE users SET sysop = COALESCE(?1, sysop), bbs = COALESCE(?2, bbs) WHERE call = ?3",
                params![sysop, bbs, call.to_string()],
            )
            .map_err(db_err)?;
        if n == 0 {
            return Err(StoreError::NoSuchUser(call.to_string()));
        }
        Ok(())
    }

    /// Removes a user; their mail stays.
    pub fn delete_user(&mut self, call: Callsign) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute("DELETE FROM users WHERE call = ?1", [call.to_string()])
            .map_err(db_err)?;
        if n == 0 {
            return Err(StoreError::NoSuchUser(call.to_string()));
        }
        Ok(())
    }

    /// What a web session of `call` was opened with: `"S:"` or `"U:"` (sysop or not) and the
    /// stored password hash, while `call` has a password and is not locked. A session whose
    /// stamp no longer matches (deleted, locked, promoted or demoted, new password) has ended.
    pub fn login_stamp(&mut self, call: Callsign) -> Result<Option<String>, StoreError> {
        let row: Option<Option<String>> = self
            .conn
            .query_row(
                "SELECT CASE WHEN sysop THEN 'S:' ELSE 'U:' END || password FROM users \
                 WHERE call = ?1 AND substr(password, 1, 1) != '!'",
                [call.to_string()],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        Ok(row.flatten())
    }

    /// Locks or unlocks `call`'s password logins (telnet, forwarding port, web) without losing
    /// the password. False: the user has no password to lock, or was already so.
    pub fn set_locked(&mut self, call: Callsign, locked: bool) -> Result<bool, StoreError> {
        let sql = if locked {
            "UPDATE users SET password = ?1 || password \
             WHERE call = ?2 AND password IS NOT NULL AND substr(password, 1, 1) != ?1"
        } else {
            "UPDATE users SET password = substr(password, 2) \
             WHERE call = ?2 AND substr(password, 1, 1) = ?1"
        };
        let n = self
            .conn
            .execute(sql, params![LOCKED, call.to_string()])
            .map_err(db_err)?;
        Ok(n > 0)
    }

    /// The callsigns whose logins are locked, sorted.
    pub fn locked_users(&mut self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT call FROM users WHERE substr(password, 1, 1) = ?1 ORDER BY call")
            .map_err(db_err)?;
        let calls = stmt
            .query_map([LOCKED], |r| r.get(0))
            .map_err(db_err)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(db_err)?;
        Ok(calls)
    }

    /// Notes that `call` logged in from `prefix` (an address or a network, as text) at `now`.
    pub fn logged_in_from(
        &mut self,
        call: Callsign,
        prefix: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO login_places (call, prefix, last) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (call, prefix) DO UPDATE SET last = MAX(last, excluded.last)",
            )
            .and_then(|mut st| st.execute(params![call.to_string(), prefix, now]))
            .map_err(db_err)?;
        Ok(())
    }

    /// The places accounts logged in from since `since` (call, prefix, last login), newest
    /// first, at most `limit`; older ones are forgotten.
    pub fn login_places(
        &mut self,
        since: i64,
        limit: usize,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        self.conn
            .execute("DELETE FROM login_places WHERE last < ?1", [since])
            .map_err(db_err)?;
        let mut st = self
            .conn
            .prepare("SELECT call, prefix, last FROM login_places ORDER BY last DESC LIMIT ?1")
            .map_err(db_err)?;
        let rows = st
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err);
        rows
    }

    /// Where (an address or a network, as text) and when `call` last logged in with a
    /// password, newest first, at most `limit` (places are kept 30 days).
    pub fn last_logins(
        &mut self,
        call: Callsign,
        limit: usize,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT prefix, last FROM login_places WHERE call = ?1 ORDER BY last DESC LIMIT ?2",
            )
            .map_err(db_err)?;
        let rows = st
            .query_map(params![call.to_string(), limit as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err);
        rows
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

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::{PasswordHasher, PasswordVerifier};

    #[test]
    fn hashes_stay_phc_compatible_both_ways() {
        let mut mem = Argon2Memory::default();
        // A hash made by the argon2 crate's own hasher (as earlier versions stored them), with
        // the default parameters and with other ones, verifies here.
        let salt = SaltString::generate(&mut OsRng);
        let old = Argon2::default()
            .hash_password(b"secret", &salt)
            .unwrap()
            .to_string();
        let small = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(1024, 1, 1, Some(16)).unwrap(),
        )
        .hash_password(b"secret", &salt)
        .unwrap()
        .to_string();
        for phc in [&old, &small] {
            let parsed = PasswordHash::new(phc).unwrap();
            assert!(mem.verify("secret", &parsed).unwrap(), "{phc}");
            assert!(!mem.verify("Secret", &parsed).unwrap(), "{phc}");
        }
        // And what we write verifies with the crate's verifier.
        let new = mem.phc("secret").unwrap();
        assert!(new.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{new}");
        let parsed = PasswordHash::new(&new).unwrap();
        assert!(Argon2::default()
            .verify_password(b"secret", &parsed)
            .is_ok());
        assert!(mem.verify("secret", &parsed).unwrap());
        // The memory was allocated once, for the largest parameters seen.
        assert_eq!(mem.0.len(), Params::default().block_count());
    }

    #[test]
    fn login_places_are_kept_and_old_ones_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path(), crate::Durability::Normal).unwrap();
        s.logged_in_from(crate::tests::call("n0usr"), "192.0.2.7/32", 100)
            .unwrap();
        s.logged_in_from(crate::tests::call("N0USR"), "192.0.2.7/32", 50)
            .unwrap();
        s.logged_in_from(crate::tests::call("N0OTH"), "2001:db8::/64", 10)
            .unwrap();
        drop(s);
        let mut s = Store::open(dir.path(), crate::Durability::Normal).unwrap();
        assert_eq!(
            s.login_places(0, 10).unwrap(),
            vec![
                ("N0USR".into(), "192.0.2.7/32".into(), 100),
                ("N0OTH".into(), "2001:db8::/64".into(), 10)
            ]
        );
        assert_eq!(s.login_places(20, 10).unwrap().len(), 1);
        assert_eq!(
            s.login_places(0, 10).unwrap().len(),
            1,
            "forgotten for good"
        );
    }

    #[test]
    fn the_dummy_hash_costs_what_a_real_one_does_and_matches_nothing() {
        let dummy = PasswordHash::new(DUMMY_HASH).unwrap();
        let real = hash_password("secret").unwrap();
        let real = PasswordHash::new(&real).unwrap();
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(
            Params::try_from(&dummy).unwrap(),
            Params::try_from(&real).unwrap()
        );
        for guess in ["", "secret", "password"] {
            assert!(!verify_password(DUMMY_HASH, guess));
        }
        assert!(verify_password(&real.to_string(), "secret"));
        assert!(!verify_password("not a hash", "secret"));
    }
}
