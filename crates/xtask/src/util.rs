//! Small helpers shared by the xtask commands.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.to_path_buf())
        .unwrap_or(manifest)
}

/// Cargo's target directory as cargo itself resolves it (`CARGO_TARGET_DIR`, a
/// `build.target-dir` setting, or `<workspace>/target`): `cargo metadata`'s
/// `target_directory`. Every built artifact is looked up under it, never under `target/`.
pub fn target_dir(root: &Path) -> Result<PathBuf, String> {
    let metadata = cargo_metadata(root, &["--no-deps"])?;
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata printed no target_directory".to_string())
}

/// The directory cargo puts a profile's artifacts in under `target` (`dev` and `test`
/// build into `debug`, `bench` into `release`).
pub fn profile_dir(target: &Path, profile: &str) -> PathBuf {
    let dir = match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    };
    target.join(dir)
}

/// Run a command to completion, echoing it first; an error names it.
pub fn run_command(command: &mut Command) -> Result<(), String> {
    eprintln!("+ {command:?}");
    let status = command
        .status()
        .map_err(|e| format!("could not start {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed with {status}"))
    }
}

/// The cargo binary that runs us.
pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()))
}

/// Read and parse a JSON file; an error names the file.
pub fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

/// `cargo metadata --format-version 1 <args>` in `root`, parsed.
pub fn cargo_metadata(root: &Path, args: &[&str]) -> Result<serde_json::Value, String> {
    let output = cargo()
        .current_dir(root)
        .args(["metadata", "--format-version", "1"])
        .args(args)
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_dir_is_the_one_cargo_built_this_test_into() {
        let target = target_dir(&workspace_root()).unwrap();
        let this_test = std::env::current_exe().unwrap();
        assert!(
            this_test.starts_with(&target),
            "{} is not under {}",
            this_test.display(),
            target.display()
        );
        if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
            if Path::new(&dir).is_absolute() {
                assert_eq!(target, PathBuf::from(dir));
            }
        }
    }
}
