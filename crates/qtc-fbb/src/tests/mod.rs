//! Session tests: paired sessions in every mode, cuts and retries, B1 resume, the xfbbd
//! transcripts, malformed input.

pub(crate) mod util;

mod bpq;
mod pair;
mod transcripts;
mod winlink;
