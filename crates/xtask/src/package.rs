//! `cargo xtask package`: the crates a user installs, packaged and verified as crates.io
//! would take them, and every member's `rust-version` checked against the lockfile.
//!
//! 1. The publishable crates are exactly [`PUBLISHABLE`]; every other member says
//!    `publish = false`.
//! 2. Each member's `rust-version` is at least the newest `rust-version` any crate it builds
//!    with declares (normal and build dependencies, all the way down, as the lockfile
//!    resolves them on this platform), and for a publishable crate exactly that: the true
//!    minimum the lockfile allows. The workspace's own code is held to it by clippy's
//!    `incompatible_msrv` lint (std items newer than the package's `rust-version`), which
//!    `.ci/run` runs with `-D warnings`.
//! 3. `cargo package` of the publishable crates in dependency order, each unpacked and built
//!    from its `.crate` alone (the verify build): a file the build needs but the package
//!    lacks (a migration, a README a doc includes) fails here. Nothing is uploaded.
//!
//! Against crates.io (or a registry mirror) one `cargo package -p ...` does it: cargo
//! overlays the not-yet-published path dependencies on the registry (reading its index).
//! With crates-io replaced by a vendored directory (the offline pack, `cargo vendor`), cargo
//! refuses that overlay, so each crate is packaged alone over a directory source of our
//! own (the vendored crates plus the ones packaged so far), with no network. The verify
//! builds share cargo's target directory and that directory source's fixed path, so a
//! second run recompiles only the five crates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cargo, run_command, target_dir, workspace_root};

/// The crates a user installs, in dependency order: each depends only on those before it,
/// dev-dependencies included (the client's and the FFI's tests run the server).
pub const PUBLISHABLE: [&str; 5] = [
    "gatehouse-wire",
    "gatehouse-server",
    "gatehouse-client",
    "gatehouse-ffi",
    "gatehouse-cli",
];

const USAGE: &str = "usage: cargo xtask package

Checks which crates are publishable and every member's rust-version against the
lockfile, then runs `cargo package` (with its verify build) on the publishable crates:
  gatehouse-wire, gatehouse-server, gatehouse-client, gatehouse-ffi, gatehouse-cli.
The .crate files land in <target>/package. Nothing is uploaded.";

pub fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return Ok(());
    }
    if let Some(unknown) = args.first() {
        return Err(format!("unknown argument `{unknown}`\n{USAGE}"));
    }
    let root = workspace_root();
    let metadata = host_metadata(&root)?;
    check_publishable(&metadata)?;
    check_rust_versions(&metadata)?;
    eprintln!("xtask package: publish flags and rust-versions agree with the lockfile");
    match vendored_crates_io(&root) {
        None => {
            // crates.io itself (or a mirror of it): cargo overlays the unpublished path
            // dependencies on it and packages the lot in dependency order.
            let mut command = cargo();
            command
                .current_dir(&root)
                .args(["package", "--locked", "--allow-dirty"]);
            for name in PUBLISHABLE {
                command.args(["-p", name]);
            }
            run_command(&mut command)
        }
        Some(vendored) => package_over_vendored(&root, &vendored),
    }
}

/// The folder of a directory source replacing crates-io (`cargo vendor`'s setup, the offline
/// pack's): `[source.crates-io] replace-with = "X"` and `[source.X] directory = "..."` in
/// `$CARGO_HOME/config.toml` or a `.cargo/config.toml` above the workspace.
fn vendored_crates_io(root: &Path) -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))?;
    let mut files: Vec<PathBuf> = root
        .ancestors()
        .map(|dir| dir.join(".cargo").join("config.toml"))
        .collect();
    files.push(cargo_home.join("config.toml"));
    // Nearest first, as cargo merges them: the first setting found wins.
    let texts: Vec<String> = files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .collect();
    let replacement = texts
        .iter()
        .find_map(|text| toml_setting(text, "source.crates-io", "replace-with"))?;
    let directory = texts
        .iter()
        .find_map(|text| toml_setting(text, &format!("source.{replacement}"), "directory"))?;
    Some(PathBuf::from(directory))
}

