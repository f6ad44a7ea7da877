// One start-up measurement in a fresh process (bench/startup.ts):
//   node bench/startup-child.mjs albedo|sdk SERVER_JS HOME
// imports the library, creates the client, connects to the compiled raw echo
// server SERVER_JS and makes one tools/call; prints one JSON line: the time
// from the process's start (performance.timeOrigin, before Node's own
// bootstrap) to the import done and to the first call's result, and the
// process's peak RSS (its launchers and server are other processes). It
// imports nothing else of the bench, so only the measured library is loaded;
// and it is plain JS, so the SDK client's process never loads Node's type
// stripper (Albedo's does, for its own .ts modules: a cost it really pays).
const [implName, serverJs, home] = process.argv.slice(2);
if (!serverJs || !home || (implName !== 'albedo' && implName !== 'sdk'))
  throw new Error('usage: startup-child.mjs albedo|sdk SERVER_JS HOME');
const args = [serverJs, '--era', 'modern'];
let importMs;
let firstCallMs;
let text;
if (implName === 'albedo') {
  const { createAlbedo } = await import('../index.ts');
  importMs = performance.now();
  const albedo = await createAlbedo({ home });
  const c = await albedo.connect({ command: process.execPath, args });
  const r = await c.callTool('echo', { text: 'first' });
  firstCallMs = performance.now();
  text = r.content[0]?.text;
  await albedo.close();
} else {
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  importMs = performance.now();
  const client = new Client({ name: 'bench-peer', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StdioClientTransport({ command: process.execPath, args, stderr: 'ignore' }));
  // As bench/lib.ts's peer: a host lists the catalogue on connect, as Albedo's connect does.
  await client.listTools();
  const r = await client.callTool({ name: 'echo', arguments: { text: 'first' } });
  firstCallMs = performance.now();
  text = r.content[0]?.text;
  await client.close();
}
if (text !== 'first') throw new Error(`the first call answered ${JSON.stringify(text)}`);
process.stdout.write(JSON.stringify({ importMs, firstCallMs, peakRssMb: process.resourceUsage().maxRSS / 1024 }) + '\n');
process.exit(0);
