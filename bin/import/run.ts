/**
 * `albedo mcp import`: read the other host's file (sources.ts), plan each
 * server (plan.ts), compare with the daemon's servers, and show the plan;
 * with `--yes`, ask for the inputs the added servers need (on a terminal)
 * and add each through the API — each one a strict save of its own, so one
 * that cannot start is reported and the others are still added.
 */
import { Client } from '../client/client.ts';
import { dict, setOwn } from '../client/dict.ts';
import { CliError, EXIT, oneLine } from '../client/errors.ts';
import { seg } from '../client/http.ts';
import { cell, emit, safe, table } from '../client/output.ts';
import { target } from '../commands/show.ts';
import type { ImportOptions } from '../commands/import.ts';
import { plan, secretNames, type Planned } from './plan.ts';
import { ask } from './prompt.ts';
import { readSource, type Source } from './sources.ts';

type Outcome = 'would_add' | 'added' | 'failed' | 'skipped';

interface Row {
  plan: Planned;
  outcome: Outcome;
  reason?: string;
  message?: string;
  check?: unknown;
  error?: { code: string; message: string; path?: Array<string | number> };
}

function json(r: Row): Record<string, unknown> {
  const p = r.plan;
  const out: Record<string, unknown> = { name: p.name, outcome: r.outcome, type: p.kind, entry: p.entry, secrets: secretNames(p) };
  if (p.inputs.length) out.inputs = [...new Set(p.inputs.map((i) => i.id))];
  out.warnings = p.warnings;
  if (r.reason) out.reason = r.reason;
  if (r.message) out.message = r.message;
  if (r.check) out.check = r.check;
  if (r.error) out.error = r.error;
  return out;
}

function human(rows: Row[], header: string, yes: boolean): string {
  const words: Record<Outcome, string> = { would_add: 'add', added: 'added', failed: 'FAILED', skipped: 'skip' };
  const lines = [safe(header), table(['', 'NAME', 'TYPE', 'TARGET', 'SECRETS / WHY'], rows.map((r) => [
    words[r.outcome], r.plan.name, r.plan.kind ?? '-', r.plan.entry ? cell(target(r.plan.entry), 50) : '',
    r.outcome === 'skipped' || r.outcome === 'failed' ? cell(`${r.reason ?? r.error?.code}: ${oneLine(r.message ?? r.error?.message ?? '')}`, 90)
      : secretNames(r.plan).join(', '),
  ]))];
  for (const r of rows) for (const w of r.plan.warnings) lines.push(safe(`note: ${r.plan.name}: ${oneLine(w)}`));
  const adding = rows.filter((r) => r.outcome === 'would_add').length;
  if (!yes) lines.push(adding ? `nothing changed; run again with --yes to add ${adding} server(s)` : 'nothing to add');
  return lines.join('\n');
}

/** Asks (once per input id) for the values the rows to add need; a row whose input cannot be asked for is skipped. */
async function fillInputs(rows: Row[], inputs: Map<string, { description: string; password: boolean }>): Promise<void> {
  const values = new Map<string, string>();
  for (const r of rows) {
    if (r.outcome !== 'would_add' || !r.plan.inputs.length) continue;
    if (!process.stdin.isTTY) {
      const ids = r.plan.inputs.map((i) => i.id).join(', ');
      Object.assign(r, { outcome: 'skipped', reason: 'needs_input', message: `needs ${ids}: run on a terminal to type it` });
      continue;
    }
    for (const i of r.plan.inputs) {
      if (!values.has(i.id)) {
        const d = inputs.get(i.id)!;
        // The question quotes the file (its input's description): shown, not obeyed, like everything else it holds.
        const v = await ask(safe(oneLine(`${d.description} (${i.id}, for ${r.plan.name}): `)) + ' ', d.password);
        if (!v) throw new CliError('ALBEDO_INVALID_ARGUMENT', `no value typed for ${i.id}`, EXIT.usage);
        values.set(i.id, v);
      }
      const v = values.get(i.id)!;
      const s = r.plan.secrets;
      if (i.target.kind === 'env') setOwn(s.env ??= dict(), i.target.name, v);
      else if (i.target.kind === 'bearer') s.bearer = v;
      else s.header = { name: i.target.name, value: v };
    }
  }
}

export async function runImport(file: string | undefined, o: ImportOptions): Promise<void> {
  const read = readSource(o.from as Source, file);
  const ctx = { dialect: read.dialect, workspace: read.workspace };
  const client = new Client();
  const existing = new Set<string>(((await client.call('GET', '/v1/mcp/servers')).body.servers as Array<{ name: string }>).map((s) => s.name));
  const rows: Row[] = read.servers.map(({ name, raw, original }) => {
    const p = plan(name, raw, { ...ctx, original });
    if (p.skip) return { plan: p, outcome: 'skipped', reason: p.skip.reason, message: p.skip.message };
    const unknown = p.inputs.find((i) => !read.inputs.has(i.id));
    if (unknown) return { plan: p, outcome: 'skipped', reason: 'unknown_input', message: `\${input:${unknown.id}} is not declared in inputs` };
    if (existing.has(name) && !o.replace) {
      return { plan: p, outcome: 'skipped', reason: 'exists', message: 'a server of this name is configured (--replace replaces it)' };
    }
    return { plan: p, outcome: 'would_add' };
  });

  if (o.yes) {
    await fillInputs(rows, read.inputs);
    for (const r of rows) {
      if (r.outcome !== 'would_add') continue;
      const body: Record<string, unknown> = { ...r.plan.entry };
      if (o.disabled) body.enabled = false;
      if (Object.keys(r.plan.secrets).length) body.secrets = r.plan.secrets;
      try {
        const { body: saved } = await client.call('PUT', `/v1/mcp/servers/${seg(r.plan.name)}`, {
          body, headers: o.replace ? {} : { 'if-none-match': '*' },
        });
        Object.assign(r, { outcome: 'added', check: saved.check });
      } catch (err) {
        if (!(err instanceof CliError) || err.exit === EXIT.unreachable) throw err;
        r.outcome = 'failed';
        r.error = { code: err.code, message: err.message, ...(err.path ? { path: err.path } : {}) };
      }
    }
  }

  const out = { from: read.from, file: read.file, added: !!o.yes, servers: rows.map(json) };
  emit(!!o.json, out, () => human(rows, `from ${read.from}: ${read.file}`, !!o.yes));
  if (rows.some((r) => r.outcome === 'failed')) process.exitCode = EXIT.failed;
}
