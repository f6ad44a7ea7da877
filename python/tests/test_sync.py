"""The synchronous facade: the same surface from a plain thread (no event loop), and inside a running loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import albedo

from .support import HomeCase


class SyncTest(HomeCase):
    def test_from_a_thread_without_a_loop(self) -> None:
        out: dict[str, Any] = {}

        def script() -> None:
            try:
                asyncio.get_running_loop()
                out["loop"] = True
            except RuntimeError:
                out["loop"] = False
            with albedo.connect_sync(home=self.home.path) as mcp:
                out["ops"] = [(o.server, o.tool) for o in mcp.tools()]
                out["described"] = mcp.describe("everything/echo").tool
                out["call"] = mcp.call("everything/echo", message="sync").text
                out["minted"] = mcp.everything.get_sum(a=2, b=2).text
                out["item"] = mcp["everything"]["echo"](message="item").text
                out["dir"] = "everything" in dir(mcp) and "get_sum" in dir(mcp.everything)
                out["doc"] = mcp.everything.echo.__doc__
                out["context"] = mcp.context().generation
                out["turn"] = mcp.activity("turn_end")
                out["event"] = next(iter(mcp.events())).type
                try:
                    mcp.call("everything/echo")
                except albedo.Error as e:
                    out["error"] = (e.code, e.outcome)
            out["closed"] = True
            try:
                mcp.tools()
            except albedo.Error as e:
                out["after"] = (e.code, e.outcome)

        worker = threading.Thread(target=script)
        worker.start()
        worker.join(300)
        self.assertFalse(worker.is_alive())
        self.assertFalse(out["loop"], "the thread has no event loop")
        self.assertIn(("everything", "echo"), out["ops"])
        self.assertEqual(out["described"], "echo")
        self.assertEqual(out["call"], "Echo: sync")
        self.assertIn("4", out["minted"])
        self.assertEqual(out["item"], "Echo: item")
        self.assertTrue(out["dir"])
        self.assertIn("Echo", out["doc"])
        self.assertEqual(out["context"], out["turn"])
        self.assertEqual(out["event"], "server_state")
        self.assertEqual(out["error"], ("ALBEDO_INVALID_ARGUMENT", "not_run"))
        self.assertTrue(out["closed"])
        self.assertEqual(out["after"], ("ALBEDO_CLOSED", "not_run"), "used after close: said so")

    def test_inside_a_running_loop(self) -> None:
        # A notebook cell runs in a loop already; the facade never uses that loop.
        async def cell() -> str:
            mcp = albedo.connect_sync(home=self.home.path, servers=["everything"])
            try:
                return mcp.call("everything/echo", message="cell").text
            finally:
                mcp.close()

        self.assertEqual(asyncio.run(cell()), "Echo: cell")
        with self.assertRaises(TypeError):
            albedo.connect_sync(home=self.home.path, nonsense=True)
