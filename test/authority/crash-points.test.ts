/**
 * EVERY CRASH POINT, BOTH READINGS. The file operations of mint, first controller, adopt (into
 * a fresh host and into a lost one), force, rotate, retire and replace are recorded; every state
 * a crash could leave (each prefix, and each subset of what fsync had not yet made durable) is
 * rebuilt on disk and read twice: by baton's reader, which must name it with a way out, and by
 * billet's reading (test/helpers/crash-points.ts, BILLET_TABLE, from billet's LoadOrCreateCA
 * and ServingCA), which must never say "day one, mint" for a dir that held or was adopting an
 * authority, nor "fails to start" where baton says "whole".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as FsPromisesModule from 'node:fs/promises';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';

type FsPromises = typeof FsPromisesModule;

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<FsPromises>();
  const { recordingFs } = await import('../helpers/crash-points.js');
  return recordingFs(actual);
});

import {
  interruptedOf,
  retireAuthority,
  rotateAuthority,
  withAuthorityLock,
  type LocalAuthority,
} from '../../src/authority/index.js';
import { readAuthority } from '../../src/authority/read-local-authority.js';
import { confirmationPrefix } from '../../src/pki/fingerprint-type.js';
import { adopt, firstController, force, look, publish, replaceUnreadable } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { checkConfirmations } from '../../src/share/confirm-binding.js';
import { syncOperation } from '../../src/operations/sync.js';
import { fixedClock, makeAuthority, TEST_DEPLOYMENT } from '../helpers/authority.js';
import {
  billetReads,
  crashStates,
  materialize,
  record,
  snapshotInitial,
  stateKey,
  type BilletReading,
  type Content,
  type Op,
} from '../helpers/crash-points.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { wirecertReads, type SeedStore, type WirecertReading } from '../helpers/billet/wirecert-rules.js';
import { billetAdopt, billetFingerprint } from '../helpers/billet/wireshare-rules.js';
import { retireOperation } from '../../src/operations/ca-retire.js';
import { caInitOperation } from '../../src/operations/ca-init.js';
import { verdictWords } from '../../src/share/verdict-words.js';
import { isNextStep, type NextStep } from '../../src/next-step.js';

const DEP = TEST_DEPLOYMENT;
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A state dir holding only ca.lock: a host that never held an authority. */
async function freshHost(): Promise<string> {
  const stateDir = path.join(tempDir('baton-crash-fresh-'), 'state');
  await withAuthorityLock(stateDir, () => Promise.resolve());
  return stateDir;
}

async function heldHost(rotated = false) {
  const made = await makeAuthority({ rotated });
  cleanups.push(made.cleanup);
  return made;
}

function share(stateDir: string, store: MemoryStore, name: string): ShareContext {
  return { stateDir, deployment: DEP, store, clock: fixedClock(), host: name, noSeal: true };
}

/** A store holding a published authority, mid-overlap when `rotated` (so adopt writes both pairs). */
async function publishedStore(rotated: boolean): Promise<MemoryStore> {
  const store = new MemoryStore();
  const source = await heldHost(rotated);
  await publish(share(source.stateDir, store, 'source'));
  return store;
}

interface Scenario {
  readonly name: string;
  /** True when the dir held an authority before the operation (or the operation installs one). */
  readonly setup: () => Promise<{
    readonly stateDir: string;
    readonly run: () => Promise<unknown>;
    /** The command the words name for a state this one cut short, run on that state's dir (adopt: `sync`; force: the same force as typed). */
    readonly resume?: (stateDir: string) => Promise<unknown>;
    /** Run `resume` on EVERY crash state, not only the half-initialised ones (force: the command as typed). */
    readonly rerunEvery?: boolean;
    /** The deployment's store, unchanged by the operation: billet b2b42c1a starts with it (Adopt first). */
    readonly store?: MemoryStore;
  }>;
}

