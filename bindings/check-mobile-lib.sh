#!/usr/bin/env bash
# Check a built mobile library (default: mobile/libgatehouse_ffi.so in cargo's target directory):
# - it links no OpenSSL (no libssl/libcrypto in its dynamic dependencies, no OpenSSL
#   symbol among its undefined ones: TLS is rustls, compiled in);
# - its uniffi entry points are exported;
# - its fully stripped size is under the 6 MB target (x86_64 Linux); the size is printed.
# (The dependency graph is checked too, by `cargo test -p gatehouse-ffi --test mobile_library`.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
lib="${1:-}"
if [ -z "$lib" ]; then
  target_dir="$(cd "$root" && cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
  lib="$target_dir/mobile/libgatehouse_ffi.so"
fi
limit_bytes=6000000

[ -f "$lib" ] || { echo "FAIL: $lib does not exist (build it: cargo xtask native-lib --profile mobile)"; exit 1; }

if ldd "$lib" | grep -Ei 'libssl|libcrypto'; then
  echo "FAIL: $lib links OpenSSL dynamically"; exit 1
fi
if nm -D --undefined-only "$lib" | grep -E ' (SSL_|EVP_|OPENSSL_|CRYPTO_)'; then
  echo "FAIL: $lib needs OpenSSL symbols"; exit 1
fi
echo "ok: no OpenSSL linked ($(ldd "$lib" | awk '{print $1}' | tr '\n' ' '))"

exported=$(nm -D --defined-only "$lib" | grep -c ' T uniffi_gatehouse_ffi_fn_' || true)
[ "$exported" -gt 0 ] || { echo "FAIL: $lib exports no uniffi entry point"; exit 1; }
echo "ok: $exported uniffi entry points exported"

stripped="$(mktemp)"
trap 'rm -f "$stripped"' EXIT
strip --strip-all -o "$stripped" "$lib"
size=$(stat -c %s "$stripped")
as_built=$(stat -c %s "$lib")
echo "mobile library: $(basename "$lib") $(uname -m): stripped $size bytes ($(awk "BEGIN {printf \"%.2f\", $size/1000000}") MB), as built (strip=debuginfo) $as_built bytes"
if [ "$size" -ge "$limit_bytes" ]; then
  echo "FAIL: stripped size $size bytes is over the $limit_bytes byte target"; exit 1
fi
