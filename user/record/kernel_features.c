// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Kernel feature probes and the switch that forces their fallbacks (kernel_features.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "env.h"
#include "kernel_features.h"

/* A feature without a fallback ("none: ...") is forced off only by name, never by "all":
 * "all" is for running every fallback, not for refusing to record. */
static const struct {
	const char *name, *since, *fallback;
} kf_info[KF_NR] = {
	[KF_RINGBUF] = { "ringbuf", "5.8", "none: bpfsight record refuses to start" },
	[KF_TP_BTF] = { "tp_btf", "5.5 + BTF", "raw_tp programs (CO-RE reads)" },
	[KF_PREV_STATE] = { "prev_state", "5.18",
			    "sched and osrt's blocked mode read the task's state through CO-RE "
			    "(__state or state): a block whose waker came first is missed" },
	[KF_TASK_STORAGE] = { "task_storage", "5.11",
			      "osrt and sched keep per-thread state in hashes keyed by tid; "
			      "gil, cuda, nccl are not recorded" },
	[KF_ATTACH_COOKIE] = { "attach_cookie", "5.15",
			       "none: cuda, nccl, gpu, nvtx are not recorded" },
	[KF_UPROBE_MULTI] = { "uprobe_multi", "6.6",
			      "one perf-event uprobe per site; a detached process frees them" },
	[KF_BPF_LOOP] = { "bpf_loop", "5.17", "no stacks: -t cpu and --stacks refused" },
	[KF_PERF_SAMPLING] = { "perf_sampling", "4.9", "none: the cpu family is refused" },
	[KF_UPROBE_SESSION] = { "uprobe_session", "6.13",
				"a driver launch made by a runtime launch also fires its return "
				"probe (the same records)" },
	[KF_UNWIND_TABLES] = { "unwind_tables", "5.17",
			       "native stacks by frame pointers only: cut in code without them" },
	[KF_TASK_WORK] = { "task_work", "6.18",
			   "--stacks=sched reads its stacks from a sys_exit program, which every "
			   "system call of the machine runs" },
	[KF_SIGNAL_TASK] = { "signal_task", "6.13",
			     "a child a launched command forks runs before its probes are in: "
			     "its first calls may be missed" },
};

/*
 * Features whose probe lives with the code that uses them (uprobe_multi.c's links), given
 * before main runs (kfeature__probe_by); a feature nobody gives a probe for reads absent.
 */
static int (*kf_probe_by[KF_NR])(void);

void kfeature__probe_by(enum kfeature f, int (*probe)(void))
{
	if (f < KF_NR)
		kf_probe_by[f] = probe;
}

/* -1: not probed yet. */
static int kf_have[KF_NR] = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
_Static_assert(KF_NR == 12, "kf_have's initializer lists every feature");

const char *kfeature__name(enum kfeature f)
{
	return f < KF_NR ? kf_info[f].name : "?";
}

int kfeature__forced_off(enum kfeature f)
{
	const char *env = env__trusted("BPFSIGHT_FORCE_FALLBACKS");
	const char *name = kfeature__name(f), *p;
	size_t n = strlen(name);

	if (f == KF_BPF_LOOP && (p = env__trusted("BPFSIGHT_NO_BPF_LOOP")) && *p == '1')
		return 1;
	if (!env)
		return 0;
	for (p = env; *p; p += strcspn(p, ",")) {
		p += strspn(p, ",");
		if (!strncmp(p, "all", 3) && (p[3] == ',' || !p[3]) &&
		    strncmp(kf_info[f].fallback, "none", 4))
			return 1;
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
	}
	return 0;
}

static struct btf *vmlinux_btf(void)
{
	static struct btf *btf;
	static int tried;

	if (!tried) {
		tried = 1;
		btf = btf__load_vmlinux_btf();
		if (!btf)
			btf = NULL; /* libbpf 1.x returns NULL and sets errno */
	}
	return btf;
}

int kfeature__tp_args(const char *tp)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t;
	char name[128];
	int id;

	if (!btf)
		return -1;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return -1;
	/* typedef void (*btf_trace_TP)(void *__data, ARGS...) */
	t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -1;
	return btf_vlen(t) - 1;
}

int kfeature__kfunc_id(const char *name)
{
	struct btf *btf = vmlinux_btf();
	int id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) : -1;

	return id > 0 ? id : -1;
}

