"""Regenerate tests/data/agenta_api_rows.vectors.json: how Agenta's API renders an
interaction row, numbers above all. Deterministic (seeded). Needs CPython 3.11 with
fastapi==0.139.2 and pydantic==2.14.4 (the versions Agenta's API pins; httpx for the test
client). Usage:
    python3 -m venv /tmp/venv-rows && /tmp/venv-rows/bin/pip install fastapi==0.139.2 pydantic==2.14.4 httpx
    /tmp/venv-rows/bin/python tests/python/make_agenta_api_row_vectors.py

Agenta's handlers are declared `-> SessionInteractionResponse`, and FastAPI 0.139 writes
such a return with pydantic-core's `dump_json`, not `json.dumps`. The model below is the
row shape of CONTRACT.md A4 (Agenta's `SessionInteraction` field order; the free-form
values typed `Any` as Agenta types them; ids and times as plain strings, which pydantic
writes as it writes any string). Each row is served by a real FastAPI app through its
test client, exactly as a handler with that return annotation answers.

- "numbers": a JSON number literal, and how FastAPI spelled `json.loads(literal)` in the
  body it answered for a row holding that number at `tags.x` (`fastapi`: the text between
  `"tags":{"x":` and the next `}` of that body).
- "rows": `input`, a row response as Python's `json.dumps` writes it (what Gatehouse is
  given and stores: floats spelled by `repr`), and `fastapi`, the body FastAPI answered for
  `json.loads(input)` (what Agenta's API would send back).

NaN and Infinity are left out: serde_json cannot read them yet (issue 24, item 2).

tests/agenta_oracle/run.py imports this module (its model, `rand_row` and `fastapi_body`) to
render 2,000 fresh rows on every `cargo xtask test` run.
"""

import json
import random
from pathlib import Path
from typing import Any, Dict, List, Optional

from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict

OUT = Path(__file__).resolve().parents[1] / "data" / "agenta_api_rows.vectors.json"


class InteractionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    tool: Optional[str] = None
    args: Optional[Any] = None
    tool_call_id: Optional[str] = None


class InteractionData(BaseModel):
    request: Optional[InteractionRequest] = None
    references: Optional[Dict[str, Any]] = None
    selector: Optional[Dict[str, Any]] = None
    resolution: Optional[Dict[str, Any]] = None
    parameters: Optional[Dict[str, Any]] = None


class InteractionFlags(BaseModel):
    delivered_in_band: bool = False
    delivered_webhook: bool = False


class Interaction(BaseModel):
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    deleted_at: Optional[str] = None
    created_by_id: Optional[str] = None
    updated_by_id: Optional[str] = None
    deleted_by_id: Optional[str] = None
    id: Optional[str] = None
    project_id: Optional[str] = None
    session_id: str
    turn_id: Optional[str] = None
    token: str
    kind: str
    status: Optional[str] = None
    data: Optional[InteractionData] = None
    flags: InteractionFlags = InteractionFlags()
    tags: Optional[Dict[str, Any]] = None
    meta: Optional[Dict[str, Any]] = None


class InteractionResponse(BaseModel):
    count: int = 0
    interaction: Optional[Interaction] = None


app = FastAPI()
CURRENT: List[Any] = [None]


@app.get("/row")
async def row() -> InteractionResponse:
    return InteractionResponse.model_validate(CURRENT[0])


CLIENT = TestClient(app)


def fastapi_body(document):
    CURRENT[0] = document
    response = CLIENT.get("/row")
    assert response.status_code == 200, response.text
    return response.text


HAND_LITERALS = [
    "0", "-0", "1", "-1", "1.0", "-0.0", "0.0", "1.50", "100.0", "1E+2", "9007199254740993",
    "18446744073709551616", "-9223372036854775809", "123456789012345678901234567890",
    "1e16", "1E+16", "1e15", "1e-4", "0.0001", "1e-05", "1E-5", "0.00001", "1.5e-5",
    "1e-06", "0.000001", "1e-7", "1e-07", "2e-6", "1.5e-7", "1e21", "1e22", "1.5e300",
    "1e400", "-1e400", "1e-400", "5e-324", "1.7976931348623157e308", "0.1",
    "0.30000000000000004", "1234567890123456.7", "12345678901234567.0", "3.14e5", "-2.5e-7",
]

STRING_ALPHABET = list("abcXYZ_09 ") + ["é", "😀", "\u2028", "\x7f", '"', "\\", "\n", "\t", "\x01", "/"]


