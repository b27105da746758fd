"""Answers bound to the gate that was shown (docs/CONTRACT.md C8), through the Python
bindings: the shared vectors (tests/data/gate_digest.vectors.json) computed through the
binding's `gate_digest`, and, against a live durable `gatehouse serve`, a respond from the
displayed record carrying its digest: a record that is not the gate as it is (another
revision, other arguments) is refused `StaleGate` with nothing recorded, the genuine
record is answered."""

from __future__ import annotations

import asyncio
import copy
import json
import pathlib

import pytest

import gatehouse
from gatehouse import GatehouseError

VECTORS = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data" / "gate_digest.vectors.json"


def test_every_shared_vector_is_computed_alike():
    vectors = json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]
    assert len(vectors) >= 10
    for vector in vectors:
        digest = gatehouse.gate_digest(
            vector["id"], vector["revision"], vector["tool"], vector["tool_call_id"], vector["args_json"]
        )
        assert digest == vector["digest"], vector["name"]


def test_a_respond_from_the_displayed_record_is_bound_to_it(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]
    gates = asyncio.run(durable_client.list_pending_interactions(session_id))
    assert len(gates) == 1, gates
    gate = gates[0]
    assert gate.revision == 1 and gate.digest and gate.digest.startswith("sha256:")
    request = gate.request
    assert request is not None
    # The record the app shows computes to the digest the host shows.
    assert gatehouse.gate_digest(gate.id, gate.revision, request.tool, request.tool_call_id, request.args) == gate.digest

    async def scenario():
        # A record that is not the gate as it is now: refused, nothing recorded.
        stale = copy.copy(gate)
        stale.revision = gate.revision + 1
        with pytest.raises(GatehouseError.StaleGate):
            await durable_client.respond_to_gate(stale, True)
        edited_request = copy.copy(request)
        edited_request.args = '{"command":"rm -rf /"}'
        edited = copy.copy(gate)
        edited.request = edited_request
        with pytest.raises(GatehouseError.StaleGate):
            await durable_client.respond_to_gate(edited, True)
        still = await durable_client.get_interaction(gate.id)
        assert still.status.is_PENDING()
        assert still.resolution is None
        # The record as displayed: answered.
        outcome = await durable_client.respond_to_gate(gate, True)
        assert outcome.is_CONTINUED(), outcome

    asyncio.run(scenario())
