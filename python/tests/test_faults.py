"""Errors that say whether the call ran: a daemon killed mid-call (unknown), a server needing sign-in (not_run),
and an event stream that reconnects to the daemon started after it."""

from __future__ import annotations

import asyncio
import os
import signal
import unittest

import albedo

from .support import Home, HomeCase


class DaemonKilledTest(HomeCase):
    async def test_killed_mid_call_then_back(self) -> None:
        mcp = await albedo.connect(home=self.home.path)
        try:
            events: list[albedo.Event] = []
            first = asyncio.Event()

            async def follow() -> None:
                async for e in mcp.events():
                    events.append(e)
                    first.set()

            follower = asyncio.ensure_future(follow())
            await asyncio.wait_for(first.wait(), 60)
            before = len(events)
            epoch = (events[0].id or "").split("-")[0]
            call = asyncio.ensure_future(mcp.call("everything/trigger-long-running-operation", duration=60, steps=60))
            await asyncio.sleep(1.5)
            self.assertFalse(call.done(), "the call is in flight")
            pid = self.home.kill()
            with self.assertRaises(albedo.Error) as caught:
                await asyncio.wait_for(call, 60)
            self.assertEqual(caught.exception.outcome, "unknown", "it may have run: the binding never retries it")
            self.assertEqual(caught.exception.code, "ALBEDO_DAEMON_UNREACHABLE")

            # The next call finds no daemon, starts one (albedo daemon start), which restores the session: it runs.
            again = await asyncio.wait_for(mcp.call("everything/echo", message="back"), 180)
            self.assertEqual(again.text, "Echo: back")
            self.assertNotEqual(self.home.daemon()["pid"], pid, "a new daemon")
            # The event stream reconnected to it with Last-Event-ID and goes on.
            for _ in range(1200):
                if any(e.id and not e.id.startswith(epoch) for e in events[before:]):
                    break
                await asyncio.sleep(0.1)
            self.assertTrue(any(e.id and not e.id.startswith(epoch) for e in events[before:]), events)
            follower.cancel()
        finally:
            await mcp.close()

    async def test_squatted_port_gets_nothing(self) -> None:
        """A process that takes a dead daemon's port is sent neither the token nor a call's arguments."""
        mcp = await albedo.connect(home=self.home.path, servers=["everything"])
        try:
            self.assertEqual((await mcp.call("everything/echo", message="before")).text, "Echo: before")
            port = int(self.home.daemon()["port"])
            self.home.kill()
            heard: list[bytes] = []

            async def squat(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                heard.append(await reader.read(65536))
                writer.write(b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 42\r\n\r\n')
                writer.write(b'{"result":{"content":[],"isError":false}}')
                await writer.drain()
                writer.close()

            # The killed daemon's accepted sockets linger a while (FIN_WAIT2): the port is taken once they go.
            squatter = None
            for _ in range(240):
                try:
                    squatter = await asyncio.start_server(squat, "127.0.0.1", port)
                    break
                except OSError:
                    await asyncio.sleep(0.5)
            assert squatter is not None, f"port {port} never came free"
            try:
                r = await asyncio.wait_for(mcp.call("everything/echo", message="secret argument"), 180)
                self.assertEqual(r.text, "Echo: secret argument", "answered by the new daemon, not the squatter")
            finally:
                squatter.close()
            self.assertFalse(any(b"Bearer" in h or b"secret argument" in h for h in heard), heard)
        finally:
            await mcp.close()

    async def test_stopped_daemon_is_said_hung(self) -> None:
        """A daemon that takes the connection and never answers (SIGSTOP) is said hung, not taken for a stranger."""
        from albedo import _home

        mcp = await albedo.connect(home=self.home.path)
        await mcp.close()
        pid = int(self.home.daemon()["pid"])
        os.kill(pid, signal.SIGSTOP)
        saved = _home.PROVE_TIMEOUT_S
        _home.PROVE_TIMEOUT_S = 1.0
        try:
            with self.assertRaises(albedo.Error) as caught:
                await albedo.connect(home=self.home.path)
        finally:
            _home.PROVE_TIMEOUT_S = saved
            os.kill(pid, signal.SIGCONT)
        e = caught.exception
        self.assertEqual((e.code, e.outcome), ("ALBEDO_DAEMON_UNREACHABLE", "not_run"))
        self.assertEqual(e.data, {"reason": "hung", "pid": pid})
        self.assertEqual(int(self.home.daemon()["pid"]), pid, "no second daemon was started")
        # Going on again, it answers as before.
        mcp = await albedo.connect(home=self.home.path)
        await mcp.close()

    async def test_no_daemon_and_not_to_start_one(self) -> None:
        home = Home()
        try:
            with self.assertRaises(albedo.Error) as caught:
                await albedo.connect(home=home.path, start=False)
            self.assertEqual((caught.exception.code, caught.exception.outcome), ("ALBEDO_DAEMON_UNREACHABLE", "not_run"))
            self.assertFalse(os.path.exists(os.path.join(home.path, "daemon.json")), "nothing was started")
        finally:
            home.close()

    async def test_unsafe_home_is_refused(self) -> None:
        home = Home()
        try:
            os.chmod(home.path, 0o777)
            with self.assertRaises(albedo.Error) as caught:
                await albedo.connect(home=home.path, start=False)
            self.assertEqual(caught.exception.code, "ALBEDO_HOME_UNSAFE")
        finally:
            os.chmod(home.path, 0o700)
            home.close()


@unittest.skipUnless(os.environ.get("ALBEDO_TEST_OAUTH_MCP_URL"), "needs the OAuth stack (test/python/python.test.ts)")
class SignInTest(HomeCase):
    @classmethod
    def servers(cls, home: Home) -> None:
        saved = home.add_http("secure", os.environ["ALBEDO_TEST_OAUTH_MCP_URL"])
        assert saved["server"]["auth"]["state"] == "needs_sign_in", saved

    async def test_needs_sign_in_is_not_run(self) -> None:
        async with albedo.connect(home=self.home.path) as mcp:
            self.assertEqual([o for o in await mcp.tools() if o.server == "secure"], [], "left out until signed in")
            with self.assertRaises(albedo.Error) as caught:
                await mcp.call("secure/whoami")
            self.assertEqual(caught.exception.outcome, "not_run")
            self.assertIn(caught.exception.code, ("ALBEDO_NEEDS_SIGN_IN",))
