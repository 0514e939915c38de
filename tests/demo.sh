#!/usr/bin/env bash
# make demo: record the bundled demo workload (a miniature training loop's host side:
# a loader thread reading batches, a trainer thread computing and checkpointing) and show
# what bpfsight saw.
set -euo pipefail
out=${1:-build}
bin="$out/bpfsight"
trace="$out/demo.bst"
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "== bpfsight record -o $trace -- $out/tests/demo_pipeline"
$sudo "$bin" record --force -o "$trace" -- "$out/tests/demo_pipeline"
echo
echo "== bpfsight info $trace"
"$bin" info "$trace"
echo
echo "== bpfsight stats $trace"
"$bin" stats "$trace"
echo
echo "== first events (bpfsight dump $trace | head)"
"$bin" dump --kind syscall,offcpu "$trace" | head -n 5
