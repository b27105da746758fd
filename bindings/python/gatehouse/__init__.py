"""Gatehouse for Python: list, answer and watch an agent's approval gates.

A thin package around the uniffi-generated module ``gatehouse._ffi.gatehouse_ffi`` and
the native library ``libgatehouse_ffi`` beside it, both put into ``gatehouse/_ffi/`` by
the build (maturin, ``bindings/python/pyproject.toml``; the committed copy of the module
is written by ``cargo xtask bindings``: do not edit it). Type checkers read
``__init__.pyi`` beside this file.

    import asyncio
    import datetime
    from gatehouse import ClientConfig, GatehouseClient, GatehouseError

    async def main():
        client = GatehouseClient(ClientConfig(base_url="http://127.0.0.1:8787",
                                              api_key="secret", project_id=PROJECT,
                                              timeout=datetime.timedelta(seconds=10)))
        for gate in await client.list_pending_interactions(None):
            try:
                await client.respond_to_interaction(gate.id, True, None, None)
            except GatehouseError.AlreadyAnswered:
                pass  # another device answered first

    asyncio.run(main())

This file (hand-written, not generated) adds three async iterators to ``GatehouseClient``,
over the generated pull streams (``SessionWatch``, ``ExecutionEventWatch``,
``SessionEventWatch``):

    async for update in client.session_updates(session_id):
        if update.is_CONNECTED():
            ...  # (re)connected: re-query the session's gates
        elif isinstance(update, WatchUpdate.EVENT) and isinstance(update.event, WatchEvent.INTERACTION):
            ...  # isinstance narrows for mypy and pyright; is_EVENT() does not

    async for event in client.execution_events(room_id, session_id):
        print(event.sequence, event.event_type)   # ends after SESSION_RECONCILED

    async with client.session_events(session_id, after=last_seen) as events:
        async for event in events:                # a session's durable events, in order
            last_seen = event.sequence
"""

from __future__ import annotations

import dataclasses
import json
import typing

from ._ffi import gatehouse_ffi as _generated
from ._ffi.gatehouse_ffi import *  # noqa: F401,F403  (the generated API is the package's API)
from ._ffi.gatehouse_ffi import __all__ as _generated_all
from ._ffi.gatehouse_ffi import (
    ExecutionEvent,
    GatehouseClient,
    GatehouseError,
    GatehouseErrorKind,
    Interaction,
    InteractionRequest,
    SessionEvent,
    SessionEventWatch,
    WatchUpdate,
)

__all__ = list(_generated_all) + ["SessionEvents"]

# uniffi's error variants hand `Exception` the text `msg=..., details=...`, so str(e), what
# an app logs or shows a person, was that dump. str(e) is the error's sentence (`msg`, made
# once by the Rust core); repr(e) keeps every field for a developer. The kind and the retry
# flag are plain properties, named as on `GateFailure` (`__init__.pyi` does not declare
# them: the generated stub does, see `bindings/python/make_stub.py`).
def _error_str(self: typing.Any) -> str:
    return str(self.msg)


def _error_repr(self: typing.Any) -> str:
    return f"GatehouseError.{type(self).__name__}({self.args[0] if self.args else ''})"


def _error_kind(self: typing.Any) -> GatehouseErrorKind:
    """Which kind of error this is, without its text (as ``GateFailure.kind``)."""
    return typing.cast(GatehouseErrorKind, self.error_kind())


def _error_retryable(self: typing.Any) -> bool:
    """True when the same call may succeed if tried again later: transport failures,
    timeouts, 429 and 5xx (as ``GateFailure.retryable``)."""
    return bool(self.is_retryable())


GatehouseError.__str__ = _error_str  # type: ignore[method-assign]
GatehouseError.kind = property(_error_kind)  # type: ignore[attr-defined]
GatehouseError.retryable = property(_error_retryable)  # type: ignore[attr-defined]
for _variant in GatehouseError.__subclasses__():
    _variant.__repr__ = _error_repr  # type: ignore[method-assign]

# uniffi declares each record a dataclass with no dataclass fields, so repr() says
# `Interaction()`; its own __str__ names every field: repr() uses that too.
for _name in _generated_all:
    _record = getattr(_generated, _name, None)
    if isinstance(_record, type) and dataclasses.is_dataclass(_record) and "__str__" in vars(_record):
        _record.__repr__ = _record.__str__


# JSON fields cross the FFI as text (uniffi has no JSON type); each gets a property that
# parses it, so an app reads `gate.parameters_dict["agent"]` instead of calling json.loads.
def _json_field(field: str, doc: str) -> property:
    def parsed(self: typing.Any) -> typing.Optional[typing.Dict[str, typing.Any]]:
        text = getattr(self, field)
        return None if text is None else typing.cast(typing.Dict[str, typing.Any], json.loads(text))

    return property(parsed, doc=doc)


Interaction.parameters_dict = _json_field("parameters", "The stamped config as a dict (None when absent).")  # type: ignore[attr-defined]
Interaction.resolution_dict = _json_field("resolution", "The recorded answer and verdict as a dict (None when absent).")  # type: ignore[attr-defined]
Interaction.references_dict = _json_field("references", "The turn's workflow references as a dict (None when absent).")  # type: ignore[attr-defined]
InteractionRequest.args_dict = _json_field("args", "The tool call's arguments as a dict (None when absent).")  # type: ignore[attr-defined]


