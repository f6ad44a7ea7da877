import t from 'tap';
import { LineDecoder, encodeFrame } from '../../protocol/framing.ts';
import { classify } from '../../protocol/jsonrpc.ts';

t.test('lines split across chunks, CRLF, blank lines', async (t) => {
  const d = new LineDecoder(1024);
  t.same(d.push(Buffer.from('{"a":1}\n{"b"')), ['{"a":1}']);
  t.same(d.push(Buffer.from(':2}\r\n\n{"c":3}\n')), ['{"b":2}', '{"c":3}']);
  t.equal(d.pending, 0);
  const multi = Buffer.from('{"t":"é"}\n');
  t.same([...d.push(multi.subarray(0, 7)), ...d.push(multi.subarray(7))], ['{"t":"é"}'], 'a UTF-8 character split across chunks survives');
});

t.test('a frame over the cap throws, with or without its newline', async (t) => {
  t.throws(() => new LineDecoder(10).push(Buffer.from('x'.repeat(11))), { code: 'ALBEDO_FRAME_TOO_LARGE' });
  t.throws(() => new LineDecoder(10).push(Buffer.from('x'.repeat(11) + '\n')), { code: 'ALBEDO_FRAME_TOO_LARGE' });
  const d = new LineDecoder(10);
  d.push(Buffer.from('x'.repeat(6)));
  t.throws(() => d.push(Buffer.from('x'.repeat(6))), { code: 'ALBEDO_FRAME_TOO_LARGE' }, 'counted across chunks');
  t.same(new LineDecoder(10).push(Buffer.from('x'.repeat(10) + '\n')), ['x'.repeat(10)], 'exactly the cap is allowed');
  t.throws(() => encodeFrame({ s: 'x'.repeat(20) }, 10), { code: 'ALBEDO_FRAME_TOO_LARGE' });
  t.equal(encodeFrame({ s: 'a\nb' }), '{"s":"a\\nb"}\n', 'newlines inside strings are escaped');
});

t.test('classify validates JSON-RPC shapes', async (t) => {
  t.equal(classify({ jsonrpc: '2.0', id: 1, method: 'x' }).kind, 'request');
  t.equal(classify({ jsonrpc: '2.0', method: 'x' }).kind, 'notification');
  t.equal(classify({ jsonrpc: '2.0', id: 1, result: {} }).kind, 'response');
  t.equal(classify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'p' } }).kind, 'response');
  t.match(classify([1]), { kind: 'invalid', reason: /batches/ });
  t.match(classify({ jsonrpc: '1.0', id: 1, method: 'x' }), { kind: 'invalid' });
  t.match(classify({ jsonrpc: '2.0', id: 1.5, result: {} }), { kind: 'invalid' });
  t.match(classify('str'), { kind: 'invalid' });
});
