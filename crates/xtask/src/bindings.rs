//! `cargo xtask bindings [--check] [--profile NAME]`: regenerate the Kotlin, Swift and
//! Python bindings of gatehouse-ffi (or, with `--check`, fail when a committed one is stale).
//!
//! The steps, each its own cargo invocation so the bindgen's features never reach the
//! shipped library:
//! 1. `cargo build -p gatehouse-ffi --profile mobile`: the library. The profile keeps the
//!    symbol table (`strip = "debuginfo"`), where uniffi's metadata lives.
//! 2. `cargo build -p uniffi-bindgen`: the generator.
//! 3. `uniffi-bindgen generate --library <lib> --language L --no-format` per language, into
//!    a scratch directory, from the workspace root (library mode reads
//!    `crates/ffi/uniffi.toml` through cargo metadata).
//! 4. Without `--check`: copy the files into `bindings/`. With `--check`: compare them
//!    with the committed files and list every difference.
//!
//! Output layout:
//! - `bindings/kotlin/src/main/kotlin/dev/gatehouse/ffi/gatehouse_ffi.kt`
//! - `bindings/swift/{gatehouse_ffi.swift, gatehouse_ffiFFI.h, gatehouse_ffiFFI.modulemap}`
//! - `bindings/python/gatehouse/gatehouse_ffi.py`

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cargo, profile_dir, run_command, target_dir, workspace_root};

/// The cargo profile the library is built with unless `--profile` says otherwise.
pub const DEFAULT_PROFILE: &str = "mobile";

/// One language: its bindgen name, where its files go (relative to the workspace root),
/// and which files there are generated (the others, like `check.py` or `__init__.py`, are
/// written by hand).
struct Language {
    name: &'static str,
    destination: &'static str,
    is_generated: fn(&Path) -> bool,
}

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.contains(&e))
}

const LANGUAGES: [Language; 3] = [
    Language {
        name: "kotlin",
        destination: "bindings/kotlin/src/main/kotlin",
        is_generated: |_| true,
    },
    Language {
        name: "swift",
        destination: "bindings/swift",
        is_generated: |path| has_extension(path, &["swift", "h", "modulemap"]),
    },
    Language {
        name: "python",
        destination: "bindings/python/gatehouse",
        is_generated: |path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("gatehouse_ffi") && n.ends_with(".py"))
        },
    },
];

/// Parsed command line.
struct Options {
    check: bool,
    profile: String,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        check: false,
        profile: DEFAULT_PROFILE.to_string(),
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--check" => options.check = true,
            "--profile" => {
                options.profile = iter
                    .next()
                    .ok_or("--profile needs a cargo profile name")?
                    .clone();
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: cargo xtask bindings [--check] [--profile NAME]"
                ))
            }
        }
    }
    Ok(options)
}

/// The built shared library for this platform, under cargo's target directory `target`.
pub fn library_path(target: &Path, profile: &str) -> PathBuf {
    let name = if cfg!(target_os = "macos") {
        "libgatehouse_ffi.dylib"
    } else if cfg!(target_os = "windows") {
        "gatehouse_ffi.dll"
    } else {
        "libgatehouse_ffi.so"
    };
    profile_dir(target, profile).join(name)
}

/// Build the library with `profile` (separately from the bindgen) and return its path
/// under cargo's target directory `target`.
pub fn build_library(root: &Path, target: &Path, profile: &str) -> Result<PathBuf, String> {
    run_command(cargo().current_dir(root).args([
        "build",
        "-p",
        "gatehouse-ffi",
        "--lib",
        "--profile",
        profile,
    ]))?;
    let library = library_path(target, profile);
    if library.is_file() {
        Ok(library)
    } else {
        Err(format!(
            "cargo built gatehouse-ffi but {} is not there",
            library.display()
        ))
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let root = workspace_root();
    let target = target_dir(&root)?;

    let library = build_library(&root, &target, &options.profile)?;
    run_command(
        cargo()
            .current_dir(&root)
            .args(["build", "-p", "uniffi-bindgen"]),
    )?;
    let bindgen =
        profile_dir(&target, "dev").join(format!("uniffi-bindgen{}", std::env::consts::EXE_SUFFIX));

    let scratch = std::env::temp_dir().join(format!("gatehouse-bindings-{}", std::process::id()));
    let result = generate_and_apply(&root, &bindgen, &library, &scratch, options.check);
    // Best effort: a leftover scratch directory in /tmp is harmless.
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn generate_and_apply(
    root: &Path,
    bindgen: &Path,
    library: &Path,
    scratch: &Path,
    check: bool,
) -> Result<(), String> {
    let mut stale = Vec::new();
    for language in &LANGUAGES {
        let out = scratch.join(language.name);
        fs::create_dir_all(&out).map_err(|e| format!("could not create {}: {e}", out.display()))?;
        run_command(
            Command::new(bindgen)
                .current_dir(root)
                .arg("generate")
                .arg("--library")
                .arg(library)
                .args(["--language", language.name, "--no-format", "--out-dir"])
                .arg(&out),
        )?;
        let destination = root.join(language.destination);
        if check {
            stale.extend(compare_trees(&out, &destination)?);
            stale.extend(
                leftovers(&out, &destination, language.is_generated)?
                    .iter()
                    .map(|path| format!("{} is no longer generated (delete it)", path.display())),
            );
        } else {
            for path in leftovers(&out, &destination, language.is_generated)? {
                fs::remove_file(&path)
                    .map_err(|e| format!("could not delete {}: {e}", path.display()))?;
                eprintln!("deleted {}: no longer generated", path.display());
            }
            copy_tree(&out, &destination)?;
            eprintln!(
                "wrote {} bindings to {}",
                language.name,
                destination.display()
            );
        }
    }
    if stale.is_empty() {
        if check {
            eprintln!("bindings are up to date");
        }
        Ok(())
    } else {
        Err(format!(
            "committed bindings are stale; run `cargo xtask bindings` and commit:\n  {}",
            stale.join("\n  ")
        ))
    }
}

/// Every file under `dir`, as paths relative to it.
fn files_under(dir: &Path) -> Result<BTreeSet<PathBuf>, String> {
    let mut files = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = fs::read_dir(&current)
            .map_err(|e| format!("could not list {}: {e}", current.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("could not list {}: {e}", current.display()))?;
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                files.insert(relative.to_path_buf());
            }
        }
    }
    Ok(files)
}

