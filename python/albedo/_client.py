"""``Mcp``: one daemon session, with the surface docs/python.md describes."""

from __future__ import annotations

import asyncio
import os
from typing import Any, AsyncIterator, Literal, Optional, Sequence, Union
from urllib.parse import quote

from ._errors import Error, from_answer
from ._home import DaemonInfo, find_daemon, running_daemon
from ._http import Http, Unreachable
from ._minted import Server, close_matches, server_namespaces
from ._sse import SseParser
from ._types import Context, Event, Operation, Result

ToolsMode = Literal["all", "deferred", "auto"]
#: How long an event stream tries to reconnect (a daemon restarting) before it gives up.
RECONNECT_S = 90.0
_REFRESHING = ("capabilities_changed", "catalogue_refreshed")


class Mcp:
    """A session of the daemon: its live operations, calls, events and context. Make one with :func:`albedo.connect`.

    Each server is also an attribute (``mcp.files``), with a method per tool (``await mcp.files.read_file(path=...)``),
    minted from the tool list and minted again when the session's tools change; see :mod:`albedo._names` for the names.
    """

    session_id: str
    unminted: dict[str, str]

    def __init__(self, home: str, info: DaemonInfo, session_id: str, *, start: bool, command: Any) -> None:
        self.__home = home
        self.__http = Http(info.port, info.token)
        self.__info = info
        self.__start = start
        self.__command = command
        self.__finding: Optional[asyncio.Future[None]] = None
        self.__ops: list[Operation] = []
        self.__servers: dict[str, Server] = {}
        self.__minted: list[str] = []
        self.__watch: Optional[asyncio.Task[None]] = None
        self.__closed = False
        self.session_id = session_id
        self.unminted = {}
        self.__own = sorted(set(dir(self)))

    # --- talking to the daemon -------------------------------------------------------------------------------------

    async def _found_again(self, seen: DaemonInfo) -> None:
        """The daemon found (or started) again after ``seen`` stopped answering; one search however many wait."""
        if self.__info is not seen:
            return
        finding = self.__finding
        if finding is None or finding.done():
            finding = self.__finding = asyncio.ensure_future(self.__find())
        await asyncio.shield(finding)

    async def __find(self) -> None:
        info = await find_daemon(self.__home, start=self.__start, command=self.__command)
        if info != self.__info:
            old, self.__http = self.__http, Http(info.port, info.token)
            self.__info = info
            await old.close()

    async def _request(self, method: str, path: str, body: Any = None) -> Any:
        """One request; a daemon that was not reached (nothing sent) or a token it refused is found again, once."""
        if self.__closed:
            raise Error("ALBEDO_CLOSED", "this session was closed (albedo.connect() opens another)", outcome="not_run")
        for attempt in (0, 1):
            info, http = self.__info, self.__http
            try:
                status, answer = await http.request(method, path, body)
            except Unreachable:
                if attempt:
                    raise
                await self._found_again(info)
                continue
            if status == 401 and not attempt:
                fresh = running_daemon(self.__home)
                if fresh is not None and fresh.token != info.token:
                    await self._found_again(info)
                    continue
            if status >= 300:
                raise from_answer(status, answer)
            return answer
        raise AssertionError("unreachable")

    def _path(self, tail: str = "") -> str:
        return f"/v1/sessions/{quote(self.session_id, safe='')}{tail}"

    # --- operations ------------------------------------------------------------------------------------------------

    async def refresh(self) -> list[Operation]:
        """Reads the live operations again and mints the methods anew (done by itself when the session's tools change)."""
        body = await self._request("GET", self._path("/tools?all=true"))
        ops = []
        for t in body.get("tools", []) if isinstance(body, dict) else []:
            if isinstance(t, dict) and isinstance(t.get("server"), str) and isinstance(t.get("tool"), str):
                ops.append(
                    Operation(
                        name=str(t.get("name")),
                        server=t["server"],
                        tool=t["tool"],
                        kind=str(t.get("kind", "tool")),
                        description=str(t.get("description") or ""),
                        inputSchema=_schema(t.get("inputSchema")),
                    )
                )
        self.__mint(ops)
        return list(ops)

    def __mint(self, ops: list[Operation]) -> None:
        by_py, by_raw, unminted = server_namespaces(self, ops, self.__own)
        for py in self.__minted:
            self.__dict__.pop(py, None)
        for py, server in by_py.items():
            self.__dict__[py] = server
        self.__minted = list(by_py)
        self.__servers = by_raw
        self.__ops = ops
        self.unminted = unminted

    async def tools(self) -> list[Operation]:
        """The session's live operations: every server's tools, and its ``read_resource`` / ``get_prompt``."""
        return await self.refresh()

    def __lookup(self, name: str) -> Optional[Operation]:
        for op in self.__ops:
            if op.name == name or f"{op.server}/{op.tool}" == name:
                return op
        return None

    async def describe(self, name: str) -> Operation:
        """One operation, by its advertised name or ``server/tool``: its description and parameter schema."""
        op = self.__lookup(name)
        if op is None:
            await self.refresh()
            op = self.__lookup(name)
        if op is None:
            names = [o.name for o in self.__ops] + [f"{o.server}/{o.tool}" for o in self.__ops]
            raise Error(
                "ALBEDO_NOT_FOUND",
                f"no operation {name!r} in this session",
                outcome="not_run",
                data={"name": name, "suggestions": close_matches(name, names) or []},
            )
        return op

    async def call(self, name: str, arguments: Optional[dict[str, Any]] = None, /, **kwargs: Any) -> Result:
        """Calls an operation by its advertised name or ``server/tool``; keyword arguments merge into ``arguments``.

        A tool that reports an error gives a result with ``isError``; anything else raises :class:`albedo.Error`
        (``outcome``: ``not_run``, or ``unknown`` when it may have run: never retried).
        """
        return await self.invoke(name, {**(arguments or {}), **kwargs})

    async def invoke(self, name: str, arguments: Optional[dict[str, Any]] = None, *, timeout: Optional[float] = None) -> Result:
        """:meth:`call` with a time limit of its own (seconds; the server's ``callTimeoutMs`` otherwise)."""
        body: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if timeout is not None:
            body["timeoutMs"] = max(1, int(timeout * 1000))
        answer = await self._request("POST", self._path("/calls"), body)
        return Result.of(answer.get("result") if isinstance(answer, dict) else None)

    def __getitem__(self, server: str) -> Server:
        """A server by its own name, minted as an attribute or not (``mcp["my-files"]``)."""
        try:
            return self.__servers[server]
        except KeyError:
            raise Error("ALBEDO_NOT_FOUND", f"no server {server!r} in this session", outcome="not_run") from None

    def __dir__(self) -> list[str]:
        return sorted(n for n in set(object.__dir__(self)) if not n.startswith("_"))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"this session has no server {name!r} (its servers: {sorted(self.__servers)})")

    # --- the session ----------------------------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        """The session as the daemon reports it: each server's state, the warnings, the generation."""
        answer: dict[str, Any] = await self._request("GET", self._path())
        return answer

    async def activity(self, kind: Literal["submit", "turn_end"]) -> int:
        """Tells the session a turn began (``submit``) or ended (``turn_end``): what waits for a turn's end is applied
        then, and servers that were left out are probed. Returns the session's generation."""
        answer = await self._request("POST", self._path("/activity"), {"kind": kind})
        return int(answer["generation"])

    async def context(self) -> Context:
        """The MCP context text for the system prompt, kept as it was since the last :meth:`compacted`."""
        return _context(await self._request("GET", self._path("/context")))

    async def compacted(self) -> Context:
        """Says the conversation was compacted: the context text is taken anew from the current generation."""
        return _context(await self._request("POST", self._path("/compacted"), {}))

    # --- events ------------------------------------------------------------------------------------------------------

    async def events(self, *, last_event_id: Optional[str] = None) -> AsyncIterator[Event]:
        """The session's events as they come (the kept ones first), reconnecting with ``Last-Event-ID`` when the stream
        or the daemon goes; it ends after ``session_closed``."""
        parser = SseParser()
        parser.last_id = last_event_id
        loop = asyncio.get_running_loop()
        since = loop.time()
        delay = 0.1
        while True:
            info, http = self.__info, self.__http
            headers = {"Accept": "text/event-stream"}
            if parser.last_id:
                headers["Last-Event-ID"] = parser.last_id
            close = None
            try:
                status, chunks, close = await http.stream(self._path("/events"), headers)
                if status == 401 and (fresh := running_daemon(self.__home)) is not None and fresh.token != info.token:
                    await self._found_again(info)
                    continue
                if status != 200:
                    raw = b"".join([c async for c in chunks])
                    raise from_answer(status, _json(raw))
                since, delay = loop.time(), 0.1
                async for chunk in chunks:
                    for raw_event in parser.feed(chunk):
                        event = Event(raw_event.event, _json(raw_event.data.encode()) or {}, raw_event.id)
                        yield event
                        if event.type == "session_closed":
                            return
            except (Unreachable, OSError, asyncio.IncompleteReadError) as e:
                if isinstance(e, Error) and e.code != "ALBEDO_DAEMON_UNREACHABLE":
                    raise
            finally:
                if close is not None:
                    close()
            if loop.time() - since > RECONNECT_S:
                raise Error(
                    "ALBEDO_DAEMON_UNREACHABLE",
                    f"the session's event stream could not be opened again in {RECONNECT_S:.0f} s",
                )
            await asyncio.sleep(parser.retry_ms / 1000 if parser.retry_ms else delay)
            delay = min(delay * 2, 2.0)
            try:
                await self._found_again(info)
            except Error:
                pass

    async def _watch(self) -> None:
        """Mints the methods again whenever the session's tools change."""
        try:
            async for event in self.events():
                if event.type in _REFRESHING:
                    try:
                        await self.refresh()
                    except Error:
                        pass
        except (Error, asyncio.CancelledError):
            return

    def start_watching(self) -> None:
        """(Internal) Follows the session's events to mint the methods again when its tools change."""
        self.__watch = asyncio.ensure_future(self._watch())

    # --- closing ----------------------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Closes the session (its servers are reaped) and the connections. Closing twice is nothing."""
        if self.__closed:
            return
        if self.__watch is not None:
            self.__watch.cancel()
        try:
            await self._request("DELETE", self._path())
        except Error:
            pass
        finally:
            self.__closed = True
            await self.__http.close()

    async def __aenter__(self) -> "Mcp":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<albedo.Mcp session {self.session_id[:8]}: {len(self.__servers)} servers, {len(self.__ops)} operations>"


