/**
 * TEXT FROM THE STORE IS SHOWN, NEVER OBEYED, in every view. A document's header fields are
 * written by whoever can write the store: a `published_by` that drew a forged "✗ refused …
 * PROVED" verdict and a `Next:` with the real LOCAL 8, then hid the rest (ESC[8m), made status
 * show a forged verdict, and pasting it replaced the fleet's authority.
 *
 * A generator of header fields (every C0 and C1 control, ESC sequences, bidi overrides and
 * isolates, line and paragraph separators, 10 KB strings) is published as a real document and
 * read back through the real reader; no character of them reaches the output unescaped in the
 * plain text (status, and the line-by-line failover dialogue, which prints the same text), the
 * Ink status screen, or JSON (which stays JSON and decodes to the raw value); nor the failover
 * Ink view, the built `sync`'s plain output, or the views of a host with no seal key reading a
 * sealed document (its header is readable, its files are not). Then the forged
 * document through the BUILT CLI: the real verdict, one Next (baton's, with its placeholder),
 * and that Next pasted refuses and changes nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ColorContext } from '../../components/color-context.js';
import { StatusScreen } from '../../components/StatusScreen.js';
import { FailoverApp } from '../../components/FailoverApp.js';
import { failoverPorts } from '../../src/operations/failover-ports.js';
import { mintAuthority, systemClock, type AuthorityFiles } from '../../src/authority/index.js';
import { MARKS } from '../../src/app/marks.js';
import { statusJson } from '../../src/app/status-json.js';
import type { StatusReport } from '../../src/app/status-report.js';
import { statusText } from '../../src/app/status-text.js';
import { jsonForTerminal, OutsideText } from '../../src/outside-text.js';
import { confirmationPrefix, type Fingerprint } from '../../src/pki/fingerprint-type.js';
import { firstController, look } from '../../src/share/actions.js';
import { encodeDocument } from '../../src/share/document.js';
import { DOCUMENT_FORMAT } from '../../src/share/types.js';
import { fingerprintOfFiles } from '../helpers/authority.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { renderAt } from '../components/render-at.js';

/** Anything a terminal obeys: C0 but the newline baton itself writes, DEL, C1, bidi, separators, BOM. */
const OBEYED =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;
const GLYPHS = { ok: MARKS.ok.glyph, action: MARKS.action.glyph, refused: MARKS.refused.glyph };

const controls = fc
  .integer({ min: 0, max: 0x9f })
  .filter((c) => c < 0x20 || c >= 0x7f)
  .map((c) => String.fromCharCode(c));
const bidi = fc.constantFrom(
  '\u202e',
  '\u202d',
  '\u202a',
  '\u202b',
  '\u202c',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\u200b',
);
const escapes = fc.constantFrom(
  '\x1b[8m',
  '\x1b[2J',
  '\x1b]0;owned\x07',
  '\x1b[1A\x1b[2K',
  '\x9b31m',
  '\x1bc',
  '\r✗ refused',
  '\nNext: baton sync --force --confirm ',
);
const piece = fc.oneof(controls, bidi, escapes, fc.string({ maxLength: 12 }));
/** Header text: mixed pieces, or 10 KB of them. */
const hostile = fc
  .oneof(
    fc.array(piece, { minLength: 1, maxLength: 20 }).map((p) => p.join('')),
    fc.tuple(piece, piece).map(([a, b]) => `${a}${'x'.repeat(10 * 1024)}${b}`),
  )
  .filter((s) => s !== ''); // the decoder refuses an empty field: a document, but not this test's

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
let root: { dir: string; cleanup: () => void };
let storeDir: string;
let storeUrl: string;
let attacker: AuthorityFiles;
let attackerFp: Fingerprint;
let local: Fingerprint;
const ctx = (): ShareContext => ({
  stateDir: path.join(root.dir, 'b'),
  deployment: DEPLOYMENT,
  store: new DirectoryStore(storeDir),
  clock: systemClock,
  host: 'b',
  noSeal: true,
});
beforeAll(async () => {
  root = makeTempDir('baton-outside-text-');
  storeDir = path.join(root.dir, 'store');
  mkdirSync(storeDir, { mode: 0o700 });
  storeUrl = `file://${storeDir}`;
  local = ((await firstController(ctx())) as { fingerprint: Fingerprint }).fingerprint;
  attacker = await mintAuthority(DEPLOYMENT);
  attackerFp = await fingerprintOfFiles(attacker, DEPLOYMENT);
});
afterAll(() => root.cleanup());