const SCENARIOS: readonly Scenario[] = [
  {
    name: 'mint (ca init, no store)',
    setup: async () => {
      const stateDir = await freshHost();
      // The operation `baton ca init` runs, lock, freshness check and mint included.
      return { stateDir, run: () => caInitOperation({ stateDir, deployment: DEP }) };
    },
  },
  {
    name: 'first controller',
    setup: async () => {
      const stateDir = await freshHost();
      const ctx = share(stateDir, new MemoryStore(), 'first');
      return { stateDir, run: () => firstController(ctx) };
    },
  },
  {
    name: 'adopt into a fresh host (a document mid-overlap)',
    setup: async () => {
      const stateDir = await freshHost();
      const store = await publishedStore(true);
      const ctx = share(stateDir, store, 'adopter');
      return {
        stateDir,
        run: () => adopt(ctx),
        resume: (dir) => adopt(share(dir, store, 'adopter')),
        store,
      };
    },
  },
  {
    name: 'adopt into a lost host',
    setup: async () => {
      const held = await heldHost();
      rmSync(path.join(held.stateDir, 'ca'), { recursive: true });
      const store = await publishedStore(true);
      const ctx = share(held.stateDir, store, 'adopter');
      return {
        stateDir: held.stateDir,
        run: () => adopt(ctx),
        resume: (dir) => adopt(share(dir, store, 'adopter')),
        store,
      };
    },
  },
  {
    name: 'force (sync --force over a diverged host)',
    setup: async () => {
      const held = await heldHost(true);
      const store = await publishedStore(true);
      const ctx = share(held.stateDir, store, 'diverged');
      // THE SAME COMMAND AS TYPED: `sync --force --confirm <LOCAL 8>`, through the one sync
      // operation the CLI runs, with --confirm checked as it is without a terminal.
      const typed = [confirmationPrefix(held.fingerprint)];
      const rerun = async (dir: string) => {
        const before = store.snapshot();
        const result = await syncOperation(
          share(dir, store, 'diverged'),
          { force: true, confirm: typed },
          {
            confirmBound: (bindings) => Promise.resolve(checkConfirmations(bindings, typed, store.location)),
            confirmMint: () => Promise.reject(new Error('a force never mints')),
          },
        );
        expect(store.snapshot()).toEqual(before);
        return result.sentence;
      };
      return { stateDir: held.stateDir, run: () => force(ctx), resume: rerun, rerunEvery: true, store };
    },
  },
  {
    name: 'rotate',
    setup: async () => {
      const held = await heldHost();
      return { stateDir: held.stateDir, run: () => rotateAuthority(held.stateDir, DEP) };
    },
  },
  {
    name: 'retire',
    setup: async () => {
      const held = await heldHost(true);
      const confirm = confirmationPrefix(held.previous!);
      return { stateDir: held.stateDir, run: () => retireAuthority(held.stateDir, DEP, { confirm }) };
    },
  },
  {
    name: 'replace (sync --replace-unreadable)',
    setup: async () => {
      const held = await heldHost();
      const store = new MemoryStore();
      store.setDocument(new TextEncoder().encode('{"format":"baton.authority/1","damaged":'));
      const ctx = share(held.stateDir, store, 'replacer');
      return { stateDir: held.stateDir, run: () => replaceUnreadable(ctx) };
    },
  },
];

type BatonReading = 'whole' | 'fresh' | 'lost' | `interrupted ${'rotate' | 'retire'}` | `blocked ${string}`;

/** baton's name for a state, and whether it comes with a way out (a command or what to do by hand). */
function batonReads(local: LocalAuthority): {
  readonly reading: BatonReading;
  readonly wayOut: boolean;
  /** For an interrupted state: whether baton's words say billet will not start on it. */
  readonly saysBilletStops?: boolean;
} {
  switch (local.state) {
    case 'fresh':
    case 'lost':
      return { reading: local.state, wayOut: true }; // adopt (decide), or restore / first controller
    case 'blocked':
      return {
        reading: `blocked ${local.problem}`,
        wayOut: Boolean(local.error.said ?? local.error.next),
      };
    case 'whole': {
      const interrupted = interruptedOf(local);
      return interrupted
        ? {
            reading: `interrupted ${interrupted.op}`,
            wayOut: interrupted.step.args.length > 0,
            saysBilletStops: interrupted.billetStops,
          }
        : { reading: 'whole', wayOut: true };
    }
  }
}

const AUTHORITY_NAMES = /^(authority-created|ca\/ca(-previous)?\.(crt|key))$/;

interface Finding {
  readonly scenario: string;
  readonly prefix: number;
  readonly files: readonly string[];
  readonly baton: BatonReading;
  readonly billet: BilletReading;
  readonly seed: WirecertReading;
  readonly problem: string;
}

