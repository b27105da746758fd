//! `cargo xtask bindings [--check] [--profile NAME]`: regenerate the Kotlin, Swift and
//! Python bindings of gatehouse-ffi (or, with `--check`, fail when a committed one is stale).
//!
//! The steps, each its own cargo invocation so the bindgen's features never reach the
//! shipped library:
//! 1. `cargo xtask native-lib`'s cargo command: the library (release profile), the one the
//!    packages ship. Its symbol table, where uniffi's metadata lives, is kept (the mobile
//!    profile keeps it too: `strip = "debuginfo"`).
//! 2. `cargo build -p uniffi-bindgen`: the generator.
//! 3. `uniffi-bindgen generate --library <lib> --language L --no-format` per language, into
//!    a scratch directory, from the workspace root (library mode reads
//!    `crates/ffi/uniffi.toml` through cargo metadata).
//! 4. Each language's `arrange` puts the files where its package tool wants them (and
//!    Kotlin's unit variants become `data object`s, so they print as `Running`, not
//!    `LifecycleState$Running@6c13c86`, and an error's `message` is its sentence, not
//!    `msg=..., details=...`; Python gets its type stub, written by
//!    `bindings/python/make_stub.py`).
//! 5. Without `--check`: copy the files into `bindings/`. With `--check`: compare them
//!    with the committed files and list every difference.
//!
//! Output layout (the hand-written files beside them are never touched):
//! - `bindings/kotlin/src/main/kotlin/dev/gatehouse/gatehouse_ffi.kt`
//! - `bindings/swift/Sources/Gatehouse/Gatehouse.swift` and the C module SwiftPM reads,
//!   `bindings/swift/Sources/gatehouse_ffiFFI/{gatehouse_ffiFFI.h, module.modulemap}`
//!   (the package manifest is `Package.swift` at the repository root)
//! - `bindings/python/gatehouse/_ffi/gatehouse_ffi.py` and its stub `gatehouse_ffi.pyi`.
//!   maturin generates the module again when it builds the wheel (from the library it
//!   compiles) and packs that copy; the committed one is for review, `--check` and the
//!   benchmarks, and equals it (`bindings/python/tests/test_packaging.py`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cargo, profile_dir, run_command, target_dir, workspace_root};

/// The generated Python module, and the stub `bindings/python/make_stub.py` writes for it.
const PYTHON_MODULE: &str = "gatehouse_ffi.py";
const PYTHON_STUB: &str = "gatehouse_ffi.pyi";

/// The cargo profile the library is built with unless `--profile` says otherwise.
pub const DEFAULT_PROFILE: &str = crate::native_lib::PROFILE;

/// One language: its bindgen name, where its files go (relative to the workspace root),
/// and which files there are generated (the others, like `check.py` or `__init__.py`, are
/// written by hand).
struct Language {
    name: &'static str,
    destination: &'static str,
    is_generated: fn(&Path) -> bool,
    /// Rearranges (and where needed rewrites) the freshly generated files in place.
    arrange: fn(&Path) -> Result<(), String>,
}

/// The generated Kotlin file.
const KOTLIN_FILE: &str = "dev/gatehouse/gatehouse_ffi.kt";
/// The generated Swift files, where SwiftPM's targets read them.
const SWIFT_SOURCE: &str = "Sources/Gatehouse/Gatehouse.swift";
const SWIFT_HEADER: &str = "Sources/gatehouse_ffiFFI/gatehouse_ffiFFI.h";
const SWIFT_MODULEMAP: &str = "Sources/gatehouse_ffiFFI/module.modulemap";

