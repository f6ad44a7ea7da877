/**
 * The pure parts of the adapter's rewriting: what it checks in the editor's
 * session requests, the defaults a load or resume gets, the capabilities the
 * editor is told, the command line, and daemon errors as JSON-RPC errors.
 * No I/O here, so each rule is tested alone.
 */
import path from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';
import { CliError, usage } from '../client/errors.ts';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `albedo acp -- AGENT [ARGS…]`: the words after `acp` → the agent's command and arguments. */
export function agentArgv(words: string[]): { command: string; args: string[] } {
  const [dash, command, ...args] = words;
  if (dash !== '--' || command === undefined || command === '')
    throw usage('albedo acp takes the agent after "--": albedo acp -- AGENT [ARGS…] (albedo acp --help)');
  return { command, args };
}

/** Params of a session request that the adapter must read: an object with an absolute `cwd`. */
function sessionBase(params: unknown, method: string): Obj & { cwd: string } {
  if (!isObj(params)) throw RequestError.invalidParams({ method }, `${method} takes an object`);
  if (typeof params.cwd !== 'string' || !path.isAbsolute(params.cwd))
    throw RequestError.invalidParams({ path: ['cwd'] }, `${method}: cwd must be an absolute path`);
  return params as Obj & { cwd: string };
}

/** session/new: an absolute cwd and an mcpServers array, as the editor sent them (-32602 otherwise). */
export function newSessionParams(params: unknown): Obj & { cwd: string; mcpServers: unknown[] } {
  const p = sessionBase(params, 'session/new');
  if (!Array.isArray(p.mcpServers)) throw RequestError.invalidParams({ path: ['mcpServers'] }, 'session/new: mcpServers must be an array');
  return p as Obj & { cwd: string; mcpServers: unknown[] };
}

/**
 * session/load and session/resume: the schema's defaults applied (an omitted or null `mcpServers` is [], a null `args`,
 * `env` or `headers` is []), so the daemon sees the same list for "nothing" however the editor spelled it.
 */
export function attachParams(params: unknown, method: string): Obj & { cwd: string; sessionId: string; mcpServers: unknown[] } {
  const p = sessionBase(params, method);
  if (typeof p.sessionId !== 'string' || p.sessionId === '')
    throw RequestError.invalidParams({ path: ['sessionId'] }, `${method}: sessionId must be a string`);
  const given = p.mcpServers ?? [];
  if (!Array.isArray(given)) throw RequestError.invalidParams({ path: ['mcpServers'] }, `${method}: mcpServers must be an array`);
  const mcpServers = given.map((s) => {
    if (!isObj(s)) return s;
    const out: Obj = { ...s };
    for (const k of ['args', 'env', 'headers']) if (k in out && out[k] === null) out[k] = [];
    if (!('type' in out) || out.type === undefined) {
      out.args ??= [];
      out.env ??= [];
    }
    return out;
  });
  return { ...p, mcpServers } as Obj & { cwd: string; sessionId: string; mcpServers: unknown[] };
}

/**
 * The agent's initialize answer as the editor gets it: the adapter takes only stdio servers from the editor (the daemon
 * runs them), so http and sse are said false whatever the agent supports. Returns the agent's own http flag too: with
 * it the daemon hands the agent the session's HTTP gateway instead of the stdio one.
 */
export function editorInitialize(result: unknown): { result: unknown; agentHttp: boolean } {
  if (!isObj(result)) return { result, agentHttp: false };
  const caps = isObj(result.agentCapabilities) ? result.agentCapabilities : {};
  const mcp = isObj(caps.mcpCapabilities) ? caps.mcpCapabilities : {};
  return {
    result: { ...result, agentCapabilities: { ...caps, mcpCapabilities: { ...mcp, http: false, sse: false } } },
    agentHttp: mcp.http === true,
  };
}

/** JSON-RPC's Invalid params for a daemon's 400, Internal error otherwise. */
const INVALID_PARAMS = -32602;
const INTERNAL = -32603;

/** A daemon's (or the CLI's) error as the editor gets it: the code and path in `data`, never a secret (none is in them). */
export function rpcError(err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  if (err instanceof CliError) {
    const data: Obj = { code: err.code };
    if (err.path) data.path = err.path;
    return new RequestError(err.exit === 2 ? INVALID_PARAMS : INTERNAL, `${err.code}: ${err.message}`, data);
  }
  return new RequestError(INTERNAL, `ALBEDO_INTERNAL: ${err instanceof Error ? err.message : String(err)}`, { code: 'ALBEDO_INTERNAL' });
}
