# The cupti-shim (libbpfsight-shim.so) and its test workloads; included by the Makefile.
#
# The shim is loaded into applications by CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH:
# built -fPIC -O2 -fvisibility=hidden, linked against libc only (libcupti is dlopen()ed,
# never linked: an NVTX-only process must not load CUPTI), exporting only what
# exports.map lists, and -z nodelete (its poller thread runs its code until exit).
# -mtls-dialect=gnu2: TLS descriptors make the NVTX handlers' per-thread depth cheap in a
# dlopen()ed library (4.8 instead of 6.5 ns per idle push+pop) without taking static TLS.
# CUPTI and NVTX headers come from $(CUDA_HOME)/include (types only).

SHIM_LIB   := $(OUT)/libbpfsight-shim.so
SHIM_SRCS  := $(wildcard cupti-shim/*.c)
SHIM_OBJS  := $(patsubst cupti-shim/%.c,$(OUT)/shim/%.o,$(SHIM_SRCS))
SHIM_CFLAGS := -g -O2 -fPIC -fvisibility=hidden -mtls-dialect=gnu2 $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP \
	       -Ibpf -isystem $(CUDA_HOME)/include
SHIM_WL	   := $(OUT)/tests/shim
# The test variant: the same library plus bpfsight_shim_test_feed (CUPTI records fed by
# cupti_feed through the real decode path) and the fork-lock hooks (fork_locks); shim_cupti.c
# and shim_fork.c are the objects that differ.
SHIM_TEST_LIB := $(SHIM_WL)/libbpfsight-shim-test.so
SHIM_TEST_DIFF := shim_cupti.o shim_fork.o
SHIM_TEST_OBJS := $(filter-out $(addprefix $(OUT)/shim/,$(SHIM_TEST_DIFF)),$(SHIM_OBJS)) \
		  $(addprefix $(OUT)/shim-test/,$(SHIM_TEST_DIFF))
SHIM_WORKLOADS := $(addprefix $(SHIM_WL)/,nvtx_ranges libnvtx_second.so libnvtx_chain.so \
		    cupti_feed cupti_flood order_feed graph_feed nvtx_bench fork_locks) $(SHIM_TEST_LIB)
# The toy shim family's variant (tests/toyshim/): the shim plus its module, added to the
# module table by one line (SHIM_MODULES_EXTRA), and a bpfsight with the family in its
# registry by one line (FAMILIES_EXTRA: the Makefile's families_%.o).
TOYSHIM := tests/toyshim
SHIM_TOYSHIM_LIB := $(SHIM_WL)/libbpfsight-shim-toyshim.so
SHIM_TOYSHIM_OBJS := $(filter-out $(OUT)/shim/shim_modules.o,$(SHIM_OBJS)) \
		     $(OUT)/shim-toyshim/shim_modules.o $(OUT)/shim-toyshim/shim_toyshim.o
SHIM_WORKLOADS += $(SHIM_TOYSHIM_LIB) $(SHIM_WL)/toyshim_workload $(OUT)/tests/bpfsight-toyshim

ifneq ($(wildcard $(CUDA_HOME)/include/cupti.h),)
all: $(SHIM_LIB)
test-build-first: $(SHIM_LIB) $(SHIM_WORKLOADS)
# bench/bench_shim.py: NVTX pairs and CUPTI records through the shim and its channel.
bench bench-build: $(SHIM_LIB) $(SHIM_WL)/nvtx_bench $(SHIM_WL)/cupti_feed $(SHIM_TEST_LIB)
else
all test-build-first: shim-skipped
.PHONY: shim-skipped
shim-skipped:
	@echo "  SKIP     cupti-shim: no $(CUDA_HOME)/include/cupti.h (set CUDA_HOME); its tests skip"
endif

# The torch ops' callback keeps its frame pointer: a stack read in it (--stacks=torch) walks on
# into torch's code, whose first frame says where the unwind stopped (docs/STACKS.md).
$(OUT)/shim/shim_torch.o: SHIM_CFLAGS += -fno-omit-frame-pointer

$(OUT)/shim/%.o: cupti-shim/%.c | $(OUT)/shim
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(SHIM_LIB): $(SHIM_OBJS) cupti-shim/exports.map
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -Wl,--version-script=cupti-shim/exports.map -Wl,-z,nodelete \
		-Wl,-z,now -Wl,--no-undefined $(SHIM_OBJS) -o $@ -lpthread -ldl

$(OUT)/shim-test/%.o: cupti-shim/%.c | $(OUT)/shim-test
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_CFLAGS) -DSHIM_TEST_HOOK -c $< -o $@

$(SHIM_TEST_LIB): $(SHIM_TEST_OBJS) cupti-shim/exports-test.map | $(SHIM_WL)
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -Wl,--version-script=cupti-shim/exports-test.map -Wl,-z,nodelete \
		-Wl,-z,now -Wl,--no-undefined $(SHIM_TEST_OBJS) -o $@ -lpthread -ldl

$(OUT)/shim-toyshim/shim_modules.o: cupti-shim/shim_modules.c | $(OUT)/shim-toyshim
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_CFLAGS) -DSHIM_MODULES_EXTRA=shim_toyshim_module -c $< -o $@

$(OUT)/shim-toyshim/shim_toyshim.o: $(TOYSHIM)/shim_toyshim.c | $(OUT)/shim-toyshim
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_CFLAGS) -Icupti-shim -I$(TOYSHIM) -c $< -o $@

$(SHIM_TOYSHIM_LIB): $(SHIM_TOYSHIM_OBJS) $(TOYSHIM)/exports-toyshim.map | $(SHIM_WL)
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -Wl,--version-script=$(TOYSHIM)/exports-toyshim.map -Wl,-z,nodelete \
		-Wl,-z,now -Wl,--no-undefined $(SHIM_TOYSHIM_OBJS) -o $@ -lpthread -ldl

$(SHIM_WL)/toyshim_workload: $(TOYSHIM)/toyshim_workload.c | $(SHIM_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_WL_CFLAGS) $< -o $@ -ldl

# bpfsight with the toy shim family as its registry's last line.
$(OUT)/tests/bpfsight-toyshim: $(TOYSHIM)/toyshim.c $(OUT)/obj/cli/main.o \
		$(OUT)/obj/cli/cmd_complete.o $(TOY_OBJS) $(OUT)/tests/families_toyshim.o | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -iquote $(TOYSHIM) $^ -o $@ $(LDLIBS)

$(OUT)/shim $(OUT)/shim-test $(OUT)/shim-toyshim $(SHIM_WL):
	$(Q)mkdir -p $@

# Workloads (tests/workloads/shim/): NVTX programs use the header-only nvtx3 (the shim
# arrives by NVTX_INJECTION64_PATH); cupti_feed links the real libcudart (rpath).
SHIM_WL_CFLAGS := -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -MMD -MP \
		  -Ibpf -isystem $(CUDA_HOME)/include

$(SHIM_WL)/libnvtx_second.so: tests/workloads/shim/nvtx_second.c | $(SHIM_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_WL_CFLAGS) -fPIC -shared $< -o $@ -ldl

$(SHIM_WL)/libnvtx_chain.so: tests/workloads/shim/nvtx_chain.c | $(SHIM_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_WL_CFLAGS) -fPIC -shared $< -o $@

$(SHIM_WL)/nvtx_ranges: tests/workloads/shim/nvtx_ranges.c $(SHIM_WL)/libnvtx_second.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_WL_CFLAGS) $< -o $@ -L$(SHIM_WL) -lnvtx_second -Wl,-rpath,'$$ORIGIN' \
		-lpthread -ldl

$(SHIM_WL)/nvtx_bench: tests/workloads/shim/nvtx_bench.c | $(SHIM_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_WL_CFLAGS) -O2 $< -o $@ -ldl -lpthread

$(SHIM_WL)/cupti_feed: tests/workloads/shim/cupti_feed.c | $(SHIM_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_WL_CFLAGS) $< -o $@ -L$(CUDA_HOME)/lib64 -lcudart \
		-Wl,-rpath,$(CUDA_HOME)/lib64 -ldl

$(SHIM_WL)/cupti_flood $(SHIM_WL)/order_feed $(SHIM_WL)/graph_feed $(SHIM_WL)/fork_locks: $(SHIM_WL)/%: tests/workloads/shim/%.c | $(SHIM_WL)
	$(call msg,CC,$@)
	$(Q)$(CC) $(SHIM_WL_CFLAGS) $< -o $@ -L$(CUDA_HOME)/lib64 -lcudart \
		-Wl,-rpath,$(CUDA_HOME)/lib64 -ldl -lpthread

-include $(wildcard $(OUT)/shim/*.d $(OUT)/shim-test/*.d $(OUT)/shim-toyshim/*.d $(SHIM_WL)/*.d)
