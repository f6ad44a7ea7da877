"""Finding the daemon of ``$ALBEDO_HOME``, as the ``albedo`` command does.

The home is checked first: it and every directory on the way must be this
user's or root's and writable by no one else (a sticky directory such as
``/tmp`` excepted, where the entry taken from it must be this user's or
root's), since another user who could write there could plant a
``daemon.json`` of their own and be sent the token's requests. Then
``daemon.json`` is believed only while ``daemon.lock`` names the same pid
and that process is alive and the same process (its start time, on Linux),
and only once what answers on its port has *proved* it holds the token:
``GET /v1/health?nonce=N`` is asked without the token and must answer
``proof`` = base64url(HMAC-SHA256(token, N)). Nothing else is sent before.

When none runs, the binding does not start one itself: it runs
``albedo daemon start --json`` (the command's own logic: one daemon however
many clients start at once), found as ``command=`` says, else
``$ALBEDO_COMMAND`` (split as a shell would, no shell run), else ``albedo``
on ``PATH``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import secrets
import shlex
import shutil
import stat
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from ._errors import Error

#: How long ``albedo daemon start`` may take: the daemon's workers start on a busy machine.
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class DaemonInfo:
    """What ``daemon.json`` says: where the daemon listens, with which token."""

    port: int
    token: str
    pid: int
    version: str

    def __repr__(self) -> str:
        # The token never reaches a repr, a log or an error.
        return f"DaemonInfo(port={self.port}, pid={self.pid}, version={self.version!r})"


def albedo_home(home: Union[str, os.PathLike[str], None] = None) -> str:
    """``home``, else ``$ALBEDO_HOME``, else ``~/.albedo``: ``~`` and ``~/`` expanded, a relative path made absolute."""
    v = os.fspath(home) if home is not None else os.environ.get("ALBEDO_HOME", "")
    if not v:
        return os.path.join(os.path.expanduser("~"), ".albedo")
    if v == "~" or v.startswith("~/"):
        return os.path.join(os.path.expanduser("~"), v[2:])
    if v.startswith("~"):
        raise Error("ALBEDO_INVALID_ARGUMENT", f"ALBEDO_HOME={v!r}: only ~ and ~/ are expanded; write the full path")
    return os.path.abspath(v)


def _unsafe(home: str, why: str) -> Error:
    return Error("ALBEDO_HOME_UNSAFE", f"{home} is not used: {why}; nothing in it was read")


def _owned(st: os.stat_result) -> bool:
    return st.st_uid in (os.getuid(), 0)


def check_home(home: str) -> bool:
    """Whether ``home`` exists and is this user's alone (raises ALBEDO_HOME_UNSAFE when it is not; False when missing)."""
    if not hasattr(os, "getuid"):
        return os.path.isdir(home)
    try:
        own = os.lstat(home)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if stat.S_ISLNK(own.st_mode) or not stat.S_ISDIR(own.st_mode):
        raise _unsafe(home, "it is not a directory (or it is a symbolic link)")
    if own.st_uid != os.getuid() or own.st_mode & 0o022:
        raise _unsafe(home, "it is not this user's alone (another owner, or writable by group or others)")
    # Every directory on the way, as given (links: their owner) and as resolved.
    for path in (home, os.path.realpath(home)):
        parts = path.split(os.sep)
        for i in range(1, len(parts)):
            parent = os.sep.join(parts[:i]) or os.sep
            entry = os.sep.join(parts[: i + 1])
            pst, est = os.stat(parent), os.lstat(entry)
            if not _owned(pst):
                raise _unsafe(home, f"{parent} belongs to another user")
            if pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX:
                raise _unsafe(home, f"{parent} may be written by others")
            if pst.st_mode & stat.S_ISVTX and pst.st_mode & 0o022 and not _owned(est):
                raise _unsafe(home, f"{entry} belongs to another user, in a directory others may write")
    return True


def _read(home: str, name: str) -> Optional[str]:
    """The text of ``name`` in the home, read through the directory checked (no link followed); None when missing."""
    try:
        dfd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    with os.fdopen(fd, "rb") as f:
        return f.read(1 << 20).decode("utf-8", "replace")


def _start_time(pid: int) -> Union[str, None, bool]:
    """The start time of ``pid`` from /proc (Linux); None when unknown; False when gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return False if os.path.exists("/proc/self/stat") else None
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split(" ")
    if fields and fields[0] in ("Z", "X"):
        return False
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, start: Optional[str]) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass
    except OSError:
        return False
    now = _start_time(pid)
    if now is False:
        return False
    return start is None or now is None or now == start


def running_daemon(home: str) -> Optional[DaemonInfo]:
    """daemon.json of ``home`` while daemon.lock names the same live process; not yet proved (see :func:`prove`)."""
    if not check_home(home):
        return None
    try:
        info = json.loads(_read(home, "daemon.json") or "null")
        lock = json.loads(_read(home, "daemon.lock") or "null")
    except ValueError:
        return None
    if not isinstance(info, dict) or not isinstance(lock, dict):
        return None
    port, token, pid, version = info.get("port"), info.get("token"), info.get("pid"), info.get("version")
    if not (isinstance(port, int) and isinstance(token, str) and isinstance(pid, int) and isinstance(version, str)):
        return None
    if not 0 < port < 65536 or isinstance(port, bool):
        return None
    start = lock.get("start")
    if lock.get("pid") != pid or not (start is None or isinstance(start, str)) or not _alive(pid, start):
        return None
    return DaemonInfo(port=port, token=token, pid=pid, version=version)


def still_running(home: str, info: DaemonInfo) -> bool:
    """Whether the daemon ``info`` names (proved before) still holds ``home``: its daemon.json unchanged, its pid alive.
    Asked before each new connection, so nothing goes to a process that took a dead daemon's port."""
    try:
        return running_daemon(home) == info
    except Error:
        return False


