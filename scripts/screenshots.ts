/**
 * `npm run screenshots`: real runs of the BUILT CLI in a real terminal (a private tmux server),
 * captured with their colours (`capture-pane -p -e`) and turned into SVG — so the pictures in
 * the README are what an operator sees, not a mock-up that drifts from the code.
 *
 * Scenes: status in sync (side by side at 120 columns, and at 80), status of a host left
 * behind by a rotation, the force screen with the prefix typed, and the failover result; the
 * gate that keeps this host's authority over a sibling's, its PUBLISHED prefix typed; the
 * rotation preview (affected holders, the window, the typed count) and the closed gate; the
 * drill's rail and its summary.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../src/mesh/digest.js';
import { freePort } from '../src/sandbox/free-port.js';
import { shotHosts } from './screenshot-hosts.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'baton.js');
const OUT = path.join(ROOT, 'screenshots');

// ---------------------------------------------------------------------------------------
// ANSI → SVG

interface Style {
  fg: string | undefined;
  bg: string | undefined;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
  inverse: boolean;
}

const PLAIN: Style = {
  fg: undefined,
  bg: undefined,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
  inverse: false,
};
const FG = '#d4d4d4';
const BG = '#1e1e1e';
const BASIC = ['#000000', '#cd3131', '#0dbc79', '#e5e510', '#2472c8', '#bc3fbc', '#11a8cd', '#e5e5e5'];
const BRIGHT = ['#666666', '#f14c4c', '#23d18b', '#f5f543', '#3b8eea', '#d670d6', '#29b8db', '#ffffff'];

function color256(n: number): string {
  if (n < 8) return BASIC[n]!;
  if (n < 16) return BRIGHT[n - 8]!;
  if (n < 232) {
    const i = n - 16;
    const level = (v: number) => (v === 0 ? 0 : 55 + v * 40);
    return rgb(level(Math.floor(i / 36)), level(Math.floor(i / 6) % 6), level(i % 6));
  }
  const g = 8 + (n - 232) * 10;
  return rgb(g, g, g);
}

function rgb(r: number, g: number, b: number): string {
  return `#${[r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

/** Applies one SGR sequence's parameters to a style. */
function applySgr(style: Style, params: number[]): Style {
  const s = { ...style };
  for (let i = 0; i < params.length; i++) {
    const p = params[i]!;
    if (p === 0) Object.assign(s, PLAIN);
    else if (p === 1) s.bold = true;
    else if (p === 2) s.dim = true;
    else if (p === 3) s.italic = true;
    else if (p === 4) s.underline = true;
    else if (p === 7) s.inverse = true;
    else if (p === 22) s.bold = s.dim = false;
    else if (p === 23) s.italic = false;
    else if (p === 24) s.underline = false;
    else if (p === 27) s.inverse = false;
    else if (p >= 30 && p <= 37) s.fg = BASIC[p - 30];
    else if (p >= 90 && p <= 97) s.fg = BRIGHT[p - 90];
    else if (p === 39) s.fg = undefined;
    else if (p >= 40 && p <= 47) s.bg = BASIC[p - 40];
    else if (p >= 100 && p <= 107) s.bg = BRIGHT[p - 100];
    else if (p === 49) s.bg = undefined;
    else if ((p === 38 || p === 48) && params[i + 1] === 5) {
      const c = color256(params[i + 2] ?? 0);
      if (p === 38) s.fg = c;
      else s.bg = c;
      i += 2;
    } else if ((p === 38 || p === 48) && params[i + 1] === 2) {
      const c = rgb(params[i + 2] ?? 0, params[i + 3] ?? 0, params[i + 4] ?? 0);
      if (p === 38) s.fg = c;
      else s.bg = c;
      i += 4;
    }
  }
  return s;
}

interface Run {
  readonly text: string;
  readonly style: Style;
  readonly column: number;
}

