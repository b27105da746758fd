//! `cargo xtask schema` (not written yet).

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("`schema` is not implemented yet".to_string())
}
