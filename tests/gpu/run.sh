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
"$bin" stats "$work/launch.bst" -r osrt_sum | head -20 || true
"$bin" stats "$work/launch.bst" -r sched_sum | head -20 || true
"$bin" stats "$work/launch.bst" -r cuda_api_sum | head -30 || true

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

# --- gpu and nvtx families (cupti-shim) -----------------------------------------------------
# The shim is embedded in the static binary; `bpfsight shim --install DIR` writes it out.
shimdir="$work/shim"
"$bin" shim --install "$shimdir" || true
shim=$(ls "$shimdir"/*.so 2>/dev/null | head -1 || true)
if [ -n "$shim" ]; then
	echo "== gpu: kernels, bpfsight vs torch.profiler, launch mode ($steps steps)"
	# CUPTI has one owner per process: torch.profiler's half runs in its own process.
	check "gpu: torch.profiler on the same iterations (own process)" \
		python3 "$here/torch_loop.py" --validate --halves profiler "$steps" \
		--json "$work/gpu_prof.json"
	check "gpu launch mode: bpfsight record" \
		"$bin" record -f -t cuda,gpu,nvtx --capture-range=cudaProfilerApi \
		-o "$work/gpu_launch.bst" -- python3 "$here/torch_loop.py" --validate \
		--halves range "$steps" --json "$work/gpu_launch.json"
	"$bin" info "$work/gpu_launch.bst" || true
	"$bin" stats "$work/gpu_launch.bst" -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,gpu_idle_sum \
		| head -60 || true
	check "gpu launch mode: kernels, GPU time and launch links vs torch.profiler" \
		python3 "$here/compare_gpu.py" "$bin" "$work/gpu_launch.bst" \
		"$work/gpu_launch.json" "$work/gpu_prof.json" "gpu, launch mode"

	echo "== gpu: --inject into a PyTorch loop started without the shim ($steps steps)"
	# No CUDA_INJECTION64_PATH: the recorder loads the shim through ptrace; the loop waits
	# (--wait-file) until the shim has had time to load CUPTI and enable activity.
	env -u CUDA_INJECTION64_PATH -u NVTX_INJECTION64_PATH python3 "$here/torch_loop.py" \
		--validate --halves range "$steps" --wait-file "$work/inj_go" \
		--json "$work/gpu_inject.json" >"$work/inj_loop.out" 2>&1 & pid=$!
	pids+=("$pid")
	if wait_grep "$work/inj_loop.out" '^ready pid'; then
		"$bin" record -f -t cuda,gpu --inject --capture-range=cudaProfilerApi -p "$pid" \
			-o "$work/gpu_inject.bst" 2>"$work/inj_rec.err" & rec=$!
		pids+=("$rec")
		if wait_grep "$work/inj_rec.err" 'the cupti-shim is loaded'; then
			sleep 3 # the shim's poller: semaphores (50 ms), CUPTI loaded and enabled
			touch "$work/inj_go"
			check "inject: loop" wait "$pid"
			check "inject: bpfsight record (stops when the loop exits)" wait "$rec"
			cat "$work/inj_rec.err"
			"$bin" stats "$work/gpu_inject.bst" -r shim_sum,cuda_gpu_kern_sum | head -40 || true
			check "inject: shim_sum shows ptrace_injected" \
				sh -c "'$bin' stats '$work/gpu_inject.bst' -r shim_sum --format csv | grep -q ptrace_injected"
			check "inject: kernels, GPU time and launch links vs torch.profiler" \
				python3 "$here/compare_gpu.py" "$bin" "$work/gpu_inject.bst" \
				"$work/gpu_inject.json" "$work/gpu_prof.json" "gpu, --inject"
		else
			cat "$work/inj_rec.err"
			check "inject: the shim loaded into the running loop" false
		fi
	else
		cat "$work/inj_loop.out"
		check "inject: loop ready" false
	fi

	echo "== gpu: turning GPU timing on and off in a job already running (-p)"
	CUDA_INJECTION64_PATH="$shim" NVTX_INJECTION64_PATH="$shim" \
		python3 "$here/torch_loop.py" 4000 >"$work/job.out" 2>&1 & pid=$!
	pids+=("$pid")
	sleep 8
	for round in 1 2; do
		check "running job: attach round $round" \
			"$bin" record -f -t gpu -p "$pid" -d 3s -o "$work/job$round.bst"
		check "running job: round $round has kernels and the shim drained" \
			python3 - "$bin" "$work/job$round.bst" <<-'EOF'
			import json, subprocess, sys
			d = subprocess.run([sys.argv[1], "dump", sys.argv[2]], capture_output=True,
			                   text=True, check=True).stdout.splitlines()
			ev = [json.loads(l) for l in d]
			k = sum(1 for e in ev if e["kind"] == "gpu_kernel")
			st = [e["name"] for e in ev if e["kind"] == "shim_status"]
			print(f"kernels {k}, shim status events {st}")
			sys.exit(0 if k > 0 and "attach" in st and "drained" in st else 1)
			EOF
		sleep 2
	done
	check "running job: finished normally after two recordings" wait "$pid"

	echo "== gpu: overhead on a launch-bound loop (median of 5 runs each)"
	python3 - "$bin" "$here/torch_loop.py" "$shim" "$work" <<-'EOF' || fail=1
	import os, re, statistics, subprocess, sys
	bin_, loop, shim, work = sys.argv[1:]
	n = 20000
	env_idle = dict(os.environ, CUDA_INJECTION64_PATH=shim, NVTX_INJECTION64_PATH=shim)
	configs = [
	    ("untraced", [], os.environ),
	    ("shim idle (env set, no tracer)", [], env_idle),
	    ("bpfsight -t gpu", [bin_, "record", "-f", "-t", "gpu", "-o", f"{work}/o1.bst", "--"], os.environ),
	    ("bpfsight -t cuda,gpu", [bin_, "record", "-f", "-t", "cuda,gpu", "-o", f"{work}/o2.bst", "--"], os.environ),
	    ("bpfsight -t cuda", [bin_, "record", "-f", "-t", "cuda", "-o", f"{work}/o3.bst", "--"], os.environ),
	]
	res = {}
	for name, pre, env in configs:
	    t = []
	    for _ in range(5):
	        p = subprocess.run(pre + ["python3", loop, "--launch-bound", str(n)], env=env,
	                           capture_output=True, text=True, check=True)
	        t.append(float(re.search(r"launch-bound \d+ ops ([\d.]+) s", p.stdout).group(1)))
	    res[name] = statistics.median(t)
	    print(f"  {name:34s} median {res[name] * 1e6 / n:8.2f} us/op  runs {[round(x, 4) for x in t]}")
	base = res["untraced"]
	for name in res:
	    print(f"  {name:34s} {res[name] / base:.4f}x untraced")
	idle, act = res["shim idle (env set, no tracer)"] / base, res["bpfsight -t gpu"] / base
	print(f"  goals: shim idle <= 1.005x: {'PASS' if idle <= 1.005 else 'FAIL'} ({idle:.4f}); "
	      f"shim active <= 1.03x: {'PASS' if act <= 1.03 else 'FAIL'} ({act:.4f})")
	sys.exit(0 if idle <= 1.005 and act <= 1.03 else 1)
	EOF

	echo "== nccl: single-GPU communicator (nranks=1), collectives and their kernels"
	check "nccl: bpfsight record" \
		"$bin" record -f -t cuda,nccl,gpu --capture-range=cudaProfilerApi \
		-o "$work/nccl.bst" -- python3 "$here/nccl_allreduce.py" 50 "$work/nccl.json"
	"$bin" stats "$work/nccl.bst" -r nccl_sum,nccl_comm_sum,cuda_gpu_kern_sum | head -40 || true
	check "nccl: 50 ncclAllReduce calls, each with GPU work launched inside it" \
		python3 - "$bin" "$work/nccl.bst" "$work/nccl.json" <<-'EOF'
		import bisect, json, subprocess, sys
		want = json.load(open(sys.argv[3]))
		ev = [json.loads(l) for l in subprocess.run([sys.argv[1], "dump", sys.argv[2]],
		      capture_output=True, text=True, check=True).stdout.splitlines()]
		ev = [e for e in ev if e["pid"] == want["pid"]]
		ar = sorted((e["tid"], e["ts"], e["ts"] + e["dur"]) for e in ev
		            if e["kind"] == "nccl_api" and e["name"] == "ncclAllReduce")
		gpu = [e for e in ev if e["kind"] in ("gpu_kernel", "gpu_memcpy") and "call_ts" in e["args"]]
		inside = 0
		for tid, s, end in ar:
		    if any(g["tid"] == tid and s <= g["args"]["call_ts"] <= end for g in gpu):
		        inside += 1
		names = sorted({g["name"] for g in gpu if "nccl" in g["name"].lower()})
		print(f"ncclAllReduce calls {len(ar)} (want {want['allreduces']}), with GPU work "
		      f"launched inside {inside}; NCCL kernels {names[:5]}")
		sys.exit(0 if len(ar) == want["allreduces"] and inside == len(ar) else 1)
		EOF
else
	echo "== gpu/nvtx: this build has no embedded cupti-shim (built without CUPTI headers): skipped"
	fail=1
fi

if [ "$fail" = 0 ]; then echo "OK: every check passed"; else echo "FAILED: see FAIL lines above"; fi
exit "$fail"
