# bpfsight build. `make` builds build/bpfsight; `make help` lists the targets.
# libbpf-bootstrap's pipeline: clang -target bpf -> bpftool gen object -> gen skeleton;
# user space linked statically (libbpf, libelf, libz, libzstd, OpenSSL, libc) so the binary runs on
# GPU machines that have none of them.

OUT	?= build
CC	?= cc
CLANG	?= clang
BPFTOOL	?= bpftool
PYTHON	?= python3
# The CUDA toolkit the CUDA/NCCL workloads and benchmarks are built with.
CUDA_HOME ?= /usr/local/cuda
ARCH	:= $(shell uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
# x86-64 only. A task's saved registers are read by what they are (bpf/task_regs.bpf.h), but
# vmlinux/vmlinux.h, the native stack walker (frame pointer, signal frames, the TLS base, a
# sample's ring), the uprobe-API families' sixth argument and the system call numbers are
# x86-64's. Another machine gets this, not programs that read the wrong registers.
ifneq ($(ARCH),x86)
$(error bpfsight builds for x86-64 only (this machine is $(ARCH)): its vmlinux.h, the native stack walker, the uprobe-API families' sixth argument and the system call numbers are x86-64's)
endif
VERSION	:= $(shell git describe --always --dirty 2>/dev/null || echo unknown)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# One job per CPU unless told otherwise (make -j1 for a serial build; a -j on the command line
# wins): make check from a fresh clone spends minutes compiling.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc)
endif

.DELETE_ON_ERROR:
.SUFFIXES:
# Skeletons and BPF objects are intermediates of pattern chains: keep them, or every
# make would delete them and rebuild and relink everything the next time.
.SECONDARY:

WARN	 := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS	 ?= -g -O2
# user/ has a folder per part (docs/ARCHITECTURE.md, "Folders"; which may include which:
# "Layers"); headers are included by name, every folder being on the quote path (systemd's
# way), so a file can move between folders.
USER_SRCS := $(wildcard user/*/*.c user/*/*/*.c)
USER_DIRS := $(patsubst %/,%,$(sort $(dir $(USER_SRCS))))
USER_INC  := $(addprefix -iquote ,$(USER_DIRS))
ALL_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP \
	      -I$(OUT) $(USER_INC) -Ibpf
# libsupc++.a for the demangler's callback form (user/uprobe/demangle.c), which libstdc++.so does
# not export: the unit tests and fuzzers link dynamically.
LDLIBS	 := -Wl,--start-group -lbpf -lelf -lz -lzstd -Wl,--end-group -lsqlite3 -lssl -lcrypto -l:libsupc++.a \
	    -lstdc++ -lm -lpthread
LDFLAGS	 ?= -static
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	      -Ivmlinux -Ibpf -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS	 := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
SHIM_EMBED_OBJ := $(OUT)/obj/shim_channel/shim_embed.o
# The gpumetrics family's sampler, a dynamic program carried in the binary (gpum_embed.S).
GPUM_EMBED_OBJ := $(OUT)/obj/families/gpumetrics/gpum_embed.o
EMBED_OBJS := $(SHIM_EMBED_OBJ) $(GPUM_EMBED_OBJ)
USER_OBJS := $(patsubst user/%.c,$(OUT)/obj/%.o,$(USER_SRCS)) $(EMBED_OBJS)
# libbpf parses the kernel's BTF anew for every object it loads: bpfsight's static link wraps
# the parse and its free so that a process parses it once (user/record/btf_shared.c), and the
# skeletons' open, load and destroy so that an object's CO-RE relocations search the types
# they name, not the whole BTF (user/record/btf_core_subset.c). The tests link libbpf.so,
# whose calls between its own files cannot be wrapped: not theirs.
BTF_SHARED_OBJ := $(OUT)/obj/record/btf_shared.o $(OUT)/obj/record/btf_core_subset.o
BTF_WRAP := -Wl,--wrap=btf__load_vmlinux_btf -Wl,--wrap=btf__free \
	    -Wl,--wrap=bpf_object__open_skeleton -Wl,--wrap=bpf_object__load_skeleton \
	    -Wl,--wrap=bpf_object__destroy_skeleton
# cmd_complete.o lists main.o's dispatch table: neither is linked into the tests.
LIB_OBJS := $(filter-out $(OUT)/obj/cli/main.o $(OUT)/obj/cli/cmd_complete.o $(BTF_SHARED_OBJ),\
	    $(USER_OBJS))
# The trace-format core, linked into the unit tests and the fuzzer without the BPF side.
FORMAT_OBJS := $(addprefix $(OUT)/obj/core/,trace_writer.o trace_reader.o trace_codec.o \
		trace_columns_enc.o trace_columns_plan.o trace_columns_dec.o trace_chunk_dec.o \
		trace_meta.o trace_renumber.o) $(addprefix $(OUT)/obj/lib/,sudo_owner.o)

WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOADS := $(patsubst tests/workloads/%.c,$(OUT)/tests/%,$(WORKLOAD_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNITS	 := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
FUZZER	 := $(OUT)/tests/fuzz_reader
# The decoder and shim-unpack fuzzers link every user object but main.o, those of the folders
# they read input through rebuilt with clang's coverage and sanitizers (under $(OUT)/fuzz-obj:
# the plain objects stay gcc's).
# UB stops the run (as a crash): recovered, it would only be printed and make check pass.
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
# The folders no fuzzer reads input through (the command line, the recording session, the
# ClickHouse shipper, the uprobe-call families' attach side) link their plain gcc objects:
# instrumenting their 57 objects cost 6.7 s of make check's CPU and guided no fuzzer.
FUZZ_PLAIN := $(filter $(addprefix $(OUT)/obj/,$(addsuffix /%,cli session ship ucall)),$(LIB_OBJS))
FUZZ_OBJS := $(patsubst $(OUT)/obj/%.o,$(OUT)/fuzz-obj/%.o,\
	     $(filter-out $(EMBED_OBJS) $(FUZZ_PLAIN),$(LIB_OBJS))) $(FUZZ_PLAIN)
FUZZERS	 := $(FUZZER) $(OUT)/tests/fuzz_decode $(OUT)/tests/fuzz_shim_unpack \
	    $(OUT)/tests/fuzz_pylines $(OUT)/tests/fuzz_elf $(OUT)/tests/fuzz_eh_frame

.PHONY: all deps vmlinux check soak test-build test-build-first test-units test-fuzzers demo report-png fuzz bench bench-build clean help format \
	bench-unwind check-unwind-tables \
	man install uninstall deb check-deb check-kernels check-torch-versions check-pyfunc-versions \
	check-python-versions \
	bench-unwind-walk record-path
all: $(OUT)/bpfsight man

help:
	@echo 'make            build build/bpfsight'
	@echo 'make deps       install the Debian packages the build and tests need (and CPython 3.14, 3.15 from sid,'
	@echo '                chDB 26.7 from npm: a 178 MB download, 566 MB in /opt/chdb)'
	@echo 'make demo       build, record the bundled demo workload, print its stats'
	@echo 'make report-png docs/report.png: the report page of a real trace in headless chromium'
	@echo '                (TRACE=../shared/traces/gpt2-gil-bound.bst)'
	@echo 'make check      build and run the whole test suite (as root)'
	@echo 'make check-unwind-tables  unwind tables of every library here against readelf (~8 min)'
	@echo 'make fuzz       long libFuzzer runs of the trace reader, the record decoders, the'
	@echo '                cupti-shim batch unpacker, the ELF and unwind-table readers'
	@echo '                (FUZZ_SECONDS=600 each)'
	@echo 'make bench      overhead and throughput benchmarks -> bench/RESULTS.md (< 10 min;'
	@echo '                BENCH_ARGS=--quick: < 1 min, indicative only)'
	@echo 'make bench-unwind  unwind tables: build time and memory for libtorch_cpu, cuBLAS (~15 s)'
	@echo 'make bench-unwind-walk  unwind tables walked: a stack'"'"'s cost against frame pointers (~1 min)'
	@echo 'make record-path  how far one ring record travels from the driver: files entered,'
	@echo '                climbs up a floor of docs/ARCHITECTURE.md (tools/record_path.py, ~1 min)'
	@echo 'make vmlinux    regenerate vmlinux/vmlinux.h from /sys/kernel/btf/vmlinux'
	@echo 'make format     clang-format every C file git tracks (.clang-format; make check'
	@echo '                fails on an unformatted one)'
	@echo 'make man        the man pages, from docs/USAGE.md -> $(OUT)/man (part of make)'
	@echo 'make install    install the binary, cupti-shim, man pages, bash/zsh completion and docs'
	@echo '                (PREFIX=/usr/local, DESTDIR=); make uninstall removes them'
	@echo 'make deb        the Debian package -> $(OUT)/deb/bpfsight_*.deb'
	@echo 'make check-deb  build it, install it into a clean Debian 12 root (debootstrap, cached'
	@echo '                in /var/cache/bpfsight) and record with the installed binary there'
	@echo 'make check-kernels  the e2e tests of each family on every kernel series Debian'
	@echo '                packages (6.1, 6.12), booted in QEMU (KERNELS=6.1 FAMILIES=osrt,sched)'
	@echo 'make check-torch-versions  the torch family on every torch release Debian packages'
	@echo '                (1.13, 2.6, sid'"'"'s), chrooted roots of their packages (SUITES=trixie)'
	@echo 'make check-pyfunc-versions  --python-functions on every CPython here (3.8-3.15)'
	@echo 'make check-python-versions  Python stacks and the GIL on every CPython here (make check: five)'
	@echo 'V=1             show full commands'

DEPS_PKGS := clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev \
	     libclang-rt-14-dev python3 protobuf-compiler systemtap-sdt-dev bpftrace \
	     sqlite3 libsqlite3-dev libssl-dev clickhouse-server clickhouse-client make gcc g++ libc6-dbg python3-torch clang-format \
	     libcap2-bin dpkg-dev debhelper lintian debootstrap zsh groff-base chromium \
	     golang-go prometheus qemu-system-x86 busybox-static cpio musl-tools patchelf \
	     python3-memory-profiler gdb linux-perf python3-dask valgrind qemu-user
# CPython 3.14 and 3.15 from Debian unstable, each release and debug build, for the stack, GIL
# and pyfunc tests (tests/tools/install_sid_cpython.sh): make check reads the newest.
SID_CPYTHON := /opt/cpython
SID_VERSIONS := 3.14 3.15
# ClickHouse 26.7 embedded (chDB's libchdb.so, npm, pinned and checked): the ClickHouse tests'
# current release beside Debian's 18.16 (tests/tools/install_chdb.sh, docs/CLICKHOUSE.md).
CHDB_DIR := /opt/chdb
deps:
	$(Q)missing=$$(for p in $(DEPS_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' \
		|| echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all installed"; fi
	$(Q)for v in $(SID_VERSIONS); do \
		if $(SID_CPYTHON)/$$v/bin/python$$v -c 'import ctypes' 2>/dev/null && \
			$(SID_CPYTHON)/$${v}d/bin/python$$v -c 'import ctypes' 2>/dev/null; then \
			echo "deps: CPython $$v in $(SID_CPYTHON)"; \
		else bash tests/tools/install_sid_cpython.sh $$v $(SID_CPYTHON) || \
			echo "deps: CPython $$v not installed: the tests that want it say so"; fi; \
	done
	$(Q)command -v npm >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm; }
	$(Q)bash tests/tools/install_chdb.sh $(CHDB_DIR)

# Every C source and header git tracks (vmlinux.h is generated), as make check's test_format
# checks them.
format:
	$(Q)git ls-files -z -- '*.c' '*.h' ':!vmlinux/*' | xargs -0 clang-format -i

vmlinux:
	$(call msg,GEN,vmlinux/vmlinux.h)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h.tmp
	$(Q)mv vmlinux/vmlinux.h.tmp vmlinux/vmlinux.h

$(BPF_OBJS): $(OUT)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/vmlinux.h | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MT $@ -MF $(@:.o=.d) -c $< -o $(@:.bpf.o=.tmp.bpf.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.bpf.o=.tmp.bpf.o)

# A static pattern rule: the -MP stubs in the objects' .d files name the skeletons as empty
# targets, which would shadow a plain pattern rule once a skeleton is deleted.
$(SKELS): $(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# The version the binary prints and writes into each trace, in a header rewritten only when
# `git describe` changes: -MMD then rebuilds just the objects that include it after a commit
# (a -D flag left the version of whichever build last compiled them).
VERSION_H := $(OUT)/bpfsight_version.h
$(VERSION_H): FORCE
	$(Q)mkdir -p $(@D)
	$(Q)v='#define BPFSIGHT_VERSION "$(VERSION)"'; \
		[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
.PHONY: FORCE
FORCE:

# Order-only on the skeletons: -MMD then records which ones each object really includes.
$(OUT)/obj/%.o: user/%.c | $(SKELS) $(VERSION_H)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# The flame graphs' script, which flamegraph_js.c includes with .incbin (unseen by -MMD).
$(OUT)/obj/stacks/flamegraph_js.o $(OUT)/fuzz-obj/stacks/flamegraph_js.o: user/stacks/flamegraph.js

# Linked once every argument spec of the uprobe families compiles (tools/check_specs.c).
$(OUT)/bpfsight: $(USER_OBJS) $(OUT)/specs.ok
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $(BTF_WRAP) $(USER_OBJS) $(LDLIBS) -o $@

# Every family's API table compiled by the spec compiler: a malformed spec fails the build
# here, with its function's name and what is wrong. Linked like the unit tests (the registry
# says which tables there are).
$(OUT)/check_specs: tools/check_specs.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(LIB_OBJS) -o $@ $(LDLIBS)

$(OUT)/specs.ok: $(OUT)/check_specs
	$(call msg,CHECK,argument specs)
	$(Q)$< && touch $@

# Workloads are ordinary dynamically linked programs, as a user's would be.
$(OUT)/tests/%: tests/workloads/%.c | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -MMD -MP \
		$(WL_EXTRA) $< -o $@ -lpthread -ldl

# Libraries the Python workloads load with ctypes (tests/workloads/lib/NAME.c).
$(OUT)/tests/lib/lib%.so: tests/workloads/lib/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -g -O1 -Wall -Wextra -Werror -fPIC -shared $< -o $@ -lpthread
test-build-first: $(patsubst tests/workloads/lib/%.c,$(OUT)/tests/lib/lib%.so,\
	$(wildcard tests/workloads/lib/*.c))

# The native-stack workloads have frame pointers, as a program built for native stacks has.
$(OUT)/tests/cpu_split $(OUT)/tests/syscall_callers $(OUT)/tests/stacks_native: WL_EXTRA := \
	-fno-omit-frame-pointer \
	-fno-optimize-sibling-calls

# Unwind tables' workload is built as the libraries without frame pointers are.
$(OUT)/tests/unwind_qsort: WL_EXTRA := -O2 -fomit-frame-pointer
# Its _PyRuntime exported, as an interpreter's is (bpfsight reads the dynamic symbols).
$(OUT)/tests/python3.11_unknown: WL_EXTRA := -rdynamic
$(OUT)/tests/lib/libunwind_dl.so: tests/workloads/lib/unwind_dl.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -Wall -Wextra -Werror -fPIC -shared $< -o $@

# The demo marks its phases with NVTX when the toolkit's header-only nvtx3 is there.
ifneq ($(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h),)
$(OUT)/tests/demo_pipeline: WL_EXTRA := -I$(CUDA_HOME)/include -DHAVE_NVTX
endif

# --- CUDA workloads (tests/workloads/cuda/, used by tests/e2e/test_cuda.py) ---------------
# Built with the real toolkit; they run without a GPU (every call enters the real library
# and fails, so probes fire). cuda_api.cu twice: -cudart shared (libcudart.so.13 mapped)
# and -cudart static (cudart inside the executable). cuda_driver links the stub libcuda
# (soname libcuda.so.1) and finds it at run time through the rpath $ORIGIN/stubs.
# Skipped, with a note, where the toolkit is missing.
NVCC	  ?= $(CUDA_HOME)/bin/nvcc
CUDA_WL	  := $(OUT)/tests/cuda
CUDA_WORKLOADS := $(addprefix $(CUDA_WL)/,cuda_api_shared cuda_api_static cuda_driver \
		    cuda_dlopen cublas_dlopen libcuda_wrap.so stubs/libcuda.so.1 inject_target_shared \
		    inject_target_static libstep_proxy.so libfake_c10_cuda.so gpu_alloc cublas_gemm \
		    cudnn_calls)
WL_CFLAGS := -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -MMD -MP

ifneq ($(wildcard $(NVCC)),)
test-build-first: $(CUDA_WORKLOADS)
else
test-build-first: cuda-workloads-skipped
.PHONY: cuda-workloads-skipped
cuda-workloads-skipped:
	@echo "  SKIP     CUDA workloads: no $(NVCC) (set CUDA_HOME); the cuda e2e tests skip"
endif

$(CUDA_WL)/cuda_api_%: tests/workloads/cuda/cuda_api.cu | $(CUDA_WL)
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -g -O1 -cudart $* -Xcompiler -Wall,-Wextra,-Werror $< -o $@

# record --inject targets (tests/e2e/test_inject.py): cudart shared and linked in.
$(CUDA_WL)/inject_target_%: tests/workloads/inject/inject_target.c | $(CUDA_WL)
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -g -O1 -cudart $* -x c -Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-parameter \
		$< -o $@ -lpthread

$(CUDA_WL)/cuda_driver: tests/workloads/cuda/cuda_driver.c | $(CUDA_WL)/stubs/libcuda.so.1
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -I$(CUDA_HOME)/include $< -o $@ \
		-L$(CUDA_HOME)/lib64/stubs -lcuda -Wl,-rpath,'$$ORIGIN/stubs'

$(CUDA_WL)/cuda_dlopen: tests/workloads/cuda/cuda_dlopen.c | $(CUDA_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $< -o $@ -ldl

# cuBLAS dlopen'ed, its stub-libcuda rpath as cuda_driver's (tests/e2e/test_cuda_libs.py).
$(CUDA_WL)/cublas_dlopen: tests/workloads/cuda/cublas_dlopen.c | $(CUDA_WL)/stubs/libcuda.so.1
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $< -o $@ -ldl -Wl,-rpath,'$$ORIGIN/stubs'

# Every GEMM form through the real libcublas and libcublasLt (tests/e2e/test_cublas.py).
$(CUDA_WL)/cublas_gemm: tests/workloads/cuda/cublas_gemm.c | $(CUDA_WL)/stubs/libcuda.so.1
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -I$(CUDA_HOME)/include $< -o $@ -L$(CUDA_HOME)/lib64 -lcublas \
		-lcublasLt -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,-rpath,'$$ORIGIN/stubs'

# cuDNN's backend graph and a legacy call through the real libcudnn (tests/e2e/test_cudnn.py).
$(CUDA_WL)/cudnn_calls: tests/workloads/cuda/cudnn_calls.c | $(CUDA_WL)/stubs/libcuda.so.1
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -I$(CUDA_HOME)/include $< -o $@ -L$(CUDA_HOME)/lib64 -lcudnn \
		-Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,-rpath,'$$ORIGIN/stubs'

# The launch-bound step proxy's native half (tests/e2e/test_detach.py, bench/bench_cost.py):
# runtime-shaped launches that enter the stub libcuda's real entry points.
$(CUDA_WL)/libstep_proxy.so: tests/workloads/cuda/step_proxy.c | $(CUDA_WL)/stubs/libcuda.so.1
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -O2 -fPIC -shared -fno-omit-frame-pointer -I$(CUDA_HOME)/include $< \
		-o $@ -ldl -L$(CUDA_HOME)/lib64/stubs -lcuda -Wl,-rpath,'$$ORIGIN/stubs'

# An LD_PRELOAD interposer of cudaMalloc/cudaMemcpy: nested calls (depth) with real cudart.
$(CUDA_WL)/libcuda_wrap.so: tests/workloads/cuda/cuda_wrap.c | $(CUDA_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -fPIC -shared -fno-omit-frame-pointer $< -o $@ -ldl

# The CUDA caching allocator as the mem family sees it, without a GPU (tests/e2e/test_mem_gpu.py):
# c10's report functions and torch's USDT probes in a library, segments from real cudart.
$(CUDA_WL)/libfake_c10_cuda.so: tests/workloads/mem/fake_c10_cuda.c | $(CUDA_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -fPIC -shared -I$(CUDA_HOME)/include $< -o $@ \
		-L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64

$(CUDA_WL)/gpu_alloc: tests/workloads/mem/gpu_alloc.c $(CUDA_WL)/libfake_c10_cuda.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $< -o $@ -L$(CUDA_WL) -lfake_c10_cuda -Wl,-rpath,'$$ORIGIN'

$(CUDA_WL)/stubs/libcuda.so.1:
	$(Q)mkdir -p $(@D)
	$(Q)ln -sf $(CUDA_HOME)/lib64/stubs/libcuda.so $@

$(CUDA_WL):
	$(Q)mkdir -p $@

-include $(wildcard $(CUDA_WL)/*.d)
# --- end of CUDA workloads -----------------------------------------------------------------

# The unit tests and the fuzzers take every user object but main.o from a thin archive, so
# that each links the objects it uses (a parser's test: ten, not all ~390 and their debug
# information): the 55 unit tests' links took 47 s of make check's CPU, 35 s so (the fuzzers'
# 13 s, 5 s; bench/RESULTS.md, "make check time"). An object with a constructor is linked
# whole all the same, as nothing names what it gives (uprobe_multi.c's probes for the
# feature table, which reads "absent" without them): $(OUT)/lib/ctors lists those, read
# from the objects' sections.
LIB_AR	  := $(OUT)/lib/libuser.a
LIB_CTORS := $(OUT)/lib/ctors
$(LIB_AR): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcsT $@ $^
$(LIB_CTORS): $(LIB_OBJS)
	$(Q)mkdir -p $(@D)
	$(Q)readelf -SW $^ | awk '/^File: /{f=$$2} /\.init_array/{print f}' | sort -u > $@
# The objects to link: the constructors' and the archive (the shell expands it when it links).
LIB_LINK = $$(cat $(LIB_CTORS)) $(LIB_AR)

# Unit tests link dynamically: they never leave this box.
$(OUT)/tests/test_%: tests/unit/test_%.c $(LIB_AR) $(LIB_CTORS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit $< $(LIB_LINK) -o $@ $(LDLIBS)

# A registry with one family more: families.c built again with FAMILIES_EXTRA=family_NAME
# (the toy-family test, the toy shim family), linked with every user object but families.o.
TOY_OBJS := $(filter-out $(OUT)/obj/families/families.o,$(LIB_OBJS))
$(OUT)/tests/families_%.o: user/families/families.c | $(OUT)/tests $(SKELS) $(VERSION_H)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -DFAMILIES_EXTRA=family_$* -c $< -o $@

# The toy-family test and its family (tests/unit/toy/, a family's folder).
TOY_SRCS := $(wildcard tests/unit/toy/*.c)
$(OUT)/tests/test_family_toy: tests/unit/test_family_toy.c $(TOY_SRCS) $(TOY_OBJS) \
		$(OUT)/tests/families_toy.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -iquote tests/unit/toy $< $(TOY_SRCS) $(TOY_OBJS) \
		$(OUT)/tests/families_toy.o -o $@ $(LDLIBS)

# The format's objects as the other fuzzers have them (compiling its sources here again, at
# -O1, took 5 s of make check's CPU; at -O0 its 5 s run makes ~20% fewer executions).
$(FUZZER): tests/fuzz/fuzz_reader.c $(patsubst $(OUT)/obj/%,$(OUT)/fuzz-obj/%,$(FORMAT_OBJS)) \
		| $(OUT)/tests
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) -D_GNU_SOURCE -std=gnu11 \
		$(USER_INC) -Ibpf $^ -o $@ -lzstd -lz

# -O0: ASan at -O1 compiles these ~400 objects 7x slower, half of make check's build on 2
# cores; the short runs make check makes are mostly the seeds, which take about as long.
# -gline-tables-only (OSS-Fuzz's choice): a crash's stack still names every function, file
# and line; full -g took a third more of their compile (bench/RESULTS.md, "make check time").
$(OUT)/fuzz-obj/%.o: user/%.c | $(SKELS) $(VERSION_H)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -gline-tables-only -O0 -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(WARN) -std=gnu11 -D_GNU_SOURCE \
		-MMD -MP -I$(OUT) $(USER_INC) -Ibpf -c $< -o $@

# Dynamically linked like the unit tests, from an archive as they are (the constructors'
# objects whole: those of the plain build, as every instrumented object has one, ASan's);
# shim_embed.o carries no code to instrument.
FUZZ_AR := $(OUT)/fuzz-obj/libuser.a
$(FUZZ_AR): $(FUZZ_OBJS) $(EMBED_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcsT $@ $^
$(OUT)/tests/fuzz_decode $(OUT)/tests/fuzz_shim_unpack $(OUT)/tests/fuzz_pylines \
		$(OUT)/tests/fuzz_elf $(OUT)/tests/fuzz_eh_frame: \
		$(OUT)/tests/%: tests/fuzz/%.c $(FUZZ_AR) $(LIB_CTORS) | $(OUT)/tests
	$(call msg,FUZZ-LD,$@)
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) $(WARN) -std=gnu11 -D_GNU_SOURCE -I$(OUT) \
		$(USER_INC) -Ibpf $< $$(sed -E '\#^$(OUT)/obj/(cli|session|ship|ucall)/#!s#^$(OUT)/obj/#$(OUT)/fuzz-obj/#' \
		$(LIB_CTORS)) $(FUZZ_AR) -o $@ $(LDLIBS)

# ELF fixtures for the elf_syms/probe_site tests (built with -g: static functions in .symtab).
ELF_FIXTURES := $(patsubst tests/fixtures/elf/%.c,$(OUT)/tests/fixtures/%, \
		  $(wildcard tests/fixtures/elf/*.c))
$(OUT)/tests/fixtures/%: tests/fixtures/elf/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -O2 -fcf-protection -Wall -Wextra -Werror $< -o $@

# nccl family: workloads linked with the CUDA toolkit's real libnccl (rpath: no
# LD_LIBRARY_PATH needed under bpfsight), and nccl.h for the unit test's ABI checks.
NCCL_WORKLOADS := $(patsubst tests/workloads/nccl/%.c,$(OUT)/tests/nccl/%, \
		    $(wildcard tests/workloads/nccl/*.c))
$(OUT)/tests/nccl/%: tests/workloads/nccl/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -MMD -MP \
		-I$(CUDA_HOME)/include $< -o $@ -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
		-lnccl
# The test includes it by path: user/nccl.h would shadow <nccl.h>.
$(OUT)/tests/test_nccl_report: ALL_CFLAGS += -I$(CUDA_HOME)/include \
	-DCUDA_NCCL_H='"$(CUDA_HOME)/include/nccl.h"'
test-build-first: $(NCCL_WORKLOADS)
-include $(wildcard $(OUT)/tests/nccl/*.d)

# The multi-rank tests' NCCL (tests/workloads/nccl_cpu/): a library with NCCL's API, ABI and
# symbol names and CPU semantics, named as libnccl is (soname libnccl.so.2), and a rank
# program linked with it (rpath $ORIGIN). No CUDA toolkit needed.
NCCL_CPU := $(OUT)/tests/nccl_cpu
$(NCCL_CPU)/libnccl.so.2: tests/workloads/nccl_cpu/libnccl_cpu.c tests/workloads/nccl_cpu/nccl_cpu.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WL_CFLAGS) -fPIC -shared -Wl,-soname,libnccl.so.2 $< -o $@
$(NCCL_CPU)/nccl_ranks: tests/workloads/nccl_cpu/nccl_ranks.c $(NCCL_CPU)/libnccl.so.2
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $< -o $@ $(NCCL_CPU)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN'
test-build-first: $(NCCL_CPU)/nccl_ranks

# Synthetic traces for the readers' tests (records no recorder makes here: GPU, NVTX).
$(OUT)/tests/bst_write: tests/tools/bst_write.c $(FORMAT_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(FORMAT_OBJS) -o $@ -lzstd -lz

# The unwind table bpfsight builds for an ELF file, for its readelf comparison and its
# benchmark (tests/e2e/test_unwind_table.py, bench/bench_unwind.py).
$(OUT)/tests/unwind_dump: tests/tools/unwind_dump.c $(LIB_OBJS) | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(LIB_OBJS) -o $@ $(LDLIBS)
test-build-first: $(OUT)/tests/unwind_dump

# tests/e2e/test_sched.py runs bench/pingpong.
# A static program mapping a file executable: tests/e2e/test_mem.py's launch beside it.
$(OUT)/tests/mem/map_exec_static: tests/workloads/mem/map_exec_static.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -Wall -Werror -static $< -o $@

test-build-first: $(OUT)/tests/mem/map_exec_static

# record --inject must refuse a static program without dlopen (tests/e2e/test_inject.py).
$(OUT)/tests/inject/static_loop: tests/workloads/inject/static_loop.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -Wall -Werror -static $< -o $@

test-build-first: $(OUT)/tests/inject/static_loop

# ... and a program on musl libc (the same loop, linked by musl-gcc against ld-musl): refused
# too. Built where musl-tools is installed (make deps); the test says so where it is not.
MUSL_CC := $(shell command -v musl-gcc 2>/dev/null)
$(OUT)/tests/inject/musl_loop: tests/workloads/inject/static_loop.c
	$(call msg,MUSL-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MUSL_CC) -O1 -Wall -Werror $< -o $@

test-build-first: $(if $(MUSL_CC),$(OUT)/tests/inject/musl_loop)
test-build-first: $(OUT)/bpfsight $(WORKLOADS) $(ELF_FIXTURES) $(OUT)/tests/bst_write \
	$(OUT)/bench/pingpong

# The man pages, made from docs/USAGE.md and the binary's own --help lines (tools/mkman.py).
MAN_DIR	 := $(OUT)/man
$(MAN_DIR)/.stamp: docs/USAGE.md tools/mkman.py $(OUT)/bpfsight
	$(call msg,MAN,$(MAN_DIR))
	$(Q)rm -rf $(MAN_DIR) && mkdir -p $(MAN_DIR)
	$(Q)$(PYTHON) tools/mkman.py $(OUT)/bpfsight docs/USAGE.md $(MAN_DIR)
	$(Q)touch $@
man: $(MAN_DIR)/.stamp

# make install [PREFIX=/usr/local] [DESTDIR=]: the layout the Debian package has with
# PREFIX=/usr. bpfsight shim finds the shim as PREFIX/lib/bpfsight beside PREFIX/bin.
PREFIX	 ?= /usr/local
BINDIR	 ?= $(PREFIX)/bin
LIBDIR	 ?= $(PREFIX)/lib/bpfsight
MANDIR	 ?= $(PREFIX)/share/man
DOCDIR	 ?= $(PREFIX)/share/doc/bpfsight
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
INSTALL	 ?= install
DOCS	 := README.md $(wildcard docs/*.md)

install: $(OUT)/bpfsight man
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	$(Q)$(INSTALL) -m 0755 $(OUT)/bpfsight $(DESTDIR)$(BINDIR)/bpfsight
	$(Q)if [ -f $(SHIM_LIB) ]; then $(INSTALL) -d $(DESTDIR)$(LIBDIR) && \
		$(INSTALL) -m 0755 $(SHIM_LIB) $(DESTDIR)$(LIBDIR)/libbpfsight-shim.so; fi
	$(Q)$(INSTALL) -m 0644 $(MAN_DIR)/*.1 $(DESTDIR)$(MANDIR)/man1/
	$(Q)$(INSTALL) -m 0644 completion/bpfsight.bash $(DESTDIR)$(BASHCOMPDIR)/bpfsight
	$(Q)$(INSTALL) -m 0644 completion/_bpfsight $(DESTDIR)$(ZSHCOMPDIR)/_bpfsight
	$(Q)$(INSTALL) -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/

# Removes exactly what install put there (the man pages by the names mkman makes).
uninstall:
	$(call msg,UNINST,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(BINDIR)/bpfsight $(DESTDIR)$(LIBDIR)/libbpfsight-shim.so \
		$(DESTDIR)$(MANDIR)/man1/bpfsight.1 $(DESTDIR)$(MANDIR)/man1/bpfsight-*.1 \
		$(DESTDIR)$(BASHCOMPDIR)/bpfsight $(DESTDIR)$(ZSHCOMPDIR)/_bpfsight \
		$(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS)))
	$(Q)rmdir $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# The Debian package, built by dpkg-buildpackage from a copy of the tree (tracked and new
# files, not build outputs) in $(OUT)/deb, which is also where the .deb lands.
deb:
	$(Q)VERSION=$(VERSION) tools/make_deb.sh $(OUT)/deb

# Slow (a Debian root is bootstrapped once, then cached): not part of make check.
check-deb: deb
	$(Q)tests/deb/check_deb.sh $(OUT)/deb

# Slow (QEMU without KVM; see tests/kernels/check_kernels.py): not part of make check.
check-kernels: test-build
	$(Q)$(PYTHON) tests/kernels/check_kernels.py --build $(OUT)

# tests/torch/check_torch_versions.py: each release's layout from its real headers, and the
# torch e2e tests run against its python in a root built from its Debian packages.
check-torch-versions: test-build
	$(Q)$(PYTHON) tests/torch/check_torch_versions.py --build $(OUT) $(if $(SUITES),--suites $(SUITES))

# make check builds what the first tests need, then runs them while the unit tests and the
# fuzzers are built beside them at idle priority (tests/run_tests.py --build-later: they wait
# for their build), out of the CPU those tests leave idle, as they wait on their programs
# (bench/RESULTS.md, "make check time"). The version is this make's: a tree the tests leave
# dirty would rebuild the objects that print it.
check: test-build-first
	$(Q)$(PYTHON) tests/run_tests.py --build $(OUT) --build-later 'VERSION=$(VERSION)'

# Everything the tests run: what the first ones need, the unit tests and the fuzzers.
test-build: test-build-first test-units test-fuzzers
test-units: $(UNITS)
test-fuzzers: $(FUZZERS)

# The unwind tables of every library and program here against readelf -wF (~8 min).
check-unwind-tables: $(OUT)/tests/unwind_dump
	$(Q)$(PYTHON) tests/tools/unwind_sweep.py --build $(OUT)

# The pyfunc family on every interpreter here (pyenv's 3.8-3.13, Debian's 3.11, 3.14 and 3.15), both
# mechanisms, calls, -p --inject, launch mode from the first call and calls running at the attach
# (tests/e2e/test_pyfunc.py, test_pyfunc_first.py): about 3 min; make check runs two to four.
check-pyfunc-versions: test-build
	$(Q)BPFSIGHT_PYFUNC_ALL_VERSIONS=1 $(PYTHON) tests/run_tests.py --build $(OUT) --no-unit \
		--no-fuzz -k test_pyfunc

# Python stacks and the GIL on every interpreter here (pyenv's 3.8-3.13, Debian's 3.11, /opt's
# 3.14 and 3.15 and their debug builds; tests/e2e/test_py_stacks.py, test_gil.py's matrix):
# make check reads five of them for stacks, the newest of /opt's for the GIL.
check-python-versions: test-build
	$(Q)BPFSIGHT_PY_ALL_VERSIONS=1 $(PYTHON) tests/run_tests.py --build $(OUT) --no-unit \
		--no-fuzz -k test_py_stacks
	$(Q)BPFSIGHT_PY_ALL_VERSIONS=1 $(PYTHON) tests/run_tests.py --build $(OUT) --no-unit \
		--no-fuzz -k test_gil_every_interpreter_here

# Long runs that make check keeps short (tests/e2e/test_shim_churn.py: 10,000 processes).
soak: test-build
	$(Q)BPFSIGHT_SOAK=1 $(PYTHON) tests/run_tests.py --build $(OUT) --no-unit --no-fuzz -k soak

# One corpus per fuzzer, grown from its committed seeds (tests/fuzz/seeds[-NAME]).
# The compiler's call graph of user/ from the driver's record callback (tools/record_path.py).
record-path: $(SKELS)
	$(Q)$(PYTHON) tools/record_path.py --build $(OUT) $(RECORD_PATH_ARGS)

fuzz: $(FUZZERS)
	$(Q)for f in reader decode shim_unpack pylines elf eh_frame; do \
		s=tests/fuzz/seeds; [ $$f = reader ] || s=$$s-$$f; \
		mkdir -p fuzz-corpus/$$f && \
		$(OUT)/tests/fuzz_$$f -max_total_time=$${FUZZ_SECONDS:-600} -timeout=10 \
			-rss_limit_mb=2048 fuzz-corpus/$$f $$s || exit 1; \
	done

demo: $(OUT)/bpfsight $(WORKLOADS)
	$(Q)tests/demo.sh $(OUT)

# docs/report.png from a real trace (TRACE=..., default ../shared/traces/gpt2-gil-bound.bst).
report-png: $(OUT)/bpfsight
	$(Q)BPFSIGHT=$(OUT)/bpfsight tests/tools/report_png.sh $(TRACE)

# Benchmark programs (bench/run_bench.py): loads and micro targets, built like the workloads;
# the CUDA and NCCL loops over the real libraries when the toolkit is there; and the floor, a loader of
# empty BPF programs with its own skeleton.
BENCH_PROGS := $(addprefix $(OUT)/bench/,loadgen pingpong probe_target timed pair_loop)
BENCH_CUDA := $(if $(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),$(OUT)/bench/cuda_loop \
	      $(OUT)/bench/scope_job $(CUDA_WL)/libstep_proxy.so)
BENCH_NCCL := $(if $(wildcard $(CUDA_HOME)/include/nccl.h),$(OUT)/bench/nccl_loop)
BENCH_BLAS := $(if $(wildcard $(CUDA_HOME)/include/cublas_v2.h),$(OUT)/bench/blas_loop)
BENCH_BINS := $(BENCH_PROGS) $(BENCH_CUDA) $(BENCH_NCCL) $(BENCH_BLAS) $(OUT)/bench/floor

# The launch join's cost per record and the Python thread names' reads, linked like the unit
# tests (bench/join_bench.c, bench/names_bench.c); monitor's read of a process's labels
# (bench/ident_bench.c).
BENCH_BINS += $(OUT)/bench/join_bench $(OUT)/bench/names_bench $(OUT)/bench/ident_bench
$(OUT)/bench/join_bench $(OUT)/bench/names_bench $(OUT)/bench/ident_bench: \
		$(OUT)/bench/%: bench/%.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(LIB_OBJS) -o $@ $(LDLIBS)

# The record encodings compared on real traces (bench/codec_bench.c).
BENCH_BINS += $(OUT)/bench/codec_bench
$(OUT)/bench/codec_bench: bench/codec_bench.c $(FORMAT_OBJS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(FORMAT_OBJS) -o $@ -lzstd -lz

# Synthetic rank files of one job, for merge at scale (bench/bench_ranks.py).
BENCH_BINS += $(OUT)/bench/rank_files $(OUT)/tests/unwind_dump
$(OUT)/bench/rank_files: bench/rank_files.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(LIB_OBJS) -o $@ $(LDLIBS)

# The native walk's cost per stack, frame pointers against unwind tables (one source, two
# builds: bench/unwind_deep.c, bench/bench_unwind_walk.py; make bench-unwind-walk, ~1 min).
UNWIND_DEEP := $(OUT)/bench/unwind_deep_fp $(OUT)/bench/unwind_deep_nofp
BENCH_BINS += $(UNWIND_DEEP)
$(OUT)/bench/unwind_deep_fp: UNWIND_CFLAGS := -O1 -fno-omit-frame-pointer
$(OUT)/bench/unwind_deep_nofp: UNWIND_CFLAGS := -O2 -fomit-frame-pointer
$(UNWIND_DEEP): bench/unwind_deep.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -Wall -Wextra -Werror $(UNWIND_CFLAGS) $< -o $@

bench-unwind-walk: $(OUT)/bpfsight $(UNWIND_DEEP)
	$(Q)$(PYTHON) bench/bench_unwind_walk.py --build $(OUT) $(BENCH_ARGS)

bench: $(OUT)/bpfsight $(WORKLOADS) $(BENCH_BINS) $(NVML_FAKE)
	$(Q)$(PYTHON) bench/run_bench.py --build $(OUT) --no-make $(BENCH_ARGS)

# The unwind tables' building time and memory alone (bench/bench_unwind.py, ~15 s).
bench-unwind: $(OUT)/bpfsight $(OUT)/tests/unwind_dump
	$(Q)$(PYTHON) bench/run_bench.py --build $(OUT) --no-make --only unwind $(BENCH_ARGS)

bench-build: $(OUT)/bpfsight $(WORKLOADS) $(BENCH_BINS) $(NVML_FAKE)

$(BENCH_PROGS): $(OUT)/bench/%: bench/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -MMD -MP $< -o $@ -lpthread

# The loops over the real libraries, each linked with its own.
LOOP_LIB_cuda_loop := -lcudart
LOOP_LIB_nccl_loop := -lnccl
LOOP_LIB_blas_loop := -lcublas -lblas
LOOP_LIB_scope_job := -lcudart -lpthread
$(OUT)/bench/cuda_loop $(OUT)/bench/nccl_loop $(OUT)/bench/blas_loop $(OUT)/bench/scope_job: \
		$(OUT)/bench/%: bench/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -MMD -MP \
		-I$(CUDA_HOME)/include $< -o $@ -L$(CUDA_HOME)/lib64 $(LOOP_LIB_$*) \
		-Wl,-rpath,$(CUDA_HOME)/lib64

# usdt.bpf.h includes <linux/errno.h>, whose <asm/errno.h> is in the multiarch directory.
$(OUT)/bench/floor.bpf.o: bench/floor.bpf.c vmlinux/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -idirafter /usr/include/$(shell $(CC) -dumpmachine) -MT $@ \
		-MF $(@:.o=.d) -c $< -o $(@:.bpf.o=.tmp.bpf.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.bpf.o=.tmp.bpf.o)

$(OUT)/bench/floor.skel.h: $(OUT)/bench/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# With bpfsight's own uprobe_multi attach (user/uprobe_multi.c, which probes the kernel and
# hands links to the reaper), so the floor probes alike.
$(OUT)/bench/floor: bench/floor.c user/uprobe/uprobe_multi.c user/record/kernel_features.c \
		   user/record/link_reaper.c user/uprobe/uprobe_broker.c user/lib/msg.c user/lib/fd_write.c \
		   user/record/privileges.c user/record/kallsyms.c user/lib/seccomp_list.c user/lib/utf8.c \
		   user/lib/env.c \
		   $(OUT)/bench/floor.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP -I$(OUT)/bench $(USER_INC) \
		$(filter %.c,$^) -o $@ -lbpf -lelf -lz

-include $(wildcard $(OUT)/bench/*.d)

# The cupti-shim (libbpfsight-shim.so) and its test workloads.
include cupti-shim/shim.mk

# The shim inside the bpfsight binary (user/shim_channel/shim_embed.S, shim_blob.c), when built.
SHIM_EMBED := $(if $(wildcard $(CUDA_HOME)/include/cupti.h),$(SHIM_LIB))
$(SHIM_EMBED_OBJ): user/shim_channel/shim_embed.S $(SHIM_EMBED)
	$(call msg,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c $(if $(SHIM_EMBED),-DSHIM_SO='"$(SHIM_EMBED)"') $< -o $@

# The gpumetrics family's sampler (user/families/gpumetrics/sampler/, sampler.h): linked
# dynamically, as the programs that load the driver's libnvidia-ml.so.1 are (glibc's static
# dlopen cannot load a library that starts threads), and carried inside bpfsight.
GPUM_SAMPLER := $(OUT)/gpum/bpfsight-gpum-sampler
GPUM_SAMPLER_SRCS := $(wildcard user/families/gpumetrics/sampler/*.c)
GPUM_SAMPLER_CFLAGS := -g -O2 -fPIE $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP -Ibpf \
		       -iquote user/families/gpumetrics/sampler
$(OUT)/gpum/%.o: user/families/gpumetrics/sampler/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(GPUM_SAMPLER_CFLAGS) -c $< -o $@
$(GPUM_SAMPLER): $(patsubst user/families/gpumetrics/sampler/%.c,$(OUT)/gpum/%.o,$(GPUM_SAMPLER_SRCS))
	$(call msg,LINK,$@)
	$(Q)$(CC) -pie -Wl,-z,now -Wl,-z,relro $^ -o $@ -ldl
$(GPUM_EMBED_OBJ): user/families/gpumetrics/gpum_embed.S $(GPUM_SAMPLER)
	$(call msg,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -DGPUM_SAMPLER='"$(GPUM_SAMPLER)"' $< -o $@

# The gpumetrics tests' NVML (tests/workloads/nvml_fake/): libnvidia-ml.so.1 with NVML's ABI,
# serving scripted values, found through LD_LIBRARY_PATH as the driver's would be.
NVML_FAKE := $(OUT)/tests/nvml/libnvidia-ml.so.1
$(NVML_FAKE): tests/workloads/nvml_fake/libnvidia-ml.c user/families/gpumetrics/sampler/nvml_api.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -fPIC -shared \
		-fvisibility=hidden -iquote user/families/gpumetrics/sampler \
		-Wl,-soname,libnvidia-ml.so.1 $< -o $@
test-build-first: $(NVML_FAKE)

$(OUT)/bpf $(OUT)/tests:
	$(Q)mkdir -p $@

clean:
	$(call msg,CLEAN,$(OUT))
	$(Q)rm -rf $(OUT)

-include $(wildcard $(OUT)/obj/*/*.d $(OUT)/obj/*/*/*.d $(OUT)/bpf/*.d $(OUT)/tests/*.d \
		    $(OUT)/gpum/*.d \
		    $(OUT)/fuzz-obj/*/*.d $(OUT)/fuzz-obj/*/*/*.d \
		    $(OUT)/check_specs.d)
