/**
 * The remote side of the ssh transport: one short POSIX sh script per operation, each taking
 * the LIVE paths as arguments; most hand them to the agent (agent/baton-agent.pl). Secrets
 * arrive on stdin one per line, so no process on the holder ever carries one in argv.
 * umask 077 before anything is created: a staged secret is never readable by others, not
 * even for the instant between write and chmod.
 *
 * Every answer line starts with ANSWER_PREFIX: a login shell that prints a banner or a
 * .bashrc that echoes cannot be mistaken for a digest.
 */

import { agentSource } from './agent-program.js';
import { NO_PERL } from './agent-protocol.js';

export { ANSWER_PREFIX } from './agent-protocol.js';

/**
 * A script that runs the agent (agent/baton-agent.pl, docs/agent-protocol.md) in `mode` with the
 * script's arguments: the agent's text is perl's program (the here-document), so the session's
 * stdin moves to fd 3 first. Resolve refuses a holder without perl 5 before anything is sent; a
 * machine that lost it since is told so here, by name, rather than with the shell's "not found".
 */
function agent(mode: string, before = ''): string {
  return `${before}command -v perl >/dev/null 2>&1 || { echo '${NO_PERL}' >&2; exit 3; }
exec 3<&0
exec perl - ${mode} "$@" <<'BATON_PERL'
${agentSource()}
BATON_PERL`;
}

/** The agent's digests come from one `sha256sum` over every file: without it, no digest is honest. */
const NEEDS_SHA256SUM = `command -v sha256sum >/dev/null 2>&1 || { echo "sha256sum is not installed" >&2; exit 3; }
`;

/**
 * Resolve: the agent's hello where the machine has perl, `no-perl` where it has none (the
 * holder is then unresolved at plan time: the gate closes before anything is generated).
 */
export const RESOLVE = `command -v perl >/dev/null 2>&1 || { echo '@baton no-perl'; exit 0; }
exec perl - hello <<'BATON_PERL'
${agentSource()}
BATON_PERL`;

export const STAGE = agent('files stage', NEEDS_SHA256SUM);

export const COMMIT = agent('files commit');

export const UNSTAGE = `for f in "$@"; do
  rm -f "$f.next" "$f.next.tmp."* || exit 3
done
exit 0`;

// The previous provider file is the dotfile `.<role>.prev` beside the live one (previousPath).
export const KEEP_PREVIOUS = agent('files keep', NEEDS_SHA256SUM);

// Before `.prev` goes back, the live file is linked aside as `.<role>.rolled-back`
// (rolledBackPath): the database may already hold its password, and nothing else does.
export const RESTORE_PREVIOUS = `for f in "$@"; do
  p="\${f%/*}/.\${f##*/}.prev"
  r="\${f%/*}/.\${f##*/}.rolled-back"
  if [ -f "$p" ] && [ -f "$f" ] && [ ! "$f" -ef "$p" ]; then
    ln -f "$f" "$r.tmp.$$" && chmod 600 "$r.tmp.$$" && mv -f "$r.tmp.$$" "$r" || { rm -f "$r.tmp.$$"; exit 3; }
  fi
  if [ -s "$p" ]; then mv -f "$p" "$f" || exit 3
  elif [ -f "$p" ]; then rm -f "$f" "$p" || exit 3
  else echo '@baton none'; continue; fi
  rm -f "\${f%/*}/.applied/\${f##*/}"
  sync "\${f%/*}" 2>/dev/null
  echo '@baton restored'
done`;

export const DISCARD_PREVIOUS = agent('files discard');

// A pair switched between single and alternating: the other mode's provider file goes, with
// its staged and kept copies and its receipt (transport.ts, retire).
export const RETIRE = `for f in "$@"; do
  rm -f "$f" "$f.next" "\${f%/*}/.\${f##*/}.prev" "\${f%/*}/.\${f##*/}.rolled-back" "\${f%/*}/.applied/\${f##*/}" || exit 3
  sync "\${f%/*}" 2>/dev/null
done
exit 0`;

/**
 * `stands <words file> <dir below>`: the words' first line in `$us`; true when its later lines
 * name the directory or it has none. `above <dir> <wanted> [<self>]`: whether a lock of an ancestor of `<dir>` (up to /) is held
 * for `<wanted>` by another than `<self>`, its holder's words then in `$said`. A holder that took
 * the lock of a directory's nearest ancestor (the directory did not exist yet) names it on its
 * words' later lines; a holder of an ancestor whose words have no later lines (an older baton)
 * stands for everything below it. Only ancestors with words are probed (an instant each), and
 * only words this user or root wrote: words anyone could leave in a world-writable ancestor
 * (/tmp) would let them refuse every rotation below it by holding a flock there.
 */
const HELD_ABOVE = `stands() {
  us=; ul=0; uok=
  while IFS= read -r l || [ -n "$l" ]; do
    ul=$((ul+1)); if [ $ul = 1 ]; then us=$l; elif [ "$l" = "$2" ]; then uok=1; fi
  done < "$1"
  [ $ul -le 1 ] || [ -n "$uok" ]
}
above() {
  ua=$1
  while [ "$ua" != / ] && [ -n "$ua" ]; do
    ua=\${ua%/*}; [ -n "$ua" ] || ua=/
    uf="\${ua%/}/.baton.lock.holder"
    [ -f "$uf" ] && { [ -O "$uf" ] || [ "$(stat -c %u "$uf" 2>/dev/null)" = 0 ]; } || continue
    if [ "$ua" = / ]; then ub=\${2#/}; else ub=\${2#"$ua"/}; fi
    stands "$uf" "$ub" || continue
    [ -n "$3" ] && [ "$us" = "$3" ] && continue
    flock -n "$ua" true 2>/dev/null && continue
    said=$us
    return 0
  done
  return 1
}
`;

