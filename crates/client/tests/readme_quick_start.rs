//! The README's Rust quick start is a complete program that compiles as pasted: its text
//! is `examples/readme_quick_start.rs` below a fixed header (cargo builds the examples
//! with the tests, clippy with `--all-targets`), and its manifest names what that program
//! needs (tokio with its macros and runtime).

use std::path::{Path, PathBuf};

/// What the example file holds above the README's text.
const EXAMPLE_HEADER: &str = "\
//! The README's Rust quick start, exactly as printed there below this header (a test,
//! crates/client/tests/readme_quick_start.rs, compares them).

// An example binary: it prints what it does.
#![allow(clippy::print_stdout)]
";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The body of the first fenced block of `language` after the line holding `marker`.
fn fenced_block_after<'a>(text: &'a str, marker: &str, language: &str) -> &'a str {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("README.md has no {marker:?} marker"));
    let fence = format!("```{language}\n");
    let start = at
        + text[at..]
            .find(&fence)
            .unwrap_or_else(|| panic!("no ```{language} block after {marker:?}"))
        + fence.len();
    let end = start
        + text[start..]
            .find("```\n")
            .unwrap_or_else(|| panic!("the ```{language} block after {marker:?} is not closed"));
    &text[start..end]
}

#[test]
fn the_readme_rust_quick_start_is_the_compiled_example() {
    let readme = read(&repository_root().join("README.md"));
    let block = fenced_block_after(&readme, "<!-- readme-rust-quick-start", "rust");
    let example_path = repository_root().join("crates/client/examples/readme_quick_start.rs");
    let example = read(&example_path);
    let expected = format!("{EXAMPLE_HEADER}{block}");
    assert!(
        example == expected,
        "{} is not the README's Rust quick start below its header; write it as:\n{expected}",
        example_path.display()
    );
    // A whole program, not a fragment.
    assert!(block.contains("#[tokio::main]") && block.contains("async fn main()"));
}

#[test]
fn the_readme_rust_manifest_names_what_the_program_needs() {
    let readme = read(&repository_root().join("README.md"));
    let manifest = fenced_block_after(&readme, "<!-- readme-rust-manifest", "toml");
    assert!(manifest.starts_with("[dependencies]\n"), "{manifest}");
    let line = |name: &str| {
        manifest
            .lines()
            .find(|line| line.starts_with(&format!("{name} = ")))
            .unwrap_or_else(|| panic!("the manifest has no {name} line:\n{manifest}"))
    };
    assert!(line("gatehouse-client").contains("crates/client"));
    let tokio = line("tokio");
    for feature in ["\"macros\"", "\"rt-multi-thread\""] {
        assert!(tokio.contains(feature), "tokio needs {feature}: {tokio}");
    }
}
