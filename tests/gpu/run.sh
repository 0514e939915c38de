#!/usr/bin/env bash
# GPU-machine validation, one command:  tests/gpu/run.sh [--only PART,...] [BUILD_DIR]
# Build bpfsight statically elsewhere (make test-build), carry the build directory, then run
# this as root on a machine with an NVIDIA GPU and PyTorch. Parts (all by default, in this
# order; --only runs the ones named, each timed; docs/gpu-validation.md says what each checks):
#   base        the static binary (no libbpf/libzstd there) traces a real PyTorch loop, launch
#               mode and -p
#   cuda        kernel launches counted by the cuda family = torch.profiler's (launch mode,
#               -p); the CUDA test workloads on the real GPU
#   gpu         the cupti-shim: kernels, GPU time and launch links = torch.profiler's (launch
#               mode, --inject), GPU timing switched on twice in a running job
#   overhead    GPU timing's cost on a launch-bound loop against torch.profiler's
#   nccl        a one-rank communicator's collectives with their GPU work
#   stacks      Python stacks at real launches
#   torch       the torch family's ops and op -> kernel links = torch.profiler's, FLOPs
#   graphs      a captured CUDA graph replayed: kernels named, timed, linked to the replay
#               call and to the op and line that captured them; counts = torch.profiler's
#   compile     torch.compile'd model: Triton kernels named as torch.profiler names them,
#               linked to the Python line that called the compiled function; named Python
#               functions traced beside it (TorchDynamo's frame-evaluation hook)
#   pyfunc      --python-functions pytorch through torchrun
#   gemm        the cublas family: GEMM shapes, FLOPs, TFLOP/s, MFU, the GPU's name
#   monitor     the monitor's GPU metrics = torch.profiler's
#   mem         the CUDA caching allocator's totals and peak = torch.cuda's, the OOM trigger,
#               the memory snapshot in torch's _memory_viz.py, sampled stacks
#   gpumetrics  NVML/GPM samples against nvidia-smi's
#   hang        two ranks on one GPU, one skipping an all_reduce: --trigger hang started
#               before, record -p started after the hang, stacks --all
#   cost        a launch-bound GPT-2 step in one running job: untraced, torch.profiler, the
#               default families, --inject -t cuda,gpu, -t cuda,gpu again, alternated
# Results go to stdout and to $OUT/gpu-validation.txt ($OUT defaults to /tmp); KEEP_TRACES=DIR
# keeps the traces and the workloads' JSON there. Exit 0 when every check passed, 1 when one
# failed, 2 when this machine cannot run it (no GPU, no torch) or the arguments are wrong.
set -euo pipefail
all_parts="base cuda gpu overhead nccl stacks torch graphs compile pyfunc gemm monitor mem gpumetrics hang cost"
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--only) only=${2//,/ }; shift 2 ;;
	--only=*) only=${1#--only=}; only=${only//,/ }; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
	*) break ;;
	esac
done
for p in $only; do
	case " $all_parts " in *" $p "*) ;; *) echo "run.sh: no part '$p' (parts: $all_parts)"; exit 2 ;; esac