/// `key = "value"` inside `[table]` of a TOML text (the plain form cargo's own config
/// files and `cargo vendor`'s instructions use; quoted table names included).
fn toml_setting(text: &str, table: &str, key: &str) -> Option<String> {
    let mut in_table = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line.trim_matches(|c| c == '[' || c == ']').replace('"', "") == table;
            continue;
        }
        if !in_table {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.trim().trim_matches('"') == key {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// With crates-io replaced by a vendored directory, cargo refuses its overlay ("crates-io
/// is replaced with non-remote-registry source"). So each crate is packaged alone, in
/// dependency order, with crates-io replaced by a directory source of our own: every
/// vendored crate (linked) plus the `.crate`s packaged so far (unpacked), so a later
/// crate resolves and builds against the packaged form of the ones before it. The
/// workspace's own lockfile is untouched (`--locked`).
fn package_over_vendored(root: &Path, vendored: &Path) -> Result<(), String> {
    let package_dir = target_dir(root)?.join("package");
    let overlay = package_dir.join("gatehouse-overlay-source");
    if overlay.exists() {
        std::fs::remove_dir_all(&overlay)
            .map_err(|e| format!("cannot clear {}: {e}", overlay.display()))?;
    }
    std::fs::create_dir_all(&overlay)
        .map_err(|e| format!("cannot create {}: {e}", overlay.display()))?;
    let entries = std::fs::read_dir(vendored).map_err(|e| {
        format!(
            "cannot read the vendored crates at {}: {e}",
            vendored.display()
        )
    })?;
    for entry in entries.flatten() {
        let link = overlay.join(entry.file_name());
        std::os::unix::fs::symlink(entry.path(), &link)
            .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
    }
    forget_overlay_builds(&target_dir(root)?)?;
    eprintln!(
        "xtask package: crates-io is the vendored directory {}; packaging one crate at a time over {}",
        vendored.display(),
        overlay.display()
    );
    // Every crate takes the workspace's version, as this one does.
    let version = env!("CARGO_PKG_VERSION");
    for name in PUBLISHABLE {
        run_command(
            cargo()
                .current_dir(root)
                .args(["package", "--locked", "--allow-dirty", "-p", name])
                .args([
                    "--config",
                    "source.crates-io.replace-with=\"gatehouse-package-overlay\"",
                ])
                .arg("--config")
                .arg(format!(
                    "source.gatehouse-package-overlay.directory={:?}",
                    overlay.display().to_string()
                )),
        )?;
        // The next crates find this one, as packaged, in the directory source.
        let packaged = package_dir.join(format!("{name}-{version}.crate"));
        run_command(
            Command::new("tar")
                .arg("-xzf")
                .arg(&packaged)
                .arg("-C")
                .arg(&overlay),
        )?;
        let checksum = overlay
            .join(format!("{name}-{version}"))
            .join(".cargo-checksum.json");
        std::fs::write(&checksum, r#"{"files":{},"package":null}"#)
            .map_err(|e| format!("cannot write {}: {e}", checksum.display()))?;
    }
    Ok(())
}

/// Cargo never rebuilds a crate of a registry or directory source because a file changed:
/// it takes such sources as immutable. The overlay holds our crates under the same name,
/// version and path on every run, so a verify build would link an earlier commit's build
/// of them (seen: gatehouse-server's verify failing on fields gatehouse-wire had gained).
/// So the dev builds made from the overlay (their dep-info names it) lose their
/// fingerprints here and are built again from the crates just packaged.
fn forget_overlay_builds(target: &Path) -> Result<(), String> {
    let deps = target.join("debug").join("deps");
    let fingerprints = target.join("debug").join(".fingerprint");
    let Ok(entries) = std::fs::read_dir(&deps) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".d") else {
            continue;
        };
        let Some((crate_name, hash)) = stem.rsplit_once('-') else {
            continue;
        };
        if !crate_name.starts_with("gatehouse_") {
            continue;
        }
        let from_overlay = std::fs::read_to_string(entry.path())
            .map(|text| text.contains("gatehouse-overlay-source"))
            .unwrap_or(false);
        let fingerprint = fingerprints.join(format!("{}-{hash}", crate_name.replace('_', "-")));
        if from_overlay && fingerprint.exists() {
            std::fs::remove_dir_all(&fingerprint)
                .map_err(|e| format!("cannot remove {}: {e}", fingerprint.display()))?;
        }
    }
    Ok(())
}

/// `cargo metadata` with the dependency graph as the lockfile resolves it for the host.
pub fn host_metadata(root: &Path) -> Result<serde_json::Value, String> {
    let host = host_triple()?;
    crate::util::cargo_metadata(root, &["--locked", "--filter-platform", &host])
}

fn host_triple() -> Result<String, String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let output = std::process::Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| format!("could not run {rustc} -vV: {e}"))?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(|host| host.trim().to_string())
        .ok_or_else(|| format!("{rustc} -vV named no host"))
}

/// A `major.minor[.patch]` version as a comparable triple.
fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.split('.').map(|part| part.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next().unwrap_or(Some(0))?;
    let patch = parts.next().unwrap_or(Some(0))?;
    Some((major, minor, patch))
}

fn version_text((major, minor, patch): (u64, u64, u64)) -> String {
    if patch == 0 {
        format!("{major}.{minor}")
    } else {
        format!("{major}.{minor}.{patch}")
    }
}

fn workspace_members(metadata: &serde_json::Value) -> Vec<&serde_json::Value> {
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|id| id.as_str())
        .collect();
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|package| {
            package["id"]
                .as_str()
                .is_some_and(|id| members.contains(id))
        })
        .collect()
}

