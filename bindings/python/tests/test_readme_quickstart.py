"""The Python quick start of the repository's README.md, run as pasted (taken from between
its `quickstart:python` markers by bindings/quickstart.py) against a live `gatehouse serve`:
it opens a gate itself and answers it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from conftest import API_KEY

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bindings"))
from quickstart import quickstart  # noqa: E402


def test_the_readme_quick_start_runs_as_pasted(server, project_id, tmp_path):
    program = tmp_path / "main.py"
    program.write_text(quickstart((ROOT / "README.md").read_text(encoding="utf-8"), "python"))
    environment = dict(os.environ, GATEHOUSE_URL=server.url, GATEHOUSE_API_KEY=API_KEY, GATEHOUSE_PROJECT=project_id)
    run = subprocess.run(
        [sys.executable, str(program)], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("opened ['"), run.stdout
    assert any("Bash {'command': 'rm -rf /tmp/cache'}" in line for line in lines[1:]), run.stdout
