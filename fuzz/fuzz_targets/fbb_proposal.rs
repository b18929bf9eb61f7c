//! Fuzz the FBB batch line parsers: SID, Winlink `;FW:`, proposals, F>, FS, MBL lines and answers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_fbb::wire::mbl::{MblAnswer, SendLine};
use qtc_fbb::wire::proposal::{emit_answer, Dialect, FbbLine, ProposalLine};
use qtc_fbb::wire::sid::{forwards_line, Sid};

fuzz_target!(|data: &[u8]| {
    if let Ok(FbbLine::Proposal(p)) = FbbLine::parse(data) {
        // What we parsed must emit and parse back to itself.
        let mut out = Vec::new();
        p.emit(&mut out);
        assert_eq!(ProposalLine::parse(&out).ok(), Some(p));
    }
    if let Ok(FbbLine::Answer(a)) = FbbLine::parse(data) {
        for d in [Dialect::Plain, Dialect::B1] {
            let mut out = Vec::new();
            emit_answer(&a, d, &mut out);
            assert_eq!(FbbLine::parse(&out).ok(), Some(FbbLine::Answer(a.clone())));
        }
    }
    if let Ok(s) = Sid::parse(data) {
        let _ = s.to_string();
    }
    if let Ok(s) = SendLine::parse(data) {
        let mut out = Vec::new();
        s.emit(&mut out);
        assert!(SendLine::parse(&out).is_ok());
    }
    let _ = MblAnswer::parse(data);
    let _ = forwards_line(data);
});
