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

export const ANSWER_PREFIX = '@baton ';

export const STAGE = `umask 077
command -v sha256sum >/dev/null 2>&1 || { echo "sha256sum is not installed" >&2; exit 3; }
for f in "$@"; do
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

export const COMMIT = `for f in "$@"; do
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
for f in "$@"; do
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

export const RESTORE_PREVIOUS = `for f in "$@"; do
  p="\${f%/*}/.\${f##*/}.prev"
  if [ -s "$p" ]; then mv -f "$p" "$f" || exit 3
  elif [ -f "$p" ]; then rm -f "$f" "$p" || exit 3
  else echo '@baton none'; continue; fi
  rm -f "\${f%/*}/.applied/\${f##*/}"
  sync "\${f%/*}" 2>/dev/null
  echo '@baton restored'
done`;

export const DISCARD_PREVIOUS = `for f in "$@"; do
  rm -f "\${f%/*}/.\${f##*/}.prev" || exit 3
done
exit 0`;

// The holder hashes its own files and prints digests and the live file's mtime (epoch
// seconds; "-" where stat cannot say): the content never crosses the wire.
export const DIGESTS = `command -v sha256sum >/dev/null 2>&1 || { echo "sha256sum is not installed" >&2; exit 3; }
h() { if [ -f "$1" ]; then sha256sum < "$1" | cut -c1-64; else echo -; fi; }
m() { if [ -f "$1" ]; then stat -c %Y "$1" 2>/dev/null || date -r "$1" +%s 2>/dev/null || echo -; else echo -; fi; }
for f in "$@"; do
  printf '@baton %s %s %s %s\\n' "$(h "$f")" "$(h "$f.next")" "$(m "$f")" "$(h "\${f%/*}/.\${f##*/}.prev")"
done`;

export const READ_TEXTS = `for f in "$@"; do
  if [ -f "$f" ]; then printf '@baton +%s\\n' "$(tr -d '\\n' < "$f")"; else echo '@baton -'; fi
done`;

/** One argument for the remote login shell, single-quoted. */
export function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** `sh -c '<script>' baton-mesh 'path1' 'path2'` — what ssh hands the remote shell. */
export function remoteCommand(script: string, args: readonly string[]): string {
  return ['sh', '-c', shQuote(script), 'baton-mesh', ...args.map(shQuote)].join(' ');
}
