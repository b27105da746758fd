//! Shared helpers for the cross-crate tests.
//!
//! Two kinds of data, kept apart:
//!
//! - The project's own documents, committed under `tests/data/` (see its README): one or
//!   more valid samples per registered wire type (`tests/data/samples/<Type>.<label>.json`)
//!   and documents every schema must reject (`tests/data/invalid/<Type>.<label>.json`).
//!   The Python and TypeScript schema tests read the same files.
//! - Agenta's fixtures, which come from another project and are never copied here: found
//!   through `gatehouse_fixtures` ([`agenta_fixture`] returns `None` when they are absent,
//!   after printing one line; under `CI=true` a missing fixture fails).

// Test support only (the cross-crate tests' helpers): a broken fixture fails loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use gatehouse_fixtures::Upstream;

/// The workspace root (the folder holding the top-level Cargo.toml).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives inside the workspace")
        .to_path_buf()
}

/// The committed JSON Schema folder (`schema/`).
pub fn schema_dir() -> PathBuf {
    workspace_root().join("schema")
}

/// The project's own test data (`tests/data/`).
pub fn data_dir() -> PathBuf {
    workspace_root().join("tests/data")
}

/// The raw text of an Agenta fixture file for the conformance suite `suite`; `None` when
/// the fixtures are absent (the suite is skipped, one line says so).
pub fn agenta_fixture_text(suite: &str, name: &str) -> Option<String> {
    gatehouse_fixtures::read_text(Upstream::Agenta, suite, name)
}

/// An Agenta fixture file parsed as JSON (key order preserved), for the suite `suite`;
/// `None` when the fixtures are absent.
pub fn agenta_fixture(suite: &str, name: &str) -> Option<serde_json::Value> {
    let text = agenta_fixture_text(suite, name)?;
    Some(
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("Agenta fixture {name} is not JSON: {e}")),
    )
}

/// A committed schema file (e.g. `run_request.schema.json`) parsed as JSON.
pub fn committed_schema(file_name: &str) -> serde_json::Value {
    read_json(&schema_dir().join(file_name))
}

/// One document of the project's own data: `tests/data/<relative>`.
pub fn own_document(relative: &str) -> serde_json::Value {
    read_json(&data_dir().join(relative))
}

/// One own sample: `tests/data/samples/<file>`.
pub fn sample(file: &str) -> serde_json::Value {
    own_document(&format!("samples/{file}"))
}

/// Every document of `tests/data/<folder>/` as `(type name, file name, document)`, sorted
/// by file name; the type name is the part of the file name before the first dot.
pub fn documents_in(folder: &str) -> Vec<(String, String, serde_json::Value)> {
    let dir = data_dir().join(folder);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let type_name = file.split('.').next().unwrap_or_default().to_string();
            let document = read_json(&dir.join(&file));
            (type_name, file, document)
        })
        .collect()
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}
