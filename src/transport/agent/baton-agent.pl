#!/usr/bin/perl
# baton-agent: the machine side of baton's mesh, the ONE program that does every file operation
# on a holder (docs/agent-protocol.md). baton sends this file with each session (ssh: as the
# program `perl -` reads; local: the same), so the machine never runs another version of it.
# Perl 5 with only its core modules: perl-base is Essential on Debian and Ubuntu, so a holder
# needs nothing installed (docs/architecture.md, "The machine side").
#
#   perl - files <op> <path>...        stage, commit, keep, records, discard, texts, digests
#   perl - watch <interval> <life> <path>...   the receipt watcher
#   perl - channel <run command>       the rename channel and its relay
#   perl - hello                       at resolve: the protocol it speaks and the perl running it
#
# stdin is read on fd 3 (the caller's `exec 3<&0`: perl's own stdin is this program). Answers
# are lines starting `@baton `, so a login shell's banner is never taken for one.
use strict;
use warnings;

# The protocol this program speaks: src/transport/agent-protocol.ts AGENT_PROTOCOL is the same.
our $PROTOCOL = 1;
# Each mode requires only the modules it uses (below): a module loaded for nothing costs every
# operation its start-up, and a digest read is one perl start per machine.

# The file operations: any number of paths in ONE process (one sha256sum for every digest, each
# directory synced once after its last rename), where a shell loop started processes per path.
{
  package Baton::Files;
  # Tagged as baton's own: only such a line is quoted as the reason (a login shell's rc noise is not).
  sub fail { print STDERR "\@baton err $_[0]\n"; exit 3; }
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
  # lines name it (or it has none), as the LOCK script (remote-scripts.ts) leaves them; undef when none is held.
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

  sub main {
    my ($op, @paths) = @_;
    require IO::Handle;
    umask 077;
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
    exit 0;
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
  my ($run, $in, $nr);
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
    ($run) = @_;
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

package main;

my $mode = shift(@ARGV) // '';
if ($mode eq 'files') { Baton::Files::main(@ARGV); }
elsif ($mode eq 'watch') { Baton::Watch::main(@ARGV); }
elsif ($mode eq 'channel') { Baton::Channel::main(@ARGV); }
elsif ($mode eq 'hello') { print "\@baton agent v$PROTOCOL perl $]\n"; exit 0; }
else { print STDERR "\@baton err baton-agent: unknown mode $mode\n"; exit 3; }
