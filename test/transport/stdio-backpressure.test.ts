// Bounded buffers in front of and behind a stdio server (issue 10, item 5):
// a server that stops reading makes its requests wait, bounded, and time out
// (`not_run` when never written) while the worker's memory stays flat; and
// the stderr tail keeps its last 4 KiB of text even with invalid UTF-8 in it.
import t from 'tap';
import { albedoFor, newTag, server, fixture, rejection } from '../helpers.ts';
import type { Albedo } from '../../api/albedo.ts';
import { MAX_OUTBOX_BYTES } from '../../services/transport/stdio-link.ts';

const MiB = 1024 * 1024;

/**
 * The worker's heap after a collection, and the process's resident memory: bytes a pipe write holds
 * (libuv copies a string it cannot write at once) are on no V8 heap, and the worker threads share the process.
 */
async function memory(a: Albedo, key: string): Promise<{ bytes: number; rss: number; connections: number }> {
  const s = await a.faults!.stats('transport', { gc: true }, { key });
  return { bytes: s.heapUsed + s.external, rss: process.memoryUsage().rss, connections: s.connections };
}

t.test('a server that stops reading: calls time out or are refused, not_run when never written, memory stays flat', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag, { transportWorkers: 1, faults: true });
  const other = await a.connect(server(tag, fixture('sdk1-server.ts')));
  const stall = await a.connect(server(tag, fixture('stdio-stall-server.ts')));
  await other.callTool('echo', { text: 'warm' });
  const base = await memory(a, other.id);
  t.equal(base.connections, 2, 'both connections live on the one worker');

  const pad = 'x'.repeat(MiB);
  const calls = 200;
  const flood = Array.from({ length: calls }, () => rejection(stall.callTool('stall', { pad }, { timeoutMs: 3_000 })));
  const outcomes = await Promise.all(flood);
  const count = (code: string, outcome: string): number => outcomes.filter((e) => e.code === code && e.outcome === outcome).length;
  const overloaded = count('ALBEDO_OVERLOADED', 'not_run');
  const withdrawn = count('ALBEDO_TIMEOUT', 'not_run');
  const written = count('ALBEDO_TIMEOUT', 'unknown');
  t.equal(
    overloaded + withdrawn + written,
    calls,
    `every call timed out or was refused (${overloaded} refused, ${withdrawn} withdrawn, ${written} written)`,
  );
  t.ok(overloaded > 0, 'the outbox is bounded: the calls past it are refused at once');
  t.ok(withdrawn > 0, 'calls that waited in the outbox time out as not_run');
  t.ok(withdrawn <= MAX_OUTBOX_BYTES / MiB, 'no more waited than the bound holds');
  // The server read the first call; the pipe took at most part of one more batch (1 MiB writes, 16 KiB high-water mark).
  t.ok(written >= 1 && written <= 4, 'only the calls handed to the pipe have an unknown outcome');

  const flooded = await memory(a, other.id);
  const over = (now: number, then: number): string => `${((now - then) / MiB).toFixed(1)} MiB more after ${calls} MiB were offered`;
  t.ok(flooded.bytes < base.bytes + 64 * MiB, `the worker's heap holds ${over(flooded.bytes, base.bytes)}`);
  t.ok(flooded.rss < base.rss + 64 * MiB, `the process holds ${over(flooded.rss, base.rss)}`);
  t.equal((await other.callTool('echo', { text: 'still here' })).content[0]!.text, 'still here', 'another connection on the worker works');

  await stall.close();
  const after = await memory(a, other.id);
  t.equal(after.connections, 1, 'the same worker, without the closed connection');
  t.ok(
    after.bytes < base.bytes + 16 * MiB,
    `back near the baseline after close (${((after.bytes - base.bytes) / MiB).toFixed(1)} MiB over)`,
  );
  t.equal((await other.callTool('echo', { text: 'after' })).content[0]!.text, 'after');
});

t.test('the stderr tail keeps the last 4 KiB of text when it has invalid UTF-8', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const lastLine = '\nthe last line of stderr';
  const c = 'c'.repeat(4095 - 2000 - 1 - lastLine.length - 1);
  // clean: the 4 KiB begin on a character; split: they begin inside "é", whose broken rest is dropped, not shown as U+FFFD.
  for (const [mode, expected] of [
    ['clean', 'b'.repeat(2001) + '\uFFFD' + c + lastLine + '\uFFFD'],
    ['split', 'b'.repeat(2000) + '\uFFFD' + c + lastLine + '\uFFFD'],
  ] as const) {
    const e = await rejection(a.connect(server(tag, fixture('stdio-stderr-server.ts'), [mode])));
    t.equal(e.code, 'ALBEDO_SERVER_EXITED', mode);
    const tail = (e.data as { stderrTail?: string } | undefined)?.stderrTail ?? '';
    t.ok(tail.endsWith('the last line of stderr\uFFFD'), `${mode}: the tail ends with the last text written`);
    t.ok(tail.length > 4000, `${mode}: ~4 KiB kept (${tail.length} characters)`);
    t.equal(tail, expected, `${mode}: exactly the last 4 KiB, invalid bytes as U+FFFD`);
  }
});
