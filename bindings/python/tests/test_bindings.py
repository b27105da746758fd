"""The Python bindings against a live `gatehouse serve`: the same scenarios as Kotlin."""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import uuid

import pytest

import gatehouse
from gatehouse import GatehouseError, GatehouseErrorKind, InteractionStatus

from conftest import API_KEY, TIMEOUT


def test_list_pending_shows_the_gate_with_its_request_and_stamped_config(server, client, project_id):
    answer = server.open_gate(project_id, prompt="list files")
    gates = asyncio.run(client.list_pending_interactions(answer["session_id"]))
    assert [g.id for g in gates] == answer["interaction_ids"]
    gate = gates[0]
    assert gate.session_id == answer["session_id"]
    assert gate.kind == gatehouse.InteractionKind.USER_APPROVAL()
    assert gate.status == InteractionStatus.PENDING()
    assert gate.request is not None and gate.request.tool == "Bash"
    assert json.loads(gate.request.args) == {"command": "echo hi"}
    # The config the gated turn runs under crosses as JSON text.
    assert json.loads(gate.parameters)["agent"]["llm"]["model"] == "py-model-1"
    # The whole project lists it too; get_interaction reads the same row.
    assert answer["interaction_ids"][0] in [g.id for g in asyncio.run(client.list_pending_interactions(None))]
    assert asyncio.run(client.get_interaction(gate.id)) == gate


def test_respond_then_a_second_respond_is_already_answered(server, client, project_id):
    gate_id = server.open_gate(project_id)["interaction_ids"][0]

    answered = asyncio.run(client.respond_to_interaction(gate_id, True, "go ahead", None))
    assert answered.id == gate_id
    assert not answered.status.is_PENDING()
    assert json.loads(answered.resolution)["answer"]["approved"] is True

    with pytest.raises(GatehouseError.AlreadyAnswered) as caught:
        asyncio.run(client.respond_to_interaction(gate_id, approved=False))  # defaults: no message
    error = caught.value
    assert error.retryable is False
    assert error.kind == GatehouseErrorKind.ALREADY_ANSWERED
    assert "respond_interaction" in error.msg
    assert error.details  # the server's text
    assert str(error) == error.msg
    assert asyncio.run(client.list_pending_interactions()) == []


def test_an_error_reads_as_its_sentence_and_its_kind_and_retry_flag_are_attributes(client):
    with pytest.raises(GatehouseError.NotFound) as caught:
        asyncio.run(client.get_interaction(str(uuid.uuid4())))
    error = caught.value
    assert "not found" in error.msg
    assert error.details
    # What an app logs or shows a person: the sentence, never `msg=..., details=...`.
    assert str(error) == error.msg
    assert f"{error}" == error.msg
    assert "msg=" not in str(error) and "details=" not in str(error)
    # A developer's repr keeps every field.
    assert repr(error).startswith("GatehouseError.NotFound(msg=")
    assert error.kind == GatehouseErrorKind.NOT_FOUND
    assert error.retryable is False

    busy = GatehouseError.Server("list_interactions: server error, HTTP 503: busy", "busy", 503)
    assert str(busy) == "list_interactions: server error, HTTP 503: busy"
    assert busy.kind == GatehouseErrorKind.SERVER
    assert busy.retryable is True
    assert GatehouseError.Server("teapot", None, 418).retryable is False
    assert GatehouseError.Timeout("slow", "1500 ms").retryable is True


def test_approve_all_reports_every_target(server, client, project_id):
    fresh = server.open_gate(project_id)["interaction_ids"][0]
    settled = server.open_gate(project_id)["interaction_ids"][0]
    asyncio.run(client.respond_to_interaction(settled, False, "no", None))
    unknown = str(uuid.uuid4())

    report = asyncio.run(client.approve_all([fresh, settled, unknown], True))
    assert [row.id for row in report.answered] == [fresh]
    assert report.already_answered == [settled]
    assert [f.interaction_id for f in report.failed] == [unknown]
    failure = report.failed[0]
    assert failure.kind == GatehouseErrorKind.NOT_FOUND
    assert failure.retryable is False
    assert failure.msg
    assert report.all_already_answered is False

    # Everything settled elsewhere: the screen can go idle at once.
    again = asyncio.run(client.approve_all([fresh, settled], True))
    assert again.answered == [] and again.failed == []
    assert sorted(again.already_answered) == sorted([fresh, settled])
    assert again.all_already_answered is True


