/**
 * An idle `--watch` reads nothing it read before — measured on the REAL process (the built
 * `baton provision postgres --watch`, heartbeat and all), not on runCycle(): strace counts the
 * directory listings (getdents64) it makes across idle cycles. The heartbeat it writes every
 * cycle once moved the provider directory's mtime, so every idle cycle listed every name again.
 * Needs strace (apt-get install strace) and Debian's PostgreSQL 15.
 * Run `npm run build` before running this file alone.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it, vi } from 'vitest';
import { heartbeatPath, legacyHeartbeatPath, parseHeartbeat } from '../../src/mesh/provisioner-heartbeat.js';
import { MESH_PROVIDER, usePostgresMesh } from '../helpers/postgres-mesh.js';
import { debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';

function straceMissing(): string | undefined {
  const probe = spawnSync('strace', ['-V'], { stdio: 'ignore' });
  return probe.status === 0 ? undefined : 'strace is not installed (apt-get install strace)';
}

/** The listings in strace's output (`-y` names each fd's path), by directory. */
function listings(trace: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of trace.matchAll(/getdents64\(\d+<([^>]*)>/g)) out.set(m[1]!, (out.get(m[1]!) ?? 0) + 1);
  return out;
}

describeWithPart(
  debianPostgresMissing() ?? straceMissing(),
  'an idle --watch lists no directory (the real process, under strace)',
  () => {
    const suite = usePostgresMesh({ server: 'debian', prefix: 'baton-idle-reads-' });

    it('across 10 idle cycles: 0 listings of any directory, while the first cycle listed the provider', async () => {
      const { mesh } = suite;
      const providerDir = path.join(mesh.meshDirOn('db1'), 'provides', MESH_PROVIDER);
      // An older provisioner's heartbeat in the old place: the new one removes it (once).
      writeFileSync(legacyHeartbeatPath(providerDir), 'left by an older provisioner\n', { mode: 0o600 });
      const traceFile = path.join(mesh.dir, 'strace.out');
      const traced = mesh.spawnTracked('strace', [
        '-f',
        '-y',
        '-qq',
        '-e',
        'trace=getdents64',
        '-o',
        traceFile,
        process.execPath,
        ...mesh.provisionerArgs(),
        '--watch',
        '--interval',
        '0.2',
      ]);
      const beats = new Set<string>();
      let pid: number | undefined;
      const waitBeats = (n: number) =>
        vi.waitFor(
          () => {
            const file = heartbeatPath(providerDir);
            const beat = existsSync(file) ? parseHeartbeat(readFileSync(file, 'utf8')) : undefined;
            if (beat?.login === 'ok') {
              beats.add(beat.at);
              pid = beat.pid;
            }
            if (beats.size < n) throw new Error(`${beats.size} of ${n} cycles seen\n${traced.output()}`);
          },
          { timeout: 30_000, interval: 20 },
        );
      try {
        await waitBeats(1);
        const rotated = await mesh.baton(
          'mesh',
          'rotate',
          '--provider',
          MESH_PROVIDER,
          '--yes',
          '--wait',
          '20',
          '--inventory',
          mesh.inventory,
        );
        expect(rotated.exitCode, rotated.all).toBe(0);
        beats.clear();
        // Warm-up: the first full scan, the receipts written, the cycles after the apply settled.
        await waitBeats(5);
        const warm = readFileSync(traceFile, 'utf8');
        expect(listings(warm).get(providerDir) ?? 0).toBeGreaterThan(0);
        beats.clear();
        await waitBeats(10);
        const idle = listings(readFileSync(traceFile, 'utf8').slice(warm.length));
        expect(Object.fromEntries(idle)).toEqual({});
        expect(existsSync(legacyHeartbeatPath(providerDir))).toBe(false);
      } finally {
        if (pid !== undefined) process.kill(pid, 'SIGTERM');
        await Promise.race([traced.exited, new Promise((r) => setTimeout(r, 5_000))]);
        await traced.kill();
      }
    }, 90_000);
  },
);
