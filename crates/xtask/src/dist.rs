//! `cargo xtask dist [--list]`: what a release would publish, built into `<target>/dist/`
//! (`target/dist/` unless `$CARGO_TARGET_DIR` says otherwise), with a `SHA256SUMS` file.
//! Nothing is uploaded (this project has no registry credentials, by design).
//!
//! Built here, each from the one build of the native library (`cargo xtask native-lib`, release profile):
//! the CLI (release profile), the Python wheel (maturin, which finds the library built and
//! compiles nothing: checked) and sdist, the Kotlin jar with its sources and javadoc jars
//! and POM, and the five crates (`cargo xtask package`, each verify-built).
//!
//! Scripted, NOT built here (they need macOS with Xcode, or the Android NDK, which the
//! Linux machines this project runs on do not have; both scripts have a `--dry-run` that
//! xtask's tests run): the XCFramework zip with the `binaryTarget(url:checksum:)` stanza a
//! release's Package.swift needs (`bindings/swift/build-xcframework.sh`), and the Android
//! AAR (`bindings/kotlin/build-aar.sh`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::package::PUBLISHABLE;
use crate::util::{profile_dir, run_command, target_dir, workspace_root};

/// The workspace's version, every artifact's version.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The checksum file, in `sha256sum`'s format (`sha256sum -c SHA256SUMS` verifies it).
pub const CHECKSUMS: &str = "SHA256SUMS";

const USAGE: &str = "usage: cargo xtask dist [--list]

Builds into <cargo target dir>/dist what a release would publish, with SHA256SUMS:
the gatehouse CLI (release), the Python wheel (manylinux) and sdist, the Kotlin jar
(with its sources and javadoc jars and POM), and the crates (cargo package).
The Apple XCFramework and the Android AAR are scripts that cannot run here.

  --list   print what it builds and how, build nothing";

/// One thing a release publishes: its file name in `dist/`, and what makes it.
pub struct Artifact {
    pub file: String,
    pub made_by: &'static str,
    /// False for the artifacts only a macOS or Android NDK machine can build.
    pub built_here: bool,
}

/// Everything `dist` publishes, in the order it is built.
pub fn plan() -> Vec<Artifact> {
    let here = |file: String, made_by| Artifact {
        file,
        made_by,
        built_here: true,
    };
    let mut plan = vec![
        here(
            "gatehouse".to_string(),
            "the CLI: cargo build -p gatehouse-cli --release --locked",
        ),
        here(
            format!("gatehouse_sdk-{VERSION}-py3-none-manylinux_<glibc>_x86_64.whl"),
            "the Python wheel: pip wheel bindings/python (maturin, --compatibility pypi) over the one native library",
        ),
        here(
            format!("gatehouse_sdk-{VERSION}.tar.gz"),
            "the Python sdist: maturin sdist in bindings/python",
        ),
    ];
    for suffix in ["", "-sources", "-javadoc"] {
        plan.push(here(
            format!("gatehouse-kotlin-{VERSION}{suffix}.jar"),
            "the JVM jar: mvn package in bindings/kotlin, packing the one native library",
        ));
    }
    plan.push(here(
        format!("gatehouse-kotlin-{VERSION}.pom"),
        "the jar's POM: bindings/kotlin/pom.xml",
    ));
    for name in PUBLISHABLE {
        plan.push(here(
            format!("crates/{name}-{VERSION}.crate"),
            "the crate: cargo xtask package (cargo package, verify-built)",
        ));
    }
    plan.push(Artifact {
        file: "GatehouseFFI.xcframework.zip + Package.swift.binaryTarget".to_string(),
        made_by: "bash bindings/swift/build-xcframework.sh, on macOS with Xcode only",
        built_here: false,
    });
    plan.push(Artifact {
        file: format!("gatehouse-kotlin-android-{VERSION}.aar"),
        made_by: "bash bindings/kotlin/build-aar.sh, with the Android NDK and cargo-ndk only",
        built_here: false,
    });
    plan.push(here(
        CHECKSUMS.to_string(),
        "sha256sum of every file above, as `sha256sum -c` reads it",
    ));
    plan
}

