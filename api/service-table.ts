/**
 * The service table: every worker service of an Albedo instance described
 * once, in one list, as an OTP supervisor's child list is: the module the
 * kernel starts, its options (built from AlbedoOptions), the services it
 * calls, when it starts, and the events it follows. A service starts after
 * what it depends on and the kernel stops it before them (ServiceSpec
 * dependsOn). Nothing starts before it is needed: the transport starts with
 * the instance, OAuth at the first sign-in, settings, catalogue and composer
 * when sessions are first used.
 *
 * `AlbedoOptions.services` replaces a service's module or adds to its
 * options; the kernel starts a replacement exactly as it starts the built-in
 * module. docs/services.md says what each service must answer.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kernel, ServiceSpec } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { Implementation } from '../protocol/mcp.ts';
import type { Topic } from '../protocol/services/maps.ts';
import { COMPOSER_TOPICS } from '../services/composer/public.ts';

/** The services of the table, in their start order. */
export const TABLE_SERVICES = ['transport', 'oauth', 'settings', 'catalogue', 'composer'] as const;
export type TableService = (typeof TABLE_SERVICES)[number];

/** When a service starts: with the instance, at the first sign-in, or when sessions are first used (`sessions.start()`). */
export type StartsAt = 'instance' | 'sign-in' | 'sessions';

/** An embedder's change to one service (AlbedoOptions.services). */
export interface ServiceOverride {
  /**
   * The module to start instead of the built-in one: a `file:` URL (as
   * `new URL('./my-catalogue.ts', import.meta.url)`) or an absolute path of
   * a file whose default export is `defineService('<name>', {...})`, the
   * same contract (protocol/services/<name>.ts).
   */
  module?: URL | string;
  /** Options laid over the ones the table builds (a shallow merge): plain data, as they cross to the worker thread. */
  options?: Record<string, unknown>;
}
export type ServiceOverrides = Partial<Record<TableService, ServiceOverride>>;

export interface ServiceEntry {
  name: TableService;
  /** Absolute path of the module the kernel starts. */
  module: string;
  /** Whether `module` is the embedder's (AlbedoOptions.services), not the built-in one. */
  replaced: boolean;
  /** The pool's size. */
  instances: number;
  options: Record<string, unknown>;
  /** The services it calls: worker services (which stop after it) and the ones on the kernel's thread (`client`, `host`). */
  dependsOn: string[];
  startsAt: StartsAt;
  /** The topics forwarded to its workers. */
  subscribe: Topic[];
}

/** What the table's options are built from (AlbedoOptions, resolved by the instance). */
export interface TableInputs {
  home: string | null;
  homeAt: string | undefined;
  transportWorkers: number;
  clientInfo: Implementation;
  /** The sessions' owner (AlbedoOptions.owner, or this instance's own). */
  owner: string;
  /** The client capabilities declared to the sessions' servers. */
  capabilities: Record<string, unknown>;
  supervision: Pick<ServiceSpec, 'restart' | 'heartbeat'> | undefined;
}

const builtIn = (rel: string): string => fileURLToPath(new URL(rel, import.meta.url));

/** The built-in table: one entry per service, in start order (each after what it depends on). */
function entries(i: TableInputs): Omit<ServiceEntry, 'replaced'>[] {
  return [
    {
      name: 'transport',
      module: builtIn('../services/transport/service.ts'),
      instances: i.transportWorkers,
      options: { clientInfo: i.clientInfo },
      dependsOn: ['client'],
      startsAt: 'instance',
      subscribe: [],
    },
    {
      name: 'oauth',
      module: builtIn('../services/oauth/service.ts'),
      instances: 1,
      options: {},
      dependsOn: ['client'],
      startsAt: 'sign-in',
      subscribe: [],
    },
    {
      name: 'settings',
      module: builtIn('../services/settings/service.ts'),
      instances: 1,
      options: { home: i.home, at: i.homeAt },
      // `save`: the saving caller's callbacks (the daemon's, daemon/writes.ts), on the kernel's thread.
      dependsOn: ['save'],
      startsAt: 'sessions',
      subscribe: [],
    },
    {
      name: 'catalogue',
      module: builtIn('../services/catalogue/service.ts'),
      instances: 1,
      options: { storePath: i.home === null ? null : `${i.home}/store` },
      dependsOn: [],
      startsAt: 'sessions',
      subscribe: [],
    },
    {
      name: 'composer',
      module: builtIn('../services/composer/service.ts'),
      instances: 1,
      options: { owner: i.owner, home: i.home, capabilities: i.capabilities },
      dependsOn: ['settings', 'catalogue', 'transport', 'host'],
      startsAt: 'sessions',
      subscribe: COMPOSER_TOPICS,
    },
  ];
}

/** The instance's services, and which of them the kernel runs so far. */
export class ServiceTable {
  readonly entries: readonly ServiceEntry[];
  #supervision: TableInputs['supervision'];
  #started = new Set<string>();

  constructor(entries: ServiceEntry[], supervision: TableInputs['supervision']) {
    this.entries = entries;
    this.#supervision = supervision;
  }

  entry(name: string): ServiceEntry | undefined {
    return this.entries.find((e) => e.name === name);
  }

  started(name: TableService): boolean {
    return this.#started.has(name);
  }

