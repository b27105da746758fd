// Shared by the crates' layering tests, which include this file (`include!`):
// `crates/server/src/layering.rs` and the `layering` test module of
// `crates/client/src/lib.rs`. No crate compiles it on its own. (`include!` takes no inner
// attributes or `//!` docs here.)

/// The module paths a source file names as `crate::a::b` in its code (not its comments,
/// whose links may point anywhere, nor its test module): `use crate::interactions::store::X`
/// names `interactions::store` (a path ends at its first name that is not lower case).
pub(crate) fn modules_used(source: &str) -> Vec<String> {
    let code = source.split("#[cfg(test)]\nmod ").next().unwrap_or(source);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .flat_map(|line| line.split("crate::").skip(1))
        .map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            rest[..end].trim_end_matches(':').to_string()
        })
        .filter(|path| !path.is_empty())
        .collect()
}
