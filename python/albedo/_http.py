"""HTTP/1.1 to the daemon on 127.0.0.1, on asyncio streams (standard library only).

Requests carry ``Content-Length``; answers are read by ``Content-Length``,
chunked, or to the end. Connections are kept and reused, each by one
request at a time, for at most :data:`IDLE_S` seconds idle (below Node's
five-second keep-alive, so the daemon never closes one under a request);
one whose daemon closed it is dropped before use. A task cancelled while
its request runs closes that connection: the daemon sees the client go and
cancels the call.
"""

from __future__ import annotations

import asyncio
import errno
import json
import time
from typing import Any, AsyncIterator, Callable, Optional

from ._errors import Error

#: How long an idle connection is kept for reuse.
IDLE_S = 2.0
#: The largest answer read (a result the session did not cut, at most).
MAX_BYTES = 64 << 20
#: At most this many connections at once: more requests wait for one (a gather of thousands opens no more sockets).
MAX_CONNECTIONS = 64


class Unreachable(Error):
    """Nothing answered: the request was never sent (``not_run``)."""


class Http:
    """The connections to one daemon (its port and token).

    ``alive`` is asked before every new connection: whether the daemon that proved itself still holds the home (its
    pid alive, daemon.json unchanged). Once it does not, nothing is sent on its port — another process may have taken
    it — and the request fails unsent, so the daemon is found and proved again.
    """

    def __init__(self, port: int, token: str, alive: Callable[[], bool] = lambda: True) -> None:
        self.port = port
        self._token = token
        self._alive = alive
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)

    def _sweep(self) -> None:
        now = time.monotonic()
        keep = []
        for reader, writer, since in self._idle:
            if now - since < IDLE_S and not reader.at_eof() and not writer.is_closing():
                keep.append((reader, writer, since))
            else:
                writer.close()
        self._idle = keep

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection, with a slot taken (given back by _release)."""
        await self._slots.acquire()
        try:
            self._sweep()
            if self._idle:
                reader, writer, _ = self._idle.pop()
                return reader, writer
            if not self._alive():
                raise Unreachable("ALBEDO_DAEMON_UNREACHABLE", "the daemon that proved itself is gone", outcome="not_run")
            try:
                return await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE):
                    raise Error("ALBEDO_DAEMON_UNREACHABLE", "no connection could be opened: too many open files",
                                outcome="not_run") from None
                raise Unreachable(
                    "ALBEDO_DAEMON_UNREACHABLE", f"nothing answers on 127.0.0.1:{self.port} ({e.strerror or e})",
                    outcome="not_run",
                ) from None
        except BaseException:
            self._slots.release()
            raise

    def _release(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, keep: bool) -> None:
        if keep:
            self._idle.append((reader, writer, time.monotonic()))
        else:
            writer.close()
        self._slots.release()

    def _head(self, method: str, path: str, extra: dict[str, str], length: Optional[int]) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}", f"Authorization: Bearer {self._token}"]
        lines += [f"{k}: {v}" for k, v in extra.items()]
        if length is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {length}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def request(
        self, method: str, path: str, body: Any = None, *, headers: Optional[dict[str, str]] = None
    ) -> tuple[int, Any]:
        """One request; the answer's status and JSON (None for an empty body). Raises :class:`Error` for no answer."""
        try:
            data = None if body is None else json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as e:
            # A set, bytes, a datetime, NaN, a cycle: nothing is sent.
            raise Error("ALBEDO_INVALID_ARGUMENT", f"the request cannot be sent as JSON: {e}", outcome="not_run") from None
        reader, writer = await self._open()
        keep = False
        try:
            writer.write(self._head(method, path, headers or {}, None if data is None else len(data)) + (data or b""))
            status, head, raw = await read_response(reader, max_bytes=MAX_BYTES)
            keep = head.get("connection", "").lower() != "close" and ("content-length" in head or "transfer-encoding" in head)
        except Error as e:
            # Sent: whatever went wrong with the answer, the request may have run.
            raise Error(e.code, e.message, outcome="unknown", status=e.status) from None
        except (OSError, ValueError) as e:
            why = f"the connection to the daemon broke ({getattr(e, 'strerror', None) or e})"
            raise Error("ALBEDO_DAEMON_UNREACHABLE", why, outcome="unknown") from None
        finally:
            self._release(reader, writer, keep)
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            why = f"the daemon answered HTTP {status} with a body that is not JSON"
            raise Error("ALBEDO_INVALID_RESPONSE", why, status=status, outcome="unknown") from None

    async def stream(self, path: str, headers: dict[str, str]) -> tuple[int, AsyncIterator[bytes], Callable[[], None]]:
        """A GET whose answer is read as it comes: its status, its body's chunks (no bound on the whole: a stream
        runs for hours; the reader bounds each event), and how to close it."""
        reader, writer = await self._open()
        try:
            writer.write(self._head("GET", path, headers, None))
            status, head = await _read_head(reader)
        except BaseException:
            self._release(reader, writer, False)
            raise
        closed = False

        def close() -> None:
            nonlocal closed
            if not closed:
                closed = True
                self._release(reader, writer, False)

        return status, _body(reader, head, None), close

    async def close(self) -> None:
        for _, writer, _ in self._idle:
            writer.close()
        self._idle.clear()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    line = await reader.readline()
    if not line:
        raise Unreachable("ALBEDO_DAEMON_UNREACHABLE", "the daemon closed the connection without answering", outcome="unknown")
    parts = line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise Error("ALBEDO_INVALID_RESPONSE", "what answered does not speak HTTP/1.1")
    head: dict[str, str] = {}
    for _ in range(200):
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n"):
            return int(parts[1]), head
        if not raw:
            break
        name, _, value = raw.decode("latin-1").partition(":")
        head[name.strip().lower()] = value.strip()
    raise Error("ALBEDO_INVALID_RESPONSE", "the daemon's answer ended in its headers")


