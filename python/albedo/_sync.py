"""The synchronous facade: the same surface for scripts and notebooks that are not async.

It runs the async binding on an event loop of its own, in a daemon thread,
and waits for each call's answer: no second implementation of anything.
It works from any thread, including one with no event loop, and from a
thread whose loop is running (a notebook cell), since it never uses that loop.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any, AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Optional, TypeVar

from ._client import Mcp
from ._errors import Error
from ._minted import Server
from ._types import Context, Event, Operation, Result

T = TypeVar("T")


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="albedo-sync", daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T]) -> T:
        if self.loop.is_closed() or not self.loop.is_running():
            if asyncio.iscoroutine(coro):
                coro.close()
            raise Error("ALBEDO_CLOSED", "this session was closed (albedo.connect_sync() opens another)", outcome="not_run")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


class SyncServer:
    """A server's methods, called synchronously (``mcp.files.read_file(path=...)``)."""

    def __init__(self, loop: _Loop, server: Server) -> None:
        self.__loop = loop
        self.__server = server

    def __getattr__(self, name: str) -> Callable[..., Result]:
        found = getattr(self.__server, name)
        if name.startswith("_") and not name[1:2].isdigit() or not hasattr(found, "operation"):
            raise AttributeError(name)
        return self.__wrap(found)

    def __getitem__(self, tool: str) -> Callable[..., Result]:
        return self.__wrap(self.__server[tool])

    def __wrap(self, fn: Callable[..., Awaitable[Result]]) -> Callable[..., Result]:
        loop = self.__loop

        def method(**arguments: Any) -> Result:
            return loop.run(fn(**arguments))

        for attr in ("__name__", "__qualname__", "__doc__", "__signature__", "operation"):
            if hasattr(fn, attr):
                setattr(method, attr, getattr(fn, attr))
        return method

    def __dir__(self) -> list[str]:
        return [n for n in dir(self.__server) if not n.startswith("_")]

    def __repr__(self) -> str:
        return repr(self.__server)


class SyncMcp:
    """:class:`albedo.Mcp`, synchronous. Make one with :func:`albedo.connect_sync`; close it (or use ``with``)."""

    def __init__(self, loop: _Loop, mcp: Mcp) -> None:
        self.__loop = loop
        self.__mcp = mcp
        self.session_id = mcp.session_id

    @property
    def unminted(self) -> dict[str, str]:
        return self.__mcp.unminted

    def tools(self) -> list[Operation]:
        return self.__loop.run(self.__mcp.tools())

    def refresh(self) -> list[Operation]:
        return self.__loop.run(self.__mcp.refresh())

    def describe(self, name: str) -> Operation:
        return self.__loop.run(self.__mcp.describe(name))

    def call(self, name: str, /, arguments: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> Result:
        return self.__loop.run(self.__mcp.call(name, arguments, **kwargs))

    def invoke(self, name: str, /, arguments: Optional[Mapping[str, Any]] = None, *, timeout: Optional[float] = None) -> Result:
        return self.__loop.run(self.__mcp.invoke(name, arguments, timeout=timeout))

    def status(self) -> dict[str, Any]:
        return self.__loop.run(self.__mcp.status())

    def activity(self, kind: Any) -> int:
        return self.__loop.run(self.__mcp.activity(kind))

    def context(self) -> Context:
        return self.__loop.run(self.__mcp.context())

    def compacted(self) -> Context:
        return self.__loop.run(self.__mcp.compacted())

    def events(self, *, last_event_id: Optional[str] = None) -> Iterator[Event]:
        """The session's events, as :meth:`albedo.Mcp.events`; each ``next()`` waits for one."""
        stream = self.__mcp.events(last_event_id=last_event_id)
        assert isinstance(stream, AsyncGenerator)
        try:
            while True:
                try:
                    yield self.__loop.run(stream.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            # Left unfinished (a next() and no more): closed on the loop, unless the facade was closed first.
            if self.__loop.loop.is_running():
                self.__loop.run(stream.aclose())

    def __getitem__(self, server: str) -> SyncServer:
        return SyncServer(self.__loop, self.__mcp[server])

    def __getattr__(self, name: str) -> SyncServer:
        if name.startswith("_"):
            raise AttributeError(name)
        found = getattr(self.__mcp, name)
        if not isinstance(found, Server):
            raise AttributeError(name)
        return SyncServer(self.__loop, found)

    def __dir__(self) -> list[str]:
        own = [n for n in type(self).__dict__ if not n.startswith("_")]
        return sorted(set(own) | {n for n, v in vars(self.__mcp).items() if isinstance(v, Server)})

    def close(self) -> None:
        """Closes the session, then the facade's loop. Closing twice is nothing."""
        if self.__loop.loop.is_closed() or not self.__loop.loop.is_running():
            return
        try:
            self.__loop.run(self.__mcp.close())
        finally:
            self.__loop.stop()

    def __enter__(self) -> "SyncMcp":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self.__mcp)


def connect_sync(**options: Any) -> SyncMcp:
    """:func:`albedo.connect`, synchronous: the same options; returns a :class:`SyncMcp`."""
    from ._client import open_session

    loop = _Loop()
    try:
        mcp = loop.run(open_session(**_defaults(options)))
    except BaseException:
        loop.stop()
        raise
    return SyncMcp(loop, mcp)


def _defaults(options: dict[str, Any]) -> dict[str, Any]:
    known = ("home", "servers", "exclude", "profile", "tools", "start", "command")
    unknown = set(options) - set(known)
    if unknown:
        raise TypeError(f"connect() got unexpected options: {sorted(unknown)}")
    out: dict[str, Any] = {k: None for k in known}
    out["start"] = True
    out.update(options)
    return out