def rand_float_literal(rng):
    kind = rng.randrange(4)
    if kind == 0:
        return repr(rng.uniform(-1, 1) * 10 ** rng.randrange(-12, 24))
    if kind == 1:
        mantissa = rng.randrange(1, 10 ** rng.randrange(1, 17))
        return f"{mantissa}{rng.choice(['e', 'E'])}{rng.choice(['', '+', '-'])}{rng.randrange(0, 30)}"
    if kind == 2:
        # Around the switch points of both spellings: 1e-6..1e-4 and 1e15..1e17.
        return repr(rng.uniform(1, 10) * 10 ** rng.choice([-7, -6, -5, -4, 14, 15, 16, 17]))
    return f"{rng.randrange(-1000, 1000)}.{rng.randrange(0, 1000):03d}"


FINITE_HAND_LITERALS = [lit for lit in HAND_LITERALS if lit not in ("1e400", "-1e400")]


def rand_literal(rng):
    """A literal whose float is finite: json.dumps writes an infinity as `Infinity`, which
    serde_json cannot read yet (issue 24, item 2)."""
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(FINITE_HAND_LITERALS)
    if kind == 1:
        return str(rng.randrange(-10**25, 10**25))
    return rand_float_literal(rng)


def rand_string(rng, longest):
    return "".join(rng.choice(STRING_ALPHABET) for _ in range(rng.randrange(0, longest)))


def rand_value(rng, depth=0):
    """A value as TEXT, so its number literals keep their exact spelling."""
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice(["null", "true", "false"])
    if kind in (1, 2, 3):
        return rand_literal(rng)
    if kind == 4:
        return json.dumps(rand_string(rng, 6))
    if kind == 5:
        return "[" + ", ".join(rand_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))) + "]"
    return rand_object(rng, depth + 1)


def rand_object(rng, depth=0):
    keys = list(dict.fromkeys(rand_string(rng, 5) for _ in range(rng.randrange(1, 5))))
    return "{" + ", ".join(json.dumps(k) + ": " + rand_value(rng, depth) for k in keys) + "}"


def maybe(rng, text):
    return text if rng.random() < 0.7 else "null"


def rand_row(rng, index):
    """A row response as TEXT in Agenta's key order: the number literals as generated."""
    request = (
        '{"tool": "Bash", "args": ' + rand_value(rng, 1) + ', "tool_call_id": "call-%d"' % index
        + (', "extra": ' + rand_value(rng, 1) if rng.random() < 0.3 else "")
        + "}"
    )
    data = (
        '{"request": ' + request
        + ', "references": {"workflow": {"version": null, "slug": "wf", "id": null}}'
        + ', "selector": null'
        + ', "resolution": ' + maybe(rng, rand_object(rng))
        + ', "parameters": ' + maybe(rng, rand_object(rng))
        + "}"
    )
    interaction = (
        '{"created_at": "2026-07-29T06:34:12.345678Z", "updated_at": null, "deleted_at": null, '
        '"created_by_id": "00000000-0000-0000-0000-000000000007", "updated_by_id": null, '
        '"deleted_by_id": null, "id": "00000000-0000-0000-0000-%012x", ' % index
        + '"project_id": "019fac94-0000-7000-8000-000000000000", "session_id": "s-1", '
        '"turn_id": "t-1", "token": "tok-%d", "kind": "user_approval", "status": "pending", ' % index
        + '"data": ' + data
        + ', "flags": {"delivered_in_band": false, "delivered_webhook": false}'
        + ', "tags": ' + maybe(rng, rand_object(rng))
        + ', "meta": ' + maybe(rng, rand_object(rng))
        + "}"
    )
    return '{"count": 1, "interaction": ' + interaction + "}"


def main():
    rng = random.Random(2024)
    literals = HAND_LITERALS + [rand_literal(rng) for _ in range(300)]
    base = json.loads(rand_row(random.Random(0), 0))
    numbers = []
    for literal in literals:
        document = json.loads(json.dumps(base))
        document["interaction"]["tags"] = {"x": json.loads(literal)}
        body = fastapi_body(document)
        spelled = body.split('"tags":{"x":', 1)[1].split("}", 1)[0]
        numbers.append({"literal": literal, "fastapi": spelled})
    rows = []
    for index in range(150):
        text = rand_row(rng, index)
        # What Gatehouse is given: the row as Python's json.dumps writes it.
        given = json.dumps(json.loads(text))
        rows.append({"input": given, "fastapi": fastapi_body(json.loads(given))})
    document = {
        "_provenance": "generated by tests/python/make_agenta_api_row_vectors.py (seed 2024): "
        "FastAPI 0.139.2 + pydantic 2.14.4 answering a handler declared `-> InteractionResponse` "
        "(CONTRACT.md A4's row shape, free-form values typed Any as Agenta types them); "
        "numbers: a literal and how FastAPI spelled json.loads(literal) at a row's tags.x; "
        "rows: json.dumps of a row (input) and FastAPI's body for json.loads(input)",
        "numbers": numbers,
        "rows": rows,
    }
    OUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(numbers)} numbers and {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
