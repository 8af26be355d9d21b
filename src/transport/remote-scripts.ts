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

/**
 * The file operations where the machine has perl (Debian's perl-base is Essential): the same
 * files written, in the same order, with the same answers as the shell scripts below, but in
 * ONE process for any number of paths. The shell's loops start a few processes per path (mv,
 * sync, sha256sum, cut, stat, sed, head…): on a provider with two hundred pairs that was
 * thousands of processes per read — eleven seconds for one digest read of fifty paths on a
 * loaded machine — and its commit's renames, one `mv` and one `sync` after another, sat
 * inside every pair's window. Here the digests come from one `sha256sum` over every file,
 * renames are perl's own, and each directory is synced once after the last rename into it.
 * `$1` is the operation; stdin (fd 3) carries the staged secrets and the records, one per line.
 */
const PERL_FILES = String.raw`use strict; use warnings; use IO::Handle;
my ($op, @paths) = @ARGV;
umask 077;
sub fail { print STDERR "$_[0]\n"; exit 3; }
sub dirof { my ($d) = $_[0] =~ m{^(.*)/[^/]*$}; return '.' unless defined $d; return $d eq '' ? '/' : $d; }
sub baseof { my ($b) = $_[0] =~ m{([^/]*)$}; return $b; }
sub beside { return dirof($_[0]) . '/.' . baseof($_[0]) . $_[1]; }
sub syncdirs { my %seen; for my $d (@_) { next if $seen{$d}++; if (open(my $dh, '<', $d)) { $dh->sync; close $dh; } } }
sub mkdirp { my ($d) = @_; return 1 if -d $d; my $up = dirof($d); mkdirp($up) if $up ne $d; return mkdir($d) || -d $d; }
sub firstline { open(my $fh, '<', $_[0]) or return undef; my $l = <$fh>; $l = '' unless defined $l; chomp $l; return $l; }
sub sums { return () unless @_; open(my $p, '-|', 'sha256sum', '--', @_) or return (); my @l = <$p>; close $p; return @l; }
sub hashes {
  my %seen; my @have = grep { !$seen{$_}++ && -f $_ && -r _ } @_;
  my @lines = sums(@have); my %h;
  # A file that could not be read after all shifts the lines: then one sha256sum per file.
  @lines = map { (sums($_))[0] // '' } @have if @lines != @have;
  for my $i (0 .. $#have) { $h{$have[$i]} = $1 if defined $lines[$i] && $lines[$i] =~ /^\\?([0-9a-f]{64}) /; }
  return map { exists $h{$_} ? $h{$_} : '-' } @_;
}
# The words of a held lock of an ancestor of $_[0] (up to /) standing for $_[1]: its words' later
# lines name it (or it has none), as the LOCK script below leaves them; undef when none is held.
sub above {
  my ($up, $want) = @_;
  while ($up ne '/' && $up =~ m{^/}) {
    $up = dirof($up);
    my $f = ($up eq '/' ? '' : $up) . '/.baton.lock.holder';
    next unless -f $f && ((stat _)[4] == $> || (stat _)[4] == 0) && open(my $fh, '<', $f);
    my @l = <$fh>; close $fh; chomp @l;
    my $first = shift(@l) // '';
    my $rest = $up eq '/' ? substr($want, 1) : substr($want, length($up) + 1);
    next if @l && !grep { $_ eq $rest } @l;
    if (open(my $dh, '<', $up)) { my $free = flock($dh, 6); flock($dh, 8) if $free; close $dh; return "+$first" unless $free; }
  }
  return undef;
}
sub input { my $in; open($in, '<&=', 3) or fail('no input'); return $in; }
sub line { my ($in, $f) = @_; my $s = <$in>; fail("stdin ended before $f") unless defined $s && $s =~ s/\n\z//; return $s; }
sub put {
  my ($f, $text, $t) = @_;
  open(my $fh, '>', $t) or fail("could not write $t: $!");
  unless ((print $fh $text) && $fh->flush && $fh->sync && close($fh)) { unlink $t; fail("could not write $t: $!"); }
  unless (rename($t, $f)) { unlink $t; fail("could not rename $t: $!"); }
}
my $out = '';
if ($op eq 'digests') {
  my @h = hashes(map { ($_, "$_.next", beside($_, '.prev')) } @paths);
  my %lock;
  for my $i (0 .. $#paths) {
    my $f = $paths[$i]; my ($m, $u) = ('-', '-');
    if (-f $f) { my @s = stat(_); $m = $s[9] if @s; my $l = firstline($f); $u = $1 if defined $l && $l =~ /^user=([a-z_][a-z0-9_]*) /; }
    $out .= "\@baton $h[3 * $i] $h[3 * $i + 1] $m $h[3 * $i + 2] $u\n";
    my $r = beside($f, '.rotation');
    $out .= -f $r ? '@baton +' . (firstline($r) // '') . "\n" : "\@baton -\n";
    my $d = dirof($f);
    unless (exists $lock{$d}) {
      $lock{$d} = '-';
      if (-d $d) {
        my $held = 1;
        if (open(my $dh, '<', $d)) { if (flock($dh, 6)) { $held = 0; flock($dh, 8); } close $dh; }
        $lock{$d} = '+' . (firstline("$d/.baton.lock.holder") // '') if $held;
      }
      $lock{$d} = above($d, $d) // '-' if $lock{$d} eq '-';
    }
    $out .= "\@baton $lock{$d}\n";
  }
} elsif ($op eq 'stage') {
  my $in = input();
  for my $f (@paths) {
    my $s = line($in, $f);
    mkdirp(dirof($f)) or fail("could not create " . dirof($f) . ": $!");
    put("$f.next", $s, "$f.next.tmp.$$");
  }
  syncdirs(map { dirof($_) } @paths);
  $out .= "\@baton $_\n" for hashes(map { "$_.next" } @paths);
} elsif ($op eq 'keep') {
  my @live;
  for my $f (@paths) {
    my $p = beside($f, '.prev'); my $t = "$p.tmp.$$";
    if (-f $f) {
      my @a = stat(_); my @b = stat($p);
      unless (@b && $a[0] == $b[0] && $a[1] == $b[1]) {
        unlink $t;
        link($f, $t) or fail("could not link $f: $!");
        unless (rename($t, $p)) { unlink $t; fail("could not rename $t: $!"); }
      }
      push @live, $f;
    } else {
      put($p, '', $t);
      push @live, undef;
    }
  }
  syncdirs(map { dirof($_) } @paths);
  my @h = hashes(grep { defined } @live);
  $out .= '@baton ' . (defined $_ ? shift @h : '-') . "\n" for @live;
} elsif ($op eq 'commit') {
  my @moved;
  for my $f (@paths) {
    unless (-f "$f.next") { syncdirs(map { dirof($_) } @moved); fail("no staged file $f.next"); }
    unless (rename("$f.next", $f)) { syncdirs(map { dirof($_) } @moved); fail("could not rename $f.next: $!"); }
    push @moved, $f;
  }
  syncdirs(map { dirof($_) } @moved);
} elsif ($op eq 'records') {
  my $in = input();
  for my $f (@paths) {
    my $s = line($in, $f);
    mkdirp(dirof($f)) or fail("could not create " . dirof($f) . ": $!");
    put($f, "$s\n", "$f.tmp.$$");
  }
  syncdirs(map { dirof($_) } @paths);
} elsif ($op eq 'discard') {
  for my $f (@paths) { for my $g (beside($f, '.prev'), beside($f, '.rolled-back')) { unlink $g or !-e $g or fail("could not remove $g: $!"); } }
} elsif ($op eq 'texts') {
  for my $f (@paths) {
    if (-f $f && open(my $fh, '<', $f)) { local $/; my $t = <$fh>; $t = '' unless defined $t; $t =~ tr/\n//d; $out .= "\@baton +$t\n"; }
    else { $out .= "\@baton -\n"; }
  }
} else { fail("unknown operation $op"); }
print $out;
exit 0;`;

