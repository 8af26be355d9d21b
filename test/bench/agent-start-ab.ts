/**
 * One agent start on the machine's side, for two source trees, against `cat`: the CPU a holder
 * spends per start, as sshd runs it (`bash -c '<the command ssh hands the login shell>'`, the
 * session's stdin from a file), in interleaved rounds. Not a bench case: it needs two trees.
 *
 *   npx tsx test/bench/agent-start-ab.ts <tree A> <tree B> [starts=200] [rounds=3]
 *
 * e.g. A an export of main (`git archive main | tar -x -C /tmp/a`), B this tree. Each tree's
 * own src/transport/remote-scripts.ts builds its command and its stdin (a tree whose sessions
 * carry the program first exports agentInput). Two starts are measured: `hello` (resolve), and
 * `serve` answering one `files digests` of one path and ending (what `mesh status` costs a
 * machine); the floor is `bash -c 'cat <that file>'`, the status floor's remote command.
 * Each figure is the children's CPU of one bash running the starts one after another
 * (bash's `times`), divided by the starts: on a shared host the steadier figure than wall time.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const [treeA, treeB, startsText = '200', roundsText = '3'] = process.argv.slice(2);
if (!treeA || !treeB) throw new Error('usage: agent-start-ab.ts <tree A> <tree B> [starts] [rounds]');
const starts = Number(startsText);
const rounds = Number(roundsText);

interface Scripts {
  agentCommand(args: readonly string[]): string;
  agentInput?(input?: string): string;
}

const dir = mkdtempSync(path.join(tmpdir(), 'baton-agent-start-'));
try {
  const file = path.join(dir, 'provides', 'pg-main', 'app');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, 'user=app password\n', { mode: 0o600 });

  /** A start: the command for `bash -c` and the file its stdin comes from. */
  const start = (name: string, command: string, input: string) => {
    const stdin = path.join(dir, `${name}.in`);
    writeFileSync(stdin, input);
    const script = path.join(dir, `${name}.cmd`);
    writeFileSync(script, command);
    return { name, command: script, stdin };
  };
  const kinds = [start('floor', `cat ${file}`, '')];
  for (const [label, tree] of [
    ['A', treeA],
    ['B', treeB],
  ] as const) {
    const scripts = (await import(path.resolve(tree, 'src/transport/remote-scripts.ts'))) as Scripts;
    const input = (text: string) => scripts.agentInput?.(text) ?? text;
    kinds.push(start(`${label} hello`, scripts.agentCommand(['hello']), input('')));
    kinds.push(
      start(
        `${label} serve+digests`,
        scripts.agentCommand(['serve', '2']),
        input(`files digests 1 0\n${file}\n`),
      ),
    );
  }
  // Each start once, checked: an agent that failed would measure nothing.
  for (const k of kinds) {
    const out = execFileSync('sh', ['-c', `bash -c "$(cat '${k.command}')" < '${k.stdin}'`], {
      encoding: 'utf8',
    });
    if (k.name !== 'floor' && !out.startsWith('@baton ')) throw new Error(`${k.name} answered: ${out}`);
  }
  /** CPU ms per start: bash's `times` reports its children's user and system time. */
  const cpuPerStart = (k: (typeof kinds)[number]) => {
    const out = execFileSync(
      'bash',
      [
        '-c',
        `cmd=$(cat '${k.command}'); for ((i = 0; i < ${starts}; i++)); do bash -c "$cmd" < '${k.stdin}' > /dev/null; done; times`,
      ],
      { encoding: 'utf8' },
    );
    const children = out.trim().split('\n').at(-1)!;
    const secs = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
    return ((secs[0]! + secs[1]!) * 1000) / starts;
  };
  const sums = new Map<string, number[]>();
  for (let r = 0; r < rounds; r++) {
    const order = kinds.map((_, i) => kinds[(i + r) % kinds.length]!);
    for (const k of order) sums.set(k.name, [...(sums.get(k.name) ?? []), cpuPerStart(k)]);
    process.stderr.write(
      `round ${r + 1}: ${kinds.map((k) => `${k.name} ${sums.get(k.name)!.at(-1)!.toFixed(2)}`).join(', ')} ms\n`,
    );
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const m = (name: string) => median(sums.get(name)!);
  const floor = m('floor');
  const lines = [
    `CPU per start, median of ${rounds} rounds of ${starts} (floor: cat ${floor.toFixed(2)} ms)`,
  ];
  for (const what of ['hello', 'serve+digests']) {
    const a = m(`A ${what}`);
    const b = m(`B ${what}`);
    lines.push(
      `${what}: A ${a.toFixed(2)} ms (${(a - floor).toFixed(2)} over cat), B ${b.toFixed(2)} ms (${(b - floor).toFixed(2)} over cat), B/A ${(b / a).toFixed(2)}×`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
