/**
 * The agent as the adapter's child, run under Albedo's stdio launcher (the
 * transport's launcher.c, built at install, or launcher.py): the launcher puts
 * the agent in a process group of its own and holds a lifeline (fd 3) to the
 * adapter; when the lifeline closes — the adapter exited, or was killed, even
 * by SIGKILL — it ends the agent's whole group (its stdin closed: 2 s, then
 * SIGTERM, then SIGKILL). The launcher's files are found by their place in the
 * package, not imported: bin/ loads nothing of services/.
 *
 * The agent inherits the adapter's environment and working directory (it is
 * the user's program, as the editor would have run it) and its stderr (its
 * diagnostics go where the adapter's go); its stdin and stdout are the ACP
 * conversation.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const LAUNCHER_BIN = fileURLToPath(new URL('../../build/albedo-launcher', import.meta.url));
const LAUNCHER_PY = fileURLToPath(new URL('../../services/transport/launcher.py', import.meta.url));
const PYTHON = process.env.ALBEDO_PYTHON || (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

export type AgentEnd = { exit: number | null; signal: string | null } | { spawnError: string };

export interface AgentProcess {
  /** The agent's stdin and stdout, as the ACP SDK's ndJsonStream takes them. */
  input: WritableStream<Uint8Array>;
  output: ReadableStream<Uint8Array>;
  /** The agent's pid once it runs. */
  pid: Promise<number>;
  /** Resolves once the agent has ended (or could not start), and its stdout has ended. */
  ended: Promise<AgentEnd>;
  /** Closes the agent's stdin and the lifeline: the launcher ends the agent's group. */
  stop(): void;
}

export function startAgent(command: string, args: string[], cwd = process.cwd()): AgentProcess {
  const useC = process.env.ALBEDO_LAUNCHER !== 'python' && existsSync(LAUNCHER_BIN);
  const [exe, pre] = useC ? [LAUNCHER_BIN, []] : [PYTHON, [LAUNCHER_PY]];
  const child: ChildProcess = spawn(exe, [...pre, cwd, '--', command, ...args], {
    // The launcher's own environment stays minimal; the agent's travels on the lifeline.
    env: { PATH: process.env.PATH ?? '', PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['pipe', 'pipe', 'inherit', 'pipe'],
    // Its own session: the editor's Ctrl-C to the adapter's group does not end the launcher before it cleans up.
    detached: true,
    windowsHide: true,
  });
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  const lifeline = child.stdio[3] as Socket;
  lifeline.on('error', () => {});
  lifeline.write(JSON.stringify({ env }) + '\n');
  child.stdin!.on('error', () => {});

  let setPid!: (pid: number) => void;
  const pid = new Promise<number>((r) => (setPid = r));
  let end: AgentEnd | undefined;
  let stdoutEnded = false;
  let settle!: (e: AgentEnd) => void;
  const ended = new Promise<AgentEnd>((r) => (settle = r));
  const maybeEnded = (): void => {
    if (end && stdoutEnded) settle(end);
  };
  let buffered = '';
  lifeline.setEncoding('utf8');
  lifeline.on('data', (text: string) => {
    buffered += text;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let ev: any;
      try {
        ev = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof ev.spawned === 'number') setPid(ev.spawned);
      else if ('spawnError' in ev) {
        end ??= { spawnError: `${String(ev.message)}${ev.where === 'chdir' ? ` (entering ${cwd})` : ''}` };
        stdoutEnded = true;
      } else if ('exit' in ev) end ??= { exit: ev.exit, signal: ev.signal };
      maybeEnded();
    }
  });
  child.on('error', (err) => {
    end ??= { spawnError: `cannot run the stdio launcher (${exe}): ${err.message}` };
    stdoutEnded = true;
    maybeEnded();
  });
  child.on('exit', (code, signal) => {
    end ??= { exit: null, signal: `launcher ${signal ?? code}` };
    maybeEnded();
  });
  child.stdout!.on('end', () => {
    stdoutEnded = true;
    maybeEnded();
  });
  child.stdout!.on('error', () => {
    stdoutEnded = true;
    maybeEnded();
  });

  return {
    input: Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
    output: Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    pid,
    ended,
    stop() {
      child.stdin!.destroy();
      lifeline.destroy();
    },
  };
}
