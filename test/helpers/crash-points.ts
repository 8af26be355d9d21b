/**
 * A crash-point harness in the manner of ALICE and CrashMonkey: the file operations an
 * authority write makes are RECORDED (through a recording `node:fs/promises`), then every state
 * a crash could leave is rebuilt on disk — every prefix of the operations, and for each prefix
 * every subset of the operations not yet made durable by an fsync (an fsync of a file makes its
 * writes durable, an fsync of a directory its entries) — and read by baton's reader and by
 * billet's reading of a state dir, encoded below as data from billet's source
 * (internal/wirecert LoadOrCreateCA and ServingCA; docs/authority-on-disk.md, "billet's reading of a state dir").
 *
 * Uses only node:fs (sync) itself, so that recording never records its own work.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import type * as FsPromisesModule from 'node:fs/promises';
import path from 'node:path';
import { inspectPair } from '../../src/pki/inspect-pair.js';
import { pemDecode } from '../../src/pki/pem.js';

// ---------------------------------------------------------------------------------------
// recording

export type Op =
  | { readonly kind: 'creat'; readonly path: string; readonly inode: number; readonly mode: number }
  | { readonly kind: 'write'; readonly inode: number; readonly bytes: Uint8Array }
  | { readonly kind: 'chmod'; readonly inode: number; readonly mode: number }
  | { readonly kind: 'fsync'; readonly inode: number }
  | { readonly kind: 'fsyncdir'; readonly path: string }
  | { readonly kind: 'link'; readonly from: string; readonly to: string; readonly inode: number }
  | { readonly kind: 'unlink'; readonly path: string }
  | { readonly kind: 'rename'; readonly from: string; readonly to: string }
  | { readonly kind: 'mkdir'; readonly path: string };

interface Recording {
  readonly root: string;
  readonly ops: Op[];
  /** Which inode each live path names, as the operation saw it. */
  readonly inodes: Map<string, number>;
  next: number;
}

let recording: Recording | undefined;

/** Runs `act` while recording every file operation below `root` (paths relative to it). */
export async function record(root: string, initial: Initial, act: () => Promise<unknown>): Promise<Op[]> {
  const inodes = new Map<string, number>();
  for (const [rel, entry] of initial.entries) if (entry.type === 'file') inodes.set(rel, entry.inode);
  const current: Recording = { root, ops: [], inodes, next: initial.nextInode };
  recording = current;
  try {
    await act();
  } finally {
    recording = undefined;
  }
  return current.ops;
}

function rel(p: unknown): string | undefined {
  if (!recording || (typeof p !== 'string' && !(p instanceof URL))) return undefined;
  const abs = path.resolve(String(p));
  const r = path.relative(recording.root, abs);
  return r.startsWith('..') || path.isAbsolute(r) ? undefined : r;
}

function push(op: Op): void {
  recording?.ops.push(op);
}

type FsPromises = typeof FsPromisesModule;