class RecordingListener(gatehouse.WatchListener):
    """Collects callbacks; `gate_opened` is set when a pending interaction event arrives."""

    def __init__(self):
        self.connected = threading.Event()
        self.gate_opened = threading.Event()
        self.gate_answered = threading.Event()
        self.events: list = []
        self.closed: list = []

    def on_connected(self):
        self.connected.set()

    def on_event(self, event):
        self.events.append(event)
        if event.is_INTERACTION() and event.status.is_PENDING():
            self.gate_opened.set()
        elif event.is_INTERACTION():
            self.gate_answered.set()

    def on_reconnecting(self, attempt, error):
        pass

    def on_closed(self, error):
        self.closed.append(error)


def test_a_watch_listener_sees_a_gate_open_and_cancel_stops_it(server, client, project_id):
    session_id = str(uuid.uuid4())
    listener = RecordingListener()
    handle = client.watch_session(session_id, listener)
    try:
        assert listener.connected.wait(15), "the watch never connected"
        answer = server.open_gate(project_id, session_id=session_id)
        assert listener.gate_opened.wait(15), f"no pending interaction event; saw {listener.events}"
        opened = [e for e in listener.events if e.is_INTERACTION() and e.status.is_PENDING()]
        assert opened[0].session_id == session_id
        if opened[0].interaction_id is not None:
            assert opened[0].interaction_id == answer["interaction_ids"][0]
    finally:
        handle.cancel()
    assert handle.is_finished() is True
    handle.cancel()  # twice is harmless
    seen = len(listener.events)
    # After cancel, no callback runs. A second, live watch on the same session proves the
    # answer's events were sent: it sees the gate leave `pending`, the cancelled one does not.
    witness = RecordingListener()
    witness_handle = client.watch_session(session_id, witness)
    try:
        assert witness.connected.wait(15)
        asyncio.run(client.respond_to_interaction(answer["interaction_ids"][0], True, None, None))
        assert witness.gate_answered.wait(15), f"the live watch saw no answer event: {witness.events}"
    finally:
        witness_handle.cancel()
    assert len(listener.events) == seen
    assert listener.closed == []


def test_an_intervention_goes_from_requested_to_applied(server, client, project_id):
    answer = server.open_gate(project_id)
    room, session = answer["execution"]["room_id"], answer["execution"]["session_id"]
    gate_id = answer["interaction_ids"][0]

    async def scenario():
        seen = await client.get_execution_session(room, session)
        assert seen.revision == answer["execution"]["revision"]
        assert seen.status == gatehouse.ExecutionSessionStatus.PAUSED()  # parked at the gate
        requested = await client.request_intervention(
            room, session, seen.revision, "stop", gatehouse.Checkpoint.PRE_ACTION(), None
        )
        assert requested.state.is_REQUESTED()
        assert requested.operation_id
        # Requested is not applied: the run is parked, so a short wait times out.
        early = await client.wait_for_intervention(room, session, requested.operation_id, datetime.timedelta(milliseconds=50))
        assert early.is_TIMED_OUT()
        # A stale revision is a typed conflict.
        with pytest.raises(GatehouseError.RevisionConflict):
            await client.request_intervention(
                room, session, seen.revision, "be brief", gatehouse.Checkpoint.PRE_STEP(), None
            )
        # The person approves the gate; the run resumes and reaches pre_action.
        await client.respond_to_interaction(gate_id, True, None, None)
        outcome = await client.wait_for_intervention(room, session, requested.operation_id, datetime.timedelta(seconds=10))
        assert outcome.is_APPLIED(), outcome
        assert outcome.evidence.event_type == gatehouse.ExecutionEventType.INTERVENTION_APPLIED()
        assert outcome.evidence.operation_id == requested.operation_id
        assert outcome.evidence.checkpoint == gatehouse.Checkpoint.PRE_ACTION()
        # The stop halts the run right after its evidence is written; the session is
        # reconciled a moment later.
        terminal = (gatehouse.ExecutionSessionStatus.CANCELED(), gatehouse.ExecutionSessionStatus.COMPLETED(),
                    gatehouse.ExecutionSessionStatus.FAILED())
        done = await client.get_execution_session(room, session)
        for _ in range(500):
            if done.status in terminal:
                break
            await asyncio.sleep(0.02)
            done = await client.get_execution_session(room, session)
        assert done.status == gatehouse.ExecutionSessionStatus.CANCELED()  # the stop halted it

    asyncio.run(scenario())