/// Exactly [`PUBLISHABLE`] may be published (`publish` unset); every other member says
/// `publish = false` (an empty list in the metadata).
pub fn check_publishable(metadata: &serde_json::Value) -> Result<(), String> {
    let mut problems = Vec::new();
    for package in workspace_members(metadata) {
        let name = package["name"].as_str().unwrap_or("?");
        let publishable = !package["publish"]
            .as_array()
            .is_some_and(|registries| registries.is_empty());
        match (PUBLISHABLE.contains(&name), publishable) {
            (true, false) => problems.push(format!(
                "{name} is a published crate but says publish = false"
            )),
            (false, true) => problems.push(format!(
                "{name} is not one of the published crates ({}): give it publish = false",
                PUBLISHABLE.join(", ")
            )),
            _ => {}
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Every member declares a `rust-version` no older than any crate it builds with needs
/// (normal and build dependencies, transitively, as resolved for the host); a publishable
/// crate declares exactly the newest of those (the true minimum, not a guess above it).
pub fn check_rust_versions(metadata: &serde_json::Value) -> Result<(), String> {
    let packages: BTreeMap<&str, &serde_json::Value> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|package| Some((package["id"].as_str()?, package)))
        .collect();
    // id -> the ids it depends on as a normal or build dependency.
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(id) = node["id"].as_str() else {
            continue;
        };
        let deps = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|dep| {
                dep["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|kind| kind["kind"].is_null() || kind["kind"].as_str() == Some("build"))
            })
            .filter_map(|dep| dep["pkg"].as_str())
            .collect();
        edges.insert(id, deps);
    }
    if edges.is_empty() {
        return Err("cargo metadata gave no resolved dependency graph".to_string());
    }
    let mut problems = Vec::new();
    for member in workspace_members(metadata) {
        let name = member["name"].as_str().unwrap_or("?");
        let Some(declared) = member["rust_version"].as_str().and_then(parse_version) else {
            problems.push(format!("{name} declares no rust-version"));
            continue;
        };
        // The newest rust-version among everything it builds with, and who declares it.
        let mut needed: Option<((u64, u64, u64), String)> = None;
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = member["id"].as_str().into_iter().collect();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            stack.extend(edges.get(id).into_iter().flatten().copied());
            let Some(package) = packages.get(id) else {
                continue;
            };
            if package["id"] == member["id"] {
                continue;
            }
            let Some(version) = package["rust_version"].as_str().and_then(parse_version) else {
                continue;
            };
            if needed.as_ref().is_none_or(|(newest, _)| version > *newest) {
                let who = format!(
                    "{} {}",
                    package["name"].as_str().unwrap_or("?"),
                    package["version"].as_str().unwrap_or("?")
                );
                needed = Some((version, who));
            }
        }
        let Some((needed, who)) = needed else {
            continue;
        };
        if needed > declared {
            problems.push(format!(
                "{name} declares rust-version {} but {who} (in its dependencies, per Cargo.lock) needs {}",
                version_text(declared),
                version_text(needed)
            ));
        } else if needed < declared && PUBLISHABLE.contains(&name) {
            problems.push(format!(
                "{name} declares rust-version {} but the lockfile allows {} (newest: {who}): \
                 lower it, or say in its Cargo.toml what of its own needs {}",
                version_text(declared),
                version_text(needed),
                version_text(declared)
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_published_crates_are_publishable() {
        let metadata = host_metadata(&workspace_root()).unwrap();
        check_publishable(&metadata).unwrap();
    }

    #[test]
    fn every_rust_version_is_what_the_lockfile_needs() {
        let metadata = host_metadata(&workspace_root()).unwrap();
        check_rust_versions(&metadata).unwrap();
    }

    /// The check itself: a dependency newer than the declared version is named, and so is
    /// a publishable crate declaring more than its dependencies need.
    #[test]
    fn a_dependency_needing_a_newer_compiler_is_named() {
        let metadata = serde_json::json!({
            "workspace_members": ["w", "gatehouse-wire"],
            "packages": [
                {"id": "w", "name": "xtask", "version": "0.1.0", "rust_version": "1.85", "publish": []},
                {"id": "gatehouse-wire", "name": "gatehouse-wire", "version": "0.1.0", "rust_version": "1.90", "publish": null},
                {"id": "d", "name": "dep", "version": "2.0.0", "rust_version": "1.89.0"},
                {"id": "t", "name": "test-only", "version": "1.0.0", "rust_version": "1.99"}
            ],
            "resolve": {"nodes": [
                {"id": "w", "deps": [
                    {"pkg": "d", "dep_kinds": [{"kind": null}]},
                    {"pkg": "t", "dep_kinds": [{"kind": "dev"}]}
                ]},
                {"id": "gatehouse-wire", "deps": [{"pkg": "d", "dep_kinds": [{"kind": "build"}]}]},
                {"id": "d", "deps": []},
                {"id": "t", "deps": []}
            ]}
        });
        let problems = check_rust_versions(&metadata).unwrap_err();
        assert!(
            problems.contains("xtask declares rust-version 1.85 but dep 2.0.0 (in its dependencies, per Cargo.lock) needs 1.89"),
            "{problems}"
        );
        assert!(
            problems
                .contains("gatehouse-wire declares rust-version 1.90 but the lockfile allows 1.89"),
            "{problems}"
        );
        assert!(!problems.contains("test-only"), "{problems}");
    }

    #[test]
    fn versions_compare_by_number() {
        assert!(parse_version("1.89.0") > parse_version("1.9"));
        assert_eq!(parse_version("1.91"), Some((1, 91, 0)));
        assert_eq!(version_text((1, 85, 0)), "1.85");
    }
}
