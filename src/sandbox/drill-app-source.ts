/**
 * The drill's caching app, as the text of the file the sandbox installs on its consumer's machine
 * (`opt/<consumer>/app.cjs`). It runs as a process of its own, started and restarted by its
 * `reload:` (drill-apps.ts), from the sources under vitest and from the bundle alike: a file
 * written at start-up is the one form both can run with no build step, and it needs nothing but
 * the `pg` package baton already ships (its path comes in argv).
 *
 * What it does is what the incident was about: it reads its consumer file ONCE, at start, and
 * then opens a NEW connection every `interval` ms with what it read, appending one JSON line per
 * attempt to its log — `{pid, user, ok, code, at}`, never the password. Its pid file names it
 * once it has read its file (the restart waits for that), and is removed when it ends. It ends on
 * SIGTERM (after its open attempts), and by itself when the drill's process is gone or its pid
 * file no longer names it, so a drill killed with SIGKILL leaves no app hammering a dead port.
 */
export const DRILL_APP_SOURCE = String.raw`'use strict';
const fs = require('node:fs');
const [pgPath, consumer, file, role, host, port, log, pidFile, parentPid, interval] = process.argv.slice(2);
const pg = require(pgPath);

// An alternating pair's file names its login (libpq keyword/value); a single pair's is the bare password.
function parse(text) {
  const m = /^user=([a-z0-9_]+) password='((?:[^'\\]|\\.)*)'\s*$/.exec(text);
  if (m) return { user: m[1], password: m[2].replace(/\\(.)/g, '$1') };
  return { user: role, password: text };
}
let login;
try {
  login = parse(fs.readFileSync(file, 'utf8'));
} catch (error) {
  process.stderr.write(consumer + ': cannot read its credential file ' + file + ': ' + error.code + '\n');
  process.exit(1);
}
const record = (entry) => fs.appendFileSync(log, JSON.stringify({ pid: process.pid, ...entry, at: Date.now() }) + '\n');
record({ event: 'start', user: login.user });
fs.writeFileSync(pidFile + '.new', String(process.pid));
fs.renameSync(pidFile + '.new', pidFile);

const mine = () => {
  try {
    return fs.readFileSync(pidFile, 'utf8') === String(process.pid);
  } catch {
    return false;
  }
};
const drillAlive = () => {
  try {
    process.kill(Number(parentPid), 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
};
const open = new Set();
let timer;
let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  clearTimeout(timer);
  Promise.allSettled([...open]).then(() => {
    if (mine()) fs.rmSync(pidFile, { force: true });
    process.exit(0);
  });
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('SIGHUP', stop);

function tick() {
  if (stopping) return;
  if (!drillAlive() || !mine()) return stop();
  const client = new pg.Client({
    host,
    port: Number(port),
    database: 'postgres',
    user: login.user,
    password: login.password,
    ssl: false,
    application_name: consumer,
    connectionTimeoutMillis: 3000,
  });
  client.on('error', () => undefined);
  const attempt = client
    .connect()
    .then(() => client.query('SELECT 1'))
    .then(
      () => record({ user: login.user, ok: true }),
      (error) => record({ user: login.user, ok: false, code: error.code || null }),
    )
    .finally(() => client.end().catch(() => undefined));
  open.add(attempt);
  attempt.finally(() => open.delete(attempt));
  timer = setTimeout(tick, Number(interval));
}
tick();
`;