/** Splits one captured line into styled runs, by column. */
function parseLine(line: string, start: Style): { runs: Run[]; end: Style } {
  const runs: Run[] = [];
  let style = start;
  let column = 0;
  let text = '';
  const flush = () => {
    if (text) runs.push({ text, style, column: column - [...text].length });
    text = '';
  };
  const pattern = /\u001b\[([0-9;]*)([A-Za-z])/y;
  for (let i = 0; i < line.length;) {
    pattern.lastIndex = i;
    const m = pattern.exec(line);
    if (m) {
      if (m[2] === 'm') {
        flush();
        style = applySgr(style, m[1] === '' ? [0] : m[1]!.split(';').map(Number));
      }
      i = pattern.lastIndex;
      continue;
    }
    const ch = String.fromCodePoint(line.codePointAt(i)!);
    text += ch;
    column++;
    i += ch.length;
  }
  flush();
  return { runs, end: style };
}

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function ansiToSvg(screen: string, columns: number, rows: number, title: string): string {
  const cw = 8.4;
  const lh = 18;
  const pad = 12;
  const bar = 28;
  const width = Math.ceil(columns * cw + pad * 2);
  const height = Math.ceil(rows * lh + pad * 2 + bar);
  const body: string[] = [];
  let style = PLAIN;
  screen
    .split('\n')
    .slice(0, rows)
    .forEach((line, row) => {
      const { runs, end } = parseLine(line, style);
      style = end;
      const y = bar + pad + row * lh;
      for (const r of runs) {
        const fg = r.style.inverse ? (r.style.bg ?? BG) : (r.style.fg ?? FG);
        const bg = r.style.inverse ? (r.style.fg ?? FG) : r.style.bg;
        const x = pad + r.column * cw;
        const len = [...r.text].length;
        if (bg)
          body.push(
            `<rect x="${x.toFixed(1)}" y="${y}" width="${(len * cw).toFixed(1)}" height="${lh}" fill="${bg}"/>`,
          );
        if (!r.text.trim()) continue;
        const attrs = [
          `x="${x.toFixed(1)}"`,
          `y="${y + 13}"`,
          `fill="${fg}"`,
          r.style.bold ? 'font-weight="bold"' : '',
          r.style.dim ? 'fill-opacity="0.6"' : '',
          r.style.italic ? 'font-style="italic"' : '',
          r.style.underline ? 'text-decoration="underline"' : '',
          `textLength="${(len * cw).toFixed(1)}"`,
          'lengthAdjust="spacingAndGlyphs"',
        ].filter(Boolean);
        body.push(`<text ${attrs.join(' ')}>${escapeXml(r.text)}</text>`);
      }
    });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(title)}">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${width}" height="${height}" rx="8" fill="${BG}"/>`,
    `<circle cx="18" cy="14" r="5" fill="#ff5f56"/><circle cx="36" cy="14" r="5" fill="#ffbd2e"/><circle cx="54" cy="14" r="5" fill="#27c93f"/>`,
    `<text x="${width / 2}" y="18" fill="#888888" font-family="sans-serif" font-size="12" text-anchor="middle">${escapeXml(title)}</text>`,
    `<g font-family="'DejaVu Sans Mono','Menlo','Consolas',monospace" font-size="14" xml:space="preserve">`,
    ...body,
    '</g>',
    '</svg>',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------
// real runs in tmux

const quote = (w: string) => `'${w.replace(/'/g, `'\\''`)}'`;

class Pane {
  constructor(
    readonly socket: string,
    readonly columns: number,
    readonly rows: number,
  ) {}

