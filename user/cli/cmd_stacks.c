// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight stacks -p PID: every thread's stack now, Python and native, with its name, state
 * and the GIL's holder, like py-spy dump but without stopping the process (user/stacks/snap.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "family.h"
#include "json.h"
#include "privileges.h"
#include "record_args.h"
#include "record_ctx.h"
#include "snap.h"
#include "stack_call.h"
#include "stacks_job.h"
#include "stack_format.h"
#include "stats_from.h"
#include "syscall_names.h"
#include "target_tree.h"
#include "thread_name.h"
#include "thread_state.h"
#include "trace_model.h"
#include "msg.h"

#define STACKS_WAIT_NS 2000000000ull /* running threads' samples are waited for this long */

struct stacks_opts {
	pid_t pids[RECORD_MAX_PIDS];
	int npids;
	int json, active_only, no_subprocesses, all, each;
	enum native_mode native;
	struct stats_from from; /* --from: a ClickHouse server's CPU samples, folded */
	int offcpu;		/* --from's --offcpu: the off-CPU intervals' time instead */
};

static void stacks_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfsight stacks -p PID... | --all [--json] [--native | --no-native]\n"
		"                    [--active] [--no-subprocesses] [--each]\n"
		"       bpfsight stacks --from clickhouse://HOST:PORT/JOB [--host NAME] [--rank N]\n"
		"                    [--file PATH] [--offcpu] [-v]\n"
		"\n"
		"Every thread's stack of a running process now, Python and native, with its name,\n"
		"state and the GIL's holder, like py-spy dump, without stopping the process; then\n"
		"the same for each of its child processes (a DataLoader's workers), as py-spy dump\n"
		"--subprocesses. Several processes (a job's ranks) are shown grouped: the threads\n"
		"that run the same code (the same Python frames, the same NCCL call) once, with the\n"
		"ranks that hold them, then the odd ones out.\n"
		"\n"
		"  -p, --pid PID     the process (a thread id names its process); repeatable\n"
		"      --all         every process of the job on this machine: RANK or LOCAL_RANK in\n"
		"                    its environment, or libnccl mapped\n"
		"      --subprocesses     its child processes too (the default; py-spy's spelling)\n"
		"      --no-subprocesses  only PID\n"
		"      --each        several processes: each one's threads, not grouped\n"
		"  -j, --json        one JSON object per process, a line each, instead of text\n"
		"  -n, --native      every native frame, the interpreter's own too\n"
		"  -N, --no-native   Python frames only (for threads that have some)\n"
		"  -a, --active      only threads that run or hold the GIL (idle ones are listed\n"
		"                    by default, marked idle)\n"
		"      --from URL    not a process: the CPU samples `bpfsight ship` sent to a\n"
		"                    ClickHouse server for JOB, folded as export --format folded\n"
		"                    writes them (\"root;...;leaf COUNT\"), counted in the server\n"
		"      --host NAME   --from: only NAME's samples\n"
		"      --rank N      --from: only rank N's samples\n"
		"      --file PATH   --from: only the samples of the file shipped as PATH\n"
		"      --offcpu      --from: the off-CPU time (us) by blocking stack instead, as\n"
		"                    export --format folded-offcpu (--stacks=sched)\n"
		"  -v, --verbose     --from: say which ClickHouse release the server runs\n"
		"  -h, --help        this help\n"
		"\n"
		"By default a Python thread shows its Python frames and the native frames above the\n"
		"innermost one (the C code it is in now: a system call, an extension); a thread\n"
		"without Python frames shows its native frames. Needs root (BPF).\n");
}

