/**
 * The kernel's wire: every message between the kernel (main thread) and a
 * service worker is one of these envelopes. `inc` is the worker's
 * incarnation; the kernel drops anything stamped with an older one.
 */
import type { SerializedError } from '../errors.ts';

/** kernel → worker: run `method` of the service; reply before `deadline` (epoch ms). */
export interface CallEnvelope {
  kind: 'call';
  id: number;
  inc: number;
  method: string;
  params: unknown;
  deadline: number;
}
/** kernel → worker: the caller gave up on call `id` (deadline, abort); abort its work. */
export interface CancelEnvelope {
  kind: 'cancel';
  id: number;
  inc: number;
}
/** worker → kernel: the answer to call `id`. */
export interface ReplyEnvelope {
  kind: 'reply';
  id: number;
  inc: number;
  ok: boolean;
  value?: unknown;
  error?: SerializedError;
}
/** worker → kernel: something happened (past tense name, e.g. 'connection/closed'). */
export interface EventEnvelope {
  kind: 'event';
  inc: number;
  name: string;
  payload: unknown;
}
/** worker → kernel: a call to another service, routed by the kernel. */
export interface OutboundCallEnvelope {
  kind: 'outbound';
  id: number;
  inc: number;
  service: string;
  method: string;
  params: unknown;
  deadline: number;
  /** Pins the call to the slot that holds this key (an actor's id), as the kernel's own `key` option. */
  key?: string;
  /** With a new key: give it a worker of its own. */
  isolate?: boolean;
}
/** worker → kernel: forget a key's placement (its actor was closed), as the kernel's `release`. */
export interface ReleaseEnvelope {
  kind: 'release';
  inc: number;
  service: string;
  key: string;
}
/** kernel → worker: an event of another service (or the kernel's) that this service subscribed to, `service:name`. */
export interface ForwardedEventEnvelope {
  kind: 'forwarded';
  inc: number;
  topic: string;
  payload: unknown;
}
/** worker → kernel: the worker gave up on outbound call `id` (its signal aborted); the kernel aborts the call it made. */
export interface OutboundCancelEnvelope {
  kind: 'outbound-cancel';
  id: number;
  inc: number;
}
/** kernel → worker: the reply to an outbound call. */
export interface OutboundReplyEnvelope {
  kind: 'outbound-reply';
  id: number;
  inc: number;
  ok: boolean;
  value?: unknown;
  error?: SerializedError;
}
/** Liveness: the kernel pings, a live event loop pongs. */
export interface PingEnvelope {
  kind: 'ping';
  seq: number;
  inc: number;
}
export interface PongEnvelope {
  kind: 'pong';
  seq: number;
  inc: number;
}
/** worker → kernel once its service module has loaded and started. */
export interface ReadyEnvelope {
  kind: 'ready';
  inc: number;
}
/** kernel → worker: stop gracefully (service `stop` hook, then exit). */
export interface StopEnvelope {
  kind: 'stop';
  inc: number;
}
/**
 * worker → kernel, just before the worker exits on a defect: an uncaught
 * exception or an unhandled rejection. `reason` becomes the lost reason.
 */
/** Why a worker was lost, as a stable word (the reason says it for people). */
export type LostCause = 'uncaught_exception' | 'unhandled_rejection' | 'unresponsive' | 'start_timeout' | 'error' | 'exit';
export interface FatalEnvelope {
  kind: 'fatal';
  inc: number;
  reason: string;
  cause: LostCause;
}
/**
 * kernel → worker: fault injection for tests. Acted on only by a worker
 * booted with `faults: true` (WorkerBoot); any other worker ignores it.
 */
export interface FaultEnvelope {
  kind: 'fault';
  inc: number;
  fault: 'crash' | 'hang';
}

export type ToWorker =
  CallEnvelope | CancelEnvelope | OutboundReplyEnvelope | PingEnvelope | StopEnvelope | FaultEnvelope | ForwardedEventEnvelope;
export type FromWorker =
  | ReplyEnvelope
  | EventEnvelope
  | OutboundCallEnvelope
  | OutboundCancelEnvelope
  | ReleaseEnvelope
  | PongEnvelope
  | ReadyEnvelope
  | FatalEnvelope;

/** What the kernel hands a worker at start (`workerData`). */
export interface WorkerBoot {
  service: string;
  module: string;
  instance: number;
  inc: number;
  options: unknown;
  /**
   * Fault injection is on (the kernel was made with `faults: true`): the
   * worker acts on `fault` envelopes and answers the test-only methods of
   * FaultMethods. Off, it ignores the one and answers the others
   * ALBEDO_NOT_FOUND, as any method its service does not have.
   */
  faults: boolean;
}

/** `worker/stats`: a worker's heap, and whatever its service's `stats` hook adds (the transport: `connections`). */
export interface WorkerStats {
  heapUsed: number;
  external: number;
  /** The process's resident set: it catches native buffers (a pipe write libuv still holds), shared by every thread. */
  rss: number;
  [extra: string]: number;
}

/**
 * The test-only methods every worker answers when fault injection is on
 * (kernel/worker-host.ts), whatever its service: reached through the fault
 * API (kernel/faults.ts `echo`, `stats`), in no service's map.
 */
export interface FaultMethods {
  /** Answers its params at once: the kernel's hop, measured and used as a liveness probe. */
  'kernel/echo': { params: unknown; result: unknown };
  /** This worker's heap; `gc`: a full collection first. */
  'worker/stats': { params: { gc?: boolean }; result: WorkerStats };
}
