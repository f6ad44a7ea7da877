// creds.json has two writers of one server's entry: the oauth worker
// (FileCredsStore.update, `mcp.<server>.oauth`) and the settings service
// (SecretsFile.withRecord, `mcp.<server>.secrets`), through one lock protocol
// in services/oauth/store.ts. Racing from two processes, neither loses the
// other's field; the file is whole JSON at every read; a broken file is never
// quoted in an error, whichever writer reads it. The store's entry
// transaction (patches of fields) behaves alike on file and in memory.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SecretsFile } from '../../services/settings/secrets.ts';
import { FileCredsStore, MemoryCredsStore, type CredsStore, type EntryTx } from '../../services/oauth/store.ts';
import { NODE, fixture, rejection, tempHome } from '../helpers.ts';

const WRITER = fixture('oauth-loop-writer.ts');
const N = 30;

t.test('a secrets write and an OAuth update of one server, racing from two processes, keep both fields', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  const url = 'https://s.example/mcp';
  writeFileSync(file, JSON.stringify({ providers: { keep: 'me' }, mcp: { other: { secrets: { bearerToken: 'other-token' } } } }), {
    mode: 0o600,
  });

  const child = spawn(NODE, [WRITER, file, 's', url, String(N)], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  // Its stdin may close first (it exits after its last round): a write then is of no interest.
  child.stdin!.on('error', () => {});
  const messages: Array<Record<string, unknown>> = [];
  const waiters = new Set<() => void>();
  const changed = (): void => {
    for (const w of [...waiters]) w();
  };
  createInterface({ input: child.stdout! }).on('line', (l) => {
    messages.push(JSON.parse(l) as Record<string, unknown>);
    changed();
  });
  child.once('exit', changed);
  const next = (pred: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = messages.find(pred);
        if (m) {
          waiters.delete(check);
          resolve(m);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          waiters.delete(check);
          reject(new Error('the writer process exited without answering'));
        }
      };
      waiters.add(check);
      check();
    });
  await next((m) => m.ready === true);

  // Round i starts on each side once the other finished round i-1: both are in flight together in every round.
  const secrets = new SecretsFile(file);
  const lost: string[] = [];
  const childDone = next((m) => 'done' in m);
  for (let i = 0; i < N; i++) {
    await next((m) => i === 0 || m.did === i - 1 || 'done' in m);
    await secrets.withRecord('s', async (tx) => {
      const cur = tx.current();
      if (i > 0 && cur?.bearerToken !== `parent-${i - 1}`) lost.push(`before parent-${i}: ${String(cur?.bearerToken)}`);
      await tx.write({ url, bearerToken: `parent-${i}` });
    });
    child.stdin!.write(`${i}\n`);
    // Lock-free, as any reader: the file is always whole (JSON.parse throws on half of one).
    JSON.parse(readFileSync(file, 'utf8'));
  }
  const done = await childDone;
  t.same(done, { done: true, lost: [] }, 'the OAuth writer never found its record changed by the secrets writer');
  t.same(lost, [], 'the secrets writer never found its secrets changed by the OAuth writer');

  const doc = JSON.parse(readFileSync(file, 'utf8'));
  t.equal(doc.mcp.s.secrets.bearerToken, `parent-${N - 1}`, 'the last secrets write is there');
  t.equal(doc.mcp.s.oauth.reason, `child-${N - 1}`, 'and the last OAuth update beside it');
  t.equal(doc.mcp.s.oauth.url, url);
  t.same(doc.mcp.other, { secrets: { bearerToken: 'other-token' } }, "another server's entry kept");
  t.same(doc.providers, { keep: 'me' }, 'other content kept');
  t.equal(statSync(file).mode & 0o777, 0o600, 'mode 0600');
  t.same(
    readdirSync(home).filter((f) => f.endsWith('.tmp')),
    [],
    'no temporary file left',
  );
  t.notOk(existsSync(`${file}.lock`), 'the document lock is released');
  t.same(readdirSync(`${file}.locks`), [], 'and every record lock');
});

t.test('a broken creds.json is never quoted in an error, by either writer', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  // JSON.parse quotes the text around a bad token in its message: the secret beside it must not reach an error.
  writeFileSync(file, '{"mcp": {"s": {"secrets": {"bearerToken": SECRET-VALUE-1}, "oauth": {"url": "https://s.example/mcp"}}}}', {
    mode: 0o600,
  });
  const store = new FileCredsStore(file);
  const errors = [
    await rejection(store.get('s', 'https://s.example/mcp')),
    await rejection(store.update('s', 'https://s.example/mcp', (cur) => ({ record: cur ?? null, value: undefined }))),
    await rejection(new SecretsFile(file).withRecord('s', (tx) => tx.write({ bearerToken: 'new' }))),
  ];
  for (const e of errors) {
    t.equal(e.code, 'ALBEDO_INVALID_CONFIG');
    t.notMatch(e.message, /SECRET/, 'the file is not quoted');
  }
  const snap = new SecretsFile(file).snapshot();
  t.ok(snap.problem, 'the snapshot names a problem');
  t.notMatch(snap.problem!, /SECRET/, 'without quoting the file');
});

