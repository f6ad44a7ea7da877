"""Leases (issue 25): a session the binding opened stays open while its program lives, idle or busy elsewhere (the
binding follows the session's event stream, which holds the daemon's lease), and one whose program died without
``close()`` is closed by the daemon once its lease runs out. The daemon here has a 1.5 s lease (ALBEDO_SESSION_LEASE_MS).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import unittest
import urllib.request
from typing import Any

import albedo

from .support import EVERYTHING, Home

CHILD = """
import asyncio, sys
import albedo

async def main() -> None:
    mcp = await albedo.connect(home=sys.argv[1])
    print(mcp.session_id, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


def listed(home: Home) -> list[str]:
    """The ids of the sessions the daemon lists (a listing names no session: it renews none)."""
    info = home.daemon()
    req = urllib.request.Request(
        f"http://127.0.0.1:{info['port']}/v1/sessions", headers={"Authorization": f"Bearer {info['token']}"}
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        body: Any = json.load(r)
    return [str(s["id"]) for s in body["sessions"]]


class LeaseTest(unittest.IsolatedAsyncioTestCase):
    async def test_kept_while_the_program_lives_gone_when_it_dies(self) -> None:
        home = Home()
        self.addCleanup(home.close)
        # The daemon is started by the first command (and inherits this): a lease of 1.5 s.
        os.environ["ALBEDO_SESSION_LEASE_MS"] = "1500"
        try:
            await asyncio.to_thread(home.add, "everything", EVERYTHING)
        finally:
            del os.environ["ALBEDO_SESSION_LEASE_MS"]
        mcp = await albedo.connect(home=home.path)
        try:
            # Another program opens a session, then dies without a word.
            child = subprocess.Popen(
                [sys.executable, "-c", CHILD, home.path], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
            )
            try:
                assert child.stdout is not None
                dead = (await asyncio.to_thread(child.stdout.readline)).strip()
                self.assertIn(dead, listed(home), "its session is open")
            finally:
                child.kill()
                await asyncio.to_thread(child.wait, 30)
                if child.stdout is not None:
                    child.stdout.close()
            for _ in range(600):
                if dead not in listed(home):
                    break
                await asyncio.sleep(0.1)
            self.assertNotIn(dead, listed(home), "the dead program's session expired")
            # Idle all along, across several leases: this program's session stays.
            await asyncio.sleep(4.5)
            self.assertIn(mcp.session_id, listed(home), "the live program's session is kept")
            self.assertEqual((await mcp.call("everything/echo", message="kept")).text, "Echo: kept")
        finally:
            await mcp.close()