/// uniffi writes a unit enum variant as `object Running : LifecycleState()`, whose
/// `toString()` is the JVM's `LifecycleState$Running@6c13c86`; a `data object` prints
/// `Running` (Kotlin 1.9+) and is otherwise the same.
fn kotlin_data_objects(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1024);
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed.starts_with("object ") && trimmed.contains(" : ") && trimmed.contains("()") {
            out.push_str(indent);
            out.push_str("data ");
            out.push_str(trimmed);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The line uniffi opens the async-continuation callback object with.
const KOTLIN_CONTINUATION_OBJECT: &str =
    "internal object uniffiRustFutureContinuationCallbackImpl: UniffiRustFutureContinuationCallback {\n";

/// Rust wakes an async call's continuation from a tokio worker thread, which the JVM does
/// not know; JNA then attaches that thread for the callback (a new `java.lang.Thread`)
/// and detaches it again after, on every call: about a tenth of the JVM's CPU per
/// respond in a profile. Registering a `CallbackThreadInitializer` that does not detach
/// (before the callback is first handed to Rust: the object's own init) attaches each
/// of the runtime's few worker threads once, as a daemon thread. Fails when uniffi's
/// output no longer has that object, so a uniffi upgrade cannot drop this silently.
fn kotlin_keep_callback_threads_attached(text: &str) -> Result<String, String> {
    if text.matches(KOTLIN_CONTINUATION_OBJECT).count() != 1 {
        return Err(format!(
            "the generated Kotlin has no single `{}`: update kotlin_keep_callback_threads_attached",
            KOTLIN_CONTINUATION_OBJECT.trim_end()
        ));
    }
    Ok(text.replacen(
        KOTLIN_CONTINUATION_OBJECT,
        &format!(
            "{KOTLIN_CONTINUATION_OBJECT}    init {{\n        com.sun.jna.Native.setCallbackThreadInitializer(\n            this,\n            com.sun.jna.CallbackThreadInitializer(true, false, \"gatehouse-ffi-callback\"),\n        )\n    }}\n"
        ),
        1,
    ))
}

/// How uniffi begins the `message` of an error variant whose first field is `msg`
/// (every `GatehouseException`): `get() = "msg=${ `msg` }, details=${ `details` }"`.
const KOTLIN_MSG_MESSAGE: &str = "get() = \"msg=${ `msg` }";

/// uniffi's Kotlin `message` of an error with fields is `msg=..., details=...`, and no
/// setting changes it; `message` is what a Kotlin app logs and shows. Each
/// `GatehouseException`'s `message` becomes its `msg`, the sentence the Rust core made
/// (the same text as its `toString()`, the exported Display); `details` stay a property.
/// Fails when uniffi's output has no such line, so an upgrade cannot drop this silently.
fn kotlin_error_message_is_the_sentence(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rewritten = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(KOTLIN_MSG_MESSAGE) {
            out.push_str(&line[..line.len() - trimmed.len()]);
            out.push_str("get() = `msg`\n");
            rewritten += 1;
        } else {
            out.push_str(line);
        }
    }
    if rewritten == 0 {
        return Err(format!(
            "the generated Kotlin has no `{KOTLIN_MSG_MESSAGE}`: update kotlin_error_message_is_the_sentence"
        ));
    }
    Ok(out)
}

