#!/usr/bin/env bash
# Builds bindings/swift/build/GatehouseFFI.xcframework for Apple platforms: the native
# library as a static library per Apple target (device, simulator on Apple silicon and
# Intel, macOS), the simulator and macOS slices joined with lipo, each wrapped with the C
# module (header + module.modulemap) by xcodebuild. Then what a release publishes:
#
#   bindings/swift/build/GatehouseFFI.xcframework.zip    the zip to upload
#   bindings/swift/build/Package.swift.binaryTarget      the stanza a release's Package.swift
#                                                        uses instead of the systemLibrary:
#       .binaryTarget(name: "gatehouse_ffiFFI", url: "<release URL>/GatehouseFFI.xcframework.zip",
#                     checksum: "<swift package compute-checksum of the zip>")
#
# Locally (no release), Package.swift uses the unzipped XCFramework when GATEHOUSE_XCFRAMEWORK=1:
#
#     bash bindings/swift/build-xcframework.sh
#     GATEHOUSE_XCFRAMEWORK=1 swift build        # or open the package in Xcode
#
# GATEHOUSE_RELEASE_URL is the folder the zip is uploaded to (default: the project's
# releases page for this version). `--dry-run` prints every command without running one.
#
# Needs macOS with Xcode (xcodebuild, lipo) and rustup. IT CANNOT RUN on the Linux
# machines this project is built and tested on, and has never run: only `--dry-run` (and
# `bash -n`) are run there, by xtask's tests; the package's Linux half (the shared library)
# is built and tested in CI.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

dry_run=false
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=true ;;
  *) echo "usage: bash bindings/swift/build-xcframework.sh [--dry-run]" >&2; exit 2 ;;
esac
# Print a command, then run it (only print it with --dry-run).
run() {
  echo "+ $*"
  if ! $dry_run; then "$@"; fi
}

if ! $dry_run && { [ "$(uname -s)" != "Darwin" ] || ! command -v xcodebuild >/dev/null 2>&1; }; then
  echo "build-xcframework.sh needs macOS with Xcode (xcodebuild); this is $(uname -s). Nothing was built. (--dry-run prints the steps.)" >&2
  exit 2
fi

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
release_url="${GATEHOUSE_RELEASE_URL:-https://example.invalid/gatehouse/releases/download/v$version}"
profile="${GATEHOUSE_FFI_PROFILE:-mobile}"
targets=(aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios aarch64-apple-darwin x86_64-apple-darwin)
run rustup target add "${targets[@]}"
for target in "${targets[@]}"; do
  run cargo rustc -p gatehouse-ffi --lib --profile "$profile" --target "$target" --crate-type staticlib
done

target_dir="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
lib() { echo "$target_dir/$1/$profile/libgatehouse_ffi.a"; }

build="bindings/swift/build"
run rm -rf "$build"
run mkdir -p "$build/headers" "$build/ios-sim" "$build/macos"
run cp bindings/swift/Sources/gatehouse_ffiFFI/gatehouse_ffiFFI.h "$build/headers/"
run cp bindings/swift/Sources/gatehouse_ffiFFI/module.modulemap "$build/headers/module.modulemap"
run lipo -create "$(lib aarch64-apple-ios-sim)" "$(lib x86_64-apple-ios)" -output "$build/ios-sim/libgatehouse_ffi.a"
run lipo -create "$(lib aarch64-apple-darwin)" "$(lib x86_64-apple-darwin)" -output "$build/macos/libgatehouse_ffi.a"

run xcodebuild -create-xcframework \
  -library "$(lib aarch64-apple-ios)" -headers "$build/headers" \
  -library "$build/ios-sim/libgatehouse_ffi.a" -headers "$build/headers" \
  -library "$build/macos/libgatehouse_ffi.a" -headers "$build/headers" \
  -output "$build/GatehouseFFI.xcframework"

# The release asset: zipped with the framework folder at its top (what SwiftPM unpacks),
# and its checksum as SwiftPM computes it (the zip's SHA-256).
zip_name="GatehouseFFI.xcframework.zip"
run ditto -c -k --sequesterRsrc --keepParent "$build/GatehouseFFI.xcframework" "$build/$zip_name"
stanza_file="$build/Package.swift.binaryTarget"
echo "+ swift package compute-checksum $build/$zip_name > $stanza_file (as a binaryTarget)"
if $dry_run; then
  checksum="<swift package compute-checksum $build/$zip_name>"
else
  checksum="$(swift package compute-checksum "$build/$zip_name")"
fi
stanza=".binaryTarget(
    name: \"gatehouse_ffiFFI\",
    url: \"$release_url/$zip_name\",
    checksum: \"$checksum\"
)"
if ! $dry_run; then
  printf '%s\n' "$stanza" > "$stanza_file"
  echo "built $build/GatehouseFFI.xcframework and $build/$zip_name"
fi
echo "a release's Package.swift takes the C module as:"
echo "$stanza"
if $dry_run; then
  echo "dry run: nothing was built (this needs macOS with Xcode)"
fi