/* Also printed by `bpfsight __complete options stacks`: completion and the docs test read it. */
const struct option stacks_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },
	{ "native", no_argument, NULL, 'n' },
	{ "no-native", no_argument, NULL, 'N' },
	{ "active", no_argument, NULL, 'a' },
	{ "subprocesses", no_argument, NULL, 'S' },
	{ "no-subprocesses", no_argument, NULL, 'P' },
	{ "all", no_argument, NULL, 'A' },
	{ "each", no_argument, NULL, 'E' },
	{ "from", required_argument, NULL, 'F' },
	{ "host", required_argument, NULL, 'H' },
	{ "rank", required_argument, NULL, 'R' },
	{ "file", required_argument, NULL, 'L' },
	{ "offcpu", no_argument, NULL, 'O' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

/* Neither running, nor runnable, nor waiting for the GIL (which it would run with). */
static int is_idle(const struct snap *s, const struct snap_thread *th)
{
	return thread_state__idle(th->task.state, snap__flags(s, th));
}

static const char *name_of(const struct snap *s, const struct snap_thread *th)
{
	return thread_name__pick(th->name, th->task.comm, s->cmdline, s->exe);
}

static void print_text(const struct snap *s, const struct stacks_opts *o, int nth)
{
	char since[32];
	static struct bs_frame frames[BS_STACK_MAX_FRAMES + 2];
	char buf[128] = "";
	ssize_t n;

	/* A kernel thread has neither command line nor executable: its name, as ps shows it. */
	for (__u32 i = 0; !s->cmdline[0] && !s->exe[0] && i < s->n; i++)
		if (s->threads[i].task.tid == (__u32)s->pid)
			snprintf(buf, sizeof(buf), "[%s]", s->threads[i].task.comm);
	if (nth)
		printf("\n");
	if (stacks_job__rank(s) >= 0)
		printf("Process %d (rank %d): %s\n", s->pid, stacks_job__rank(s),
		       s->cmdline[0] ? s->cmdline
		       : s->exe[0]   ? s->exe
				     : buf);
	else
		printf("Process %d: %s\n", s->pid,
		       s->cmdline[0] ? s->cmdline
		       : s->exe[0]   ? s->exe
				     : buf);
	if (s->python_unread[0])
		printf("%s\n", s->python_unread);
	if (s->python_minor)
		printf("Python 3.%u; ", s->python_minor);
	printf("%u threads, read in %.1f ms (%.1f ms in all) without stopping the process\n", s->n,
	       s->read_ns / 1e6, s->took_ns / 1e6);
	for (__u32 i = 0; i < s->n; i++) {
		const struct snap_thread *th = &s->threads[i];
		const struct trace_stack *st = trace_model__stack(s->model, th->stack_id);

		if (o->active_only && is_idle(s, th) && !th->gil)
			continue;
		printf("\nThread %u \"%s\" (%s%s): %s%s\n", th->task.tid, name_of(s, th),
		       is_idle(s, th) ? "idle" : "active", th->gil ? ", holds the GIL" : "",
		       snap__state(s, th, buf, sizeof(buf)),
		       stacks_job__for(th, since, sizeof(since)));
		if (!st) {
			printf("    [could not read its stack: %s]\n",
			       th->error ? th->error : "no frame");
			continue;
		}
		n = stacks_job__frames(st, o->native, frames);
		for (ssize_t k = 0; k < n; k++)
			stacks_job__print_frame(stdout, &frames[k], s->model);
		if (st->flags & BS_STACK_TRUNCATED)
			printf("    [truncated]\n");
	}
}

static void json_thread(struct json *j, const struct snap *s, const struct snap_thread *th,
			const struct stacks_opts *o)
{
	static struct bs_frame frames[BS_STACK_MAX_FRAMES + 2];
	const struct trace_stack *st = trace_model__stack(s->model, th->stack_id);
	struct trace_stack picked;
	char buf[128];

	json__begin_object(j);
	json__kv_u64(j, "tid", th->task.tid);
	json__kv_str(j, "name", name_of(s, th));
	json__kv_str(j, "comm", th->task.comm);
	json__kv_str(j, "python_name", th->name[0] ? th->name : NULL);
	json__kv_str(j, "state", snap__state(s, th, buf, sizeof(buf)));
	json__kv_str(j, "syscall",
		     th->task.syscall >= 0 && !th->task.on_cpu && th->task.state && !th->sampled
			     ? syscall_name((__u32)th->task.syscall)
			     : NULL);
	json__kv_bool(j, "idle", is_idle(s, th));
	json__kv_bool(j, "gil", th->gil);
	json__kv_str(j, "read", th->sampled ? "sample" : st ? "memory" : NULL);
	json__kv_u64(j, "cpu_ns", th->task.cpu_ns);
	json__kv_u64(j, "off_cpu_ns", th->task.off_cpu_ns);
	json__kv_str(j, "error", st ? NULL : th->error ? th->error : "no frame");
	/* The call each family that asks (struct family.stack_call_key) sees it in. */
	for_each_family(it)
		if (it.f->stack_call_key)
			json__kv_str(j, it.f->stack_call_key,
				     stack_call__api(st, s->model, it.f->api));
	json__key(j, "stack");
	if (st) {
		picked = *st;
		picked.nframes = stacks_job__frames(st, o->native, frames);
		picked.frames = frames;
		stack__json(&picked, s->model, j);
	} else {
		json__null(j);
	}
	json__end_object(j);
}

static void print_json(const struct snap *s, const struct stacks_opts *o)
{
	struct json j;

	json__init(&j, stdout, 0);
	json__begin_object(&j);
	json__kv_u64(&j, "pid", s->pid);
	json__kv_str(&j, "exe", s->exe);
	json__kv_str(&j, "cmdline", s->cmdline);
	if (stacks_job__rank(s) >= 0)
		json__kv_s64(&j, "rank", stacks_job__rank(s));
	else
		json__kv_str(&j, "rank", NULL);
	if (s->python_minor) {
		char v[16];

		snprintf(v, sizeof(v), "3.%u", s->python_minor);
		json__kv_str(&j, "python", v);
	} else {
		json__kv_str(&j, "python", NULL);
	}
	json__kv_str(&j, "python_unread", s->python_unread[0] ? s->python_unread : NULL);
	json__kv_u64(&j, "took_ns", s->took_ns);
	json__kv_u64(&j, "read_at_ns", s->read_at);
	json__kv_u64(&j, "read_ns", s->read_ns);
	json__key(&j, "threads");
	json__begin_array(&j);
	for (__u32 i = 0; i < s->n; i++)
		if (!o->active_only || !is_idle(s, &s->threads[i]) || s->threads[i].gil)
			json_thread(&j, s, &s->threads[i], o);
	json__end_array(&j);
	json__end_object(&j);
	fputc('\n', stdout);
}

static int parse_args(int argc, char **argv, struct stacks_opts *o)
{
	char *end;
	long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:jnNahv", stacks_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v <= 0 || v > 0x3fffffff) {
				pr_err("bad pid '%s'\n", optarg);
				return -1;
			}
			if (o->npids == RECORD_MAX_PIDS) {
				pr_err("too many -p (at most %d)\n", RECORD_MAX_PIDS);
				return -1;
			}
			o->pids[o->npids++] = v;
			break;
		case 'A':
			o->all = 1;
			break;
		case 'F':
			o->from.url = optarg;
			break;
		case 'H':
			o->from.host = optarg;
			break;
		case 'L':
			o->from.file = optarg;
			break;
		case 'O':
			o->offcpu = 1;
			break;
		case 'v':
			o->from.verbose = 1;
			break;
		case 'R':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < -1 || v > 0x3fffffff) {
				pr_err("bad --rank '%s': a rank, or -1 (unknown)\n", optarg);
				return -1;
			}
			o->from.rank = (int)v;
			break;
		case 'E':
			o->each = 1;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'n':
		case 'N':
			if (o->native != NATIVE_LEAF) {
				pr_err("--native and --no-native "
				       "exclude each other\n");
				return -1;
			}
			o->native = c == 'n' ? NATIVE_ALL : NATIVE_NONE;
			break;
		case 'a':
			o->active_only = 1;
			break;
		case 'S':
			o->no_subprocesses = 0;
			break;
		case 'P':
			o->no_subprocesses = 1;
			break;
		case 'h':
			stacks_usage(stdout);
			return 1;
		default:
			stacks_usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (o->from.url && (o->all || o->npids)) {
		pr_err("--from reads a server's samples: no -p or --all with it\n");
		return -1;
	}
	if (!o->from.url &&
	    (o->from.host || o->from.file || o->from.rank != -2 || o->offcpu || o->from.verbose)) {
		pr_err("--host, --rank, --file, --offcpu and -v go with --from\n");
		return -1;
	}
	if (o->from.url)
		return 0;
	if (o->all && o->npids) {
		pr_err("--all and -p exclude each other: --all finds the job's processes\n");
		return -1;
	}
	if (!o->npids && !o->all) {
		pr_err("-p PID is required (or --all)\n");
		stacks_usage(stderr);
		return -1;
	}
	return 0;
}