def expected_proof(token: str, nonce: str) -> str:
    """base64url (no padding) of HMAC-SHA256(key: the token's UTF-8 bytes, message: the nonce)."""
    mac = hmac.new(token.encode("utf-8"), nonce.encode("ascii"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


PROVE_TIMEOUT_S = 30.0
"""How long the daemon may take to answer the proof, once connected (connecting has its own 30 s)."""
CONNECT_TIMEOUT_S = 30.0


async def prove(info: DaemonInfo, timeout: Optional[float] = None) -> str:
    """``"ours"``, ``"not_ours"``, ``"unreachable"`` or ``"hung"`` (it took the request and did not answer within
    ``timeout``, :data:`PROVE_TIMEOUT_S` by default): whether what answers on the port holds the token."""
    timeout = PROVE_TIMEOUT_S if timeout is None else timeout
    from ._http import read_response, Unreachable  # a cycle otherwise: _http needs Error only

    nonce = secrets.token_hex(16)
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", info.port), CONNECT_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError):
        return "unreachable"
    try:
        req = f"GET /v1/health?nonce={nonce} HTTP/1.1\r\nHost: 127.0.0.1:{info.port}\r\nConnection: close\r\n\r\n"
        writer.write(req.encode("ascii"))
        status, _, body = await asyncio.wait_for(read_response(reader, max_bytes=64 * 1024), timeout)
        answer = json.loads(body)
    except Unreachable:
        return "unreachable"
    except asyncio.TimeoutError:
        return "hung"
    except (Error, OSError, ValueError):
        return "not_ours"
    finally:
        writer.close()
    if status != 200 or not isinstance(answer, dict) or answer.get("ok") is not True:
        return "not_ours"
    got = answer.get("proof")
    return "ours" if isinstance(got, str) and hmac.compare_digest(got, expected_proof(info.token, nonce)) else "not_ours"


def albedo_command(command: Union[str, Sequence[str], None]) -> Optional[list[str]]:
    """The argv that runs ``albedo``: ``command``, else ``$ALBEDO_COMMAND``, else ``albedo`` on PATH; None when none."""
    if command is None:
        command = os.environ.get("ALBEDO_COMMAND") or None
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError as e:
            why = f"the albedo command {command!r} cannot be split: {e}"
            raise Error("ALBEDO_INVALID_ARGUMENT", why, outcome="not_run") from None
    if command is not None:
        return list(command)
    found = shutil.which("albedo")
    return [found] if found else None


async def start_daemon(home: str, command: Union[str, Sequence[str], None]) -> None:
    """Runs ``albedo daemon start --json`` for ``home`` and waits for it (bounded)."""
    argv = albedo_command(command)
    if not argv:
        raise Error(
            "ALBEDO_DAEMON_UNREACHABLE",
            f"no daemon runs for {home}, and no albedo command to start one (set ALBEDO_COMMAND or put albedo on PATH)",
            outcome="not_run",
        )
    env = {**os.environ, "ALBEDO_HOME": home}
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, "daemon", "start", "--json", env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
    except OSError as e:
        raise Error("ALBEDO_DAEMON_UNREACHABLE", f"cannot run {argv[0]}: {e.strerror}", outcome="not_run") from None
    try:
        _, err = await asyncio.wait_for(proc.communicate(), START_TIMEOUT_S)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise Error("ALBEDO_DAEMON_UNREACHABLE", f"albedo daemon start did not end within {START_TIMEOUT_S:.0f} s",
                    outcome="not_run") from None
    if proc.returncode != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        code = "ALBEDO_HOME_UNSAFE" if proc.returncode == 7 else "ALBEDO_DAEMON_UNREACHABLE"
        raise Error(code, f"albedo daemon start failed: {last[0]}", outcome="not_run")


async def find_daemon(home: str, *, start: bool, command: Union[str, Sequence[str], None]) -> DaemonInfo:
    """The proved daemon of ``home``: the running one, else (``start``) one started now."""
    for attempt in range(2):
        info = running_daemon(home)
        if info:
            proof = await prove(info)
            if proof == "ours":
                return info
            if proof == "not_ours":
                raise Error(
                    "ALBEDO_DAEMON_UNREACHABLE",
                    f"what answers on port {info.port} (daemon.json of {home}) did not prove it is the daemon of this home; "
                    "nothing was sent to it",
                    outcome="not_run",
                )
            if proof == "hung":
                # Its process lives and holds the home (daemon.lock): starting another would only be refused.
                raise Error(
                    "ALBEDO_DAEMON_UNREACHABLE",
                    f"the daemon of {home} (pid {info.pid}, port {info.port}) took the connection but did not answer "
                    f"within {PROVE_TIMEOUT_S:g} s (stopped or hung?); nothing was sent to it",
                    outcome="not_run",
                    data={"reason": "hung", "pid": info.pid},
                )
        if attempt == 1 or not start:
            break
        await start_daemon(home, command)
    raise Error("ALBEDO_DAEMON_UNREACHABLE", f"no daemon answers for {home}", outcome="not_run")