/// Compare freshly generated files with the committed ones. Returns one line per
/// difference: a changed file, or a generated file that is not committed.
pub fn compare_trees(generated: &Path, committed: &Path) -> Result<Vec<String>, String> {
    let mut differences = Vec::new();
    for relative in files_under(generated)? {
        let fresh = fs::read(generated.join(&relative))
            .map_err(|e| format!("could not read {}: {e}", relative.display()))?;
        let target = committed.join(&relative);
        match fs::read(&target) {
            Ok(existing) if existing == fresh => {}
            Ok(_) => differences.push(format!(
                "{} differs from the generated file",
                target.display()
            )),
            Err(_) => differences.push(format!("{} is missing", target.display())),
        }
    }
    Ok(differences)
}

/// Committed files that look generated (per `is_generated`) but that generation no longer
/// writes, e.g. after a rename.
pub fn leftovers(
    generated: &Path,
    committed: &Path,
    is_generated: fn(&Path) -> bool,
) -> Result<Vec<PathBuf>, String> {
    if !committed.is_dir() {
        return Ok(Vec::new());
    }
    let fresh = files_under(generated)?;
    Ok(files_under(committed)?
        .into_iter()
        .filter(|relative| is_generated(relative) && !fresh.contains(relative))
        .map(|relative| committed.join(relative))
        .collect())
}

/// Copy every file under `from` to the same relative path under `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    for relative in files_under(from)? {
        let target = to.join(&relative);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
        }
        fs::copy(from.join(&relative), &target)
            .map_err(|e| format!("could not write {}: {e}", target.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("xtask-bindings-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_stale_or_missing_binding_is_reported_and_a_fresh_one_is_not() {
        let generated = scratch("generated");
        let committed = scratch("committed");
        fs::create_dir_all(generated.join("dev/gatehouse")).unwrap();
        fs::write(generated.join("dev/gatehouse/a.kt"), "fun a() = 1\n").unwrap();
        fs::write(generated.join("b.h"), "int b(void);\n").unwrap();

        // Nothing committed yet: both missing.
        let missing = compare_trees(&generated, &committed).unwrap();
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(missing.iter().all(|line| line.ends_with("is missing")));

        // Committed and equal: clean.
        copy_tree(&generated, &committed).unwrap();
        assert!(compare_trees(&generated, &committed).unwrap().is_empty());

        // One file edited by hand (or the Rust side changed): stale.
        fs::write(committed.join("b.h"), "int b(int);\n").unwrap();
        let stale = compare_trees(&generated, &committed).unwrap();
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert!(stale[0].contains("b.h") && stale[0].ends_with("differs from the generated file"));

        let _ = fs::remove_dir_all(&generated);
        let _ = fs::remove_dir_all(&committed);
    }

    #[test]
    fn a_committed_file_generation_no_longer_writes_is_reported() {
        let generated = scratch("gen-leftover");
        let committed = scratch("com-leftover");
        fs::write(generated.join("Gatehouse.swift"), "// new\n").unwrap();
        fs::write(committed.join("Gatehouse.swift"), "// new\n").unwrap();
        fs::write(committed.join("Old.swift"), "// renamed away\n").unwrap();
        fs::write(committed.join("check.py"), "# hand-written\n").unwrap();
        let swift = &LANGUAGES[1];
        let lines = leftovers(&generated, &committed, swift.is_generated).unwrap();
        assert_eq!(lines, vec![committed.join("Old.swift")]);
        let _ = fs::remove_dir_all(&generated);
        let _ = fs::remove_dir_all(&committed);
    }

    #[test]
    fn profiles_map_to_cargo_directories() {
        let target = Path::new("/t");
        assert_eq!(profile_dir(target, "dev"), Path::new("/t/debug"));
        assert_eq!(profile_dir(target, "bench"), Path::new("/t/release"));
        assert_eq!(profile_dir(target, "mobile"), Path::new("/t/mobile"));
        assert!(parse(&["--profile".to_string()]).is_err());
        let options = parse(&["--check".to_string()]).unwrap();
        assert!(options.check);
        assert_eq!(options.profile, DEFAULT_PROFILE);
    }
}
