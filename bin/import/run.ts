/**
 * `albedo mcp import`: read the other host's file (sources.ts), plan each
 * server (plan.ts), compare with the daemon's servers, and show the plan;
 * with `--yes`, ask for the inputs the added servers need (on a terminal)
 * and add each through the API — each one a strict save of its own, so one
 * that cannot start is reported and the others are still added; several
 * are tried at once (`--jobs`), with a progress line on a terminal. The
 * report (report.ts) is in the file's order.
 */
import { Client } from '../client/client.ts';
import { dict, setOwn } from '../client/dict.ts';
import { CliError, EXIT, oneLine } from '../client/errors.ts';
import { seg } from '../client/http.ts';
import { emit, safe } from '../client/output.ts';
import { startProgress, type Progress } from '../client/progress.ts';
import { DEFAULT_JOBS, type ImportOptions } from './options.ts';
import { plan } from './plan.ts';
import { ask } from './prompt.ts';
import { human, json, type Row } from './report.ts';
import { readSource, type Source } from './sources.ts';

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
      if (i.target.kind === 'env') setOwn((s.env ??= dict()), i.target.name, v);
      else if (i.target.kind === 'bearer') s.bearer = v;
      else s.header = { name: i.target.name, value: v };
    }
  }
}

export async function runImport(file: string | undefined, o: ImportOptions): Promise<void> {
  const read = readSource(o.from as Source, file);
  const ctx = { dialect: read.dialect, workspace: read.workspace };
  const client = new Client();
  const existing = new Set<string>(
    ((await client.call('GET', '/v1/mcp/servers')).body.servers as Array<{ name: string }>).map((s) => s.name),
  );
  const rows: Row[] = read.servers.map(({ name, raw, original, project }) => {
    const p = plan(name, raw, { ...ctx, original, project });
    if (p.skip) return { plan: p, outcome: 'skipped', reason: p.skip.reason, message: p.skip.message };
    const unknown = p.inputs.find((i) => !read.inputs.has(i.id));
    if (unknown)
      return { plan: p, outcome: 'skipped', reason: 'unknown_input', message: `\${input:${unknown.id}} is not declared in inputs` };
    if (existing.has(name) && !o.replace) {
      return { plan: p, outcome: 'skipped', reason: 'exists', message: 'a server of this name is configured (--replace replaces it)' };
    }
    return { plan: p, outcome: 'would_add' };
  });

  if (o.yes) {
    await fillInputs(rows, read.inputs);
    await addAll(
      client,
      rows.filter((r) => r.outcome === 'would_add'),
      o,
    );
  }

  const out = { from: read.from, file: read.file, added: !!o.yes, servers: rows.map(json) };
  emit(!!o.json, out, () =>
    human(rows, `from ${read.from}: ${read.file}`, !!o.yes, process.stdout.isTTY ? process.stdout.columns : undefined),
  );
  if (rows.some((r) => r.outcome === 'failed')) process.exitCode = EXIT.failed;
}

/** Adds one row's server through the API (a strict save of its own): `added` with the try's check, or `failed` with why. */
async function add(client: Client, r: Row, o: ImportOptions): Promise<void> {
  const body: Record<string, unknown> = { ...r.plan.entry };
  if (o.disabled) body.enabled = false;
  if (Object.keys(r.plan.secrets).length) body.secrets = r.plan.secrets;
  try {
    const { body: saved } = await client.call('PUT', `/v1/mcp/servers/${seg(r.plan.name)}`, {
      body,
      headers: o.replace ? {} : { 'if-none-match': '*' },
    });
    Object.assign(r, { outcome: 'added', check: saved.check });
  } catch (err) {
    if (!(err instanceof CliError) || err.exit === EXIT.unreachable) throw err;
    r.outcome = 'failed';
    r.error = { code: err.code, message: err.message, ...(err.path ? { path: err.path } : {}) };
  }
}

/**
 * Adds the rows, at most `--jobs` at once (each server's try can take its
 * whole start-up timeout: one after another, three slow ones take three
 * times as long). Each row keeps its place: the report is in the file's
 * order whatever finished first. A failure that is not the server's (no
 * daemon) starts no more and is thrown once the running ones have ended.
 */
async function addAll(client: Client, rows: Row[], o: ImportOptions): Promise<void> {
  if (!rows.length) return;
  const running = new Set<string>();
  let next = 0;
  let done = 0;
  let fatal: { err: unknown } | undefined;
  // With --json the one document is all the command prints, even on a terminal.
  const progress: Progress = o.json ? { update() {}, stop() {} } : startProgress(status());
  function status(): string {
    const names = [...running].map((n) => oneLine(n));
    const what = o.disabled ? 'saving' : 'trying';
    return safe(`${what} ${names.length ? names.join(', ') : `${rows.length} server(s)`} (${done} of ${rows.length} done)`);
  }
  const worker = async (): Promise<void> => {
    while (!fatal && next < rows.length) {
      const r = rows[next++]!;
      running.add(r.plan.name);
      progress.update(status());
      try {
        await add(client, r, o);
      } catch (err) {
        fatal ??= { err };
      } finally {
        running.delete(r.plan.name);
        done++;
        if (running.size) progress.update(status());
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(o.jobs ?? DEFAULT_JOBS, rows.length) }, worker));
  } finally {
    progress.stop();
  }
  if (fatal) throw fatal.err;
}
