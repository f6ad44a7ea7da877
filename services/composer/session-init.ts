/**
 * What a session is opened with (its choice of servers, profile, extensions and options as given; a restored one's
 * record), what it needs from its composer, and how its own choice of extensions changes while it is open
 * (`session/extensions`): the new choice is applied by a reload and kept in the options its record holds.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { describeZodError } from '../../protocol/config.ts';
import { extensionsChangeSchema, type SessionExtensions, type SessionOptions } from '../../protocol/composer.ts';
import type { SchemaCache } from '../catalogue/schema-cache.ts';
import type { Composition } from './composition.ts';
import type { OverlayRecord } from './overlay.ts';
import type { ServerChoice } from './ports.ts';
import type { ShownRecord } from './snapshot.ts';
import type { Upstream } from './upstream.ts';

/** What a session needs from its composer: the registry its transport events are dispatched through, and the shared schema answers. */
export interface SessionHooks {
  readonly schemas: SchemaCache;
  /** The composer incarnation's overlay key (overlay.ts): digests under it mean nothing after a restart. */
  readonly overlayKey: Buffer;
  register(up: Upstream): void;
  unregister(up: Upstream): void;
  closed(session: { readonly id: string }): void;
}

export interface SessionInit {
  id: string;
  choice: ServerChoice;
  profile: string;
  mcp: boolean | undefined;
  /** SessionOptions.extensions['editor-mcp'] (undefined: the settings' default). */
  editorMcp?: boolean;
  /** The options it was opened with, as given (a session record keeps them), its extensions as last changed. */
  options?: SessionOptions;
  /** A session restored by a restarted composer, from its record. */
  resume?: SessionResume;
}

/** What a session record keeps to restore a session: its generation, what it showed, the connections it held. */
export interface SessionResume {
  generation: number;
  /** viewDigest of that generation: when the restored one shows the same, the generation stays and the model is told nothing. */
  digest: string;
  shown: ShownRecord[];
  connections: ReadonlyMap<string, { id: string; fingerprint: string }>;
  /** The overlay the record names: a non-empty one is lost with the composer that held it. */
  overlay?: OverlayRecord;
}

/**
 * `init` with its extensions changed by `change` (a boolean chooses, null drops the choice, absent keeps it); the
 * options follow, so the record written after the swap keeps the choice. Bad input is ALBEDO_INVALID_ARGUMENT, not run.
 */
export function withExtensions(init: SessionInit, change: unknown): SessionInit {
  const parsed = extensionsChangeSchema.safeParse(change);
  if (!parsed.success) {
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `extensions: ${describeZodError(parsed.error)}`, { outcome: 'not_run' });
  }
  const ext: { mcp?: boolean; 'editor-mcp'?: boolean } = { ...init.options?.extensions };
  for (const key of ['mcp', 'editor-mcp'] as const) {
    const v = parsed.data[key];
    if (v === null) delete ext[key];
    else if (v !== undefined) ext[key] = v;
  }
  const { extensions: _old, ...rest } = init.options ?? {};
  const options: SessionOptions = Object.keys(ext).length ? { ...rest, extensions: ext } : rest;
  return { ...init, mcp: ext.mcp, editorMcp: ext['editor-mcp'], options };
}

/** The session's extensions as its snapshot shows them: its own choice, and what the active composition was prepared with. */
export function extensionsOf(init: Readonly<SessionInit>, comp: Composition): SessionExtensions {
  return {
    mcp: { chosen: init.mcp ?? null, effective: comp.mcp },
    'editor-mcp': { chosen: init.editorMcp ?? null, effective: comp.mcp && comp.editorMcp },
  };
}