pub fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        None => {}
        Some("--list") => {
            print_plan();
            return Ok(());
        }
        Some("--help" | "-h") => {
            println!("{USAGE}");
            return Ok(());
        }
        Some(other) => return Err(format!("unknown argument `{other}`\n{USAGE}")),
    }
    let root = workspace_root();
    let target = target_dir(&root)?;
    let dist = target.join("dist");
    if dist.exists() {
        fs::remove_dir_all(&dist).map_err(|e| format!("cannot clear {}: {e}", dist.display()))?;
    }
    fs::create_dir_all(dist.join("crates"))
        .map_err(|e| format!("cannot create {}: {e}", dist.display()))?;

    // The CLI.
    run_command(crate::util::cargo().current_dir(&root).args([
        "build",
        "-p",
        "gatehouse-cli",
        "--release",
        "--locked",
    ]))?;
    copy(&profile_dir(&target, "release").join("gatehouse"), &dist)?;

    // The native library, once; the wheel and the jar take it from here.
    let library = crate::native_lib::build(&root, &target, crate::native_lib::PROFILE)?;
    let library_dir = profile_dir(&target, crate::native_lib::PROFILE);
    let built_at = modified(&library)?;

    // The wheel and the sdist (maturin from the project's Python environment).
    let python = crate::test::dev_python(&root)?;
    let venv_bin = python
        .parent()
        .ok_or("the Python environment has no bin folder")?;
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut dirs = vec![venv_bin.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).map_err(|e| format!("cannot build PATH: {e}"))?
        }
        None => venv_bin.as_os_str().to_owned(),
    };
    run_command(
        Command::new(&python)
            .current_dir(&root)
            .env("PATH", &path)
            .args([
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
            ])
            .arg(format!(
                "--config-settings=build-args=--profile {} --compatibility pypi",
                crate::native_lib::PROFILE
            ))
            .arg("-w")
            .arg(&dist)
            .arg("bindings/python"),
    )?;
    if modified(&library)? != built_at {
        return Err(format!(
            "the wheel's build (maturin) compiled {} again: its cargo command is no longer the one in crates/xtask/src/native_lib.rs",
            library.display()
        ));
    }
    run_command(
        Command::new(venv_bin.join("maturin"))
            .current_dir(root.join("bindings/python"))
            .env("PATH", &path)
            .args(["sdist", "-o"])
            .arg(&dist),
    )?;

    // The jar, packing the library built above (its own cargo call skipped).
    run_command(
        Command::new("mvn")
            .current_dir(root.join("bindings/kotlin"))
            .args([
                "-B",
                "--no-transfer-progress",
                "-q",
                "-DskipTests",
                "-Dgatehouse.cargo.skip=true",
            ])
            .arg(format!("-Dgatehouse.lib.dir={}", library_dir.display()))
            .arg("package"),
    )?;
    let kotlin_target = root.join("bindings/kotlin/target");
    for suffix in ["", "-sources", "-javadoc"] {
        copy(
            &kotlin_target.join(format!("gatehouse-kotlin-{VERSION}{suffix}.jar")),
            &dist,
        )?;
    }
    fs::copy(
        root.join("bindings/kotlin/pom.xml"),
        dist.join(format!("gatehouse-kotlin-{VERSION}.pom")),
    )
    .map_err(|e| format!("cannot copy the POM: {e}"))?;

    // The crates.
    crate::package::run(&[])?;
    for name in PUBLISHABLE {
        copy(
            &target
                .join("package")
                .join(format!("{name}-{VERSION}.crate")),
            &dist.join("crates"),
        )?;
    }

    let files = write_checksums(&dist)?;
    eprintln!("xtask dist: {}:", dist.display());
    for file in &files {
        let size = fs::metadata(dist.join(file)).map(|m| m.len()).unwrap_or(0);
        eprintln!("  {file} ({size} bytes)");
    }
    eprintln!("  {CHECKSUMS}");
    for artifact in plan().iter().filter(|a| !a.built_here) {
        eprintln!(
            "xtask dist: NOT built here: {} ({})",
            artifact.file, artifact.made_by
        );
    }
    Ok(())
}