/* PID read into S; 0, or -errno after saying what failed. */
static int read_one(struct snap_session *ss, pid_t pid, struct snap *s, int found)
{
	int err = snap_session__take(ss, pid, STACKS_WAIT_NS, s);

	if (err == -ESRCH && found) { /* --all's, or a child: it ended after it was found */
		pr_warn("pid %d exited before its stacks were read\n", pid);
		snap__free(s);
	} else if (err) {
		pr_err("pid %d: %s: %s%s\n", pid, s->failure, strerror(-err),
		       err == -EPERM || err == -EACCES ? " (needs root: CAP_BPF, CAP_PERFMON and "
							 "CAP_SYS_PTRACE)"
						       : "");
		snap__free(s);
	}
	return err;
}

/* The processes to read: -p's (and their children as they are now), or --all's. */
static int gather(const struct stacks_opts *o, pid_t *out, int *roots)
{
	pid_t kids[RECORD_MAX_PIDS];
	int n = 0, k = 0;

	if (o->all) {
		n = stacks_job__find(out, RECORD_MAX_PIDS);
		if (!n)
			pr_err("--all: no process here has RANK or LOCAL_RANK in its environment, "
			       "or libnccl mapped\n");
		else if (n > RECORD_MAX_PIDS)
			pr_warn("--all: %d processes; the first %d are shown\n", n,
				RECORD_MAX_PIDS);
		*roots = n < RECORD_MAX_PIDS ? n : RECORD_MAX_PIDS;
		return *roots;
	}
	memcpy(out, o->pids, o->npids * sizeof(*out));
	*roots = n = o->npids;
	/* The children as they are now, before the dumps take their time. */
	if (!o->no_subprocesses)
		k = target_tree__descendants(o->pids, o->npids, kids, RECORD_MAX_PIDS);
	if (k > RECORD_MAX_PIDS - n) {
		pr_warn("%d child processes: the first %d are shown\n", k, RECORD_MAX_PIDS - n);
		k = RECORD_MAX_PIDS - n;
	}
	for (int i = 0; i < k; i++) {
		int dup = 0;

		for (int j = 0; j < n && !dup; j++)
			dup = out[j] == kids[i];
		if (!dup)
			out[n++] = kids[i];
	}
	return n;
}