  static async start(args: string[], cwd: string, columns: number, rows: number): Promise<Pane> {
    const socket = `baton-shots-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
    const command = `env -u CI -u CONTINUOUS_INTEGRATION -u NO_COLOR TERM=xterm-256color COLORTERM=truecolor ${['node', BIN, ...args].map(quote).join(' ')}; exec sleep 600`;
    await run('tmux', [
      '-L',
      socket,
      '-f',
      '/dev/null',
      'new-session',
      '-d',
      '-x',
      String(columns),
      '-y',
      String(rows),
      '-c',
      cwd,
      `sh -c ${quote(command)}`,
    ]);
    return new Pane(socket, columns, rows);
  }

  async capture(escapes = false): Promise<string> {
    const { stdout } = await run('tmux', [
      '-L',
      this.socket,
      'capture-pane',
      '-p',
      ...(escapes ? ['-e'] : []),
      '-t',
      '0',
    ]);
    return stdout;
  }

  async waitFor(text: string, timeout = 20_000): Promise<void> {
    const deadline = Date.now() + timeout;
    for (;;) {
      const screen = await this.capture();
      if (screen.includes(text)) return;
      if (Date.now() > deadline) throw new Error(`screenshots: waited for "${text}"; screen:\n${screen}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async keys(...keys: string[]): Promise<void> {
    await run('tmux', ['-L', this.socket, 'send-keys', '-t', '0', ...keys]);
  }

  async type(text: string): Promise<void> {
    await run('tmux', ['-L', this.socket, 'send-keys', '-t', '0', '-l', text]);
  }

  /**
   * The picture, and beside it the same frame as plain text: test/components/screenshots.test.tsx
   * renders the same states in-process and compares, so a picture that no longer shows what
   * the code prints fails a test instead of drifting.
   */
  async shoot(name: string, title: string): Promise<void> {
    const screen = await this.capture(true);
    writeFileSync(path.join(OUT, `${name}.svg`), ansiToSvg(screen, this.columns, this.rows, title));
    const text = (await this.capture()).split('\n').map((line) => line.trimEnd());
    while (text.length > 0 && text[text.length - 1] === '') text.pop();
    writeFileSync(path.join(OUT, `${name}.txt`), `${text.join('\n')}\n`);
    console.log(`screenshots/${name}.svg`);
  }

  /** The pane's text once it matches `pattern`, for a value the walk must type back (a fingerprint, a count). */
  async read(pattern: RegExp, timeout = 20_000): Promise<string> {
    const deadline = Date.now() + timeout;
    for (;;) {
      const match = pattern.exec(await this.capture());
      if (match) return match[1]!;
      if (Date.now() > deadline)
        throw new Error(`screenshots: waited for ${String(pattern)}; screen:\n${await this.capture()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stops the private server and removes its socket file (tmux leaves it behind). */
  async kill(): Promise<void> {
    const socketPath = await run('tmux', ['-L', this.socket, 'display-message', '-p', '#{socket_path}'])
      .then(({ stdout }) => stdout.trim())
      .catch(() => '');
    await run('tmux', ['-L', this.socket, 'kill-server']).catch(() => undefined);
    if (socketPath) rmSync(socketPath, { force: true });
  }
}

/** Runs the CLI in a host's directory (its baton.yaml); exit 3 ("action needed") is an answer, not a failure. */
async function baton(cwd: string, args: string[]): Promise<string> {
  try {
    return (await run('node', [BIN, ...args], { cwd })).stdout;
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    if (e.code === 3) return e.stdout ?? '';
    throw new Error(`screenshots: baton ${args.join(' ')} failed (${e.code}): ${e.stderr ?? ''}`, {
      cause: error,
    });
  }
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  // Always under /tmp: the paths in the pictures are what test/components/screenshots.test.tsx renders.
  const tmp = mkdtempSync('/tmp/baton-shots-');
  const panes: Pane[] = [];
  const pane = async (cwd: string, args: string[], columns = 80, rows = 24) => {
    const p = await Pane.start(args, cwd, columns, rows);
    panes.push(p);
    return p;
  };
  try {
    const { a, b } = await shotHosts(tmp, baton);

    const wide = await pane(a, ['status'], 120, 24);
    await wide.waitFor('Next:');
    await wide.shoot('status-in-sync-wide', 'baton status: in sync (120 columns)');
    const inSync = await pane(a, ['status']);
    await inSync.waitFor('Next:');
    await inSync.shoot('status-in-sync', 'baton status: in sync (80×24)');

    // ctl-a rotates and publishes; ctl-b is left behind by the rotation.
    await baton(a, ['ca', 'rotate']);
    await baton(a, ['sync', '--push']);
    const diverged = await pane(b, ['status']);
    await diverged.waitFor('Next:');
    await diverged.shoot('status-diverged', 'baton status: left behind by a rotation (80×24)');

    const local = (JSON.parse(await baton(b, ['status', '--json'])) as { local: { fingerprint: string } })
      .local.fingerprint;
    const walk = await pane(b, ['failover']);
    await walk.waitFor('Replace the local authority (force)');
    await walk.keys('j');
    await walk.waitFor('› Replace the local authority');
    await walk.keys('Enter');
    await walk.waitFor('marked "type these"');
    await walk.type(local.slice(7, 15));
    await walk.waitFor('[ Replace ] enabled');
    await walk.shoot('failover-force', 'baton failover: the force screen (80×24)');
    await walk.keys('Enter');
    await walk.waitFor('Read again:');
    await walk.shoot('failover-result', 'baton failover: the result, read again (80×24)');
    await walk.keys('q');

    // Both retire, then each rotates on its own and ctl-a publishes first: ctl-b and the store
    // are siblings. The push-over gate, the PUBLISHED prefix typed; left with Esc, nothing written.
    const previous = (
      JSON.parse(await baton(a, ['status', '--json'])) as { local: { previous_fingerprint: string } }
    ).local.previous_fingerprint;
    for (const host of [a, b]) await baton(host, ['ca', 'retire', '--confirm', previous.slice(7, 15)]);
    await baton(a, ['ca', 'rotate']);
    await baton(a, ['sync', '--push']);
    await baton(b, ['ca', 'rotate']);
    const theirs = (
      JSON.parse(await baton(b, ['status', '--json'])) as { published: { fingerprint: string } }
    ).published.fingerprint;
    const keep = await pane(b, ['failover']);
    await keep.waitFor('› Leave it as it is');
    await keep.keys('j');
    await keep.keys('j');
    await keep.waitFor("› Keep this host's authority");
    await keep.keys('Enter');
    await keep.waitFor('[ Publish ] disabled');
    await keep.type(theirs.slice(7, 15));
    await keep.waitFor('[ Publish ] enabled');
    await keep.shoot('failover-push', "baton failover: keeping this host's authority over a sibling (80×24)");
    await keep.keys('Escape');
    await keep.waitFor('› Leave it as it is');
    await keep.keys('q');

    // A mesh of three machines reached through the local transport: the rotation preview.
    const mesh = path.join(tmp, 'mesh');
    for (const m of ['db1', 'web1', 'web2', 'web3'])
      mkdirSync(path.join(mesh, 'machines', m), { recursive: true });
    const machines = ['db1', 'web1', 'web2'].map(
      (m) => `  - { name: ${m}, address: machines/${m}, transport: local }`,
    );
    const pairs = [
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      'consumers:',
      '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main] }',
      '  - { name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
    ];
    writeFileSync(path.join(mesh, 'mesh.yaml'), ['machines:', ...machines, ...pairs, ''].join('\n'));
    const rotate = (inventory: string) => [
      '--state-dir',
      path.join(mesh, 'state'),
      'mesh',
      'rotate',
      '--provider',
      'pg-main',
      '--inventory',
      inventory,
      '--wait',
      '0',
    ];
    // Three pairs: the preview folds the windows after the first ("…and 2 more"), as it does for any rotation.
    writeFileSync(
      path.join(mesh, 'mesh-3.yaml'),
      [
        'machines:',
        ...machines,
        '  - { name: web3, address: machines/web3, transport: local }',
        ...pairs,
        '  - { name: web3-app, machine: web3, reads: each-connection, uses: [pg-main] }',
        '',
      ].join('\n'),
    );
    const preview = await pane(mesh, rotate('mesh-3.yaml'));
    await preview.waitFor('(the number of credentials)');
    await preview.type('3');
    await preview.waitFor('(Enter rotates)');
    await preview.shoot(
      'rotation-preview',
      'baton mesh rotate: affected holders, the window, the typed count (80×24)',
    );
    await preview.keys('Escape');
    await preview.waitFor('Cancelled');
    await preview.keys('q');

    // One more holder behind a port nothing listens on: the gate stays closed, nothing is sent.
    const closed = await freePort();
    writeFileSync(
      path.join(mesh, 'mesh-web3.yaml'),
      [
        'machines:',
        ...machines,
        `  - { name: web3, address: 127.0.0.1, transport: ssh, port: ${closed}, connect_timeout: 2, strict_host_key_checking: 'no', config: /dev/null }`,
        ...pairs,
        '  - { name: web3-app, machine: web3, reads: each-connection, uses: [pg-main] }',
        '',
      ].join('\n'),
    );
    const gate = await pane(mesh, rotate('mesh-web3.yaml'));
    await gate.waitFor('Gate closed');
    await gate.shoot('rotation-gate-closed', 'baton mesh rotate: the gate closed, nothing sent (80×24)');
    await gate.keys('q');

    // mesh status: two pairs seeded with a password the database has; db1's provisioner has
    // receipted web1-app's and not yet web2-app's (pending).
    for (const consumer of ['web1-app', 'web2-app']) {
      const secretFile = path.join(mesh, `${consumer}.password`);
      writeFileSync(secretFile, `drill-password-of-${consumer}-${Math.random().toString(16).slice(2)}`, {
        mode: 0o600,
      });
      await baton(mesh, [
        '--state-dir',
        path.join(mesh, 'state'),
        'mesh',
        'seed',
        '--pair',
        `pg-main:${consumer}`,
        '--from-file',
        secretFile,
        '--inventory',
        'mesh.yaml',
      ]);
      if (consumer === 'web1-app') {
        const provides = path.join(mesh, 'machines', 'db1', 'var/lib/baton/mesh/provides/pg-main');
        mkdirSync(path.join(provides, RECEIPTS_DIR), { recursive: true, mode: 0o700 });
        const digest = secretDigest(readFileSync(path.join(provides, 'web1_app')));
        writeFileSync(
          path.join(provides, RECEIPTS_DIR, 'web1_app'),
          formatReceipt({ role: 'web1_app', digest, applied_at: new Date().toISOString() }),
          { mode: 0o600 },
        );
      }
    }
    const status = await pane(mesh, [
      '--state-dir',
      path.join(mesh, 'state'),
      'mesh',
      'status',
      '--inventory',
      'mesh.yaml',
    ]);
    await status.waitFor('pending');
    await status.shoot('mesh-status', 'baton mesh status: every pair by digest, worst first (80×24)');
    await status.keys('q');

    // An alternating pair seeded on its login a: its rotation moves it to b, with no window.
    writeFileSync(
      path.join(mesh, 'mesh-alt.yaml'),
      [
        'machines:',
        ...machines,
        '  - { name: web3, address: machines/web3, transport: local }',
        'providers:',
        '  - { name: pg-main, machine: db1, kind: postgres }',
        'consumers:',
        '  - { name: web3-app, machine: web3, reads: each-connection, uses: [pg-main], credential: alternating }',
        '',
      ].join('\n'),
    );
    const altSecret = path.join(mesh, 'web3-app.password');
    writeFileSync(altSecret, `drill-password-of-web3-app-${Math.random().toString(16).slice(2)}`, {
      mode: 0o600,
    });
    await baton(mesh, [
      '--state-dir',
      path.join(mesh, 'state'),
      'mesh',
      'seed',
      '--pair',
      'pg-main:web3-app',
      '--from-file',
      altSecret,
      '--inventory',
      'mesh-alt.yaml',
    ]);
    const alternating = await pane(mesh, [
      '--state-dir',
      path.join(mesh, 'state'),
      'mesh',
      'rotate',
      '--consumer',
      'web3-app',
      '--inventory',
      'mesh-alt.yaml',
      '--wait',
      '0',
    ]);
    await alternating.waitFor('(the number of credentials)');
    await alternating.type('1');
    await alternating.waitFor('(Enter rotates)');
    await alternating.shoot(
      'rotation-alternating',
      'baton mesh rotate: an alternating pair moves to its other login, window none (80×24)',
    );
    await alternating.keys('Escape');
    await alternating.waitFor('Cancelled');
    await alternating.keys('q');

    // The drill: its rail over step 1, then every step walked to the summary.
    const drill = await pane(tmp, ['drill']);
    await drill.waitFor('Enter begins the step', 90_000);
    await drill.shoot('drill-rail', 'baton drill: the rail and step 1 (80×24)');
    const goOn = async () => {
      await drill.waitFor('Enter goes on', 60_000);
      await drill.keys('Enter');
    };
    const begin = async () => {
      await drill.waitFor('Enter begins the step');
      await drill.keys('Enter');
    };
    // A task before its step's last shows its own checks; Enter opens the next task.
    const nextTask = async () => {
      await drill.waitFor('Enter: next task', 60_000);
      await drill.keys('Enter');
    };
    // Step 1: both status views.
    await drill.keys('Enter');
    await drill.waitFor('in sync:');
    await drill.type('q');
    await nextTask();
    await drill.waitFor('action needed');
    await drill.type('q');
    await goOn();
    // Step 2: adopt on ctl-b.
    await begin();
    await drill.waitFor('› Adopt the published authority');
    await drill.keys('Enter');
    await drill.waitFor('Enter confirms');
    await drill.keys('Enter');
    await drill.waitFor('Installed the published authority');
    await drill.type('q');
    await goOn();
    // Step 3: rotate and publish on ctl-b; ctl-a is refused, then forced.
    await begin();
    await drill.waitFor('Enter: rotate the authority on ctl-b');
    await drill.keys('Enter');
    await nextTask();
    await drill.waitFor("› Publish this host's authority");
    await drill.keys('Enter');
    await drill.waitFor('Enter confirms');
    await drill.keys('Enter');
    await drill.waitFor('Published SHA256:');
    await drill.type('q');
    await nextTask();
    await drill.waitFor('› Leave it as it is');
    const prefix = await drill.read(/LOCAL\s+SHA256:(\S{8})/);
    await drill.type('j');
    await drill.waitFor('› Replace the local authority (force)');
    await drill.keys('Enter');
    await drill.waitFor('marked "type these"');
    await drill.type(prefix);
    await drill.waitFor('[ Replace ] enabled');
    await drill.keys('Enter');
    await drill.waitFor('set aside in');
    await drill.type('q');
    await goOn();
    // Step 4: one pair rotated (one role), then another (alternating); the second view opens by itself.
    await begin();
    for (const consumer of ['web1-app', 'web2-app']) {
      const one = await drill.read(
        new RegExp(`--consumer ${consumer}[\\s\\S]*Type (\\d+) \\(the number of credentials\\)`),
        60_000,
      );
      await drill.type(one);
      await drill.waitFor('(Enter rotates)');
      await drill.keys('Enter');
      await drill.waitFor('q closes the view', 60_000);
      await drill.type('q');
      if (consumer === 'web1-app') await nextTask();
    }
    await goOn();
    // Step 5: the gate closes on an unplugged machine, then opens once it is back.
    await begin();
    await drill.waitFor('Enter: unplug worker1');
    await drill.keys('Enter');
    await nextTask();
    await drill.waitFor('Gate closed', 60_000);
    await drill.type('q');
    await nextTask();
    await drill.waitFor('Enter: bring worker1 back', 60_000);
    await drill.keys('Enter');
    await nextTask();
    const all = await drill.read(/Type (\d+) \(the number of credentials\)/, 60_000);
    await drill.type(all);
    await drill.waitFor('(Enter rotates)');
    await drill.keys('Enter');
    await drill.waitFor('q closes the view', 60_000);
    await drill.type('q');
    await goOn();
    await drill.waitFor('Drill complete', 60_000);
    await drill.shoot('drill-summary', 'baton drill: the summary after all five steps (80×24)');
    await drill.keys('Enter');
    await drill.waitFor('sandbox was removed', 30_000);
  } finally {
    await Promise.all(panes.map((p) => p.kill()));
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