done
build=${1:-build}
bin="$build/bpfsight"
here=$(cd "$(dirname "$0")" && pwd)
log=${OUT:-/tmp}/gpu-validation.txt
steps=${STEPS:-20}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	# KEEP_TRACES=DIR: the traces come back for a closer look (bpfsight dump/stats here).
	if [ -n "${KEEP_TRACES:-}" ]; then
		mkdir -p "$KEEP_TRACES" && cp "$work"/*.bst "$work"/*.json "$work"/*.out "$work"/*.err \
			"$work"/*.txt "$KEEP_TRACES"/ 2>/dev/null || true
	fi
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

# Wait until FILE contains PATTERN (up to 120 s): 0, or 1 on time out or, with PID, as soon
# as that process has ended without writing it (a job that failed costs no 2 minutes).
wait_grep() {
	for _ in $(seq 1200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			grep -q "$2" "$1" 2>/dev/null
			return
		fi
		sleep 0.1
	done
	return 1
}

echo "== machine"; uname -r; nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
echo "== static binary"; file "$bin" || true; "$bin" --version

# The shim is embedded in the static binary; `bpfsight shim --install DIR` writes it out.
shimdir="$work/shim"
"$bin" shim --install "$shimdir" || true
shim=$(ls "$shimdir"/*.so 2>/dev/null | head -1 || true)
# The parts that need the cupti-shim.
shim_parts=" gpu overhead nccl stacks torch pyfunc gemm monitor graphs compile "

# torch.profiler's half of the gpu and monitor checks (own process: CUPTI has one owner).
gpu_prof() {
	[ -s "$work/gpu_prof.json" ] ||
		check "gpu: torch.profiler on the same iterations (own process)" \
			python3 "$here/torch_loop.py" --validate --halves profiler "$steps" \
			--json "$work/gpu_prof.json"
}

# the static binary traces a real loop: launch mode with every default family, -p
part_base() {
	echo "== untraced"; python3 "$here/torch_loop.py" 200
	echo "== launch mode (all families)"
	"$bin" record --force -o "$work/launch.bst" -- python3 "$here/torch_loop.py" 200
	"$bin" info "$work/launch.bst"
	"$bin" stats "$work/launch.bst" -r osrt_sum | head -20 || true
	"$bin" stats "$work/launch.bst" -r sched_sum | head -20 || true
	"$bin" stats "$work/launch.bst" -r cuda_api_sum | head -30 || true

	echo "== attach mode (-p) to a running loop"
	python3 "$here/torch_loop.py" 2000 & pid=$!
	pids+=("$pid")
	sleep 3
	"$bin" record --force -o "$work/attach.bst" -p "$pid" -d 3s
	wait "$pid"
	"$bin" info --json "$work/attach.bst"
}

# cuda: kernel launches against torch.profiler's (launch mode, -p); the CUDA test workloads
part_cuda() {
	echo "== cuda: kernel launches, bpfsight vs torch.profiler, launch mode ($steps steps)"
	check "launch mode: bpfsight record" \
		"$bin" record --force -t cuda --capture-range=cudaProfilerApi -o "$work/cuda_launch.bst" -- \
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
	if wait_grep "$work/loop.out" '^ready pid' "$pid"; then
		"$bin" record --force -t cuda --capture-range=cudaProfilerApi -p "$pid" \
			-o "$work/cuda_attach.bst" 2>"$work/rec.err" & rec=$!
		pids+=("$rec")
		if wait_grep "$work/rec.err" 'Ctrl-C' "$rec"; then
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
				"$bin" record --force -t cuda -o "$work/wl_$v.bst" -- "$wl/cuda_api_$v" 3
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
}

# gpu: kernels, GPU time and links against torch.profiler's; --inject; GPU timing on twice in a running job
part_gpu() {
	echo "== gpu: kernels, bpfsight vs torch.profiler, launch mode ($steps steps)"
	# CUPTI has one owner per process: torch.profiler's half runs in its own process.
	gpu_prof
	check "gpu launch mode: bpfsight record" \
		"$bin" record --force -t cuda,gpu,nvtx --capture-range=cudaProfilerApi \
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
	if wait_grep "$work/inj_loop.out" '^ready pid' "$pid"; then
		"$bin" record --force -t cuda,gpu --inject --capture-range=cudaProfilerApi -p "$pid" \
			-o "$work/gpu_inject.bst" 2>"$work/inj_rec.err" & rec=$!
		pids+=("$rec")
		if wait_grep "$work/inj_rec.err" 'the cupti-shim is loaded' "$rec"; then
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
	# The job trains until told to stop: it outlives both recordings (4000 steps did not, on
	# an H100: the second recording saw the job exit instead of the shim drain).
	CUDA_INJECTION64_PATH="$shim" NVTX_INJECTION64_PATH="$shim" \
		python3 "$here/torch_loop.py" --until-file "$work/job_stop" >"$work/job.out" 2>&1 & pid=$!
	pids+=("$pid")
	sleep 8
	# Round 1 GPU timing alone, round 2 with the cuda family: its ops linked by launch order
	# (no CUPTI API records in a running job: docs/GPU.md, "Launch order").
	for round in 1 2; do
		fams=gpu
		[ "$round" = 2 ] && fams=cuda,gpu
		check "running job: attach round $round (-t $fams)" \
			"$bin" record --force -t "$fams" -p "$pid" -d 3s -o "$work/job$round.bst"
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
		"$bin" info "$work/job$round.bst" | grep -A3 "gpu links" || true
		sleep 2
	done
	touch "$work/job_stop"
	check "running job: finished normally after two recordings" wait "$pid"
	cat "$work/job.out"
}

# overhead of GPU timing on a launch-bound loop against torch.profiler's
part_overhead() {
	echo "== gpu: overhead on a launch-bound loop (5 rounds, configurations interleaved)"
	check "overhead: bpfsight -t gpu within 10% of torch.profiler's CUDA tracing" \
		python3 "$here/overhead.py" "$bin" "$here/torch_loop.py" "$shim" "$work"
}

# nccl: a one-rank communicator's collectives and their GPU work
part_nccl() {
	echo "== nccl: single-GPU communicator (nranks=1), collectives and their kernels"
	check "nccl: bpfsight record" \
		"$bin" record --force -t cuda,nccl,gpu --capture-range=cudaProfilerApi \
		-o "$work/nccl.bst" -- python3 "$here/nccl_allreduce.py" 50 "$work/nccl.json"
	"$bin" stats "$work/nccl.bst" -r nccl_sum,nccl_comm_sum,cuda_gpu_kern_sum | head -40 || true
	check "nccl: 50 ncclAllReduce and 50 ncclAllGather calls, each with the GPU work it launched" \
		python3 "$here/check_nccl.py" "$bin" "$work/nccl.bst" "$work/nccl.json"
}

# stacks: Python frames at real kernel launches
part_stacks() {
	echo "== stacks: Python frames at real kernel launches (--stacks=cuda:0, $steps steps)"
	check "stacks: bpfsight record" \
		"$bin" record --force -t cuda --stacks=cuda:0 --capture-range=cudaProfilerApi \
		-o "$work/stacks.bst" -- python3 "$here/torch_loop.py" --validate --halves range \
		"$steps" --json "$work/stacks.json"
	"$bin" stats "$work/stacks.bst" -r cuda_callsites | head -30 || true
	check "stacks: every main-thread launch under steps(), 2 per step at its line" \
		python3 "$here/check_stacks.py" "$bin" "$work/stacks.bst" "$work/stacks.json" \
		"$here/torch_loop.py"
}

# torch: ops and their kernels against torch.profiler's
part_torch() {
	echo "== torch: a GPT-2-style loop's ops and their kernels vs torch.profiler (steps 5..14)"
	# torch.profiler (CPU + CUDA) on iterations 5..14 in its own process (CUPTI has one
	# owner); bpfsight records the same iterations of another run with
	# --capture-range=steps:3+10 (the first boundary is iteration 1's end) and lets it finish.
	check "torch: torch.profiler on iterations 5..14 (own process)" \
		python3 "$here/check_torch.py" loop 16 --profile 5:14 --json "$work/torch_prof.json"
	check "torch: bpfsight record -t torch,cuda,gpu --capture-range=steps:3+10" \
		"$bin" record --force -t torch,cuda,gpu --torch-shapes --capture-range=steps:3+10 --kill none \
		-o "$work/torch.bst" -- python3 "$here/check_torch.py" loop 16
	"$bin" stats "$work/torch.bst" -r torch_op_sum,torch_step_sum | head -40 || true
	check "torch: ops equal torch.profiler's, every kernel under the op that launched it, key_averages' counts and FLOPs" \
		python3 "$here/check_torch.py" compare "$bin" "$work/torch.bst" "$work/torch_prof.json"
}

# pyfunc: --python-functions pytorch through torchrun
part_pyfunc() {
	echo "== pyfunc: --python-functions pytorch on the GPU loop, through a launcher"
	# torchrun starts the worker as a child (fork and exec of python): each new image's shim
	# gets the spec (docs/PYFUNC-mechanism.md). Without torchrun, env execs it.
	launcher=(env)
	command -v torchrun >/dev/null && launcher=(torchrun --standalone --nproc_per_node=1)
	check "pyfunc: bpfsight record --python-functions pytorch -- ${launcher[*]} check_torch.py loop 16" \
		"$bin" record --force --python-functions pytorch -o "$work/pyfunc.bst" -- \
		"${launcher[@]}" "$here/check_torch.py" loop 16
	"$bin" stats "$work/pyfunc.bst" -r pyfunc_sum | head -20 || true
	check "pyfunc: the worker's 16 optimizer steps, zero_grads and backwards, its modules' forwards" \
		python3 - "$bin" "$work/pyfunc.bst" <<-'EOF'
			import json, re, subprocess, sys
			out = subprocess.run([sys.argv[1], "stats", sys.argv[2], "-r", "pyfunc_sum",
			                      "--format", "json"], capture_output=True, text=True, check=True)
			rows = json.loads(out.stdout)["reports"]["pyfunc_sum"]
			calls = lambda pat: sum(r["calls"] for r in rows if re.fullmatch(pat, r["function"]))
			got = (calls(r"torch\.optim\.[\w.]+:Adam(W)?\.step"),  # torch 2.11's AdamW inherits Adam.step
			       calls(r"torch\.optim\.optimizer:Optimizer\.zero_grad"),
			       calls(r"torch\._tensor:Tensor\.backward"),
			       calls(r".*\.forward") >= 16)
			print("steps, zero_grads, backwards, forwards >= 16:", got)
			sys.exit(0 if got == (16, 16, 16, True) else 1)
		EOF
}

# cublas: GEMMs' shapes, FLOPs, kernels, TFLOP/s, MFU
part_gemm() {
	echo "== cublas, cudnn: torch.mm's GEMMs, their kernels, TFLOP/s and MFU; conv2d's cuDNN calls"
	check "cublas: bpfsight record -t cuda,gpu,cublas,cudnn" \
		"$bin" record --force -t cuda,gpu,cublas,cudnn -o "$work/gemm.bst" -- \
		python3 "$here/check_gemm.py" loop "$work/gemm.json"
	"$bin" stats "$work/gemm.bst" -r gemm_sum,cublas_sum,cudnn_sum | head -50 || true
	check "cublas: gemm_sum's shapes, FLOPs and GPU time; gemm_step_sum's MFU in (0, 100], against the recorded GPU (= nvidia-smi's) too; the verdict's low MFU; cuDNN's 50 forward convolutions and their FLOPs" \
		python3 "$here/check_gemm.py" compare "$bin" "$work/gemm.bst" "$work/gemm.json"
}

# monitor: the GPU metrics of a job run with the shim against torch.profiler's
part_monitor() {
	gpu_prof
	echo "== monitor: GPU metrics of a job run with the shim, vs torch.profiler ($steps steps)"
	check "monitor: bpfsight_gpu_kernels_total, kernel and busy seconds" \
		python3 "$here/check_monitor.py" "$bin" "$here/torch_loop.py" "$shim" "$work" \
		"$steps" "$work/gpu_prof.json"
}

# mem: the CUDA caching allocator against PyTorch's own figures; sampled stacks
part_mem() {
	echo "== mem: the CUDA caching allocator's totals and peak vs PyTorch's own ($steps steps, -p)"
	python3 "$here/check_mem.py" loop "$steps" "$work/mem.json" --wait-file "$work/mem_go" --oom \
		>"$work/mem_loop.out" 2>&1 & pid=$!
	pids+=("$pid")
	if wait_grep "$work/mem_loop.out" '^ready pid' "$pid"; then
		"$bin" record --force -t mem -p "$pid" --flight-recorder 30s --trigger mem:oom \
			-o "$work/mem.bst" 2>"$work/mem_rec.err" & rec=$!
		pids+=("$rec")
		if wait_grep "$work/mem_rec.err" 'Ctrl-C' "$rec"; then
			touch "$work/mem_go"
			check "mem: loop" wait "$pid"
			check "mem: bpfsight record (stops when the loop exits)" wait "$rec"
			cat "$work/mem_loop.out" "$work/mem_rec.err"
			dumpf=$(ls "$work"/mem-*.bst 2>/dev/null | head -1 || true)
			check "mem: --trigger mem:oom dumped the window of the OOM" \
				python3 "$here/check_mem.py" oom "$bin" "${dumpf:-$work/none.bst}" "$work/mem.json"
			"$bin" stats "${dumpf:-$work/none.bst}" -r mem_sum,mem_peak,mem_leaks | head -60 || true
		else
			cat "$work/mem_rec.err"
			check "mem: recorder ready" false
		fi
	else
		cat "$work/mem_loop.out"
		check "mem: loop ready" false
	fi
	check "mem: bpfsight record -t mem (launch mode)" \
		"$bin" record --force -t mem -o "$work/mem_launch.bst" -- \
		python3 "$here/check_mem.py" loop "$steps" "$work/mem_launch.json"
	check "mem: allocated/reserved at every step boundary and the peak equal PyTorch's" \
		python3 "$here/check_mem.py" compare "$bin" "$work/mem_launch.bst" "$work/mem_launch.json"
	check "mem: bpfsight export --format memory-snapshot" \
		"$bin" export "$work/mem_launch.bst" --format memory-snapshot -o "$work/mem.pickle"
	check "mem: the snapshot loads in torch/cuda/_memory_viz.py" \
		python3 "$here/check_mem.py" snapshot "$work/mem.pickle"

	echo "== mem: GPU allocations' stacks by sampled bytes against a stack on every one (-p)"
	python3 "$here/check_mem.py" sites "$work/sites_go" >"$work/sites.out" 2>&1 & pid=$!
	pids+=("$pid")
	if wait_grep "$work/sites.out" '^ready pid' "$pid"; then
		"$bin" record --force -t mem -p "$pid" --stacks=mem:0 -o "$work/sites_exact.bst" \
			2>"$work/sites_exact.err" & rec1=$!
		"$bin" record --force -t mem -p "$pid" --mem-sample-rate 32K -o "$work/sites_sampled.bst" \
			2>"$work/sites_sampled.err" & rec2=$!
		pids+=("$rec1" "$rec2")
		if wait_grep "$work/sites_exact.err" 'Ctrl-C' "$rec1" && wait_grep "$work/sites_sampled.err" 'Ctrl-C' "$rec2"; then
			touch "$work/sites_go"
			wait_grep "$work/sites.out" '^done' "$pid" || true
			kill -INT "$rec1" "$rec2"
			check "mem: sites: the exact recorder" wait "$rec1"
			check "mem: sites: the sampled recorder" wait "$rec2"
			touch "$work/sites_go.done"
			check "mem: sites: the job" wait "$pid"
			check "mem: each line's sampled bytes within 10% of the exact ones (4 KiB, 64 KiB, 4 MiB blocks)" \
				python3 "$here/check_mem.py" compare-sites "$bin" "$work/sites_exact.bst" \
				"$work/sites_sampled.bst"
		else
			cat "$work/sites_exact.err" "$work/sites_sampled.err"
			check "mem: sites: recorders ready" false
		fi
	else
		cat "$work/sites.out"
		check "mem: sites: job ready" false
	fi
}

# gpumetrics: NVML and GPM against nvidia-smi's
part_gpumetrics() {
	echo "== gpumetrics: NVML and GPM against nvidia-smi over the same seconds, a GEMM and a copy loop"
	# nvidia-smi samples every 100 ms in the background, bpfsight at 1 kHz: utilization, power and
	# energy compared over the seconds both cover (check_gpumetrics.py says the bounds and why).
	for kind in gemm copy; do
		nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw --format=csv,noheader,nounits \
			-lms 100 >"$work/smi_$kind.csv" 2>/dev/null & smi=$!
		pids+=("$smi")
		check "gpumetrics: bpfsight record --gpu-metrics-devices=0 -- check_gpumetrics.py $kind 8" \
			"$bin" record --force -v -t gpumetrics --gpu-metrics-devices=0 --gpu-metrics-frequency=1000 \
			-o "$work/gpum_$kind.bst" -- python3 "$here/check_gpumetrics.py" "$kind" 8 \
			>"$work/gpum_$kind.out" 2>&1
		kill "$smi" 2>/dev/null || true
		cat "$work/gpum_$kind.out"
		"$bin" stats "$work/gpum_$kind.bst" -r gpu_metrics_sum | head -45 || true
		check "gpumetrics: $kind: utilization, power, energy vs nvidia-smi; the loop's own signature" \
			python3 "$here/check_gpumetrics.py" compare "$bin" "$work/gpum_$kind.bst" \
			"$work/smi_$kind.csv" "$kind" "$work/gpum_$kind.out"
	done
	echo "== gpumetrics: the rate one device allows (asked 10 kHz: what the sampler took, its CPU)"
	check "gpumetrics: bpfsight record --gpu-metrics-devices=all (default 10 kHz) -- sleep 5" \
		"$bin" record --force -v --gpu-metrics-devices=all -o "$work/gpum_rate.bst" -- sleep 5
	"$bin" dump "$work/gpum_rate.bst" -k gpu_metrics_status || true
	"$bin" info "$work/gpum_rate.bst" | grep -A3 "^lost" || true
}

# hang: two ranks on one GPU, one skips an all_reduce
part_hang() {
	echo "== hang: two ranks on one GPU, one skips an all_reduce (--trigger hang)"
	"$bin" record --force -t nccl,cuda,gpu --flight-recorder=60s --trigger hang:5s -o "$work/hang.bst" \
		-- python3 "$here/hang_ranks.py" launch "$work/hang.json" >"$work/hang.out" 2>"$work/hang.err" &
	rec=$!
	pids+=("$rec")
	if wait_grep "$work/hang.err" 'flight recorder: wrote' "$rec"; then
		check "hang: the verdict names the collective rank 0 waits in on the GPU, and rank 1 in idle()" \
			python3 "$here/hang_ranks.py" check "$bin" "$work/hang-1.bst" "$work/hang.json"
		"$bin" stats "$work/hang-1.bst" -r nccl_hang --wide | head -30 || true
	else
		cat "$work/hang.out" "$work/hang.err"
		check "hang: a dump within 120 s" false
	fi
	kill -INT "$rec" 2>/dev/null || true
	wait "$rec" 2>/dev/null || true
	# The ranks outlive the recording: rank 0 waits on the GPU for ever, rank 1 sleeps an hour.
	python3 -c 'import json,os,signal,sys; [os.kill(p, signal.SIGKILL) for p in json.load(open(sys.argv[1]))["pids"]]' \
		"$work/hang.json" 2>/dev/null || true
}

# hang, continued: the same job hung before bpfsight starts (pages come after the hang).
part_hang_late() {
	echo "== hang: the job hung before bpfsight came: record -p of both ranks, stacks --all"
	python3 "$here/hang_ranks.py" launch "$work/hang_late.json" 29532 >"$work/hang_late.out" 2>&1 &
	local lp=$! ranks
	pids+=("$lp")
	if wait_grep "$work/hang_late.out" '^stall' "$lp"; then
		sleep 4 # the hang is 4 s old when bpfsight arrives
		ranks=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["pids"])))' \
			"$work/hang_late.json")
		check "hang (late): bpfsight record -p $ranks -d 3s" \
			"$bin" record --force -p "$ranks" -d 3s -o "$work/hang_late.bst"
		"$bin" stacks --all >"$work/hang_stacks.txt" 2>&1 || true
		sed -n 1,40p "$work/hang_stacks.txt"
		"$bin" stats "$work/hang_late.bst" --wide | head -30 || true
		# What top's NOW says of the two ranks (shown, not checked: a spinning wait's stack is
		# a sample's)
		COLUMNS=200 timeout 30 "$bin" top -b -p "$ranks" -d 2 2>&1 | tail -12 || true
		check "hang (late): the verdict names rank 0 waiting at its line and rank 1 in idle(); so do stacks --all's first 25 lines" \
			python3 "$here/hang_ranks.py" check-late "$bin" "$work/hang_late.bst" \
			"$work/hang_late.json" "$work/hang_stacks.txt"
	else
		cat "$work/hang_late.out"
		check "hang (late): the ranks hung within 120 s" false
	fi
	python3 -c 'import json,os,signal,sys; [os.kill(p, signal.SIGKILL) for p in json.load(open(sys.argv[1]))["pids"]]' \
		"$work/hang_late.json" 2>/dev/null || true
	kill "$lp" 2>/dev/null || true
}

# cost: one running GPT-2 job, phases traced otherwise, alternated with untraced ones.
part_cost() {
	echo "== cost: a launch-bound GPT-2 step, untraced / torch.profiler / default / --inject -t cuda,gpu / -t cuda,gpu"
	check "cost: every phase ran, every recording ended well (step-time ratios below)" \
		python3 "$here/cost_phases.py" drive "$bin" "$work" --json "$work/cost.json"
	cat "$work"/cost*.rec.log 2>/dev/null | grep -E "wrote|verdict|lost" | head -20 || true
}

# graphs: a captured forward replayed; its kernels against torch.profiler's.
part_graphs() {
	echo "== graphs: a forward captured with torch.cuda.graph, replayed 20 times"
	check "graphs: torch.profiler on the eager forwards and the replays (own process)" \
		python3 "$here/check_graphs.py" run 20 --profile --json "$work/graphs_prof.json"
	check "graphs: bpfsight record -t cuda,gpu,torch --stacks=cuda:0" \
		"$bin" record --force -t cuda,gpu,torch --stacks=cuda:0 -o "$work/graphs.bst" -- \
		python3 "$here/check_graphs.py" run 20 --json "$work/graphs.json"
	"$bin" info "$work/graphs.bst" | grep -A4 "gpu links" || true
	"$bin" stats "$work/graphs.bst" -r cuda_gpu_kern_sum | head -20 || true
	check "graphs: replays' kernels = torch.profiler's, timed, linked to the replay and to the capturing op and line" \
		python3 "$here/check_graphs.py" compare "$bin" "$work/graphs.bst" "$work/graphs.json" \
		"$work/graphs_prof.json"
}

# compile: torch.compile's Triton kernels, named and linked to the calling line.
part_compile() {
	echo "== compile: a torch.compile'd model's Triton kernels (10 steps)"
	export TORCHINDUCTOR_COMPILE_THREADS=1 TORCHINDUCTOR_CACHE_DIR="$work/inductor"
	check "compile: torch.profiler on the compiled steps (own process; fills the cache)" \
		python3 "$here/check_compile.py" run 10 --profile --json "$work/compile_prof.json"
	check "compile: bpfsight record -t cuda,gpu --stacks=cuda:0 --capture-range=cudaProfilerApi" \
		"$bin" record --force -t cuda,gpu --stacks=cuda:0 --capture-range=cudaProfilerApi \
		-o "$work/compile.bst" -- python3 "$here/check_compile.py" run 10 --json "$work/compile.json"
	"$bin" stats "$work/compile.bst" -r cuda_gpu_kern_sum | head -20 || true
	check "compile: kernels = torch.profiler's, Triton's linked to the line that called the compiled model" \
		python3 "$here/check_compile.py" compare "$bin" "$work/compile.bst" \
		"$work/compile.json" "$work/compile_prof.json"
	if [ -n "$shim" ]; then
		check "compile: --python-functions beside torch.compile (the frame-evaluation slot TorchDynamo's too)" \
			"$bin" record --force -t cuda,gpu,pyfunc --python-functions '__main__:run.<locals>.step' \
			-o "$work/compile_pyfunc.bst" -- python3 "$here/check_compile.py" run 10 \
			--json "$work/compile_pyfunc.json"
		check "compile: step() traced at each call, the model still compiled (Triton kernels), the mechanism said" \
			python3 "$here/check_compile.py" pyfunc "$bin" "$work/compile_pyfunc.bst" \
			"$work/compile_pyfunc.json"
	fi
	unset TORCHINDUCTOR_COMPILE_THREADS TORCHINDUCTOR_CACHE_DIR
}

# --- the parts, in order, each timed --------------------------------------------------------
times=()
for part in $all_parts; do
	if [ -n "$only" ]; then
		case " $only " in *" $part "*) ;; *) continue ;; esac
	fi
	case "$shim_parts" in *" $part "*)
		if [ -z "$shim" ]; then
			echo "== $part: this build has no embedded cupti-shim (built without CUPTI headers): FAIL"
			fail=1
			continue
		fi ;;
	esac
	t0=$(date +%s.%N)
	"part_$part"
	[ "$part" = hang ] && part_hang_late
	t=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
	echo "== part $part: ${t} s"
	times+=("$part ${t}s")
done
echo "== time by part: ${times[*]}"
if [ "$fail" = 0 ]; then echo "OK: every check passed"; else echo "FAILED: see FAIL lines above"; fi
exit "$fail"
