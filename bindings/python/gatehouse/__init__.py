"""Gatehouse for Python: list, answer and watch an agent's approval gates.

A thin package around the uniffi-generated module ``gatehouse_ffi`` (written by
``cargo xtask bindings``; do not edit it). The native library ``libgatehouse_ffi``
must sit next to this file (``bindings/run-tests.sh`` copies it there).

    import asyncio
    from gatehouse import ClientConfig, GatehouseClient, GatehouseError

    async def main():
        client = GatehouseClient(ClientConfig(base_url="http://127.0.0.1:8787",
                                              api_key="secret", project_id=PROJECT))
        for gate in await client.list_pending_interactions(None):
            try:
                await client.respond_to_interaction(gate.id, True, None, None)
            except GatehouseError.AlreadyAnswered:
                pass  # another device answered first

    asyncio.run(main())
"""

from .gatehouse_ffi import *  # noqa: F401,F403  (the generated API is the package's API)
from .gatehouse_ffi import __all__ as _generated_all

__all__ = list(_generated_all)
