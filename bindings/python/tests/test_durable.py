"""Agenta's durable session control through the Python bindings, against a live
`gatehouse serve --agenta-contract durable` (the `durable_server` fixture; a `legacy` one
the `server` fixture, where a test says so): the respond's outcomes, its conflicts as catchable errors,
approve-all grouped by turn, Stop (requested, then stopped), the session snapshot and the
durable events (replayed from a sequence, ended by cancelling the consumer)."""

from __future__ import annotations

import asyncio
import datetime
import uuid

import pytest

import gatehouse
from gatehouse import AgentaContract, GatehouseError, GatehouseErrorKind

from conftest import API_KEY, TIMEOUT, Server


def the_gate(client: gatehouse.GatehouseClient, session_id: str) -> gatehouse.Interaction:
    gates = asyncio.run(client.list_pending_interactions(session_id))
    assert len(gates) == 1, gates
    assert gates[0].turn_id, "a gate of the harness names its turn"
    return gates[0]


def test_the_client_learns_the_contract_from_the_capabilities(durable_client, client):
    assert durable_client.agenta_contract() is None  # nothing read yet
    asyncio.run(durable_client.capabilities())
    assert durable_client.agenta_contract() == AgentaContract.DURABLE
    asyncio.run(client.capabilities())  # the `server` fixture: --agenta-contract legacy
    assert client.agenta_contract() == AgentaContract.LEGACY


def test_respond_outcomes_continued_then_already_recorded_then_not_continuable(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]
    gate = the_gate(durable_client, session_id)

    async def scenario():
        continued = await durable_client.respond_with_outcome(
            gate.id, True, expected_execution_id=gate.turn_id, session_id=session_id
        )
        assert continued.is_CONTINUED(), continued
        assert continued.interaction.id == gate.id
        assert continued.command_id
        assert continued.command_state == "pending"
        # The continuation is a new execution, not the turn the gate parked.
        assert continued.execution_id and continued.execution_id != gate.turn_id
        assert continued.execution_state == "pending_delivery"

        # Another device sends the same verdict: recorded already, nothing new created.
        again = await durable_client.respond_with_outcome(gate.id, True, session_id=session_id)
        assert again.is_ALREADY_RECORDED(), again
        assert again.interaction.id == gate.id
        assert again.execution_id == gate.turn_id  # the source turn, settled
        assert again.execution_state == "terminal"

        # A different verdict can no longer apply: the turn was continued.
        with pytest.raises(GatehouseError.TurnNotContinuable) as caught:
            await durable_client.respond_with_outcome(gate.id, False, session_id=session_id)
        assert caught.value.kind == GatehouseErrorKind.TURN_NOT_CONTINUABLE
        assert caught.value.retryable is False

    asyncio.run(scenario())


def test_another_verdict_after_the_batch_continued_the_turn_is_turn_not_continuable(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]
    gate = the_gate(durable_client, session_id)
    # Gatehouse's own batch answers it; on a durable host it admits the answer durably: the
    # turn is settled by its continuation.
    report = asyncio.run(durable_client.approve_all([gate.id], False))
    assert [row.id for row in report.answered] == [gate.id]

    # Another verdict now: the turn can no longer be continued (not "another device
    # answered": that is told by the row, and the turn's settlement is what refuses it).
    with pytest.raises(GatehouseError.TurnNotContinuable) as caught:
        asyncio.run(durable_client.respond_with_outcome(gate.id, True, session_id=session_id))
    assert caught.value.kind == GatehouseErrorKind.TURN_NOT_CONTINUABLE
    assert "terminal" in f"{caught.value.msg} {caught.value.details}"


def test_a_stale_expected_execution_is_caught_with_the_current_one(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]
    gate = the_gate(durable_client, session_id)
    stale = str(uuid.uuid4())

    with pytest.raises(GatehouseError.StaleExecution) as caught:
        asyncio.run(
            durable_client.respond_with_outcome(gate.id, True, expected_execution_id=stale, session_id=session_id)
        )
    error = caught.value
    assert error.kind == GatehouseErrorKind.STALE_EXECUTION
    assert gate.turn_id in f"{error.msg} {error.details}", error  # the current one, to refresh to
    # Nothing was written: the gate still waits, and the current turn takes the answer.
    assert [g.id for g in asyncio.run(durable_client.list_pending_interactions(session_id))] == [gate.id]
    continued = asyncio.run(
        durable_client.respond_with_outcome(gate.id, True, expected_execution_id=gate.turn_id, session_id=session_id)
    )
    assert continued.is_CONTINUED()


