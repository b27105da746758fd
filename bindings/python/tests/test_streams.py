"""The async iterators of gatehouse/__init__.py (`session_updates`, `execution_events`,
over the generated pull streams) against a live `gatehouse serve`: the same scenarios as
Kotlin's StreamsTest."""

from __future__ import annotations

import asyncio
import datetime
import uuid

import pytest

import gatehouse
from gatehouse import GatehouseError

from conftest import API_KEY, TIMEOUT, Server


def record_opened(client) -> dict:
    """Wrap the client's two `open_*` methods (on this instance only) to keep every pull
    object the iterators open: proves laziness, and lets a test look at the watch after the
    iterator is gone."""
    opened: dict = {"session": [], "events": []}
    open_session_watch, open_execution_events = client.open_session_watch, client.open_execution_events

    def session_watch(session_id):
        watch = open_session_watch(session_id)
        opened["session"].append(watch)
        return watch

    def execution_events(room_id, session_id, after=None):
        watch = open_execution_events(room_id, session_id, after)
        opened["events"].append(watch)
        return watch

    client.open_session_watch = session_watch
    client.open_execution_events = execution_events
    return opened


def is_pending_gate(update) -> bool:
    return update.is_EVENT() and update.event.is_INTERACTION() and update.event.status.is_PENDING()


def test_session_updates_sees_connected_then_a_gate_opening(server, client, project_id):
    session_id = str(uuid.uuid4())

    async def scenario():
        seen, answer = [], None
        async for update in client.session_updates(session_id):
            seen.append(update)
            if update.is_CONNECTED() and answer is None:
                # The watch is live: open a gate in its session (a blocking HTTP call).
                answer = await asyncio.to_thread(server.open_gate, project_id, session_id)
            if is_pending_gate(update):
                break
        return seen, answer

    seen, answer = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert seen[0] == gatehouse.WatchUpdate.CONNECTED(), seen
    opened = seen[-1].event
    assert opened.session_id == session_id
    if opened.interaction_id is not None:
        assert opened.interaction_id == answer["interaction_ids"][0]


def test_a_watch_event_carries_the_gate_invoke_tool_opened(client):
    """A gate opened with the binding's own invoke_tool arrives on the stream with its
    record: a status that is never None, a datetime, the tool, the arguments as a dict."""
    session_id = str(uuid.uuid4())

    async def scenario():
        opened = None
        async for update in client.session_updates(session_id):
            if update.is_CONNECTED() and opened is None:
                opened = await client.invoke_tool(
                    "clean up", "Bash", '{"command": "rm -rf /tmp/cache"}', None, session_id
                )
            if is_pending_gate(update) and update.event.interaction is not None:
                return opened, update.event.interaction
        raise AssertionError("the watch ended")

    opened, gate = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert opened.status == gatehouse.TurnStatus.PARKED
    assert gate.id == opened.interaction_ids[0]
    assert gate.status == gatehouse.InteractionStatus.PENDING()
    assert gate.request is not None and gate.request.tool == "Bash"
    assert gate.request.args_dict == {"command": "rm -rf /tmp/cache"}
    assert gate.parameters_dict is not None and "agent" in gate.parameters_dict
    assert gate.resolution_dict is None
    assert isinstance(gate.created_at, datetime.datetime)
    age = datetime.datetime.now(datetime.timezone.utc) - gate.created_at.astimezone(datetime.timezone.utc)
    assert abs(age) < datetime.timedelta(hours=1), gate.created_at


def test_cancelling_the_consuming_task_ends_a_pending_next_promptly_and_the_watch(project_id):
    # Its own server: the connection count below is this test's alone.
    own = Server()
    client = gatehouse.GatehouseClient(
        gatehouse.ClientConfig(base_url=own.url, api_key=API_KEY, project_id=project_id, timeout=TIMEOUT)
    )

    async def scenario():
        connected = asyncio.Event()

        async def consume():
            async for update in client.session_updates(str(uuid.uuid4())):
                if update.is_CONNECTED():
                    connected.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(connected.wait(), 15)
        await asyncio.sleep(0.3)  # a quiet session: the task waits in next()
        assert own.established_connections() >= 2  # both ends of the watch's connection
        loop = asyncio.get_running_loop()
        started = loop.time()
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2)
        took = loop.time() - started
        assert task in done and task.cancelled(), f"cancel took over {took:.2f} s"
        assert took < 2
        # The iterator's finally cancelled (and let go of) the watch: the client closed the
        # connection and the server ended its watch: no connection to the server is left,
        # on either end.
        for _ in range(100):
            if own.established_connections() == 0:
                break
            await asyncio.sleep(0.1)
        assert own.established_connections() == 0, "connections left after the cancel"

    try:
        asyncio.run(scenario())
    finally:
        own.stop()


