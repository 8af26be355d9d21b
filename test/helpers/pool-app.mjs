// A pooled app (issue 45, case 2): it reads its consumer file ONCE into a pg.Pool that keeps its
// connections (idleTimeoutMillis 0, as a long-running service's pool does) and runs queries in a
// loop on `workers` workers. Its "reload" is SIGHUP: it reads the file again into a NEW pool and
// ends the old one once its queries finish. It counts every query, ok or failed (with the
// SQLSTATE), into `<log>` as one JSON object, rewritten every 100 ms and at SIGTERM. No secret in
// its argv or environment: it reads the file.
// argv: <file> <role> <host> <port> <log> <pidfile> [workers]
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import pg from 'pg';

const [file, role, host, port, log, pidfile, workers = '2'] = process.argv.slice(2);

const password = () => readFileSync(file, 'utf8').replace(/\n$/, '');
const poolOf = () =>
  new pg.Pool({
    host,
    port: Number(port),
    database: 'postgres',
    user: role,
    password: password(),
    max: Number(workers),
    idleTimeoutMillis: 0,
    application_name: 'pool-app',
  });
let pool = poolOf();
pool.on('error', () => undefined);
const counts = { ok: 0, failed: 0, codes: {}, reloads: 0 };
process.on('SIGHUP', () => {
  const old = pool;
  pool = poolOf();
  pool.on('error', () => undefined);
  counts.reloads += 1;
  void old.end().catch(() => undefined);
});
let running = true;
// Written aside and renamed: the test reads it while it is rewritten.
const save = () => {
  writeFileSync(`${log}.tmp`, JSON.stringify(counts));
  renameSync(`${log}.tmp`, log);
};
process.on('SIGTERM', () => (running = false));
writeFileSync(pidfile, String(process.pid));
const timer = setInterval(save, 100);
async function worker() {
  while (running) {
    try {
      await pool.query('SELECT 1');
      counts.ok += 1;
    } catch (error) {
      counts.failed += 1;
      const code = error?.code ?? 'none';
      counts.codes[code] = (counts.codes[code] ?? 0) + 1;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}
await Promise.all(Array.from({ length: Number(workers) }, worker));
clearInterval(timer);
save();
await pool.end().catch(() => undefined);
process.exit(0);
