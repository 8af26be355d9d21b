/**
 * Seconds each of the slowest test files took in a full run of the suite, for test/longest-first.ts: the last
 * clean-clone CI run of round 8 (`bash .ci/run` on a quiet 2-core machine, 2 workers; 983 s, 1795 s summed over
 * the files), except the files marked, whose cuts came after it. Since round 10 a file's PostgreSQL is a copy of
 * a template cluster, about 2 s sooner than these figures (not marked one by one). A loaded run is no use here:
 * at load 25 it ranks files by how much CPU they need, not how long they take. Files below 3 s are not listed:
 * they run after these, in vitest's own order. Refresh after a test file got much slower or faster (docs/testing.md, "Suite time").
 */
export const FILE_SECONDS: Readonly<Record<string, number>> = {
  'test/reliability/mesh-faults.test.ts': 25.0, // cut after that run: its checks read digests from disk, 124 -> 29 CPU-s (it was CPU-bound)
  // Round 10 (suitetime), rough: 13 of 52 sequences a run, not 50 of 200 (file 1 alone: 24 CPU-s in 34 s at load 9, was 70 in 89).
  'test/mesh/rotation-sequences-4.test.ts': 25,
  'test/mesh/rotation-sequences-2.test.ts': 25,
  'test/mesh/app-truth-postgres.test.ts': 86.3,
  'test/mesh/rotation-sequences-1.test.ts': 25,
  'test/e2e/drill-tmux.test.ts': 30.0, // rough: failed in that run after waiting out a 60 s wait (fixed since, c586651)
  'test/mesh/rotation-sequences-3.test.ts': 25,
  'test/mesh/rotation-postgres.test.ts': 65.3,
  'test/mesh/alternating-postgres.test.ts': 61.0,
  'test/reliability/s3-faults.test.ts': 41.2,
  'test/reliability/session-drop.test.ts': 40.0,
  'test/mesh/pooler-pgbouncer.test.ts': 35.8,
  // Round 9, not in that run: 56 s alone at load ~21 (Debian PostgreSQL + pgbouncer + sshd, 2 rotations); quiet, about 25.
  'test/mesh/pooler-ssh.test.ts': 25,
  // Round 10: 17.7 s alone (48 s under load; Debian PostgreSQL + pgbouncer + sshd, 6 rotations).
  'test/mesh/pooler-remote-auth-file.test.ts': 18,
  'test/reliability/races.test.ts': 34.2,
  'test/transport/ssh-connection-share.test.ts': 29.3,
  'test/mesh/provider-rotation-kills.test.ts': 28.3,
  'test/transport/ssh-window.test.ts': 27.9,
  'test/mesh/machine-truth-ssh.test.ts': 27.9,
  // Round 9, rough (each alone at load ~20): the agent contract over one sshd, locally, and its crash points;
  // ssh-transport lost its file-operation cases to the contract (38 s wall at load 20, was 92 s).
  'test/transport/agent-contract-ssh.test.ts': 20.0,
  'test/transport/agent-contract-local.test.ts': 8.0,
  'test/transport/agent-contract-crash.test.ts': 6.0,
  'test/transport/ssh-transport.test.ts': 12.0,
  'test/transport/ssh-serve-drops.test.ts': 4.0, // round 9, rough: 2–6 s at load 10–20 (one sshd, 3 short cases)
  // Round 10 (suitetime), rough: three PostgreSQL servers copied from one template, 7.5 s at load 12.
  'test/sandbox/postgres-template.test.ts': 4.0,
  'test/provisioner/switch-back-postgres.test.ts': 24.4,
  'test/mesh/mesh-cli.test.ts': 22.7, // cut after that run: its roll-back case waits 0.3 s, not 1 s, twice
  'test/suite/left-running.test.ts': 8.5, // cut after that run: the fixture no longer waits out a 20 s test timeout (-14 s measured)
  'test/reliability/secrets.test.ts': 21.9,
  'test/build/packed-install.test.ts': 21.8,
  'test/integration/ssm-store-moto.test.ts': 21.5,
  'test/mesh/pooler-auth-file-pgbouncer.test.ts': 21.2,
  'test/provisioner/database-truth.test.ts': 20.0,
  'test/e2e/drill-plain.test.ts': 19.9,
  'test/reliability/bad-documents.test.ts': 18.9,
  'test/e2e/console.test.ts': 18.5,
  'test/integration/sync-flags-moto.test.ts': 18.2,
  'test/e2e/console-terminal.test.ts': 17.7,
  'test/mesh/machine-truth.test.ts': 17.3,
  'test/store/s3-call-deadline-moto.test.ts': 16.3,
  'test/integration/authority-store-moto.test.ts': 16.3,
  'test/drill/checks.test.ts': 16.2,
  'test/integration/billet-document-stores-moto.test.ts': 16.1,
  'test/integration/paste-next.test.ts': 16.1,
  'test/transport/ssh-start-limits.test.ts': 16.0,
  'test/mesh/mesh-status-cli.test.ts': 15.4,
  'test/e2e/bracketed-paste-tmux.test.ts': 14.6,
  'test/mesh/mesh-status-lockout.test.ts': 13.8,
  'test/mesh/way-out.test.ts': 13.3,
  'test/mesh/pooled-app-reload.test.ts': 13.0,
  'test/transport/ssh-drops.test.ts': 12.6,
  'test/integration/replay-or-race-moto.test.ts': 12.6,
  'test/reliability/over-ssh.test.ts': 11.9,
  'test/mesh/alternating-cli.test.ts': 11.8,
  'test/integration/seal-and-store-guard-moto.test.ts': 11.8,
  'test/integration/retire-store-moto.test.ts': 11.5,
  'test/integration/ca-init-race.test.ts': 11.4,
  'test/integration/two-controllers-s3.test.ts': 10.4,
  'test/e2e/key-reads-tmux.test.ts': 8.4,
  'test/components/screenshots.test.tsx': 8.0,
  'test/integration/s3-preconditions-moto.test.ts': 7.9,
  'test/provisioner/provision-cli.test.ts': 7.6,
  'test/mesh/mesh-tty.test.ts': 7.2,
  'test/reliability/crash-force.test.ts': 7.0,
  'test/provisioner/provisioner-heartbeat.test.ts': 6.8,
  'test/provisioner/idle-watch-reads.test.ts': 6.6,
  'test/build/build-says.test.ts': 6.4,
  'test/integration/ssm-cli-moto.test.ts': 6.4,
  'test/e2e/drill-dumb.test.ts': 6.2,
  'test/e2e/outside-text-views.test.tsx': 5.6,
  'test/authority/ca-command.test.ts': 5.5,
  'test/mesh/rotation-journal-failure.test.ts': 5.0,
  'test/authority/crash-points.test.ts': 4.8,
  'test/e2e/console-s3.test.ts': 4.6,
  'test/mesh/later-command-login.test.ts': 4.6,
  'test/cli-manners.test.ts': 4.2,
  'test/components/failover-screens.test.tsx': 4.2,
  'test/mesh/mesh-status-tty.test.ts': 4.0,
  'test/integration/lineage-cells.test.ts': 3.9,
  'test/transport/sshd-clean-login.test.ts': 3.5,
  'test/provisioner/postgres-provisioner.test.ts': 3.4,
  'test/store/store-cli.test.ts': 3.4,
  'test/components/rotation-view.test.tsx': 3.4,
  'test/provisioner/alternating-postgres.test.ts': 3.3,
  'test/authority/crash.test.ts': 3.1,
  'test/commands/json-errors.test.ts': 3.0,
  'test/mesh/app-reads.test.ts': 3.0,
};