t.test(
  'the entry transaction: a patch of fields, the others kept; null removes; undefined writes nothing; file and memory alike',
  async (t) => {
    const home = tempHome(t);
    const file = path.join(home, 'creds.json');
    const url = 'https://p.example/mcp';
    for (const [what, store] of [
      ['file', new FileCredsStore(file)],
      ['memory', new MemoryCredsStore()],
    ] as Array<[string, CredsStore]>) {
      const stamp0 = store.stamp();
      t.equal(await store.updateEntry('p', () => ({ patch: undefined, value: 1 })), 1, `${what}: the value is handed back`);
      t.equal(store.stamp(), stamp0, `${what}: no patch, no write`);
      t.equal(await store.readEntry('p'), undefined);
      await store.updateEntry('p', () => ({ patch: { secrets: { bearerToken: 'b1' }, extra: 1 }, value: undefined }));
      await store.update('p', url, () => ({ record: { url, state: 'needs_sign_in', updatedAt: 0 }, value: undefined }));
      t.match(
        await store.readEntry('p'),
        { secrets: { bearerToken: 'b1' }, extra: 1, oauth: { url, state: 'needs_sign_in' } },
        `${what}: an OAuth update keeps the other fields`,
      );
      await store.updateEntry('p', (cur) => ({
        patch: { extra: null, secrets: undefined, more: (cur?.extra as number) + 1 },
        value: undefined,
      }));
      t.same(
        Object.keys((await store.readEntry('p'))!).sort(),
        ['more', 'oauth', 'secrets'],
        `${what}: null removes a field, undefined leaves it`,
      );
      await store.update('p', url, () => ({ record: null, value: undefined }));
      t.equal((await store.readEntry('p'))?.oauth, undefined, `${what}: a deleted OAuth record leaves the rest`);
      t.ok((await store.readEntry('p'))?.secrets);
      // `__proto__` is a plain key, for an entry and for a field.
      const protoPatch = JSON.parse('{"__proto__": {"polluted": true}, "f": 1}') as Record<string, unknown>;
      await store.updateEntry('__proto__', () => ({ patch: protoPatch, value: undefined }));
      const proto = (await store.readEntry('__proto__'))!;
      t.ok(Object.hasOwn(proto, '__proto__') && Object.hasOwn(proto, 'f'), `${what}: own fields, even __proto__`);
      t.equal(({} as Record<string, unknown>).polluted, undefined, 'nothing reached Object.prototype');
      await store.updateEntry('__proto__', () => ({ patch: null, value: undefined }));
      t.equal(await store.readEntry('__proto__'), undefined, `${what}: null removes the whole entry`);
      // A throwing callback writes nothing; a transaction's write is refused once it has ended.
      const stamp1 = store.stamp();
      await t.rejects(
        store.updateEntry('p', () => {
          throw new Error('boom');
        }),
        /boom/,
      );
      let kept: EntryTx | undefined;
      await store.withEntry('p', async (tx) => {
        kept = tx;
      });
      t.equal((await rejection(kept!.write({ late: 1 }))).code, 'ALBEDO_INTERNAL', `${what}: no write after the transaction`);
      t.equal(store.stamp(), stamp1, `${what}: nothing was written`);
      t.equal((await store.readEntry('p'))?.late, undefined);
    }
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    t.same(Object.keys(doc.mcp), ['p'], 'on file: the removed entry is gone');
  },
);

t.test('a failing rename (fault injected) leaves creds.json as it was and no temporary file', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  const store = new FileCredsStore(file);
  await store.updateEntry('r', () => ({ patch: { secrets: { bearerToken: 'b1' } }, value: undefined }));
  const before = readFileSync(file);
  const boom = (): never => {
    throw new Error('injected');
  };
  await t.rejects(
    store.updateEntry('r', () => ({ patch: { secrets: { bearerToken: 'b2' } }, value: undefined }), { beforeRename: boom }),
    /injected/,
  );
  await t.rejects(
    new SecretsFile(file).withRecord('r', (tx) => tx.write({ bearerToken: 'b3' }), boom),
    /injected/,
  );
  t.same(readFileSync(file), before, 'byte for byte');
  t.same(
    readdirSync(home).filter((f) => f.endsWith('.tmp')),
    [],
    'no temporary file left',
  );
  t.notOk(existsSync(`${file}.lock`), 'the document lock is released');
});
