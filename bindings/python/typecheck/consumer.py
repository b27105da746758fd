# pyright: strict
"""A typed program over the installed package, never run: `bindings/run-tests.sh` checks it
with `mypy --strict` and `pyright` (strict, the line above) against the fresh virtual
environment the wheel is installed in. Each `assert_type` fails a checker that does not
see the type (an `Any` fails too), so a missing `py.typed`, stub or method is caught, not
silently typed as `Any`. `typing.assert_type` needs the checkers to read it as Python 3.11+
(the environment's version; the package itself supports 3.9).
"""

from __future__ import annotations

import datetime
import typing
from typing import assert_type

import gatehouse
from gatehouse import (
    ApproveGatesReport,
    Checkpoint,
    ClientConfig,
    ExecutionEvent,
    GatehouseClient,
    GatehouseError,
    GatehouseErrorKind,
    GateResult,
    Interaction,
    InteractionStatus,
    SessionEvent,
    SessionEvents,
    WatchEvent,
    WatchUpdate,
)


def make_client(base_url: str) -> GatehouseClient:
    return GatehouseClient(
        ClientConfig(
            base_url=base_url,
            api_key="secret",
            project_id="019fac94-0000-7000-8000-000000000000",
            timeout=datetime.timedelta(seconds=10),
        )
    )


async def answer_all(client: GatehouseClient) -> list[str]:
    answered: list[str] = []
    pending = await client.list_pending_interactions()
    assert_type(pending, typing.List[Interaction])
    for gate in pending:
        try:
            row = await client.respond_to_interaction(gate.id, approved=True)
        except GatehouseError.AlreadyAnswered as error:
            assert_type(error.msg, str)
            continue
        except GatehouseError as error:
            # Any variant: the sentence, the kind and the retry flag, no call needed.
            assert_type(str(error), str)
            assert_type(error.kind, GatehouseErrorKind)
            assert_type(error.retryable, bool)
            raise
        answered.append(row.id)
    return answered


async def follow(client: GatehouseClient, room_id: str, session_id: str) -> int:
    updates = client.session_updates(session_id)
    assert_type(updates, typing.AsyncGenerator[WatchUpdate, None])
    async for update in updates:
        # isinstance narrows (is_EVENT() returns a plain bool: a method cannot narrow self).
        if isinstance(update, WatchUpdate.EVENT) and isinstance(update.event, WatchEvent.INTERACTION):
            assert_type(update.event.status, InteractionStatus)
            break
    await updates.aclose()

    last = 0
    async for event in client.execution_events(room_id, session_id, after=None):
        assert_type(event, ExecutionEvent)
        last = event.sequence
    return last


async def intervene(client: GatehouseClient, room_id: str, session_id: str) -> None:
    session = await client.get_execution_session(room_id, session_id)
    await client.request_intervention(
        room_id, session_id, session.revision, "stop after this step", Checkpoint.PRE_STEP()
    )


async def approve_by_turn(client: GatehouseClient, session_id: str) -> list[str]:
    gates = await client.list_pending_interactions(session_id)
    report = await client.approve_gates(gates, True)
    assert_type(report, ApproveGatesReport)
    settled: list[str] = []
    for line in report.gates:
        result = line.result
        if isinstance(result, GateResult.FAILED) and result.failure.kind == GatehouseErrorKind.ALREADY_ANSWERED:
            settled.append(line.interaction_id)
    return settled


async def durable_events(client: GatehouseClient, session_id: str, after: int) -> int:
    events = client.session_events(session_id, after=after)
    assert_type(events, SessionEvents)
    last = after
    async with events:
        async for event in events:
            assert_type(event, SessionEvent)
            last = event.sequence or last
    await events.aclose()
    return last


assert_type(gatehouse.__all__, typing.List[str])
