"""The committed JSON Schema (schema/) works outside Rust: Python's `jsonschema` package
validates documents against it and rejects what the contract forbids.

Two kinds of tests:
- the project's own documents (tests/data/samples: valid, one or more per wire type;
  tests/data/invalid: every one must be rejected), always run;
- the upstream conformance suite over Agenta's fixtures (found by upstream_fixtures.py:
  GATEHOUSE_FIXTURES, else shared/fixtures beside the checkout), skipped with one line when they are
  absent, required under CI=true.

Run: python3 -m pytest tests/python
"""

import copy
import json
from pathlib import Path

import jsonschema
import pytest

import upstream_fixtures

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schema"
DATA = ROOT / "tests" / "data"
INDEX = json.loads((SCHEMA_DIR / "index.json").read_text())

GOLDENS = "Agenta /run goldens (tests/python)"
RUN_REQUEST_GOLDENS = [
    "run_request.pi_core.json",
    "run_request.claude.json",
    "run_request.codex.json",
    "run_request.attachment.json",
]


def documents(folder):
    """[(type name, file name)] of tests/data/<folder>: `<Type>.<label>.json`."""
    return sorted((p.name.split(".")[0], p.name) for p in (DATA / folder).glob("*.json"))


def own(folder, file):
    return json.loads((DATA / folder / file).read_text())


def golden(name):
    return upstream_fixtures.read_json("agenta", GOLDENS, name)


def validator(name):
    schema = json.loads((SCHEMA_DIR / INDEX[name]["file"]).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(name, document):
    return [e.message for e in validator(name).iter_errors(document)]


# ----- the schema files ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(INDEX))
def test_every_schema_is_a_valid_draft_2020_12_schema(name):
    schema = json.loads((SCHEMA_DIR / INDEX[name]["file"]).read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == name
    assert schema["$id"].endswith(INDEX[name]["file"])
    assert schema["description"] == INDEX[name]["description"]
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_index_lists_every_schema_file():
    files = {p.name for p in SCHEMA_DIR.glob("*.schema.json")}
    assert files == {entry["file"] for entry in INDEX.values()}


# ----- the project's own documents -------------------------------------------------------


def test_every_registered_type_has_an_own_sample():
    assert {name for name, _ in documents("samples")} == set(INDEX)


@pytest.mark.parametrize("name, file", documents("samples"))
def test_own_samples_validate(name, file):
    assert errors(name, own("samples", file)) == []


@pytest.mark.parametrize("name, file", documents("invalid"))
def test_own_invalid_documents_are_rejected(name, file):
    assert name in INDEX, f"{file} names no registered type"
    assert errors(name, own("invalid", file)) != []


SESSION_RUN = "RunRequest.session_run_all_keys.json"


def test_effective_parameters_is_optional_and_never_empty():
    document = own("samples", SESSION_RUN)
    schema = json.loads((SCHEMA_DIR / INDEX["RunRequest"]["file"]).read_text())
    prop = schema["properties"]["effectiveParameters"]
    assert prop["minProperties"] == 1
    assert "effectiveParameters" not in schema["required"]
    assert "session run" in prop["description"]
    without = copy.deepcopy(document)
    del without["effectiveParameters"]
    assert errors("RunRequest", without) == []
    document["effectiveParameters"] = {}
    assert errors("RunRequest", document) != []


def test_a_legacy_row_has_no_parameters_and_a_stamp_must_be_an_object():
    row = own("samples", "SessionInteraction.contract.json")
    del row["data"]["parameters"]
    assert errors("SessionInteraction", row) == [], "a legacy row has no parameters key"
    row["data"]["parameters"] = "not an object"
    assert errors("SessionInteraction", row) != []


@pytest.mark.parametrize(
    "path, value",
    [
        (["sessionId"], 5),
        (["harness"], 7),
        (["permissions", "default"], 12),
        (["customTools", 0, "call", "method"], "PATCH"),
        (["modelConnection", "credentials", 0, "binding", "kind"], "file"),
        (["runContext", "trace", "span_id"], 7),
        (["messages"], "hi"),
    ],
)
def test_wrong_types_are_rejected(path, value):
    document = own("samples", SESSION_RUN)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert errors("RunRequest", document) != []


@pytest.mark.parametrize("key", validator("RunRequest").schema["required"])
def test_missing_required_run_request_keys_are_rejected(key):
    document = own("samples", SESSION_RUN)
    del document[key]
    assert errors("RunRequest", document) != []


def test_call_and_call_ref_together_are_rejected():
    document = own("samples", SESSION_RUN)
    document["customTools"][1]["call"] = {"method": "GET", "path": "/x"}
    assert errors("RunRequest", document) != []


def test_unknown_keys_are_allowed():
    document = own("samples", SESSION_RUN)
    document["futureKey"] = {"x": 1}
    document["customTools"][0]["futureToolKey"] = True
    assert errors("RunRequest", document) == []


def test_stream_records_need_a_kind_and_a_typed_event():
    result = own("samples", "RunResult.ok.json")
    assert errors("RunStreamRecord", {"kind": "result", "result": result}) == []
    assert errors("RunStreamRecord", {"kind": "event", "event": {"text": "no type"}}) != []
    assert errors("RunStreamRecord", {"kind": "other"}) != []


def test_the_dumps_len_vectors_are_what_cpython_measures():
    """The Rust size measure is checked against these vectors; they must stay true."""
    cases = json.loads((DATA / "python_json_dumps_len.vectors.json").read_text())["cases"]
    assert len(cases) == 400
    for case in cases:
        assert len(json.dumps(case["value"]).encode("utf-8")) == case["python_len"]


# ----- upstream conformance: Agenta's /run goldens ---------------------------------------


@pytest.mark.parametrize("name", RUN_REQUEST_GOLDENS)
def test_agenta_run_request_goldens_validate(name):
    assert errors("RunRequest", golden(name)) == []


@pytest.mark.parametrize("name", ["run_result.ok.json", "run_result.error.json"])
def test_agenta_run_result_goldens_validate(name):
    # run_result.ok.json carries a typeless event: accepted on the wire, dropped on parse.
    assert errors("RunResult", golden(name)) == []


def test_agenta_goldens_inside_stream_records_validate():
    result = golden("run_result.ok.json")
    assert errors("RunStreamRecord", {"kind": "result", "result": result}) == []


def test_agenta_baggage_null_is_valid_but_must_be_present():
    document = golden("run_request.pi_core.json")
    assert document["context"]["propagation"]["baggage"] is None
    assert errors("RunRequest", document) == []
    del document["context"]["propagation"]["baggage"]
    assert errors("RunRequest", document) != []
