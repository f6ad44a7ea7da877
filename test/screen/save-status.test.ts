// The /mcp screen's line after a save (bin/screen/ui.ts resultStatus): a
// saved server whose working directory or arguments reach $ALBEDO_HOME
// (the API's `server.warnings`, issue 20 item 4) is said as a warning, not
// as a plain success; one without warnings stays a success.
import t from 'tap';
import type { SaveResult, Server } from '../../bin/screen/api.ts';
import { resultStatus } from '../../bin/screen/ui.ts';

const server = (warnings: Server['warnings']): Server => ({
  name: 'fs',
  enabled: true,
  config: { type: 'stdio', command: 'node', args: ['fs.js', '.'] },
  tools: 14,
  description: '',
  lastError: null,
  secrets: { bearer: false, header: null, env: [], oauth_client: false },
  state: 'discovered',
  auth: null,
  warnings,
});
const saved = (warnings: Server['warnings'], tried = true): SaveResult => ({
  saved: true,
  created: true,
  server: server(warnings),
  check: tried ? { tried: true, result: 'connected' } : { tried: false, reason: 'disabled' },
});

t.test('a save that exposes the home is a warning; a clean one is a success', async (t) => {
  const warned = [
    { path: ['cwd'], message: 'the working directory holds $ALBEDO_HOME' },
    { path: ['args', 1], message: '"." holds it' },
  ];
  t.equal(resultStatus('fs', saved([])).tone, 'ok');
  t.equal(resultStatus('fs', saved(warned)).tone, 'warn', 'connected, but exposed');
  t.equal(resultStatus('fs', saved(undefined)).tone, 'ok', 'an older daemon says nothing');
  t.equal(resultStatus('fs', saved([], false)).tone, 'off');
  t.equal(resultStatus('fs', saved(warned, false)).tone, 'warn', 'switched off, and exposed');
});
