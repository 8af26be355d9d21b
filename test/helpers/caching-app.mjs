// An app as most apps are (test/helpers/password-app.ts startCachingApp): it reads its consumer
// file ONCE at start (and again on SIGHUP, its "reload"), then opens a NEW connection every
// `interval` ms, holds it `hold` ms (a pool's connection), and appends each attempt as a JSON line
// to its log: {user, ok, code, at}. No secret in its argv or environment: it reads the file.
// argv: <file> <role> <host> <port> <log> <pidfile> [interval] [hold]
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';

const [file, role, host, port, log, pidfile, interval = '100', hold = '400'] = process.argv.slice(2);

function parse(text) {
  const m = /^user=([a-z0-9_]+) password='((?:[^'\\]|\\.)*)'\s*$/.exec(text);
  if (m) return { user: m[1], password: m[2].replace(/\\(.)/g, '$1') };
  return { user: role, password: text };
}
let login;
const read = () => {
  try {
    login = parse(readFileSync(file, 'utf8'));
  } catch {
    login = undefined;
  }
};
read();
process.on('SIGHUP', read);
let running = true;
process.on('SIGTERM', () => (running = false));
writeFileSync(pidfile, String(process.pid));
const open = new Set();
while (running) {
  const at = Date.now();
  if (login) {
    const { user, password } = login;
    const client = new pg.Client({
      host,
      port: Number(port),
      database: 'postgres',
      user,
      password,
      application_name: 'caching-app',
    });
    client.on('error', () => undefined);
    const attempt = client
      .connect()
      .then(async () => {
        appendFileSync(log, `${JSON.stringify({ user, ok: true, at })}\n`);
        await new Promise((r) => setTimeout(r, Number(hold)));
      })
      .catch((error) =>
        appendFileSync(log, `${JSON.stringify({ user, ok: false, code: error.code ?? null, at })}\n`),
      )
      .finally(() => client.end().catch(() => undefined));
    open.add(attempt);
    attempt.finally(() => open.delete(attempt));
  }
  await new Promise((r) => setTimeout(r, Math.max(0, Number(interval) - (Date.now() - at))));
}
await Promise.all(open);
process.exit(0);
