"""The surface docs/python.md describes, against a real daemon with real servers (server-everything, server-filesystem)."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator
import inspect
import os

import albedo

from .support import EVERYTHING, NODE, ROOT, Home, HomeCase


class SurfaceTest(HomeCase):
    @classmethod
    def servers(cls, home: Home) -> None:
        home.add("everything", EVERYTHING)
        cls.files_root = os.path.join(home.data, "files-root")
        os.mkdir(cls.files_root)
        with open(os.path.join(cls.files_root, "note.txt"), "w") as f:
            f.write("a note\n")
        home.add("files", [NODE, f"{ROOT}/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", cls.files_root])

    async def asyncSetUp(self) -> None:
        self.mcp = await albedo.connect(home=self.home.path)

    async def asyncTearDown(self) -> None:
        await self.mcp.close()

    async def test_tools_and_describe(self) -> None:
        ops = await self.mcp.tools()
        by = {(o.server, o.tool): o for o in ops}
        self.assertIn(("everything", "echo"), by)
        self.assertIn(("files", "read_text_file"), by)
        self.assertIn(("everything", "read_resource"), by, "a server's resources are an operation too")
        echo = by[("everything", "echo")]
        self.assertEqual(echo.kind, "tool")
        self.assertTrue(echo.name.startswith("mcp_everything_echo"))
        self.assertIn("message", echo.inputSchema["properties"])
        self.assertEqual(await self.mcp.describe(echo.name), echo)
        self.assertEqual(await self.mcp.describe("everything/echo"), echo)
        with self.assertRaises(albedo.Error) as caught:
            await self.mcp.describe("everything/ecoh")
        self.assertEqual(caught.exception.code, "ALBEDO_NOT_FOUND")
        self.assertEqual(caught.exception.outcome, "not_run")
        self.assertIn("everything/echo", caught.exception.data["suggestions"])

    async def test_call_forms(self) -> None:
        r = await self.mcp.call("everything/echo", {"message": "one"})
        self.assertEqual(r.text, "Echo: one")
        self.assertFalse(r.isError)
        echo = await self.mcp.describe("everything/echo")
        self.assertEqual((await self.mcp.call(echo.name, message="two")).text, "Echo: two")
        self.assertEqual((await self.mcp.call("everything/echo", arguments={"message": "kw"})).text, "Echo: kw")
        merged = await self.mcp.call("everything/get-sum", {"a": 1, "b": 100}, b=2)
        self.assertIn("3", merged.text, "keyword arguments merge into arguments, and win")
        structured = await self.mcp.call("everything/get-structured-content", location="New York")
        self.assertIsNotNone(structured.structuredContent)
        self.assertIn("temperature", structured.structuredContent or {})

    async def test_tool_error_is_a_result(self) -> None:
        r = await self.mcp.files.read_text_file(path="/etc/hostname")
        self.assertTrue(r.isError, "outside the allowed directory: the tool says so, nothing raises")
        ok = await self.mcp.files.read_text_file(path=os.path.join(self.files_root, "note.txt"))
        self.assertFalse(ok.isError)
        self.assertEqual(ok.text, "a note\n")

    async def test_minted_methods(self) -> None:
        self.assertIn("everything", dir(self.mcp))
        self.assertIn("files", dir(self.mcp))
        self.assertIn("get_sum", dir(self.mcp.everything), "get-sum: hyphens become _")
        method = self.mcp.everything.get_sum
        self.assertIn("Get Sum", method.__doc__ or "")
        params = inspect.signature(method).parameters
        self.assertEqual(params["a"].kind, inspect.Parameter.KEYWORD_ONLY)
        self.assertIs(params["a"].annotation, float)
        self.assertIn("5", (await method(a=2, b=3)).text)
        self.assertEqual((await self.mcp["everything"]["get-sum"](a=1, b=1)).text, (await method(a=1, b=1)).text)
        with self.assertRaises(AttributeError):
            self.mcp.nowhere
        with self.assertRaises(albedo.Error) as caught:
            self.mcp["nowhere"]
        self.assertEqual(caught.exception.code, "ALBEDO_NOT_FOUND")

    async def test_gather_keeps_successes(self) -> None:
        results = await asyncio.gather(
            self.mcp.call("everything/echo", message="kept"),
            self.mcp.call("everything/echo"),  # no message: refused before the server is asked
            self.mcp.call("everything/nope"),
            self.mcp.everything.get_sum(a=1, b=2),
            return_exceptions=True,
        )
        self.assertIsInstance(results[0], albedo.Result)
        self.assertEqual(results[0].text, "Echo: kept")
        self.assertIsInstance(results[1], albedo.Error)
        self.assertEqual((results[1].code, results[1].outcome, results[1].status), ("ALBEDO_INVALID_ARGUMENT", "not_run", 400))
        self.assertEqual(results[1].path, ["body", "arguments", "message"])
        self.assertEqual((results[2].code, results[2].outcome), ("ALBEDO_NOT_FOUND", "not_run"))
        self.assertIsInstance(results[3], albedo.Result)

    async def test_many_in_flight(self) -> None:
        results = await asyncio.gather(*(self.mcp.call("everything/echo", message=str(i)) for i in range(32)))
        self.assertEqual([r.text for r in results], [f"Echo: {i}" for i in range(32)])

    async def test_session_activity_context_status(self) -> None:
        status = await self.mcp.status()
        self.assertEqual(status["id"], self.mcp.session_id)
        self.assertEqual(sorted(s["name"] for s in status["servers"]), ["everything", "files"])
        self.assertFalse(status["extensions"]["editor-mcp"]["effective"], "editor servers never appear here")
        gen = await self.mcp.activity("submit")
        self.assertEqual(await self.mcp.activity("turn_end"), gen)
        ctx = await self.mcp.context()
        self.assertIn('Server "everything"', ctx.text)
        self.assertEqual((ctx.generation, ctx.contextGeneration), (gen, gen))
        with self.assertRaises(albedo.Error) as caught:
            await self.mcp.activity("nap")  # type: ignore[arg-type]
        self.assertEqual((caught.exception.code, caught.exception.status), ("ALBEDO_INVALID_ARGUMENT", 400))

    async def test_events(self) -> None:
        async def first_two() -> list[albedo.Event]:
            seen = []
            async for event in self.mcp.events():
                seen.append(event)
                if len(seen) == 2:
                    break
            return seen

        events = await asyncio.wait_for(first_two(), 60)
        self.assertTrue(all(e.type == "server_state" for e in events), events)
        self.assertEqual({e.data["server"] for e in events}, {"everything", "files"})
        resumed = await asyncio.wait_for(anext(aiter(self.mcp.events(last_event_id=events[0].id))), 60)
        self.assertEqual(resumed.id, events[1].id, "Last-Event-ID resumes after it")

    async def test_close_closes_the_session(self) -> None:
        other = await albedo.connect(home=self.home.path, servers=["everything"])
        self.assertEqual([s["name"] for s in (await other.status())["servers"]], ["everything"])
        # The stream is open once its first (kept) event came: a close sent before it could overtake its request.
        stream = aiter(other.events())
        first = await asyncio.wait_for(anext(stream), 60)
        closing = asyncio.ensure_future(_rest(stream))
        await other.close()
        await other.close()
        types = [first.type] + [e.type for e in await asyncio.wait_for(closing, 60)]
        self.assertEqual(types[-1], "session_closed")
        with self.assertRaises(albedo.Error) as caught:
            await anext(aiter(other.events()))
        self.assertEqual((caught.exception.code, caught.exception.outcome), ("ALBEDO_CLOSED", "not_run"))
        with self.assertRaises(albedo.Error) as caught:
            await other.call("everything/echo", message="late")
        self.assertEqual((caught.exception.code, caught.exception.outcome), ("ALBEDO_CLOSED", "not_run"))

    async def test_careless_input(self) -> None:
        for bad_call in (
            self.mcp.call("everything/echo", ["message"]),  # type: ignore[arg-type]
            self.mcp.invoke("everything/echo", {"message": "x"}, timeout=float("nan")),
            self.mcp.invoke("everything/echo", {"message": "x"}, timeout=-1),
        ):
            with self.assertRaises(albedo.Error) as caught:
                await bad_call
            self.assertEqual((caught.exception.code, caught.exception.outcome), ("ALBEDO_INVALID_ARGUMENT", "not_run"))
        with self.assertRaises(albedo.Error) as caught:
            await albedo.connect(home=self.home.path, servers="everything")  # type: ignore[arg-type]
        self.assertEqual(caught.exception.code, "ALBEDO_INVALID_ARGUMENT")
        with self.assertRaises(albedo.Error) as caught:
            await anext(aiter(self.mcp.events(last_event_id="k\r\nX-Injected: 1")))
        self.assertEqual(caught.exception.code, "ALBEDO_INVALID_ARGUMENT")
        timed = await self.mcp.invoke("everything/echo", {"message": "t"}, timeout=30)
        self.assertEqual(timed.text, "Echo: t")

    async def test_arguments_that_are_not_json(self) -> None:
        for bad in ({"message": {1, 2}}, {"message": b"bytes"}, {"message": float("nan")}):
            with self.assertRaises(albedo.Error) as caught:
                await self.mcp.call("everything/echo", bad)
            self.assertEqual((caught.exception.code, caught.exception.outcome), ("ALBEDO_INVALID_ARGUMENT", "not_run"))
        self.assertEqual((await self.mcp.call("everything/echo", message="still")).text, "Echo: still", "nothing broke")


async def _rest(stream: AsyncIterator[albedo.Event]) -> list[albedo.Event]:
    return [e async for e in stream]
