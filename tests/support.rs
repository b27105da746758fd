//! Shared helpers for the cross-crate tests.

use std::path::PathBuf;

/// The workspace root (the folder holding the top-level Cargo.toml).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives inside the workspace")
        .to_path_buf()
}

/// `../shared/fixtures/agenta` beside the checkout (CI lays `shared/` next to the clone).
pub fn agenta_fixtures() -> PathBuf {
    workspace_root().join("../shared/fixtures/agenta")
}
