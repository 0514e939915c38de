// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nsys profile's options, rewritten into record's (nsys_args.h). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "family_record.h"
#include "msg.h"
#include "nsys_args.h"
#include "parse.h"
#include "record_args.h"
#include "record_options.h"

#define LIST_MAX 512

/* What the nsys options said, turned into bpfsight's at the end. */
struct rw {
	struct nsys_args *n;
	const char *cmd;
	int profile;
	char trace[LIST_MAX];  /* the families nsys's -t named, as bpfsight's (profile) */
	int trace_given;       /* profile: -t was given */
	char extra[LIST_MAX];  /* families the other options add (+NAME items of -t) */
	int sample, ctxsw;     /* profile: -s, --cpuctxsw: 1 on (nsys's default), 0 none */
	char stacks[LIST_MAX]; /* --stacks items */
	char cuda_bt[32];      /* --cudabacktrace's threshold, "" when not asked */
	int cuda_bt_on;
	char capture[16]; /* --capture-range: cudaProfilerApi or nvtx */
	char nvtx_capture[256];
	char output[LIST_MAX];
	int output_given;
	char pyfunc[LIST_MAX]; /* --python-functions' pieces (its spec files, presets) */
	int nsys_seen;	       /* an option only nsys has was given */
};

static int fail(const struct rw *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const struct rw *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return msg__fail("%s", msg);
}

/* One line: what nsys's OPT does that bpfsight does otherwise. */
static void differs(const struct rw *r, const char *opt, const char *what)
{
	pr_info("nsys's %s: %s\n", opt, what);
}

static int push(struct rw *r, const char *s, int own)
{
	char *copy = own ? strdup(s) : (char *)s;

	if (!copy)
		return -ENOMEM;
	r->n->argv[r->n->argc++] = copy;
	if (own)
		r->n->owned[r->n->nowned++] = copy;
	return 0;
}

static void list_add(char *list, const char *item)
{
	size_t used = strlen(list);

	snprintf(list + used, LIST_MAX - used, "%s%s", used ? "," : "", item);
}

/* Is ITEM one of the comma-separated LIST? */
static int has_item(const char *list, const char *item)
{
	size_t n = strlen(item);

	for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, item, n) && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

/* "true", "false" (nsys's booleans): 1, 0; -1 otherwise. */
static int boolean(const char *v)
{
	if (!strcmp(v, "true") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "false") || !strcmp(v, "0"))
		return 0;
	return -1;
}

static int need_bool(const struct rw *r, const char *opt, const char *v, int *out)
{
	*out = boolean(v);
	return *out < 0 ? fail(r, "%s %s: give true or false (nsys's spelling)", opt, v) : 0;
}

/*
 * nsys's -t names that bpfsight has no family for: nsys traces them, bpfsight cannot. The
 * names it has are its families' (struct family_record.nsys_trace).
 */
static const char *const untraced[] = {
	"opengl",   "opengl-annotations",
	"vulkan",   "vulkan-annotations",
	"mpi",	    "ucx",
	"oshmem",   "openacc",
	"openmp",   "nvvideo",
	"nvmedia",  "dx11",
	"dx12",	    "wddm",
	"syscall",  "cusparse",
	"cusolver",
};

int nsys_args__trace(const char *name, const char **ours)
{
	static char fams[LIST_MAX];
	size_t used = 0;

	for (size_t i = 0; i < sizeof(untraced) / sizeof(untraced[0]); i++)
		if (!strcmp(untraced[i], name)) {
			*ours = NULL;
			return 1;
		}
	fams[0] = 0;
	for_each_family(it)
		if (it.f->record->nsys_trace && has_item(it.f->record->nsys_trace, name) &&
		    used < sizeof(fams))
			used += snprintf(fams + used, sizeof(fams) - used, "%s%s", used ? "," : "",
					 it.f->name);
	*ours = fams;
	return used || !strcmp(name, "none");
}

