/**
 * The catalogue service's message map: the saved catalogues (LMDB
 * `mcp_catalogues`) and the schema normaliser per provider profile. The
 * composer calls it; nothing here carries a secret (a row holds what a
 * server advertised and the fingerprint, a digest).
 */
import { z } from 'zod';
import type { NormaliseResult, SavedCatalogue } from '../catalogue.ts';
import {
  implementationSchema,
  promptSchema,
  resourceSchema,
  resourceTemplateSchema,
  serverCapabilitiesSchema,
  toolSchema,
} from '../mcp.ts';

/** What `catalogue/put` accepts: a SavedCatalogue (unknown fields of tools and the rest pass through, as listed). */
export const savedCatalogueSchema = z.strictObject({
  server: z.string().min(1),
  fingerprint: z.string().min(1),
  era: z.enum(['modern', 'legacy']),
  protocolVersion: z.string(),
  serverInfo: implementationSchema.nullable(),
  capabilities: serverCapabilitiesSchema,
  instructions: z.string().nullable(),
  catalogue: z.strictObject({
    tools: z.array(toolSchema),
    resources: z.array(resourceSchema),
    resourceTemplates: z.array(resourceTemplateSchema),
    prompts: z.array(promptSchema),
  }),
  savedAt: z.number(),
});

/** Most schemas one `catalogue/normalise` call takes (a 5,000-tool catalogue is a tenth of it). */
export const MAX_NORMALISE_BATCH = 50_000;

/** Most saved catalogues one `catalogue/current` looks up (a session has at most a thousand servers). */
export const MAX_LOOKUPS = 10_000;

/** `catalogue/stats`: where batches ran, and the pool's threads (for tests and status screens). */
export interface CatalogueStats {
  /** The service thread's Linux thread id, or null elsewhere. */
  tid: number | null;
  /** Batches of more schemas than this run on the pool. */
  threshold: number;
  /** Batches run on the service's thread, and on the pool. */
  inThread: number;
  pooled: number;
  /** Pool chunks running or queued now. */
  running: number;
  /** Pool chunks dropped or stopped before their end: their caller gave up (deadline, cancel), or another chunk of the batch failed. */
  cancelled: number;
  /** Null until the first large batch (the pool is made lazily). */
  pool: null | {
    maxThreads: number;
    /** Pool threads alive now. */
    threads: number;
    /** Linux thread ids of the pool threads that ran a chunk and are still alive. */
    tids: number[];
  };
  /** The service thread's event-loop delay since `loopDelay: 'start'` (perf_hooks, 1 ms resolution); null when never started. */
  loopDelay: null | { maxMs: number; meanMs: number; measuring: boolean };
}

export interface CatalogueMethods {
  /**
   * The saved rows for these servers, each only when it was saved under the
   * given fingerprint (else null), in order. More than MAX_LOOKUPS servers, or
   * one that is not `{ server: string, fingerprint: string }`, is refused with
   * ALBEDO_INVALID_ARGUMENT (`not_run`, `data.path` naming it).
   */
  'catalogue/current': { params: { servers: { server: string; fingerprint: string }[] }; result: (SavedCatalogue | null)[] };
  /**
   * Saves a discovery; `changed` is false when the same discovery was
   * already saved under the same fingerprint (nothing is written then). A
   * row that is not a SavedCatalogue is refused (ALBEDO_INVALID_ARGUMENT,
   * `not_run`) and changes nothing.
   */
  'catalogue/put': { params: { row: SavedCatalogue }; result: { changed: boolean } };
  /** Forgets a server's saved row (its server was removed from the settings); a server with none is not an error. */
  'catalogue/remove': { params: { server: string }; result: Record<string, never> };
  /**
   * Normalises input schemas (untrusted server data) for a provider profile;
   * one answer per schema, in order, as the normaliser answers in-thread. An
   * unknown profile, a `schemas` that is not an array or holds more than
   * MAX_NORMALISE_BATCH, is refused with ALBEDO_INVALID_ARGUMENT (`not_run`).
   * Large batches run off the service's event loop (a piscina pool).
   */
  'catalogue/normalise': { params: { schemas: unknown[]; profile: string }; result: NormaliseResult[] };
  /** The profiles `catalogue/normalise` accepts. */
  'catalogue/profiles': { params: Record<string, never>; result: string[] };
  /**
   * Where batches ran and which pool threads are alive (introspection for
   * tests, the bench and status screens; no schema or row in it).
   * `loopDelay: 'start'` starts (or restarts) measuring the service thread's
   * event-loop delay, `'stop'` ends it; the answer holds what was measured.
   */
  'catalogue/stats': { params: { loopDelay?: 'start' | 'stop' }; result: CatalogueStats };
}

export type CatalogueEvents = Record<never, never>;
