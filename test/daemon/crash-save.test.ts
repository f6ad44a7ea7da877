// The daemon SIGKILLed during a save (issue 11, Tests): on restart
// extensions.json and creds.json are the old pair or the new pair, never
// the new entry beside the old secrets. A save that changes both files
// renames extensions.json first and creds.json second; the kill is put
// exactly between the two by holding creds.json's document lock (the
// store's own proper-lockfile protocol) from the test, so the daemon has
// renamed extensions.json and waits for the lock when it dies. Then kills
// at whatever moment a stream of saves has reached, each checked for a
// consistent pair (the journal a kill after both renames leaves:
// crash-save-journal.test.ts).
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { newTag, tempHome, until } from '../helpers.ts';
import { JOURNAL_FILE } from '../../services/settings/journal.ts';
import { srv, startDaemon } from './harness.ts';

// Five rounds of kills and restarts take two minutes beside a loaded suite.
t.setTimeout(300_000);

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

t.test('killed between the two renames: the next daemon puts extensions.json back, so both files are the old pair', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const creds = path.join(home, 'creds.json');
  const first = await startDaemon(t, home, { tag });
  t.equal((await first.call('PUT', srv('svc'), { body: version('old', 'old-secret-1x') })).status, 201);
  const before = files(home);

  const release = await lockfile.lock(creds, { lockfilePath: `${creds}.lock`, realpath: false, stale: 30_000, update: 5_000 });
  const put = first.call('PUT', srv('svc'), { body: version('new', 'new-secret-2x') }).catch((err: Error) => err);
  await until(() => readFileSync(path.join(home, 'extensions.json'), 'utf8').includes('"new"'), 60_000, 'extensions.json renamed in');
  t.ok(existsSync(path.join(home, JOURNAL_FILE)), 'the write was journaled before its first rename');
  t.equal(await first.stop('SIGKILL'), 'SIGKILL');
  await release();
  t.ok((await put) instanceof Error, 'the save in flight was cut off');
  const [ext, cr] = files(home);
  t.ok(ext!.includes('"new"') && cr!.includes('old-secret-1x'), 'on disk, as the kill left them: the new entry beside the old secrets');

  const next = await startDaemon(t, home, { tag });
  t.same(files(home), before, 'the next daemon undid the cut-off write: both files byte for byte as before it');
  t.notOk(existsSync(path.join(home, JOURNAL_FILE)), 'and the journal is gone');
  t.same((await next.call('GET', srv('svc'))).body.config.args, ['old']);
  const again = await next.call('PUT', srv('svc2'), { body: version('new', 'new-secret-2x') });
  t.equal(again.status, 201, 'and saves go on');
});

t.test('killed at whatever point a stream of saves reached: each restart finds a consistent pair', async (t) => {
  const tag = newTag();
  for (let round = 0; round < 5; round++) {
    // A home of its own per round: a daemon killed inside a creds.json write leaves its lock, which goes stale only after 30 s.
    const home = tempHome(t);
    const d = await startDaemon(t, home, { tag });
    let stop = false;
    let saved = 0;
    const saves = (async () => {
      for (let n = 1; !stop; n++) {
        const r = await d.call('PUT', srv('svc'), { body: version(`v${n}`, `s${n}-secret`) }).catch(() => null);
        if (r?.status !== 200 && r?.status !== 201) return;
        saved = n;
      }
    })();
    // Killed once a few saves went through, at whatever step the next one is.
    await until(() => saved >= 2 + round, 60_000, 'a few saves');
    t.equal(await d.stop('SIGKILL'), 'SIGKILL');
    stop = true;
    await saves;
    const next = await startDaemon(t, home, { tag });
    const entry = JSON.parse(readFileSync(path.join(home, 'extensions.json'), 'utf8')).mcp.servers.svc;
    const secret = JSON.parse(readFileSync(path.join(home, 'creds.json'), 'utf8')).mcp.svc?.secrets?.env?.K;
    t.equal(secret, `s${String(entry.args[0]).slice(1)}-secret`, `round ${round}: ${entry.args[0]} beside ${secret}`);
    t.notOk(existsSync(path.join(home, JOURNAL_FILE)), `round ${round}: no journal left`);
    await next.stop();
  }
});
