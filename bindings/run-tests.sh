#!/usr/bin/env bash
# Every binding test, from a checkout, against the packages a user installs. Builds what is
# missing (the native library with the release profile, once: the wheel's cargo call finds
# it built, checked; the jar packs it), then:
#   1. the mobile library (the phones' build: mobile profile, LTO, opt-level z): no OpenSSL,
#      exported entry points, stripped size < 6 MB;
#   2. Swift: header compiles and links, symbols match, Swift parses (bindings/swift/check.py);
#   3. Python: builds the wheel with maturin (`pip wheel bindings/python`: native library,
#      generated module and type stubs inside), shows its manylinux tag (auditwheel),
#      installs it into a fresh virtual environment, runs bindings/python/tests with that
#      environment's Python, from outside the source tree, against a live `gatehouse serve`,
#      and type-checks bindings/python/typecheck/consumer.py and every ```python block of
#      bindings/README.md and bindings/python/README.md, and README.md's Python quick start,
#      against it (mypy, pyright); tests/test_readme_quickstart.py runs that quick start;
#   4. Kotlin: `mvn install` in bindings/kotlin (its cargo call, then the jar with the
#      native library inside as a JNA resource, the sources jar and the javadoc jar), then
#      the binding tests from a fresh consumer project (bindings/kotlin/consumer, copied to
#      a scratch folder) that depends on the installed jar, against a live `gatehouse serve`,
#      with README.md's Kotlin quick start compiled beside them (bindings/quickstart.py).
#   5. Swift, where `swift` is on the PATH (one line says it was skipped elsewhere): the
#      package at the repository root (Package.swift), built in the Swift 6 language mode
#      against the native library above, and its suite (bindings/swift/Tests) against a
#      live `gatehouse serve`; then README.md's Swift quick start, compiled as pasted in a
#      scratch package that depends on this one.
# Staleness of the committed bindings is checked separately: `cargo xtask bindings --check`.
#
# Environment:
#   GATEHOUSE_FFI_PROFILE  cargo profile of the library the packages take (default: release)
#   GATEHOUSE_BIN          server binary (default: builds it, then uses debug/gatehouse in
#                          cargo's target directory)
#   MVN_ARGS               extra Maven arguments, e.g. "-o" to run offline after one online run
#   GATEHOUSE_DIST_DIR     keep the built wheel and jars here (default: a scratch folder)
#   GATEHOUSE_PYTHON       the Python with requirements-dev.txt installed (cargo xtask test
#                          passes its own); default: the virtual environment python-venv in
#                          cargo's target directory, made and filled here. The system's
#                          Python is never pip-installed into.
#   GATEHOUSE_BINDINGS     which parts to run, separated by spaces or commas, of:
#                          mobile-lib (1), swift-check (2), python (3), kotlin (4), swift (5);
#                          default: all of them. One line names each part skipped. With
#                          GATEHOUSE_FFI_PROFILE=dev and no mobile-lib, nothing is built
#                          with the release or mobile profile (a quick loop), e.g.
#                          GATEHOUSE_FFI_PROFILE=dev GATEHOUSE_BINDINGS=python bash bindings/run-tests.sh
#   PYTEST_ADDOPTS         (pytest's own) extra pytest arguments, e.g. "-k 'durable and not stop'"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

profile="${GATEHOUSE_FFI_PROFILE:-release}"
parts=" $(echo "${GATEHOUSE_BINDINGS:-mobile-lib swift-check python kotlin swift}" | tr ',' ' ') "
for part in $parts; do
  case "$part" in
    mobile-lib|swift-check|python|kotlin|swift) ;;
    *) echo "GATEHOUSE_BINDINGS: unknown part '$part' (mobile-lib swift-check python kotlin swift)"; exit 2 ;;
  esac
done
# True when the part is selected; else says it is skipped.
wants() {
  case "$parts" in
    *" $1 "*) return 0 ;;
    *) echo "== $1: SKIPPED (not in GATEHOUSE_BINDINGS)"; return 1 ;;
  esac
}
# Cargo's target directory as cargo resolves it (CARGO_TARGET_DIR, build.target-dir, or target/).
target_dir="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
case "$profile" in
  dev|test) profile_dir="$target_dir/debug" ;;
  bench) profile_dir="$target_dir/release" ;;
  *) profile_dir="$target_dir/$profile" ;;
