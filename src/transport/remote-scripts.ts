/**
 * The remote side of the ssh transport: short POSIX sh scripts, one per operation, each
 * taking the LIVE paths as arguments. Secrets arrive on stdin one per line and are written
 * with the `printf` builtin, so no process on the holder ever carries one in argv.
 * umask 077 before anything is created: a staged secret is never readable by others, not
 * even for the instant between write and chmod.
 *
 * Every answer line starts with ANSWER_PREFIX: a login shell that prints a banner or a
 * .bashrc that echoes cannot be mistaken for a digest.
 */

import { agentSource } from './agent-program.js';

export { ANSWER_PREFIX } from './agent-protocol.js';

/**
 * The start of a script that hands its paths to the agent's `files <op>` where the machine has perl
 * (agent/baton-agent.pl): ONE process for any number of paths, the same files written in the same
 * order, with the same answers as the shell lines after it, the fallback (and what a machine
 * without perl runs). stdin (fd 3) carries the staged secrets and the records, one per line.
 */
function perlFirst(op: string): string {
  return `if command -v perl >/dev/null 2>&1; then
exec 3<&0
exec perl - files ${op} "$@" <<'BATON_PERL'
${agentSource()}
BATON_PERL
fi
`;
}

export const STAGE = `umask 077
command -v sha256sum >/dev/null 2>&1 || { echo "sha256sum is not installed" >&2; exit 3; }
${perlFirst('stage')}for f in "$@"; do
  IFS= read -r s || { echo "stdin ended before $f" >&2; exit 3; }
  d=\${f%/*}
  mkdir -p "$d" || exit 3
  t="$f.next.tmp.$$"
  printf '%s' "$s" > "$t" || { rm -f "$t"; exit 3; }
  sync "$t" 2>/dev/null
  mv -f "$t" "$f.next" || { rm -f "$t"; exit 3; }
  sync "$d" 2>/dev/null
done
for f in "$@"; do printf '@baton %s\\n' "$(sha256sum < "$f.next" | cut -c1-64)"; done`;

export const COMMIT = `${perlFirst('commit')}for f in "$@"; do
  [ -f "$f.next" ] || { echo "no staged file $f.next" >&2; exit 3; }
  mv -f "$f.next" "$f" || exit 3
  sync "\${f%/*}" 2>/dev/null
done
exit 0`;

export const UNSTAGE = `for f in "$@"; do
  rm -f "$f.next" "$f.next.tmp."* || exit 3
done
exit 0`;

// The previous provider file is the dotfile `.<role>.prev` beside the live one (previousPath).
export const KEEP_PREVIOUS = `umask 077
command -v sha256sum >/dev/null 2>&1 || { echo "sha256sum is not installed" >&2; exit 3; }
${perlFirst('keep')}for f in "$@"; do
  p="\${f%/*}/.\${f##*/}.prev"
  if [ -f "$f" ]; then
    if [ ! "$f" -ef "$p" ]; then
      ln -f "$f" "$p.tmp.$$" || exit 3
      mv -f "$p.tmp.$$" "$p" || { rm -f "$p.tmp.$$"; exit 3; }
    fi
    printf '@baton %s\\n' "$(sha256sum < "$f" | cut -c1-64)"
  else
    : > "$p.tmp.$$" && mv -f "$p.tmp.$$" "$p" || exit 3
    echo '@baton -'
  fi
  sync "\${f%/*}" 2>/dev/null
done`;

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

export const DISCARD_PREVIOUS = `${perlFirst('discard')}for f in "$@"; do
  rm -f "\${f%/*}/.\${f##*/}.prev" "\${f%/*}/.\${f##*/}.rolled-back" || exit 3
done
exit 0`;

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
export const DIGESTS = `command -v sha256sum >/dev/null 2>&1 || { echo "sha256sum is not installed" >&2; exit 3; }
${perlFirst('digests')}h() { if [ -f "$1" ]; then sha256sum < "$1" | cut -c1-64; else echo -; fi; }
m() { if [ -f "$1" ]; then stat -c %Y "$1" 2>/dev/null || date -r "$1" +%s 2>/dev/null || echo -; else echo -; fi; }
u() { l=; [ -f "$1" ] && l=$(sed -n '1s/^user=\\([a-z_][a-z0-9_]*\\) .*/\\1/p' "$1" 2>/dev/null); echo "\${l:--}"; }
# Then the path's rotation record (\`.<name>.rotation\`, its first line) and whether its directory's
# lock (a flock on the directory) is held now: a probe that takes it for an instant (a holder waits 0.1 s for it).
r() { if [ -f "$1" ]; then printf '@baton +%s\\n' "$(head -n 1 "$1" | tr -d '\\n')"; else echo '@baton -'; fi; }
${HELD_ABOVE}k() {
  if ! command -v flock >/dev/null 2>&1; then echo '@baton -'
  elif [ -d "$1" ] && ! flock -n "$1" true 2>/dev/null; then
    printf '@baton +%s\\n' "$(head -n 1 "$1/.baton.lock.holder" 2>/dev/null | tr -d '\\n')"
  elif above "$1" "$1"; then printf '@baton +%s\\n' "$said"
  else echo '@baton -'; fi
}
for f in "$@"; do
  printf '@baton %s %s %s %s %s\\n' "$(h "$f")" "$(h "$f.next")" "$(m "$f")" "$(h "\${f%/*}/.\${f##*/}.prev")" "$(u "$f")"
  r "\${f%/*}/.\${f##*/}.rotation"
  k "\${f%/*}"
done`;