interface Checked {
  readonly states: number;
  readonly distinct: number;
  readonly readings: ReadonlyMap<string, number>;
  readonly findings: readonly Finding[];
}

/** Enumerates and reads every crash state of `ops` from `initial`. */
async function checkAll(
  scenario: string,
  initial: ReturnType<typeof snapshotInitial>,
  ops: readonly Op[],
  resume?: (stateDir: string) => Promise<unknown>,
  rerunEvery = false,
  store?: MemoryStore,
): Promise<Checked> {
  const seedStore = store && seedStoreOf(store);
  const states = crashStates(initial, ops);
  const authorityFiles = (files: ReadonlyMap<string, unknown>) =>
    [...files.keys()].filter((p) => AUTHORITY_NAMES.test(p)).sort();
  const initialFiles = new Map([...initial.entries].map(([p]) => [p, true]));
  const heldBefore = authorityFiles(initialFiles).length > 0;
  const initialKey = stateKey(crashStates(initial, [])[0]!.files);
  const seen = new Map<string, string>();
  const readings = new Map<string, number>();
  const findings: Finding[] = [];
  const work = tempDir('baton-crash-states-');
  let n = 0;
  for (const state of states) {
    const key = stateKey(state.files);
    if (seen.has(key)) continue;
    const stateDir = path.join(work, `s${n++}`);
    materialize(stateDir, state.files);
    const local = (await readAuthority(stateDir, DEP)).local;
    const baton = batonReads(local);
    const billet = await billetReads(stateDir, DEP);
    // THE SEED'S BILLET STARTS WITH THE STORE when the deployment has one: its Adopt runs first
    // and may write (InstallAuthority, O_EXCL), so it starts on a copy — which is then what a
    // billet restart left, read again by baton (the chained crash).
    let restarted: string | undefined;
    let seed: WirecertReading;
    if (seedStore) {
      restarted = path.join(work, `b${n}`);
      materialize(restarted, state.files);
      seed = await wirecertReads(restarted, DEP, { store: seedStore, install: true });
    } else seed = await wirecertReads(stateDir, DEP);
    const label = `${baton.reading} / billet ${billet.outcome} / b2b42c1a ${seed.verdict}`;
    tally(`baton ${baton.reading}`);
    tally(`later billet ${billet.outcome}`);
    tally(`b2b42c1a ${seed.verdict}`);
    seen.set(key, label);
    readings.set(label, (readings.get(label) ?? 0) + 1);
    const files = [...state.files.keys()].filter((p) => state.files.get(p) !== 'dir').sort();
    const finding = (problem: string) =>
      findings.push({ scenario, prefix: state.prefix, files, baton: baton.reading, billet, seed, problem });
    if (!baton.wayOut) finding('baton names no way out');
    // "Held or was adopting": the dir held an authority before, or this state differs from the
    // one before the operation in any authority file (the operation had begun installing).
    const adopting = key !== initialKey && authorityFiles(state.files).length > 0;
    if (billet.outcome === 'mints' && (heldBefore || adopting))
      finding('billet mints a new authority ("day one") in a dir that held or was adopting one');
    if (billet.outcome === 'fails' && baton.reading === 'whole')
      finding('billet fails to start where baton says "whole"');
    // THE SEED'S BILLET TOO: every state it will not start on is one baton names as needing
    // repair (interrupted, lost or blocked, each with its way out), never "whole".
    if (seed.verdict === 'mints' && (heldBefore || adopting))
      finding(`billet b2b42c1a mints ("day one") in a dir that held or was adopting one (${seed.rule})`);
    // With a store, "whole" is what status says: whole AND in sync with the published authority
    // (a host holding another one is a refusal, exit 3, whose ways out are force and push).
    const saysWhole =
      baton.reading === 'whole' &&
      (!store || (await look(share(stateDir, store, 'host'))).verdict.kind === 'in-sync');
    if (seed.verdict === 'refuses' && saysWhole)
      finding(`billet b2b42c1a refuses to start where baton says "whole" (${seed.rule})`);
    // RESUMABLE BY THE SAME COMMAND: a half-initialised install is finished by the `sync` its
    // words name (adopt), reaching a whole state both billet readings start on.
    if (resume && local.state === 'blocked' && local.problem === 'half-initialised') {
      const said = JSON.stringify(local.error.said ?? local.error.next);
      if (!said.includes('"sync"')) finding('the words of a half-initialised install do not name sync');
      if (
        scenario.startsWith('force') &&
        !said.includes('["sync","--force","--confirm",{"placeholder":"LOCAL 8"')
      )
        finding('the words of a force cut short do not name the same force again, as typed');
      if (scenario.startsWith('force') && !said.includes('ca.superseded-'))
        finding('the words of a force cut short do not name the ca.superseded-* it set aside');
      const resumed = path.join(work, `r${n}`);
      materialize(resumed, state.files);
      try {
        await resume(resumed);
        const after = (await readAuthority(resumed, DEP)).local;
        const seedAfter = await wirecertReads(resumed, DEP);
        const laterAfter = await billetReads(resumed, DEP);
        if (after.state !== 'whole' || interruptedOf(after) !== undefined)
          finding(`sync did not finish the install: ${after.state}`);
        else if (seedAfter.verdict !== 'starts' || laterAfter.outcome === 'fails')
          finding(`after sync, billet does not start: ${seedAfter.rule} / ${laterAfter.why}`);
        else resumedStates += 1;
      } catch (error) {
        finding(`sync refused the install it was cut short of: ${(error as Error).message}`);
      }
    }
    // NO SUGGESTED COMMAND REMOVES A PREVIOUS KEY THE PUBLISHED OVERLAP STILL CARRIES: in this
    // state, and in what a billet restart leaves of it.
    if (store)
      for (const dir of [stateDir, ...(restarted ? [restarted] : [])]) {
        const problem = await retireSuggestionProblem(dir, store);
        if (problem) finding(problem);
      }
    // A FORCE CUT SHORT AT ANY POINT, run again exactly as typed, ends whole on the published
    // authority with the old one set aside byte for byte, and changes nothing else.
    if (resume && rerunEvery) {
      const problem = await rerunEnds(work, `f${n}`, state.files, initial, resume);
      if (problem) finding(problem);
      else forceRerunsWhole += 1;
    }
    if (seed.verdict === 'refuses' && baton.saysBilletStops === false)
      finding(`baton's words say billet starts where billet b2b42c1a refuses (${seed.rule})`);
  }
  rmSync(work, { recursive: true, force: true });
  return { states: states.length, distinct: seen.size, readings, findings };
}

