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

/// Replaces the file at `path` with `text` as one step: written beside it, flushed to the disk,
/// then renamed over it, so a crash leaves the old file or the new one, never half of one. The
/// new file keeps the old one's mode and group (it holds partner passwords).
pub fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let old = std::fs::metadata(path)?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.new", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
        // Keeps the group when we may (the package's root:qtc); otherwise it stays ours.
        let _ = std::os::unix::fs::fchown(&f, None, Some(old.gid()));
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
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

    #[test]
    fn a_replaced_file_keeps_its_mode_and_leaves_nothing_beside_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("qtc.toml");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace(&p, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
