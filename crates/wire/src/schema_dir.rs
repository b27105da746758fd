//! What the committed `schema/` folder holds: one JSON Schema per registered wire type
//! ([`crate::schema`]), their `index.json`, and the server's OpenAPI document
//! ([`crate::openapi`], `openapi.json`).
//!
//! `cargo xtask schema` writes [`files`]; `cargo xtask schema --check` and a contract
//! test fail when a committed file differs. It sits above both modules it lists, so that
//! neither needs the other's name to say what the folder holds.
//!
//! ```
//! let files = gatehouse_wire::schema_dir::files();
//! assert!(files.iter().any(|(name, _)| name == "index.json"));
//! assert_eq!(files.last().map(|(name, _)| name.as_str()), Some("openapi.json"));
//! ```

use crate::{openapi, schema};

/// Every file `schema/` must hold, as `(file name, contents)`: one per entry of
/// [`schema::all`], then `index.json`, then `openapi.json` (built from the same entries).
pub fn files() -> Vec<(String, String)> {
    let entries = schema::all();
    let mut files: Vec<(String, String)> = entries
        .iter()
        .map(|entry| (entry.file_name.to_string(), entry.to_file_contents()))
        .collect();
    files.push((
        schema::INDEX_FILE_NAME.to_string(),
        schema::pretty(&schema::index(&entries)),
    ));
    files.push((openapi::FILE_NAME.to_string(), openapi::document_text()));
    files
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::files;

    /// Every `oneOf` whose branches are all `const`s, anywhere in `value`, by JSON path.
    fn one_of_consts(value: &Value, path: &str, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::Array(branches)) = map.get("oneOf") {
                    if branches.iter().all(|b| b.get("const").is_some()) {
                        found.push(path.to_string());
                    }
                }
                for (key, inner) in map {
                    one_of_consts(inner, &format!("{path}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    one_of_consts(inner, &format!("{path}/{i}"), found);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn no_generated_schema_has_a_one_of_of_consts() {
        let mut found = Vec::new();
        for (name, text) in files() {
            let value: Value = serde_json::from_str(&text).unwrap();
            one_of_consts(&value, &name, &mut found);
        }
        assert!(
            found.is_empty(),
            "a oneOf of consts (generators want an enum): {found:?}"
        );
    }
}
