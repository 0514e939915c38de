#!/usr/bin/env bash
# GPU-machine validation, one command:  tests/gpu/run.sh [BUILD_DIR]
# Build bpfsight statically elsewhere (make), carry the build directory, then run this as
# root on the GPU machine. It checks that the static binary runs where libbpf/libzstd are
# absent, and traces a real PyTorch loop launched by bpfsight and attached with -p.
# Results go to stdout and, when $OUT is set, to $OUT/gpu-validation.txt.
set -euo pipefail
build=${1:-build}
bin="$build/bpfsight"
here=$(dirname "$0")
log=${OUT:-/tmp}/gpu-validation.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exec > >(tee "$log") 2>&1

echo "== machine"; uname -r; nvidia-smi -L || true; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)'
echo "== static binary"; file "$bin" || true; "$bin" --version

echo "== untraced"; python3 "$here/torch_loop.py" 200
echo "== launch mode"
"$bin" record -f -o "$work/launch.bst" -- python3 "$here/torch_loop.py" 200
"$bin" info "$work/launch.bst"
"$bin" stats "$work/launch.bst" -r osrt_sum | head -20
"$bin" stats "$work/launch.bst" -r sched_sum | head -20

echo "== attach mode (-p) to a running loop"
python3 "$here/torch_loop.py" 2000 & pid=$!
sleep 3
"$bin" record -f -o "$work/attach.bst" -p "$pid" -d 3s
wait "$pid"
"$bin" info --json "$work/attach.bst"
echo "OK"
