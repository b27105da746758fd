#!/usr/bin/env bash
# Every binding test, from a checkout, against the packages a user installs. Builds what is
# missing (the native library ONCE, with the mobile profile; the wheel and the jar reuse it),
# then:
#   1. the mobile library: no OpenSSL, exported entry points, stripped size < 6 MB;
#   2. Swift: header compiles and links, symbols match, Swift parses (bindings/swift/check.py);
#   3. Python: builds the wheel (native library inside), installs it into a fresh virtual
#      environment, and runs bindings/python/tests with that environment's Python, from
#      outside the source tree, against a live `gatehouse serve`;
#   4. Kotlin: builds the jar (native library inside as a JNA resource), installs it into
#      the local Maven repository, and runs the binding tests from a fresh consumer project
#      (bindings/kotlin/consumer, copied to a scratch folder) that depends on the installed
#      jar, against a live `gatehouse serve`.
#   5. Swift, where `swift` is on the PATH (one line says it was skipped elsewhere): the
#      package at the repository root (Package.swift), built in the Swift 6 language mode
#      against the native library above, and its suite (bindings/swift/Tests) against a
#      live `gatehouse serve`.
# Staleness of the committed bindings is checked separately: `cargo xtask bindings --check`.
#
# Environment:
#   GATEHOUSE_FFI_PROFILE  cargo profile of the library (default: mobile)
#   GATEHOUSE_BIN          server binary (default: builds it, then uses debug/gatehouse in
#                          cargo's target directory)
#   MVN_ARGS               extra Maven arguments, e.g. "-o" to run offline after one online run
#   GATEHOUSE_DIST_DIR     keep the built wheel and jar here (default: a scratch folder)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

profile="${GATEHOUSE_FFI_PROFILE:-mobile}"
# Cargo's target directory as cargo resolves it (CARGO_TARGET_DIR, build.target-dir, or target/).
target_dir="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
case "$profile" in
  dev|test) profile_dir="$target_dir/debug" ;;
  bench) profile_dir="$target_dir/release" ;;
  *) profile_dir="$target_dir/$profile" ;;
esac
lib="$profile_dir/libgatehouse_ffi.so"

echo "== building gatehouse-ffi ($profile profile)"
cargo build -q -p gatehouse-ffi --lib --profile "$profile"
if [ -z "${GATEHOUSE_BIN:-}" ]; then
  echo "== building gatehouse (server binary)"
  cargo build -q -p gatehouse-cli
  export GATEHOUSE_BIN="$target_dir/debug/gatehouse"
fi

echo "== mobile library"
bash bindings/check-mobile-lib.sh "$lib"

echo "== swift"
if ! python3 -c "import tree_sitter, tree_sitter_swift" 2>/dev/null; then
  python3 -m pip install -q tree-sitter tree-sitter-swift
fi
python3 bindings/swift/check.py --library "$lib"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-bindings-XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
dist="${GATEHOUSE_DIST_DIR:-$scratch/dist}"
mkdir -p "$dist"

echo "== python: the wheel, installed into a fresh virtual environment"
GATEHOUSE_FFI_LIBRARY="$lib" python3 -m pip wheel -q --no-deps --no-build-isolation \
  -w "$dist" bindings/python
wheel="$(ls "$dist"/gatehouse-*.whl)"
echo "built $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/python" -m pip install -q --no-index "$wheel"
"$scratch/venv/bin/python" -m pip install -q pytest
# From the scratch folder, so nothing of the source tree is importable.
(cd "$scratch" && "$scratch/venv/bin/python" -m pytest -q -p no:cacheprovider \
  --rootdir "$root/bindings/python" "$root/bindings/python/tests")

echo "== kotlin: the jar, installed, used from a fresh Maven consumer project"
# shellcheck disable=SC2086
(cd bindings/kotlin && mvn -B --no-transfer-progress -q ${MVN_ARGS:-} \
  -Dgatehouse.lib.dir="$profile_dir" -DskipTests install)
jar="bindings/kotlin/target/gatehouse-kotlin-0.1.0.jar"
python3 -c 'import sys, zipfile; sys.exit("linux-x86-64/libgatehouse_ffi.so" not in zipfile.ZipFile(sys.argv[1]).namelist())' "$jar" \
  || { echo "FAIL: $jar does not carry linux-x86-64/libgatehouse_ffi.so"; exit 1; }
cp "$jar" "$dist/"
echo "built $(basename "$jar") ($(stat -c %s "$jar") bytes), installed in the local Maven repository"
cp -r bindings/kotlin/consumer "$scratch/kotlin-consumer"
# shellcheck disable=SC2086
(cd "$scratch/kotlin-consumer" && mvn -B --no-transfer-progress ${MVN_ARGS:-} \
  -Dgatehouse.tests.dir="$root/bindings/kotlin/src/test/kotlin" test)

echo "== swift: the package at the repository root, against a live gatehouse serve"
if command -v swift >/dev/null 2>&1; then
  # Swift Testing only (--disable-xctest: the suite has no XCTest cases). The library
  # folder goes first on LD_LIBRARY_PATH too: `cargo xtask` (a `cargo run`) puts cargo's
  # debug folders there, whose libgatehouse_ffi.so would win over the test binary's
  # runpath and may be a build of other sources.
  GATEHOUSE_FFI_LIB_DIR="$profile_dir" LD_LIBRARY_PATH="$profile_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    swift test --disable-xctest
else
  echo "swift: SKIPPED (no swift on the PATH; the Swift suite runs on a machine with a Swift toolchain)"
fi
echo "== binding tests passed"