// The holder hashes its own files and prints digests and the live file's mtime (epoch
// seconds; "-" where stat cannot say): the content never crosses the wire.
export const DIGESTS = agent('files digests', NEEDS_SHA256SUM);

// Records arrive on stdin, one line each, for the paths in "$@" (non-secret: rotation ids,
// pairs, phases and digests); each written whole (temp, sync, rename).
export const WRITE_RECORDS = agent('files records');

/**
 * The provider lock, held by this shell for the session's life: \`$1\` the directory (or, never
 * delivered to yet, its nearest ancestor that exists: the lock creates nothing), \`$2\` the
 * holder's words. It answers \`locked\` or \`busy <words>\`, then reads stdin until the controller
 * ends the session — or dies, or its connection does: stdin ends, the shell exits and the
 * kernel releases the lock. Nobody has to remove a stale lock by hand.
 *
 * As the local transport's takeLock (its comments say why), in this one request: a busy lock's
 * words are waited for (20 × 0.05 s, trying the lock again meanwhile, so a holder that lets go
 * unsaid is outlasted); the taker's own words there mean its own operation holds that ancestor
 * (it adds its directory to them); a held ancestor standing for the directory refuses; and the
 * holder of an ancestor looks again once its words are down, for a directory created meanwhile.
 */
export const LOCK = `umask 077
command -v flock >/dev/null 2>&1 || { echo "flock is not installed on the machine (util-linux)" >&2; exit 3; }
${HELD_ABOVE}near() { n=$1; while [ ! -d "$n" ] && [ -n "$n" ]; do n=\${n%/*}; done; [ -n "$n" ] || n=/; }
i=0
while :; do
  near "$1"; d=$n
  if [ "$d" = "$1" ]; then b=; elif [ "$d" = / ]; then b=\${1#/}; else b=\${1#"$d"/}; fi
  w="\${d%/}/.baton.lock.holder"
  exec 9<"$d" || exit 3
  if ! flock -w 0.1 9; then
    k=0; got=; said=
    while :; do
      if [ -f "$w" ]; then said=$(head -n 1 "$w" 2>/dev/null | tr -d '\\n'); break; fi
      [ $k -lt 20 ] || break
      if flock -w 0.05 9; then got=1; break; fi
      k=$((k+1))
    done
    if [ -z "$got" ]; then
      exec 9<&-
      if [ -n "$said" ] && [ "$said" = "$2" ]; then
        stands "$w" "$b"
        if [ -n "$b" ] && [ -z "$uok" ]; then
          { cat "$w" && printf '%s\\n' "$b"; } > "$w.tmp.$$" && mv -f "$w.tmp.$$" "$w" || exit 3
        fi
        echo '@baton locked'
        cat >/dev/null
        exit 0
      fi
      printf '@baton busy %s\\n' "$said"
      exit 0
    fi
  fi
  if above "$d" "$1" "$2"; then printf '@baton busy %s\\n' "$said"; exit 0; fi
  { printf '%s\\n' "$2"; [ -z "$b" ] || printf '%s\\n' "$b"; } > "$w.tmp.$$" && mv -f "$w.tmp.$$" "$w" || exit 3
  near "$1"
  if [ "$n" != "$d" ] && [ $i -lt 4 ]; then rm -f "$w"; flock -u 9; exec 9<&-; i=$((i+1)); continue; fi
  echo '@baton locked'
  cat >/dev/null
  rm -f "$w"
  exit 0
done`;

export const READ_TEXTS = agent('files texts');

/**
 * The receipt reader (docs/agent-protocol.md, "Mode watch"): `$1` the poll interval in
 * seconds, `$2` how many seconds it may run at most, then the paths. inotify where the machine
 * has it (no process per tick), else a stat per interval; a heartbeat line every ~second makes
 * a reader whose ssh session went away die on the broken pipe; the run time bounds the rest.
 */
export const WATCH = agent('watch');

/**
 * The rename channel (docs/agent-protocol.md, "Mode channel": every request, answer and
 * ordering rule): the agent's `channel` where the machine has perl, with perl's own rename,
 * fsync and clock, so a rename request starts no process (at two hundred consumers renamed at
 * once, a shell's `mv`, `date` and `sync` per request were six hundred processes started in the
 * same instant: the window of the last pair), and the relay (app-rtt). Only paths cross this
 * channel, never a secret; stdin closing (the command ending) ends it.
 */
export const CHANNEL = agent('channel');

/** One argument for the remote login shell, single-quoted. */
export function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** `sh -c '<script>' baton-mesh 'path1' 'path2'` — what ssh hands the remote shell. */
export function remoteCommand(script: string, args: readonly string[]): string {
  return ['sh', '-c', shQuote(script), 'baton-mesh', ...args.map(shQuote)].join(' ');
}
