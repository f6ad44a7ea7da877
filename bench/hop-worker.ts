// The floor under the kernel hop (bench/hop.ts): a worker that answers every
// call envelope with a reply envelope of the kernel's shape
// (protocol/services/envelope.ts), and does nothing else. One persistent
// listener, so no per-call ref/unref of the port is measured.
import { parentPort } from 'node:worker_threads';

interface Call {
  kind: 'call';
  id: number;
  inc: number;
  method: string;
  params: unknown;
  deadline: number;
}

const port = parentPort!;
port.on('message', (m: Call) => {
  port.postMessage({ kind: 'reply', id: m.id, inc: m.inc, ok: true, value: m.params });
});
