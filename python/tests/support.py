"""What the tests share: a home of their own, the albedo command, real servers.

Run from the repository (test/python/python.test.ts sets the variables):
ALBEDO_TEST_ROOT (the clone), ALBEDO_COMMAND (how to run albedo),
ALBEDO_TEST_NODE (Node 22), and optionally ALBEDO_TEST_OAUTH_MCP_URL (an
MCP server behind a real authorization server) and ALBEDO_TEST_TAG.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
from typing import Any, Optional

ROOT = os.environ.get("ALBEDO_TEST_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = os.environ.get("ALBEDO_TEST_NODE", "node")
COMMAND = shlex.split(os.environ.get("ALBEDO_COMMAND") or f"{NODE} {ROOT}/bin/albedo.js")
EVERYTHING = [NODE, f"{ROOT}/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
MEMORY = [NODE, f"{ROOT}/node_modules/@modelcontextprotocol/server-memory/dist/index.js"]
# The binding starts a daemon the way this says (when the suite is run by hand too).
os.environ.setdefault("ALBEDO_COMMAND", shlex.join(COMMAND))


def fixture(name: str, *args: str) -> list[str]:
    """A real MCP server of the repository's fixtures (the official SDK's server package)."""
    return [NODE, f"{ROOT}/test/fixtures/{name}", *args]


class Home:
    """A private $ALBEDO_HOME, its daemon started by the albedo command, stopped (and the home removed) by close()."""

    def __init__(self) -> None:
        base = os.environ.get("ALBEDO_TEST_TMP") or None
        self.root = tempfile.mkdtemp(prefix="albedo-py-", dir=base)
        #: The home, and beside it (not in it: servers are warned off the home) a folder for servers' data.
        self.path = os.path.join(self.root, "home")
        self.data = os.path.join(self.root, "data")
        os.mkdir(self.path, 0o700)
        os.mkdir(self.data)
        self.server_env = {"ALBEDO_TEST_TAG": os.environ["ALBEDO_TEST_TAG"]} if os.environ.get("ALBEDO_TEST_TAG") else {}

    def cli(self, *args: str, check: bool = True, stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "ALBEDO_HOME": self.path}
        done = subprocess.run([*COMMAND, *args], env=env, capture_output=True, text=True, input=stdin, timeout=300, cwd=self.data)
        if check and done.returncode != 0:
            raise AssertionError(f"albedo {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    def add(self, name: str, argv: list[str], *extra: str) -> None:
        envs = [f"--env={k}={v}" for k, v in self.server_env.items()]
        self.cli("mcp", "add", name, "--json", *envs, *extra, "--", *argv)

    def add_http(self, name: str, url: str) -> Any:
        return json.loads(self.cli("mcp", "add", name, "--json", "--url", url).stdout)

    def daemon(self) -> dict[str, Any]:
        with open(os.path.join(self.path, "daemon.json")) as f:
            info: dict[str, Any] = json.load(f)
            return info

    def kill(self) -> int:
        """SIGKILLs the daemon (its sessions are restored by the next one); its pid."""
        pid = int(self.daemon()["pid"])
        os.kill(pid, signal.SIGKILL)
        for _ in range(600):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return pid
            if _zombie(pid):
                return pid
            time.sleep(0.05)
        raise AssertionError(f"pid {pid} outlived SIGKILL")

    def close(self) -> None:
        self.cli("daemon", "stop", "--json", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


class HomeCase(unittest.IsolatedAsyncioTestCase):
    """Tests sharing one home and its daemon, with the servers ``servers()`` names."""

    home: Home

    @classmethod
    def servers(cls, home: Home) -> None:
        home.add("everything", EVERYTHING)

    @classmethod
    def setUpClass(cls) -> None:
        cls.home = Home()
        try:
            cls.servers(cls.home)
        except BaseException:
            cls.home.close()
            raise

    @classmethod
    def tearDownClass(cls) -> None:
        cls.home.close()