async def _session_updates(self: GatehouseClient, session_id: str) -> typing.AsyncGenerator[WatchUpdate, None]:
    """A session's gates as an async iterator of ``WatchUpdate``:
    ``async for update in client.session_updates(session_id):``.

    Yields ``WatchUpdate.CONNECTED()`` on each (re)connect (re-query the session's gates
    then: events are notifications, not a log), ``WatchUpdate.EVENT(event=...)`` for each
    server event, and ``WatchUpdate.RECONNECTING(attempt=..., failure=...)`` while the
    stream retries by itself. It does not end by itself while the session can be watched.

    Lazy: nothing happens until the first iteration, which opens the watch
    (``open_session_watch``) and connects; each iterator is its own watch.
    Nothing is read ahead: an update is read from the connection only while the loop
    awaits the next one, so a slow consumer leaves the server's bytes in the socket and
    this library's memory stays bounded.

    Stopping: leaving the loop (``break``), cancelling the task that iterates, or
    ``await iterator.aclose()`` cancels the watch and closes its connection; a pending
    ``next()`` returns at once. After ``break`` the generator is closed when it is
    garbage-collected (at once in CPython, for an iterator no one else holds); use
    ``contextlib.aclosing`` (Python 3.10+) to close it deterministically.

    A failure a retry cannot fix (a wrong key, a bad session id, a host without the watch
    capability) is raised as a ``GatehouseError``.
    """
    watch = self.open_session_watch(session_id)
    try:
        while True:
            update = await watch.next()
            if update is None:
                return
            yield update
    finally:
        watch.cancel()
        # Free the pull object now, even when a traceback keeps this frame alive: freeing
        # it is what closes the connection if a cancelled next() still held the stream.
        del watch


async def _execution_events(
    self: GatehouseClient, room_id: str, session_id: str, after: typing.Optional[int] = None
) -> typing.AsyncGenerator[ExecutionEvent, None]:
    """An execution session's events as an async iterator of ``ExecutionEvent``:
    ``async for event in client.execution_events(room_id, session_id):``.

    Each event once, in increasing ``sequence`` order, from the first event or after
    sequence ``after``; while the run goes on it waits for new events (reconnecting by
    itself, resuming after the last event seen), and it ends by itself after the
    ``ExecutionEventType.SESSION_RECONCILED()`` event (the log is complete).

    Lazy: the first iteration opens the stream (``open_execution_events``). Nothing is
    read ahead (memory bounded, as for ``session_updates``). ``break``, cancelling the
    iterating task or ``aclose()`` cancels the stream and closes its connection.

    A failure a retry cannot fix (a wrong key, an unknown session, a host without
    execution, a negative ``after``) is raised as a ``GatehouseError``.
    """
    events = self.open_execution_events(room_id, session_id, after)
    try:
        while True:
            event = await events.next()
            if event is None:
                return
            yield event
    finally:
        events.cancel()
        del events  # as in session_updates


_session_updates.__name__ = "session_updates"
_session_updates.__qualname__ = "GatehouseClient.session_updates"
_execution_events.__name__ = "execution_events"
_execution_events.__qualname__ = "GatehouseClient.execution_events"
GatehouseClient.session_updates = _session_updates  # type: ignore[attr-defined]
GatehouseClient.execution_events = _execution_events  # type: ignore[attr-defined]


class SessionEvents:
    """A session's durable events (Agenta's durable session control) as an async
    iterator of ``SessionEvent``: ``async for event in client.session_events(session_id):``.

    Every event after sequence ``after`` (0: from the first), each sequence once, in
    order: the replay of the session's log, then each new event as it is recorded; a
    dropped connection is resumed after the last sequence seen. It ends when the host
    closes the stream for good (e.g. the authorization was revoked); otherwise it runs
    until it is stopped.

    Only durable events are yielded: the connection's state, the end of the replay and
    the live frames are on the pull object itself (``client.open_session_events``).

    Lazy: the first ``__anext__`` opens the stream (``open_session_events``) and connects;
    each instance is its own stream. Nothing is read ahead.

    Stopping: ``await events.aclose()``, leaving an ``async with`` block, or cancelling the
    task that awaits the next event cancels the stream and closes its connection at once
    (a pending ``__anext__`` is ended). A ``break`` out of a bare ``async for`` leaves it
    open until the object is garbage-collected (at once in CPython when no one else holds
    it): use ``async with`` to close it deterministically.

    A failure a retry cannot fix (a wrong key, a host without the route, a negative
    ``after``) is raised as a ``GatehouseError``; the stream is over then.
    """

    def __init__(self, client: GatehouseClient, session_id: str, after: int = 0) -> None:
        self._client = client
        self._session_id = session_id
        self._after = after
        self._watch: typing.Optional[SessionEventWatch] = None
        self._closed = False

    def __aiter__(self) -> "SessionEvents":
        return self

    async def __anext__(self) -> SessionEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if self._watch is None:
                self._watch = self._client.open_session_events(self._session_id, self._after)
            while True:
                update = await self._watch.next()
                if update is None or update.is_CLOSED():
                    break
                if update.is_EVENT():
                    return update.event
        except BaseException:
            # A GatehouseError ends the stream; so does cancelling the awaiting task
            # (asyncio.CancelledError), which must close the connection at once.
            self._close()
            raise
        self._close()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Cancel the stream and close its connection; later iterations end at once."""
        self._close()

    async def __aenter__(self) -> "SessionEvents":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._close()

    def _close(self) -> None:
        self._closed = True
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            # Free the pull object now (as in session_updates): freeing it is what closes
            # the connection if a cancelled next() still held the stream.
            del watch

    def __del__(self) -> None:
        watch = getattr(self, "_watch", None)
        if watch is not None:
            watch.cancel()


def _session_events(self: GatehouseClient, session_id: str, after: int = 0) -> SessionEvents:
    """A session's durable events as an async iterator (see ``SessionEvents``)."""
    return SessionEvents(self, session_id, after)


_session_events.__name__ = "session_events"
_session_events.__qualname__ = "GatehouseClient.session_events"
GatehouseClient.session_events = _session_events  # type: ignore[attr-defined]
