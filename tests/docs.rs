//! Documentation stays in step with the code.

#[test]
fn every_environment_variable_is_documented() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/LD_PRELOAD.md")).unwrap();
    for v in pmpi_core::config::VARIABLES {
        assert!(
            doc.contains(&format!("`{v}`")),
            "{v} is not documented in LD_PRELOAD.md"
        );
    }
}