def test_an_idempotency_key_replays_its_answer_and_refuses_another(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]
    gate = the_gate(durable_client, session_id)
    key = f"py-{uuid.uuid4()}"

    async def scenario():
        first = await durable_client.respond_with_outcome(gate.id, True, idempotency_key=key, session_id=session_id)
        replay = await durable_client.respond_with_outcome(gate.id, True, idempotency_key=key, session_id=session_id)
        assert first.is_CONTINUED() and replay.is_CONTINUED()
        assert replay.command_id == first.command_id
        assert replay.execution_id == first.execution_id
        with pytest.raises(GatehouseError.IdempotencyKeyReused) as caught:
            await durable_client.respond_with_outcome(gate.id, False, idempotency_key=key, session_id=session_id)
        assert caught.value.retryable is False

    asyncio.run(scenario())


def test_approve_gates_answers_each_turn_once_and_reports_every_gate(durable_server, durable_client, project_id):
    fresh = [the_gate(durable_client, durable_server.open_gate(project_id)["session_id"]) for _ in range(2)]
    settled_session = durable_server.open_gate(project_id)["session_id"]
    settled = the_gate(durable_client, settled_session)
    denied_session = durable_server.open_gate(project_id)["session_id"]
    denied = the_gate(durable_client, denied_session)

    async def scenario():
        # Settled before: one with the same verdict (approve), one with another (deny).
        assert (await durable_client.respond_with_outcome(settled.id, True, session_id=settled_session)).is_CONTINUED()
        assert (await durable_client.respond_with_outcome(denied.id, False, session_id=denied_session)).is_CONTINUED()
        # The gate listed twice is answered once.
        return await durable_client.approve_gates([*fresh, settled, denied, fresh[0]], True)

    report = asyncio.run(scenario())
    by_id = {line.interaction_id: line for line in report.gates}
    assert sorted(by_id) == sorted([fresh[0].id, fresh[1].id, settled.id, denied.id])
    assert len(report.gates) == 4
    for gate in fresh:
        line = by_id[gate.id]
        assert line.turn_id == gate.turn_id
        assert line.result.is_ANSWERED(), line
        outcome = line.result.outcome
        assert outcome.is_CONTINUED(), outcome
        assert outcome.execution_id != gate.turn_id
    # Each turn got its own continuation.
    assert by_id[fresh[0].id].result.outcome.command_id != by_id[fresh[1].id].result.outcome.command_id
    assert by_id[settled.id].result.outcome.is_ALREADY_RECORDED()
    failed = by_id[denied.id].result
    assert failed.is_FAILED(), failed
    assert failed.failure.kind == GatehouseErrorKind.TURN_NOT_CONTINUABLE
    assert failed.failure.retryable is False and failed.failure.msg
    assert report.all_already_answered is False
    assert asyncio.run(durable_client.list_pending_interactions(None)) == []


def test_approve_gates_on_a_legacy_host_answers_each_gate(server, client, project_id):
    gates = [the_gate(client, server.open_gate(project_id)["session_id"]) for _ in range(2)]
    report = asyncio.run(client.approve_gates(gates, True))
    assert [line.interaction_id for line in report.gates] == [g.id for g in gates]
    for line in report.gates:
        assert line.result.is_ANSWERED(), line
        assert line.result.outcome.is_ANSWERED()
        assert line.result.outcome.interaction.id == line.interaction_id
    again = asyncio.run(client.approve_gates(gates, True))
    assert all(line.result.is_FAILED() and line.result.failure.kind == GatehouseErrorKind.ALREADY_ANSWERED for line in again.gates)
    assert again.all_already_answered is True


# --- Stop, the snapshot and the durable events (the server's session routes) ---

# A turn that gates first, then works 20 s once answered: Stop catches it in flight.
SLOW_AFTER_GATE = [
    {"tool": "Bash", "args": {"command": "echo hi"}},
    {"wait_ms": 20000},
    {"say": "done"},
]


async def wait_until_running(client: gatehouse.GatehouseClient, session_id: str) -> gatehouse.SessionSnapshot:
    """The session's snapshot once its turn runs (polled, at most 20 s)."""
    for _ in range(400):
        snapshot = await client.session_snapshot(session_id)
        if snapshot.execution_state == "running":
            return snapshot
        await asyncio.sleep(0.05)
    raise AssertionError(f"the turn never ran: {snapshot}")


def test_the_snapshot_lists_the_pending_gates(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]
    gate = the_gate(durable_client, session_id)
    snapshot = asyncio.run(durable_client.session_snapshot(session_id))
    assert [g.id for g in snapshot.pending_interactions] == [gate.id]
    assert snapshot.pending_interactions[0] == gate
    assert snapshot.durable_approvals is True
    assert snapshot.execution_state == "idle"  # a turn parked on a gate is not running

    asyncio.run(durable_client.respond_with_outcome(gate.id, True, session_id=session_id))
    assert asyncio.run(durable_client.session_snapshot(session_id)).pending_interactions == []


