"""One inbox across hosts (`GatehouseInbox`): two live servers and one that is down,
read page by page; the down host is reported with its typed failure, the others are read
to their end, and the cursor survives as text."""

from __future__ import annotations

import asyncio
import socket

import pytest

import gatehouse
from gatehouse import GatehouseError, GatehouseErrorKind, InboxHostState

from conftest import API_KEY, TIMEOUT


def client_at(url: str, project_id: str) -> gatehouse.GatehouseClient:
    return gatehouse.GatehouseClient(
        gatehouse.ClientConfig(base_url=url, api_key=API_KEY, project_id=project_id, timeout=TIMEOUT)
    )


def dead_url() -> str:
    """A URL nothing listens on: a port bound, then let go."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def open_gates(client: gatehouse.GatehouseClient, count: int) -> set[str]:
    ids: set[str] = set()
    for n in range(count):
        opened = await client.invoke_tool(f"step {n}", "Bash", '{"command": "ls"}', None, None)
        ids.update(opened.interaction_ids)
    return ids


def test_two_servers_and_one_down_read_as_one_inbox(server, durable_server, project_id):
    team = client_at(server.url, project_id)
    home = client_at(durable_server.url, project_id)
    inbox = gatehouse.GatehouseInbox()
    inbox.add_host("team", team)
    inbox.add_host("home", home)
    inbox.add_host("down", client_at(dead_url(), project_id))
    assert inbox.host_names() == ["team", "home", "down"]
    with pytest.raises(GatehouseError.Config):
        inbox.add_host("team", team)
    assert inbox.host_names() == ["team", "home", "down"]

    async def scenario():
        team_ids = await open_gates(team, 3)
        home_ids = await open_gates(home, 2)
        seen: dict[str, set[str]] = {"team": set(), "home": set()}
        cursor = None
        for _ in range(5):
            page = await inbox.pending(cursor, 2)
            down = page.hosts[2]
            assert down.host == "down"
            assert isinstance(down.state, InboxHostState.FAILED), down
            assert down.state.kind == GatehouseErrorKind.TRANSPORT
            assert down.state.retryable
            for gate in page.gates:
                assert gate.gate.id not in seen[gate.host], "a gate came twice"
                seen[gate.host].add(gate.gate.id)
            times = [gate.gate.created_at for gate in page.gates]
            assert times == sorted(times, reverse=True)
            assert page.next_cursor is not None, "a failed host keeps the inbox open"
            cursor = page.next_cursor
            if all(isinstance(report.state, InboxHostState.DONE) for report in page.hosts[:2]):
                return team_ids, home_ids, seen
        raise AssertionError("the live hosts were never read to their end")

    team_ids, home_ids, seen = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert seen == {"team": team_ids, "home": home_ids}


def test_a_cursor_that_is_not_the_inbox_s_is_a_config_error(server, project_id):
    inbox = gatehouse.GatehouseInbox()
    inbox.add_host("team", client_at(server.url, project_id))
    with pytest.raises(GatehouseError.Config):
        asyncio.run(inbox.pending("not a cursor", 10))
    with pytest.raises(GatehouseError.Config):
        asyncio.run(inbox.pending(None, 0))
