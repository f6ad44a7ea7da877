// The daemon SIGKILLed after both renames of a save, just before it removed
// its journal (issue 11, Tests): the journal the kill leaves (the files as
// such a kill leaves them) is recognised as completed, and the write stands.
// Apart from crash-save.test.ts, whose rounds of kills take minutes on a
// loaded machine: each file has a time limit of its own.
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { JOURNAL_FILE, secretsDigest } from '../../services/settings/journal.ts';
import { srv, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const files = (home: string): [Buffer | null, Buffer | null] => [
  existsSync(path.join(home, 'extensions.json')) ? readFileSync(path.join(home, 'extensions.json')) : null,
  existsSync(path.join(home, 'creds.json')) ? readFileSync(path.join(home, 'creds.json')) : null,
];
const version = (args: string, secret: string): Record<string, unknown> => ({
  command: 'x',
  args: [args],
  enabled: false,
  secrets: { env: { K: secret } },
});

t.test('a journal left after both renames (a kill just before it was removed): the write stands', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const first = await startDaemon(t, home, { tag });
  t.equal((await first.call('PUT', srv('svc'), { body: version('old', 'old-secret-3x') })).status, 201);
  const old = readFileSync(path.join(home, 'extensions.json'));
  t.equal((await first.call('PUT', srv('svc'), { body: version('new', 'new-secret-4x') })).status, 200);
  t.equal(await first.stop('SIGKILL'), 'SIGKILL');
  const after = files(home);
  const stored = JSON.parse(after[1]!.toString()).mcp.svc.secrets;
  // What the writer had journaled for that write; its pid is the dead daemon's.
  const journal = {
    pid: first.info.pid,
    server: 'svc',
    before: old.toString('base64'),
    after: createHash('sha256').update(after[0]!).digest('hex'),
    creds: { removed: false, secrets: secretsDigest(stored), signedOut: false },
  };
  writeFileSync(path.join(home, JOURNAL_FILE), JSON.stringify(journal));
  const next = await startDaemon(t, home, { tag });
  t.same(files(home), after, 'creds.json shows the write done: both files stay the new pair');
  t.notOk(existsSync(path.join(home, JOURNAL_FILE)), 'the journal is gone');
  t.same((await next.call('GET', srv('svc'))).body.config.args, ['new']);
});
