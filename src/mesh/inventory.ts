/**
 * The mesh inventory (docs/mesh-rotation.md): machines, providers and consumers, and the pairs they
 * make. Validated whole before anything is resolved, because a rotation planned from a
 * half-understood inventory is exactly how a holder goes unnamed and keeps a dead password.
 *
 * ssh machines: `address` is `host`, `user@host`, `host:port`, `user@host:port` or
 * `user@[v6]:port`; the fields `user`, `port`, `identity`, `known_hosts`,
 * `strict_host_key_checking` (yes | no | accept-new), `config` (an ssh_config file; /dev/null
 * ignores the operator's), `connect_timeout` (seconds) and `max_sessions` (the host's sshd
 * MaxSessions: sessions kept on one shared connection, default 10) may be set per machine or once under a
 * top-level `ssh:`; per machine wins, then the address, then `ssh:`. Relative paths are relative
 * to the inventory file. Any machine may set its own `mesh_dir`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CORE_SCHEMA, load as loadYaml } from 'js-yaml';
import { z } from 'zod';
import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import { deriveRoleName, roleNameProblem } from './role-name.js';
import { alternatingRoleProblem, LOGIN_SLOTS, loginRole, type CredentialMode } from './alternating.js';
import { errorCode } from '../fs/system-error.js';

export const DEFAULT_MESH_DIR = '/var/lib/baton/mesh';

/** Names become path components on every holder: a closed alphabet keeps them from being paths. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const nameField = z.string().regex(NAME, 'letters, digits, ".", "_" or "-" (not first), at most 63');

const SshOptions = z
  .object({
    user: z.string().min(1).optional(),
    port: z.number().int().min(1).max(65535).optional(),
    identity: z.string().min(1).optional(),
    known_hosts: z.string().min(1).optional(),
    strict_host_key_checking: z.enum(['yes', 'no', 'accept-new']).optional(),
    config: z.string().min(1).optional(),
    connect_timeout: z.number().int().min(1).max(120).optional(),
    /** The host's sshd MaxSessions: sessions baton keeps on one shared connection (default 10). */
    max_sessions: z.number().int().min(1).max(1000).optional(),
  })
  .strict();

const MachineSchema = SshOptions.extend({
  name: nameField,
  address: z.string().min(1),
  transport: z.enum(['ssh', 'local']),
  mesh_dir: z.string().min(1).optional(),
}).strict();

const HostField = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9.:_-]{0,252}$/, 'a host name or an IP address');

/**
 * The address a provider's consumers use, as they use it: tried from each consumer's machine.
 * `pooler:` instead of `host:` — its consumers connect through that pooler (its `listen:`).
 */
const ConnectSchema = z
  .object({
    host: HostField.optional(),
    port: z.number().int().min(1).max(65535).optional(),
    pooler: nameField.optional(),
    database: z.string().min(1).max(63).default('postgres'),
  })
  .strict();

/**
 * A connection pooler in front of providers (docs/inventory.md, "Poolers"): a holder of its
 * logins' verifiers. `auth_file:` (the file pgbouncer reads them from) or `auth_query: true`
 * (pgbouncer asks PostgreSQL for each login's verifier): exactly one.
 */
