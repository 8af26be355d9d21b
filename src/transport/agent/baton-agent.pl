#!/usr/bin/perl
# baton-agent: the machine side of baton's mesh, the ONE program that does every file operation
# on a holder (docs/agent-protocol.md). baton sends this file with each session (what a read
# needs in its command, the whole text first on its stdin; the local transport: the same, to a
# perl on this host),
# so the machine never runs another version of it. Perl 5 with only the modules of perl-base:
# perl-base is Essential on Debian and Ubuntu, so a holder needs nothing installed
# (docs/architecture.md, "The machine side").
#
#   agent [--root <dir>] files <op> <path>...   stage, commit, keep, records, discard, texts,
#                                               digests, unstage, restore, retire, textread, textwrite
#   agent [--root <dir>] watch <interval> <life> <path>...   the receipt watcher
#   agent [--root <dir>] channel                the rename channel and its relay
#   agent [--root <dir>] lock <dir> <words>     the provider lock, held until stdin ends
#   agent [--root <dir>] run <secs> <command> [NAME=value]...   a command, bounded here
#   agent [--root <dir>] prepared <secs> <command>   the same, once stdin says `go`
#   agent [--root <dir>] serve                  file operations, one after another (the local transport)
#   agent hello                                 at resolve: the protocol and the perl running it
#
# --root: the directory that plays the machine's root (the local transport): every path given
# is under it, and no lock is looked for above it. Over ssh there is none: the root is /.
# (`agent`: `perl -e <loader> -- <core>`, below, or `perl baton-agent.pl`.)
# stdin is read on fd 3 (the command's `3<&0`: perl's own stdin carried this program). Answers
# are lines starting `@baton `, so a login shell's banner is never taken for one.
#
# How it is started (src/transport/remote-scripts.ts agentLoader): a few lines of `perl -e` decode
# this text from the command (base64, without the parts `writes` and `modes` and its comment
# lines: Baton::whole reads the whole text from stdin when a part is needed), and compile it
# without its parts between a `#>>> <name>:` line and its `#<<< <name>` (blank lines left in their
# place), each compiled by Baton::later('<name>') only in a mode that uses it: most starts are
# digest reads, and compiling the rest cost ~3 ms of each. So a part holds only what the modes
# that call later for it use, and the core calls into one only after later for it. Run as a file (`perl -c`,
# `perl baton-agent.pl`) it is compiled whole and later does nothing.
# `use strict` without loading strict.pm (~0.45 ms of every start): the three bits it sets,
# refs 0x2, subs 0x200 and vars 0x400 (strict.pm's %bitmask), so an undeclared variable, a
# symbolic reference or a bareword still fails to compile (test/transport/agent-program.test.ts).
BEGIN { $^H |= 0x602; }
# Warnings at run time as `-w` gives them: `use warnings` loads warnings.pm, ~1.3 ms of every
# start; the file is checked with every warning on (-W, test/transport/agent-program.test.ts).
BEGIN { $^W = 1; }

# The protocol this program speaks: src/transport/agent-protocol.ts AGENT_PROTOCOL is the same.
our $PROTOCOL = 2;
# Each mode requires only the modules it uses (below): a module loaded for nothing costs every
# operation its start-up, and a digest read is one perl start per machine.

