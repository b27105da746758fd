#!/usr/bin/env bash
# Builds bindings/kotlin/build/gatehouse-kotlin-android-<version>.aar, the Android library:
#
#   AndroidManifest.xml   package dev.gatehouse, minSdk 24, the INTERNET permission
#   classes.jar           the Kotlin bindings (generated + Errors.kt, Streams.kt), compiled
#                         by the Maven build in bindings/kotlin (its JVM library left out)
#   jni/<abi>/libgatehouse_ffi.so   the native library per ABI (arm64-v8a, armeabi-v7a,
#                         x86_64), built by cargo-ndk with the mobile profile: the jniLibs
#                         layout, which JNA loads by name on Android
#   proguard.txt          consumer rules that keep JNA's and the bindings' classes
#   R.txt                 empty (no Android resources)
#
# An app depends on the AAR plus JNA's Android AAR and coroutines (an AAR's POM would
# declare them; publishing one is not set up):
#     implementation(files("libs/gatehouse-kotlin-android-<version>.aar"))
#     implementation("net.java.dev.jna:jna:5.18.1@aar")
#     implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.10.2")
#
# Needs the Android NDK ($ANDROID_NDK_HOME), cargo-ndk (`cargo install cargo-ndk`), rustup,
# Maven and zip. IT CANNOT RUN on the Linux machines this project is built and tested on
# (no Android NDK there) and has never run: only `--dry-run` (every command printed,
# nothing run) and `bash -n` are run there, by xtask's tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

dry_run=false
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=true ;;
  *) echo "usage: bash bindings/kotlin/build-aar.sh [--dry-run]" >&2; exit 2 ;;
esac
# Print a command, then run it (only print it with --dry-run).
run() {
  echo "+ $*"
  if ! $dry_run; then "$@"; fi
}
# Write a file (only name it with --dry-run).
write() {
  echo "+ write $1"
  if ! $dry_run; then cat > "$1"; else cat > /dev/null; fi
}

if ! $dry_run; then
  if [ -z "${ANDROID_NDK_HOME:-}" ] || [ ! -d "$ANDROID_NDK_HOME" ]; then
    echo "build-aar.sh needs the Android NDK: set ANDROID_NDK_HOME (e.g. \$HOME/Android/Sdk/ndk/<version>). Nothing was built. (--dry-run prints the steps.)" >&2
    exit 2
  fi
  if ! cargo ndk --version >/dev/null 2>&1; then
    echo "build-aar.sh needs cargo-ndk: cargo install cargo-ndk. Nothing was built." >&2
    exit 2
  fi
fi

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
profile="${GATEHOUSE_FFI_PROFILE:-mobile}"
min_sdk=24
abis=(arm64-v8a armeabi-v7a x86_64)
rust_targets=(aarch64-linux-android armv7-linux-androideabi x86_64-linux-android)
build="bindings/kotlin/build/aar"
aar="bindings/kotlin/build/gatehouse-kotlin-android-$version.aar"

run rm -rf "$build" "$aar"
run mkdir -p "$build/jni"
run rustup target add "${rust_targets[@]}"
# cargo-ndk sets the NDK's linker per target and copies each library into jni/<abi>/.
ndk_targets=()
for abi in "${abis[@]}"; do ndk_targets+=(-t "$abi"); done
run cargo ndk --platform "$min_sdk" "${ndk_targets[@]}" -o "$build/jni" \
  build -p gatehouse-ffi --lib --profile "$profile"

# The classes: the Maven build's, without the JVM's native library (target/classes/linux-x86-64).
run mvn -B --no-transfer-progress -q -f bindings/kotlin/pom.xml -DskipTests -Dgatehouse.cargo.skip=true compile
run jar --create --file "$build/classes.jar" -C bindings/kotlin/target/classes dev -C bindings/kotlin/target/classes META-INF

write "$build/AndroidManifest.xml" <<EOF
<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="dev.gatehouse">
    <uses-sdk android:minSdkVersion="$min_sdk" />
    <uses-permission android:name="android.permission.INTERNET" />
</manifest>
EOF
write "$build/proguard.txt" <<'EOF'
-keep class com.sun.jna.** { *; }
-keep class * implements com.sun.jna.** { *; }
-keep class dev.gatehouse.** { *; }
EOF
write "$build/R.txt" < /dev/null

for abi in "${abis[@]}"; do
  echo "+ test -f $build/jni/$abi/libgatehouse_ffi.so"
  if ! $dry_run; then
    [ -f "$build/jni/$abi/libgatehouse_ffi.so" ] || { echo "FAIL: cargo-ndk wrote no $build/jni/$abi/libgatehouse_ffi.so" >&2; exit 1; }
  fi
done
run sh -c "cd '$build' && zip -qr '$root/$aar' AndroidManifest.xml classes.jar jni proguard.txt R.txt"
if $dry_run; then
  echo "dry run: nothing was built (this needs the Android NDK and cargo-ndk)"
else
  echo "built $aar"
fi
