#!/usr/bin/env bash
# docs_test.sh BITGRAD: the user docs (README.md, docs/*.md, tests/README.md) name only things that
# exist: every file path and config file, every `bitgrad <command>` and each flag written after
# it, every key given with --set or written as `key: value`. What exists is asked of the build
# itself (`bitgrad help`, `bitgrad config train|fit-bide --markdown`) and of the checkout, so a
# renamed flag, key, config or script fails here instead of in a user's hands.
set -uo pipefail
bin=$(realpath "$1")
cd "$(dirname "$0")/.."
"$bin" help > /tmp/bitgrad_docs_help.$$ || { echo "FAIL: bitgrad help"; exit 1; }
{ "$bin" config train --markdown && "$bin" config fit-bide --markdown; } > /tmp/bitgrad_docs_keys.$$ ||
  { echo "FAIL: bitgrad config"; exit 1; }
trap 'rm -f /tmp/bitgrad_docs_help.$$ /tmp/bitgrad_docs_keys.$$' EXIT
perl - /tmp/bitgrad_docs_help.$$ /tmp/bitgrad_docs_keys.$$ README.md docs/*.md tests/README.md <<'PERL'
use strict;
use warnings;
my ($help, $keys, @docs) = @ARGV;
# Commands and their flags, from `bitgrad help`: a line "  bitgrad CMD ..." opens a command's
# block; every --flag in the block (synopsis and flag lines) belongs to it.
my (%flags, $cmd);
open(my $h, '<', $help) or die;
while (<$h>) {
  if (/^  bitgrad (\S+)/) { $cmd = $1; $flags{$cmd} //= {}; }
  next unless defined $cmd;
  $flags{$cmd}{$1} = 1 while /(--[a-z][a-z0-9-]*)/g;
}
close $h;
$flags{$_}{'--help'} = $flags{$_}{'--set'} = 1 for keys %flags;
# `bitgrad version  (or --version)` and `bitgrad --version`
$flags{'--version'} = {};
# Config keys: the first column of both commands' tables; list elements as "x[].y".
my %key;
open(my $k, '<', $keys) or die;
while (<$k>) { $key{$1} = 1 if /^\| `([^`]+)` \|/; }
close $k;
my %prefix;  # sections (model., head.bide.) that keys live under, for `section.*` mentions
for my $full (keys %key) {
  my @p = split /\./, $full;
  $prefix{join('.', @p[0 .. $_])} = 1 for 0 .. $#p - 1;
}
sub is_key {
  my ($name) = @_;
  $name =~ s/\.(\d+)\./[]./g;  # distributions.0.kind -> distributions[].kind
  $name =~ s/^distributions\./distributions[]./;
  return $key{$name} || $prefix{$name};
}
my @bad;
for my $doc (@docs) {
  open(my $f, '<', $doc) or die "$doc: $!";
  my $in_code = 0;
  while (my $line = <$f>) {
    my $where = "$doc:$.";
    $in_code = !$in_code if $line =~ /^\s*```/;
    # Files of the checkout (not outputs such as runs/ or datasets/, not placeholders).
    # A path with * or {a,b} must match at least one file; one inside a quoted error message
    # ("[samples] data/x.txt:17: ...") is an example, not a file of the checkout.
    while ($line =~ m#(?<![\w./-])((?:scripts|docs|tests|apps|core|models|layers|kernels|data|bench|configs)/[A-Za-z0-9_./*{},-]*[A-Za-z0-9_*}])#g) {
      my $path = $1;
      next if substr($line, 0, $-[1]) =~ /\]\s$/ || $path =~ /[<>]|NAME|\.\.\./;
      my $found = $path =~ /[*{]/ ? scalar(my @m = glob($path)) && -e $m[0] : -e $path;
      push @bad, "$where: no file or folder $path" unless $found;
    }
    # Commands and the flags that follow them, in code (spans or blocks).
    my @code = $in_code ? ($line) : ($line =~ /`([^`]*)`/g);
    for my $c (@code) {
      while ($c =~ /\bbitgrad ((?:--)?[a-z][a-z-]*)([^|#`;&]*)/g) {
        my ($name, $rest) = ($1, $2);
        next if $name =~ /^(train|sample|eval)_/;  # bitgrad_tests and other names
        unless ($flags{$name}) { push @bad, "$where: no command 'bitgrad $name'"; next; }
        while ($rest =~ /(?<![\w-])(--[a-z][a-z0-9-]*)/g) {
          push @bad, "$where: 'bitgrad $name' has no flag $1" unless $flags{$name}{$1};
        }
      }
      while ($c =~ /--set[ =]([a-z_][a-z0-9_.]*)=/g) {
        next if $1 =~ /^(key|key\.path|a\.b)$/;  # the syntax itself, not a key
        push @bad, "$where: no config key $1 (--set)" unless is_key($1);
      }
    }
    # `key.path: value` written as a setting.
    while ($line =~ /`([a-z_]+(?:\.[a-z0-9_]+)+): [^`]+`/g) {
      push @bad, "$where: no config key $1" unless is_key($1);
    }
  }
  close $f;
}
if (@bad) { print "FAIL: $_\n" for @bad; exit 1; }
printf "docs_test: %d files checked; every path, config, command, flag and key they name exists\n",
  scalar @docs;
PERL