fn arrange_kotlin(out: &Path) -> Result<(), String> {
    let path = out.join(KOTLIN_FILE);
    let text = fs::read_to_string(&path)
        .map_err(|e| format!("could not read generated {}: {e}", path.display()))?;
    let text = kotlin_keep_callback_threads_attached(&kotlin_data_objects(&text))?;
    let text = kotlin_error_message_is_the_sentence(&text)?;
    fs::write(&path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// The generated Swift methods whose result a caller may ignore: the answer calls, which a
/// screen often makes for their effect alone (the watch or a re-query shows the outcome).
const SWIFT_DISCARDABLE: [&str; 4] = [
    "respondToInteraction",
    "respondWithOutcome",
    "approveAll",
    "approveGates",
];

/// uniffi has no setting for `@discardableResult`; without it, `try await
/// client.respondToInteraction(...)` alone warns "result unused". Marks each method of
/// [`SWIFT_DISCARDABLE`] (its `open func` line, where it is defined). Fails when one is
/// missing, so a rename cannot drop this silently.
fn swift_discardable_results(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut marked = BTreeSet::new();
    for line in text.split_inclusive('\n') {
        if let Some(name) = SWIFT_DISCARDABLE
            .iter()
            .find(|name| line.starts_with(&format!("open func {name}(")))
        {
            out.push_str("@discardableResult\n");
            marked.insert(*name);
        }
        out.push_str(line);
    }
    match SWIFT_DISCARDABLE
        .iter()
        .find(|name| !marked.contains(*name))
    {
        Some(missing) => Err(format!(
            "the generated Swift has no `open func {missing}(`: update swift_discardable_results"
        )),
        None => Ok(out),
    }
}

fn arrange_swift(out: &Path) -> Result<(), String> {
    for (from, to) in [
        ("Gatehouse.swift", SWIFT_SOURCE),
        ("gatehouse_ffiFFI.h", SWIFT_HEADER),
        ("gatehouse_ffiFFI.modulemap", SWIFT_MODULEMAP),
    ] {
        let (from, to) = (out.join(from), out.join(to));
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
        }
        fs::rename(&from, &to)
            .map_err(|e| format!("uniffi did not write {} as expected: {e}", from.display()))?;
    }
    let path = out.join(SWIFT_SOURCE);
    let text = fs::read_to_string(&path)
        .map_err(|e| format!("could not read generated {}: {e}", path.display()))?;
    let text = swift_discardable_results(&text)?;
    fs::write(&path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// uniffi's Python builds enum variants and error variants at run time, which type
/// checkers cannot follow; the stub declares them (see `bindings/python/make_stub.py`).
fn arrange_python(out: &Path) -> Result<(), String> {
    let script = workspace_root().join("bindings/python/make_stub.py");
    run_command(
        Command::new("python3")
            .arg(&script)
            .arg(out.join(PYTHON_MODULE))
            .arg(out.join(PYTHON_STUB)),
    )
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
        is_generated: |path| path.file_name().is_some_and(|n| n == "gatehouse_ffi.kt"),
        arrange: arrange_kotlin,
    },
    Language {
        name: "swift",
        destination: "bindings/swift",
        is_generated: |path| {
            [SWIFT_SOURCE, SWIFT_HEADER, SWIFT_MODULEMAP]
                .iter()
                .any(|generated| path == Path::new(generated))
                || (path.parent() == Some(Path::new(""))
                    && has_extension(path, &["swift", "h", "modulemap"]))
        },
        arrange: arrange_swift,
    },
    Language {
        name: "python",
        destination: "bindings/python/gatehouse/_ffi",
        is_generated: |path| {
            path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("gatehouse_ffi") && has_extension(path, &["py", "pyi"])
            })
        },
        arrange: arrange_python,
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

pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let root = workspace_root();
    let target = target_dir(&root)?;

    let library = crate::native_lib::build(&root, &target, &options.profile)?;
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
        (language.arrange)(&out)?;
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
        for dir in [&generated, &committed] {
            fs::create_dir_all(dir.join("Sources/Gatehouse")).unwrap();
            fs::write(dir.join(SWIFT_SOURCE), "// new\n").unwrap();
        }
        // The old flat layout's file is a leftover; hand-written Swift beside the
        // generated file, and check.py, are not.
        fs::write(committed.join("Gatehouse.swift"), "// old layout\n").unwrap();
        fs::write(
            committed.join("Sources/Gatehouse/Streams.swift"),
            "// hand\n",
        )
        .unwrap();
        fs::write(committed.join("check.py"), "# hand-written\n").unwrap();
        let swift = &LANGUAGES[1];
        let lines = leftovers(&generated, &committed, swift.is_generated).unwrap();
        assert_eq!(lines, vec![committed.join("Gatehouse.swift")]);
        let kotlin = &LANGUAGES[0];
        assert!((kotlin.is_generated)(Path::new(KOTLIN_FILE)));
        assert!(!(kotlin.is_generated)(Path::new(
            "dev/gatehouse/Streams.kt"
        )));
        // The module and its stub are generated; the facade and its stub are not.
        let python = &LANGUAGES[2];
        assert!((python.is_generated)(Path::new(PYTHON_MODULE)));
        assert!((python.is_generated)(Path::new(PYTHON_STUB)));
        assert!(!(python.is_generated)(Path::new("__init__.py")));
        assert!(!(python.is_generated)(Path::new("__init__.pyi")));
        let _ = fs::remove_dir_all(&generated);
        let _ = fs::remove_dir_all(&committed);
    }

    #[test]
    fn kotlin_unit_variants_become_data_objects_and_nothing_else_changes() {
        let generated = "sealed class S {\n    object Running : S()\n    \n    data class Unknown(val v: String) : S()\n    companion object\n}\nobject FfiConverterS : FfiConverterRustBuffer<S> {\n";
        let arranged = kotlin_data_objects(generated);
        assert!(arranged.contains("    data object Running : S()\n"));
        assert!(arranged.contains("object FfiConverterS : FfiConverterRustBuffer<S> {"));
        assert!(!arranged.contains("data object FfiConverterS"));
        assert!(arranged.contains("    companion object\n"));
    }

    #[test]
    fn the_continuation_callback_keeps_its_threads_attached() {
        let generated = "// FFI type for Rust future continuations\ninternal object uniffiRustFutureContinuationCallbackImpl: UniffiRustFutureContinuationCallback {\n    override fun callback(data: Long, pollResult: Byte) {\n    }\n}\n";
        let arranged = kotlin_keep_callback_threads_attached(generated).unwrap();
        assert!(arranged.contains("UniffiRustFutureContinuationCallback {\n    init {\n        com.sun.jna.Native.setCallbackThreadInitializer(\n            this,\n            com.sun.jna.CallbackThreadInitializer(true, false, \"gatehouse-ffi-callback\"),\n        )\n    }\n    override fun callback("));
        assert!(kotlin_keep_callback_threads_attached("object Other {\n").is_err());
    }

    #[test]
    fn a_kotlin_error_message_is_its_sentence() {
        let generated = "    class NotFound(\n        val `msg`: kotlin.String,\n        val `details`: kotlin.String?\n        ) : GatehouseException() {\n        override val message\n            get() = \"msg=${ `msg` }, details=${ `details` }\"\n    }\n    class Failed(val `reason`: kotlin.String) : ListenerException() {\n        override val message\n            get() = \"reason=${ `reason` }\"\n    }\n";
        let arranged = kotlin_error_message_is_the_sentence(generated).unwrap();
        assert!(
            arranged.contains("        override val message\n            get() = `msg`\n    }\n")
        );
        assert!(!arranged.contains("msg=$"));
        // Only errors carrying `msg`; the rest of the file is unchanged.
        assert!(arranged.contains("get() = \"reason=${ `reason` }\""));
        assert_eq!(
            arranged.len(),
            generated.len() - "\"msg=${ `msg` }, details=${ `details` }\"".len() + "`msg`".len()
        );
        assert!(kotlin_error_message_is_the_sentence("object Other {\n").is_err());
    }

    #[test]
    fn the_swift_answer_calls_are_discardable() {
        let generated = "open func approveAll(ids: [String])\nopen func approveGates(x: Int)\n\
            open func respondToInteraction(id: String)\nopen func respondWithOutcome(id: String)\n\
            open func getInteraction(id: String)\n";
        let out = swift_discardable_results(generated).unwrap();
        assert_eq!(out.matches("@discardableResult\n").count(), 4);
        assert!(out.contains("@discardableResult\nopen func respondToInteraction("));
        assert!(!out.contains("@discardableResult\nopen func getInteraction("));
        assert!(swift_discardable_results("open func approveAll(ids: [String])\n").is_err());
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
