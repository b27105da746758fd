//! `cargo xtask schema [--check]`: write schema/*.json (one file per wire type, plus
//! index.json, plus openapi.json: the server's OpenAPI 3.1 document generated from the
//! route registry `gatehouse_wire::openapi` and the same types) from
//! `gatehouse_wire::schema::files`, or, with `--check`, fail listing every stale, missing
//! or orphaned file.

use std::path::Path;

use crate::util::workspace_root;

/// Names of the files in `dir` that differ from, are missing from, or are not part of
/// `expected`.
fn stale_files(dir: &Path, expected: &[(String, String)]) -> Vec<String> {
    let mut stale = Vec::new();
    for (name, contents) in expected {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(existing) if &existing == contents => {}
            Ok(_) => stale.push(format!("{name} (differs from what the types generate)")),
            Err(_) => stale.push(format!("{name} (missing)")),
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut orphans: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json") && !expected.iter().any(|(name, _)| name == n))
            .map(|n| format!("{n} (no wire type generates it)"))
            .collect();
        orphans.sort();
        stale.extend(orphans);
    }
    stale
}

pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        other => {
            return Err(format!(
                "unexpected arguments {other:?}; usage: cargo xtask schema [--check]"
            ))
        }
    };
    let dir = workspace_root().join("schema");
    let expected = gatehouse_wire::schema::files();
    if check {
        let stale = stale_files(&dir, &expected);
        if stale.is_empty() {
            eprintln!("schema/: {} files up to date", expected.len());
            return Ok(());
        }
        return Err(format!(
            "schema/ is stale; run `cargo xtask schema`:\n  {}",
            stale.join("\n  ")
        ));
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for orphan in stale_files(&dir, &expected)
        .iter()
        .filter(|s| s.ends_with("(no wire type generates it)"))
    {
        let name = orphan.split(' ').next().unwrap_or_default();
        let path = dir.join(name);
        std::fs::remove_file(&path)
            .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        eprintln!("removed {}", path.display());
    }
    for (name, contents) in &expected {
        let path = dir.join(name);
        std::fs::write(&path, contents)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    eprintln!("wrote {} files to {}", expected.len(), dir.display());
    Ok(())
}