/** The `node:fs/promises` a test mocks in: every call passes through, and is recorded. */
export function recordingFs(actual: FsPromises): FsPromises {
  const open: FsPromises['open'] = async (file, flags, mode) => {
    const r = rel(file);
    const existed = r !== undefined && safeExists(String(file));
    const handle = await actual.open(file, flags, mode);
    if (r === undefined) return handle;
    const creating = !existed && typeof flags === 'number' && (flags & 0o100) !== 0; // O_CREAT
    const isDir = statSync(String(file)).isDirectory();
    let inode = recording!.inodes.get(r);
    if (creating && !isDir) {
      inode = recording!.next++;
      recording!.inodes.set(r, inode);
      push({ kind: 'creat', path: r, inode, mode: typeof mode === 'number' ? mode : 0o666 });
    }
    const id = inode;
    return new Proxy(handle, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => unknown;
        if (prop === 'writeFile')
          return async (data: Uint8Array, ...rest: unknown[]) => {
            await fn.call(target, data, ...rest);
            if (id !== undefined) push({ kind: 'write', inode: id, bytes: new Uint8Array(data) });
          };
        if (prop === 'chmod')
          return async (m: number) => {
            await fn.call(target, m);
            if (id !== undefined) push({ kind: 'chmod', inode: id, mode: m });
          };
        if (prop === 'sync')
          return async () => {
            await fn.call(target);
            if (isDir) push({ kind: 'fsyncdir', path: r });
            else if (id !== undefined) push({ kind: 'fsync', inode: id });
          };
        return fn.bind(target);
      },
    });
  };
  const link: FsPromises['link'] = async (from, to) => {
    await actual.link(from, to);
    const [f, t] = [rel(from), rel(to)];
    if (f !== undefined && t !== undefined) {
      const inode = recording!.inodes.get(f)!;
      recording!.inodes.set(t, inode);
      push({ kind: 'link', from: f, to: t, inode });
    }
  };
  const unlink: FsPromises['unlink'] = async (file) => {
    await actual.unlink(file);
    const r = rel(file);
    if (r !== undefined) {
      recording!.inodes.delete(r);
      push({ kind: 'unlink', path: r });
    }
  };
  const rename: FsPromises['rename'] = async (from, to) => {
    await actual.rename(from, to);
    const [f, t] = [rel(from), rel(to)];
    if (f !== undefined && t !== undefined) {
      for (const [p, inode] of [...recording!.inodes]) {
        if (p === f || p.startsWith(`${f}/`)) {
          recording!.inodes.delete(p);
          recording!.inodes.set(t + p.slice(f.length), inode);
        }
      }
      push({ kind: 'rename', from: f, to: t });
    }
  };
  const mkdir = (async (dir: string, options?: unknown) => {
    const existed = safeIsDir(dir);
    const made = await actual.mkdir(dir, options as Parameters<FsPromises['mkdir']>[1]);
    const r = rel(dir);
    if (r !== undefined && !existed) push({ kind: 'mkdir', path: r });
    return made;
  }) as FsPromises['mkdir'];
  const wrapped = { ...actual, open, link, unlink, rename, mkdir };
  return { ...wrapped, default: wrapped } as unknown as FsPromises;
}

function safeExists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

function safeIsDir(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------
// the initial state, and the states a crash can leave

type Entry = { readonly type: 'dir' } | { readonly type: 'file'; readonly inode: number };

export interface Content {
  readonly bytes: Uint8Array;
  readonly mode: number;
}

export interface Initial {
  readonly entries: ReadonlyMap<string, Entry>;
  readonly contents: ReadonlyMap<number, Content>;
  readonly nextInode: number;
}

/** The state dir as it is before the operation (everything durable). */
export function snapshotInitial(root: string): Initial {
  const entries = new Map<string, Entry>();
  const contents = new Map<number, Content>();
  let inode = 1;
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(root, dir)).sort()) {
      const r = dir === '' ? name : `${dir}/${name}`;
      const st = lstatSync(path.join(root, r));
      if (st.isDirectory()) {
        entries.set(r, { type: 'dir' });
        walk(r);
      } else if (st.isFile()) {
        entries.set(r, { type: 'file', inode });
        contents.set(inode++, { bytes: readFileSync(path.join(root, r)), mode: st.mode & 0o777 });
      }
    }
  };
  walk('');
  return { entries, contents, nextInode: inode + 1000 };
}

const parentOf = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');

/** The directory (entries) or inode (contents) an op changes; undefined for a barrier. */
function targetOf(op: Op): string | undefined {
  switch (op.kind) {
    case 'creat':
    case 'unlink':
    case 'mkdir':
      return `dir:${parentOf(op.path)}`;
    case 'link':
      return `dir:${parentOf(op.to)}`;
    case 'rename':
      return `dir:${parentOf(op.to)}`;
    case 'write':
    case 'chmod':
      return `inode:${op.inode}`;
    case 'fsync':
    case 'fsyncdir':
      return undefined;
  }
}

