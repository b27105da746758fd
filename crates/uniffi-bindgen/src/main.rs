//! The uniffi binding generator for gatehouse-ffi, built on its own (`cargo build -p
//! uniffi-bindgen`) so its `cli` features never reach the shipped library. Run by
//! `cargo xtask bindings` in library mode.

fn main() {
    uniffi::uniffi_bindgen_main()
}