/**
 * Re-runs the cut-short command on a copy of `files` and says what is wrong with the result, if
 * anything: it must end whole on the published authority (both billet readings start on it);
 * exactly one ca.superseded-* must hold the ca/ the operation began with, byte for byte, with
 * its marker copy; the marker stays; and no other file the crash left may change or vanish.
 */
async function rerunEnds(
  work: string,
  name: string,
  files: ReadonlyMap<string, unknown>,
  initial: ReturnType<typeof snapshotInitial>,
  rerun: (stateDir: string) => Promise<unknown>,
): Promise<string | undefined> {
  const dir = path.join(work, name);
  materialize(dir, files as Parameters<typeof materialize>[1]);
  const before = snapshotInitial(dir);
  let said: unknown;
  try {
    said = await rerun(dir);
  } catch (error) {
    return `the same force, re-run as typed, failed: ${(error as Error).message}`;
  }
  const after = snapshotInitial(dir);
  const local = (await readAuthority(dir, DEP)).local;
  if (local.state !== 'whole' || interruptedOf(local) !== undefined)
    return `the re-run did not end whole: ${local.state}`;
  const [seedAfter, laterAfter] = [await wirecertReads(dir, DEP), await billetReads(dir, DEP)];
  if (seedAfter.verdict !== 'starts' || laterAfter.outcome === 'fails')
    return `after the re-run, billet does not start: ${seedAfter.rule} / ${laterAfter.why}`;
  const bytesAt = (snap: typeof before, p: string) => {
    const e = snap.entries.get(p);
    if (e?.type !== 'file') return e?.type;
    const c = snap.contents.get(e.inode)!;
    return `${c.mode.toString(8)}:${Buffer.from(c.bytes).toString('base64')}`;
  };
  const originalCa = [...initial.entries.keys()].filter((p) => p.startsWith('ca/'));
  const holders = [...after.entries.keys()].filter(
    (p) =>
      /^ca\.superseded-[^/.]+$/.test(p) &&
      originalCa.every((f) => bytesAt(after, `${p}${f.slice(2)}`) === bytesAt(initial, f)) &&
      [...after.entries.keys()].filter((q) => q.startsWith(`${p}/`)).length === originalCa.length,
  );
  if (holders.length !== 1)
    return `${holders.length} ca.superseded-* dirs hold the old ca/ byte for byte after the re-run (want 1)`;
  if (bytesAt(after, `${holders[0]}.authority-created`) !== bytesAt(initial, 'authority-created'))
    return 'the set-aside marker copy is not the marker';
  if (bytesAt(after, 'authority-created') !== bytesAt(initial, 'authority-created'))
    return 'the marker changed';
  for (const p of before.entries.keys()) {
    if (p === 'ca' || p.startsWith('ca/')) continue;
    if (bytesAt(after, p) !== bytesAt(before, p)) return `the re-run changed ${p}, outside ca/`;
  }
  for (const p of after.entries.keys()) {
    if (before.entries.has(p) || p === 'ca' || p.startsWith('ca/')) continue;
    if (!p.startsWith(holders[0]!)) return `the re-run left ${p}, beyond the one set-aside authority`;
  }
  if (typeof said !== 'string' || !said.includes(path.join(dir, holders[0]!)))
    return `the re-run's words do not name where the old authority went: ${String(said)}`;
  return undefined;
}

