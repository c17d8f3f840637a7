//! `wrapspec::parse` on arbitrary UTF-8 text, then `rust_type` on every parsed parameter
//! type (which `parse` already accepted, so it must succeed again) and `role_args` on
//! every call. `rust_type` is also run on each raw input line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmpi_core::wrapspec::{parse, rust_type};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.lines() {
        let _ = rust_type(line, "ffi");
    }
    let Ok(wraps) = parse(text) else { return };
    for w in &wraps {
        for p in &w.params {
            if let Err(e) = rust_type(&p.c_type, "ffi") {
                panic!("parse accepted `{}` but rust_type refuses it: {e}", p.c_type);
            }
        }
        // Every role is a parameter, a number (an `int` role given as a constant) or the
        // null pointer of an optional role left out.
        for a in w.role_args() {
            assert!(
                w.params.iter().any(|p| p.name == a)
                    || a.parse::<i64>().is_ok()
                    || a == "::std::ptr::null_mut()",
                "role argument `{a}` of {} is neither a parameter, a number nor null",
                w.name
            );
        }
    }
});