int kfeature__call_kfunc(struct bpf_program *prog, int call_id, const char *name)
{
	int id = kfeature__kfunc_id(name), n = 0, err;
	size_t cnt = bpf_program__insn_cnt(prog);
	struct bpf_insn *insns;

	if (id < 0)
		return -ENOENT;
	insns = malloc(cnt * sizeof(*insns));
	if (!insns)
		return -ENOMEM;
	memcpy(insns, bpf_program__insns(prog), cnt * sizeof(*insns));
	for (size_t i = 0; i < cnt; i++) {
		struct bpf_insn *in = &insns[i];

		if (in->code != (BPF_JMP | BPF_CALL) || in->src_reg || in->imm != call_id)
			continue;
		in->src_reg = BPF_PSEUDO_KFUNC_CALL;
		in->imm = id;
		in->off = 0; /* vmlinux's */
		n++;
	}
	err = n ? bpf_program__set_insns(prog, insns, cnt) : -ENOENT;
	free(insns);
	return err;
}

/* A cpu-clock event on CPU 0 for every task: what the cpu family opens per CPU. */
static int probe_perf_sampling(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = 99,
		.freq = 1,
		.disabled = 1,
	};
	int fd = syscall(__NR_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) == 1;
}

/* An array user space maps (the unwind tables' rows are written through it). */
static int probe_mmapable(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "probe", 4, 4, 1, &o);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Every tracepoint a tp_btf program of ours attaches to (bpf/ *.bpf.c). */
static const char *const btf_tracepoints[] = {
	"sys_enter",	      "sys_exit",	    "sched_switch",	  "sched_waking",
	"sched_process_fork", "sched_process_exec", "sched_process_exit", "task_rename",
};

static int kfeature__present(enum kfeature f);

static int probe(enum kfeature f)
{
	switch (f) {
	case KF_RINGBUF:
		return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	case KF_TP_BTF:
		/* The btf_trace_* typedefs came with tp_btf itself (5.5): they are the probe
		 * (libbpf cannot probe a tracing program without an attach target). */
		for (size_t i = 0; i < sizeof(btf_tracepoints) / sizeof(*btf_tracepoints); i++)
			if (kfeature__tp_args(btf_tracepoints[i]) < 0)
				return 0;
		return 1;
	case KF_PREV_STATE:
		return kfeature__tp_args("sched_switch") >= 4;
	case KF_TASK_STORAGE:
		return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	case KF_ATTACH_COOKIE:
		return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie,
					       NULL) == 1;
	case KF_UPROBE_MULTI:
		return kf_probe_by[f] && kf_probe_by[f]();
	case KF_BPF_LOOP:
		return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) == 1;
	case KF_PERF_SAMPLING:
		return probe_perf_sampling();
	case KF_UPROBE_SESSION:
		return kfeature__present(KF_UPROBE_MULTI) && kf_probe_by[f] && kf_probe_by[f]();
	case KF_UNWIND_TABLES:
		return kfeature__present(KF_BPF_LOOP) && probe_mmapable();
	case KF_TASK_WORK:
		/* The kfunc is in the kernel's BTF (what libbpf resolves the call by); the held
		 * intervals it writes live in task storage, their stacks need bpf_loop. */
		return kfeature__present(KF_TASK_STORAGE) && kfeature__present(KF_BPF_LOOP) &&
		       kfeature__kfunc_id("bpf_task_work_schedule_resume_impl") > 0;
	case KF_SIGNAL_TASK:
		return kfeature__kfunc_id("bpf_send_signal_task") > 0;
	default:
		return 0;
	}
}

static int kfeature__present(enum kfeature f)
{
	if (f >= KF_NR)
		return 0;
	if (kf_have[f] < 0)
		kf_have[f] = probe(f);
	return kf_have[f];
}

int kfeature__has(enum kfeature f)
{
	return kfeature__present(f) && !kfeature__forced_off(f);
}

void kfeatures__missing(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int f = 0; f < KF_NR && used < len; f++)
		if (!kfeature__has(f))
			used += snprintf(buf + used, len - used, "%s%s", used ? "," : "",
					 kf_info[f].name);
}

void kfeatures__print(FILE *out)
{
	for (int f = 0; f < KF_NR; f++) {
		int present = kfeature__present(f), forced = kfeature__forced_off(f);
		const char *state = !present ? "no" : forced ? "forced" : "yes";

		fprintf(out, "%-14s %-7s (Linux %s)%s%s\n", kf_info[f].name, state,
			kf_info[f].since, *state == 'y' ? "" : "; fallback: ",
			*state == 'y' ? "" : kf_info[f].fallback);
	}
	fprintf(out, "%-14s %d arguments\n", "sched_switch", kfeature__tp_args("sched_switch"));
}
