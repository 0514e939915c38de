#!/usr/bin/env bash
# GPU-machine validation, one command:  tests/gpu/run.sh [BUILD_DIR]
# Build bpfsight statically elsewhere (make test-build), carry the build directory, then run
# this as root on a machine with an NVIDIA GPU and PyTorch. It checks that the static binary
# runs where libbpf/libzstd are absent, traces a real PyTorch loop launched by bpfsight and
# attached with -p, and compares the kernel launches bpfsight's cuda family counts with
# torch.profiler's on identical iterations of the same loop (launch mode and -p). When the
# build has the CUDA test workloads (BUILD_DIR/tests/cuda), they run on the real GPU too.
# Results go to stdout and to $OUT/gpu-validation.txt ($OUT defaults to /tmp). Exit 0 when
# every check passed, 1 when one failed, 2 when this machine cannot run it (no GPU, no torch).
set -euo pipefail
build=${1:-build}
bin="$build/bpfsight"
here=$(cd "$(dirname "$0")" && pwd)
log=${OUT:-/tmp}/gpu-validation.txt
steps=${STEPS:-20}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
exec > >(tee "$log") 2>&1

cannot() { echo "CANNOT RUN: $*"; exit 2; }
[ -x "$bin" ] || cannot "no $bin: build it (make OUT=$build test-build), pass its directory"
[ "$(id -u)" = 0 ] || cannot "run as root (BPF)"
command -v nvidia-smi >/dev/null || cannot "no nvidia-smi: this needs a machine with an NVIDIA GPU"
nvidia-smi -L >/dev/null 2>&1 || cannot "nvidia-smi -L failed: no usable NVIDIA GPU"
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
	cannot "PyTorch with a visible CUDA device is needed (python3 -c 'import torch')"

fail=0
check() { # LABEL COMMAND...: run a check, note a failure, go on
	local label=$1
	shift
	if "$@"; then echo "PASS $label"; else echo "FAIL $label"; fail=1; fi
}

# Wait until FILE contains PATTERN (up to 120 s): 0, or 1 on time out.
wait_grep() {
	for _ in $(seq 1200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

echo "== machine"; uname -r; nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
echo "== static binary"; file "$bin" || true; "$bin" --version

echo "== untraced"; python3 "$here/torch_loop.py" 200
echo "== launch mode (all families)"
"$bin" record -f -o "$work/launch.bst" -- python3 "$here/torch_loop.py" 200
"$bin" info "$work/launch.bst"
"$bin" stats "$work/launch.bst" -r osrt_sum | head -20
"$bin" stats "$work/launch.bst" -r sched_sum | head -20
"$bin" stats "$work/launch.bst" -r cuda_api_sum | head -30

echo "== attach mode (-p) to a running loop"
python3 "$here/torch_loop.py" 2000 & pid=$!
pids+=("$pid")
sleep 3
"$bin" record -f -o "$work/attach.bst" -p "$pid" -d 3s
wait "$pid"
"$bin" info --json "$work/attach.bst"

echo "== cuda: kernel launches, bpfsight vs torch.profiler, launch mode ($steps steps)"
check "launch mode: bpfsight record" \
	"$bin" record -f -t cuda --capture-range=cudaProfilerApi -o "$work/cuda_launch.bst" -- \
	python3 "$here/torch_loop.py" --validate "$steps" --json "$work/cuda_launch.json"
"$bin" info "$work/cuda_launch.bst" || true
"$bin" stats "$work/cuda_launch.bst" -r cuda_api_sum,cuda_launch_sum,cuda_err_sum | head -60 || true
check "launch mode: launches equal torch.profiler's" \
	python3 "$here/compare_launches.py" "$bin" "$work/cuda_launch.bst" \
	"$work/cuda_launch.json" "launch mode"

echo "== cuda: kernel launches, bpfsight vs torch.profiler, attach mode -p ($steps steps)"
python3 "$here/torch_loop.py" --validate "$steps" --wait-file "$work/go" \
	--json "$work/cuda_attach.json" >"$work/loop.out" 2>&1 & pid=$!
pids+=("$pid")
if wait_grep "$work/loop.out" '^ready pid'; then
	"$bin" record -f -t cuda --capture-range=cudaProfilerApi -p "$pid" \
		-o "$work/cuda_attach.bst" 2>"$work/rec.err" & rec=$!
	pids+=("$rec")
	if wait_grep "$work/rec.err" 'Ctrl-C'; then
		touch "$work/go"
		check "attach mode: loop" wait "$pid"
		check "attach mode: bpfsight record (stops when the loop exits)" wait "$rec"
		cat "$work/loop.out" "$work/rec.err"
		"$bin" stats "$work/cuda_attach.bst" -r cuda_launch_sum | head -30 || true
		check "attach mode: launches equal torch.profiler's" \
			python3 "$here/compare_launches.py" "$bin" "$work/cuda_attach.bst" \
			"$work/cuda_attach.json" "attach mode (-p)"
	else
		cat "$work/rec.err"
		check "attach mode: recorder ready" false
	fi
else
	cat "$work/loop.out"
	check "attach mode: loop ready" false
fi

wl="$build/tests/cuda"
if [ -x "$wl/cuda_api_shared" ]; then
	echo "== cuda: test workloads on a real GPU (calls succeed, kernels named through handles)"
	for v in shared static; do
		check "cuda_api_$v: bpfsight record" \
			"$bin" record -f -t cuda -o "$work/wl_$v.bst" -- "$wl/cuda_api_$v" 3
		"$bin" stats "$work/wl_$v.bst" -r cuda_launch_sum,cuda_err_sum || true
		# 3 rounds: my_kernel_a 6, my_kernel_b 9, scale_kernel<float> 3 launches, named.
		check "cuda_api_$v: launches named and counted" python3 - "$bin" "$work/wl_$v.bst" <<-'EOF'
			import json, subprocess, sys
			p = subprocess.run([sys.argv[1], "stats", sys.argv[2], "-r", "cuda_launch_sum",
			                    "--format", "json"], capture_output=True, text=True, check=True)
			rows = json.loads(p.stdout)["reports"]["cuda_launch_sum"]
			got = {r["name"]: r["count"] for r in rows}
			want = {"my_kernel_a(float*, int)": 6, "my_kernel_b(int*, unsigned int)": 9,
			        "void scale_kernel<float>(float*, float, int)": 3}
			print("launches by kernel:", got)
			sys.exit(0 if got == want else 1)
		EOF
	done
else
	echo "== cuda: test workloads not in $wl (built only where nvcc is): skipped"
fi

if [ "$fail" = 0 ]; then echo "OK: every check passed"; else echo "FAILED: see FAIL lines above"; fi
exit "$fail"
