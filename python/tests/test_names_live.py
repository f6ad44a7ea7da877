"""Names that are keywords, hyphenated, or collide, and methods minted again when the tools change (a real SDK server)."""

from __future__ import annotations

import asyncio
import json
import os

import albedo

from .support import EVERYTHING, Home, HomeCase, fixture


class LiveNamesTest(HomeCase):
    @classmethod
    def servers(cls, home: Home) -> None:
        cls.state = os.path.join(home.data, "changing")
        os.mkdir(cls.state)
        with open(os.path.join(cls.state, "tools.json"), "w") as f:
            json.dump(["a-b", "a_b", "class", "2fa", "__init__", "plain", "left", "_Server__minted", "_Server__name"], f)
        home.add("class", fixture("composer-changing-server.ts", cls.state))
        changing = os.path.join(home.data, "changing-2")
        os.mkdir(changing)
        home.add("changing", fixture("composer-changing-server.ts", changing))
        home.add("my-files", EVERYTHING)
        home.add("my_files", EVERYTHING)
        home.add("call", EVERYTHING)

    async def test_the_rule_on_real_names(self) -> None:
        async with albedo.connect(home=self.home.path) as mcp:
            self.assertIn("class_", dir(mcp), "a keyword gets _ after it")
            self.assertIn("call_", dir(mcp), "a server named as a method of the client: call stays the method")
            self.assertTrue(callable(mcp.call))
            self.assertNotIn("my_files", dir(mcp), "my-files and my_files collide: neither is minted")
            self.assertIn("my-files", mcp.unminted)
            self.assertIn("my_files", mcp.unminted)
            self.assertEqual((await mcp["my-files"]["echo"](message="x")).text, "Echo: x", "reached by item access")
            self.assertEqual((await mcp.call("my_files/echo", message="y")).text, "Echo: y")
            self.assertEqual((await mcp.call_.echo(message="z")).text, "Echo: z")

            server = mcp.class_
            self.assertIn("class_", dir(server))
            self.assertIn("_2fa", dir(server), "a leading digit gets _ in front")
            self.assertIn("plain", dir(server))
            self.assertNotIn("a_b", dir(server), "a-b and a_b collide")
            self.assertIn("class/a-b", mcp.unminted)
            self.assertIn("class/__init__", mcp.unminted, "Python's own names are not minted")
            self.assertEqual((await server.class_(text="k")).text, "class: k")
            self.assertEqual((await server._2fa(text="d")).text, "2fa: d")
            self.assertEqual((await server["a-b"](text="h")).text, "a-b: h")
            self.assertEqual((await server["__init__"](text="i")).text, "__init__: i")
            # Names of the binding's own (a method of the server object, its private fields) never clobber them.
            self.assertEqual((await server.left_(text="l")).text, "left: l")
            self.assertIn("class/_Server__minted", mcp.unminted)
            self.assertEqual((await server["_Server__minted"](text="m")).text, "_Server__minted: m")
            self.assertIn("plain", dir(server), "the server's own state is intact")
            self.assertEqual((await mcp.status())["id"], mcp.session_id)

    async def test_a_refresh_mints_again(self) -> None:
        async with albedo.connect(home=self.home.path, servers=["changing"]) as mcp:
            self.assertEqual(dir(mcp.changing), ["alpha", "crash", "set_tools"])
            before = await mcp.context()
            await mcp.changing.set_tools(names=["fresh-one", "second"])
            # The session applies a changed catalogue at the end of a turn; the binding mints again on its event.
            # The server's list_changed is fetched in the background: a turn may end before the change is known,
            # so turns keep ending until it is applied (as a harness's would).
            for i in range(600):
                if "fresh_one" in dir(mcp.changing):
                    break
                if i % 10 == 0:
                    await mcp.activity("turn_end")
                await asyncio.sleep(0.1)
            self.assertIn("fresh_one", dir(mcp.changing), "minted from the session's capabilities_changed")
            self.assertNotIn("alpha", dir(mcp.changing), "gone with the tool")
            self.assertEqual((await mcp.changing.fresh_one(text="n")).text, "fresh-one: n")

            # The context text is kept until the conversation is compacted, so a prompt cache holds.
            kept = await mcp.context()
            self.assertGreater(kept.generation, before.generation)
            self.assertEqual((kept.text, kept.contextGeneration), (before.text, before.contextGeneration))
            fresh = await mcp.compacted()
            self.assertEqual(fresh.contextGeneration, fresh.generation)
            self.assertNotEqual(fresh.text, before.text, "the new text: the server has four tools now")
            self.assertEqual(await mcp.context(), fresh)
