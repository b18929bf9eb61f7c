//! Which configuration every command uses, by one rule: `-c FILE`, else `$QTC_CONFIG`, else
//! /etc/qtc/qtc.toml if it exists, else the built-in defaults (data in ./qtc-data). With the
//! .deb, `sudo qtc user add …` thus reaches the store the service runs on, not a new one in
//! whatever folder it was typed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::{self, Loaded};

/// The environment variable naming the configuration file.
pub const ENV: &str = "QTC_CONFIG";
/// The configuration the .deb installs, used when present.
pub const SYSTEM: &str = "/etc/qtc/qtc.toml";

/// The file to load (`None`: the built-in defaults), from the `-c` flag, the environment
/// variable's value and whether [`SYSTEM`] exists.
pub fn choose(
    flag: Option<PathBuf>,
    env: Option<OsString>,
    system_exists: bool,
) -> Option<PathBuf> {
    flag.or_else(|| env.filter(|v| !v.is_empty()).map(PathBuf::from))
        .or_else(|| system_exists.then(|| PathBuf::from(SYSTEM)))
}

/// Loads the configuration `choose` picks on this machine.
pub fn load(flag: Option<PathBuf>) -> anyhow::Result<Loaded> {
    let path = choose(flag, std::env::var_os(ENV), Path::new(SYSTEM).exists());
    Ok(config::load(path.as_deref())?)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_flag_then_the_environment_then_the_system_file() {
        let p = |s: &str| Some(PathBuf::from(s));
        let env = || Some(OsString::from("/srv/qtc.toml"));
        assert_eq!(choose(p("a.toml"), env(), true), p("a.toml"));
        assert_eq!(choose(None, env(), true), p("/srv/qtc.toml"));
        assert_eq!(choose(None, Some(OsString::new()), true), p(SYSTEM));
        assert_eq!(choose(None, None, true), p(SYSTEM));
        assert_eq!(choose(None, None, false), None);
    }
}
