//! The server's floors, as a test: every module imports only modules on floors below its
//! own (an area's files may use each other; the areas never use each other). The table
//! is the crate docs' diagram; a new module takes a floor here.

use std::path::{Path, PathBuf};

/// `modules_used`, shared with the client's layering test.
mod shared {
    include!("../../../tests/shared/modules_used.rs");
}
use shared::modules_used;

/// The floors, top to bottom. A module is the longest entry its path starts with
/// (`interactions::store::rows` is `interactions`; `api::extract` is its own entry).
/// Everything may use the crate root (`crate::AppState`, `crate::Stores`).
const FLOORS: &[&[&str]] = &[
    // Wiring: start, AppState, the stores; a server for tests.
    &["lib", "testing"],
    // The router, and the routes of no area (capabilities, the OpenAPI document, /run);
    // retention, which prunes the history of several areas through their stores.
    &["api", "retention"],
    // The areas: each owns its tables; they meet only through `seams` and `runner`.
    &["interactions", "execution", "webhooks"],
    // What areas share above the plumbing: the harness and its hooks, serving
    // connections, readiness, metrics.
    &["runner", "http", "readiness", "metrics"],
    // Request extractors and JSON answers every area's routes use.
    &["api::extract", "api::reply"],
    &["limits", "cors", "auth"],
    &["error", "config"],
    &["request_id", "uri"],
    // What one area offers another (traits below both).
    &["seams"],
    // One list of changes: the outbox rows and the watch bus.
    &["announce"],
    // The database.
    &["db"],
];

/// Every source file of the crate: `(path under src/, its text)`.
pub(crate) fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            (relative, text)
        })
        .collect()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// `interactions/store/rows.rs` -> `interactions::store::rows`; `api/mod.rs` -> `api`.
fn module_of(path: &str) -> String {
    let path = path.trim_end_matches(".rs");
    let path = path.strip_suffix("/mod").unwrap_or(path);
    path.replace('/', "::")
}

/// The table entry a module path belongs to (its floor's unit), if any.
fn unit_of(module: &str) -> Option<(&'static str, usize)> {
    FLOORS
        .iter()
        .enumerate()
        .flat_map(|(floor, units)| units.iter().map(move |unit| (*unit, floor)))
        .filter(|(unit, _)| module == *unit || module.starts_with(&format!("{unit}::")))
        .max_by_key(|(unit, _)| unit.len())
}

#[test]
fn every_module_uses_only_modules_below_it() {
    let mut wrong = Vec::new();
    for (path, source) in sources() {
        let module = module_of(&path);
        if module == "layering" {
            continue;
        }
        let (unit, floor) = unit_of(&module).unwrap_or_else(|| {
            panic!("{path}: the module {module} has no floor in layering::FLOORS")
        });
        for used in modules_used(&source) {
            // `crate::AppState` and the like: the root, which everything may use.
            let Some((used_unit, used_floor)) = unit_of(&used) else {
                continue;
            };
            if used_unit == unit || used_unit == "lib" {
                continue;
            }
            if used_floor <= floor {
                wrong.push(format!(
                    "{path} ({unit}, floor {floor}) uses crate::{used} ({used_unit}, floor {used_floor})"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that do not go down (see crates/server/src/layering.rs):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_floor() {
    let declared: Vec<&str> = include_str!("lib.rs")
        .lines()
        .filter_map(|line| {
            line.strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))
        })
        .filter_map(|rest| rest.strip_suffix(';'))
        .filter(|module| *module != "layering")
        .collect();
    for module in declared {
        assert!(
            unit_of(module).is_some(),
            "the module {module} has no floor in layering::FLOORS"
        );
    }
}

#[test]
fn the_checker_sees_an_upward_import() {
    let used = modules_used("use crate::interactions::store::X;\n// crate::api in a comment\nfn f() { crate::db::new_id(); }\n#[cfg(test)]\nmod tests { use crate::testing; }");
    assert_eq!(used, ["interactions::store", "db::new_id"]);
    assert_eq!(
        unit_of("interactions::store::rows"),
        Some(("interactions", 2))
    );
    assert_eq!(unit_of("api::extract::JsonBody"), Some(("api::extract", 4)));
    assert_eq!(unit_of("api::router"), Some(("api", 1)));
    assert_eq!(unit_of("AppState"), None);
}
