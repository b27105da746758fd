"""A Python client generated from schema/openapi.json by openapi-python-client, used
against a live `gatehouse serve`: what a user who generates a client from the document
gets. The client is generated into a temporary folder at test time (never committed).

The flow: a gate opened by the deterministic agent (`POST /api/invoke`), listed as
pending, answered; a second answer's 409 read as the typed error body (`code`
`ALREADY_ANSWERED`); the capabilities with a value this version does not know (a newer
host's, added to the live answer on its way in) kept as text; a batch.

Run by `cargo xtask test`; by hand, with requirements-dev.txt installed:

    GATEHOUSE_BIN="$CARGO_TARGET_DIR/debug/gatehouse" python3 -m pytest -q tests/openapi_client
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "schema" / "openapi.json"
PACKAGE = "gatehouse_openapi_client"
DEV_KEY = "gatehouse-dev"
# A capability no version of Gatehouse serves: what a newer host might add.
NEWER_CAPABILITY = "teleport"


def generator_command() -> str:
    """openapi-python-client from this Python's environment (or the PATH)."""
    scripts = str(Path(sys.executable).parent)
    found = shutil.which("openapi-python-client", path=scripts + os.pathsep + os.environ.get("PATH", ""))
    if found is None:
        raise RuntimeError("openapi-python-client is not installed: python3 -m pip install -r requirements-dev.txt")
    return found


@pytest.fixture(scope="module")
def api():
    """The generated package, imported from a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="gatehouse-openapi-client-"))
    config = folder / "config.yaml"
    # No post hooks: the generator would run ruff on the output, which is not needed here.
    config.write_text("post_hooks: []\n")
    result = subprocess.run(
        [
            generator_command(), "generate",
            "--path", str(DOCUMENT),
            "--meta", "none",
            "--output-path", str(folder / PACKAGE),
            "--config", str(config),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # Every part of the document generates: the generator names each piece it skipped.
    assert "Warning" not in output, output
    sys.path.insert(0, str(folder))
    try:
        package = importlib.import_module(PACKAGE)
        importlib.import_module(f"{PACKAGE}.models")
        yield package
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        shutil.rmtree(folder, ignore_errors=True)


def server_binary() -> str:
    binary = os.environ.get("GATEHOUSE_BIN")
    if binary is None:
        metadata = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        )
        binary = str(Path(json.loads(metadata.stdout)["target_directory"]) / "debug" / "gatehouse")
    if not os.path.isfile(binary):
        raise RuntimeError(f"server binary {binary} not found: cargo build -p gatehouse-cli, or set GATEHOUSE_BIN")
    return binary


@pytest.fixture(scope="module")
def server_url():
    """A live `gatehouse serve` on a free loopback port over a throwaway SQLite file (the
    development key)."""
    folder = Path(tempfile.mkdtemp(prefix="gatehouse-openapi-server-"))
    log = open(folder / "server.log", "w", encoding="utf-8")
    process = subprocess.Popen(
        # The legacy contract: these flows answer with Gatehouse's own respond (200, a 409
        # ALREADY_ANSWERED); the durable one is the default, tested by the Rust suites.
        [server_binary(), "serve", "--bind", "127.0.0.1:0", "--database-url", f"sqlite://{folder / 'gatehouse.db'}",
         "--agenta-contract", "legacy"],
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    url = None
    assert process.stdout is not None
    for line in process.stdout:
        if "listening on " in line:
            url = line.strip().split("listening on ", 1)[1]
            break
    try:
        assert url is not None, (folder / "server.log").read_text()
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def client(api, server_url):
    with api.AuthenticatedClient(base_url=server_url, token=DEV_KEY, raise_on_unexpected_status=True) as client:
        yield client


@pytest.fixture
def project_id() -> uuid.UUID:
    """A fresh project per test, so tests never see each other's gates."""
    return uuid.uuid4()


def open_gate(api, client, project_id: uuid.UUID) -> str:
    """Invoke the deterministic agent with `ask` permissions, through the generated
    client: its Bash step parks the turn at an approval gate. Returns the gate's id."""
    from gatehouse_openapi_client.api.gatehouse import invoke

    body = api.models.InvokeRequest.from_dict({
        "data": {
            "inputs": {"messages": [{"role": "user", "content": "list files"}]},
            "parameters": {
                "agent": {
                    "llm": {"model": "openapi-client-model"},
                    "runner": {"permissions": {"default": "ask"}},
                }
            },
        }
    })
    answer = invoke.sync(client=client, body=body, project_id=project_id)
    assert isinstance(answer, api.models.InvokeResponse), answer
    assert answer.status == api.models.TurnStatus.PARKED, answer
    assert len(answer.interaction_ids) == 1, answer
    return answer.interaction_ids[0]


def approve(api) -> object:
    return api.models.RespondRequest.from_dict({"answer": {"approved": True, "message": "go ahead"}})


