//! Shared helpers for the cross-crate tests.

use std::path::PathBuf;

/// The workspace root (the folder holding the top-level Cargo.toml).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives inside the workspace")
        .to_path_buf()
}

/// Agenta's fixture folder, where the conformance suites find it (`gatehouse_fixtures`).
pub fn agenta_fixtures() -> PathBuf {
    gatehouse_fixtures::fixtures_root().join(gatehouse_fixtures::Upstream::Agenta.folder())
}

/// The committed JSON Schema folder (`schema/`).
pub fn schema_dir() -> PathBuf {
    workspace_root().join("schema")
}

/// The raw text of an Agenta fixture file.
pub fn agenta_fixture_text(name: &str) -> String {
    let path = agenta_fixtures().join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
}

/// An Agenta fixture file parsed as JSON (key order preserved).
pub fn agenta_fixture(name: &str) -> serde_json::Value {
    serde_json::from_str(&agenta_fixture_text(name))
        .unwrap_or_else(|e| panic!("fixture {name} is not JSON: {e}"))
}

/// A committed schema file (e.g. `run_request.schema.json`) parsed as JSON.
pub fn committed_schema(file_name: &str) -> serde_json::Value {
    let path = schema_dir().join(file_name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}
