"""``Mcp``: one daemon session, with the surface docs/python.md describes."""

from __future__ import annotations

import asyncio
import os
from typing import Any, AsyncIterator, Literal, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from ._errors import Error, from_answer
from ._home import DaemonInfo, find_daemon, running_daemon, still_running
from ._http import Http, Unreachable
from ._minted import Server, close_matches, server_namespaces
from ._sse import SseParser
from ._types import Context, Event, Operation, Result

ToolsMode = Literal["all", "deferred", "auto"]
#: How long an event stream tries to reconnect (a daemon restarting) before it gives up.
RECONNECT_S = 90.0
#: An event stream silent this long is opened again (the daemon sends a keep-alive every 15 s).
SILENT_S = 45.0
#: How much longer than a call's own timeout the binding waits for the daemon's answer.
GRACE_S = 5.0
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
        self.__http = Http(info.port, info.token, lambda: still_running(self.__home, info))
        self.__info = info
        self.__start = start
        self.__command = command
        self.__finding: Optional[asyncio.Future[None]] = None
        self.__ops: list[Operation] = []
        self.__servers: dict[str, Server] = {}
        self.__minted: list[str] = []
        self.__watch: Optional[asyncio.Task[None]] = None
        self.__closed = False
        self.__shut = False
        self.session_id = session_id
        self.unminted = {}
        # Every name the object has, private ones included: a server never takes one (python/albedo/_names.py).
        self.__own = sorted(set(dir(type(self))) | set(vars(self)) | {"_Mcp__own"})

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
            old, self.__http = self.__http, Http(info.port, info.token, lambda: still_running(self.__home, info))
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

    async def call(self, name: str, /, arguments: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> Result:
        """Calls an operation by its advertised name or ``server/tool``; keyword arguments merge into ``arguments``
        (and win; a tool argument named ``arguments`` goes in the mapping).

        A tool that reports an error gives a result with ``isError``; anything else raises :class:`albedo.Error`
        (``outcome``: ``not_run``, or ``unknown`` when it may have run: never retried).
        """
        return await self.invoke(name, {**_mapping(arguments), **kwargs})

    async def invoke(
        self, name: str, /, arguments: Optional[Mapping[str, Any]] = None, *, timeout: Optional[float] = None
    ) -> Result:
        """:meth:`call` with a time limit of its own, in seconds (the server's ``callTimeoutMs`` otherwise). The daemon
        enforces it; should the daemon not answer within it and a few seconds more, the call fails ``ALBEDO_TIMEOUT``,
        outcome ``unknown``."""
        body: dict[str, Any] = {"name": name, "arguments": _mapping(arguments)}
        if timeout is not None:
            if not isinstance(timeout, (int, float)) or not 0 < timeout <= 86_400:
                raise Error("ALBEDO_INVALID_ARGUMENT", f"timeout: {timeout!r} is not a number of seconds in (0, 86400]",
                            outcome="not_run", path=["timeout"])
            body["timeoutMs"] = max(1, int(timeout * 1000))
        sent = self._request("POST", self._path("/calls"), body)
        limit = None if timeout is None else timeout + GRACE_S
        try:
            answer = await (sent if limit is None else asyncio.wait_for(sent, limit))
        except asyncio.TimeoutError:
            raise Error("ALBEDO_TIMEOUT", f"the daemon did not answer within {limit:.0f} s", outcome="unknown") from None
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
        or the daemon goes, or after :data:`SILENT_S` without a byte (the daemon sends a keep-alive every 15 s); it
        ends after ``session_closed``."""
        if last_event_id is not None and not (last_event_id.isascii() and last_event_id.isprintable()):
            raise Error("ALBEDO_INVALID_ARGUMENT", "last_event_id: printable ASCII only", outcome="not_run",
                        path=["last_event_id"])
        if self.__closed:
            raise Error("ALBEDO_CLOSED", "this session was closed", outcome="not_run")
        last, retry = last_event_id, None
        loop = asyncio.get_running_loop()
        since = loop.time()
        delay = 0.1
        while True:
            info, http = self.__info, self.__http
            headers = {"Accept": "text/event-stream"}
            if last:
                headers["Last-Event-ID"] = last
            # A parser per stream: a stream cut mid-event leaves nothing half read for the next one.
            parser = SseParser()
            parser.last_id, parser.retry_ms = last, retry
            close = None
            try:
                status, chunks, close = await http.stream(self._path("/events"), headers)
                if status == 401 and (fresh := running_daemon(self.__home)) is not None and fresh.token != info.token:
                    await self._found_again(info)
                    continue
                if status != 200:
                    raw = b"".join([c async for c in chunks])
                    if status == 404:
                        self.__closed = True
                        # Closed by this client meanwhile (a close() that overtook the stream): said as a use after close.
                        if self.__shut:
                            raise Error("ALBEDO_CLOSED", "this session was closed", outcome="not_run")
                    raise from_answer(status, _json(raw))
                since, delay = loop.time(), 0.1
                while True:
                    try:
                        chunk = await asyncio.wait_for(chunks.__anext__(), SILENT_S)
                    except (StopAsyncIteration, asyncio.TimeoutError):
                        break
                    for raw_event in parser.feed(chunk):
                        event = Event(raw_event.event, _json(raw_event.data.encode()) or {}, raw_event.id)
                        last, retry = parser.last_id, parser.retry_ms
                        if event.type == "session_closed":
                            self.__closed = True
                        yield event
                        if event.type == "session_closed":
                            return
            except (Unreachable, OSError, asyncio.IncompleteReadError, ValueError) as e:
                if isinstance(e, Error) and e.code != "ALBEDO_DAEMON_UNREACHABLE":
                    raise
            finally:
                if close is not None:
                    close()
            if self.__closed:
                raise Error("ALBEDO_CLOSED", "this session was closed", outcome="not_run")
            if loop.time() - since > RECONNECT_S:
                raise Error(
                    "ALBEDO_DAEMON_UNREACHABLE",
                    f"the session's event stream could not be opened again in {RECONNECT_S:.0f} s",
                )
            await asyncio.sleep(retry / 1000 if retry else delay)
            delay = min(delay * 2, 2.0)
            try:
                await self._found_again(info)
            except Error:
                pass

    async def _watch(self) -> None:
        """Mints the methods again whenever the session's tools change; follows the session until it is closed."""
        while not self.__closed:
            try:
                async for event in self.events():
                    if event.type in _REFRESHING:
                        await self.refresh()
            except asyncio.CancelledError:
                return
            except Exception:  # noqa: BLE001 — a follower that stopped would leave stale methods: start it again
                pass
            if not self.__closed:
                await asyncio.sleep(5)

    def start_watching(self) -> None:
        """(Internal) Follows the session's events to mint the methods again when its tools change."""
        self.__watch = asyncio.ensure_future(self._watch())

    # --- closing ----------------------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Closes the session (its servers are reaped) and the connections. Closing twice is nothing."""
        if self.__shut:
            return
        self.__shut = True
        if self.__watch is not None:
            self.__watch.cancel()
        gone, self.__closed = self.__closed, True
        try:
            if not gone:
                # Straight to the daemon that holds it: closing never finds or starts another.
                status, answer = await self.__http.request("DELETE", self._path())
                if status >= 300 and status != 404:
                    raise from_answer(status, answer)
        except Error:
            pass
        finally:
            await self.__http.close()

    async def __aenter__(self) -> "Mcp":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<albedo.Mcp session {self.session_id[:8]}: {len(self.__servers)} servers, {len(self.__ops)} operations>"


def _mapping(arguments: Any) -> dict[str, Any]:
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise Error("ALBEDO_INVALID_ARGUMENT", f"arguments: a mapping of names to values, not {type(arguments).__name__}",
                    outcome="not_run", path=["arguments"])
    return dict(arguments)


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
    for option, names in (("servers", servers), ("exclude", exclude)):
        if names is not None and (isinstance(names, str) or not all(isinstance(n, str) for n in names)):
            raise Error("ALBEDO_INVALID_ARGUMENT", f"{option}: a list of server names", outcome="not_run", path=[option])
    body: dict[str, Any] = {"extensions": {"editor-mcp": False}}
    picked = {k: list(v) for k, v in (("include", servers), ("exclude", exclude)) if v is not None}
    if picked:
        body["servers"] = picked
    if profile is not None:
        body["profile"] = profile
    if tools is not None:
        body["tools"] = tools
    http = Http(info.port, info.token, lambda: still_running(where, info))
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