/* -t LIST: profile reads nsys's names; record keeps LIST (its parser knows nsys's names). */
static int opt_trace(struct rw *r, const char *opt, const char *v)
{
	char copy[LIST_MAX], *save = NULL, *tok;

	snprintf(copy, sizeof(copy), "%s", v);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *ours;
		int known = nsys_args__trace(tok, &ours);

		if (known && !ours)
			return fail(r,
				    "%s %s: nsys traces %s; bpfsight has no family for it (drop it "
				    "from the list; `bpfsight record --help` lists the families)",
				    opt, tok, tok);
		if (!r->profile || !known) { /* bpfsight's own name: as it is */
			list_add(r->trace, tok);
			continue;
		}
		if (*ours)
			list_add(r->trace, ours);
	}
	r->trace_given = 1;
	return 0;
}

/* -s/--sample: cpu, process-tree, system-wide (sampling on) or none. */
static int opt_sample(struct rw *r, const char *opt, const char *v)
{
	if (!strcmp(v, "none")) {
		r->sample = 0;
		return 0;
	}
	if (strcmp(v, "cpu") && strcmp(v, "process-tree") && strcmp(v, "system-wide"))
		return fail(r, "%s %s: cpu, process-tree, system-wide or none", opt, v);
	if (!strcmp(v, "system-wide"))
		differs(r, opt, "samples what bpfsight records (-a for every process)");
	r->sample = 1;
	list_add(r->extra, "+cpu");
	return 0;
}

static int opt_ctxsw(struct rw *r, const char *opt, const char *v)
{
	if (strcmp(v, "none") && strcmp(v, "process-tree") && strcmp(v, "system-wide"))
		return fail(r, "%s %s: process-tree, system-wide or none", opt, v);
	r->ctxsw = strcmp(v, "none") != 0;
	if (r->ctxsw)
		list_add(r->extra, "+sched");
	return 0;
}

static int opt_rate(struct rw *r, const char *opt, const char *v)
{
	list_add(r->extra, "+cpu");
	return push(r, "--sample-rate", 0) || push(r, v, 0) ? -ENOMEM : 0;
}

/*
 * --gpu-metrics-device(s)=all|none|cuda-visible|N,M and --gpu-metrics-frequency=HZ: the
 * gpumetrics family's options of the same names and values (nsys's default is none: no
 * metrics, no family); nsys's older singular name too.
 */
static int opt_gpu_devices(struct rw *r, const char *opt, const char *v)
{
	if (!strcmp(v, "none"))
		return 0;
	return push(r, "--gpu-metrics-devices", 0) || push(r, v, 0) ? -ENOMEM : 0;
}

static int opt_gpu_frequency(struct rw *r, const char *opt, const char *v)
{
	return push(r, "--gpu-metrics-frequency", 0) || push(r, v, 0) ? -ENOMEM : 0;
}

/* --gpu-metrics-set: nsys's counter sets per chip; bpfsight's metrics are NVML's and GPM's. */
static int opt_gpu_set(struct rw *r, const char *opt, const char *v)
{
	differs(r, opt,
		"bpfsight samples NVML's and GPM's metrics, the same set on every GPU "
		"(docs/GPU-METRICS.md), not nsys's per-chip sets: the value is not used");
	return 0;
}

#define NSYS_BACKTRACE_NS 80000ull /* nsys's default --cudabacktrace threshold: 80 us */

/* Keep the lowest threshold asked (bpfsight has one per family). */
static void cuda_bt_threshold(struct rw *r, unsigned long long ns)
{
	unsigned long long now = r->cuda_bt[0] ? strtoull(r->cuda_bt, NULL, 10) : ~0ull;

	if (ns < now)
		snprintf(r->cuda_bt, sizeof(r->cuda_bt), "%lluns", ns);
	r->cuda_bt_on = 1;
}

/*
 * --cudabacktrace=KIND[:NS],... (all, true, kernel, memory, sync, other; none): the cuda
 * family's stacks, over NS (nsys's default 80 us) for every kind of call.
 */
