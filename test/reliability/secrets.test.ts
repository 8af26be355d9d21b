/**
 * Secrets never appear in argv, the environment, logs, the journal or the screen. Proven by
 * looking everywhere while the BUILT CLI works for real: a full mesh rotation over ssh to a
 * real sshd on 127.0.0.1 (twice, so old and new credentials both exist), and the drill's
 * --plain run end to end. Every ssh spawn is recorded by a PATH wrapper (argv + environment,
 * however short-lived), every descendant of the CLI and of sshd is polled in /proc, and the
 * journal and captured output are read. Each generated secret and every key found afterwards
 * is searched for raw, in hex and in base64 at any alignment: zero hits.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, startBaton, type BatonRun } from '../helpers/run-baton.js';
import {
  keyMaterial,
  recordingWrapper,
  scanForSecrets,
  watchProcesses,
  type Haystack,
  type Secret,
} from '../helpers/secret-scan.js';
import { describeWithPart } from '../helpers/real-part.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { startReceiptWriter } from '../mesh/receipt-writer.js';
import { ifSet } from '../helpers/if-set.js';

const unavailable = sshdUnavailable();

const figures = {
  rotations: 0,
  secretsSearched: 0,
  keysSearched: 0,
  sshSpawnsRecorded: 0,
  processesWatched: 0,
  haystacks: 0,
  hits: 0,
  drillHaystacks: 0,
  drillSecretsSearched: 0,
  drillHits: 0,
};

afterAll(() => console.log(`secrets figures: ${JSON.stringify(figures)}`));

/** Runs the CLI while polling /proc for it and `extraRoots`; returns the run and what /proc showed. */
async function watched(
  args: string[],
  env: Record<string, string>,
  extraRoots: () => number[] = () => [],
): Promise<{ run: BatonRun; proc: Haystack[] }> {
  const child = startBaton(args, { env, timeoutMs: 240_000 });
  const watch = watchProcesses(() => [...(child.pid ? [child.pid] : []), ...extraRoots()], 10);
  const result = await child;
  const proc = watch.stop();
  figures.processesWatched += watch.seenPids.size;
  return {
    run: {
      exitCode: result.exitCode ?? -1,
      stdout: String(result.stdout),
      stderr: String(result.stderr),
      all: String(result.all),
    },
    proc,
  };
}

/** Every regular file below `dir` whose path matches `pattern`, as name → bytes. */
function filesBelow(dir: string, pattern: RegExp): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const name of readdirSync(d)) {
      const abs = path.join(d, name);
      const st = statSync(abs);
      if (st.isDirectory()) walk(abs);
      else if (st.isFile() && pattern.test(abs)) out.set(abs, readFileSync(abs));
    }
  };
  walk(dir);
  return out;
}

