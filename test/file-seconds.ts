/**
 * Seconds each of the slowest test files took in a full run of the suite, for test/longest-first.ts: the quiet
 * run of 2 December 04:23 UTC (`CI=true npm test`, 2 workers, load < 3, main at 60d5d71; 477 s), except the four
 * files whose waits were cut after it, set from what was cut: ssh-drops (its cut-link test no longer waits out
 * ~27 s of sshd-limit retries; measured 0.4x its SIGHUP sibling, was 4.2x), switch-back-postgres (-5 s of sleep),
 * rotation-postgres (-3.5 s), alternating-postgres (-1.4 s). A loaded run is no use here: at load 25 it ranked
 * files by how much CPU they need, not how long they take. Files below 3 s are not listed: they run after these,
 * in vitest's own order. Refresh after a test file got much slower or faster (docs/testing.md).
 */
export const FILE_SECONDS: Readonly<Record<string, number>> = {
  // Not in that run: alone at load ~6 (round 8), Debian PostgreSQL + pgbouncer; the CLI refusals.
  'test/mesh/pooler-pgbouncer.test.ts': 22,
  // 95 s alone at load 37; the auth_query file, alike, took 20 s at load ~6.
  'test/mesh/pooler-auth-file-pgbouncer.test.ts': 40,
  'test/mesh/poolers.test.ts': 12,
  // Not in that run: about half of the 120 s it took alone at load ~10 (npm installs ~200 packages, builds fs-ext).
  'test/build/packed-install.test.ts': 60,
  'test/mesh/pooled-app-reload.test.ts': 45.0, // round 8, rough (under load: Debian PostgreSQL, 6 rotations)
  'test/mesh/app-truth-postgres.test.ts': 43.8,
  'test/transport/ssh-connection-share.test.ts': 39.7,
  'test/mesh/machine-truth-ssh.test.ts': 38.6,
  'test/mesh/alternating-postgres.test.ts': 37.3,
  'test/mesh/rotation-postgres.test.ts': 33.7,
  'test/transport/ssh-window.test.ts': 32.1,
  'test/transport/ssh-transport.test.ts': 27.2,
  'test/reliability/races.test.ts': 25.6,
  'test/mesh/provider-rotation-kills.test.ts': 25.6,
  // Round 7, rough (measured under load, 44 s and 22 s): moto_server, and the awscli at ~4 s a call.
  'test/integration/ssm-store-moto.test.ts': 25.0,
  'test/provisioner/switch-back-postgres.test.ts': 23.4,
  'test/integration/replay-or-race-moto.test.ts': 23.2,
  'test/mesh/rotation-sequences-2.test.ts': 23.1,
  'test/mesh/rotation-sequences-1.test.ts': 22.3,
  'test/reliability/secrets.test.ts': 22.0,
  'test/store/s3-call-deadline-moto.test.ts': 21.8,
  'test/reliability/session-drop.test.ts': 21.5,
  'test/mesh/rotation-sequences-4.test.ts': 20.3,
  'test/mesh/rotation-sequences-3.test.ts': 20.3,
  'test/reliability/s3-faults.test.ts': 19.0,
  'test/integration/ssm-cli-moto.test.ts': 15.0,
  'test/integration/billet-document-stores-moto.test.ts': 15.0,
  // Added in round 7, measured at load ~20, not in the quiet run above.
  'test/suite/left-running.test.ts': 30.0,
  'test/build/build-says.test.ts': 25.0,
  'test/mesh/mesh-status-lockout.test.ts': 18.0,
  'test/transport/ssh-start-limits.test.ts': 12.7,
  'test/mesh/mesh-cli.test.ts': 12.6,
  'test/e2e/drill-plain.test.ts': 12.4,
  'test/transport/ssh-drops.test.ts': 12.1,
  'test/drill/checks.test.ts': 11.0,
  'test/integration/authority-store-moto.test.ts': 10.8,
  'test/integration/s3-preconditions-moto.test.ts': 10.5,
  'test/integration/sync-flags-moto.test.ts': 10.2,
  'test/reliability/bad-documents.test.ts': 10.1,
  'test/provisioner/database-truth.test.ts': 10.0,
  'test/provisioner/idle-watch-reads.test.ts': 10.0,
  'test/e2e/drill-tmux.test.ts': 9.9,
  'test/e2e/console.test.ts': 9.8,
  'test/integration/seal-and-store-guard-moto.test.ts': 9.3,
  'test/e2e/bracketed-paste-tmux.test.ts': 9.2,
  'test/reliability/over-ssh.test.ts': 9.2,
  'test/reliability/mesh-faults.test.ts': 9.2,
  'test/e2e/console-terminal.test.ts': 9.0,
  'test/mesh/mesh-status-cli.test.ts': 9.0,
  'test/integration/paste-next.test.ts': 8.9,
  'test/integration/ca-init-race.test.ts': 8.6,
  'test/authority/crash-points.test.ts': 8.0, // round 8, rough: 13 s at load ~8 (the force re-run on every state)
  'test/mesh/machine-truth.test.ts': 6.6,
  'test/transport/sshd-clean-login.test.ts': 6.0,
  'test/transport/ssh-serve-drops.test.ts': 4.0, // round 9, rough: 2–6 s at load 10–20 (one sshd, 3 short cases)
  'test/integration/retire-store-moto.test.ts': 5.8,
  'test/integration/two-controllers-s3.test.ts': 5.6,
  'test/provisioner/provisioner-heartbeat.test.ts': 5.3,
  'test/mesh/way-out.test.ts': 5.0, // round 7, rough (not from the quiet run)
  'test/authority/chained-crash.test.ts': 5.0, // round 8, rough: 10 s at load ~8
  'test/mesh/later-command-login.test.ts': 8.0, // round 8, rough (a Debian initdb, then 3 short cases)
  'test/provisioner/provision-cli.test.ts': 4.9,
  'test/e2e/drill-dumb.test.ts': 4.9,
  'test/mesh/rotation-journal-failure.test.ts': 4.8,
  'test/mesh/alternating-cli.test.ts': 4.7,
  'test/e2e/key-reads-tmux.test.ts': 4.4,
  'test/reliability/crash-force.test.ts': 15.0, // round 8, rough: 33 s at load ~8 (4 CLI re-runs as typed)
  'test/e2e/outside-text-views.test.tsx': 4.4,
  'test/components/screenshots.test.tsx': 4.4,
  'test/share/billet-reads-baton.test.ts': 6.5,
  'test/share/billet-document.test.ts': 4.4,
  'test/share/rotate-says-store.test.ts': 3.7,
  'test/mesh/mesh-tty.test.ts': 3.9,
  'test/components/failover-screens.test.tsx': 3.8,
  'test/mesh/app-reads.test.ts': 3.5, // round 7, rough (not from the quiet run)
  'test/integration/lineage-cells.test.ts': 3.2,
  'test/components/rotation-view.test.tsx': 3.0,
  'test/cli-manners.test.ts': 3.0,
  'test/authority/ca-command.test.ts': 3.0,
};