static int opt_cuda_bt(struct rw *r, const char *opt, const char *v)
{
	char copy[256], *save = NULL, *tok;

	snprintf(copy, sizeof(copy), "%s", v);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		__u64 ns = NSYS_BACKTRACE_NS;

		if (colon)
			*colon = 0;
		if (!strcmp(tok, "none") || !strcmp(tok, "false"))
			continue;
		if (strcmp(tok, "all") && strcmp(tok, "true") && strcmp(tok, "kernel") &&
		    strcmp(tok, "memory") && strcmp(tok, "sync") && strcmp(tok, "other"))
			return fail(r,
				    "%s %s: all, kernel, memory, sync, other (each with :NS) or "
				    "none",
				    opt, tok);
		if (colon && parse_threshold_ns(colon + 1, &ns))
			return fail(r, "%s %s: a threshold in ns after ':'", opt, colon + 1);
		if (strcmp(tok, "all") && strcmp(tok, "true"))
			differs(r, opt,
				"bpfsight takes the stack of every kind of CUDA call over the "
				"threshold");
		cuda_bt_threshold(r, ns);
	}
	return 0;
}

static int opt_cuda_bt_threshold(struct rw *r, const char *opt, const char *v)
{
	__u64 ns;

	if (parse_threshold_ns(v, &ns))
		return fail(r, "%s %s: a time in ns (nsys's unit)", opt, v);
	r->cuda_bt[0] = 0; /* this one, not the default */
	cuda_bt_threshold(r, ns);
	return 0;
}

/* --python-backtrace=cuda: the cuda family's stacks, whose Python frames are always read. */
static int opt_py_bt(struct rw *r, const char *opt, const char *v)
{
	if (!strcmp(v, "none") || !strcmp(v, "false"))
		return 0;
	if (strcmp(v, "cuda"))
		return fail(r, "%s %s: cuda (the stacks of CUDA calls) or none", opt, v);
	if (!r->cuda_bt_on)
		cuda_bt_threshold(r, NSYS_BACKTRACE_NS);
	return 0;
}

static int opt_py_sampling(struct rw *r, const char *opt, const char *v)
{
	int on;

	if (need_bool(r, opt, v, &on))
		return 1;
	if (on) /* a sample's stack has its Python frames in any case */
		list_add(r->extra, "+cpu");
	return 0;
}

/* --pytorch=autograd-nvtx|autograd-shapes-nvtx|functions-trace|none: the torch family. */
static int opt_pytorch(struct rw *r, const char *opt, const char *v)
{
	char copy[128], *save = NULL, *tok;
	int shapes = 0;

	snprintf(copy, sizeof(copy), "%s", v);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "none"))
			return 0;
		if (!strcmp(tok, "autograd-shapes-nvtx") || !strcmp(tok, "functions-trace"))
			shapes = 1;
		else if (strcmp(tok, "autograd-nvtx"))
			return fail(r,
				    "%s %s: autograd-nvtx, autograd-shapes-nvtx, "
				    "functions-trace or none",
				    opt, tok);
	}
	differs(r, opt,
		"bpfsight records PyTorch's ops themselves (-t torch: torch_op events, "
		"torch.profiler's view), not NVTX ranges");
	list_add(r->extra, "+torch");
	if (strstr(v, "functions-trace")) /* nsys's pytorch.json: the pytorch preset */
		list_add(r->pyfunc, "pytorch");
	return shapes && push(r, "--torch-shapes", 0) ? -ENOMEM : 0;
}

/* --python-functions-trace=FILE: the file, read by --python-functions as nsys reads it. */
static int opt_py_functions(struct rw *r, const char *opt, const char *v)
{
	if (strlen(r->pyfunc) + strlen(v) + 2 > sizeof(r->pyfunc))
		return fail(r, "%s %s: too long a path", opt, v);
	list_add(r->pyfunc, v);
	return 0;
}

/* --dask=functions-trace|none: nsys's dask.json is the dask preset of --python-functions. */
static int opt_dask(struct rw *r, const char *opt, const char *v)
{
	if (!strcmp(v, "none"))
		return 0;
	if (strcmp(v, "functions-trace"))
		return fail(r, "%s %s: functions-trace or none", opt, v);
	list_add(r->pyfunc, "dask");
	return 0;
}