esac
lib="$profile_dir/libgatehouse_ffi.so"

if [ -n "${GATEHOUSE_PYTHON:-}" ]; then
  dev_python="$GATEHOUSE_PYTHON"
else
  venv="$target_dir/python-venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  dev_python="$venv/bin/python"
  "$dev_python" -m pip install -q -r requirements-dev.txt
fi

echo "== building gatehouse-ffi ($profile profile)"
# The one build of the library (`cargo xtask native-lib`'s command, maturin's own): the
# wheel's and the jar's builds below find it built and compile nothing.
# shellcheck disable=SC2086
cargo rustc -p gatehouse-ffi --lib --profile $profile --crate-type cdylib -q
if [ -z "${GATEHOUSE_BIN:-}" ]; then
  echo "== building gatehouse (server binary)"
  cargo build -q -p gatehouse-cli
  export GATEHOUSE_BIN="$target_dir/debug/gatehouse"
fi

if wants mobile-lib; then
  echo "== mobile library (the phones' build: mobile profile)"
  cargo rustc -p gatehouse-ffi --lib --profile mobile --crate-type cdylib -q
  bash bindings/check-mobile-lib.sh "$target_dir/mobile/libgatehouse_ffi.so"
fi

if wants swift-check; then
  echo "== swift"
  "$dev_python" bindings/swift/check.py --library "$lib"
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-bindings-XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
dist="${GATEHOUSE_DIST_DIR:-$scratch/dist}"
mkdir -p "$dist"