int cmd_stacks(int argc, char **argv)
{
	static struct stacks_opts o = { .from.rank = -2 };
	static pid_t pids[RECORD_MAX_PIDS];
	static struct snap snaps[RECORD_MAX_PIDS];
	struct snap_session *ss;
	int err = parse_args(argc, argv, &o), n, roots, nread = 0, status = 0;
	const char *why;

	if (err)
		return err > 0 ? 0 : 1;
	if (o.from.url)
		return stats_from__folded(&o.from, o.offcpu, stdout);
	/* Said before anything is loaded: libbpf's own lines about a refused load are noise. */
	if (!privileges__can_trace()) {
		pr_err("reading a process's stacks needs root (or CAP_BPF, CAP_PERFMON and "
		       "CAP_SYS_PTRACE): run it with sudo\n");
		return 1;
	}
	record_args__libbpf_print(0);
	n = gather(&o, pids, &roots);
	if (!n)
		return 1;
	ss = snap_session__new(NULL, NULL, pids, n, &err, &why);
	if (!ss) {
		pr_err("%s: %s%s\n", why, strerror(-err),
		       err == -EPERM || err == -EACCES ? " (needs root: CAP_BPF, CAP_PERFMON and "
							 "CAP_SYS_PTRACE)"
						       : "");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		/*
		 * A named one that cannot be read fails the command; one --all found, or a child,
		 * may have exited since (other jobs' ranks end as they please).
		 */
		if (read_one(ss, pids[i], &snaps[nread], o.all || i >= roots)) {
			status |= i < roots && !o.all;
			continue;
		}
		/* One process, or --each: each as it is read, as py-spy dump prints them. */
		if (o.json)
			print_json(&snaps[nread], &o);
		else if (n == 1 || o.each)
			print_text(&snaps[nread], &o, nread);
		nread++;
	}
	if (!nread) /* all of --all's exited before they were read */
		status = 1;
	if (!o.json && !o.each && n > 1 && nread)
		stacks_job__print(snaps, nread, snap_session__model(ss), o.native, o.active_only,
				  stdout);
	for (int i = 0; i < nread; i++)
		snap__free(&snaps[i]);
	snap_session__free(ss);
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("writing the output failed: %s\n", strerror(errno));
		return 1;
	}
	return status;
}