static int opt_cuda_memory(struct rw *r, const char *opt, const char *v)
{
	int on;

	if (need_bool(r, opt, v, &on))
		return 1;
	if (on) {
		differs(r, opt, "the mem family: every tensor allocation and free, CPU and GPU");
		list_add(r->extra, "+mem");
	}
	return 0;
}

static int opt_capture(struct rw *r, const char *opt, const char *v)
{
	if (!strcmp(v, "none"))
		return 0;
	if (strcmp(v, "cudaProfilerApi") && strcmp(v, "nvtx")) /* bpfsight's own kinds */
		return push(r, "--capture-range", 0) || push(r, v, 0) ? -ENOMEM : 0;
	snprintf(r->capture, sizeof(r->capture), "%s", v);
	return 0;
}

static int opt_nvtx_capture(struct rw *r, const char *opt, const char *v)
{
	snprintf(r->nvtx_capture, sizeof(r->nvtx_capture), "%s", v);
	return 0;
}

/* --capture-range-end and --stop-on-range-end: bpfsight keeps every range until CMD ends. */
static int opt_range_end(struct rw *r, const char *opt, const char *v)
{
	if (!strncmp(opt, "--stop-on-range-end", 19)) {
		int on;

		if (need_bool(r, opt, v, &on))
			return 1;
		if (!on)
			return 0;
	} else if (!strncmp(v, "repeat", 6) || !strcmp(v, "none")) {
		return 0;
	} else if (strcmp(v, "stop") && strcmp(v, "stop-shutdown")) {
		return fail(r, "%s %s: stop, stop-shutdown, repeat[:N] or none", opt, v);
	}
	differs(r, opt,
		"bpfsight keeps recording after a range ends (each later range is kept too) until "
		"CMD exits or -d ends");
	return 0;
}

/* -f, --force-overwrite true|false */
static int opt_force(struct rw *r, const char *opt, const char *v)
{
	int on;

	if (need_bool(r, opt, v, &on))
		return 1;
	return on && push(r, "--force", 0) ? -ENOMEM : 0;
}

/* -w/--show-output, -x/--stop-on-exit, -n/--inherit-environment, --trace-fork-before-exec */
static int opt_same_if_true(struct rw *r, const char *opt, const char *v)
{
	int on;

	if (need_bool(r, opt, v, &on))
		return 1;
	if (!on && (!strcmp(opt, "-w") || !strcmp(opt, "--show-output")))
		differs(r, opt, "bpfsight always passes CMD's output through");
	else if (!on)
		differs(r, opt, "bpfsight does this in any case");
	return 0;
}

/* --export=LIST: sqlite is written beside the trace once it is closed, as nsys does. */
static int opt_export(struct rw *r, const char *opt, const char *v)
{
	char copy[LIST_MAX], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", v);
	for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		if (!strcmp(f, "sqlite"))
			r->n->export_sqlite = 1;
		else if (!strcmp(f, "none"))
			continue;
		else if (!strcmp(f, "json") || !strcmp(f, "text") || !strcmp(f, "hdf") ||
			 !strncmp(f, "arrow", 5) || !strcmp(f, "parquetdir"))
			differs(r, opt,
				"bpfsight exports sqlite itself; for the others, run `bpfsight "
				"export FILE --format perfetto` (or chrome, pprof) after the "
				"recording");
		else
			return fail(r,
				    "%s %s: sqlite, json, text, hdf, arrow, arrowdir, "
				    "parquetdir or none (nsys's)",
				    opt, f);
	}
	return 0;
}

/* --stats=true: the reports printed once the file is closed, as nsys does. */
static int opt_stats(struct rw *r, const char *opt, const char *v)
{
	int on;

	if (need_bool(r, opt, v, &on))
		return 1;
	r->n->stats = on;
	return 0;
}

/*
 * -b fp|dwarf|lbr|none: fp is --unwind=fp; bpfsight's default (unwind tables from every
 * file's .eh_frame, frame pointers where a file has them) does what dwarf is for, without
 * copying the stack as perf does; lbr and none are said.
 */
