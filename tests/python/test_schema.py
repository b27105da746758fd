"""The committed JSON Schema (schema/) works outside Rust: Python's `jsonschema` package
validates Agenta's fixtures against it and rejects what the contract forbids.

Run: python3 -m pytest tests/python
Fixtures: ../shared/fixtures/agenta beside the checkout, or GATEHOUSE_AGENTA_FIXTURES.
"""

import copy
import json
import os
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schema"
FIXTURES = Path(
    os.environ.get("GATEHOUSE_AGENTA_FIXTURES", ROOT.parent / "shared" / "fixtures" / "agenta")
)
INDEX = json.loads((SCHEMA_DIR / "index.json").read_text())

RUN_REQUEST_GOLDENS = [
    "run_request.pi_core.json",
    "run_request.claude.json",
    "run_request.codex.json",
    "run_request.attachment.json",
]

# The CONTRACT.md A4 row as Agenta's API renders it (the recorded rows win over the
# contract's abbreviation): lifecycle keys first, UUID ids, references {version, slug, id}.
A4_ROW = {
    "created_at": "2026-07-29T06:34:12.345678Z", "updated_at": None, "deleted_at": None,
    "created_by_id": "00000000-0000-0000-0000-000000000007", "updated_by_id": None,
    "deleted_by_id": None,
    "id": "019fac94-5b91-71d2-9d4b-5486013e6e9b",
    "project_id": "019fac94-0000-7000-8000-000000000000",
    "session_id": "48268312-aa0b-4c61-9d55-0e4c1a2f7a10", "turn_id": "t-1",
    "token": "61707b08-0c1e-4d7e-8a0f-2b8a4a0b9c11",
    "kind": "user_approval", "status": "pending",
    "data": {
        "request": {"tool": "Bash", "args": {"command": "echo hi"}, "tool_call_id": "toolu_01"},
        "references": {
            "workflow": {"version": None, "slug": "harness-agent", "id": None},
            "workflow_variant": {"version": None, "slug": "harness-agent.default", "id": None},
            "workflow_revision": {"version": "1", "slug": "49f7faf7cf4b", "id": None},
        },
        "selector": None, "resolution": None,
        "parameters": {"agent": {"llm": {"model": "anthropic/claude-sonnet-4-5"}}},
    },
    "flags": {"delivered_in_band": True, "delivered_webhook": False},
    "tags": None, "meta": None,
}

RECORDED = FIXTURES / "recorded"


