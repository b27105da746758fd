//! `cargo xtask test` (not written yet).

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("`test` is not implemented yet".to_string())
}
