#!/usr/bin/env python3
"""Agenta's own ``stamp_effective_parameters`` beside Gatehouse's (row 1 of BENCHMARKS.md).

Loads ONLY ``agenta/sdk/agents/utils/effective_config.py`` from the PyPI wheel
``agenta==0.125.1`` (its logger import stubbed through ``sys.modules``), sets its
``MAX_STAMPED_BYTES`` to 65536 (the released wheel uses 262144; Gatehouse's default and
the seed contract use 65536), then:

1. parity: runs it on every shared input written by ``gatehouse-bench prepare-stamp``
   and compares with Gatehouse's outputs on the same inputs: emitted or not, the stamped
   JSON (same values, same key order) and the measured size
   (``len(json.dumps(x).encode())``, also for an over-cap drop);
2. timing: ``timeit`` in-process on the golden blob and on the 64 KiB config, reporting
   the per-call median over repeats (and the spread): the stamp of a dict, config in and
   ``/run`` body bytes out, and text in (``json.loads``) and stamp out.

Usage: agenta_stamp.py --wheel WHEEL --inputs DIR --out FILE [--quick]
Exit status 0 with the report written; 1 on a parity mismatch (report still written);
2 when the module cannot be loaded.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import platform
import statistics
import sys
import timeit
import types
import zipfile
from pathlib import Path

MODULE_PATH = "agenta/sdk/agents/utils/effective_config.py"
CAP = 65536


class _NullLogger:
    """Stands in for ``agenta.sdk.utils.logging.get_module_logger(...)``: a warning costs
    one Python call and nothing else (the Rust side never logs either)."""

    def warning(self, *args, **kwargs):
        return None

    info = debug = error = warning


def load_agenta_module(wheel: Path, workdir: Path):
    """Extract the one module from the wheel and import it with its logger stubbed."""
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read(MODULE_PATH)
    workdir.mkdir(parents=True, exist_ok=True)
    module_file = workdir / "effective_config.py"
    module_file.write_bytes(source)

    for name in ("agenta", "agenta.sdk", "agenta.sdk.utils"):
        package = types.ModuleType(name)
        package.__path__ = []  # a namespace-like stub, nothing real is imported
        sys.modules.setdefault(name, package)
    logging_stub = types.ModuleType("agenta.sdk.utils.logging")
    logging_stub.get_module_logger = lambda name: _NullLogger()
    sys.modules["agenta.sdk.utils.logging"] = logging_stub

    spec = importlib.util.spec_from_file_location("agenta_effective_config", module_file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module_file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    released_cap = module.MAX_STAMPED_BYTES
    module.MAX_STAMPED_BYTES = CAP
    return module, released_cap


def measured(value) -> int:
    return len(json.dumps(value).encode("utf-8"))


def parity(module, inputs, rust_outputs):
    """Compare Agenta's outputs with Gatehouse's, input by input."""
    by_name = {out["name"]: out for out in rust_outputs}
    mismatches = []
    skipped = []
    compared = 0
    matched = 0
    for case in inputs:
        name = case["name"]
        rust = by_name.get(name)
        if rust is None:
            mismatches.append({"name": name, "why": "no Gatehouse output"})
            continue
        if not rust.get("agenta_compatible_agrees", False):
            # Not a parity input: Gatehouse departs from Agenta here on purpose (C2).
            skipped.append(name)
            continue
        given = copy.deepcopy(case["input"])
        py = module.stamp_effective_parameters(given)
        compared += 1
        py_emitted = py is not None
        if py_emitted != rust["emitted"]:
            mismatches.append(
                {"name": name, "why": f"emitted: agenta {py_emitted}, gatehouse {rust['emitted']}"}
            )
            continue
        if py_emitted:
            py_text = json.dumps(py)
            rust_text = json.dumps(rust["stamped"])
            if py_text != rust_text:
                mismatches.append({"name": name, "why": "stamped JSON differs"})
                continue
            if measured(py) != rust["measured_bytes"]:
                mismatches.append(
                    {
                        "name": name,
                        "why": f"size: agenta {measured(py)}, gatehouse {rust['measured_bytes']}",
                    }
                )
                continue
        elif isinstance(case["input"], dict) and case["input"]:
            # Dropped over the cap: the measured size of the redacted blob must agree.
            size = measured(module.redact_effective_parameters(copy.deepcopy(case["input"])))
            if rust.get("reason") != "over_cap" or size != rust.get("measured_bytes"):
                mismatches.append(
                    {
                        "name": name,
                        "why": f"drop: agenta {size} B, gatehouse {rust.get('reason')} "
                        f"{rust.get('measured_bytes')} B",
                    }
                )
                continue
        matched += 1
    return compared, matched, mismatches, skipped


def time_per_call(func, arg, repeats: int, min_time: float):
    """Per-call seconds of ``func(arg)``: one sample per repeat, each over enough calls
    to last at least ``min_time`` seconds."""
    timer = timeit.Timer(lambda: func(arg))
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= min_time:
            break
        number *= 2 if elapsed == 0 else max(2, min(10, int(min_time / elapsed) + 1))
    samples = [t / number for t in timer.repeat(repeat=repeats, number=number)]
    ordered = sorted(samples)
    quartiles = statistics.quantiles(ordered, n=4) if len(ordered) >= 2 else [ordered[0]] * 3
    return {
        "calls_per_sample": number,
        "samples": len(samples),
        "median_ns": statistics.median(ordered) * 1e9,
        "p25_ns": quartiles[0] * 1e9,
        "p75_ns": quartiles[2] * 1e9,
        "min_ns": ordered[0] * 1e9,
        "max_ns": ordered[-1] * 1e9,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", required=True, type=Path)
    parser.add_argument("--inputs", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()

    try:
        module, released_cap = load_agenta_module(args.wheel, args.inputs / "agenta_module")
    except Exception as exc:  # the report says why, the caller stops
        print(f"cannot load Agenta's module from {args.wheel}: {exc}", file=sys.stderr)
        return 2

    inputs = json.loads((args.inputs / "shared_inputs.json").read_text())
    rust_outputs = json.loads((args.inputs / "rust_outputs.json").read_text())
    compared, matched, mismatches, skipped = parity(module, inputs, rust_outputs)

    timings = {}
    repeats, min_time = (3, 0.02) if args.quick else (15, 0.2)
    for label, file in (("golden", "golden.json"), ("config_64k", "config_64k.json")):
        blob = json.loads((args.inputs / file).read_text())
        if module.stamp_effective_parameters(copy.deepcopy(blob)) is None:
            print(f"{file} is not stamped by Agenta's module", file=sys.stderr)
            return 1
        timing = time_per_call(module.stamp_effective_parameters, blob, repeats, min_time)
        timing["input_bytes"] = measured(module.redact_effective_parameters(blob))
        timings[label] = timing
        # Config in, /run body bytes out: the stamp, then json.dumps of the request that
        # carries it (the same request Gatehouse's side writes), encoded as the body.
        base = json.loads((args.inputs / "run_body_base.json").read_text())

        def body(config, base=base):
            request = dict(base)
            request["effectiveParameters"] = module.stamp_effective_parameters(config)
            return json.dumps(request).encode("utf-8")

        timings["body_" + label] = time_per_call(body, blob, repeats, min_time)
        # Text in, stamp out: json.loads of the compact text the Rust side reads, then the
        # stamp (what a service does with a config that arrives as a request body).
        text = (args.inputs / file.replace(".json", ".text.json")).read_text()

        def read_stamp(text):
            return module.stamp_effective_parameters(json.loads(text))

        timings["read_" + label] = time_per_call(read_stamp, text, repeats, min_time)

    report = {
        "agenta_version": "0.125.1",
        "module": MODULE_PATH,
        "released_max_stamped_bytes": released_cap,
        "max_stamped_bytes": CAP,
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "parity": {
            "inputs": len(inputs),
            "compared": compared,
            "matched": matched,
            "skipped_c2_departures": skipped,
            "mismatches": mismatches,
        },
        "timings": timings,
    }
    args.out.write_text(json.dumps(report, indent=2))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
