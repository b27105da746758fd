"""schema/openapi.json, checked from outside Rust: a valid OpenAPI 3.1 document
(openapi-spec-validator), whose component schemas ARE the committed JSON Schema files
(one source), with every error answer in its route's envelope.

Run: python3 -m pytest tests/python
"""

import json
import re
from pathlib import Path

import jsonschema
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schema"
INDEX = json.loads((SCHEMA_DIR / "index.json").read_text())
DOCUMENT = json.loads((SCHEMA_DIR / "openapi.json").read_text())


def test_the_document_is_valid_openapi_3_1():
    spec, _ = read_from_filename(str(SCHEMA_DIR / "openapi.json"))
    validate(spec)
    assert spec["openapi"] == "3.1.0"


def hoisted(schema):
    """A schema file as the document holds it: no $schema/$id/$defs, refs into components."""
    body = {k: v for k, v in schema.items() if k not in ("$schema", "$id", "$defs")}
    text = json.dumps(body)
    return json.loads(text.replace('"#/$defs/', '"#/components/schemas/'))


def test_every_registered_schema_is_a_component_unchanged():
    components = DOCUMENT["components"]["schemas"]
    for name, entry in INDEX.items():
        schema = json.loads((SCHEMA_DIR / entry["file"]).read_text())
        assert components[name] == hoisted(schema), name
        for def_name, definition in schema.get("$defs", {}).items():
            assert def_name in components, f"{name}: {def_name} is not a component"


def test_the_documents_respond_bodies_refuse_a_misspelled_answer_key():
    """What a client generated from the document validates: `{aproved: true}` is not an
    answer (the answer is typed and closed), `{approved, tool_call_id, message}` is."""
    gate = "018f3b2a-0000-7000-8000-00000000a001"
    for name, body in [
        ("RespondRequest", lambda answer: {"answer": answer}),
        ("SessionInteractionRespondRequest", lambda answer: {"answer": answer}),
        ("SessionInteractionRespondRequest", lambda answer: {"answers": [{"interaction_id": gate, "answer": answer}]}),
        ("BatchRespondRequest", lambda answer: {"answers": [{"id": gate, "answer": answer}]}),
    ]:
        schema = dict(DOCUMENT, **{"$ref": f"#/components/schemas/{name}"})
        validator = jsonschema.Draft202012Validator(schema)
        assert list(validator.iter_errors(body({"approved": True, "tool_call_id": "c", "message": "go"}))) == [], name
        assert list(validator.iter_errors(body({"aproved": True}))) != [], name


def test_every_reference_resolves():
    text = json.dumps(DOCUMENT)
    components = DOCUMENT["components"]["schemas"]
    for target in re.findall(r'"#/components/schemas/([^"]+)"', text):
        assert target in components, target


def test_every_operation_is_secured_or_public_and_documents_its_errors():
    schemes = DOCUMENT["components"]["securitySchemes"]
    assert {"apiKey", "bearer"} <= set(schemes)
    public = set()
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            envelope = (
                "AgentPlatErrorEnvelope" if "/rooms/" in path else "FastApiErrorBody"
            )
            if operation.get("security") == []:
                public.add(f"{method.upper()} {path}")
            else:
                assert "401" in responses, f"{method} {path}"
            assert "500" in responses, f"{method} {path}"
            for status, response in responses.items():
                if status[0] in "45":
                    schema = response["content"]["application/json"]["schema"]
                    # Agenta's durable session control also answers its own 409/422 bodies
                    # (its envelope, the Stop's detail forms): the family's comes first.
                    ref = schema["anyOf"][0]["$ref"] if "anyOf" in schema else schema["$ref"]
                    assert ref == f"#/components/schemas/{envelope}", f"{method} {path} {status}"
    assert public == {
        "GET /api/capabilities",
        "GET /api/openapi.json",
        "GET /health",
        "GET /health/ready",
        "GET /metrics",
    }


def test_agenta_agentplat_and_gatehouse_routes_are_all_described():
    paths = set(DOCUMENT["paths"])
    assert "/api/sessions/interactions/{id}/respond" in paths  # Agenta
    assert "/api/rooms/{room_id}/execution-sessions/{session_id}/interventions" in paths  # AgentPlat
    assert "/api/invoke" in paths and "/api/capabilities" in paths  # Gatehouse
    assert "/run" in paths  # the runner tier