/** The published document as billet b2b42c1a's Adopt decodes it (test/helpers/billet/wireshare-rules.ts). */
function seedStoreOf(store: MemoryStore): SeedStore | undefined {
  const body = store.document?.body;
  if (!body) return undefined;
  const adopted = billetAdopt(body, DEP, undefined);
  if (adopted.kind !== 'installed')
    throw new Error(`billet would not adopt the scenario's document: ${JSON.stringify(adopted)}`);
  return { files: adopted.files, fingerprint: billetFingerprint(adopted.files['ca.crt']!) };
}

/**
 * Every command baton suggests for `dir` (status's verdict when it is not "ok", the local
 * reader's way out, `ca show`'s interrupted step): when one is `ca retire` while the published
 * document carries the very previous pair this host holds, following it — as `ca retire` with a
 * store runs it, confirmed — must refuse and change nothing on disk or in the store. Says what
 * went wrong, if anything.
 */
async function retireSuggestionProblem(dir: string, store: MemoryStore): Promise<string | undefined> {
  const ctx = share(dir, store, 'host');
  const seen = await look(ctx);
  const { local, published, verdict } = seen;
  const steps: NextStep[] = [];
  const words = verdictWords(verdict);
  if (words.tone !== 'ok' && words.step) steps.push(words.step);
  if (verdict.kind === 'blocked')
    steps.push(...(verdict.step ? [verdict.step] : []), ...(verdict.said ?? []).filter(isNextStep));
  if (local.state === 'blocked') steps.push(...(local.error.said ?? []).filter(isNextStep));
  const interrupted = interruptedOf(local);
  if (interrupted) steps.push(interrupted.step);
  if (!steps.some((step) => step.args[0] === 'ca' && step.args[1] === 'retire')) return undefined;
  const previous =
    local.state === 'whole' ? (local.previous?.fingerprint ?? local.leftover?.fingerprint) : undefined;
  if (previous === undefined || published.state !== 'present') return undefined;
  if (published.header.previousFingerprint !== previous) return undefined;
  if (words.tone !== 'ok' && words.step?.args[1] === 'retire')
    return `status suggests ca retire of ${previous} while the published document carries that previous pair`;
  const [disk, kept] = [stateKey(snapshotFiles(dir)), store.snapshot()];
  try {
    await retireOperation({
      stateDir: dir,
      deployment: DEP,
      share: ctx,
      confirm: () => Promise.resolve(confirmationPrefix(previous)),
    });
    return `following a suggested ca retire deleted ${previous} while the published document carries that previous pair`;
  } catch {
    if (stateKey(snapshotFiles(dir)) !== disk || JSON.stringify(store.snapshot()) !== JSON.stringify(kept))
      return 'a refused ca retire changed the state dir or the store';
    retireRefusals += 1;
    return undefined;
  }
}

function snapshotFiles(dir: string): Map<string, Content | 'dir'> {
  const snap = snapshotInitial(dir);
  const files = new Map<string, Content | 'dir'>();
  for (const [p, e] of snap.entries) files.set(p, e.type === 'dir' ? 'dir' : snap.contents.get(e.inode)!);
  return files;
}