  /** Starts the services that start at `when`, each after what it depends on (a dependency not running yet starts first). Idempotent. */
  start(kernel: Kernel, when: StartsAt): void {
    for (const e of this.entries) if (e.startsAt === when) this.#start(kernel, e, new Set());
  }

  #start(kernel: Kernel, e: ServiceEntry, path: ReadonlySet<string>): void {
    if (this.#started.has(e.name) || path.has(e.name)) return;
    const inner = new Set(path).add(e.name);
    for (const dep of e.dependsOn) {
      const d = this.entry(dep);
      if (d) this.#start(kernel, d, inner);
    }
    kernel.start(this.specOf(e));
    this.#started.add(e.name);
  }

  /** The kernel's spec for an entry: what `kernel.start` is given, replaced module or not. */
  specOf(e: ServiceEntry): ServiceSpec {
    const spec: ServiceSpec = {
      name: e.name,
      module: e.module,
      instances: e.instances,
      options: e.options,
      dependsOn: e.dependsOn,
      ...this.#supervision,
    };
    if (e.subscribe.length) spec.subscribe = e.subscribe;
    return spec;
  }
}

/**
 * The table for an instance: the built-in entries with the embedder's
 * `services` laid over them. Refuses (ALBEDO_INVALID_ARGUMENT, `data.path`
 * naming the field) an unknown service, a field other than module and
 * options, a module that is not a file (a `file:` URL or an absolute path),
 * and options that are not a plain object of data.
 */
export function serviceTable(inputs: TableInputs, services: unknown): ServiceTable {
  const overrides = checkOverrides(services);
  const table = entries(inputs).map((e): ServiceEntry => {
    const o = overrides[e.name];
    return {
      ...e,
      module: o?.module ?? e.module,
      replaced: o?.module !== undefined,
      options: o?.options ? { ...e.options, ...o.options } : e.options,
    };
  });
  return new ServiceTable(table, inputs.supervision);
}

const invalid = (message: string, at: (string | number)[]): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run', data: { path: ['services', ...at] } });

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

function checkOverrides(services: unknown): { [S in TableService]?: { module?: string; options?: Record<string, unknown> } } {
  if (services === undefined) return {};
  if (!isPlainObject(services)) throw invalid('services must be an object of { module?, options? } by service name', []);
  const out: { [S in TableService]?: { module?: string; options?: Record<string, unknown> } } = {};
  for (const [name, o] of Object.entries(services)) {
    if (!(TABLE_SERVICES as readonly string[]).includes(name)) {
      throw invalid(`services.${name}: no such service; the services are ${TABLE_SERVICES.join(', ')}`, [name]);
    }
    if (o === undefined) continue;
    if (!isPlainObject(o)) throw invalid(`services.${name} must be an object { module?, options? }`, [name]);
    for (const k of Object.keys(o)) {
      if (k !== 'module' && k !== 'options')
        throw invalid(`services.${name}.${k}: unknown field; a service takes module and options`, [name, k]);
    }
    const entry: { module?: string; options?: Record<string, unknown> } = {};
    if (o.module !== undefined) entry.module = moduleFile(name, o.module);
    if (o.options !== undefined) entry.options = plainOptions(name, o.options);
    out[name as TableService] = entry;
  }
  return out;
}

/** A module as the absolute path of an existing file; anything else (another URL scheme, a relative path or a package name) is refused. */
function moduleFile(name: string, m: unknown): string {
  let file: string | undefined;
  try {
    if (m instanceof URL) file = m.protocol === 'file:' ? fileURLToPath(m) : undefined;
    else if (typeof m === 'string') file = m.startsWith('file:') ? fileURLToPath(m) : path.isAbsolute(m) ? m : undefined;
  } catch {
    file = undefined;
  }
  if (file === undefined) throw invalid(`services.${name}.module must be a file: URL or an absolute path`, [name, 'module']);
  let isFile = false;
  try {
    isFile = statSync(file).isFile();
  } catch {
    isFile = false;
  }
  if (!isFile) throw invalid(`services.${name}.module: ${file} is not a file`, [name, 'module']);
  return file;
}

/**
 * Options the table takes from the instance and that other parts of it must
 * agree with: a composer under another owner or home than the sessions API
 * restores nothing and closes nothing of its own, and a settings service on
 * another home saves where the sessions do not read.
 */
const INSTANCE_OWNED: { [S in TableService]?: readonly string[] } = {
  composer: ['owner', 'home', 'capabilities'],
  settings: ['home', 'at'],
};

/**
 * Options go to a worker thread: a plain object whose values survive a
 * structured clone (no functions). The clone is what is kept: a service
 * starts long after createAlbedo (with sessions, at a sign-in), and what the
 * embedder changes in its object meanwhile must neither reach the worker
 * unchecked nor make that start throw.
 */
function plainOptions(name: string, o: unknown): Record<string, unknown> {
  if (!isPlainObject(o)) throw invalid(`services.${name}.options must be a plain object`, [name, 'options']);
  for (const k of INSTANCE_OWNED[name as TableService] ?? []) {
    if (Object.hasOwn(o, k)) {
      const why = `services.${name}.options.${k} is the instance's own (createAlbedo's home, homeAt, owner or handlers): set it there`;
      throw invalid(why, [name, 'options', k]);
    }
  }
  try {
    return structuredClone(o);
  } catch {
    throw invalid(`services.${name}.options must be plain data that can cross to a worker thread (no functions)`, [name, 'options']);
  }
}
