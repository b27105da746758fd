#!/usr/bin/env bash
# Every binding test, from a checkout. Builds what is missing, then:
#   1. the mobile library: no OpenSSL, exported entry points, stripped size < 6 MB;
#   2. Swift: header compiles and links, symbols match, Swift parses (bindings/swift/check.py);
#   3. Python: pytest against a live `gatehouse serve` (bindings/python/tests);
#   4. Kotlin: `mvn test` against a live `gatehouse serve` (bindings/kotlin).
# Staleness of the committed bindings is checked separately: `cargo xtask bindings --check`.
#
# Environment:
#   GATEHOUSE_FFI_PROFILE  cargo profile of the library (default: mobile)
#   GATEHOUSE_BIN          server binary (default: builds it, then uses debug/gatehouse in
#                          cargo's target directory)
#   MVN_ARGS               extra Maven arguments, e.g. "-o" to run offline after a prefetch
#                          (prefetch: `cd bindings/kotlin && mvn -B -q test -DskipTests`)
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

echo "== python"
cp "$lib" bindings/python/gatehouse/
python3 -m pytest -q bindings/python/tests

echo "== kotlin"
# shellcheck disable=SC2086
(cd bindings/kotlin && mvn -B --no-transfer-progress ${MVN_ARGS:-} -Dgatehouse.lib.dir="$profile_dir" test)
echo "== binding tests passed"
