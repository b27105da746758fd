//! `cargo xtask native-lib [--profile NAME]`: build the native library the desktop packages
//! take (`gatehouse-ffi`, release profile) once, and print where it is.
//!
//! The one place is cargo's own output for the profile: `<target>/release/libgatehouse_ffi.so`
//! (`<target>` is cargo's target directory: `target/`, or `$CARGO_TARGET_DIR`). The Swift
//! package links it from there on Linux, the Kotlin jar packs it from there, and the Python
//! wheel's build (maturin) finds it there already built.
//!
//! Why the release profile: it is the one the release CLI (`cargo xtask dist`, `cargo install
//! --path crates/cli`) is built with, so a newcomer compiles the dependency tree twice in all
//! (dev for the demo and the tests, release for the library and the CLI) rather than three
//! times. The `mobile` profile (LTO, one codegen unit, opt-level z: the size budget) is for
//! the phone artifacts only: bindings/swift/build-xcframework.sh, bindings/kotlin/build-aar.sh
//! and the size check (bindings/check-mobile-lib.sh, BENCHMARKS.md row 7).
//!
//! Why one exact cargo command: maturin builds the library itself with
//! `cargo rustc --lib --profile release --crate-type cdylib`. A `cargo build` of the same
//! crate (its crate types `cdylib` and `lib`) is another configuration to cargo: each of the
//! two commands finds the other's output stale, rebuilds the library (under the mobile
//! profile's LTO, rustls and ring with it), and overwrites the `.so` a Swift app links by rpath. So every script that builds the library
//! runs [`cargo_args`] (bindings/run-tests.sh, bindings/kotlin/pom.xml, the benchmarks,
//! `cargo xtask bindings`), which makes maturin's own call a no-op;
//! `every_build_of_the_library_is_the_one_maturin_runs` holds them to it.

use std::path::{Path, PathBuf};

use crate::util::{cargo, profile_dir, run_command, target_dir, workspace_root};

/// The cargo profile of the library the desktop packages ship (Linux, macOS builds of the
/// Swift package, the wheel, the jar); the release CLI shares its dependency builds.
pub const PROFILE: &str = "release";

/// The cargo profile of the phone artifacts (XCFramework, AAR) and of the size budget.
pub const MOBILE_PROFILE: &str = "mobile";

const USAGE: &str = "usage: cargo xtask native-lib [--profile NAME]

Builds the native library the Swift package, the Python wheel and the Kotlin jar take
(gatehouse-ffi, profile release unless --profile says otherwise; `--profile mobile` is the
phones' size-optimised build) with the same cargo command maturin runs, so the wheel's
build finds it built; prints its path on stdout.";

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

/// The arguments of the one cargo command that builds the library (after `cargo`).
pub fn cargo_args(profile: &str) -> Vec<String> {
    [
        "rustc",
        "-p",
        "gatehouse-ffi",
        "--lib",
        "--profile",
        profile,
        "--crate-type",
        "cdylib",
    ]
    .iter()
    .map(|arg| arg.to_string())
    .collect()
}

/// Build the library with `profile` and return its path under cargo's target directory.
pub fn build(root: &Path, target: &Path, profile: &str) -> Result<PathBuf, String> {
    run_command(cargo().current_dir(root).args(cargo_args(profile)))?;
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
    let mut profile = PROFILE.to_string();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--profile" => {
                profile = iter
                    .next()
                    .ok_or("--profile needs a cargo profile name")?
                    .clone();
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let root = workspace_root();
    let library = build(&root, &target_dir(&root)?, &profile)?;
    // The wheel's build (maturin) also runs `cargo run --bin uniffi-bindgen` to write the
    // Python module: built here, where cargo shows its progress, the wheel's build finds
    // it built instead of compiling ~45 crates behind pip's silent "still running...".
    run_command(
        cargo()
            .current_dir(&root)
            .args(["build", "--bin", "uniffi-bindgen"]),
    )?;
    eprintln!(
        "xtask native-lib: built, with the binding generator the wheel's build runs; Swift \
         (Package.swift), `pip install ./bindings/python` and `mvn package` in \
         bindings/kotlin take it from here without compiling it again"
    );
    println!("{}", library.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(relative: &str) -> String {
        let path = workspace_root().join(relative);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    /// The `<argument>`s of the pom's execution that builds the library, in order.
    fn pom_cargo_arguments(pom: &str) -> Vec<String> {
        let start = pom
            .find("<id>cargo-build-native-library</id>")
            .expect("the pom has the execution cargo-build-native-library");
        let execution = &pom[start..];
        let execution = &execution[..execution.find("</execution>").expect("it ends")];
        execution
            .split("<argument>")
            .skip(1)
            .filter_map(|part| {
                part.split_once("</argument>")
                    .map(|(arg, _)| arg.to_string())
            })
            .collect()
    }

    /// Every script that builds the library runs maturin's command (see the module's
    /// comment), and none the `cargo build` form that made the wheel's build recompile it.
    #[test]
    fn every_build_of_the_library_is_the_one_maturin_runs() {
        let shell_form = format!("cargo {}", cargo_args("$profile").join(" "));
        let run_tests = read("bindings/run-tests.sh");
        assert!(
            run_tests.contains(&shell_form),
            "bindings/run-tests.sh does not build the library with `{shell_form}`"
        );
        let documented = format!("cargo {}", cargo_args(PROFILE).join(" "));
        for file in ["Package.swift", "bindings/README.md"] {
            assert!(
                read(file).contains(&documented),
                "{file} does not name `{documented}`"
            );
        }
        assert_eq!(
            pom_cargo_arguments(&read("bindings/kotlin/pom.xml")),
            cargo_args("${gatehouse.cargo.profile}"),
            "bindings/kotlin/pom.xml builds the library with another cargo command"
        );
        for file in [
            "bindings/run-tests.sh",
            "bindings/check-mobile-lib.sh",
            "bindings/README.md",
            "Package.swift",
            "README.md",
            "crates/xtask/src/bench/mod.rs",
            "crates/xtask/src/bindings.rs",
        ] {
            let text = read(file);
            assert!(
                !text.contains("build -p gatehouse-ffi --lib --profile")
                    && !text.contains("build -p gatehouse-ffi --profile")
                    && !text
                        .contains("\"build\",\n            \"-p\",\n            \"gatehouse-ffi\""),
                "{file} still builds the library with `cargo build`, which maturin's build undoes"
            );
        }
    }

    #[test]
    fn the_command_is_maturins() {
        assert_eq!(
            cargo_args("release").join(" "),
            "rustc -p gatehouse-ffi --lib --profile release --crate-type cdylib"
        );
    }
}