def test_break_and_aclose_stop_the_watch(client):
    opened = record_opened(client)

    async def scenario():
        # break out of a loop over a temporary iterator: CPython finalizes it at once and
        # asyncio closes it on the next loop turns.
        async for update in client.session_updates(str(uuid.uuid4())):
            assert update.is_CONNECTED()
            break
        for _ in range(10):
            await asyncio.sleep(0)
        assert await asyncio.wait_for(opened["session"][0].next(), 2) is None

        # aclose() of a held iterator, deterministic.
        updates = client.session_updates(str(uuid.uuid4()))
        assert (await asyncio.wait_for(updates.__anext__(), 15)).is_CONNECTED()
        await updates.aclose()
        assert await asyncio.wait_for(opened["session"][1].next(), 2) is None
        with pytest.raises(StopAsyncIteration):
            await updates.__anext__()

    asyncio.run(scenario())


def test_execution_events_in_sequence_order_ending_with_session_reconciled(server, client, project_id):
    answer = server.open_gate(project_id)
    room, session = answer["execution"]["room_id"], answer["execution"]["session_id"]
    gate_id = answer["interaction_ids"][0]

    async def scenario():
        events: list = []
        first_seen = asyncio.Event()

        async def collect():
            async for event in client.execution_events(room, session):
                events.append(event)
                first_seen.set()

        task = asyncio.create_task(collect())
        await asyncio.wait_for(first_seen.wait(), 15)
        assert events[0].event_type == gatehouse.ExecutionEventType.SESSION_OPENED()
        # The run is parked at the gate: the log is not complete, the iterator waits.
        assert not task.done()
        await client.respond_to_interaction(gate_id, True)
        await asyncio.wait_for(task, 30)  # ends by itself
        sequences = [e.sequence for e in events]
        assert sequences == sorted(set(sequences)), sequences
        assert events[-1].event_type == gatehouse.ExecutionEventType.SESSION_RECONCILED(), events
        assert sum(e.event_type.is_SESSION_RECONCILED() for e in events) == 1

        # From after a sequence: the rest of the same log.
        rest = [e async for e in client.execution_events(room, session, after=sequences[0])]
        assert rest == events[1:]

    asyncio.run(scenario())


def test_the_iterators_are_lazy_and_raise_terminal_failures_when_iterated(server, client, project_id):
    opened = record_opened(client)

    async def scenario():
        updates = client.session_updates(str(uuid.uuid4()))
        events = client.execution_events("room-1", f"es-{uuid.uuid4()}")
        await asyncio.sleep(0.2)
        assert opened == {"session": [], "events": []}  # nothing opened yet
        # Iterated later, it works.
        assert (await asyncio.wait_for(updates.__anext__(), 15)).is_CONNECTED()
        assert len(opened["session"]) == 1
        await updates.aclose()
        # An unknown execution session: a terminal failure, raised when iterated.
        with pytest.raises(GatehouseError.NotFound):
            await asyncio.wait_for(events.__anext__(), 15)
        assert len(opened["events"]) == 1

        wrong = gatehouse.GatehouseClient(
            gatehouse.ClientConfig(base_url=server.url, api_key="wrong", project_id=project_id, timeout=TIMEOUT)
        )
        refused = wrong.session_updates(str(uuid.uuid4()))  # nothing raised here
        with pytest.raises(GatehouseError.Unauthorized) as caught:
            await asyncio.wait_for(refused.__anext__(), 15)
        assert caught.value.retryable is False

    asyncio.run(scenario())


def test_records_and_variants_print_readably(server, client, project_id):
    answer = server.open_gate(project_id)
    gate = asyncio.run(client.list_pending_interactions(answer["session_id"]))[0]
    # str() of a record is uniffi's field rendering.
    text = str(gate)
    assert text.startswith("Interaction(") and f"id={gate.id}" in text, text
    # Enum variants are dataclasses with readable str() and repr().
    assert str(gatehouse.LifecycleState.RUNNING()) == "LifecycleState.RUNNING()"
    assert repr(gatehouse.LifecycleState.RUNNING()) == "LifecycleState.RUNNING()"
    assert repr(gatehouse.WatchUpdate.CONNECTED()) == "WatchUpdate.CONNECTED()"
    # repr() of a record reads the same (the package sets it: uniffi's dataclasses have
    # no dataclass fields, so their own repr() would be "Interaction()").
    assert repr(gate) == text
    assert repr(gate.request).startswith("InteractionRequest(tool=")
