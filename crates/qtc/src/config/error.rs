//! The one error type of the config: what is wrong, in which file, under which key, and what
//! to write instead. Each area's check says the key and the fix ([`KeyError`]); loading
//! adds the file ([`ConfigError`]).

use std::path::Path;

/// One key whose value is wrong, and what is expected instead. The key is written as the
/// sysop finds it in the file: `[telnet] listen`, `[[partner]] #2 (N0BBB) connect`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct KeyError {
    /// Where in the file.
    pub key: String,
    /// What is wrong and what to write instead.
    pub problem: String,
}

impl KeyError {
    /// `key` is wrong: `problem`.
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> Self {
        KeyError {
            key: key.into(),
            problem: problem.into(),
        }
    }

    /// The same error with the key inside `section` (`[web]`, `[[partner]] #1 (N0BBB)`).
    pub fn within(self, section: &str) -> Self {
        KeyError {
            key: format!("{section} {}", self.key),
            problem: self.problem,
        }
    }
}

/// Why a configuration could not be loaded. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read (`hint`: what to do about it).
    #[error("cannot read config file {}: {error}{hint}", path.display())]
    Unreadable {
        /// The file.
        path: std::path::PathBuf,
        /// What reading it answered.
        error: std::io::Error,
        /// What to do about it (empty: nothing to say).
        hint: String,
    },
    /// The file is not TOML, or has a key or type the configuration does not know.
    #[error("{file}: {problem}")]
    Syntax {
        /// The file, as named to the sysop.
        file: String,
        /// TOML's message, with the line and column.
        problem: String,
    },
    /// A key's value is wrong.
    #[error("{file}: {error}")]
    Key {
        /// The file, as named to the sysop.
        file: String,
        /// The key and what is wrong with it.
        error: KeyError,
    },
}

impl ConfigError {
    /// Why `path` could not be read, and what to do: it holds partner passwords, so the
    /// package makes it readable by root and the `qtc` group only.
    pub(super) fn unreadable(path: &Path, error: std::io::Error) -> Self {
        let hint = if error.kind() == std::io::ErrorKind::PermissionDenied {
            use std::os::unix::fs::MetadataExt;
            let owner = std::fs::metadata(path)
                .map(|m| {
                    format!(
                        " (mode {:o}, uid {} gid {})",
                        m.mode() & 0o777,
                        m.uid(),
                        m.gid()
                    )
                })
                .unwrap_or_default();
            format!(
                "{owner}: it holds passwords, so only its owner and group read it; run qtc as the \
                 user the daemon runs as (the package's: sudo -u qtc qtc ...)"
            )
        } else {
            String::new()
        };
        ConfigError::Unreadable {
            path: path.to_path_buf(),
            error,
            hint,
        }
    }
}