def test_the_generated_answer_model_refuses_a_misspelled_key(api):
    """The answer is a typed model: `approved` is required and nothing else is taken, so
    `{aproved: true}` never leaves the generated client as an answer."""
    models = api.models
    answer = models.ApprovalAnswer(approved=True, tool_call_id="toolu_01", message="go")
    assert answer.to_dict() == {"approved": True, "tool_call_id": "toolu_01", "message": "go"}
    with pytest.raises(TypeError):
        models.ApprovalAnswer(aproved=True)
    with pytest.raises(KeyError):
        models.ApprovalAnswer.from_dict({"aproved": True})
    assert not hasattr(models.ApprovalAnswer(approved=False), "additional_properties")
    # Every body that carries an answer types it so (a type checker refuses a plain dict).
    for model, field in [
        (models.RespondRequest, "answer"),
        (models.SessionInteractionRespondRequest, "answer"),
        (models.SessionInteractionAnswerRequest, "answer"),
        (models.BatchAnswer, "answer"),
    ]:
        annotation = str(model.__annotations__[field])
        assert "ApprovalAnswer" in annotation and "dict" not in annotation, (model, annotation)


def test_a_pending_gate_is_listed_answered_and_a_second_answer_is_a_typed_409(api, client, project_id):
    from gatehouse_openapi_client.api.agenta import query_interactions, respond_to_interaction

    models = api.models
    gate = open_gate(api, client, project_id)

    query = models.InteractionQueryRequest.from_dict({"query": {"status": "pending"}})
    pending = query_interactions.sync(client=client, body=query, project_id=project_id)
    assert isinstance(pending, models.InteractionsResponse), pending
    assert pending.count == 1
    row = pending.interactions[0]
    assert str(row.id) == gate
    # An open enum: the known value reads as the generated enum, not as text.
    assert row.status == models.InteractionStatus.PENDING
    assert row.kind == models.InteractionKind.USER_APPROVAL

    answered = respond_to_interaction.sync(uuid.UUID(gate), client=client, body=approve(api), project_id=project_id)
    assert isinstance(answered, models.InteractionResponse), answered
    assert answered.interaction.status == models.InteractionStatus.RESPONDED

    again = respond_to_interaction.sync_detailed(uuid.UUID(gate), client=client, body=approve(api), project_id=project_id)
    assert again.status_code == 409
    error = again.parsed
    assert isinstance(error, models.FastApiErrorBody), error
    assert error.code == models.GatehouseCode.ALREADY_ANSWERED
    assert isinstance(error.detail, str) and error.detail

    still_pending = query_interactions.sync(client=client, body=query, project_id=project_id)
    assert still_pending.count == 0


def test_capabilities_with_a_value_this_version_does_not_know(api, server_url):
    from gatehouse_openapi_client.api.gatehouse import get_capabilities

    models = api.models

    class NewerHost(httpx.BaseTransport):
        """The live server's own answer, with a newer host's capability appended."""

        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = self.inner.handle_request(request)
            if request.url.path != "/api/capabilities":
                return response
            response.read()
            body = response.json()
            body["capabilities"].append(NEWER_CAPABILITY)
            return httpx.Response(response.status_code, json=body)

        def close(self) -> None:
            self.inner.close()

    with api.Client(base_url=server_url, httpx_args={"transport": NewerHost()}) as plain:
        answer = get_capabilities.sync(client=plain)
    assert isinstance(answer, models.CapabilitiesResponse), answer
    assert answer.service == "gatehouse"
    assert models.Capability.INTERACTIONS in answer.capabilities
    assert models.Capability.INTERACTION_BATCH in answer.capabilities
    # Kept as the text the host sent, after the known ones.
    assert answer.capabilities[-1] == NEWER_CAPABILITY
    assert not isinstance(answer.capabilities[-1], models.Capability)
    # And written back as read.
    assert answer.to_dict()["capabilities"][-1] == NEWER_CAPABILITY


def test_a_batch_answers_each_gate_and_names_the_ones_it_could_not(api, client, project_id):
    from gatehouse_openapi_client.api.agenta import respond_to_interaction
    from gatehouse_openapi_client.api.gatehouse import respond_to_interactions

    models = api.models
    first = open_gate(api, client, project_id)
    second = open_gate(api, client, project_id)
    third = open_gate(api, client, project_id)
    answered = respond_to_interaction.sync(uuid.UUID(third), client=client, body=approve(api), project_id=project_id)
    assert isinstance(answered, models.InteractionResponse), answered
    unknown = str(uuid.uuid4())

    batch = models.BatchRespondRequest.from_dict({
        "answers": [
            {"id": first, "answer": {"approved": True}},
            {"id": second, "answer": {"approved": False, "message": "not now"}},
            {"id": third, "answer": {"approved": True}},
            {"id": unknown, "answer": {"approved": True}},
        ]
    })
    result = respond_to_interactions.sync(client=client, body=batch, project_id=project_id)
    assert isinstance(result, models.BatchRespondResponse), result
    assert result.count == 4
    outcomes = [(r.id, r.outcome) for r in result.results]
    assert outcomes == [
        (first, models.BatchOutcome.ANSWERED),
        (second, models.BatchOutcome.ANSWERED),
        (third, models.BatchOutcome.ALREADY_ANSWERED),
        (unknown, models.BatchOutcome.NOT_FOUND),
    ]
    assert result.results[0].interaction.status == models.InteractionStatus.RESPONDED
    assert result.results[2].error.code == "ALREADY_ANSWERED"
    assert result.results[3].error.code == "NOT_FOUND"