def _schema(v: Any) -> dict[str, Any]:
    return dict(v) if isinstance(v, dict) else {"type": "object"}


def _json(raw: bytes) -> Any:
    import json

    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _context(answer: Any) -> Context:
    gen = int(answer.get("generation", 0))
    kept = int(answer.get("contextGeneration", gen))
    return Context(text=str(answer.get("context", "")), generation=gen, contextGeneration=kept)


async def open_session(
    *,
    home: Union[str, "os.PathLike[str]", None],
    servers: Optional[Sequence[str]],
    exclude: Optional[Sequence[str]],
    profile: Optional[str],
    tools: Optional[ToolsMode],
    start: bool,
    command: Union[str, Sequence[str], None],
) -> Mcp:
    from ._home import albedo_home

    where = albedo_home(home)
    info = await find_daemon(where, start=start, command=command)
    body: dict[str, Any] = {"extensions": {"editor-mcp": False}}
    picked = {k: list(v) for k, v in (("include", servers), ("exclude", exclude)) if v is not None}
    if picked:
        body["servers"] = picked
    if profile is not None:
        body["profile"] = profile
    if tools is not None:
        body["tools"] = tools
    http = Http(info.port, info.token)
    try:
        status, answer = await http.request("POST", "/v1/sessions", body)
    finally:
        await http.close()
    if status != 201:
        raise from_answer(status, answer)
    mcp = Mcp(where, info, str(answer["id"]), start=start, command=command)
    try:
        await mcp.refresh()
        mcp.start_watching()
    except BaseException:
        await mcp.close()
        raise
    return mcp
