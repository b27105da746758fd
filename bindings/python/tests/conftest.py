"""Fixtures for the Python binding tests: a live `gatehouse serve` on an ephemeral port.

The server binary is $GATEHOUSE_BIN (default: debug/gatehouse in cargo's target directory,
as `cargo metadata` reports it).
The package under test is the INSTALLED `gatehouse` (bindings/run-tests.sh builds the
wheel, installs it into a fresh virtual environment and runs these tests with that
environment's Python, from outside the source tree); nothing here adds the source folder
to `sys.path`. The tests fail, not skip, when the package or the server is missing.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import subprocess
import tempfile
import threading
import urllib.parse
import urllib.request
import uuid

import pytest

PYTHON_DIR = pathlib.Path(__file__).resolve().parent.parent
WORKSPACE = PYTHON_DIR.parent.parent

API_KEY = "py-binding-secret"
STARTUP_TIMEOUT_S = 30
# The per-call timeout of the test clients (ClientConfig.timeout is a datetime.timedelta).
TIMEOUT = datetime.timedelta(seconds=10)


def default_server_binary() -> str:
    """debug/gatehouse in cargo's target directory (CARGO_TARGET_DIR, build.target-dir or
    target/, as cargo itself resolves it)."""
    metadata = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=WORKSPACE,
        check=True,
        capture_output=True,
        text=True,
    )
    target = pathlib.Path(json.loads(metadata.stdout)["target_directory"])
    return str(target / "debug" / "gatehouse")


class Server:
    """One `gatehouse serve` process with its own SQLite file."""

    def __init__(self, no_execution: bool = False, agenta_contract: str | None = None):
        binary = os.environ.get("GATEHOUSE_BIN")
        if binary is None:
            binary = default_server_binary()
        if not os.path.isfile(binary):
            raise RuntimeError(
                f"server binary {binary} not found: build it (cargo build -p gatehouse-cli) "
                "or set GATEHOUSE_BIN"
            )
        self._dir = tempfile.TemporaryDirectory(prefix="gatehouse-py-")
        args = [
            binary,
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--database-url",
            f"sqlite://{self._dir.name}/gatehouse.db",
            "--api-key",
            f"phone={API_KEY}",
        ]
        if no_execution:
            args.append("--no-execution")
        if agenta_contract is not None:
            args += ["--agenta-contract", agenta_contract]
        self.stderr = open(os.path.join(self._dir.name, "server.log"), "wb")
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=self.stderr, stdin=subprocess.DEVNULL
        )
        self.url = self._read_listening_line()

    def _read_listening_line(self) -> str:
        found: list[str] = []

        listening = threading.Event()

        def read() -> None:
            # Keeps draining stdout after the listening line, so the server never blocks
            # on a full pipe.
            assert self.process.stdout is not None
            for raw in self.process.stdout:
                line = raw.decode("utf-8", "replace").strip()
                if not found and line.startswith("listening on "):
                    found.append(line[len("listening on ") :])
                    listening.set()
            listening.set()

        threading.Thread(target=read, daemon=True).start()
        listening.wait(STARTUP_TIMEOUT_S)
        if not found:
            self.stop()
            log = pathlib.Path(self.stderr.name).read_text(errors="replace")
            raise RuntimeError(f"gatehouse serve printed no 'listening on' line; its log:\n{log}")
        return found[0]

    def established_connections(self) -> int:
        """TCP connections to or from this server's port in state ESTABLISHED, from
        /proc/net/tcp (both ends of a loopback connection count: a live watch is 2)."""
        port = ":%04X" % urllib.parse.urlsplit(self.url).port
        count = 0
        with open("/proc/net/tcp") as table:
            for line in list(table)[1:]:
                fields = line.split()
                if len(fields) > 3 and fields[3] == "01" and (fields[1].endswith(port) or fields[2].endswith(port)):
                    count += 1
        return count

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()
        self._dir.cleanup()

    # --- the runner/operator side, over plain HTTP (not part of the mobile API) ---

    def post(self, path: str, project_id: str, body: dict) -> dict:
        request = urllib.request.Request(
            f"{self.url}{path}?project_id={project_id}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def open_gate(
        self,
        project_id: str,
        session_id: str | None = None,
        prompt: str = "list files",
        script: list | None = None,
    ) -> dict:
        """Invoke the deterministic agent with `ask` permissions: its Bash step parks the
        turn at an approval gate. Returns the invoke answer (`interaction_ids`, and
        `execution` {room_id, session_id, revision} when the server runs execution).
        `script` replaces the agent's default script (`agent.script`: `say`, `tool`,
        `wait_ms`, ... steps); it must gate before it ends."""
        agent: dict = {
            "llm": {"model": "py-model-1"},
            "runner": {"permissions": {"default": "ask"}},
        }
        if script is not None:
            agent["script"] = script
        body = {
            "data": {
                "inputs": {"messages": [{"role": "user", "content": prompt}]},
                "parameters": {"agent": agent},
            }
        }
        if session_id is not None:
            body["session_id"] = session_id
        answer = self.post("/api/invoke", project_id, body)
        assert answer["status"] == "parked", answer
        assert len(answer["interaction_ids"]) == 1, answer
        return answer


@pytest.fixture(scope="session")
def server():
    """The suites written for Agenta's contract before the durable one (`--agenta-contract
    legacy`: a respond answers the row; a second device's other verdict is
    `AlreadyAnswered`). The durable contract, the server's default, has its own fixture."""
    srv = Server(agenta_contract="legacy")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def server_without_execution():
    srv = Server(no_execution=True)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def durable_server():
    """A server whose Agenta paths speak the durable contract (`--agenta-contract durable`)."""
    srv = Server(agenta_contract="durable")
    yield srv
    srv.stop()


@pytest.fixture
def project_id() -> str:
    """A fresh project per test, so tests never see each other's gates."""
    return str(uuid.uuid4())


@pytest.fixture
def client(server, project_id):
    import gatehouse

    return gatehouse.GatehouseClient(
        gatehouse.ClientConfig(
            base_url=server.url, api_key=API_KEY, project_id=project_id, timeout=TIMEOUT
        )
    )


@pytest.fixture
def durable_client(durable_server, project_id):
    import gatehouse

    return gatehouse.GatehouseClient(
        gatehouse.ClientConfig(
            base_url=durable_server.url, api_key=API_KEY, project_id=project_id, timeout=TIMEOUT
        )
    )

