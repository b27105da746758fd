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

A4_ROW = {
    "id": "019fac94-...", "project_id": "019fac94-...",
    "session_id": "48268312-...", "turn_id": "t-1", "token": "61707b08-...",
    "kind": "user_approval", "status": "pending",
    "data": {
        "request": {"tool": "Bash", "args": {"command": "echo hi"}, "tool_call_id": "toolu_01"},
        "references": {
            "workflow": {"id": "...", "slug": "harness-agent"},
            "workflow_variant": {"id": "...", "slug": "harness-agent.default"},
            "workflow_revision": {"id": "...", "slug": "49f7faf7cf4b", "version": "1"},
        },
        "selector": None, "resolution": None,
        "parameters": {"agent": {"llm": {"model": "anthropic/claude-sonnet-4-5"}}},
    },
    "flags": {"delivered_in_band": True, "delivered_webhook": False},
    "tags": None, "meta": None,
    "created_at": "2026-07-29T06:34:12.345678Z", "updated_at": None, "deleted_at": None,
    "created_by_id": "...", "updated_by_id": None, "deleted_by_id": None,
}


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
    del row["data"]["parameters"]
    assert errors("SessionInteraction", row) == [], "a legacy row has no parameters key"
    row["data"]["parameters"] = "not an object"
    assert errors("SessionInteraction", row) != []
    assert errors("InteractionResponse", {"count": 1, "interaction": A4_ROW}) == []
    assert errors("InteractionsResponse", {"count": 1, "interactions": [A4_ROW]}) == []


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
        (["harness"], "gpt"),
        (["permissions", "default"], "sometimes"),
        (["customTools", 1, "call", "method"], "PATCH"),
        (["modelConnection", "credentials", 0, "binding", "kind"], "file"),
        (["runContext", "trace", "span_id"], 7),
        (["messages"], "hi"),
    ],
)
def test_wrong_types_are_rejected(path, value):
    document = fixture("run_request.pi_core.json")
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert errors("RunRequest", document) != []


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