// Records arrive on stdin, one line each, for the paths in "$@" (non-secret: rotation ids,
// pairs, phases and digests); each written whole (temp, sync, rename).
export const WRITE_RECORDS = `umask 077
${perlFirst('records')}for f in "$@"; do
  IFS= read -r s || { echo "stdin ended before $f" >&2; exit 3; }
  d=\${f%/*}
  mkdir -p "$d" || exit 3
  t="$f.tmp.$$"
  printf '%s\\n' "$s" > "$t" || { rm -f "$t"; exit 3; }
  sync "$t" 2>/dev/null
  mv -f "$t" "$f" || { rm -f "$t"; exit 3; }
  sync "$d" 2>/dev/null
done
exit 0`;

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

export const READ_TEXTS = `${perlFirst('texts')}for f in "$@"; do
  if [ -f "$f" ]; then printf '@baton +%s\\n' "$(tr -d '\\n' < "$f")"; else echo '@baton -'; fi
done`;

/**
 * The receipt reader: `$1` the poll interval in seconds (fractions where the machine's sleep
 * takes them, else 1 s), `$2` how many seconds it may run at most, then the paths. With perl
 * on the machine it is the agent's `watch` (inotify; no process per tick). Without, the shell reads the
 * first line of each file (a receipt is one line of JSON) with its own `read`, so a poll
 * starts no process but `sleep`, and whenever a line changed, prints every path's text
 * (`@baton <index> +<text>` or `@baton <index> -`) and `@baton .` — so a receipt is reported
 * one poll interval plus one one-way trip after it was written. A heartbeat line every
 * ~second makes a loop whose ssh session went away die on the broken pipe; the run time
 * bounds the rest.
 */
export const WATCH = `iv=$1; life=$2; shift 2
if command -v perl >/dev/null 2>&1; then
exec 3<&0
exec perl - watch "$iv" "$life" "$@" <<'BATON_PERL'
${agentSource()}
BATON_PERL
fi
sleep "$iv" 2>/dev/null || iv=1
end=$(( $(date +%s) + life ))
last=x
n=0
beat=$(awk "BEGIN { b = int(1 / $iv); print (b < 1 ? 1 : b) }" 2>/dev/null || echo 1)
while :; do
  now=
  for f in "$@"; do
    l=-
    [ -f "$f" ] && { IFS= read -r l < "$f"; l="+$l"; }
    now="$now
$l"
  done
  if [ "$now" != "$last" ]; then
    last=$now
    i=0
    for f in "$@"; do
      l=-
      [ -f "$f" ] && { IFS= read -r l < "$f"; l="+$l"; }
      printf '@baton %s %s\\n' "$i" "$l"
      i=$((i + 1))
    done
    echo '@baton .' || exit 0
  fi
  n=$((n + 1))
  if [ "$n" -ge "$beat" ]; then
    n=0
    echo '@baton ~' || exit 0
    [ "$(date +%s)" -lt "$end" ] || exit 0
  fi
  sleep "$iv"
done`;

/**
 * The rename channel (docs/agent-protocol.md, "Mode `channel`": every request, answer and
 * ordering rule): the agent's `channel` where the machine has perl, with perl's own rename,
 * fsync and clock, so a rename request starts no process (at two hundred consumers renamed at
 * once, a shell's `mv`, `date` and `sync` per request were six hundred processes started in the
 * same instant: the window of the last pair), and the relay (app-rtt). Without perl, the shell
 * below answers `t` and `c` only and says `ready <ns>` without `relay`. Only paths cross this
 * channel, never a secret; stdin closing (the command ending) ends it.
 */
export const CHANNEL = `if command -v perl >/dev/null 2>&1; then
exec 3<&0
exec perl - channel "$@" <<'BATON_PERL'
${agentSource()}
BATON_PERL
fi
t() { s=$(date +%s%N); case $s in *[!0-9]*) s=$(date +%s)000000000;; esac; printf '%s' "$s"; }
printf '@baton ready %s\n' "$(t)"
while IFS= read -r req; do
  case $req in
    t) printf '@baton t %s\n' "$(t)";;
    'c '*)
      n=\${req#c }; i=0; err=; moved=
      while [ "$i" -lt "$n" ]; do
        IFS= read -r f || exit 3
        i=$((i + 1))
        [ -n "$err" ] && continue
        if [ ! -f "$f.next" ]; then err="no staged file $f.next"; continue; fi
        mv -f "$f.next" "$f" 2>/dev/null || { err="could not rename $f.next"; continue; }
        moved="$moved
$f"
      done
      at=$(t)
      set -f; o=$IFS; IFS='
'
      for f in $moved; do sync "\${f%/*}" 2>/dev/null; done
      IFS=$o; set +f
      if [ -n "$err" ]; then printf '@baton err %s\n' "$err"; else printf '@baton ok %s\n' "$at"; fi;;
    *) printf '@baton err unknown request\n';;
  esac
done`;

/** One argument for the remote login shell, single-quoted. */
export function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** `sh -c '<script>' baton-mesh 'path1' 'path2'` — what ssh hands the remote shell. */
export function remoteCommand(script: string, args: readonly string[]): string {
  return ['sh', '-c', shQuote(script), 'baton-mesh', ...args.map(shQuote)].join(' ');
}