static int opt_backtrace(struct rw *r, const char *opt, const char *v)
{
	if (!strcmp(v, "fp"))
		return push(r, "--unwind=fp", 0) ? -ENOMEM : 0;
	if (!strcmp(v, "dwarf"))
		differs(r, opt,
			"bpfsight unwinds by unwind tables built from .eh_frame, every "
			"file's before its first stack, and by frame pointers where a file has "
			"them (--unwind=tables, the default)");
	else if (!strcmp(v, "lbr"))
		differs(r, opt,
			"no LBR: frame pointers and unwind tables (--unwind=tables, the "
			"default)");
	else if (!strcmp(v, "none"))
		differs(r, opt, "cpu samples always carry their stack");
	else
		return fail(r, "%s %s: give fp, dwarf, lbr or none", opt, v);
	return 0;
}

static int opt_output(struct rw *r, const char *opt, const char *v)
{
	snprintf(r->output, sizeof(r->output), "%s", v);
	r->output_given = 1;
	return 0;
}

static int opt_env(struct rw *r, const char *opt, const char *v)
{
	const char *eq = strchr(v, '=');
	char name[256];

	if (!eq || eq == v || eq - v >= (long)sizeof(name))
		return fail(r, "%s %s: give NAME=VALUE", opt, v);
	snprintf(name, sizeof(name), "%.*s", (int)(eq - v), v);
	differs(r, opt, "set in bpfsight's environment, which CMD inherits");
	return setenv(name, eq + 1, 1) ? -errno : 0;
}

static int no_equivalent(struct rw *r, const char *opt, const char *v)
{
	return fail(r,
		    "%s: nsys's option has no bpfsight equivalent (docs/USAGE.md, \"Coming from "
		    "nsys\", lists those that have one)",
		    opt);
}

/* Short letters record gives another meaning (-p PID, -o, -t): nsys's in profile only. */
#define P 1 /* the short letter: profile only */
#define A 0 /* both */

static const struct nsys_opt {
	const char *lng;
	char shrt;
	int profile_only;
	int (*fn)(struct rw *r, const char *opt, const char *val);
} nsys_opts[] = {
	{ "trace", 't', A, opt_trace }, /* record: its own names kept, nsys's others refused */
	{ "sample", 's', A, opt_sample },
	{ "cpuctxsw", 0, A, opt_ctxsw },
	{ "sampling-frequency", 0, A, opt_rate },
	{ "sampling-period", 0, A, no_equivalent },
	{ "cudabacktrace", 0, A, opt_cuda_bt },
	{ "cudabacktrace-threshold", 0, A, opt_cuda_bt_threshold },
	{ "python-backtrace", 0, A, opt_py_bt },
	{ "python-sampling", 0, A, opt_py_sampling },
	{ "python-sampling-frequency", 0, A, opt_rate },
	{ "pytorch", 0, A, opt_pytorch },
	{ "cuda-memory-usage", 0, A, opt_cuda_memory },
	{ "capture-range", 'c', A, opt_capture },
	{ "nvtx-capture", 'p', P, opt_nvtx_capture },
	{ "capture-range-end", 0, A, opt_range_end },
	{ "stop-on-range-end", 0, A, opt_range_end },
	{ "force-overwrite", 'f', A, opt_force },
	{ "show-output", 'w', A, opt_same_if_true },
	{ "stop-on-exit", 'x', A, opt_same_if_true },
	{ "inherit-environment", 'n', A, opt_same_if_true },
	{ "trace-fork-before-exec", 0, A, opt_same_if_true },
	{ "export", 0, A, opt_export },
	{ "stats", 0, A, opt_stats },
	{ "backtrace", 'b', A, opt_backtrace },
	{ "output", 'o', P, opt_output },
	{ "env-var", 'e', A, opt_env },
	{ "delay", 'y', A, no_equivalent },
	{ "gpu-metrics-device", 0, A, opt_gpu_devices },
	{ "gpu-metrics-devices", 0, A, opt_gpu_devices }, /* record: its own, the same */
	{ "gpu-metrics-frequency", 0, A, opt_gpu_frequency },
	{ "gpu-metrics-set", 0, A, opt_gpu_set },
	{ "cuda-graph-trace", 0, A, no_equivalent },
	{ "session", 0, A, no_equivalent },
	{ "session-new", 0, A, no_equivalent },
	{ "wait", 0, A, no_equivalent },
	{ "run-as", 0, A, no_equivalent },
	{ "python-functions-trace", 0, A, opt_py_functions },
	{ "dask", 0, A, opt_dask },
};