def test_stop_is_requested_then_wait_for_stop_reports_stopped(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id, script=SLOW_AFTER_GATE)["session_id"]
    gate = the_gate(durable_client, session_id)

    async def scenario():
        continued = await durable_client.respond_with_outcome(gate.id, True, session_id=session_id)
        assert continued.is_CONTINUED()
        running = await wait_until_running(durable_client, session_id)
        assert running.execution_id == continued.execution_id

        stop = await durable_client.stop_session(session_id, expected_execution_id=running.execution_id)
        # Requested is not applied: the command is recorded, the turn is stopping.
        assert stop.is_stopping is True
        assert stop.command_id
        assert stop.command_state == "pending"
        assert stop.execution_id == running.execution_id
        assert stop.execution_state == "stopping"

        outcome = await durable_client.wait_for_stop(session_id, stop, datetime.timedelta(seconds=30))
        assert outcome == gatehouse.StopOutcome.STOPPED(execution_id=running.execution_id), outcome
        after = await durable_client.session_snapshot(session_id)
        assert after.execution_state == "idle"
        return stop

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_stop_with_a_stale_expected_execution_is_caught(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id, script=SLOW_AFTER_GATE)["session_id"]
    gate = the_gate(durable_client, session_id)

    async def scenario():
        await durable_client.respond_with_outcome(gate.id, True, session_id=session_id)
        running = await wait_until_running(durable_client, session_id)
        with pytest.raises(GatehouseError.StaleExecution):
            await durable_client.stop_session(session_id, expected_execution_id=gate.turn_id)
        # The turn still runs; stop it for real so the server is left quiet.
        stop = await durable_client.stop_session(session_id, expected_execution_id=running.execution_id)
        outcome = await durable_client.wait_for_stop(session_id, stop, datetime.timedelta(seconds=30))
        assert outcome.is_STOPPED(), outcome

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_stop_when_nothing_runs_is_not_running(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]

    async def scenario():
        stop = await durable_client.stop_session(session_id)
        assert stop.is_stopping is False
        outcome = await durable_client.wait_for_stop(session_id, stop, datetime.timedelta(seconds=10))
        assert outcome == gatehouse.StopOutcome.NOT_RUNNING(), outcome

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_the_events_replay_from_after_and_end_when_cancelled(durable_server, durable_client, project_id):
    session_id = durable_server.open_gate(project_id)["session_id"]
    gate = the_gate(durable_client, session_id)
    continued = asyncio.run(durable_client.respond_with_outcome(gate.id, True, session_id=session_id))
    assert continued.is_CONTINUED()

    def is_the_end(event) -> bool:
        """The continuation's last event: its turn completed (nothing comes after it)."""
        return event.execution_id == continued.execution_id and event.event_type == "message.completed"

    async def collect(after: int, until) -> list:
        seen = []
        async with durable_client.session_events(session_id, after=after) as events:
            async for event in events:
                seen.append(event)
                if until(event):
                    break
        return seen

    async def scenario():
        # From the start: the parked turn's events, then the continuation's, in order.
        everything = await collect(0, is_the_end)
        sequences = [event.sequence for event in everything]
        assert len(everything) >= 2, everything
        assert sequences == sorted(set(sequences)), sequences
        assert everything[0].execution_id == gate.turn_id
        assert all(event.created_at and event.event_type for event in everything)
        # A time is a time: an aware datetime, not text.
        assert all(isinstance(event.created_at, datetime.datetime) and event.created_at.tzinfo for event in everything)
        latest = sequences[-1]
        assert (await durable_client.session_snapshot(session_id)).latest_sequence == latest

        # From a sequence: exactly the events after it, the same ones.
        assert await collect(sequences[0], lambda event: event.sequence == latest) == everything[1:]

        # Cancelling the consumer while it waits for an event that does not come (the turn
        # is over) ends it at once, and the stream is over for good.
        stream = durable_client.session_events(session_id, after=latest)
        waiting = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.5)
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiting, 5)
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_cancelling_or_leaving_the_events_closes_their_connection(project_id):
    # Its own server, and a client that only streams: the connections counted are the
    # stream's alone (the gate is opened over plain HTTP, whose connection is closed).
    own = Server(agenta_contract="durable")
    session_id = own.open_gate(project_id)["session_id"]
    client = gatehouse.GatehouseClient(
        gatehouse.ClientConfig(base_url=own.url, api_key=API_KEY, project_id=project_id, timeout=TIMEOUT)
    )

    async def no_connection_left() -> None:
        for _ in range(100):
            if own.established_connections() == 0:
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{own.established_connections()} connection ends left")

    async def scenario():
        # Cancelling the task that awaits the next event (the replay is over: it waits).
        seen = []

        async def consume():
            async for event in client.session_events(session_id):
                seen.append(event)

        task = asyncio.create_task(consume())
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        assert seen and seen[0].execution_id, seen  # the parked turn's events, replayed
        assert own.established_connections() >= 2  # both ends of the stream's connection
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2)
        assert task in done and task.cancelled()
        await no_connection_left()

        # Leaving an `async with` block after the first event.
        async with client.session_events(session_id) as events:
            async for event in events:
                assert event == seen[0]
                break
        await no_connection_left()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        own.stop()