if wants python; then
  echo "== python: the wheel (maturin), installed into a fresh virtual environment"
  # pip runs maturin from the dev environment (no build isolation: nothing fetched; its bin/
  # on the PATH, where pip's maturin hook looks for the maturin binary), and maturin runs
  # cargo with the same profile and target directory as above. `--compatibility pypi`: the
  # manylinux tag the library's glibc symbols allow (pip's default is `linux`).
  # maturin's cargo call finds the library above built: the wheel's build must not compile
  # it again (nor overwrite the .so the Swift package links), which the library's
  # modification time, unchanged, proves.
  lib_before="$(stat -c %Y.%s "$lib")"
  PATH="$(dirname "$dev_python"):$PATH" "$dev_python" -m pip wheel -q --no-deps \
    --no-build-isolation --config-settings=build-args="--profile $profile --compatibility pypi" \
    -w "$dist" bindings/python
  [ "$(stat -c %Y.%s "$lib")" = "$lib_before" ] \
    || { echo "FAIL: the wheel's build (maturin) compiled $lib again: its cargo command is no longer crates/xtask/src/native_lib.rs's"; exit 1; }
  wheel="$(ls "$dist"/gatehouse_sdk-*.whl)"
  echo "built $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"
  "$dev_python" -m auditwheel show "$wheel"
  case "$(basename "$wheel")" in
    *-manylinux_*) ;;
    *) echo "FAIL: $(basename "$wheel") is not tagged manylinux"; exit 1 ;;
  esac
  python3 -m venv "$scratch/venv"
  "$scratch/venv/bin/python" -m pip install -q --no-index "$wheel"
  "$scratch/venv/bin/python" -m pip install -q pytest
  # From the scratch folder, so nothing of the source tree is importable.
  (cd "$scratch" && "$scratch/venv/bin/python" -m pytest -q -p no:cacheprovider \
    --rootdir "$root/bindings/python" "$root/bindings/python/tests")

  echo "== python: mypy and pyright read the installed package's types (consumer.py, the READMEs' examples)"
  mkdir -p "$scratch/typecheck"
  cp bindings/python/typecheck/consumer.py "$scratch/typecheck/"
  "$dev_python" bindings/python/typecheck/readme_examples.py "$scratch/typecheck" \
    bindings/README.md bindings/python/README.md
  python3 bindings/quickstart.py python > "$scratch/typecheck/readme_quickstart.py"
  (cd "$scratch/typecheck" && "$dev_python" -m mypy --strict --no-incremental \
    --python-executable "$scratch/venv/bin/python" ./*.py)
  (cd "$scratch/typecheck" && "$dev_python" -m pyright --pythonpath "$scratch/venv/bin/python" ./*.py)
fi

if wants kotlin; then
  echo "== kotlin: the jar, installed, used from a fresh Maven consumer project"
  # shellcheck disable=SC2086
  (cd bindings/kotlin && mvn -B --no-transfer-progress -q ${MVN_ARGS:-} \
    -Dgatehouse.cargo.skip=true -Dgatehouse.lib.dir="$profile_dir" -DskipTests install)
  jar="bindings/kotlin/target/gatehouse-kotlin-0.1.0.jar"
  python3 -c 'import sys, zipfile; sys.exit("linux-x86-64/libgatehouse_ffi.so" not in zipfile.ZipFile(sys.argv[1]).namelist())' "$jar" \
    || { echo "FAIL: $jar does not carry linux-x86-64/libgatehouse_ffi.so"; exit 1; }
  for extra in sources javadoc; do
    [ -f "${jar%.jar}-$extra.jar" ] || { echo "FAIL: no ${jar%.jar}-$extra.jar"; exit 1; }
  done
  cp bindings/kotlin/target/gatehouse-kotlin-0.1.0*.jar "$dist/"
  echo "built $(basename "$jar") ($(stat -c %s "$jar") bytes) with its -sources and -javadoc jars, installed in the local Maven repository"
  cp -r bindings/kotlin/consumer "$scratch/kotlin-consumer"
  # The README's Kotlin quick start, compiled as pasted (with -Werror) beside the tests.
  python3 bindings/quickstart.py kotlin > "$scratch/kotlin-consumer/src/test/kotlin/ReadmeQuickStart.kt"
  # Without LD_LIBRARY_PATH: `cargo xtask` (a `cargo run`) puts cargo's debug folders
  # there, and JNA would load a libgatehouse_ffi.so found there (a dev build, maybe of
  # other sources) before the one the jar carries, which is what an app gets.
  # shellcheck disable=SC2086
  (cd "$scratch/kotlin-consumer" && env -u LD_LIBRARY_PATH mvn -B --no-transfer-progress ${MVN_ARGS:-} \
    -Dgatehouse.tests.dir="$root/bindings/kotlin/src/test/kotlin" test)
fi

if ! wants swift; then
  :
elif command -v swift >/dev/null 2>&1; then
  echo "== swift: the package at the repository root, against a live gatehouse serve"
  # Swift Testing only (--disable-xctest: the suite has no XCTest cases). The library
  # folder goes first on LD_LIBRARY_PATH too: `cargo xtask` (a `cargo run`) puts cargo's
  # debug folders there, whose libgatehouse_ffi.so would win over the test binary's
  # runpath and may be a build of other sources.
  GATEHOUSE_FFI_LIB_DIR="$profile_dir" LD_LIBRARY_PATH="$profile_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    swift test --disable-xctest
  echo "== swift: the README's quick start, compiled as pasted in a package that depends on this one"
  mkdir -p "$scratch/swift-quickstart/Sources/QuickStart"
  python3 bindings/quickstart.py swift > "$scratch/swift-quickstart/Sources/QuickStart/main.swift"
  cat > "$scratch/swift-quickstart/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "QuickStart",
    dependencies: [.package(name: "Gatehouse", path: "$root")],
    targets: [.executableTarget(name: "QuickStart", dependencies: [.product(name: "Gatehouse", package: "Gatehouse")])]
)
SWIFT
  (cd "$scratch/swift-quickstart" && GATEHOUSE_FFI_LIB_DIR="$profile_dir" swift build)
else
  echo "swift: SKIPPED (no swift on the PATH; the Swift suite runs on a machine with a Swift toolchain)"
fi
echo "== binding tests passed"
