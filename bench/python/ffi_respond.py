#!/usr/bin/env python3
"""One respond through the Python binding of gatehouse-ffi, timed per call (row 6).

Started by ``gatehouse-bench live`` with one argument, a JSON file:
``{"base_url", "api_key", "project_id", "package_dir", "ids": [...], "warmup": n}``.
``package_dir`` holds the importable ``gatehouse`` package with its native library.
Each id is a fresh pending gate; each is answered once with
``await client.respond_to_interaction(id, True, None, None)`` on one asyncio loop.
Prints ``{"samples_ns": [...], "process_cpu_ns_per_call": n, "python": "3.x.y"}`` (the
first ``warmup`` calls left out) on stdout; the CPU figure covers the whole Python
process, the binding's tokio threads included. Exit status 3 when the binding cannot be imported, 1 when a respond fails.

Diagnostics: with ``GATEHOUSE_BENCH_PY_PROFILE=FILE`` in the environment the run is
wrapped in cProfile and its statistics are written to FILE (the samples then include
the profiler's own overhead; use it to see where the time goes, not for the table).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import time


async def run(config) -> tuple[list[int], int]:
    from gatehouse import ClientConfig, GatehouseClient

    client = GatehouseClient(
        ClientConfig(
            base_url=config["base_url"],
            api_key=config["api_key"],
            project_id=config["project_id"],
            timeout=None,
        )
    )
    samples = []
    cpu_ns = 0
    warmup = int(config.get("warmup", 0))
    for i, gate in enumerate(config["ids"]):
        cpu_started = time.process_time_ns()
        started = time.perf_counter_ns()
        row = await client.respond_to_interaction(gate, True, None, None)
        elapsed = time.perf_counter_ns() - started
        cpu = time.process_time_ns() - cpu_started
        if row.id != gate:
            raise RuntimeError(f"respond answered {row.id}, not {gate}")
        if i >= warmup:
            samples.append(elapsed)
            cpu_ns += cpu
    return samples, cpu_ns


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: ffi_respond.py CONFIG.json", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    sys.path.insert(0, config["package_dir"])
    try:
        import gatehouse  # noqa: F401  (checks the binding loads before timing anything)
    except Exception as exc:  # report why; the caller marks the row "not measured"
        print(f"the gatehouse Python binding cannot be imported: {exc}", file=sys.stderr)
        return 3
    profile_path = os.environ.get("GATEHOUSE_BENCH_PY_PROFILE")
    try:
        if profile_path:
            import cProfile

            profiler = cProfile.Profile()
            samples, cpu_ns = profiler.runcall(asyncio.run, run(config))
            profiler.dump_stats(profile_path)
        else:
            samples, cpu_ns = asyncio.run(run(config))
    except Exception as exc:
        print(f"a respond through the binding failed: {exc!r}", file=sys.stderr)
        return 1
    report = {
        "samples_ns": samples,
        # CPU of the whole Python process (its thread and the binding's tokio threads)
        # per measured call.
        "process_cpu_ns_per_call": cpu_ns / len(samples) if samples else None,
        "python": platform.python_version(),
    }
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