/** The names an op touches: two ops on one name persist in program order. */
function namesOf(op: Op): readonly string[] {
  switch (op.kind) {
    case 'creat':
    case 'unlink':
    case 'mkdir':
      return [op.path];
    case 'link':
      return [op.to];
    case 'rename':
      return [op.from, op.to];
    case 'write':
    case 'chmod':
      return [`inode:${op.inode}`];
    case 'fsync':
    case 'fsyncdir':
      return [];
  }
}

function isBarrierFor(barrier: Op, target: string): boolean {
  return (
    (barrier.kind === 'fsync' && target === `inode:${barrier.inode}`) ||
    (barrier.kind === 'fsyncdir' && target === `dir:${barrier.path}`)
  );
}

export interface CrashState {
  /** How many operations had been issued. */
  readonly prefix: number;
  /** Which of them reached the disk. */
  readonly persisted: readonly number[];
  readonly files: ReadonlyMap<string, Content | 'dir'>;
}

/** The most operations left undurable at once that the enumeration expands (2^n subsets). */
const MAX_IN_FLIGHT = 12;

/**
 * Every state a crash can leave: for each prefix of `ops`, every subset of the operations not
 * yet covered by an fsync of their file or directory, closed under "same name, program order".
 */
export function crashStates(initial: Initial, ops: readonly Op[]): CrashState[] {
  const states: CrashState[] = [];
  for (let prefix = 0; prefix <= ops.length; prefix++) {
    const issued = ops.slice(0, prefix);
    const required: number[] = [];
    const optional: number[] = [];
    issued.forEach((op, i) => {
      const target = targetOf(op);
      if (target === undefined) return;
      const synced = issued.slice(i + 1).some((later) => isBarrierFor(later, target));
      (synced ? required : optional).push(i);
    });
    if (optional.length > MAX_IN_FLIGHT)
      throw new Error(`${optional.length} operations in flight at once: more than the harness expands`);
    for (let mask = 0; mask < 1 << optional.length; mask++) {
      const chosen = new Set(required);
      optional.forEach((index, bit) => {
        if (mask & (1 << bit)) chosen.add(index);
      });
      if (!orderedPerName(issued, chosen)) continue;
      const persisted = [...chosen].sort((a, b) => a - b);
      states.push({
        prefix,
        persisted,
        files: apply(
          initial,
          persisted.map((i) => ops[i]!),
        ),
      });
    }
  }
  return states;
}

/** A later op on a name persisted implies every earlier one on that name persisted. */
function orderedPerName(issued: readonly Op[], chosen: ReadonlySet<number>): boolean {
  const seenMissing = new Set<string>();
  for (let i = 0; i < issued.length; i++) {
    const names = namesOf(issued[i]!);
    if (names.length === 0) continue;
    if (chosen.has(i)) {
      if (names.some((n) => seenMissing.has(n))) return false;
    } else for (const n of names) seenMissing.add(n);
  }
  return true;
}

function apply(initial: Initial, ops: readonly Op[]): Map<string, Content | 'dir'> {
  const entries = new Map<string, Entry>(initial.entries);
  const contents = new Map<number, Content>(initial.contents);
  const content = (inode: number) => contents.get(inode) ?? { bytes: new Uint8Array(), mode: 0 };
  for (const op of ops) {
    switch (op.kind) {
      case 'creat':
        entries.set(op.path, { type: 'file', inode: op.inode });
        if (!contents.has(op.inode)) contents.set(op.inode, { bytes: new Uint8Array(), mode: op.mode });
        break;
      case 'write':
        contents.set(op.inode, { ...content(op.inode), bytes: op.bytes });
        break;
      case 'chmod':
        contents.set(op.inode, { ...content(op.inode), mode: op.mode });
        break;
      case 'link':
        entries.set(op.to, { type: 'file', inode: op.inode });
        break;
      case 'unlink':
        entries.delete(op.path);
        break;
      case 'mkdir':
        entries.set(op.path, { type: 'dir' });
        break;
      case 'rename':
        for (const [p, e] of [...entries]) {
          if (p === op.from || p.startsWith(`${op.from}/`)) {
            entries.delete(p);
            entries.set(op.to + p.slice(op.from.length), e);
          }
        }
        break;
      case 'fsync':
      case 'fsyncdir':
        break;
    }
  }
  const files = new Map<string, Content | 'dir'>();
  for (const [p, e] of entries) files.set(p, e.type === 'dir' ? 'dir' : content(e.inode));
  // An entry whose directory did not reach the disk is not there either.
  for (const p of [...files.keys()]) {
    for (let d = parentOf(p); d !== ''; d = parentOf(d)) if (files.get(d) !== 'dir') files.delete(p);
  }
  return files;
}