def test_an_agentplat_upstream_client_uses_the_root_paths_and_the_tenant(server, project_id):
    """ClientConfig(upstream=AGENTPLAT, tenant=..., participant_id=...): the server's
    AgentPlat root paths, the tenant header as the project; typed AgentPlat refusals."""
    answer = server.open_gate(project_id)
    room, session = answer["execution"]["room_id"], answer["execution"]["session_id"]
    agentplat = gatehouse.GatehouseClient(
        gatehouse.ClientConfig(
            base_url=server.url,
            api_key=API_KEY,
            upstream=gatehouse.Upstream.AGENTPLAT,
            tenant=project_id,
            participant_id="human-1",
            timeout=TIMEOUT,
        )
    )
    no_tenant = gatehouse.GatehouseClient(
        gatehouse.ClientConfig(base_url=server.url, api_key=API_KEY, upstream=gatehouse.Upstream.AGENTPLAT)
    )

    async def scenario():
        seen = await agentplat.get_execution_session(room, session)
        assert seen.session_id == session and seen.tenant_id == project_id
        assert seen.agent_revision_id is not None  # this host has a registry of revisions
        requested = await agentplat.request_intervention(
            room, session, seen.revision, "be brief", gatehouse.Checkpoint.PRE_STEP()
        )
        assert requested.state.is_REQUESTED()
        # A checkpoint this library does not know is sent as given; the host refuses it.
        with pytest.raises(GatehouseError.Validation) as refused:
            await agentplat.request_intervention(
                room, session, requested.session.revision, "x", gatehouse.Checkpoint.UNKNOWN("mid_air")
            )
        assert refused.value.kind == GatehouseErrorKind.VALIDATION
        assert "checkpoint is invalid" in refused.value.details
        with pytest.raises(GatehouseError.TenantRejected) as missing:
            await no_tenant.get_execution_session(room, session)
        assert missing.value.retryable is False
        # Interactions are not served by an AgentPlat host: refused without a request.
        with pytest.raises(GatehouseError.CapabilityUnavailable):
            await agentplat.list_pending_interactions(None)

    asyncio.run(scenario())


def test_capabilities_and_capability_unavailable_without_execution(server_without_execution, project_id):
    client = gatehouse.GatehouseClient(
        gatehouse.ClientConfig(
            base_url=server_without_execution.url, api_key=API_KEY, project_id=project_id, timeout=TIMEOUT
        )
    )
    caps = asyncio.run(client.capabilities())
    assert caps.service == "gatehouse"
    assert gatehouse.Capability.INTERACTIONS() in caps.capabilities
    assert gatehouse.Capability.EXECUTION() not in caps.capabilities

    for _ in range(2):  # learned once, then refused without a request: same typed error
        with pytest.raises(GatehouseError.CapabilityUnavailable) as caught:
            asyncio.run(client.get_execution_session("room-1", "es-1"))
        assert caught.value.retryable is False
        assert caught.value.details == "execution"


def test_bad_configuration_and_unreachable_hosts_are_typed_errors():
    with pytest.raises(GatehouseError.Config) as caught:
        gatehouse.GatehouseClient(gatehouse.ClientConfig(base_url="not a url"))
    assert caught.value.retryable is False
    with pytest.raises(GatehouseError.Config):
        gatehouse.GatehouseClient(gatehouse.ClientConfig(base_url="http://127.0.0.1:9", tenant="  "))

    with pytest.raises(GatehouseError.Invalid):
        gatehouse.GatehouseClient(gatehouse.ClientConfig(base_url="http://127.0.0.1:9", timeout=datetime.timedelta(0)))

    # Port 9 (discard) on loopback: nothing listens, the connection is refused.
    offline = gatehouse.GatehouseClient(
        gatehouse.ClientConfig(base_url="http://127.0.0.1:9", project_id=str(uuid.uuid4()), timeout=datetime.timedelta(seconds=2))
    )
    with pytest.raises(GatehouseError) as caught:
        asyncio.run(offline.get_interaction(str(uuid.uuid4())))
    assert caught.value.kind in (GatehouseErrorKind.TRANSPORT, GatehouseErrorKind.TIMEOUT)
    assert caught.value.retryable is True


def test_a_wrong_api_key_is_unauthorized(server, project_id):
    client = gatehouse.GatehouseClient(
        gatehouse.ClientConfig(base_url=server.url, api_key="wrong", project_id=project_id)
    )
    with pytest.raises(GatehouseError.Unauthorized) as caught:
        asyncio.run(client.list_pending_interactions(None))
    assert caught.value.retryable is False


class ThrowingListener(RecordingListener):
    """Raises from on_connected: the exception must not reach Rust as a crash, and the
    watch must go on."""

    def on_connected(self):
        self.connected.set()
        raise RuntimeError("the app's listener is buggy")


def test_a_listener_that_raises_does_not_stop_the_watch(server, client, project_id):
    session_id = str(uuid.uuid4())
    listener = ThrowingListener()
    handle = client.watch_session(session_id, listener)
    try:
        assert listener.connected.wait(15), "the watch never connected"
        server.open_gate(project_id, session_id=session_id)
        assert listener.gate_opened.wait(15), f"no gate event after the raise; saw {listener.events}"
        assert handle.is_finished() is False
    finally:
        handle.cancel()
