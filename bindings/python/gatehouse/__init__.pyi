"""Types of the package ``gatehouse`` for type checkers (mypy, pyright).

The package re-exports the generated module ``gatehouse._ffi.gatehouse_ffi`` (annotated
by uniffi; ``py.typed`` marks it) and adds three async iterators to ``GatehouseClient`` at
import time (``__init__.py``), one of them the class ``SessionEvents``. A type checker cannot see methods added at run time, so
this stub declares ``GatehouseClient`` as the generated class plus those methods (the
``dict`` properties ``__init__.py`` adds to ``Interaction`` and ``InteractionRequest`` are
declared in the generated stub, see ``make_stub.py``).
The names are listed one by one (a star import would clash with that declaration);
``tests/test_packaging.py`` checks that they are exactly ``gatehouse.__all__``.
"""

import typing

from ._ffi.gatehouse_ffi import GatehouseClient as _GeneratedGatehouseClient
from ._ffi.gatehouse_ffi import InternalError as InternalError
from ._ffi.gatehouse_ffi import GatehouseErrorKind as GatehouseErrorKind
from ._ffi.gatehouse_ffi import InteractionKind as InteractionKind
from ._ffi.gatehouse_ffi import InteractionStatus as InteractionStatus
from ._ffi.gatehouse_ffi import Capability as Capability
from ._ffi.gatehouse_ffi import Checkpoint as Checkpoint
from ._ffi.gatehouse_ffi import Upstream as Upstream
from ._ffi.gatehouse_ffi import AgentaContract as AgentaContract
from ._ffi.gatehouse_ffi import ExecutionEventType as ExecutionEventType
from ._ffi.gatehouse_ffi import ExecutionSessionStatus as ExecutionSessionStatus
from ._ffi.gatehouse_ffi import InterventionStatus as InterventionStatus
from ._ffi.gatehouse_ffi import InterventionState as InterventionState
from ._ffi.gatehouse_ffi import GatehouseError as GatehouseError
from ._ffi.gatehouse_ffi import InterventionOutcome as InterventionOutcome
from ._ffi.gatehouse_ffi import LifecycleState as LifecycleState
from ._ffi.gatehouse_ffi import ListenerError as ListenerError
from ._ffi.gatehouse_ffi import RespondOutcome as RespondOutcome
from ._ffi.gatehouse_ffi import GateResult as GateResult
from ._ffi.gatehouse_ffi import SessionEventUpdate as SessionEventUpdate
from ._ffi.gatehouse_ffi import StopOutcome as StopOutcome
from ._ffi.gatehouse_ffi import WatchEvent as WatchEvent
from ._ffi.gatehouse_ffi import WatchUpdate as WatchUpdate
from ._ffi.gatehouse_ffi import ApproveAllFailure as ApproveAllFailure
from ._ffi.gatehouse_ffi import InteractionRequest as InteractionRequest
from ._ffi.gatehouse_ffi import Interaction as Interaction
from ._ffi.gatehouse_ffi import TurnStatus as TurnStatus
from ._ffi.gatehouse_ffi import ToolPermission as ToolPermission
from ._ffi.gatehouse_ffi import InvokeOutcome as InvokeOutcome
from ._ffi.gatehouse_ffi import ApproveAllReport as ApproveAllReport
from ._ffi.gatehouse_ffi import GateFailure as GateFailure
from ._ffi.gatehouse_ffi import GateReport as GateReport
from ._ffi.gatehouse_ffi import ApproveGatesReport as ApproveGatesReport
from ._ffi.gatehouse_ffi import Capabilities as Capabilities
from ._ffi.gatehouse_ffi import CheckpointProgress as CheckpointProgress
from ._ffi.gatehouse_ffi import ClientConfig as ClientConfig
from ._ffi.gatehouse_ffi import ExecutionEvent as ExecutionEvent
from ._ffi.gatehouse_ffi import SessionOutcome as SessionOutcome
from ._ffi.gatehouse_ffi import Intervention as Intervention
from ._ffi.gatehouse_ffi import ExecutionSession as ExecutionSession
from ._ffi.gatehouse_ffi import RequestedIntervention as RequestedIntervention
from ._ffi.gatehouse_ffi import SessionEvent as SessionEvent
from ._ffi.gatehouse_ffi import SessionSnapshot as SessionSnapshot
from ._ffi.gatehouse_ffi import StopRequested as StopRequested
from ._ffi.gatehouse_ffi import StreamFailure as StreamFailure
from ._ffi.gatehouse_ffi import ExecutionEventWatch as ExecutionEventWatch
from ._ffi.gatehouse_ffi import ExecutionEventWatchProtocol as ExecutionEventWatchProtocol
from ._ffi.gatehouse_ffi import SessionEventWatch as SessionEventWatch
from ._ffi.gatehouse_ffi import SessionEventWatchProtocol as SessionEventWatchProtocol
from ._ffi.gatehouse_ffi import SessionWatch as SessionWatch
from ._ffi.gatehouse_ffi import SessionWatchProtocol as SessionWatchProtocol
from ._ffi.gatehouse_ffi import WatchListenerImpl as WatchListenerImpl
from ._ffi.gatehouse_ffi import WatchListener as WatchListener
from ._ffi.gatehouse_ffi import WatchHandle as WatchHandle
from ._ffi.gatehouse_ffi import WatchHandleProtocol as WatchHandleProtocol
from ._ffi.gatehouse_ffi import GatehouseClientProtocol as GatehouseClientProtocol
from ._ffi.gatehouse_ffi import InboxHostState as InboxHostState
from ._ffi.gatehouse_ffi import InboxGate as InboxGate
from ._ffi.gatehouse_ffi import InboxHostReport as InboxHostReport
from ._ffi.gatehouse_ffi import InboxPage as InboxPage
from ._ffi.gatehouse_ffi import GatehouseInbox as GatehouseInbox
from ._ffi.gatehouse_ffi import GatehouseInboxProtocol as GatehouseInboxProtocol
from ._ffi.gatehouse_ffi import gate_digest as gate_digest

__all__: typing.List[str]

class GatehouseClient(_GeneratedGatehouseClient):
    def session_updates(self, session_id: str) -> typing.AsyncGenerator[WatchUpdate, None]:
        """A session's gates as an async iterator of ``WatchUpdate`` (see ``__init__.py``)."""
        ...
    def execution_events(
        self, room_id: str, session_id: str, after: typing.Optional[int] = None
    ) -> typing.AsyncGenerator[ExecutionEvent, None]:
        """An execution session's events, in order, until it is reconciled."""
        ...
    def session_events(self, session_id: str, after: int = 0) -> "SessionEvents":
        """A session's durable events after sequence ``after`` (see ``SessionEvents``)."""
        ...

class SessionEvents:
    """A session's durable events as an async iterator (see ``__init__.py``)."""
    def __init__(self, client: GatehouseClient, session_id: str, after: int = 0) -> None: ...
    def __aiter__(self) -> "SessionEvents": ...
    async def __anext__(self) -> SessionEvent: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> "SessionEvents": ...
    async def __aexit__(self, *exc_info: object) -> None: ...