/** Writes a crash state into `root` (which must be empty), modes exactly. */
export function materialize(root: string, files: ReadonlyMap<string, Content | 'dir'>): void {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const sorted = [...files.keys()].sort();
  for (const p of sorted)
    if (files.get(p) === 'dir') mkdirSync(path.join(root, p), { recursive: true, mode: 0o700 });
  for (const p of sorted) {
    const c = files.get(p)!;
    if (c === 'dir') continue;
    writeFileSync(path.join(root, p), c.bytes);
    chmodSync(path.join(root, p), c.mode);
  }
}

/** A state's identity: the same files (names, modes, bytes) are the same state. */
export function stateKey(files: ReadonlyMap<string, Content | 'dir'>): string {
  return [...files.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([p, c]) =>
      c === 'dir' ? `${p}/` : `${p}:${c.mode.toString(8)}:${Buffer.from(c.bytes).toString('base64')}`,
    )
    .join('|');
}

// ---------------------------------------------------------------------------------------
// billet's reading of a state dir, as data

/** How billet's readPublic/readSecret find one file. */
export type BilletFile = 'read' | 'absent' | 'error';
export type BilletOutcome = 'mints' | 'fails' | 'serves-current' | 'serves-previous';

/**
 * One row: the cells it matches ('*' any), and what billet does. First match wins. From
 * internal/wirecert/wirecert.go LoadOrCreateCA (switch order kept) and rotation.go ServingCA;
 * the same table is docs/authority-on-disk.md's "billet's reading".
 */
export interface BilletRow {
  readonly step: 'LoadOrCreateCA' | 'ServingCA';
  readonly crt?: BilletFile | '*';
  readonly key?: BilletFile | '*';
  readonly marker?: 'present' | 'absent' | '*';
  readonly pair?: 'parses' | 'fails' | '*';
  readonly prevCrt?: BilletFile | '*';
  readonly prevKey?: BilletFile | '*';
  readonly prevPair?: 'parses' | 'fails' | '*';
  /** 'next' goes on to ServingCA. */
  readonly outcome: BilletOutcome | 'next';
  readonly why: string;
}

export const BILLET_TABLE: readonly BilletRow[] = [
  {
    step: 'LoadOrCreateCA',
    crt: 'read',
    key: 'read',
    pair: 'parses',
    outcome: 'next',
    why: 'loads; backfills the marker',
  },
  {
    step: 'LoadOrCreateCA',
    crt: 'read',
    key: 'read',
    pair: 'fails',
    outcome: 'fails',
    why: "parseCA: not PEM / not SEC1 / not a CA / key is not the certificate's / ErrForeignAuthority",
  },
  {
    step: 'LoadOrCreateCA',
    crt: 'absent',
    key: 'absent',
    marker: 'present',
    outcome: 'fails',
    why: 'ErrAuthorityLost',
  },
  {
    step: 'LoadOrCreateCA',
    crt: 'absent',
    key: 'absent',
    marker: 'absent',
    outcome: 'mints',
    why: 'day one: createCA (ca-previous.* and anything else in ca/ are not looked at)',
  },
  {
    step: 'LoadOrCreateCA',
    crt: 'error',
    outcome: 'fails',
    why: 'read ca.crt: symlink, not regular, over 1 MiB',
  },
  {
    step: 'LoadOrCreateCA',
    key: 'error',
    outcome: 'fails',
    why: 'read ca.key: symlink, not regular, group/other bits, over 1 MiB',
  },
  { step: 'LoadOrCreateCA', outcome: 'fails', why: 'ErrHalfInitialised: one of ca.crt and ca.key' },
  {
    step: 'ServingCA',
    prevCrt: 'absent',
    outcome: 'serves-current',
    why: 'no overlap (a ca-previous.key alone is never read)',
  },
  { step: 'ServingCA', prevCrt: 'error', outcome: 'fails', why: 'read the previous authority' },
  {
    step: 'ServingCA',
    prevCrt: 'read',
    prevKey: 'read',
    prevPair: 'parses',
    outcome: 'serves-previous',
    why: 'the overlap: presents with the previous authority',
  },
  {
    step: 'ServingCA',
    prevCrt: 'read',
    prevKey: 'read',
    prevPair: 'fails',
    outcome: 'fails',
    why: 'parseCA of the previous pair',
  },
  { step: 'ServingCA', prevCrt: 'read', outcome: 'fails', why: "read the previous authority's key" },
];