const PoolerSchema = z
  .object({
    name: nameField,
    machine: z.string().min(1),
    kind: z.literal('pgbouncer'),
    serves: z.array(z.string().min(1)).min(1),
    /** Where the consumers reach it (pgbouncer's listen_addr / listen_port). */
    listen: z.object({ host: HostField, port: z.number().int().min(1).max(65535).default(6432) }).strict(),
    auth_file: z.string().min(1).optional(),
    auth_query: z.literal(true).optional(),
    /** Its admin console (the `pgbouncer` database): where RELOAD is sent, from the pooler's machine. */
    admin: z
      .object({
        user: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'a role name'),
        host: z.string().min(1).optional(),
        port: z.number().int().min(1).max(65535).optional(),
        /** A 0600 file on THIS host with the admin user's password: baton sends RELOAD itself for a pooler on another machine than its provider. */
        password_file: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** `single` (the default): one login role per pair; `alternating`: a group and two logins that take turns. */
const CredentialField = z.enum(['single', 'alternating']).optional();

const ProviderSchema = z
  .object({
    name: nameField,
    machine: z.string().min(1),
    kind: z.literal('postgres'),
    credential: CredentialField,
    // app-truth: where this provider's consumers connect (test-login.ts tries the new credential there).
    connect: ConnectSchema.optional(),
  })
  .strict();

const ConsumerSchema = z
  .object({
    name: nameField,
    machine: z.string().min(1),
    uses: z.array(z.string().min(1)).min(1),
    role: z.string().min(1).optional(),
    credential: CredentialField,
    // How its app picks up a new password (app-reads.ts): said, never assumed; a rotation refuses without it.
    reads: z.enum(['each-connection', 'once']).optional(),
    // app-truth: run on the consumer's machine after its end is committed (reload.ts).
    reload: z.string().min(1).max(4096).optional(),
    reload_timeout: z.number().positive().max(3600).optional(),
  })
  .strict();

const InventorySchema = z
  .object({
    /** The mesh's name in a shared journal (mesh-identity.ts); derived when absent. */
    id: nameField.optional(),
    mesh_dir: z.string().min(1).optional(),
    ssh: SshOptions.optional(),
    machines: z.array(MachineSchema).min(1),
    providers: z.array(ProviderSchema).default([]),
    consumers: z.array(ConsumerSchema).default([]),
    poolers: z.array(PoolerSchema).default([]),
  })
  .strict();

/** How to reach a machine over ssh; every field has already been merged with the `ssh:` defaults. */
export interface SshTarget {
  readonly host: string;
  readonly user: string | undefined;
  readonly port: number | undefined;
  readonly identity: string | undefined;
  readonly knownHosts: string | undefined;
  readonly strictHostKeyChecking: 'yes' | 'no' | 'accept-new' | undefined;
  readonly config: string | undefined;
  readonly connectTimeout: number;
  /** The host's sshd MaxSessions (`max_sessions`); unset: sshd's default, 10. */
  readonly maxSessions?: number;
}

export type Machine =
  | {
      readonly name: string;
      readonly transport: 'ssh';
      readonly address: string;
      readonly meshDir: string;
      readonly ssh: SshTarget;
    }
  /** `root` is the absolute directory that plays the machine's `/`. */
  | {
      readonly name: string;
      readonly transport: 'local';
      readonly address: string;
      readonly meshDir: string;
      readonly root: string;
    };

export interface Provider {
  readonly name: string;
  readonly machine: string;
  readonly kind: 'postgres';
  /** The mode for every consumer of this provider that does not set its own. */
  readonly credential: CredentialMode | undefined;
  /** Where its consumers connect (`connect:`): a new credential is tried there before a consumer moves. */
  readonly connect?: ProviderConnect;
}

export interface ProviderConnect {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  /** `connect: { pooler: … }`: the pooler the consumers connect through (host and port are its `listen:`). */
  readonly pooler?: string;
}

/**
 * A pooler (`poolers:`): a holder of the logins of every pair of the providers it serves. With
 * `authFile` it keeps their verifiers in that file; with `authQuery` it asks PostgreSQL for each
 * login's verifier as the login happens (docs/inventory.md, "Poolers").
 */
export interface Pooler {
  readonly name: string;
  readonly machine: string;
  readonly kind: 'pgbouncer';
  readonly serves: readonly string[];
  readonly listen: { readonly host: string; readonly port: number };
  readonly auth: { readonly mode: 'auth_file'; readonly file: string } | { readonly mode: 'auth_query' };
  /** Its admin console, reached from the pooler's machine (host and port default to `listen:`). */
  readonly admin?: {
    readonly user: string;
    readonly host: string;
    readonly port: number;
    /** `password_file:` — on this controller's host, 0600 (pooler-remote.ts reads it for RELOAD). */
    readonly passwordFile?: string;
  };
}

/** A consumer's `reload:`: a shell command run on its machine once its end is committed. */
export interface ConsumerReload {
  readonly command: string;
  readonly timeoutMs: number;
}

/** `reload_timeout:` when the inventory gives none, in seconds. */
export const DEFAULT_RELOAD_TIMEOUT_S = 30;

export interface Consumer {
  readonly name: string;
  readonly machine: string;
  readonly uses: readonly string[];
  readonly role: string | undefined;
  /** As written; the pair's mode is this, else its provider's, else `single`. */
  readonly credential: CredentialMode | undefined;
  /** `reads:` as written: whether its app re-reads its file for each connection or once (app-reads.ts). */
  readonly reads?: ConsumerReads;
  readonly reload?: ConsumerReload;
}

/** How a consumer's app takes its file: for every new connection, or once (then a reload or an alternating pair). */
export type ConsumerReads = 'each-connection' | 'once';

/** One (provider, consumer) link, with its own role and its own credential. */
export interface Pair {
  readonly provider: string;
  readonly consumer: string;
  readonly role: string;
  readonly providerMachine: string;
  readonly consumerMachine: string;
  /** `alternating`: `role` is a NOLOGIN group and the consumer logs in as `role_a` or `role_b` (alternating.ts). */
  readonly credential: CredentialMode;
}

export interface Inventory {
  /** The file it was read from (named in every error about it). */
  readonly source: string;
  /** `id:` as written, if any (meshIdentity derives one otherwise). */
  readonly id?: string;
  readonly meshDir: string;
  readonly machines: readonly Machine[];
  readonly providers: readonly Provider[];
  readonly consumers: readonly Consumer[];
  readonly pairs: readonly Pair[];
  /** `poolers:`; empty when the inventory lists none. */
  readonly poolers: readonly Pooler[];
}

export function pairKey(pair: Pick<Pair, 'provider' | 'consumer'>): string {
  return `${pair.provider}:${pair.consumer}`;
}

/** The inventory's entries by name (the first of a name, as a linear search would find it). */
export interface InventoryIndex {
  readonly machines: ReadonlyMap<string, Machine>;
  readonly providers: ReadonlyMap<string, Provider>;
  readonly consumers: ReadonlyMap<string, Consumer>;
}

const indexes = new WeakMap<Inventory, InventoryIndex>();

function byName<T extends { readonly name: string }>(items: readonly T[]): ReadonlyMap<string, T> {
  const out = new Map<string, T>();
  for (const item of items) if (!out.has(item.name)) out.set(item.name, item);
  return out;
}

/**
 * Built once per inventory (an inventory is never mutated): planning looks a machine up four
 * times per pair, and a linear search there made a 10,000-pair plan quadratic.
 */
export function inventoryIndex(inventory: Inventory): InventoryIndex {
  let index = indexes.get(inventory);
  if (!index) {
    index = {
      machines: byName(inventory.machines),
      providers: byName(inventory.providers),
      consumers: byName(inventory.consumers),
    };
    indexes.set(inventory, index);
  }
  return index;
}

export function findMachine(inventory: Inventory, name: string): Machine {
  const machine = inventoryIndex(inventory).machines.get(name);
  if (!machine) throw new Error(`inventory invariant: machine ${name} was validated but is missing`);
  return machine;
}

export function loadInventory(file: string): Inventory {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new BatonError('config', {
      what: `The inventory could not be read (${errorCode(error)}).`,
      where: file,
      next: 'Pass --inventory FILE or set "inventory:" in baton.yaml.',
      changed: 'Nothing was sent.',
    });
  }
  return parseInventory(text, file);
}

/** Parses and validates; `source` names the file in errors and anchors relative paths. */
export function parseInventory(text: string, source: string): Inventory {
  // Every value from the file quoted in a refusal goes through shown(): a machine reference, a
  // path or an unknown key can hold a line break or ESC that would draw a forged line.
  const fail = (what: string, next: string): never => {
    throw new BatonError('config', { what, where: source, next, changed: 'Nothing was sent.' });
  };
  let raw: unknown;
  try {
    // js-yaml, not the config file's `yaml`: an inventory of 10,000 pairs parses ~10× faster
    // (npm run bench, "inventory"), and mesh commands parse it before they can say anything.
    // The core schema reads what YAML 1.2 reads: no dates, no `yes` as true.
    raw = loadYaml(text, { schema: CORE_SCHEMA });
  } catch (error) {
    return fail(
      `The inventory is not valid YAML: ${shown((error as Error).message.split('\n')[0] ?? '')}`,
      'Fix the syntax.',
    );
  }
  const parsed = InventorySchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = describePath(raw, issue.path);
    const what =
      issue.code === 'unrecognized_keys'
        ? `Unknown field "${issue.keys.map((k) => shown(k)).join('", "')}" in ${at}.`
        : `${at} is invalid: ${shown(issue.message)}.`;
    return fail(
      what,
      'docs/inventory.md shows the format: mesh_dir, machines, providers, consumers, poolers.',
    );
  }
  const data = parsed.data;
  const base = path.dirname(path.resolve(source));
  const resolvePath = (p: string | undefined) => (p === undefined ? undefined : path.resolve(base, p));
  const meshDir = data.mesh_dir ?? DEFAULT_MESH_DIR;
  if (!path.isAbsolute(meshDir))
    fail(
      `mesh_dir "${shown(meshDir)}" is not an absolute path.`,
      'mesh_dir is a path on each machine: make it absolute.',
    );

  // One set of names per kind, checked as each entry is read: an inventory of 10,000 pairs is
  // read before every mesh command says anything (npm run bench, "Inventory").
  const seen = {
    machine: new Set<string>(),
    provider: new Set<string>(),
    consumer: new Set<string>(),
    pooler: new Set<string>(),
  };
  const unique = (kind: keyof typeof seen, name: string) => {
    if (seen[kind].has(name))
      fail(
        `Duplicate ${kind} name "${name}".`,
        `Every ${kind} needs its own name; rename or remove one of them.`,
      );
    seen[kind].add(name);
  };

  const machines: Machine[] = data.machines.map((m) => {
    unique('machine', m.name);
    const machineMeshDir = m.mesh_dir ?? meshDir;
    if (!path.isAbsolute(machineMeshDir))
      fail(
        `machine "${m.name}": mesh_dir "${shown(machineMeshDir)}" is not an absolute path.`,
        'Make it absolute.',
      );
    if (m.transport === 'local') {
      return {
        name: m.name,
        transport: 'local',
        address: m.address,
        meshDir: machineMeshDir,
        root: path.resolve(base, m.address),
      };
    }
    const address = parseSshAddress(m.address);
    if (typeof address === 'string') {
      return fail(
        `machine "${m.name}": address "${shown(m.address)}" ${address}.`,
        'Use host, user@host, host:port or user@[v6]:port.',
      );
    }
    const defaults = data.ssh ?? {};
    const ssh: SshTarget = {
      host: address.host,
      user: m.user ?? address.user ?? defaults.user,
      port: m.port ?? address.port ?? defaults.port,
      identity: resolvePath(m.identity ?? defaults.identity),
      knownHosts: resolvePath(m.known_hosts ?? defaults.known_hosts),
      strictHostKeyChecking: m.strict_host_key_checking ?? defaults.strict_host_key_checking,
      config: resolvePath(m.config ?? defaults.config),
      connectTimeout: m.connect_timeout ?? defaults.connect_timeout ?? 5,
      ...(m.max_sessions !== undefined || defaults.max_sessions !== undefined
        ? { maxSessions: m.max_sessions ?? defaults.max_sessions }
        : {}),
    };
    return { name: m.name, transport: 'ssh', address: m.address, meshDir: machineMeshDir, ssh };
  });
  const knownMachine = (who: string, machine: string) => {
    if (!seen.machine.has(machine)) {
      fail(
        `${who} is on machine "${shown(machine)}", which the inventory does not list.`,
        `Add it under machines:, or use one of: ${[...seen.machine].join(', ')}.`,
      );
    }
  };

  for (const p of data.providers) {
    unique('provider', p.name);
    knownMachine(`provider "${p.name}"`, p.machine);
  }
  const poolers = data.poolers.map((p) => parsePooler(p, fail, seen, knownMachine, resolvePath));
  const providers: Provider[] = data.providers.map((p) => {
    const connect = p.connect ? providerConnect(p.name, p.connect, poolers, fail) : undefined;
    return {
      name: p.name,
      machine: p.machine,
      kind: p.kind,
      credential: p.credential,
      ...(connect ? { connect } : {}),
    };
  });
  const providerByName = new Map(providers.map((p) => [p.name, p]));

  const roleOf = new Map<string, string>();
  const consumers: Consumer[] = data.consumers.map((c) => {
    unique('consumer', c.name);
    knownMachine(`consumer "${c.name}"`, c.machine);
    for (const used of c.uses) {
      if (!providerByName.has(used)) {
        fail(
          `consumer "${c.name}" uses provider "${shown(used)}", which the inventory does not list.`,
          `Add it under providers:, or use one of: ${[...providerByName.keys()].join(', ') || '(none listed)'}.`,
        );
      }
    }
    if (c.uses.length > 1 && new Set(c.uses).size !== c.uses.length)
      fail(`consumer "${c.name}" lists a provider twice in uses:.`, 'List each provider once.');
    const role = c.role ?? deriveRoleName(c.name);
    const problem = roleNameProblem(role);
    if (problem) {
      fail(
        `consumer "${c.name}": role name "${shown(role)}" is ${problem}.`,
        c.role ? 'Choose another role: name.' : 'Set an explicit role: for this consumer.',
      );
    }
    roleOf.set(c.name, role);
    if (c.reload_timeout !== undefined && c.reload === undefined)
      fail(
        `consumer "${c.name}" sets reload_timeout: without reload:.`,
        'Add reload:, or remove reload_timeout:.',
      );
    return {
      name: c.name,
      machine: c.machine,
      uses: c.uses,
      role: c.role,
      credential: c.credential,
      ...(c.reads !== undefined ? { reads: c.reads } : {}),
      ...(c.reload !== undefined
        ? {
            reload: {
              command: c.reload,
              timeoutMs: Math.round((c.reload_timeout ?? DEFAULT_RELOAD_TIMEOUT_S) * 1000),
            },
          }
        : {}),
    };
  });

  const pairs: Pair[] = [];
  // Every role name a pair makes on its provider — its role, and for an alternating pair its
  // two logins too — belongs to that pair alone: two pairs sharing a login would rotate each
  // other's password.
  const roleOwner = new Map<string, { readonly consumer: string; readonly what: string }>();
  const claim = (provider: string, name: string, consumer: string, what: string) => {
    const owner = roleOwner.get(`${provider}\0${name}`);
    if (owner !== undefined && owner.consumer !== consumer) {
      fail(
        `consumers "${owner.consumer}" and "${consumer}" both map to role "${shown(name)}" on provider "${provider}"${owner.what || what}.`,
        'Every pair needs its own role names: set an explicit role: on one of them.',
      );
    }
    roleOwner.set(`${provider}\0${name}`, { consumer, what });
  };
  for (const c of consumers) {
    const role = roleOf.get(c.name)!;
    for (const used of c.uses) {
      const provider = providerByName.get(used)!;
      const credential: CredentialMode = c.credential ?? provider.credential ?? 'single';
      if (credential === 'alternating') {
        const problem = alternatingRoleProblem(role);
        if (problem) {
          fail(
            `consumer "${c.name}" (credential: alternating, provider "${used}"): role name "${shown(role)}" is ${problem}.`,
            'Set a shorter role: for this consumer, or leave it on credential: single.',
          );
        }
      }
      claim(used, role, c.name, '');
      if (credential === 'alternating')
        for (const slot of LOGIN_SLOTS)
          claim(
            used,
            loginRole(role, slot),
            c.name,
            ` (an alternating login of "${role}", consumer "${c.name}")`,
          );
      pairs.push({
        provider: used,
        consumer: c.name,
        role,
        providerMachine: provider.machine,
        consumerMachine: c.machine,
        credential,
      });
    }
  }
  return {
    source,
    ...(data.id ? { id: data.id } : {}),
    meshDir,
    machines,
    providers,
    consumers,
    pairs,
    poolers,
  };
}

type Fail = (what: string, next: string) => never;

/** One `poolers:` entry, checked against the machines and providers (every refusal names the pooler). */
function parsePooler(
  p: z.infer<typeof PoolerSchema>,
  fail: Fail,
  seen: { readonly pooler: Set<string>; readonly provider: ReadonlySet<string> },
  knownMachine: (who: string, machine: string) => void,
  /** A path on this host, relative to the inventory's directory. */
  resolvePath: (p: string | undefined) => string | undefined,
): Pooler {
  if (seen.pooler.has(p.name))
    fail(
      `Duplicate pooler name "${p.name}".`,
      'Every pooler needs its own name; rename or remove one of them.',
    );
  seen.pooler.add(p.name);
  knownMachine(`pooler "${p.name}"`, p.machine);
  for (const served of p.serves)
    if (!seen.provider.has(served))
      fail(
        `pooler "${p.name}" serves provider "${shown(served)}", which the inventory does not list.`,
        `List it under providers:, or use one of: ${[...seen.provider].join(', ') || '(none listed)'}.`,
      );
  if ((p.auth_file === undefined) === (p.auth_query === undefined))
    fail(
      `pooler "${p.name}" sets ${p.auth_file === undefined ? 'neither auth_file: nor auth_query:' : 'both auth_file: and auth_query:'}.`,
      "Say where pgbouncer finds each login's verifier: auth_file: <its path on the pooler's machine> (its auth_file setting), or auth_query: true (its auth_query setting).",
    );
  if (p.auth_file !== undefined && !path.posix.isAbsolute(p.auth_file))
    fail(
      `pooler "${p.name}": auth_file "${shown(p.auth_file)}" is not an absolute path.`,
      "Give the auth_file's absolute path on the pooler's machine, as pgbouncer.ini's auth_file says it.",
    );
  return {
    name: p.name,
    machine: p.machine,
    kind: p.kind,
    serves: p.serves,
    listen: p.listen,
    auth: p.auth_file !== undefined ? { mode: 'auth_file', file: p.auth_file } : { mode: 'auth_query' },
    ...(p.admin
      ? {
          admin: {
            user: p.admin.user,
            host: p.admin.host ?? p.listen.host,
            port: p.admin.port ?? p.listen.port,
            ...(p.admin.password_file === undefined
              ? {}
              : { passwordFile: resolvePath(p.admin.password_file) }),
          },
        }
      : {}),
  };
}

/** A provider's `connect:`: an address, or a pooler that serves it (then its `listen:` is the address). */
function providerConnect(
  provider: string,
  connect: z.infer<typeof ConnectSchema>,
  poolers: readonly Pooler[],
  fail: Fail,
): ProviderConnect {
  if (connect.pooler === undefined) {
    if (connect.host === undefined)
      return fail(
        `provider "${provider}": connect: names neither host: nor pooler:.`,
        'Give the address its consumers connect to (host:, port:), or the pooler they connect through (pooler:).',
      );
    return { host: connect.host, port: connect.port ?? 5432, database: connect.database };
  }
  if (connect.host !== undefined || connect.port !== undefined)
    fail(
      `provider "${provider}": connect: names both pooler: and an address.`,
      "With pooler: the address is the pooler's listen:; remove host: and port:.",
    );
  const pooler = poolers.find((p) => p.name === connect.pooler);
  if (!pooler)
    return fail(
      `provider "${provider}": connect: names pooler "${shown(connect.pooler)}", which the inventory does not list.`,
      `List it under poolers:, or use one of: ${poolers.map((p) => p.name).join(', ') || '(none listed)'}.`,
    );
  if (!pooler.serves.includes(provider))
    fail(
      `provider "${provider}": connect: names pooler "${pooler.name}", which does not serve it.`,
      `Add ${provider} to pooler "${pooler.name}"'s serves:, or connect to another address.`,
    );
  return {
    host: pooler.listen.host,
    port: pooler.listen.port,
    database: connect.database,
    pooler: pooler.name,
  };
}

/**
 * `[user@]host[:port]`, `[user@][v6addr][:port]`. Returns the parts, or a reason in words.
 */
export function parseSshAddress(
  address: string,
): { host: string; user: string | undefined; port: number | undefined } | string {
  const at = address.lastIndexOf('@');
  const user = at >= 0 ? address.slice(0, at) : undefined;
  const rest = at >= 0 ? address.slice(at + 1) : address;
  if (user !== undefined && !/^[A-Za-z0-9._][A-Za-z0-9._-]*$/.test(user)) return 'has an invalid user name';
  let host = rest;
  let portText: string | undefined;
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::(\d+))?$/.exec(rest);
  if (v6) {
    host = v6[1]!;
    portText = v6[2];
  } else if (rest.includes(':')) {
    const parts = rest.split(':');
    if (parts.length !== 2) return 'is ambiguous (an IPv6 address needs [brackets])';
    host = parts[0]!;
    portText = parts[1];
  }
  if (!v6 && !/^[A-Za-z0-9][A-Za-z0-9.-]*$/.test(host)) return 'does not name a host';
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return 'has a port outside 1–65535';
  }
  return { host, user, port };
}

/** `machines[2] ("db1").address` rather than `machines.2.address`. */
function describePath(raw: unknown, at: readonly PropertyKey[]): string {
  if (at.length === 0) return 'the inventory';
  let node: unknown = raw;
  const parts: string[] = [];
  for (const key of at) {
    if (typeof key === 'number') {
      node = Array.isArray(node) ? node[key] : undefined;
      const name = node && typeof node === 'object' && 'name' in node ? node.name : undefined;
      parts[parts.length - 1] += `[${key}]${typeof name === 'string' ? ` ("${shown(name)}")` : ''}`;
    } else {
      node = node && typeof node === 'object' ? (node as Record<string, unknown>)[String(key)] : undefined;
      parts.push(String(key));
    }
  }
  return parts.join('.');
}
