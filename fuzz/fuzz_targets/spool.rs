//! `trace::parse_spool` on arbitrary bytes: never panics; on success the records and the
//! trailing byte count account for every byte after the header, and re-encoding the
//! records gives back the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmpi_core::trace::{RECORD_SIZE, SPOOL_HEADER, parse_spool};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = parse_spool(data) else { return };
    assert!(s.trailing_bytes < RECORD_SIZE);
    assert_eq!(
        SPOOL_HEADER + s.records.len() * RECORD_SIZE + s.trailing_bytes,
        data.len()
    );
    for (i, r) in s.records.iter().enumerate() {
        let at = SPOOL_HEADER + i * RECORD_SIZE;
        assert_eq!(&r.as_bytes()[..], &data[at..at + RECORD_SIZE]);
        let _ = r.duration_s();
        let _ = pmpi_core::trace::call_name(r.call);
        let _ = pmpi_core::trace::call_kind(r.call);
    }
});