export interface BilletReading {
  readonly outcome: BilletOutcome;
  readonly why: string;
}

function billetFile(file: string, secret: boolean): BilletFile {
  let st;
  try {
    st = lstatSync(file);
  } catch {
    return 'absent';
  }
  if (st.isSymbolicLink() || !st.isFile() || st.size > 1 << 20) return 'error';
  if (secret && (st.mode & 0o077) !== 0) return 'error';
  return 'read';
}

/** billet's parseCA: PEM certificate, SEC1 "EC PRIVATE KEY", a CA, the key's, O = deployment. */
async function billetParses(certFile: string, keyFile: string, deployment: string): Promise<boolean> {
  const key = readFileSync(keyFile);
  if (!pemDecode('EC PRIVATE KEY', key)) return false; // x509.ParseECPrivateKey reads SEC1 only
  return (await inspectPair(key, readFileSync(certFile), deployment)).ok;
}

const cell = <T extends string>(want: T | '*' | undefined, have: T) =>
  want === undefined || want === '*' || want === have;

/** What billet's control plane does on start with `stateDir`, by BILLET_TABLE. */
export async function billetReads(stateDir: string, deployment: string): Promise<BilletReading> {
  const ca = path.join(stateDir, 'ca');
  const crt = billetFile(path.join(ca, 'ca.crt'), false);
  const key = billetFile(path.join(ca, 'ca.key'), true);
  const marker =
    billetFile(path.join(stateDir, 'authority-created'), false) === 'absent' ? 'absent' : 'present';
  const pair =
    crt === 'read' && key === 'read'
      ? (await billetParses(path.join(ca, 'ca.crt'), path.join(ca, 'ca.key'), deployment))
        ? 'parses'
        : 'fails'
      : 'fails';
  const load = BILLET_TABLE.find(
    (r) =>
      r.step === 'LoadOrCreateCA' &&
      cell(r.crt, crt) &&
      cell(r.key, key) &&
      cell(r.marker, marker) &&
      (r.pair === undefined || cell(r.pair, pair)),
  )!;
  if (load.outcome !== 'next') return { outcome: load.outcome, why: load.why };
  const prevCrt = billetFile(path.join(ca, 'ca-previous.crt'), false);
  const prevKey = billetFile(path.join(ca, 'ca-previous.key'), true);
  const prevPair =
    prevCrt === 'read' && prevKey === 'read'
      ? (await billetParses(path.join(ca, 'ca-previous.crt'), path.join(ca, 'ca-previous.key'), deployment))
        ? 'parses'
        : 'fails'
      : 'fails';
  const serve = BILLET_TABLE.find(
    (r) =>
      r.step === 'ServingCA' &&
      cell(r.prevCrt, prevCrt) &&
      cell(r.prevKey, prevKey) &&
      (r.prevPair === undefined || cell(r.prevPair, prevPair)),
  )!;
  return { outcome: serve.outcome as BilletOutcome, why: serve.why };
}