async def _body(reader: asyncio.StreamReader, head: dict[str, str], max_bytes: Optional[int]) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive: by Content-Length, chunked, or to the end."""
    total = 0
    if "chunked" in head.get("transfer-encoding", "").lower():
        while True:
            size_line = await reader.readline()
            if not size_line:
                raise asyncio.IncompleteReadError(b"", None)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                return
            total += size
            if max_bytes is not None and total > max_bytes:
                raise Error("ALBEDO_TOO_LARGE", f"the daemon's answer is larger than {max_bytes} bytes")
            chunk = await reader.readexactly(size)
            await reader.readexactly(2)
            yield chunk
    elif "content-length" in head:
        left = int(head["content-length"])
        if max_bytes is not None and left > max_bytes:
            raise Error("ALBEDO_TOO_LARGE", f"the daemon's answer is larger than {max_bytes} bytes")
        while left > 0:
            chunk = await reader.read(min(left, 1 << 16))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", left)
            left -= len(chunk)
            yield chunk
    else:
        while chunk := await reader.read(1 << 16):
            total += len(chunk)
            if max_bytes is not None and total > max_bytes:
                raise Error("ALBEDO_TOO_LARGE", f"the daemon's answer is larger than {max_bytes} bytes")
            yield chunk


async def read_response(reader: asyncio.StreamReader, *, max_bytes: int) -> tuple[int, dict[str, str], bytes]:
    """A whole answer: status, headers (names in lower case), body."""
    status, head = await _read_head(reader)
    try:
        body = b"".join([chunk async for chunk in _body(reader, head, max_bytes)])
    except (asyncio.IncompleteReadError, ValueError):
        raise Error("ALBEDO_DAEMON_UNREACHABLE", "the daemon's answer was cut short", outcome="unknown") from None
    return status, head, body
