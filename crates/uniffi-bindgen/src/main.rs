//! The uniffi binding generator for gatehouse-ffi, built on its own (`cargo build -p
//! uniffi-bindgen`) so its `cli` features never reach the shipped library. Run in library
//! mode by `cargo xtask bindings` and by maturin when it builds the Python wheel
//! (`cargo run --bin uniffi-bindgen` from the workspace root, hence a default member).

// A command-line tool: uniffi's generator prints its usage and errors.
#![allow(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    uniffi::uniffi_bindgen_main()
}
