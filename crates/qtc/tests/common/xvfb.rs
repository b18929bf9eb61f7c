//! A virtual X display (Xvfb) for the tests that drive a real graphical client (Claws Mail):
//! Xvfb picks a free display number itself and says it when it is ready (`-displayfd`), so
//! nothing waits on time or guesses a number another test may hold.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running Xvfb; stopped when dropped.
pub struct Xvfb {
    child: Child,
    /// `:N`, for `DISPLAY`.
    pub display: String,
}

impl Xvfb {
    /// Starts Xvfb and returns once it takes connections.
    pub fn start() -> Xvfb {
        let mut child = Command::new("Xvfb")
            .args(["-displayfd", "1", "-nolisten", "tcp", "-screen", "0"])
            .arg("1024x768x24")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        let mut line = String::new();
        // Xvfb writes the number when its socket listens, or exits (end of file) if it fails.
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let number = line.trim();
        assert!(!number.is_empty(), "Xvfb did not start");
        Xvfb {
            child,
            display: format!(":{number}"),
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