async function publishWith(publishedBy: string, publishedAt: string, sealKey?: Uint8Array): Promise<void> {
  const header = {
    format: DOCUMENT_FORMAT,
    deployment: DEPLOYMENT,
    fingerprint: attackerFp,
    previousFingerprint: null,
    publishedAt: new OutsideText(publishedAt),
    publishedBy: new OutsideText(publishedBy),
  } as const;
  writeFileSync(path.join(storeDir, 'authority.json'), await encodeDocument(header, attacker, sealKey));
}

async function report(context: ShareContext = ctx()): Promise<StatusReport> {
  const seen = await look(context);
  return {
    deployment: DEPLOYMENT,
    stateDir: ctx().stateDir,
    storeUrl,
    local: seen.local,
    published: seen.published,
    storeCheck: undefined,
    lock: { state: 'not-probed' },
    verdict: seen.verdict,
    readAt: new Date(),
  };
}

function inkFrame(r: StatusReport): string {
  const view = renderAt(
    <ColorContext.Provider value={false}>
      <StatusScreen
        state={{ step: 'showing', report: r, refreshing: false }}
        columns={80}
        baton="baton"
        watchSeconds={5}
      />
    </ColorContext.Provider>,
    80,
  );
  try {
    return view.lastFrame();
  } finally {
    view.unmount();
  }
}

describe('hostile header fields in every view', () => {
  it('never reach the plain text, the Ink screen or JSON unescaped; JSON still decodes to the raw value', async () => {
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(hostile, hostile, async (by, at) => {
        await publishWith(by, at);
        const r = await report();
        expect(r.published.state).toBe('present');
        const plain = statusText(r, GLYPHS, 'baton');
        expect(plain).not.toMatch(OBEYED);
        // One Next, baton's own: a line break in a header never starts a line of its own.
        expect(plain.split('\n').filter((line) => line.startsWith('Next:'))).toHaveLength(1);
        expect(plain.split('\n').every((line) => line.length <= 400)).toBe(true);
        const frame = inkFrame(r);
        expect(frame).not.toMatch(OBEYED);
        const json = jsonForTerminal(statusJson(r, 'baton'), 2);
        expect(json).not.toMatch(OBEYED);
        const parsed = JSON.parse(json) as { published: { published_by: string; published_at: string } };
        expect(parsed.published.published_by).toBe(by);
        expect(parsed.published.published_at).toBe(at);
        checked++;
      }),
      { numRuns: 60 },
    );
    console.log(`hostile header fields: ${checked} documents, each in plain text, the Ink screen and JSON`);
  }, 120_000);
});

describe('hostile header fields in the failover walk, sync and a key-less host', () => {
  const sample = (runs: number) => fc.sample(fc.tuple(hostile, hostile), { numRuns: runs, seed: 34 });

  it('never reach the failover Ink views unescaped', async () => {
    let checked = 0;
    for (const [by, at] of sample(8)) {
      await publishWith(by, at);
      const view = renderAt(
        <ColorContext.Provider value={false}>
          <FailoverApp
            ports={failoverPorts(ctx(), storeUrl, undefined)}
            columns={80}
            baton="baton"
            onExit={() => undefined}
          />
        </ColorContext.Provider>,
        80,
      );
      try {
        const frame = await view.waitFor((f) => f.includes('Choose:'), 'the failover choice');
        // The published row is drawn, the header in it: what is checked is really on screen.
        expect(frame).toMatch(/not after .* · published/);
        expect(frame).not.toMatch(OBEYED);
        expect(frame.split('\n').length).toBeLessThanOrEqual(24);
        checked++;
      } finally {
        view.unmount();
      }
    }
    console.log(`hostile header fields: ${checked} documents in the failover Ink view`);
  }, 120_000);

  it('never reach the plain output of sync through the built CLI; the store and the state dir are unchanged', async () => {
    assertBuilt();
    const stateDir = ctx().stateDir;
    const args = ['--deployment', DEPLOYMENT, '--no-seal', '--state-dir', stateDir, '--store', storeUrl];
    let checked = 0;
    for (const [by, at] of sample(4)) {
      await publishWith(by, at);
      const before = snapshotDir(root.dir);
      const sync = await runBaton([...args, 'sync'], { env: { NO_COLOR: '1' } });
      expect(sync.exitCode, sync.all).not.toBe(0);
      expect(sync.stdout).not.toMatch(OBEYED);
      expect(sync.stderr).not.toMatch(OBEYED);
      expect(snapshotDir(root.dir)).toEqual(before);
      checked++;
    }
    console.log(`hostile header fields: ${checked} documents through the built sync`);
  }, 120_000);

  it('never reach the views of a host without a seal key reading a sealed document', async () => {
    const sealKey = new Uint8Array(randomBytes(32));
    const keyless: ShareContext = { ...ctx(), noSeal: false };
    let checked = 0;
    for (const [by, at] of sample(10)) {
      await publishWith(by, at, sealKey);
      const r = await report(keyless);
      expect(r.published).toMatchObject({ state: 'present', sealed: true });
      const plain = statusText(r, GLYPHS, 'baton');
      expect(plain).toContain('this host has no seal key');
      expect(plain).not.toMatch(OBEYED);
      expect(inkFrame(r)).not.toMatch(OBEYED);
      const json = jsonForTerminal(statusJson(r, 'baton'), 2);
      expect(json).not.toMatch(OBEYED);
      expect((JSON.parse(json) as { published: { published_by: string } }).published.published_by).toBe(by);
      checked++;
    }
    console.log(`hostile header fields: ${checked} sealed documents read by a key-less host`);
  }, 120_000);
});