/**
 * The start of a script that hands its paths to PERL_FILES `op` where the machine has perl;
 * the shell lines after it are the fallback (and what a machine without perl runs).
 */
function perlFirst(op: string): string {
  return `if command -v perl >/dev/null 2>&1; then
exec 3<&0
exec perl - ${op} "$@" <<'BATON_PERL'
${PERL_FILES}
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
 * The receipt reader where the machine has perl (Debian's perl-base is Essential): it blocks
 * on inotify for the receipts' directories (via `syscall`, no module beyond perl-base) and
 * re-reads only the files an event names, so a receipt is reported as it is written and an
 * idle reader costs nothing per receipt watched. Without inotify (another architecture, a
 * directory that does not exist yet) it stats the files every interval with perl's own
 * `select` as the sleep — no process per tick — and reads only those whose inode, size or
 * mtime moved. Once a second it reads every file anyway (a missed event, an inode reused
 * within the same second) and prints the heartbeat. Only changed files are printed after the
 * first report, which names them all. The session's stdin (fd 3) closing ends it.
 */
const PERL_WATCH = String.raw`use strict; use warnings; use POSIX ();
my ($iv, $life, @paths) = @ARGV;
$iv = 0.01 unless $iv =~ /^[0-9.]+$/ && $iv > 0;
$| = 1;
my $end = time + $life;
my %calls = (x86_64 => [294, 254], aarch64 => [26, 27], i686 => [332, 292], i386 => [332, 292], armv7l => [360, 317], armv6l => [360, 317]);
my $arch = (POSIX::uname())[4];
my (%byname, %wds, %polled, @sig, @text);
my ($ino, $ifd) = (undef, -1);
if (my $c = $calls{$arch}) {
  $ifd = syscall($c->[0], 0 + 0x800);
  if ($ifd >= 0 && open($ino, '<&=', $ifd)) {
    my %dirs;
    for my $i (0 .. $#paths) { my ($d) = $paths[$i] =~ m{^(.*)/[^/]*$}; $d = '.' unless defined $d; push @{$dirs{$d}}, $i; }
    for my $d (keys %dirs) {
      my $wd = syscall($c->[1], $ifd, $d, 0 + (0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x4));
      if ($wd >= 0) { $wds{$wd} = $d; } else { $polled{$_} = 1 for @{$dirs{$d}}; }
    }
    for my $i (0 .. $#paths) { my ($d, $n) = $paths[$i] =~ m{^(.*)/([^/]*)$}; push @{$byname{"$d/$n"}}, $i if defined $n; }
  } else { $ino = undef; }
}
%polled = map { $_ => 1 } 0 .. $#paths unless $ino;
my $stdin; $stdin = undef unless open($stdin, '<&=', 3);
sub stamp { my @s = stat($_[0]); return @s ? "$s[1] $s[7] $s[9] $s[10]" : '-'; }
sub readone {
  my ($f) = @_;
  open(my $fh, '<', $f) or return '-';
  my $l = <$fh>; $l = '' unless defined $l; chomp $l;
  return "+$l";
}
my $first = 1;
sub report {
  my @idx = @_; my $out = '';
  for my $i (@idx) {
    my $t = readone($paths[$i]);
    next if !$first && defined $text[$i] && $text[$i] eq $t;
    $text[$i] = $t; $out .= "\@baton $i $t\n";
  }
  $first = 0;
  print $out, "\@baton .\n" if $out ne '';
}
@sig = map { stamp($_) } @paths;
report(0 .. $#paths);
my $full = time + 1;
while (1) {
  my $rin = '';
  vec($rin, fileno($ino), 1) = 1 if $ino;
  vec($rin, 3, 1) = 1 if $stdin;
  my $wait = %polled ? $iv : 1;
  my $n = select(my $rout = $rin, undef, undef, $wait);
  my %check;
  if ($n > 0) {
    if ($stdin && vec($rout, 3, 1)) { my $b; my $r = sysread($stdin, $b, 4096); exit 0 unless $r; }
    if ($ino && vec($rout, fileno($ino), 1)) {
      my $buf;
      while (my $got = sysread($ino, $buf, 65536)) {
        my $at = 0;
        while ($at + 16 <= $got) {
          my ($wd, $mask, $cookie, $len) = unpack('iIII', substr($buf, $at, 16));
          my $name = unpack('Z*', substr($buf, $at + 16, $len));
          $at += 16 + $len;
          if ($mask & 0x4000) { $check{$_} = 1 for 0 .. $#paths; next; }
          my $d = $wds{$wd}; next unless defined $d;
          $check{$_} = 1 for @{$byname{"$d/$name"} || []};
        }
      }
    }
  }
  for my $i (keys %polled) { my $s = stamp($paths[$i]); if ($s ne $sig[$i]) { $sig[$i] = $s; $check{$i} = 1; } }
  if (time >= $full) {
    $full = time + 1;
    $check{$_} = 1 for 0 .. $#paths;
    print "\@baton ~\n";
    exit 0 if time >= $end;
  }
  report(sort { $a <=> $b } keys %check) if %check;
}`;

/**
 * The receipt reader: `$1` the poll interval in seconds (fractions where the machine's sleep
 * takes them, else 1 s), `$2` how many seconds it may run at most, then the paths. With perl
 * on the machine it is PERL_WATCH (inotify; no process per tick). Without, the shell reads the
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
exec perl - "$iv" "$life" "$@" <<'BATON_PERL'
${PERL_WATCH}
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
 * The rename channel: a shell that stays open for the rotation and reads requests on stdin,
 * one per line — `t` (print the clock) or `c <n>` followed by n live paths (rename each
 * `<path>.next` → `<path>`). It answers `@baton t <ns>`, `@baton ok <ns>` (the clock right
 * after the last rename, before the directory sync) or `@baton err <why>`. The clock is
 * nanoseconds since the epoch where `date` has %N, else whole seconds. Only paths cross this
 * channel, never a secret; stdin closing (the command ending) ends the shell.
 */
/**
 * The rename channel where the machine has perl: the same requests and answers as the shell's
 * (below), with perl's own rename, fsync and clock (clock_gettime by `syscall` on x86_64 and
 * aarch64, else `date`), so a rename request starts no process at all. At two hundred
 * consumers renamed at once, the shell's `mv`, `date` and `sync` per request were six hundred
 * processes started in the same instant: the window of the last pair.
 *
 * app-rtt: it also says `ready <ns> relay` and, in a select() loop, takes requests answered
 * out of order by id, so a consumer's test login, rename and reload share the login's two round
 * trips (docs/mesh-rotation.md "What the test login and the reload cost"):
 * - `o <id> <host> <port>` opens a TCP socket FROM the machine (`s <id> open` | `s <id> err …`);
 *   `w <id> <hex>` writes to it; what it reads comes back as `s <id> d <hex>`; `x <id>` closes it
 *   (`s <id> end` when either side did). It only relays: baton's own client speaks SCRAM.
 * - `r <id> <seconds> <hex command> <k>` + k `NAME=value` lines declares a reload; a commit that
 *   names it (`c <n> <id>,…`) starts it after its renames: RUN_COMMAND (`$1`), stdin /dev/null,
 *   its own session; its lines come back as `r <id> …`, then `r <id> .` (`r <id> skip`: not run).
 * - `a <id> <n> [<reload ids>]` + n paths ARMS a commit on socket <id>: it watches the server's
 *   message framing and, on ReadyForQuery after AuthenticationOk, renames the paths as `c` does
 *   (`a <id> ok <ns>`) and starts the reloads; an ErrorResponse (a CONNECTION LIMIT or a missing
 *   database fail after AuthenticationOk), a close or a broken frame first: `a <id> refused`.
 * When stdin ends (baton gone), an armed commit still settles on its own (30 s at most: then
 * refused) and a running reload still ends; no other socket is kept. SIGPIPE is ignored, so
 * an answer nobody reads any more does not kill it halfway.
 */
const PERL_CHANNEL = String.raw`use strict; use warnings; use POSIX (); use IO::Handle; use Socket ();
$| = 1;
$SIG{PIPE} = 'IGNORE';
my $run = shift @ARGV;
my %calls = (x86_64 => 228, aarch64 => 113);
my $nr = $calls{(POSIX::uname())[4]};
sub now {
  if (defined $nr) {
    my $ts = "\0" x 16;
    if (syscall($nr, 0, $ts) == 0) { my ($s, $ns) = unpack('qq', $ts); return sprintf('%d%09d', $s, $ns); }
  }
  my $s = qx(date +%s%N); chomp $s;
  return $s =~ /^\d{10,}$/ ? $s : time() . '000000000';
}
sub dirof { my ($d) = $_[0] =~ m{^(.*)/[^/]*$}; return defined $d && $d ne '' ? $d : '/'; }
sub syncdirs { my %seen; for my $d (map { dirof($_) } @_) { next if $seen{$d}++; if (open(my $dh, '<', $d)) { $dh->sync; close $dh; } } }
sub renames {
  my ($err, @moved);
  for my $f (@_) {
    next if defined $err;
    if (! -f "$f.next") { $err = "no staged file $f.next"; next; }
    if (rename("$f.next", $f)) { push @moved, $f; } else { $err = "could not rename $f.next"; }
  }
  my $at = now();
  syncdirs(@moved);
  return ($err, $at);
}
open(my $in, '<&=', 3) or exit 3;
my (%sock, %reload, %running);
my ($buf, $eof, $until) = ('', 0, undef);
# A declared reload that will not run is said so: the controller waits for every one it declared.
sub skip { for my $rid (@_) { delete $reload{$rid}; print "\@baton r $rid skip\n"; } }
sub reloaded {
  my ($rid) = @_; my $r = delete $reload{$rid};
  return print "\@baton r $rid skip\n" unless $r;
  pipe(my $rd, my $wr) or return print "\@baton r $rid fail could not make a pipe\n";
  my $pid = fork();
  return print "\@baton r $rid fail could not fork\n" unless defined $pid;
  if ($pid == 0) {
    close $rd; POSIX::setsid(); POSIX::close(3);
    close $_->{fh} for values %sock;
    open(STDIN, '<', '/dev/null'); open(STDOUT, '>&', $wr); open(STDERR, '>', '/dev/null');
    exec('sh', '-c', $run, 'baton-run', $r->{secs}, $r->{cmd}, @{$r->{env}}) or POSIX::_exit(127);
  }
  close $wr;
  $running{$rid} = { fh => $rd, pid => $pid, buf => '' };
}
sub settle {
  my ($id, $ok) = @_; my $s = $sock{$id}; my $a = delete $s->{arm}; return unless $a;
  unless ($ok) { print "\@baton a $id refused\n"; skip(@{$a->{rids}}); return; }
  my ($err, $at) = renames(@{$a->{paths}});
  print defined $err ? "\@baton a $id err $err\n" : "\@baton a $id ok $at\n";
  if (defined $err) { skip(@{$a->{rids}}); }
  else { reloaded($_) for @{$a->{rids}}; }
}
sub gone {
  my ($id) = @_; my $s = $sock{$id} or return;
  settle($id, 0) if $s->{arm};
  close $s->{fh}; delete $sock{$id};
  print "\@baton s $id end\n";
}
sub framing {
  my ($id) = @_; my $s = $sock{$id};
  while (length($s->{seen}) >= 5) {
    my ($type, $len) = unpack('a N', $s->{seen});
    if ($len < 4 || $len > 1 << 20) { $s->{broken} = 1; settle($id, 0); $s->{seen} = ''; return; }
    last if length($s->{seen}) < 1 + $len;
    my $body = substr($s->{seen}, 5, $len - 4); substr($s->{seen}, 0, 1 + $len) = '';
    if ($type eq 'R') { $s->{authok} = 1 if length($body) >= 4 && unpack('N', $body) == 0; }
    elsif ($type eq 'E') { $s->{failed} = 1; settle($id, 0); }
    elsif ($type eq 'Z') { $s->{ready} = 1 if $s->{authok} && !$s->{failed}; settle($id, $s->{ready}) if $s->{arm}; }
  }
}
sub request {
  my ($req, @more) = @_;
  if ($req eq 't') { print '@baton t ', now(), "\n"; return; }
  if ($req =~ /^c \d+((?: \S+)?)$/) {
    (my $r = $1) =~ s/^ //; my @rids = split /,/, $r;
    my ($err, $at) = renames(@more);
    print defined $err ? "\@baton err $err\n" : "\@baton ok $at\n";
    if (defined $err) { skip(@rids); } else { reloaded($_) for @rids; }
    return;
  }
  if ($req =~ /^r (\S+) (\d+) ([0-9a-f]*) \d+$/) { $reload{$1} = { secs => $2, cmd => pack('H*', $3), env => [@more] }; return; }
  if ($req =~ /^o (\S+) (\S+) (\d+)$/) {
    my ($id, $host, $port) = ($1, $2, $3);
    my $addr = Socket::inet_aton($host);
    return print "\@baton s $id err cannot resolve $host\n" unless $addr;
    my $fh;
    socket($fh, Socket::PF_INET(), Socket::SOCK_STREAM(), 0) or return print "\@baton s $id err socket: $!\n";
    $fh->blocking(0);
    unless (connect($fh, Socket::pack_sockaddr_in($port, $addr)) || $!{EINPROGRESS}) { return print "\@baton s $id err connect: $!\n"; }
    setsockopt($fh, Socket::IPPROTO_TCP(), Socket::TCP_NODELAY(), 1);
    $sock{$id} = { fh => $fh, connecting => 1, out => '', seen => '' };
    return;
  }
  if ($req =~ /^w (\S+) ([0-9a-f]+)$/) { my $s = $sock{$1}; $s->{out} .= pack('H*', $2) if $s; return; }
  if ($req =~ /^x (\S+)$/) { gone($1); return; }
  if ($req =~ /^a (\S+) \d+((?: \S+)?)$/) {
    my $id = $1; (my $r = $2) =~ s/^ //; my @rids = split /,/, $r;
    my $s = $sock{$id};
    unless ($s) { print "\@baton a $id refused\n"; skip(@rids); return; }
    $s->{arm} = { paths => [@more], rids => [@rids] };
    settle($id, 1) if $s->{ready};
    settle($id, 0) if $s->{failed} || $s->{broken};
    return;
  }
  print "\@baton err unknown request\n";
}
# How many lines follow a request line: its paths, or its environment.
sub following { my ($l) = @_; return $1 if $l =~ /^(?:c|a \S+|r \S+ \d+ [0-9a-f]*) (\d+)\b/; return 0; }
print '@baton ready ', now(), " relay\n";
while (1) {
  if ($eof) {
    my $armed = grep { $_->{arm} } values %sock;
    if (!$armed || time >= $until) { settle($_, 0) for keys %sock; last unless %running; }
  }
  my ($rin, $win) = ('', '');
  vec($rin, 3, 1) = 1 unless $eof;
  for my $s (values %sock) {
    vec($rin, fileno($s->{fh}), 1) = 1 unless $s->{connecting};
    vec($win, fileno($s->{fh}), 1) = 1 if $s->{connecting} || $s->{out} ne '';
  }
  vec($rin, fileno($_->{fh}), 1) = 1 for values %running;
  my $n = select(my $rout = $rin, my $wout = $win, undef, 1);
  next if $n <= 0;
  if (!$eof && vec($rout, 3, 1)) {
    my $got = sysread($in, $buf, 65536, length $buf);
    if (!$got) { $eof = 1; $until = time + 30; for my $id (keys %sock) { gone($id) unless $sock{$id}{arm}; } }
    while (1) {
      my $nl = index($buf, "\n"); last if $nl < 0;
      my ($at, $whole, @lines) = ($nl + 1, 1);
      for (1 .. following(substr($buf, 0, $nl))) {
        my $e = index($buf, "\n", $at); if ($e < 0) { $whole = 0; last; }
        push @lines, substr($buf, $at, $e - $at); $at = $e + 1;
      }
      last unless $whole;
      my $line = substr($buf, 0, $nl); substr($buf, 0, $at) = '';
      request($line, @lines);
    }
  }
  for my $id (keys %sock) {
    my $s = $sock{$id} or next; my $fd = fileno($s->{fh});
    if ($s->{connecting} && vec($wout, $fd, 1)) {
      my $e = unpack('i', getsockopt($s->{fh}, Socket::SOL_SOCKET(), Socket::SO_ERROR()) // pack('i', 1));
      if ($e) { $! = $e; print "\@baton s $id err connect: $!\n"; close $s->{fh}; delete $sock{$id}; next; }
      delete $s->{connecting}; print "\@baton s $id open\n";
      next;
    }
    if ($s->{out} ne '' && vec($wout, $fd, 1)) {
      my $w = syswrite($s->{fh}, $s->{out});
      if (defined $w) { substr($s->{out}, 0, $w) = ''; } elsif (!$!{EAGAIN}) { gone($id); next; }
    }
    if (vec($rout, $fd, 1)) {
      my $got = sysread($s->{fh}, my $data, 65536);
      if (defined $got && $got > 0) { print "\@baton s $id d ", unpack('H*', $data), "\n"; $s->{seen} .= $data; framing($id); }
      elsif (!defined $got && $!{EAGAIN}) { }
      else { gone($id); }
    }
  }
  for my $rid (keys %running) {
    my $r = $running{$rid}; next unless vec($rout, fileno($r->{fh}), 1);
    my $got = sysread($r->{fh}, $r->{buf}, 4096, length $r->{buf});
    while ($r->{buf} =~ s/^([^\n]*)\n//) { my $l = $1; print "\@baton r $rid ", substr($l, 7), "\n" if substr($l, 0, 7) eq '@baton '; }
    unless ($got) { close $r->{fh}; waitpid($r->{pid}, 0); delete $running{$rid}; print "\@baton r $rid .\n"; }
  }
}
exit 0;`;

export const CHANNEL = `if command -v perl >/dev/null 2>&1; then
exec 3<&0
exec perl - "$@" <<'BATON_PERL'
${PERL_CHANNEL}
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