def recorded_lines(name):
    """The documents of a recorded NDJSON file; the test is skipped without the corpus."""
    path = RECORDED / name
    if not path.exists():
        pytest.skip(f"Agenta's recorded corpus not found at {RECORDED}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def fixture(name):
    return json.loads((FIXTURES / name).read_text())


def validator(name):
    schema = json.loads((SCHEMA_DIR / INDEX[name]["file"]).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(name, document):
    return [e.message for e in validator(name).iter_errors(document)]


@pytest.mark.parametrize("name", sorted(INDEX))
def test_every_schema_is_a_valid_draft_2020_12_schema(name):
    schema = json.loads((SCHEMA_DIR / INDEX[name]["file"]).read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == name
    assert schema["$id"].endswith(INDEX[name]["file"])
    assert schema["description"] == INDEX[name]["description"]
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_index_lists_every_schema_file():
    files = {p.name for p in SCHEMA_DIR.glob("*.json")} - {"index.json"}
    assert files == {entry["file"] for entry in INDEX.values()}


@pytest.mark.parametrize("golden", RUN_REQUEST_GOLDENS)
def test_run_request_goldens_validate(golden):
    assert errors("RunRequest", fixture(golden)) == []


@pytest.mark.parametrize("golden", ["run_result.ok.json", "run_result.error.json"])
def test_run_result_goldens_validate(golden):
    # run_result.ok.json carries a typeless event: accepted on the wire, dropped on parse.
    assert errors("RunResult", fixture(golden)) == []


def test_stream_records_validate():
    result = fixture("run_result.ok.json")
    assert errors("RunStreamRecord", {"kind": "event", "event": {"type": "message", "text": "hi"}}) == []
    assert errors("RunStreamRecord", {"kind": "result", "result": result}) == []
    assert errors("RunStreamRecord", {"kind": "event", "event": {"text": "no type"}}) != []
    assert errors("RunStreamRecord", {"kind": "other"}) != []


def test_the_a4_interaction_row_validates_and_its_stamp_must_be_a_non_empty_object():
    assert errors("SessionInteraction", A4_ROW) == []
    row = copy.deepcopy(A4_ROW)
    row["data"]["parameters"] = None
    assert errors("SessionInteraction", row) == [], "no stamp renders null, as Agenta renders it"
    del row["data"]["parameters"]
    assert errors("SessionInteraction", row) == [], "a legacy row has no parameters key"
    for bad in ["not an object", {}]:
        row["data"]["parameters"] = bad
        assert errors("SessionInteraction", row) != [], bad
    assert errors("InteractionResponse", {"count": 1, "interaction": A4_ROW}) == []
    assert errors("InteractionsResponse", {"count": 1, "interactions": [A4_ROW]}) == []


def test_a_row_names_actors_by_uuid_and_lists_only_known_kinds():
    for key in ["created_by_id", "updated_by_id", "id", "project_id"]:
        row = copy.deepcopy(A4_ROW)
        row[key] = "dev"
        assert errors("SessionInteraction", row) != [], key
    row = copy.deepcopy(A4_ROW)
    row["kind"] = "telepathy"
    assert errors("SessionInteraction", row) != []
    row = copy.deepcopy(A4_ROW)
    row["status"] = "done"
    assert errors("SessionInteraction", row) != []


def test_create_requests_never_carry_a_null_or_empty_stamp():
    body = {"session_id": "s", "token": "t", "kind": "user_approval",
            "data": {"parameters": {"agent": {}}}}
    assert errors("CreateInteractionRequest", body) == []
    for bad in [None, {}]:
        body["data"]["parameters"] = bad
        assert errors("CreateInteractionRequest", body) != [], bad


def test_respond_transition_and_windowing_as_agenta_checks_them():
    assert errors("RespondRequest", {}) == []
    assert errors("RespondRequest", {"answer": None}) == []
    assert errors("RespondRequest", {"answer": []}) != []
    ok = {"session_id": "s", "token": "t", "status": "resolved",
          "resolution": {"verdict": "approved", "tool_call_id": "c"}}
    assert errors("TransitionRequest", ok) == []
    cancelled = dict(ok, status="cancelled")
    assert errors("TransitionRequest", cancelled) != []
    for windowing in [{"rate": 2.0}, {"interval": 0}, {"next": "not-a-uuid"}]:
        assert errors("InteractionQueryRequest", {"windowing": windowing}) != [], windowing
    assert errors("InteractionQueryRequest", {"windowing": {"rate": 0.5, "next": A4_ROW["id"]}}) == []


def test_the_ready_event_may_carry_nothing():
    assert errors("WatchEvent", {}) == []
    assert errors("WatchEvent", {"type": "ready", "session_id": "s"}) == []
    assert errors("WatchEvent", {"type": "lifecycle", "session_id": "s", "state": "paused"}) != []


def test_effective_parameters_is_optional_and_never_empty():
    golden = fixture("run_request.pi_core.json")
    schema = json.loads((SCHEMA_DIR / INDEX["RunRequest"]["file"]).read_text())
    prop = schema["properties"]["effectiveParameters"]
    assert prop["minProperties"] == 1
    assert "effectiveParameters" not in schema["required"]
    assert "session run" in prop["description"]
    without = copy.deepcopy(golden)
    del without["effectiveParameters"]
    assert errors("RunRequest", without) == []
    golden["effectiveParameters"] = {}
    assert errors("RunRequest", golden) != []


@pytest.mark.parametrize(
    "path, value",
    [
        (["sessionId"], 5),
        (["harness"], 5),
        (["harness"], "gpt"),
        (["permissions", "default"], "maybe"),
        (["permissions", "rules"], []),
        (["permissions", "rules"], None),
        (["customTools", 1, "call", "method"], "PATCH"),
        (["modelConnection", "credentials", 0, "binding", "kind"], "file"),
        (["runContext", "trace", "span_id"], 7),
        (["runContext", "trace"], {}),
        (["messages"], "hi"),
        (["systemPrompt"], None),
        (["skills"], None),
        (["skills"], []),
        (["effectiveParameters"], None),
        (["harnessMode"], "agent"),
    ],
)
def test_what_the_contract_forbids_is_rejected(path, value):
    document = fixture("run_request.pi_core.json")
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert errors("RunRequest", document) != []


@pytest.mark.parametrize("session_id", [None, ""])
def test_effective_parameters_only_on_a_session_run(session_id):
    document = fixture("run_request.pi_core.json")
    document["sessionId"] = session_id
    assert errors("RunRequest", document) != []
    del document["effectiveParameters"]
    assert errors("RunRequest", document) == []


def test_mock_omits_the_tool_keys_and_others_must_not():
    document = fixture("run_request.pi_core.json")
    for key in ["tools", "customTools", "toolCallback", "permissions"]:
        del document[key]
    assert errors("RunRequest", document) != []
    document["harness"] = "mock"
    assert errors("RunRequest", document) == []


def test_every_recorded_request_validates():
    for record in recorded_lines("run_requests.ndjson"):
        assert errors("RunRequest", record["request"]) == [], record["id"]


def test_every_recorded_row_validates():
    models = {"SessionInteractionResponse": "InteractionResponse",
              "SessionInteractionsResponse": "InteractionsResponse"}
    for record in recorded_lines("interaction_rows.ndjson"):
        assert errors(models[record["model"]], record["doc"]) == [], record["id"]


def test_every_recorded_result_validates():
    for record in recorded_lines("run_results.ndjson"):
        assert errors("RunResult", record["result"]) == [], record["id"]


@pytest.mark.parametrize("key", validator("RunRequest").schema["required"])
def test_missing_required_run_request_keys_are_rejected(key):
    document = fixture("run_request.pi_core.json")
    del document[key]
    assert errors("RunRequest", document) != []


def test_call_and_call_ref_together_are_rejected():
    document = fixture("run_request.pi_core.json")
    document["customTools"][0]["call"] = {"method": "GET", "path": "/x"}
    assert errors("RunRequest", document) != []


def test_baggage_null_is_valid_but_must_be_present():
    document = fixture("run_request.pi_core.json")
    assert document["context"]["propagation"]["baggage"] is None
    assert errors("RunRequest", document) == []
    del document["context"]["propagation"]["baggage"]
    assert errors("RunRequest", document) != []


def test_unknown_keys_are_allowed():
    document = fixture("run_request.claude.json")
    document["futureKey"] = {"x": 1}
    document["customTools"][0]["futureToolKey"] = True
    assert errors("RunRequest", document) == []


def test_error_envelopes_validate():
    assert errors("FastApiErrorBody", {"detail": "Interaction is no longer pending"}) == []
    assert errors("AgentPlatErrorEnvelope", {"error": {"code": "NOT_FOUND", "message": "Route not found"}}) == []
    assert errors("AgentPlatErrorEnvelope", {"error": {"code": "NOT_FOUND"}}) != []


def test_the_dumps_len_vectors_are_what_cpython_measures():
    """The Rust size measure is checked against these vectors; they must stay true."""
    path = ROOT / "tests" / "data" / "python_json_dumps_len.vectors.json"
    cases = json.loads(path.read_text())["cases"]
    assert len(cases) == 400
    for case in cases:
        assert len(json.dumps(case["value"]).encode("utf-8")) == case["python_len"]
