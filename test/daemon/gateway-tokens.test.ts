// Gateway tokens (issue 22, daemon/gateway-tokens.ts) over a real file:
// a minted token verifies for its gateway only, the file (0600) holds its
// SHA-256 and never the token, revoking one or all works, a malformed file
// is refused at start (ALBEDO_INVALID_CONFIG) instead of dropped, and a file
// changed by hand is read again (removed: nothing verifies; broken: nothing
// verifies and nothing is written over it).
import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GatewayTokens, TOKENS_FILE } from '../../daemon/gateway-tokens.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { tempHome } from '../helpers.ts';

t.test('mint, verify, list, revoke; the file holds digests only, mode 0600', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, TOKENS_FILE);
  const tokens = new GatewayTokens(home);
  t.same(tokens.list(), [], 'no file: no tokens');
  const a1 = tokens.mint('a');
  const a2 = tokens.mint('a');
  const b1 = tokens.mint('b');
  t.match(a1, { id: /^[0-9a-f]{8}$/, token: /^albgw_[A-Za-z0-9_-]{43}$/, created: Number });
  t.not(a1.token, a2.token);
  t.ok(tokens.verify('a', a1.token) && tokens.verify('a', a2.token) && tokens.verify('b', b1.token), 'each verifies for its gateway');
  t.notOk(tokens.verify('b', a1.token), 'a token of another gateway does not verify');
  t.notOk(tokens.verify('a', `${a1.token}x`), 'nor one altered');
  t.notOk(tokens.verify('a', ''), 'nor an empty one');

  t.equal(statSync(file).mode & 0o777, 0o600, 'the file is 0600');
  const text = readFileSync(file, 'utf8');
  for (const m of [a1, a2, b1]) {
    t.notOk(text.includes(m.token), 'no token in clear');
    t.notOk(text.includes(m.token.slice(6)), 'nor its random part');
    t.ok(text.includes(createHash('sha256').update(m.token).digest('hex')), 'its SHA-256 is there');
  }
  t.same(
    tokens.list('a').map((x) => x.id),
    [a1.id, a2.id],
  );
  t.notOk(JSON.stringify(tokens.list()).includes('albgw_'), 'list shows no token');

  const again = new GatewayTokens(home);
  t.ok(again.verify('a', a1.token), 'a new instance (a restarted daemon) reads them back');

  t.equal(tokens.revoke('a', a1.id), 1, 'one revoked');
  t.notOk(tokens.verify('a', a1.token), 'it no longer verifies');
  t.ok(tokens.verify('a', a2.token), 'the other still does');
  t.equal(tokens.revoke('a', 'ffffffff'), 0, 'an unknown id revokes nothing');
  t.equal(tokens.revoke('b', a2.id), 0, "another gateway's id revokes nothing");
  t.equal(tokens.revoke('a'), 1, 'all of a');
  t.ok(tokens.verify('b', b1.token), "b's untouched");
  t.same(
    tokens.list().map((x) => x.gateway),
    ['b'],
  );
  t.notOk(again.verify('a', a2.token), 'the other instance sees the revocation (the file changed)');
});

t.test('a malformed file is refused at start; a hand edit later is read again', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, TOKENS_FILE);
  for (const bad of ['{', '{"tokens":{}}', '{"tokens":[{"id":"x","gateway":"a","created":1,"sha256":"00"}]}', '[]']) {
    writeFileSync(file, bad, { mode: 0o600 });
    let thrown: unknown;
    try {
      new GatewayTokens(home);
    } catch (err) {
      thrown = err;
    }
    t.ok(AlbedoError.is(thrown) && thrown.code === 'ALBEDO_INVALID_CONFIG', `refused: ${bad}`);
    t.equal(readFileSync(file, 'utf8'), bad, 'and left as it was');
  }
  rmSync(file);
  const tokens = new GatewayTokens(home);
  const m = tokens.mint('a');
  writeFileSync(file, 'not json at all');
  t.notOk(tokens.verify('a', m.token), 'broken by hand: nothing verifies');
  t.throws(() => tokens.mint('a'), { code: 'ALBEDO_INVALID_CONFIG' }, 'and nothing is written over it');
  t.equal(readFileSync(file, 'utf8'), 'not json at all');
  rmSync(file);
  t.notOk(tokens.verify('a', m.token), 'removed by hand: nothing verifies');
  const n = tokens.mint('a');
  t.ok(tokens.verify('a', n.token), 'a new one works');
});