fn print_plan() {
    println!("cargo xtask dist builds into <cargo target dir>/dist:");
    for artifact in plan().iter().filter(|a| a.built_here) {
        println!("  {:<58} {}", artifact.file, artifact.made_by);
    }
    println!("not built here (scripted; needs another machine):");
    for artifact in plan().iter().filter(|a| !a.built_here) {
        println!("  {:<58} {}", artifact.file, artifact.made_by);
    }
}

fn modified(path: &Path) -> Result<std::time::SystemTime, String> {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))
}

/// Copy `file` into the folder `into`, keeping its name.
fn copy(file: &Path, into: &Path) -> Result<(), String> {
    let name = file
        .file_name()
        .ok_or_else(|| format!("{} has no file name", file.display()))?;
    fs::copy(file, into.join(name))
        .map(|_| ())
        .map_err(|e| format!("cannot copy {}: {e}", file.display()))
}

/// The files under `dir` (relative, `/`-separated, sorted), `SHA256SUMS` aside.
fn files_under(dir: &Path) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let entries =
            fs::read_dir(&folder).map_err(|e| format!("cannot read {}: {e}", folder.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|e| format!("cannot read {}: {e}", folder.display()))?
                .path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path
                .strip_prefix(dir)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .to_string_lossy()
                .replace('\\', "/");
            if relative != CHECKSUMS {
                files.push(relative);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Write `dir/SHA256SUMS` for every other file under `dir` (`sha256sum`'s output, relative
/// names) and return those names.
pub fn write_checksums(dir: &Path) -> Result<Vec<String>, String> {
    let files = files_under(dir)?;
    if files.is_empty() {
        return Err(format!("{} holds nothing to checksum", dir.display()));
    }
    let output = Command::new("sha256sum")
        .current_dir(dir)
        .arg("--")
        .args(&files)
        .output()
        .map_err(|e| format!("could not run sha256sum (coreutils): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "sha256sum failed with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let path = dir.join(CHECKSUMS);
    fs::write(&path, &output.stdout)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-dist-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Every kind of artifact the issue names is in the plan; the two that need another
    /// machine are marked as not built here, with the script that builds them.
    #[test]
    fn the_plan_names_every_artifact_a_release_publishes() {
        let plan = plan();
        let files: Vec<&str> = plan.iter().map(|a| a.file.as_str()).collect();
        for expected in [
            "gatehouse",
            "SHA256SUMS",
            &format!("gatehouse_sdk-{VERSION}.tar.gz"),
            &format!("gatehouse-kotlin-{VERSION}.jar"),
            &format!("crates/gatehouse-cli-{VERSION}.crate"),
            &format!("crates/gatehouse-wire-{VERSION}.crate"),
        ] {
            assert!(
                files.contains(&expected),
                "{expected} missing from {files:?}"
            );
        }
        assert!(files
            .iter()
            .any(|f| f.contains("manylinux") && f.ends_with(".whl")));
        let elsewhere: Vec<&Artifact> = plan.iter().filter(|a| !a.built_here).collect();
        assert_eq!(elsewhere.len(), 2);
        assert!(elsewhere[0].file.contains("xcframework.zip"));
        assert!(elsewhere[0].made_by.contains("build-xcframework.sh"));
        assert!(elsewhere[1].file.ends_with(".aar"));
        assert!(elsewhere[1].made_by.contains("build-aar.sh"));
        assert!(run(&["--list".to_string()]).is_ok());
        assert!(run(&["--bogus".to_string()]).is_err());
    }

    /// The scripts for the artifacts this machine cannot build: they parse (`bash -n`, and
    /// shellcheck where installed), refuse to run for real here with one clear line, and
    /// their `--dry-run` prints every step (cargo-ndk's ABIs into the jniLibs layout; the
    /// XCFramework zipped and its binaryTarget stanza).
    #[test]
    fn the_apple_and_android_scripts_parse_and_dry_run() {
        let root = workspace_root();
        let scripts = [
            (
                "bindings/swift/build-xcframework.sh",
                vec![
                    "--target aarch64-apple-ios ",
                    "xcodebuild -create-xcframework",
                    "GatehouseFFI.xcframework.zip",
                    "swift package compute-checksum",
                    ".binaryTarget(",
                    "checksum: ",
                    "dry run: nothing was built",
                ],
            ),
            (
                "bindings/kotlin/build-aar.sh",
                vec![
                    "cargo ndk --platform 24 -t arm64-v8a -t armeabi-v7a -t x86_64 -o bindings/kotlin/build/aar/jni build -p gatehouse-ffi",
                    "jni/arm64-v8a/libgatehouse_ffi.so",
                    "write bindings/kotlin/build/aar/AndroidManifest.xml",
                    "bindings/kotlin/build/aar/classes.jar",
                    "gatehouse-kotlin-android-0.1.0.aar",
                    "dry run: nothing was built",
                ],
            ),
        ];
        let shellcheck = Command::new("shellcheck").arg("--version").output().is_ok();
        for (script, expected) in scripts {
            let syntax = Command::new("bash")
                .arg("-n")
                .arg(root.join(script))
                .status()
                .unwrap();
            assert!(syntax.success(), "bash -n {script} failed");
            if shellcheck {
                let lint = Command::new("shellcheck")
                    .arg(root.join(script))
                    .status()
                    .unwrap();
                assert!(lint.success(), "shellcheck {script} failed");
            }
            let dry = Command::new("bash")
                .arg(root.join(script))
                .arg("--dry-run")
                .env_remove("ANDROID_NDK_HOME")
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&dry.stdout);
            assert!(
                dry.status.success(),
                "{script} --dry-run failed: {out}{}",
                String::from_utf8_lossy(&dry.stderr)
            );
            for line in expected {
                assert!(
                    out.contains(line),
                    "{script} --dry-run does not print `{line}`:\n{out}"
                );
            }
            // Run for real on Linux: one line saying what it needs, exit 2, nothing built.
            if cfg!(target_os = "linux") {
                let real = Command::new("bash")
                    .arg(root.join(script))
                    .env_remove("ANDROID_NDK_HOME")
                    .output()
                    .unwrap();
                let err = String::from_utf8_lossy(&real.stderr);
                assert_eq!(real.status.code(), Some(2), "{script}: {err}");
                assert!(err.contains("Nothing was built"), "{script}: {err}");
            }
        }
    }

    /// SHA256SUMS covers every file, nested ones included, in `sha256sum -c`'s format,
    /// and never itself.
    #[test]
    fn checksums_cover_every_file_and_verify() {
        let dir = scratch("sums");
        fs::write(dir.join("gatehouse"), "hello\n").unwrap();
        fs::create_dir_all(dir.join("crates")).unwrap();
        fs::write(dir.join("crates/a-0.1.0.crate"), "").unwrap();
        fs::write(dir.join(CHECKSUMS), "stale").unwrap();
        let files = write_checksums(&dir).unwrap();
        assert_eq!(files, ["crates/a-0.1.0.crate", "gatehouse"]);
        let sums = fs::read_to_string(dir.join(CHECKSUMS)).unwrap();
        assert_eq!(
            sums,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  crates/a-0.1.0.crate\n\
             5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  gatehouse\n"
        );
        let check = Command::new("sha256sum")
            .current_dir(&dir)
            .args(["-c", "--quiet", CHECKSUMS])
            .status()
            .unwrap();
        assert!(check.success());
        fs::remove_dir_all(&dir).unwrap();
        let empty = scratch("empty");
        assert!(write_checksums(&empty).is_err());
        fs::remove_dir_all(&empty).unwrap();
    }
}