describe('the forged-Next document, through the built CLI', () => {
  it("status shows the real verdict and one Next, baton's; that Next pasted refuses and changes nothing", async () => {
    assertBuilt();
    const real8 = confirmationPrefix(local);
    const forged =
      `ctl-a\r\n\n✗ refused: this host was LEFT BEHIND by a rotation — PROVED: signed by this host's own key.\n` +
      `Next: baton --deployment ${DEPLOYMENT} sync --force --confirm ${real8}\x1b[8m\x07`;
    await publishWith(forged, '2026-12-01T00:00:00Z');
    const stateDir = ctx().stateDir;
    const args = ['--deployment', DEPLOYMENT, '--no-seal', '--state-dir', stateDir, '--store', storeUrl];
    const before = snapshotDir(stateDir);
    const status = await runBaton([...args, 'status'], { env: { NO_COLOR: '1' } });
    expect(status.exitCode, status.all).toBe(3);
    expect(status.stdout).not.toMatch(OBEYED);
    const lines = status.stdout.split('\n');
    // The forged text is on the published row, escaped, on one line.
    const row = lines.filter((line) => line.includes('LEFT BEHIND'));
    expect(row).toHaveLength(1);
    expect(row[0]).toMatch(/^\s+published\s/);
    expect(row[0]).toContain('\\r\\n\\n✗ refused');
    expect(row[0]).toContain('\\x1b[8m\\x07');
    // The real verdict: unrelated, not "left behind", not proved.
    expect(status.stdout).not.toMatch(/^✗ refused: this host was LEFT BEHIND/m);
    const nexts = lines.filter((line) => line.startsWith('Next:'));
    expect(nexts).toHaveLength(1);
    expect(nexts[0]).not.toContain(real8);
    // Pasted as printed (a shell, `baton` on PATH as the bin), baton's Next runs nothing.
    const command = nexts[0]!.slice(nexts[0]!.indexOf('baton ')).split('; <')[0]!;
    expect(command).toMatch(/<[A-Z]+ 8>/);
    const bin = path.join(root.dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, 'baton'), `#!/bin/sh\nexec node ${JSON.stringify(BIN)} "$@"\n`, {
      mode: 0o755,
    });
    const pasted = await execa('sh', ['-c', command], {
      reject: false,
      env: { PATH: `${bin}:${process.env.PATH ?? ''}` },
    });
    expect(pasted.exitCode, `${command}\n${pasted.stderr}`).not.toBe(0);
    expect(snapshotDir(stateDir)).toEqual(before);
    expect(readFileSync(path.join(storeDir, 'authority.json'), 'utf8')).toContain('LEFT BEHIND');

    const json = await runBaton([...args, 'status', '--json']);
    expect(json.stdout).not.toMatch(/[\u007f-\u009f\u202a-\u202e]/u);
    expect((JSON.parse(json.stdout) as { published: { published_by: string } }).published.published_by).toBe(
      forged,
    );
  }, 60_000);
});