/** States where a suggested `ca retire` met a published overlap carrying that pair, and refused. */
let retireRefusals = 0;

const totals = { states: 0, distinct: 0 };
/** Force crash states the same force, re-run as typed, ended whole with nothing else changed. */
let forceRerunsWhole = 0;
/** Half-initialised installs the printed `sync` finished to a state both billets start on. */
let resumedStates = 0;
/** Each reading's verdicts over every distinct state of every scenario: the table the lead quotes. */
const verdicts = new Map<string, number>();
function tally(label: string): void {
  verdicts.set(label, (verdicts.get(label) ?? 0) + 1);
}
afterAll(() => {
  console.log(
    `crash-point harness: ${totals.states} crash states checked (${totals.distinct} distinct dirs), three readings (baton, the later billet, billet b2b42c1a); ${resumedStates} half-initialised installs finished by the same sync; ${forceRerunsWhole} force crash states ended whole by the same force re-run as typed; ${retireRefusals} states (as crashed, or after a billet b2b42c1a restart) where a suggested ca retire met the published overlap and refused, changing nothing`,
  );
  console.log(
    `crash table verdicts: ${[...verdicts]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([label, count]) => `${label} ×${count}`)
      .join('; ')}`,
  );
});

describe('every crash point of every authority write, by baton and by billet', () => {
  it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s', async (name, scenario) => {
    const { stateDir, run, resume, rerunEvery, store } = await scenario.setup();
    const initial = snapshotInitial(stateDir);
    const ops = await record(stateDir, initial, run);
    const checked = await checkAll(name, initial, ops, resume, rerunEvery, store);
    totals.states += checked.states;
    totals.distinct += checked.distinct;
    console.log(
      `${name}: ${ops.length} file operations, ${checked.states} crash states (${checked.distinct} distinct): ${[
        ...checked.readings,
      ]
        .map(([label, count]) => `${label} ×${count}`)
        .join('; ')}`,
    );
    expect(checked.findings).toEqual([]);
    if (name.startsWith('replace')) {
      // Replacing a document that cannot be used writes the store only: no local file changes.
      expect(ops).toEqual([]);
    } else {
      // The harness saw the operation write: a recording that saw nothing would check nothing.
      expect(ops.some((op) => op.kind === 'fsyncdir')).toBe(true);
      expect(checked.distinct).toBeGreaterThan(2);
    }
  });

  it('finds the billet-mints state in the adopt order of before (previous pair, key, certificate, marker LAST)', async () => {
    const stateDir = await freshHost();
    const ctx = share(stateDir, await publishedStore(true), 'adopter');
    const initial = snapshotInitial(stateDir);
    const ops = await record(stateDir, initial, () => adopt(ctx));
    const legacy = markerLast(ops);
    expect(legacy).not.toEqual(ops);
    const checked = await checkAll('adopt, marker last', initial, legacy);
    totals.states += checked.states;
    totals.distinct += checked.distinct;
    const mints = checked.findings.filter((f) => f.billet.outcome === 'mints');
    expect(mints.length).toBeGreaterThan(0);
    const first = mints[0]!;
    console.log(
      `adopt with the marker last: ${mints.length} billet-mints states, e.g. after ${first.prefix} operations: ${first.files.join(', ')} → baton "${first.baton}", billet "${first.billet.why}"`,
    );
    expect(first.files).toContain('ca/ca-previous.key');
    expect(first.files).not.toContain('authority-created');
  });
});

/**
 * The same operations with the marker's creation (its temp file, write, fsync, link, unlink and
 * the fsync of the state dir after it) moved after everything else: the order adopt had.
 */
function markerLast(ops: readonly Op[]): Op[] {
  const start = ops.findIndex((op) => op.kind === 'creat' && op.path.startsWith('.authority-created.tmp-'));
  const linked = ops.findIndex((op) => op.kind === 'link' && op.to === 'authority-created');
  const end = ops.findIndex((op, i) => i > linked && op.kind === 'fsyncdir' && op.path === '');
  if (start < 0 || linked < 0 || end < 0) throw new Error('no marker write in the recorded adopt');
  const marker = ops.slice(start, end + 1);
  const rest = [...ops.slice(0, start), ...ops.slice(end + 1)];
  return [...rest, ...marker];
}
