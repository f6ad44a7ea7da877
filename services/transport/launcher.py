#!/usr/bin/env python3
"""Albedo's stdio launcher: the parent of one MCP server, and its undertaker.

Usage: launcher.py CWD -- COMMAND [ARGS...]

The server's environment is not the launcher's own (an interpreter shim or
locale coercion may add to that): the daemon writes it first on the lifeline
as one JSON line, {"env": {...}}, and the server gets exactly that.

File descriptors from the daemon:
  0, 1, 2  the server's stdin, stdout and stderr (passed straight through:
           the launcher never copies a byte of the conversation);
  3        the lifeline, a socket to the daemon. The launcher writes one JSON
           line per event on it ({"spawned": pid} | {"spawnError": ...} |
           {"exit": code, "signal": sig} | {"reaped": true}); when it reads
           EOF on it (the daemon closed it, or died, even by SIGKILL), the
           server is shut down.

The launcher runs in a session of its own (the daemon spawns it detached, and
it calls setsid itself when it was not), so signals sent to the daemon's
process group or by its terminal (SIGHUP, SIGINT, SIGQUIT, kill -9 -PGID) never
reach it: it ends only by its shutdown, never before it has cleaned up.

The server runs in a session and process group of its own. Shutdown (2026-07-28
basic/transports/stdio, "Shutdown"): its stdin is already closed by the daemon;
wait 2 s for it to exit, then SIGTERM the group, wait 2 s, then SIGKILL the
group and every child, again and again until none is left or 2 s have passed.
The launcher is a child subreaper, so grandchildren that escape the group
(setsid, double fork) are re-parented here and killed too. A server that exits
by itself has its leftover group cleaned up the same way. SIGHUP, SIGINT,
SIGQUIT or SIGTERM sent to the launcher itself start the same shutdown, without
the first wait (the server's stdin is still open).
Only the Python standard library is used.
"""
import ctypes
import json
import os
import select
import signal
import sys
import time

GRACE = 2.0
STOP_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

libc = ctypes.CDLL(None, use_errno=True)


def say(obj):
    try:
        os.write(3, (json.dumps(obj) + "\n").encode())
    except OSError:
        pass


def children():
    """Direct children of the launcher (re-parented orphans included)."""
    pids = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.extend(int(p) for p in f.read().split())
    except OSError:
        pass
    return pids


def reap_all():
    """Reaps every exited child; returns the status of `server` if it was reaped."""
    global server_status
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == server and server_status is None:
            server_status = status


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def signal_all(sig):
    try:
        os.killpg(server, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in children():
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def wait_gone(seconds, need_server_only=False):
    deadline = time.monotonic() + seconds
    while True:
        reap_all()
        if server_status is not None and (need_server_only or (not group_alive(server) and not children())):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def report_exit():
    global reported
    if server_status is None or reported:
        return
    reported = True
    if os.WIFSIGNALED(server_status):
        say({"exit": None, "signal": signal.Signals(os.WTERMSIG(server_status)).name})
    else:
        say({"exit": os.WEXITSTATUS(server_status), "signal": None})


def kill_until_gone(seconds):
    """SIGKILLs the group and every child, over and over: a process that dies re-parents its children here."""
    deadline = time.monotonic() + seconds
    while True:
        signal_all(signal.SIGKILL)
        if wait_gone(0) or time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def shutdown(first_wait):
    """Ends the server and everything it started, then reports and exits."""
    if server_status is None:
        wait_gone(first_wait, need_server_only=True)
    if not wait_gone(0):
        signal_all(signal.SIGTERM)
        if not wait_gone(GRACE):
            kill_until_gone(GRACE)
    report_exit()
    say({"reaped": True})
    os._exit(0)


stop_requested = False


def on_stop_signal(_sig, _frame):
    global stop_requested
    stop_requested = True


def main():
    global server, server_status, reported
    server_status = None
    reported = False
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[1] != "--":
        say({"spawnError": "usage", "message": "launcher.py CWD -- COMMAND [ARGS...]"})
        os._exit(2)
    cwd, command = argv[0], argv[2:]
    # First of all, out of the daemon's session and group (EPERM when the daemon already spawned us detached).
    try:
        os.setsid()
    except OSError:
        pass
    # A stop signal only raises a flag (and wakes the select below): the shutdown runs in the main loop,
    # once, and one that comes during it changes nothing.
    wake_r, wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    for sig in STOP_SIGNALS:
        signal.signal(sig, on_stop_signal)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    os.set_inheritable(3, False)
    first = b""
    while not first.endswith(b"\n"):
        chunk = os.read(3, 65536)
        if not chunk:
            os._exit(0)  # the daemon went away before telling us anything
        first += chunk
    env = json.loads(first)["env"]

    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    launcher = os.getpid()
    pid = os.fork()
    if pid == 0:
        stage = "setup"
        try:
            os.close(err_r)
            # The server starts with the signal state a plain spawn would give it (Python ignores SIGPIPE and SIGXFSZ).
            signal.set_wakeup_fd(-1)
            for sig in STOP_SIGNALS + (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            os.setsid()
            # A backstop: only a SIGKILL sent to the launcher's own pid (no group signal reaches it)
            # ends it without the shutdown; the server goes with it.
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != launcher:
                os._exit(127)  # the launcher died before the backstop was set
            stage = "chdir"
            os.chdir(cwd)
            stage = "exec"
            os.execvpe(command[0], command, env)
        except OSError as e:
            os.write(err_w, json.dumps({"errno": e.errno, "message": e.strerror or str(e), "where": stage}).encode())
        except BaseException as e:  # noqa: BLE001 - the child must never return into the launcher
            os.write(err_w, json.dumps({"errno": 0, "message": str(e), "where": stage}).encode())
        os._exit(127)
    server = pid
    os.close(err_w)
    failure = b""
    while True:
        chunk = os.read(err_r, 4096)
        if not chunk:
            break
        failure += chunk
    os.close(err_r)
    if failure:
        info = json.loads(failure)
        os.waitpid(pid, 0)
        say({"spawnError": info["errno"], "message": info["message"], "where": info["where"]})
        say({"reaped": True})
        os._exit(0)
    say({"spawned": pid})
    # The launcher holds no end of the conversation: the server owns 0, 1, 2.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)

    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while True:
        if stop_requested:
            shutdown(0)
        fds = [3, wake_r] + ([pidfd] if pidfd is not None else [])
        ready, _, _ = select.select(fds, [], [], 0.2 if pidfd is None else None)
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except OSError:
                pass
        if 3 in ready:
            try:
                data = os.read(3, 4096)
            except OSError:
                data = b""
            if not data:
                shutdown(GRACE)
        reap_all()
        if server_status is not None:
            report_exit()
            shutdown(0)


if __name__ == "__main__":
    main()
