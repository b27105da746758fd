"""Schemathesis against a live `gatehouse serve`, bounded: a fixed seed, a fixed number of
examples per operation, a time cap. Run by `cargo xtask test`; by hand:

    python3 tests/schemathesis/run.py --bin "$CARGO_TARGET_DIR/debug/gatehouse"

It starts the server on a free loopback port over a throwaway SQLite file (the dev key),
points schemathesis at the document the server itself serves (`GET /api/openapi.json`,
the same as schema/openapi.json), and passes only when schemathesis finds nothing and the
server is still up and answering at the end: zero 5xx, zero responses the document does
not describe (status, content type, headers, body schema), no schema-violating request
accepted, no ignored auth, 405 for an undocumented method, and no crash.

Checks left out, and why:
- `positive_data_acceptance` ("a schema-valid request is accepted"): the schemas describe
  wire shapes; the server also applies rules a type's schema does not carry (blank
  strings after trimming, integral floats such as 428.0 where an integer is expected).
  Each such rejection is a documented 400/422, never a 5xx or an undescribed answer.
- `negative_data_rejection` on the two run documents (invoke, /run), on the query and
  on the two responds: their readers are tolerant by design (`null` where Agenta omits a
  key reads as absent; any answer object, as Agenta's router reads it), while the schema
  describes what an exact writer sends (schemathesis.toml).
Every operation is tested; Server-Sent Event streams are read up to their first event
(schemathesis.toml, which also lists the one known, reported exception).

What a run finds becomes a regression test in crates/server/tests/it/openapi.rs.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV_KEY = "gatehouse-dev"
CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"


def start_server(binary: str, folder: Path):
    log = open(folder / "server.log", "w", encoding="utf-8")
    process = subprocess.Popen(
        [binary, "serve", "--bind", "127.0.0.1:0", "--database-url", f"sqlite://{folder / 'gatehouse.db'}"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if "listening on " in line:
            return process, line.strip().split("listening on ", 1)[1]
    process.kill()
    raise SystemExit(f"gatehouse serve did not start; see {folder / 'server.log'}")


def schemathesis_command():
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    if found is None:
        raise SystemExit("schemathesis is not installed: python3 -m pip install -r requirements-dev.txt")
    return [found]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.environ.get("GATEHOUSE_BIN"), help="the gatehouse binary")
    parser.add_argument("--examples", type=int, default=30, help="test cases per operation")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--time-cap", type=int, default=300, help="seconds; the run fails past it")
    args = parser.parse_args()
    if not args.bin:
        raise SystemExit("--bin (or GATEHOUSE_BIN) must name the gatehouse binary")

    folder = Path(tempfile.mkdtemp(prefix="gatehouse-schemathesis-"))
    server, url = start_server(args.bin, folder)
    print(f"schemathesis: gatehouse serve at {url}; seed {args.seed}, {args.examples} examples per operation, cap {args.time_cap}s", flush=True)
    command = schemathesis_command() + [
        "--config-file", str(CONFIG),
        "run", f"{url}/api/openapi.json",
        "--url", url,
        "--max-examples", str(args.examples),
        "--seed", str(args.seed),
        "--workers", "1",
        "--header", f"Authorization: Bearer {DEV_KEY}",
        "--no-color",
        "--warnings", "off",
    ]
    started = time.monotonic()
    try:
        result = subprocess.run(command, cwd=folder, timeout=args.time_cap)
        code = result.returncode
    except subprocess.TimeoutExpired:
        print(f"schemathesis: FAILED, the run went past its {args.time_cap}s cap", flush=True)
        code = 1
    elapsed = time.monotonic() - started

    # No crash: the server is still running and answering.
    alive = server.poll() is None
    if alive:
        try:
            with urllib.request.urlopen(f"{url}/api/capabilities", timeout=10) as answer:
                alive = answer.status == 200
        except OSError:
            alive = False
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    if not alive:
        print(f"schemathesis: FAILED, the server crashed or stopped answering; log: {folder / 'server.log'}", flush=True)
        return 1
    if code != 0:
        print(f"schemathesis: FAILED (exit {code}); server log: {folder / 'server.log'}", flush=True)
        return code
    shutil.rmtree(folder, ignore_errors=True)
    print(f"schemathesis: passed in {elapsed:.0f}s, the server up throughout", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
