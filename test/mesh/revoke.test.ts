/**
 * Revoking the login a consumer left: a fresh secret on the provider end only, its receipt
 * awaited with the rotation's own receipt wait, sessions named from the receipt, ended only on
 * request. Over the strict fake transport: any file touched outside the left login's is a failure.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/mesh/inventory.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { startReceiptWriter } from './receipt-writer.js';
import { digestPrefix, secretDigest } from '../../src/mesh/digest.js';
import {
  endSessionsPath,
  leftLogins,
  notRevoked,
  revokePrevious,
  sessionText,
} from '../../src/mesh/revoke.js';
import { journalRevoked } from '../../src/app/rotation-revoke.js';
import type { JournalPair } from '../../src/mesh/journal.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { previousPath } from '../../src/mesh/transport.js';
import { saidText } from '../../src/next-step.js';
import { asAlternating, leftPaths, loginProvisionerOn } from './alternating-plan.js';
import { fakeMesh, type FakeMachine } from './fake-transport.js';
import { meshInventory, writeLocalMesh } from './mesh-fixture.js';

const inventory = meshInventory(2);
const plan = asAlternating(inventory, planRotation(inventory, { by: 'provider', name: 'pg-main' }), 'a');
const SESSION = {
  pid: 4242,
  application_name: 'web1',
  client_addr: '10.0.0.5',
  backend_start: '2026-12-01T17:00:00Z',
};
const wait = { concurrency: 4, waitMs: 2_000, pollMs: 5 };

const provisioner = (machine: FakeMachine) => loginProvisionerOn(machine, [SESSION]);

function mesh() {
  const fake = fakeMesh(['db1', 'db2', 'web1', 'web2'], plan, leftPaths(plan));
  const db1 = fake.machines.db1!;
  for (const login of leftLogins(plan.pairs)) db1.files.set(login.providerPath, 'the-old-password');
  return { fake, db1, logins: leftLogins(plan.pairs) };
}

describe('revokePrevious', () => {
  it('gives each left login a fresh secret delivered nowhere else, awaits its receipt and names its open sessions', async () => {
    const { fake, db1, logins } = mesh();
    provisioner(db1);
    expect(logins.map((l) => l.login)).toEqual(['web1_app_a', 'web2_app_a', 'backup_a']);
    const results = await revokePrevious(logins, fake.transportFor, { ...wait, endSessions: false });
    expect(results.map((r) => [r.pair, r.revoked])).toEqual(logins.map((l) => [l.pair, true]));
    expect(results[0]).toMatchObject({ login: 'web1_app_a', sessions: [SESSION] });
    expect(results[0]).not.toHaveProperty('endedSessions');
    for (const login of logins) {
      const fresh = db1.files.get(login.providerPath)!;
      expect(fresh).not.toBe('the-old-password');
      // Never in the result, never anywhere else on any machine.
      expect(JSON.stringify(results)).not.toContain(fresh);
      const holding = Object.entries(fake.machines).flatMap(([name, m]) =>
        [...m.files].filter(([, v]) => v === fresh).map(([p]) => `${name}:${p}`),
      );
      expect(holding).toEqual([`db1:${login.providerPath}`]);
      expect(db1.files.has(previousPath(login.providerPath))).toBe(false);
      expect(db1.files.has(endSessionsPath(login.providerPath))).toBe(false);
    }
    // One batch per provider machine; the target logins and the consumer ends untouched.
    expect(db1.calls).toEqual([
      'stage',
      'keepPrevious',
      'commit',
      'readTexts',
      'readTexts',
      'discardPrevious',
    ]);
    for (const m of ['db2', 'web1', 'web2']) expect(fake.machines[m]!.calls).toEqual([]);
    for (const p of plan.pairs) expect(db1.files.has(p.providerPath)).toBe(false);
    expect(fake.unarranged).toEqual([]);
    expect(sessionText(SESSION)).toBe('pid 4242 "web1" from 10.0.0.5 since 2026-12-01T17:00:00Z');
  });

  it('--end-sessions: the request (the fresh digest) is committed with the secret, and the receipt says how many sessions ended', async () => {
    const { fake, db1, logins } = mesh();
    const committed: string[][] = [];
    provisioner(db1);
    const apply = db1.afterCommit!;
    db1.afterCommit = (paths, files) => {
      committed.push([...paths]);
      // The request is live when the secret is: its content is the digest of the secret it is for.
      for (const l of logins)
        expect(files.get(endSessionsPath(l.providerPath))).toBe(secretDigest(files.get(l.providerPath)!));
      apply(paths, files);
    };
    const results = await revokePrevious(logins, fake.transportFor, { ...wait, endSessions: true });
    expect(results.every((r) => r.revoked && r.endedSessions === 1 && r.sessions.length === 0)).toBe(true);
    expect(committed).toEqual([
      [...logins.map((l) => endSessionsPath(l.providerPath)), ...logins.map((l) => l.providerPath)],
    ]);
    expect(JSON.stringify(results)).not.toMatch(/sha256:/);
  });

  it('no receipt in time: not revoked, says the old password may still work, and names the next step as data', async () => {
    const { fake, db1, logins } = mesh();
    const results = await revokePrevious(logins.slice(0, 1), fake.transportFor, {
      ...wait,
      waitMs: 60,
      endSessions: false,
    });
    const [result] = results;
    expect(result).toMatchObject({ pair: 'pg-main:web1-app', login: 'web1_app_a', revoked: false });
    if (result!.revoked) throw new Error('unreachable');
    expect(result!.reason).toBe(
      "pg-main's provisioner did not confirm web1_app_a's fresh password within 60 ms: the old password of web1_app_a MAY STILL WORK",
    );
    expect(saidText(result!.next)).toContain('`baton mesh rotate --pair pg-main:web1-app --revoke-previous`');
    // The fresh secret is live for the provisioner to apply later; nothing kept beside it.
    expect(db1.files.get(logins[0]!.providerPath)).not.toBe('the-old-password');
    // Its target, for the journal: a digest prefix (digestPrefix: not a secret, nothing to brute-force), never the whole digest.
    const fresh = secretDigest(db1.files.get(logins[0]!.providerPath)!);
    expect(result!.target).toBe(digestPrefix(fresh));
    // Committed: the summary says the request stays armed.
    expect(result!.armed).toBe(true);
    expect(JSON.stringify(results)).not.toContain(fresh);
    expect(db1.files.has(previousPath(logins[0]!.providerPath))).toBe(false);
  });

  it('the journal records a confirmed revoke as revoked and an unconfirmed one by its target only', () => {
    const pair = { key: 'pg-main:web1-app' } as JournalPair;
    const login = leftLogins(plan.pairs)[0]!;
    const target = digestPrefix(secretDigest('fresh'));
    const late = { ...notRevoked(login, 'not yet'), target };
    expect(journalRevoked(pair, { step: 'done', revoked: [late] })).toEqual({
      ...pair,
      revoke_target: target,
    });
    expect(
      journalRevoked(pair, {
        step: 'done',
        revoked: [{ pair: pair.key, login: login.login, revoked: true, sessions: [] }],
      }),
    ).toEqual({ ...pair, revoked: true });
    // A revoke that never committed has no target: nothing for a later receipt to confirm.
    expect(journalRevoked(pair, { step: 'done', revoked: [notRevoked(login, 'failed')] })).toEqual(pair);
  });

  it('a provider machine that fails the commit: not revoked, naming the machine and the step', async () => {
    const { fake, db1, logins } = mesh();
    db1.failOn = 'commit';
    const results = await revokePrevious(logins, fake.transportFor, { ...wait, endSessions: true });
    for (const r of results) {
      expect(r.revoked).toBe(false);
      if (!r.revoked)
        expect(r.reason).toMatch(
          /^db1 failed while committing the fresh secret \(commit failed \(injected\)\): the old password of \w+ MAY STILL WORK$/,
        );
    }
    for (const l of logins) expect(db1.files.get(l.providerPath)).toBe('the-old-password');
    // Its target stays named (a commit whose answer was lost may have landed; status reads which), never armed.
    for (const r of results)
      expect(r).toMatchObject({ target: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) });
    for (const r of results) expect(r).not.toHaveProperty('armed');
    // Asked with --end-sessions: the way out asks it again.
    for (const r of results)
      if (!r.revoked) expect(saidText(r.next)).toContain('--revoke-previous --end-sessions`');
  });

  it('names every target to beforeStage before anything is staged, and the targets are the fresh secrets that land', async () => {
    const { fake, db1, logins } = mesh();
    provisioner(db1);
    let named: ReadonlyMap<string, string> | undefined;
    let callsThen: string[] = [];
    await revokePrevious(logins, fake.transportFor, {
      ...wait,
      endSessions: false,
      beforeStage: async (targets) => {
        named = targets;
        callsThen = [...db1.calls];
      },
    });
    expect(callsThen).toEqual([]);
    expect([...named!.keys()]).toEqual(logins.map((l) => l.pair));
    for (const l of logins)
      expect(named!.get(l.pair)).toBe(digestPrefix(secretDigest(db1.files.get(l.providerPath)!)));
  });

  it('a journal that cannot record the targets: nothing is staged, and each login is NOT revoked naming the journal', async () => {
    const { fake, db1, logins } = mesh();
    const before = new Map(db1.files);
    const results = await revokePrevious(logins, fake.transportFor, {
      ...wait,
      endSessions: true,
      beforeStage: () => Promise.reject(new Error('EACCES: the journal')),
    });
    expect(db1.calls).toEqual([]);
    expect(db1.files).toEqual(before);
    for (const r of results) {
      expect(r).toMatchObject({ revoked: false });
      if (!r.revoked) {
        expect(r.reason).toMatch(
          /^its fresh password was not staged: the journal could not record it \(EACCES: the journal\): the old password of \w+ MAY STILL WORK$/,
        );
        expect(r).not.toHaveProperty('target');
      }
    }
  });

  it('a pair without a left login (a single pair being switched) has nothing to revoke', () => {
    expect(
      leftLogins(
        asAlternating(inventory, planRotation(inventory, { by: 'provider', name: 'pg-main' }), null).pairs,
      ),
    ).toEqual([]);
    expect(leftLogins(planRotation(inventory, { by: 'provider', name: 'pg-main' }).pairs)).toEqual([]);
  });
});

describe('revokePrevious stopped', () => {
  it('a stop during the wait ends it at once and says the wait was stopped, not that time ran out', async () => {
    const { fake, logins } = mesh();
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error('interrupted by SIGINT')), 20);
    const started = Date.now();
    const [result] = await revokePrevious(logins.slice(0, 1), fake.transportFor, {
      ...wait,
      waitMs: 60_000,
      stop: stop.signal,
      endSessions: false,
    });
    // Not the 60 s wait: the stop ended it.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(result).toMatchObject({
      revoked: false,
      reason:
        "the wait for pg-main's receipt was stopped before it confirmed web1_app_a's fresh password: the old password of web1_app_a MAY STILL WORK",
    });
  });
});

describe('revokePrevious on the local transport, with a receipt writer', () => {
  it('writes the fresh secret and the request 0600 in place, removes the kept file, and the receipt confirms it', async () => {
    const tmp = makeTempDir('baton-revoke-local-');
    try {
      const dir = tmp.dir;
      const local = loadInventory(writeLocalMesh(dir));
      const localPlan = asAlternating(
        local,
        planRotation(local, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' }),
        'b',
      );
      const [login] = leftLogins(localPlan.pairs);
      const onDisk = (p: string) => path.join(dir, 'machines', 'db1', p);
      mkdirSync(path.dirname(onDisk(login!.providerPath)), { recursive: true });
      writeFileSync(onDisk(login!.providerPath), 'the-old-password', { mode: 0o600 });
      const writer = startReceiptWriter(path.dirname(onDisk(login!.providerPath)));
      try {
        const [result] = await revokePrevious([login!], transportsFor(local.machines, TEST_BOUNDS), {
          ...wait,
          endSessions: true,
        });
        expect(result).toMatchObject({
          pair: 'pg-main:web1-app',
          login: 'web1_app_b',
          revoked: true,
          sessions: [],
        });
      } finally {
        writer.stop();
      }
      const fresh = readFileSync(onDisk(login!.providerPath), 'utf8');
      expect(fresh).not.toBe('the-old-password');
      expect(statSync(onDisk(login!.providerPath)).mode & 0o777).toBe(0o600);
      // The receipt writer stands in for a provisioner that has not ended sessions: the request stays for it.
      const request = onDisk(endSessionsPath(login!.providerPath));
      expect(readFileSync(request, 'utf8')).toBe(secretDigest(fresh));
      expect(statSync(request).mode & 0o777).toBe(0o600);
      expect(existsSync(onDisk(previousPath(login!.providerPath)))).toBe(false);
      expect(existsSync(`${onDisk(login!.providerPath)}.next`)).toBe(false);
    } finally {
      tmp.cleanup();
    }
  });
});
