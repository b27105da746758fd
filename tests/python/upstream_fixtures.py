"""Where the upstream conformance suites find Agenta's and AgentPlat's fixtures, and the one
rule for when they are missing: Python's side of the `gatehouse-fixtures` crate.

- `GATEHOUSE_FIXTURES` names the folder holding `agenta/` and `agentplat/`; otherwise
  `shared/fixtures` beside the checkout.
- Missing under `CI=true`: the test fails (CI must run every conformance suite).
  Missing elsewhere: the test is skipped with one line saying which suite and how to run
  it, and the suite is appended to the file named by `GATEHOUSE_SKIPPED_SUITES` (set by
  `cargo xtask test`, which lists every skipped suite at its end).
"""

import json
import os
from pathlib import Path

import pytest

FIXTURES_ENV = "GATEHOUSE_FIXTURES"
SKIP_LOG_ENV = "GATEHOUSE_SKIPPED_SUITES"
ROOT = Path(__file__).resolve().parents[2]


def fixtures_root() -> Path:
    value = os.environ.get(FIXTURES_ENV, "")
    return Path(value) if value else ROOT.parent / "shared" / "fixtures"


def required() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _missing(upstream: str, suite: str, looked: Path, what: str):
    message = (
        f"upstream conformance suite {suite!r} needs {upstream} fixtures: {what} at {looked}"
    )
    if required():
        pytest.fail(f"{message} (CI=true makes it required; set {FIXTURES_ENV})", pytrace=False)
    log = os.environ.get(SKIP_LOG_ENV, "")
    if log:
        try:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{suite}\t{upstream}\t{looked}\n")
        except OSError:
            pass  # the summary line is lost, never the test
    pytest.skip(
        f"skipped: {message}; set {FIXTURES_ENV}=<folder holding {upstream}/> to run it"
    )


def require(upstream: str, suite: str) -> Path:
    """The folder of `upstream`'s fixtures ("agenta" or "agentplat"), or skip / fail."""
    folder = fixtures_root() / upstream
    if not folder.is_dir():
        _missing(upstream, suite, folder, "fixtures not found")
    return folder


def read_json(upstream: str, suite: str, name: str):
    """One fixture file parsed as JSON, or skip / fail when it is missing."""
    path = require(upstream, suite) / name
    if not path.is_file():
        _missing(upstream, suite, path, "fixture file not found")
    return json.loads(path.read_text(encoding="utf-8"))
