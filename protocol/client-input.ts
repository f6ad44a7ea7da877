/**
 * Input a server asks of the client, in both eras: a legacy server sends
 * requests (elicitation/create, sampling/createMessage, roots/list) on its
 * streams; a 2026-07-28 server returns `resultType: "input_required"` with
 * the same requests embedded (MRTR, basic/patterns/mrtr), and the client
 * retries with `inputResponses`. Either way the embedder's handlers answer,
 * and only for capabilities it declared by registering them.
 */
import { z } from 'zod';

/** Each input method and the client capability that covers it. */
export const INPUT_METHODS: Readonly<Record<string, 'elicitation' | 'sampling' | 'roots'>> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/** The only methods whose result may be `input_required`. */
export const MRTR_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** A server that keeps asking is given up on after this many rounds. */
export const MAX_INPUT_ROUNDS = 16;

export const inputRequestSchema = z.looseObject({
  method: z.enum(['elicitation/create', 'sampling/createMessage', 'roots/list']),
  params: z.record(z.string(), z.unknown()).optional(),
});
export const inputRequestsSchema = z.record(z.string(), inputRequestSchema);

/** What the embedder registers; each present handler declares its capability. */
export interface ClientHandlers {
  /** Answers `elicitation/create`: `{ action: 'accept', content }`, `{ action: 'decline' }` or `{ action: 'cancel' }`. */
  elicitation?: (
    params: Record<string, unknown>,
    ctx: { connection: string; signal: AbortSignal },
  ) => Promise<Record<string, unknown>> | Record<string, unknown>;
  /** Answers `sampling/createMessage` with a CreateMessageResult. */
  sampling?: (
    params: Record<string, unknown>,
    ctx: { connection: string; signal: AbortSignal },
  ) => Promise<Record<string, unknown>> | Record<string, unknown>;
  /** Answers `roots/list`: `{ roots: [{ uri, name? }] }`. */
  roots?: (
    params: Record<string, unknown>,
    ctx: { connection: string; signal: AbortSignal },
  ) => Promise<Record<string, unknown>> | Record<string, unknown>;
}

/** The capabilities a set of handlers declares (nothing for none, as the daemon runs by default). */
export function capabilitiesFor(h: ClientHandlers | undefined): Record<string, unknown> {
  const caps: Record<string, unknown> = {};
  if (h?.elicitation) caps.elicitation = { form: {} };
  if (h?.sampling) caps.sampling = {};
  if (h?.roots) caps.roots = {};
  return caps;
}
