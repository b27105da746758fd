#!/usr/bin/env bash
# Builds bindings/swift/build/GatehouseFFI.xcframework for Apple platforms: the native
# library as a static library per Apple target (device, simulator on Apple silicon and
# Intel, macOS), the simulator and macOS slices joined with lipo, each wrapped with the C
# module (header + module.modulemap) by xcodebuild. Package.swift uses it as a binaryTarget
# when GATEHOUSE_XCFRAMEWORK=1:
#
#     bash bindings/swift/build-xcframework.sh
#     GATEHOUSE_XCFRAMEWORK=1 swift build        # or open the package in Xcode
#
# Needs macOS with Xcode (xcodebuild, lipo) and rustup. It cannot run on the Linux machines
# this project is tested on, and has not been run there: only its Linux half (the package
# linking the shared library) is built and tested in CI.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

if [ "$(uname -s)" != "Darwin" ] || ! command -v xcodebuild >/dev/null 2>&1; then
  echo "build-xcframework.sh needs macOS with Xcode (xcodebuild); this is $(uname -s)" >&2
  exit 2
fi

profile="${GATEHOUSE_FFI_PROFILE:-mobile}"
targets=(aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios aarch64-apple-darwin x86_64-apple-darwin)
rustup target add "${targets[@]}"
for target in "${targets[@]}"; do
  cargo rustc -p gatehouse-ffi --lib --profile "$profile" --target "$target" --crate-type staticlib
done

target_dir="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
lib() { echo "$target_dir/$1/$profile/libgatehouse_ffi.a"; }

build="bindings/swift/build"
rm -rf "$build"
mkdir -p "$build/headers" "$build/ios-sim" "$build/macos"
cp bindings/swift/Sources/gatehouse_ffiFFI/gatehouse_ffiFFI.h "$build/headers/"
cp bindings/swift/Sources/gatehouse_ffiFFI/module.modulemap "$build/headers/module.modulemap"
lipo -create "$(lib aarch64-apple-ios-sim)" "$(lib x86_64-apple-ios)" -output "$build/ios-sim/libgatehouse_ffi.a"
lipo -create "$(lib aarch64-apple-darwin)" "$(lib x86_64-apple-darwin)" -output "$build/macos/libgatehouse_ffi.a"

xcodebuild -create-xcframework \
  -library "$(lib aarch64-apple-ios)" -headers "$build/headers" \
  -library "$build/ios-sim/libgatehouse_ffi.a" -headers "$build/headers" \
  -library "$build/macos/libgatehouse_ffi.a" -headers "$build/headers" \
  -output "$build/GatehouseFFI.xcframework"
echo "built $build/GatehouseFFI.xcframework"
