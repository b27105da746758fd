//! `cargo xtask bindings` (not written yet).

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("`bindings` is not implemented yet".to_string())
}
