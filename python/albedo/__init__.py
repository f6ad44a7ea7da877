"""Albedo from Python: the user's MCP servers, through the Albedo daemon.

    import asyncio, albedo

    async def main() -> None:
        async with albedo.connect() as mcp:
            for op in await mcp.tools():
                print(op.name, op.server, op.tool)
            r = await mcp.call("everything/echo", message="hello")
            print(r.text)

    asyncio.run(main())

Standard library only. See docs/python.md.
"""

from __future__ import annotations

import os
from typing import Any, Generator, Optional, Sequence, Union

from ._client import Mcp, ToolsMode, open_session
from ._errors import Error, Outcome
from ._minted import Server
from ._sync import SyncMcp, SyncServer, connect_sync
from ._types import Context, Event, Operation, Result

__all__ = [
    "connect",
    "connect_sync",
    "Mcp",
    "SyncMcp",
    "Server",
    "SyncServer",
    "Error",
    "Outcome",
    "Operation",
    "Result",
    "Event",
    "Context",
    "ToolsMode",
]
__version__ = "0.1.0"


class _Connecting:
    """What :func:`connect` returns: await it for an :class:`Mcp`, or use it as ``async with``."""

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        self._mcp: Optional[Mcp] = None

    def __await__(self) -> Generator[Any, None, Mcp]:
        return open_session(**self._options).__await__()

    async def __aenter__(self) -> Mcp:
        self._mcp = await open_session(**self._options)
        return self._mcp

    async def __aexit__(self, *exc: Any) -> None:
        if self._mcp is not None:
            await self._mcp.close()


def connect(
    *,
    home: Union[str, "os.PathLike[str]", None] = None,
    servers: Optional[Sequence[str]] = None,
    exclude: Optional[Sequence[str]] = None,
    profile: Optional[str] = None,
    tools: Optional[ToolsMode] = None,
    start: bool = True,
    command: Union[str, Sequence[str], None] = None,
) -> _Connecting:
    """Opens a session of the daemon of ``home`` (default ``$ALBEDO_HOME``, else ``~/.albedo``).

    The daemon is found as the ``albedo`` command finds it (and proved to hold its token before the token is sent),
    and started when none runs (``start=False``: raise instead) by running ``albedo daemon start``: ``command``,
    else ``$ALBEDO_COMMAND``, else ``albedo`` on ``PATH``. ``servers`` / ``exclude``: which configured servers
    (default every enabled one); ``profile``: the provider whose schema rules the tools follow (``portable``);
    ``tools``: ``all``, ``deferred`` or ``auto``. Editor (ACP overlay) servers never appear here. The session is
    closed by ``close()`` or on leaving ``async with``.
    """
    return _Connecting(
        {
            "home": home,
            "servers": servers,
            "exclude": exclude,
            "profile": profile,
            "tools": tools,
            "start": start,
            "command": command,
        }
    )