# What every mode shares: where a path is, and the small file helpers.
{
  package Baton;
  our $ROOT = '';
  # The highest directory a walk up (a lock's nearest ancestor, a lock held above) may reach.
  sub top { return $ROOT eq '' ? '/' : $ROOT; }
  # The root a `--root` or a serve request names, as $ROOT holds it (`/`, a local machine that is
  # this host itself, is no root at all: ''); undef when it is not a directory.
  sub rootof { my ($r) = @_; return undef unless $r ne '' && -d $r; $r =~ s{/+\z}{}; return $r; }
  # A machine path as this host opens it: under the root when there is one.
  sub at { my ($p) = @_; return $p if $ROOT eq ''; $p = "/$p" unless $p =~ m{^/}; return $ROOT . $p; }
  # Whether $d is the top or below it: a walk up stops there.
  sub within { my ($d) = @_; my $t = top(); return 1 if $t eq '/' ? $d =~ m{^/} : ($d eq $t || index($d, "$t/") == 0); return 0; }
  # In `serve` an operation's failure ends that operation, not the process: it dies, and serve
  # answers its reason.
  our $SERVING = 0;
  # Tagged as baton's own: only such a line is quoted as the reason (a login shell's rc noise is not).
  sub fail { die "$_[0]\n" if $SERVING; print STDERR "\@baton err $_[0]\n"; exit 3; }
  sub dirof { my ($d) = $_[0] =~ m{^(.*)/[^/]*$}; return '.' unless defined $d; return $d eq '' ? '/' : $d; }
  sub baseof { my ($b) = $_[0] =~ m{([^/]*)$}; return $b; }
  sub beside { return dirof($_[0]) . '/.' . baseof($_[0]) . $_[1]; }
  sub firstline { open(my $fh, '<', $_[0]) or return undef; my $l = <$fh>; $l = '' unless defined $l; chomp $l; return $l; }
  # The text the loader compiled this program from, leaving out its parts between a `#>>> <name>`
  # line and its `#<<< <name>`; undef when perl read it as a file, whole. The command carries the
  # program without its parts `writes` and `modes` (what a read needs) and its comment lines; the
  # whole text follows on stdin, $WHOLE bytes, read by whole() before any input. later(<name>) compiles a part, once: a
  # start that needs none of it does not pay for its compiling.
  our ($TEXT, $WHOLE);
  my (%compiled, $whole);
  sub later {
    my ($name) = @_;
    return if !defined $TEXT || $compiled{$name}++;
    my $find = qr/\n(#>>> \Q$name\E:.*?\n#<<< \Q$name\E\n)/s;
    $TEXT =~ $find or (whole() && $TEXT =~ $find) or fail("baton-agent: no part $name");
    my $part = $1;
    # Its own line numbers in a warning or an error, as in the file.
    my $line = 1 + (substr($TEXT, 0, $-[1]) =~ tr/\n//);
    eval "#line $line \"baton-agent\"\n$part\n1;" or die $@;
  }
  # The program's whole text, first on stdin (an ssh session's stdin is also fd 3: what follows
  # it is the operation's input, so it is read before any). Exactly its bytes, unbuffered (binmode
  # first: a holder's PERL_UNICODE would make stdin a :utf8 handle, which sysread refuses); a
  # text that arrived short is refused rather than any part of it compiled. 1 once it is read.
  sub whole {
    return 1 if !defined $WHOLE || $whole++;
    binmode STDIN;
    my $p = '';
    # Short, the session is broken whatever mode runs: exit, even in serve.
    while (length $p < $WHOLE) { sysread(STDIN, $p, $WHOLE - length $p, length $p) or do { print STDERR "\@baton err baton-agent: the program arrived short\n"; exit 3 }; }
    $TEXT = $p;
    return 1;
  }
  # An operation's input: fd 3, or in `serve` the lines that came with its request.
  our $INPUT;
  sub input { my $in; if (defined $INPUT) { open($in, '<', \$INPUT) or fail('no input'); return $in; } open($in, '<&=', 3) or fail('no input'); return $in; }

  # The words of a lock of an ancestor of $start (up to the top) held for $want by another than
  # $self: a holder that took the lock of a directory's nearest ancestor (the directory did not
  # exist yet) names it on its words' later lines; words with no later lines (an older baton)
  # stand for everything below. Only ancestors with words are probed (an instant each), and only
  # words this user or root wrote: words anyone could leave in a world-writable ancestor (/tmp)
  # would let them refuse every rotation below it by holding a flock there. Words whose lock is
  # free are a dead holder's, and stale: never read as a holder. undef when none is held.
  sub above {
    my ($up, $want, $self) = @_;
    while ($up ne top() && within(dirof($up))) {
      $up = dirof($up);
      my $f = ($up eq '/' ? '' : $up) . '/.baton.lock.holder';
      next unless -f $f && ((stat _)[4] == $> || (stat _)[4] == 0) && open(my $fh, '<', $f);
      my @l = <$fh>; close $fh; chomp @l;
      my $first = shift(@l) // '';
      next if defined $self && $first eq $self;
      my $rest = $up eq '/' ? substr($want, 1) : substr($want, length($up) + 1);
      next if @l && !grep { $_ eq $rest } @l;
      return $first if heldnow($up);
    }
    return undef;
  }
  # Whether another holds the flock of $d now: tried and let go at once (an instant: a taker in
  # its grace outlasts it). A directory that cannot be opened holds no lock.
  sub heldnow {
    my ($d) = @_;
    open(my $dh, '<', $d) or return 0;
    my $free = flock($dh, 6);
    flock($dh, 8) if $free;
    close $dh;
    return !$free;
  }
}

# The file operations: any number of paths in ONE process (at most one sha256sum for every digest,
# each directory synced once after its last rename), where a shell loop started processes per path.
{
  package Baton::Files;
  BEGIN { *fail = \&Baton::fail; *dirof = \&Baton::dirof; *beside = \&Baton::beside; *syncdirs = \&Baton::syncdirs;
          *mkdirp = \&Baton::mkdirp; *firstline = \&Baton::firstline; *put = \&Baton::put; *remove = \&Baton::remove; }
  # The digests come from one `sha256sum` over every file (perl-base has no SHA module):
  # without it no digest is honest, so the operation says so before touching anything.
  sub need_sha256sum {
    for my $d (split /:/, $ENV{PATH} // '') { return if $d ne '' && -x "$d/sha256sum"; }
    fail('sha256sum is not installed');
  }
  sub sums { return () unless @_; open(my $p, '-|', 'sha256sum', '--', @_) or return (); my @l = <$p>; close $p; return @l; }
  # A credential is a few dozen bytes: digested here (part sha256, ~0.08 ms a 64-byte block) it
  # costs a tenth of starting sha256sum (~1.1 ms of holder CPU, at every digest read of every
  # machine). Files of more than $SMALL blocks in all (an auth_file, a provider's many logins)
  # go to one sha256sum, which is faster from there; so does a perl without 64-bit integers.
  my $SMALL = 8;
  sub hashes {
    my %seen; my @have = grep { !$seen{$_}++ && -f $_ && -r _ } @_;
    my %h; my $blocks = 0;
    $blocks += int(((-s $_ // 0) + 72) / 64) for @have;
    if ($blocks <= $SMALL && ~0 > 0xffffffff) {
      Baton::later('sha256');
      for my $f (@have) { open(my $fh, '<:raw', $f) or next; local $/; my $t = <$fh>; close $fh; $h{$f} = Baton::Sha256::digest($t // ''); }
      return map { exists $h{$_} ? $h{$_} : '-' } @_;
    }
    my @lines = sums(@have);
    # A file that could not be read after all shifts the lines: then one sha256sum per file.
    @lines = map { (sums($_))[0] // '' } @have if @lines != @have;
    for my $i (0 .. $#have) { $h{$have[$i]} = $1 if defined $lines[$i] && $lines[$i] =~ /^\\?([0-9a-f]{64}) /; }
    return map { exists $h{$_} ? $h{$_} : '-' } @_;
  }

  sub digests {
    my (@paths) = @_;
    need_sha256sum();
    my $out = '';
    my @h = hashes(map { ($_, "$_.next", beside($_, '.prev')) } @paths);
    my %lock;
    for my $i (0 .. $#paths) {
      my $f = $paths[$i]; my ($m, $u) = ('-', '-');
      if (-f $f) { my @s = stat(_); $m = $s[9] if @s; my $l = firstline($f); $u = $1 if defined $l && $l =~ /^user=([a-z_][a-z0-9_]*) /; }
      $out .= "\@baton $h[3 * $i] $h[3 * $i + 1] $m $h[3 * $i + 2] $u\n";
      my $r = beside($f, '.rotation');
      $out .= -f $r ? '@baton +' . (firstline($r) // '') . "\n" : "\@baton -\n";
      # The lock: read only while held (a free lock's words are a dead holder's, stale).
      my $d = dirof($f);
      unless (exists $lock{$d}) {
        $lock{$d} = '-';
        $lock{$d} = '+' . (firstline("$d/.baton.lock.holder") // '') if -d $d && Baton::heldnow($d);
        if ($lock{$d} eq '-') { my $a = Baton::above($d, $d); $lock{$d} = "+$a" if defined $a; }
      }
      $out .= "\@baton $lock{$d}\n";
    }
    return $out;
  }
  sub texts {
    my $out = '';
    for my $f (@_) {
      if (-f $f && open(my $fh, '<', $f)) { local $/; my $t = <$fh>; $t = '' unless defined $t; $t =~ tr/\n//d; $out .= "\@baton +$t\n"; }
      else { $out .= "\@baton -\n"; }
    }
    return $out;
  }

  # Each file whole, as hex: every byte and line break kept (a pooler's auth_file, whose other
  # lines must come back byte for byte when one login's line is replaced).
  sub textread {
    my $out = '';
    for my $f (@_) {
      if (-f $f && open(my $fh, '<:raw', $f)) { local $/; my $t = <$fh>; close $fh; $t = '' unless defined $t; $out .= '@baton +' . unpack('H*', $t) . "\n"; }
      else { $out .= "\@baton -\n"; }
    }
    return $out;
  }

  my %ops = (digests => \&digests, stage => \&stage, unstage => \&unstage, keep => \&keep, commit => \&commit,
             restore => \&restore, records => \&records, discard => \&discard, retire => \&retire, texts => \&texts,
             textread => \&textread, textwrite => \&textwrite);
  # `records:<r>+<op>[+<op>]`: the first r paths' records written (as `records`, its r input
  # lines first), then each op over the other paths, in that order, in ONE request: a machine's
  # intent and the step it announces cost one round trip, and a record that fails stops the step
  # it announces. Ordering and crash states are those of the separate requests, in turn.
  sub opfor {
    my ($op) = @_;
    return $ops{$op} if defined $op && $ops{$op};
    my ($r, $then) = ($op // '') =~ /^records:(\d+)((?:\+(?:stage|keep|commit|discard))+)$/ or return undef;
    my @then = grep { $_ ne '' } split /\+/, $then;
    return undef if grep({ $_ eq 'stage' } @then) && @then > 1;
    return sub {
      my @paths = @_;
      fail("records:$r names more records than the " . scalar(@paths) . ' paths given') if $r > @paths;
      my @rec = splice(@paths, 0, $r);
      Baton::later('writes');
      my $in = Baton::input();
      my $read = sub { join('', map { my $l = <$in>; fail('stdin ended before a record') unless defined $l && $l =~ /\n\z/; $l } 1 .. $_[0]) };
      my $records = $read->($r);
      my $staged = $then[0] eq 'stage' ? $read->(scalar @paths) : '';
      { local $Baton::INPUT = $records; records(@rec); }
      local $Baton::INPUT = $staged;
      return join('', map { $ops{$_}->(@paths) } @then);
    };
  }
  # `serve`: the local transport's one agent per machine, so an operation costs no perl start.
  # Requests on fd 3: `files <op> <n> <k>`, then n path lines, then k input lines; each answered
  # with the operation's answers, then `@baton end ok` or `@baton end err <reason>`, in order.
  # Idle for $IDLE seconds (or the seconds it was started with; or fd 3 ending), it exits: the
  # controller starts another when asked. Over ssh the session is one per machine per command:
  # the request `channel` makes it the rename channel (Baton::Channel) from then on, so a
  # consumer's reads, its stage and its renames cost one process on each side.
  # `serve <seconds> <hex>`: requests the command itself carries (reads, no input), answered
  # before stdin is read at all. sshd lets a session's stdin through only one round trip after
  # it ran the command, so the first reads' answers do not wait for it (docs/agent-protocol.md).
  my $IDLE = 2;
  sub serve {
    my ($idle, $asked) = @_;
    $idle = $IDLE unless defined $idle && $idle =~ /^\d+$/ && $idle > 0;
    umask 077;
    $| = 1;
    $Baton::SERVING = 1;
    my $in = Baton::input();
    my $buf = defined $asked && $asked =~ /\A(?:[0-9a-f]{2})+\z/ ? pack('H*', $asked) : '';
    while (1) {
      while (1) {
        my $nl = index($buf, "\n"); last if $nl < 0;
        # `hello` too: a machine's resolve costs no perl start either.
        if (substr($buf, 0, $nl) eq 'hello') { substr($buf, 0, $nl + 1) = ''; print "\@baton agent v$main::PROTOCOL perl $]\n\@baton end ok\n"; next; }
        # The controller sends nothing after it until the channel's hello (`ready`), so nothing
        # read is left in $buf for the channel to miss.
        if (substr($buf, 0, $nl) eq 'channel') { $Baton::SERVING = 0; Baton::later('modes'); Baton::Channel::main(); }
        my ($op, $n, $k, $hex) = substr($buf, 0, $nl) =~ /^files (\S+) (\d+) (\d+)(?: ([0-9a-f]+))?$/;
        unless (defined $op) { substr($buf, 0, $nl + 1) = ''; print "\@baton end err malformed request\n"; next; }
        my ($at, @lines) = ($nl + 1);
        for (1 .. $n + $k) { my $e = index($buf, "\n", $at); last if $e < 0; push @lines, substr($buf, $at, $e - $at); $at = $e + 1; }
        last if @lines < $n + $k;
        substr($buf, 0, $at) = '';
        my @paths = splice(@lines, 0, $n);
        local $Baton::INPUT = join('', map { "$_\n" } @lines);
        # The local transport's one agent answers for every machine root of its host: a request
        # may name its own (in hex), as --root names a process's.
        local $Baton::ROOT = $Baton::ROOT;
        my $root = defined $hex ? pack('H*', $hex) : undef;
        my $rooted = defined $root ? Baton::rootof($root) : $Baton::ROOT;
        my $bad = defined $rooted ? undef : "the machine's root $root is not a directory\n";
        $Baton::ROOT = $rooted if defined $rooted;
        my $do = opfor($op);
        my $out = $do && !defined $bad ? eval { run($do, @paths) } : undef;
        my $why = $bad // ($do ? $@ : "unknown operation $op\n");
        if (defined $out) { print $out, "\@baton end ok\n"; }
        else { chomp $why; $why =~ tr/\n/ /; print "\@baton end err $why\n"; }
      }
      # The program's whole text comes first on stdin: read once, before the first request there.
      Baton::whole();
      my $rin = ''; vec($rin, 3, 1) = 1;
      exit 0 unless select(my $rout = $rin, undef, undef, $idle) > 0;
      exit 0 unless sysread($in, $buf, 65536, length $buf);
    }
  }

  # An operation on its paths; one in the part `writes` (a sub with no body yet, the loader left
  # it out) has that part compiled first.
  sub run { my ($do, @paths) = @_; Baton::later('writes') unless defined &$do; return $do->(map { Baton::at($_) } @paths); }

  sub main {
    my ($op, @paths) = @_;
    my $do = opfor($op) or fail('unknown operation ' . ($op // ''));
    umask 077;
    # The whole answer is printed at the end: an operation that fails midway answers nothing.
    print run($do, @paths);
    exit 0;
  }
}

#>>> sha256: compiled on demand (Baton::later) by a digest of small files (Baton::Files::hashes).
# SHA-256 (FIPS 180-4) in Perl, for a few blocks: perl-base has no SHA module. Every sum is kept to
# 32 bits (& 0xffffffff) on perl's 64-bit integers; test/transport/agent-program.test.ts checks it
# against sha256sum at each padding edge.
{
  package Baton::Sha256;
  my @K = (
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2);
  # The digest of $m's bytes, as sha256sum prints it.
  sub digest {
    my ($m) = @_;
    my $l = length $m;
    # Padding: 0x80, zeros to 56 bytes mod 64, the length in bits as 64 bits big-endian.
    $m .= "\x80" . ("\0" x ((55 - $l) % 64)) . pack('N2', $l >> 29, ($l << 3) & 0xffffffff);
    my @h = (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19);
    for my $o (0 .. length($m) / 64 - 1) {
      my @w = unpack('N16', substr($m, $o * 64, 64));
      for my $t (16 .. 63) {
        my ($x, $y) = ($w[$t - 15], $w[$t - 2]);
        $w[$t] = ($w[$t - 16] + $w[$t - 7]
          + ((($x >> 7 | $x << 25) ^ ($x >> 18 | $x << 14) ^ $x >> 3) & 0xffffffff)
          + ((($y >> 17 | $y << 15) ^ ($y >> 19 | $y << 13) ^ $y >> 10) & 0xffffffff)) & 0xffffffff;
      }
      my ($A, $B, $C, $D, $E, $F, $G, $H) = @h;
      for my $t (0 .. 63) {
        my $t1 = ($H + ((($E >> 6 | $E << 26) ^ ($E >> 11 | $E << 21) ^ ($E >> 25 | $E << 7)) & 0xffffffff)
          + (($E & $F) ^ (~$E & $G)) + $K[$t] + $w[$t]) & 0xffffffff;
        my $t2 = (((($A >> 2 | $A << 30) ^ ($A >> 13 | $A << 19) ^ ($A >> 22 | $A << 10)) & 0xffffffff)
          + (($A & $B) ^ ($A & $C) ^ ($B & $C))) & 0xffffffff;
        ($H, $G, $F, $E, $D, $C, $B, $A) = ($G, $F, $E, ($D + $t1) & 0xffffffff, $C, $B, $A, ($t1 + $t2) & 0xffffffff);
      }
      my @v = ($A, $B, $C, $D, $E, $F, $G, $H);
      @h = map { ($h[$_] + $v[$_]) & 0xffffffff } 0 .. 7;
    }
    return unpack('H*', pack('N8', @h));
  }
}
#<<< sha256

#>>> writes: compiled on demand (Baton::later) by the file operations that write, and the lock.

# The helpers of the operations that write.
{
  package Baton;
  # The role's receipt (src/mesh/digest.ts RECEIPTS_DIR): `<dir>/.applied/<role>`.
  sub receipt { return dirof($_[0]) . '/.applied/' . baseof($_[0]); }
  # IO::Handle (for ->sync) is loaded by the operations that write, not by the reads.
  sub syncdirs { require IO::Handle; my %seen; for my $d (@_) { next if $seen{$d}++; if (open(my $dh, '<', $d)) { $dh->sync; close $dh; } } }
  sub mkdirp { my ($d) = @_; return 1 if -d $d; my $up = dirof($d); mkdirp($up) if $up ne $d; return mkdir($d) || -d $d; }
  # A file written whole or not at all: temp, fsync, rename (the caller syncs the directory).
  sub put {
    my ($f, $text, $t) = @_;
    require IO::Handle;
    open(my $fh, '>', $t) or fail("could not write $t: $!");
    unless ((print $fh $text) && $fh->flush && $fh->sync && close($fh)) { unlink $t; fail("could not write $t: $!"); }
    unless (rename($t, $f)) { unlink $t; fail("could not rename $t: $!"); }
  }
  # Removes a file; absent is fine, anything else fails the operation.
  sub remove { for my $g (@_) { unlink $g or !-e $g or fail("could not remove $g: $!"); } }
}

# The file operations that write (Baton::Files::run compiles them when one is asked).
{
  package Baton::Files;
  sub line { my ($in, $f) = @_; my $s = <$in>; fail("stdin ended before $f") unless defined $s && $s =~ s/\n\z//; return $s; }
  # Two names of one file (a `.prev` already linked to the live file): nothing to do.
  sub same { my @a = stat($_[0]); my @b = stat($_[1]); return @a && @b && $a[0] == $b[0] && $a[1] == $b[1]; }
  sub stage {
    my (@paths) = @_;
    need_sha256sum();
    my $in = Baton::input();
    for my $f (@paths) {
      my $s = line($in, $f);
      mkdirp(dirof($f)) or fail("could not create " . dirof($f) . ": $!");
      put("$f.next", $s, "$f.next.tmp.$$");
    }
    syncdirs(map { dirof($_) } @paths);
    return join('', map { "\@baton $_\n" } hashes(map { "$_.next" } @paths));
  }
  # The temp files a write to $f cut short by a kill left (`<name>.tmp.<pid>`): removed, so no
  # copy of a secret outlives the step that owned it (test/transport/agent-contract-crash.test.ts).
  # With $older, only temps at least that many seconds old: in a directory no lock of baton's
  # guards (a pooler's auth_file), a younger one may be another writer's, mid-write.
  sub sweep {
    my ($f, $older) = @_;
    my $base = Baton::baseof($f) . '.tmp.';
    opendir(my $dh, dirof($f)) or return;
    my @temps = map { dirof($f) . "/$_" } grep { index($_, $base) == 0 } readdir $dh;
    closedir $dh;
    @temps = grep { my @l = lstat $_; @l && $l[9] <= time - $older } @temps if defined $older;
    remove(@temps);
  }
  # A staged file and any temp file a cut-short stage left (`<path>.next.tmp.<pid>`).
  # With it, a keep whose renames never came (a commit that failed or was cut short): a `.prev`
  # that is the live file itself (its hard link), or empty with nothing live, holds nothing the
  # live file does not, and left behind a roll-back it would outlive the rotation.
  sub unstage {
    for my $f (@_) {
      remove("$f.next"); sweep("$f.next");
      my $p = beside($f, '.prev');
      remove($p) if -f $p && ((-f $f && same($f, $p)) || (!-e $f && -z $p));
    }
    return '';
  }
  # Before a provider commit: the live file linked to `.prev` under a temp name, then renamed,
  # so `.prev` is always whole and never a copy; an empty `.prev` where nothing was live.
  sub keep {
    my (@paths) = @_;
    need_sha256sum();
    my @live;
    for my $f (@paths) {
      my $p = beside($f, '.prev'); my $t = "$p.tmp.$$";
      if (-f $f) {
        unless (same($f, $p)) {
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
    return join('', map { '@baton ' . (defined $_ ? shift @h : '-') . "\n" } @live);
  }
  sub commit {
    my @moved;
    for my $f (@_) {
      unless (-f "$f.next") { syncdirs(map { dirof($_) } @moved); fail("no staged file $f.next"); }
      # The reason is read before the sync: its `require` clobbers $! in a fresh process.
      unless (rename("$f.next", $f)) { my $why = "$!"; syncdirs(map { dirof($_) } @moved); fail("could not rename $f.next: $why"); }
      push @moved, $f;
    }
    syncdirs(map { dirof($_) } @moved);
    return '';
  }
  # A roll-back: the live file is linked aside as `.rolled-back` first (the database may
  # already hold its password, and nothing else does), then `.prev` goes back over it (an empty
  # one removes it), and the receipt goes, so the provisioner sets the previous password again.
  sub restore {
    my $out = '';
    for my $f (@_) {
      my $p = beside($f, '.prev'); my $r = beside($f, '.rolled-back');
      unless (-f $p) { $out .= "\@baton none\n"; next; }
      my $size = -s _;
      if (-f $f && !same($f, $p)) {
        my $t = "$r.tmp.$$";
        unlink $t;
        link($f, $t) or fail("could not link $f: $!");
        unless (chmod(0600, $t) && rename($t, $r)) { unlink $t; fail("could not keep $f as $r: $!"); }
      }
      if ($size) { rename($p, $f) or fail("could not rename $p: $!"); }
      else { remove($f, $p); }
      remove(Baton::receipt($f));
      syncdirs(dirof($f));
      $out .= "\@baton restored\n";
    }
    return $out;
  }
  sub records {
    my (@paths) = @_;
    my $in = Baton::input();
    for my $f (@paths) {
      my $s = line($in, $f);
      mkdirp(dirof($f)) or fail("could not create " . dirof($f) . ": $!");
      put($f, "$s\n", "$f.tmp.$$");
      # A record write a kill cut short left its temp; records are written under the provider's
      # lock, so any other temp of this record is a dead writer's (no secret in it, but litter).
      sweep($f);
    }
    syncdirs(map { dirof($_) } @paths);
    return '';
  }
  # With the temps a cut-short keep or restore left (hard links to a password).
  sub discard { for my $k (map { (beside($_, '.prev'), beside($_, '.rolled-back')) } @_) { remove($k); sweep($k); } return ''; }
  # A pair switched between single and alternating: the other mode's provider file goes, with
  # its staged and kept copies and its receipt.
  sub retire {
    for my $f (@_) {
      my @gone = ("$f.next", beside($f, '.prev'), beside($f, '.rolled-back'));
      remove($f, @gone, Baton::receipt($f));
      sweep($_) for @gone;
    }
    syncdirs(map { dirof($_) } @_);
    return '';
  }
  # A compare-and-swap of one whole file: replaced only while its content still has the digest
  # the controller read, so a line another writer added since is never lost. The new text goes
  # to a temp beside it with the file's own mode and owner (pgbouncer runs as another user),
  # fsync, the digest checked again, rename, the directory synced: a reader sees the old file or
  # the new one. Answers `written`, or `changed <digest now>` with nothing written.
  sub textwrite {
    fail('textwrite takes one path') unless @_ == 1;
    my ($f) = @_;
    need_sha256sum();
    my $in = Baton::input();
    my $want = line($in, $f); my $hex = line($in, $f);
    fail('textwrite: malformed input') unless $want =~ /^[0-9a-f]{64}\z/ && $hex =~ /^(?:[0-9a-f]{2})*\z/;
    my @s = stat($f); fail("no file $f") unless @s && -f _;
    my ($have) = hashes($f);
    return "\@baton changed $have\n" unless $have eq $want;
    sweep($f, 60);
    my $t = "$f.tmp.$$";
    put($t, pack('H*', $hex), "$t.w");
    unless (chown($s[4], $s[5], $t) && chmod($s[2] & 07777, $t)) { my $why = $!; unlink $t; fail("could not give $t the mode and owner of $f: $why"); }
    ($have) = hashes($f);
    if ($have ne $want) { unlink $t; return "\@baton changed $have\n"; }
    unless (rename($t, $f)) { my $why = $!; unlink $t; fail("could not rename $t: $why"); }
    syncdirs(dirof($f));
    return "\@baton written\n";
  }
}

#<<< writes

#>>> modes: compiled on demand (Baton::later) by the modes other than `files`, `serve` and `hello`.

# What `run`, `prepared` and the channel's reloads share.
{
  package Baton;
  # A command run for the app's sake (a consumer's `reload:`): `sh -c`, stdin /dev/null, stdout
  # dropped, stderr kept in a file of which only the end comes back, bounded HERE (ending the
  # ssh client does not end a remote command): TERM to its process group after $secs, KILL 2 s
  # later. The stderr file is unlinked as soon as it is open, so nothing is left behind even if
  # this process is killed; the command's descriptors are never the session's, or an app it
  # starts would hold the session open. Answers `rc <code> <timed-out 0|1>`, then `e <line>`.
  sub run_command {
    my ($secs, $cmd, @env) = @_;
    require POSIX;
    my $tmp = $ENV{TMPDIR} || '/tmp';
    my $err;
    for (1 .. 20) {
      my $name = sprintf('%s/baton-run.%d.%06d', $tmp, $$, int(rand(1000000)));
      # O_RDWR|O_CREAT|O_EXCL, 0600: nobody else's file, nobody else can read it.
      if (sysopen($err, $name, 2 | 64 | 128, 0600)) { unlink $name; last; }
      undef $err;
    }
    unless ($err) { print "\@baton rc 126 0\n\@baton e cannot make a temp file\n"; return; }
    my $pid = fork();
    unless (defined $pid) { print "\@baton rc 126 0\n\@baton e could not fork\n"; return; }
    if ($pid == 0) {
      POSIX::setsid();
      open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null'); open(STDERR, '>&', $err);
      POSIX::close(3);
      for (@env) { $ENV{$1} = $2 if /^([A-Z_][A-Z0-9_]*)=(.*)$/s; }
      # The local transport: the command runs in the directory that plays the machine's root,
      # and BATON_ROOT names it, so a command finds the files under it.
      if ($Baton::ROOT ne '') { $ENV{BATON_ROOT} = $Baton::ROOT; chdir $Baton::ROOT; }
      exec('sh', '-c', $cmd) or POSIX::_exit(127);
    }
    my $to = 0;
    {
      local $SIG{ALRM} = sub {
        if ($to) { kill 'KILL', -$pid; return; }
        $to = 1; kill 'TERM', -$pid; alarm 2;
      };
      alarm($secs > 0 ? $secs : 1);
      1 while waitpid($pid, 0) == 0;
      alarm 0;
    }
    my $st = $?;
    my $rc = $st & 127 ? 128 + ($st & 127) : $st >> 8;
    print "\@baton rc $rc $to\n";
    my $size = (stat $err)[7] // 0;
    my $tail = '';
    if (seek($err, $size > 4096 ? $size - 4096 : 0, 0)) { local $/; $tail = <$err> // ''; }
    close $err;
    print "\@baton e $_\n" for split /\n/, $tail;
  }
}

# The provider lock, held by this process for the session's life: a flock on the provider's
# directory (or, never delivered to yet, its nearest existing ancestor: taking the lock creates
# nothing), the holder's words beside it in `.baton.lock.holder`. Answers `locked` or
# `busy <words>`, then waits for stdin to end: the controller letting go, dying, or losing its
# connection. Every way this process ends but SIGKILL removes the words first (while the lock is
# still held, so a later holder's words are never the ones removed); after a SIGKILL the kernel
# frees the lock, and words whose lock is free are read as stale by every reader.
{
  package Baton::Lock;
  # A grace, not a wait: a status's probe of the same lock (an instant) is outlasted, and a
  # second controller is refused rather than queued behind the first.
  my $GRACE = 0.1;
  # A holder writes its words right after its flock (a durable write: under load longer than
  # the grace): a busy lock's words are waited for this many times 50 ms, trying the lock again
  # meanwhile, so a holder that lets go unsaid is outlasted rather than named "has not said who".
  my $WORDS_TRIES = 20;
  # Words found on a busy lock are taken after the lock was tried this many more times: words
  # left by a holder killed -9 beside a lock that is only being probed are then outlasted.
  my $STALE_TRIES = 2;
  # A directory that keeps appearing nearer is taken as it stands after this many looks.
  my $NEARER_TRIES = 4;
  my ($held, $words_file);

  sub try { my ($fh, $secs) = @_; my $end = $secs; while (1) { return 1 if flock($fh, 6); return 0 if $end <= 0; select(undef, undef, undef, 0.01); $end -= 0.01; } }
  sub near { my ($d) = @_; $d = Baton::dirof($d) while !-d $d && $d ne Baton::top() && Baton::within(Baton::dirof($d)); return $d; }
  sub below { my ($d, $want) = @_; return '' if $d eq $want; return $d eq '/' ? substr($want, 1) : substr($want, length($d) + 1); }
  sub wordsof { my ($d) = @_; return ($d eq '/' ? '' : $d) . '/.baton.lock.holder'; }
  sub lines { open(my $fh, '<', $_[0]) or return (); my @l = <$fh>; close $fh; chomp @l; return @l; }
  sub say_words { my ($f, @l) = @_; Baton::put($f, join('', map { "$_\n" } @l), "$f.tmp.$$"); }
  # Let go: the words first, while still held.
  sub release {
    return unless $held;
    unlink $words_file if defined $words_file;
    flock($held, 8); close $held;
    ($held, $words_file) = (undef, undef);
  }
  sub hold_until_eof { my $in = Baton::input(); 1 while sysread($in, my $b, 4096); }

  sub main {
    my ($want, $words) = @_;
    Baton::fail('lock: no directory') unless defined $want && defined $words;
    # Its words are written, and a dead holder's temps swept, by the writing helpers.
    Baton::later('writes');
    require IO::Handle;
    umask 077;
    $want = Baton::at($want); $words =~ s/\n/ /g;
    $| = 1;
    $SIG{$_} = sub { release(); exit 0; } for qw(TERM HUP INT PIPE);
    for my $attempt (0 .. $NEARER_TRIES) {
      my $d = near($want); my $b = below($d, $want); my $w = wordsof($d);
      open(my $dh, '<', $d) or Baton::fail("could not open $d: $!");
      my $got = try($dh, $GRACE);
      my $said;
      unless ($got) {
        my $seen = 0;
        for (1 .. $WORDS_TRIES) {
          my @l = lines($w);
          if (@l) { $said = $l[0]; last if ++$seen > $STALE_TRIES; }
          if (try($dh, 0.05)) { $got = 1; last; }
        }
      }
      unless ($got) {
        close $dh;
        # Our own words: this operation holds that ancestor already (two providers under one
        # never-delivered directory); it stands for this directory too from now on.
        if (defined $said && $said eq $words) {
          my ($first, @rest) = lines($w);
          say_words($w, $first, @rest, $b) if $b ne '' && !grep { $_ eq $b } @rest;
          print "\@baton locked\n";
          hold_until_eof();
          exit 0;
        }
        print '@baton busy ', ($said // ''), "\n";
        exit 0;
      }
      ($held, $words_file) = ($dh, undef);
      my $above = Baton::above($d, $want, $words);
      if (defined $above) { release(); print "\@baton busy $above\n"; exit 0; }
      # Held: a temp of the words a holder killed mid-write left is nobody's now.
      Baton::Files::sweep($w);
      say_words($w, $words, $b eq '' ? () : ($b));
      $words_file = $w;
      # A directory created between the look and the words (a second taker could have flocked
      # it and found no words above): taken anew.
      if ($d ne $want && $attempt < $NEARER_TRIES && near($want) ne $d) { release(); next; }
      print "\@baton locked\n";
      hold_until_eof();
      release();
      exit 0;
    }
  }
}

# A command for the app's sake (Baton::run_command): `run` at once; `prepared` opened ahead of
# the renames, waiting on stdin for `go` and its NAME=value lines up to an empty one (stdin
# ending first: the reload was not needed, nothing runs).
{
  package Baton::Run;
  sub main { my ($secs, $cmd, @env) = @_; $| = 1; Baton::run_command($secs // 1, $cmd // 'false', @env); exit 0; }
  sub prepared {
    my ($secs, $cmd) = @_;
    my $in = Baton::input();
    my $go = <$in>;
    exit 0 unless defined $go && $go eq "go\n";
    my @env;
    while (my $kv = <$in>) { chomp $kv; last if $kv eq ''; push @env, $kv; }
    main($secs, $cmd, @env);
  }
}

# The receipt watcher: inotify by `syscall` (no module beyond perl-base), else a stat per interval.
{
  package Baton::Watch;
  my ($iv, $life, $end, $ino, $ifd, $stdin, @paths, %byname, %wds, %polled, @sig, @text);
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

  sub main {
    ($iv, $life, @paths) = @_;
    @paths = map { Baton::at($_) } @paths;
    require POSIX;
    $iv = 0.01 unless $iv =~ /^[0-9.]+$/ && $iv > 0;
    $| = 1;
    $end = time + $life;
    my %calls = (x86_64 => [294, 254], aarch64 => [26, 27], i686 => [332, 292], i386 => [332, 292], armv7l => [360, 317], armv6l => [360, 317]);
    my $arch = (POSIX::uname())[4];
    ($ino, $ifd) = (undef, -1);
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
    $stdin = undef unless open($stdin, '<&=', 3);
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
    }
  }
}

# The rename channel: renames, the clock, TCP sockets relayed from the machine, armed commits
# and reloads, in one select() loop.
{
  package Baton::Channel;
  my ($in, $nr);
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
    for my $f (map { Baton::at($_) } @_) {
      next if defined $err;
      if (! -f "$f.next") { $err = "no staged file $f.next"; next; }
      if (rename("$f.next", $f)) { push @moved, $f; } else { $err = "could not rename $f.next"; }
    }
    my $at = now();
    syncdirs(@moved);
    return ($err, $at);
  }
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
      # The reload's own process: its answers go up the pipe, tagged by the channel.
      close $rd; POSIX::close(3);
      close $_->{fh} for values %sock;
      open(STDIN, '<', '/dev/null'); open(STDOUT, '>&', $wr); open(STDERR, '>', '/dev/null');
      $| = 1;
      Baton::run_command($r->{secs}, $r->{cmd}, @{$r->{env}});
      POSIX::_exit(0);
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
      unless (connect($fh, Socket::pack_sockaddr_in($port, $addr)) || $! == Errno::EINPROGRESS()) { return print "\@baton s $id err connect: $!\n"; }
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

  sub main {
    require POSIX;
    require IO::Handle;
    require Socket;
    require Errno;
    my %calls = (x86_64 => 228, aarch64 => 113);
    $nr = $calls{(POSIX::uname())[4]};
    $| = 1;
    $SIG{PIPE} = 'IGNORE';
    open($in, '<&=', 3) or exit 3;
    # The hello names the protocol (docs/agent-protocol.md): baton refuses another.
    print '@baton ready ', now(), " relay v$PROTOCOL\n";
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
          if (defined $w) { substr($s->{out}, 0, $w) = ''; } elsif ($! != Errno::EAGAIN()) { gone($id); next; }
        }
        if (vec($rout, $fd, 1)) {
          my $got = sysread($s->{fh}, my $data, 65536);
          if (defined $got && $got > 0) { print "\@baton s $id d ", unpack('H*', $data), "\n"; $s->{seen} .= $data; framing($id); }
          elsif (!defined $got && $! == Errno::EAGAIN()) { }
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
    exit 0;
  }
}

#<<< modes

package main;

my @args = @ARGV;
if (@args >= 2 && $args[0] eq '--root') {
  my (undef, $root) = splice(@args, 0, 2);
  $Baton::ROOT = Baton::rootof($root) // Baton::fail("the machine's root $root is not a directory");
}
my $mode = shift(@args) // '';
# Every mode but serve (which answers the reads its command carries first) takes the program's
# whole text off stdin before anything else reads it.
Baton::whole() unless $mode eq 'serve';
Baton::later('modes') if $mode =~ /^(?:watch|channel|lock|run|prepared)$/;
if ($mode eq 'files') { Baton::Files::main(@args); }
elsif ($mode eq 'watch') { Baton::Watch::main(@args); }
elsif ($mode eq 'channel') { Baton::Channel::main(@args); }
elsif ($mode eq 'lock') { Baton::Lock::main(@args); }
elsif ($mode eq 'serve') { Baton::Files::serve(@args); }
elsif ($mode eq 'run') { Baton::Run::main(@args); }
elsif ($mode eq 'prepared') { Baton::Run::prepared(@args); }
elsif ($mode eq 'hello') { print "\@baton agent v$PROTOCOL perl $]\n"; exit 0; }
else { print STDERR "\@baton err baton-agent: unknown mode $mode\n"; exit 3; }
