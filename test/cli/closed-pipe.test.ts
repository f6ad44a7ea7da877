// A reader that stops reading (`albedo mcp add --help | head -1`): the write
// fails with EPIPE (Node ignores SIGPIPE), and the command ends quietly, as
// any writer to a pipe does — no stack trace, exit 0.
import t from 'tap';
import { spawn } from 'node:child_process';
import { NODE, ROOT } from '../helpers.ts';
import { BIN } from '../daemon/harness.ts';

t.test('help written to a pipe whose reader is gone', async (t) => {
  const child = spawn(NODE, [BIN, 'mcp', 'add', '--help'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  // Closed before the command writes (it takes far longer to start than this takes to run).
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  t.equal(code, 0, stderr);
  t.notMatch(stderr, /EPIPE|Unhandled|at /, 'no stack trace');
});
