//! Standard output of the command line. `println!` panics when the reader has gone
//! (`qtc fwd queue | head -1`); `outln!` returns the error instead, and `main` ends quietly
//! and successfully on a closed pipe ([`closed_pipe`]).

/// `println!` that passes a write error up with `?` (the function returns an `anyhow` or
/// `io` result).
macro_rules! outln {
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(
            &mut std::io::stdout(),
            format_args!("{}\n", format_args!($($arg)*)),
        )?
    };
}

/// Whether `e` comes from writing to a pipe whose reader has gone.
pub fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// "1 message", "2 messages".
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
