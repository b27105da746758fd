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

RECORDED = "Agenta recorded corpus (tests/python)"


def recorded_lines(name):
    """The documents of a recorded NDJSON file (skipped / failed as upstream_fixtures says)."""
    path = upstream_fixtures.require("agenta", RECORDED) / "recorded" / name
    if not path.is_file():
        upstream_fixtures.require("agenta", RECORDED + ": " + name)
        pytest.fail(f"{path} is missing from the recorded corpus")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def own(folder, file):
    return json.loads((DATA / folder / file).read_text())


def golden(name):
    return upstream_fixtures.read_json("agenta", GOLDENS, name)


# The CONTRACT.md A4 row as Agenta's API renders it (tests/data/samples): lifecycle keys
# first, UUID ids, references {version, slug, id} with nulls.
A4_ROW = own("samples", "SessionInteraction.contract.json")


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


# A respond's answer is typed and closed (what a client writes), in every body that
# carries one: a misspelled key is refused, never sent as an answer the server (reading as
# Agenta's router does) would take as a denial.
RESPOND_BODIES = [
    ("RespondRequest", lambda answer: {"answer": answer}),
    ("SessionInteractionRespondRequest", lambda answer: {"answer": answer}),
    ("SessionInteractionRespondRequest",
     lambda answer: {"answers": [{"interaction_id": A4_ROW["id"], "answer": answer}]}),
    ("BatchRespondRequest", lambda answer: {"answers": [{"id": A4_ROW["id"], "answer": answer}]}),
]


@pytest.mark.parametrize("name,body", RESPOND_BODIES)
def test_a_respond_answer_is_typed_and_refuses_a_misspelled_key(name, body):
    assert errors(name, body({"approved": True, "tool_call_id": "toolu_01", "message": "go"})) == []
    assert errors(name, body({"approved": False})) == []
    assert errors(name, body({"aproved": True})) != []
    assert errors(name, body({"approved": True, "aproved": True})) != []
    assert errors(name, body({"approved": "yes"})) != []


def test_the_ready_event_may_carry_nothing():
    assert errors("WatchEvent", {}) == []
    assert errors("WatchEvent", {"type": "ready", "session_id": "s"}) == []
    assert errors("WatchEvent", {"type": "lifecycle", "session_id": "s", "state": "paused"}) != []


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
        (["harness"], "gpt"),
        (["permissions", "default"], 12),
        (["permissions", "default"], "maybe"),
        (["permissions", "rules"], []),
        (["permissions", "rules"], None),
        (["customTools", 0, "call", "method"], "PATCH"),
        (["modelConnection", "credentials", 0, "binding", "kind"], "file"),
        (["runContext", "trace", "span_id"], 7),
        (["runContext", "trace"], {}),
        (["messages"], "hi"),
        (["systemPrompt"], None),
        (["skills"], None),
        (["skills"], []),
        (["effectiveParameters"], None),
        (["harnessMode"], "maybe"),
        (["harness"], "pi_core"),  # harnessMode is codex's only
    ],
)
def test_what_the_contract_forbids_is_rejected(path, value):
    document = own("samples", SESSION_RUN)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert errors("RunRequest", document) != []


@pytest.mark.parametrize("session_id", [None, ""])
def test_effective_parameters_only_on_a_session_run(session_id):
    document = own("samples", SESSION_RUN)
    document["sessionId"] = session_id
    assert errors("RunRequest", document) != []
    del document["effectiveParameters"]
    assert errors("RunRequest", document) == []


def test_mock_omits_the_tool_keys_and_others_must_not():
    document = own("samples", SESSION_RUN)
    del document["harnessMode"]  # codex's only
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