describeWithPart(unavailable, 'a full mesh rotation over ssh leaks no secret', () => {
  let sshd: Sshd;
  let tmp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    assertBuilt();
    sshd = await startSshd();
    tmp = makeTempDir('baton-secrets-');
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
  });

  it('argv and environment of every child, the journal and the output hold none of the delivered secrets', async () => {
    const base = tmp.dir;
    const machines = ['db1', 'web1', 'web2', 'worker1'];
    const inventory = path.join(base, 'mesh.yaml');
    writeFileSync(
      inventory,
      [
        `ssh: { identity: ${sshd.identity}, known_hosts: ${sshd.knownHosts}, strict_host_key_checking: "yes", config: /dev/null, connect_timeout: 5 }`,
        'machines:',
        ...machines.map(
          (m) =>
            `  - { name: ${m}, address: "${sshd.user}@127.0.0.1:${sshd.port}", transport: ssh, mesh_dir: ${base}/${m}/mesh }`,
        ),
        'providers:',
        '  - { name: pg-main, machine: db1, kind: postgres }',
        'consumers:',
        '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main] }',
        '  - { name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
        '  - { name: worker1-jobs, machine: worker1, reads: each-connection, uses: [pg-main] }',
        '',
      ].join('\n'),
    );
    const journalDir = path.join(base, 'journal');
    const config = path.join(base, 'baton.yaml');
    writeFileSync(
      config,
      `deployment: 5ec4e7505ec4e7505ec4e7505ec4e750\nseal: none\nstate_dir: ${base}/state\njournal_dir: ${journalDir}\ninventory: ${inventory}\n`,
    );
    // Every ssh the CLI spawns goes through this wrapper first and is recorded.
    const wrapperDir = path.join(base, 'bin');
    const sshLog = path.join(base, 'ssh-spawns.log');
    mkdirSync(wrapperDir);
    writeFileSync(path.join(wrapperDir, 'ssh'), recordingWrapper('/usr/bin/ssh', sshLog));
    chmodSync(path.join(wrapperDir, 'ssh'), 0o755);
    const env = { PATH: `${wrapperDir}:${process.env.PATH}` };
    const sshdPid = () => {
      try {
        return [Number(readFileSync(path.join(sshd.dir, 'sshd.pid'), 'utf8'))];
      } catch {
        return [];
      }
    };

    const haystacks: Haystack[] = [];
    const delivered = new Map<string, Buffer>();
    const pattern = /\/(provides|consumes)\/pg-main\/[a-z0-9_]+$/;
    // pg-main's provisioner, standing in: each consumer end is renamed only after its receipt.
    const provisioner = startReceiptWriter(path.join(base, 'db1/mesh/provides/pg-main'));
    onTestFinished(() => provisioner.stop());
    for (const round of [1, 2]) {
      const { run, proc } = await watched(
        ['--config', config, 'mesh', 'rotate', '--provider', 'pg-main', '--yes', '--wait', '20'],
        env,
        sshdPid,
      );
      expect(run.exitCode, run.all).toBe(0);
      haystacks.push({ name: `rotate ${round} stdout+stderr`, data: run.all }, ...proc);
      for (const [file, bytes] of filesBelow(base, pattern)) delivered.set(`${file}#${round}`, bytes);
      figures.rotations += 1;
    }
    const plan = await watched(['--config', config, 'mesh', 'plan', '--provider', 'pg-main'], env, sshdPid);
    expect(plan.run.exitCode, plan.run.all).toBe(0);
    haystacks.push({ name: 'plan stdout+stderr', data: plan.run.all }, ...plan.proc);
    for (const [file, bytes] of filesBelow(journalDir, /./)) haystacks.push({ name: file, data: bytes });
    haystacks.push({ name: 'ssh argv+environ (wrapper log)', data: readFileSync(sshLog) });

    // The secrets: 3 pairs × 2 ends × 2 generations of files, 6 distinct values.
    const secrets: Secret[] = [...new Set([...delivered.values()].map((b) => b.toString('latin1')))].map(
      (value, i) => ({
        name: `delivered secret #${i + 1}`,
        value: Buffer.from(value, 'latin1'),
      }),
    );
    expect(secrets).toHaveLength(6);
    for (const s of secrets) expect(Buffer.from(s.value).length).toBeGreaterThanOrEqual(32);
    // Controls: the scan sees a secret where one is, and ssh really was spawned and recorded.
    expect(
      scanForSecrets([{ name: 'a delivered file', data: [...delivered.values()][0]! }], secrets).length,
    ).toBeGreaterThan(0);
    figures.sshSpawnsRecorded = readFileSync(sshLog, 'latin1').split('ARGV\0').length - 1;
    expect(figures.sshSpawnsRecorded).toBeGreaterThanOrEqual(8);
    expect(haystacks.some((h) => h.name.endsWith('/cmdline'))).toBe(true);

    const hits = scanForSecrets(haystacks, secrets);
    figures.secretsSearched = secrets.length;
    figures.haystacks = haystacks.length;
    figures.hits = hits.length;
    expect(hits).toEqual([]);
  }, 300_000);
});

describe("the drill's --plain run leaks no secret and no key", () => {
  it('its output, the argv and environment of every process it starts, and its journal hold no credential or key material', async () => {
    assertBuilt();
    const { run, proc } = await watched(['drill', '--plain', '--keep'], {});
    const sandbox = /the sandbox is kept in (\S+)/.exec(run.all)?.[1];
    try {
      expect(run.exitCode, run.all).toBe(0);
      expect(sandbox, run.all).toBeDefined();
      // Everything secret the drill made: delivered credentials (both generations are gone,
      // the live ones remain; an alternating pair's logins are `<role>+a`/`+b`), the superuser
      // password file, and every private key.
      const credentials = filesBelow(sandbox!, /\/(provides|consumes)\/[^/]+\/[a-z0-9_]+(\+[ab])?$/);
      const keys = filesBelow(sandbox!, /\/ca(-previous)?\.key$/);
      expect(credentials.size).toBeGreaterThan(0);
      expect(keys.size).toBeGreaterThan(0);
      const secrets: Secret[] = [
        ...[...credentials].map(([file, value]) => ({ name: path.relative(sandbox!, file), value })),
        ...[...keys].flatMap(([file, pem]) => keyMaterial(path.relative(sandbox!, file), pem)),
      ];
      const haystacks: Haystack[] = [{ name: 'drill stdout+stderr', data: run.all }, ...proc];
      for (const [file, bytes] of filesBelow(sandbox!, /journal|\.log$|\.jsonl$/))
        haystacks.push({ name: path.relative(sandbox!, file), data: bytes });
      figures.drillSecretsSearched = secrets.length;
      figures.keysSearched = keys.size;
      figures.drillHaystacks = haystacks.length;
      const hits = scanForSecrets(haystacks, secrets);
      figures.drillHits = hits.length;
      expect(hits).toEqual([]);
    } finally {
      if (sandbox) rmSync(sandbox, { recursive: true, force: true });
    }
  }, 300_000);
});
