"""One round of the ``python`` bench group (bench/python.ts): calls of the echo tool from Python.

``python3 bench/python_calls.py HOME NAME WARM N M`` (with PYTHONPATH=<repo>/python), against the running daemon of
HOME (one configured server; ``NAME`` is its echo tool, ``server/tool``):

- the binding: ``albedo.connect(home=HOME, start=False)``, WARM warm-up calls, N sequential ``await mcp.call(NAME,
  text="hello")`` each timed with ``time.perf_counter``; then M calls with 32 in flight (32 workers under
  ``asyncio.gather``), as calls/s;
- raw HTTP with ``http.client`` (what a script would write with no binding): the session opened by ``POST
  /v1/sessions``, each call a ``POST /v1/sessions/{id}/calls`` on a kept-alive connection with the bearer token of
  ``daemon.json``; the same warm-up and N sequential calls, then M calls from 32 threads, each with a connection of its
  own.

Prints one JSON object: ``{"binding": {"seqMs": [...], "rate": R}, "raw": {...}}`` (latencies in ms, sorted).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import sys
import threading
import time
from typing import Any, Callable

import albedo

IN_FLIGHT = 32
ARGS = {"text": "hello"}


def sequential(call: Callable[[], Any], n: int) -> list[float]:
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        lat.append((time.perf_counter() - t0) * 1000)
    return sorted(lat)


async def binding(home: str, name: str, warm: int, n: int, m: int) -> dict[str, Any]:
    async with albedo.connect(home=home, start=False) as mcp:
        first = await mcp.call(name, **ARGS)
        if first.isError or first.text != "hello":
            raise SystemExit(f"the binding's call answered {first.raw!r}")
        for _ in range(warm):
            await mcp.call(name, **ARGS)
        lat = []
        for _ in range(n):
            t0 = time.perf_counter()
            await mcp.call(name, **ARGS)
            lat.append((time.perf_counter() - t0) * 1000)
        left = m

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await mcp.call(name, **ARGS)

        # The 32 connections opened (and kept) before the timed run, as the raw threads' are.
        await asyncio.gather(*(mcp.call(name, **ARGS) for _ in range(IN_FLIGHT)))
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        rate = m / (time.perf_counter() - t0)
    return {"seqMs": sorted(lat), "rate": rate}


class Raw:
    """The daemon's HTTP API through ``http.client``: one kept-alive connection, JSON in and out."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: Any = None) -> Any:
        self.conn.request(method, path, None if body is None else json.dumps(body), self.headers)
        r = self.conn.getresponse()
        raw = r.read()
        if r.status >= 300:
            raise SystemExit(f"{method} {path}: HTTP {r.status} {raw[:500]!r}")
        return json.loads(raw) if raw else None


def raw_http(home: str, name: str, warm: int, n: int, m: int) -> dict[str, Any]:
    with open(os.path.join(home, "daemon.json"), encoding="utf-8") as f:
        info = json.load(f)
    port, token = int(info["port"]), str(info["token"])
    main = Raw(port, token)
    # The session as the binding opens it (editor servers off).
    sid = main.request("POST", "/v1/sessions", {"extensions": {"editor-mcp": False}})["id"]
    path = f"/v1/sessions/{sid}/calls"
    body = {"name": name, "arguments": ARGS}

    def call(c: Raw = main) -> Any:
        return c.request("POST", path, body)

    first = call()["result"]
    if first.get("isError") or first["content"][0]["text"] != "hello":
        raise SystemExit(f"the raw call answered {first!r}")
    for _ in range(warm):
        call()
    lat = sequential(call, n)

    left = [m]
    lock = threading.Lock()
    ready = threading.Barrier(IN_FLIGHT + 1)
    failed: list[BaseException] = []

    def worker() -> None:
        c = Raw(port, token)
        try:
            call(c)  # its connection opened before the timed run
            ready.wait()
            while True:
                with lock:
                    if left[0] <= 0:
                        break
                    left[0] -= 1
                call(c)
        except BaseException as e:  # noqa: BLE001 (reported below, after the join)
            failed.append(e)
            ready.abort()
        finally:
            c.conn.close()

    threads = [threading.Thread(target=worker) for _ in range(IN_FLIGHT)]
    for t in threads:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass  # a thread failed: said below
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    rate = m / (time.perf_counter() - t0)
    if failed:
        raise SystemExit(f"a raw HTTP thread failed: {failed[0]!r}")
    main.request("DELETE", f"/v1/sessions/{sid}")
    main.conn.close()
    return {"seqMs": lat, "rate": rate}


def main() -> None:
    home, name = sys.argv[1], sys.argv[2]
    warm, n, m = (int(x) for x in sys.argv[3:6])
    out = {"binding": asyncio.run(binding(home, name, warm, n, m)), "raw": raw_http(home, name, warm, n, m)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