/* Long names: the same in both verbs (only short letters collide with record's). */
static const struct nsys_opt *find_long(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(nsys_opts) / sizeof(nsys_opts[0]); i++)
		if (strlen(nsys_opts[i].lng) == len && !strncmp(nsys_opts[i].lng, name, len))
			return &nsys_opts[i];
	return NULL;
}

static const struct nsys_opt *find_short(char c, int profile)
{
	for (size_t i = 0; i < sizeof(nsys_opts) / sizeof(nsys_opts[0]); i++)
		if (nsys_opts[i].shrt == c && (profile || !nsys_opts[i].profile_only))
			return &nsys_opts[i];
	return NULL;
}

/* Does bpfsight's record take a value after --NAME (LEN chars) or -C? -1: no such option. */
static int ours_takes_value(const char *name, size_t len, char c)
{
	const struct option *o = record_args__long_options("record");
	char shorts[64], *p;

	if (c) {
		record_args__short_options("record", shorts, sizeof(shorts));
		p = strchr(shorts + 1, c);
		return p ? p[1] == ':' : -1;
	}
	for (; o->name; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return o->has_arg != no_argument;
	return -1;
}

/* One nsys option at ARGV[*I]: its value from "=..." or the next word. 0, 1, or -errno. */
static int take_nsys(struct rw *r, const struct nsys_opt *o, const char *opt, const char *inl,
		     int argc, char **argv, int *i)
{
	const char *val = inl;

	/* -f alone is bpfsight's (--force, said deprecated); nsys's takes true or false */
	if (!val && o->fn == opt_force && (*i + 1 >= argc || boolean(argv[*i + 1]) < 0))
		return push(r, argv[*i], 0);
	if (!val && *i + 1 < argc)
		val = argv[++*i];
	if (!val)
		return fail(r, "%s needs a value", opt);
	r->nsys_seen |= o->fn != opt_trace && o->fn != opt_output;
	return o->fn(r, opt, val);
}

/* bpfsight's own option at ARGV[*I], copied with its value. */
static int take_ours(struct rw *r, int argc, char **argv, int *i, int value)
{
	if (push(r, argv[*i], 0))
		return -ENOMEM;
	if (value && *i + 1 < argc)
		return push(r, argv[++*i], 0);
	return 0;
}

/* The options the nsys ones stand for, before CMD. */
static int finish(struct rw *r)
{
	char trace[2 * LIST_MAX] = "", item[LIST_MAX + 32];
	int err = 0;

	if (r->profile) { /* nsys's defaults: -t cuda,nvtx,osrt; sampling; context switches */
		if (!r->trace_given && opt_trace(r, "-t", "cuda,nvtx,osrt")) /* nsys's names */
			return 1;
		snprintf(trace, sizeof(trace), "%s", r->trace);
		if (r->sample && !strstr(r->extra, "+cpu"))
			list_add(trace, "cpu");
		if (r->ctxsw && !strstr(r->extra, "+sched"))
			list_add(trace, "sched");
	} else {
		snprintf(trace, sizeof(trace), "%s", r->trace);
		if (r->nsys_seen && has_item(r->trace, "cuda") && !has_item(r->trace, "gpu"))
			pr_info("nsys's -t cuda also times the GPU work: that is bpfsight's gpu family "
				"(add it to -t), or run `bpfsight profile`, which reads -t as nsys "
				"does\n");
	}
	if (r->extra[0])
		snprintf(trace + strlen(trace), sizeof(trace) - strlen(trace), "%s%s",
			 trace[0] ? "," : "", r->extra);
	if (trace[0])
		err = push(r, "--trace", 0) || push(r, trace, 1);
	if (!err && r->cuda_bt_on) {
		snprintf(item, sizeof(item), "cuda:%s", r->cuda_bt);
		list_add(r->stacks, item);
	}
	if (!err && r->stacks[0])
		err = push(r, "--stacks", 0) || push(r, r->stacks, 1);
	if (!err && !strcmp(r->capture, "cudaProfilerApi"))
		err = push(r, "--capture-range=cudaProfilerApi", 0);
	if (!err && !strcmp(r->capture, "nvtx")) {
		if (!r->nvtx_capture[0])
			return fail(r, "--capture-range=nvtx needs --nvtx-capture=NAME (nsys's "
				       "spelling; bpfsight's: --capture-range=nvtx:NAME)");
		snprintf(item, sizeof(item), "--capture-range=nvtx:%s", r->nvtx_capture);
		err = push(r, item, 1);
	}
	if (!err && r->pyfunc[0]) /* one option: given twice, its last would win */
		err = push(r, "--python-functions", 0) || push(r, r->pyfunc, 1);
	if (!err && r->output_given) { /* nsys adds .nsys-rep; profile adds .bst */
		const char *base = strrchr(r->output, '/');

		snprintf(item, sizeof(item), "%s%s", r->output,
			 strchr(base ? base : r->output, '.') ? "" : ".bst");
		err = push(r, "--output", 0) || push(r, item, 1);
	}
	return err ? -ENOMEM : 0;
}

static int rewrite(struct rw *r, int argc, char **argv)
{
	int i, err = 0;

	for (i = 1; i < argc && !err; i++) {
		const char *a = argv[i], *eq;
		const struct nsys_opt *o;
		int value;

		if (!strcmp(a, "--") || a[0] != '-' || !a[1])
			break; /* CMD (or --): the rest is copied as it is */
		if (a[1] == '-') {
			size_t len = strcspn(a + 2, "=");

			eq = a[2 + len] == '=' ? a + 3 + len : NULL;
			o = find_long(a + 2, len);
			value = ours_takes_value(a + 2, len, 0);
			/* record: its own --output, --kill...: its meaning (--trace and
			 * --capture-range read nsys's values and pass its own on) */
			if (o && value >= 0 && !r->profile && o->fn != opt_trace &&
			    o->fn != opt_capture) {
				err = take_ours(r, argc, argv, &i, value && !eq);
				continue;
			}
			if (o) {
				char opt[64];

				snprintf(opt, sizeof(opt), "--%.*s", (int)len, a + 2);
				err = take_nsys(r, o, opt, eq, argc, argv, &i);
				continue;
			}
			err = take_ours(r, argc, argv, &i, value > 0 && !eq);
			continue;
		}
		/* -X or -XVALUE */
		o = find_short(a[1], r->profile);
		value = ours_takes_value(NULL, 0, a[1]);
		if (o && (r->profile || value < 0 || o->fn == opt_force || o->fn == opt_trace)) {
			char opt[3] = { '-', a[1], 0 };

			err = take_nsys(r, o, opt, a[2] ? a + 2 : NULL, argc, argv, &i);
			continue;
		}
		err = take_ours(r, argc, argv, &i, value > 0 && !a[2]);
	}
	if (!err)
		err = finish(r);
	for (; !err && i < argc; i++)
		err = push(r, argv[i], 0);
	if (err < 0)
		return msg__fail("%s", strerror(-err));
	return err;
}

int nsys_args__rewrite(struct nsys_args *n, const char *cmd, int profile, int argc, char **argv)
{
	struct rw r = { .n = n, .cmd = cmd, .profile = profile, .sample = 1, .ctxsw = 1 };

	memset(n, 0, sizeof(*n));
	/* each word gives at most two (--sampling-frequency=N), finish() a handful */
	n->argv = calloc(2 * argc + 16, sizeof(*n->argv));
	n->owned = calloc(16, sizeof(*n->owned));
	if (!n->argv || !n->owned)
		return msg__fail("out of memory");
	n->argv[n->argc++] = argv[0];
	return rewrite(&r, argc, argv);
}

void nsys_args__free(struct nsys_args *n)
{
	for (int i = 0; i < n->nowned; i++)
		free(n->owned[i]);
	free(n->owned);
	free(n->argv);
	memset(n, 0, sizeof(*n));
}
