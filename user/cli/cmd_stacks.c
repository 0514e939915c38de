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
#include "json.h"
#include "record_ctx.h"
#include "snap.h"
#include "stack_format.h"
#include "syscall_names.h"
#include "target_tree.h"
#include "thread_name.h"
#include "trace_model.h"
#include "msg.h"

#define STACKS_WAIT_NS 2000000000ull /* running threads' samples are waited for this long */

enum native_mode { NATIVE_LEAF, NATIVE_ALL, NATIVE_NONE };

struct stacks_opts {
	pid_t pid;
	int json, active_only, no_subprocesses;
	enum native_mode native;
};

static void stacks_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfsight stacks -p PID [--json] [--native | --no-native] [--active]\n"
		"                    [--no-subprocesses]\n"
		"\n"
		"Every thread's stack of a running process now, Python and native, with its name,\n"
		"state and the GIL's holder, like py-spy dump, without stopping the process; then\n"
		"the same for each of its child processes (a DataLoader's workers), as py-spy dump\n"
		"--subprocesses.\n"
		"\n"
		"  -p, --pid PID     the process (a thread id names its process)\n"
		"      --subprocesses     its child processes too (the default; py-spy's spelling)\n"
		"      --no-subprocesses  only PID\n"
		"  -j, --json        one JSON object per process, a line each, instead of text\n"
		"  -n, --native      every native frame, the interpreter's own too\n"
		"  -N, --no-native   Python frames only (for threads that have some)\n"
		"  -a, --active      only threads that run or hold the GIL (idle ones are listed\n"
		"                    by default, marked idle)\n"
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
	{ "help", no_argument, NULL, 'h' },
	{},
};

#define NR_FUTEX 202 /* x86-64 */

/* Asleep waiting for its process's GIL: a futex in the GIL's own state. */
static int waits_for_gil(const struct snap *s, const struct snap_thread *th)
{
	const struct snap_task *t = &th->task;

	return !t->on_cpu && !th->sampled && t->state && t->syscall == NR_FUTEX &&
	       t->arg0 >= s->gil && t->arg0 < s->gil_end;
}

/* What the thread is doing, for people: running, or where it sleeps. */
static const char *state_of(const struct snap *s, const struct snap_thread *th, char *buf,
			    size_t len)
{
	const struct snap_task *t = &th->task;
	const char *sc = t->syscall >= 0 ? syscall_name((__u32)t->syscall) : NULL;
	char scbuf[32];

	if (t->syscall >= 0 && !sc) {
		snprintf(scbuf, sizeof(scbuf), "syscall_%lld", (long long)t->syscall);
		sc = scbuf;
	}
	if (t->exiting)
		return "exiting";
	if (t->on_cpu || th->sampled)
		return th->in_kernel ? "running (in the kernel)" : "running";
	if (!t->state)
		return "runnable (waiting for a CPU)";
	if (t->state & 0x8)
		return "stopped by a debugger";
	if (t->state & 0x4)
		return "stopped";
	if (waits_for_gil(s, th))
		return "waiting for the GIL";
	if (!sc)
		return "sleeping";
	snprintf(buf, len, "%s in %s", t->state & 0x2 ? "waiting (uninterruptible)" : "sleeping",
		 sc);
	return buf;
}

/* Neither running, nor runnable, nor waiting for the GIL (which it would run with). */
static int is_idle(const struct snap *s, const struct snap_thread *th)
{
	return !(th->task.on_cpu || th->sampled || !th->task.state) && !th->task.exiting &&
	       !waits_for_gil(s, th);
}

static const char *name_of(const struct snap *s, const struct snap_thread *th)
{
	return thread_name__pick(th->name, th->task.comm, s->cmdline, s->exe);
}

/*
 * The frames of S shown in MODE, into OUT (room for S's): a thread with Python frames keeps
 * them and, by default, the native frames above the innermost one; one without keeps all.
 */
static __u16 pick_frames(const struct trace_stack *s, enum native_mode mode, struct bs_frame *out)
{
	__u16 k = 0, first_py = s->nframes;

	for (__u16 i = 0; i < s->nframes; i++)
		if (s->frames[i].kind == BS_FRAME_PYTHON && first_py == s->nframes)
			first_py = i;
	for (__u16 i = 0; i < s->nframes; i++) {
		int py = s->frames[i].kind == BS_FRAME_PYTHON;

		if (first_py == s->nframes || mode == NATIVE_ALL || py ||
		    (mode == NATIVE_LEAF && i < first_py))
			out[k++] = s->frames[i];
	}
	return k;
}

static void print_frame(FILE *f, const struct bs_frame *fr, const struct trace_model *m)
{
	char buf[512];
	const char *func = stack_frame__func(fr, m, buf, sizeof(buf));
	const char *file = stack_frame__file(fr, m), *base = strrchr(file, '/');

	if (fr->kind == BS_FRAME_PYTHON)
		fprintf(f, "    %s (%s:%u)\n", func, file, fr->line);
	else if (fr->kind == BS_FRAME_NATIVE && fr->func_id)
		fprintf(f, "    %s (%s)\n", func, base ? base + 1 : file);
	else
		fprintf(f, "    %s\n", func);
}

static void print_text(const struct snap *s, const struct stacks_opts *o)
{
	static struct bs_frame frames[BS_STACK_MAX_FRAMES + 2];
	char buf[128] = "";
	ssize_t n;

	/* A kernel thread has neither command line nor executable: its name, as ps shows it. */
	for (__u32 i = 0; !s->cmdline[0] && !s->exe[0] && i < s->n; i++)
		if (s->threads[i].task.tid == (__u32)s->pid)
			snprintf(buf, sizeof(buf), "[%s]", s->threads[i].task.comm);
	printf("Process %d: %s\n", s->pid, s->cmdline[0] ? s->cmdline : s->exe[0] ? s->exe : buf);
	if (s->python_minor)
		printf("Python 3.%u; ", s->python_minor);
	printf("%u threads, read in %.1f ms (%.1f ms in all) without stopping the process\n", s->n,
	       s->read_ns / 1e6, s->took_ns / 1e6);
	for (__u32 i = 0; i < s->n; i++) {
		const struct snap_thread *th = &s->threads[i];
		const struct trace_stack *st = trace_model__stack(s->model, th->stack_id);

		if (o->active_only && is_idle(s, th) && !th->gil)
			continue;
		printf("\nThread %u \"%s\" (%s%s): %s\n", th->task.tid, name_of(s, th),
		       is_idle(s, th) ? "idle" : "active", th->gil ? ", holds the GIL" : "",
		       state_of(s, th, buf, sizeof(buf)));
		if (!st) {
			printf("    [could not read its stack: %s]\n",
			       th->error ? th->error : "no frame");
			continue;
		}
		n = pick_frames(st, o->native, frames);
		for (ssize_t k = 0; k < n; k++)
			print_frame(stdout, &frames[k], s->model);
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
	json__kv_str(j, "state", state_of(s, th, buf, sizeof(buf)));
	json__kv_str(j, "syscall",
		     th->task.syscall >= 0 && !th->task.on_cpu && th->task.state && !th->sampled
			     ? syscall_name((__u32)th->task.syscall)
			     : NULL);
	json__kv_bool(j, "idle", is_idle(s, th));
	json__kv_bool(j, "gil", th->gil);
	json__kv_str(j, "read", th->sampled ? "sample" : st ? "memory" : NULL);
	json__kv_u64(j, "cpu_ns", th->task.cpu_ns);
	json__kv_str(j, "error", st ? NULL : th->error ? th->error : "no frame");
	json__key(j, "stack");
	if (st) {
		picked = *st;
		picked.nframes = pick_frames(st, o->native, frames);
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
	if (s->python_minor) {
		char v[16];

		snprintf(v, sizeof(v), "3.%u", s->python_minor);
		json__kv_str(&j, "python", v);
	} else {
		json__kv_str(&j, "python", NULL);
	}
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
	while ((c = getopt_long(argc, argv, "p:jnNah", stacks_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v <= 0 || v > 0x3fffffff) {
				pr_err("bad pid '%s'\n", optarg);
				return -1;
			}
			o->pid = v;
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
	if (!o->pid) {
		pr_err("-p PID is required\n");
		stacks_usage(stderr);
		return -1;
	}
	return 0;
}

/* One process's stacks printed; 0, or -errno after saying what failed. */
static int dump_one(pid_t pid, const struct stacks_opts *o)
{
	struct snap s;
	int err = snap__take(pid, STACKS_WAIT_NS, &s);

	if (err) {
		pr_err("pid %d: %s: %s%s\n", pid, s.failure, strerror(-err),
		       err == -EPERM || err == -EACCES ? " (needs root: CAP_BPF, CAP_PERFMON and "
							 "CAP_SYS_PTRACE)"
						       : "");
		snap__free(&s);
		return err;
	}
	if (o->json)
		print_json(&s, o);
	else
		print_text(&s, o);
	snap__free(&s);
	return 0;
}

int cmd_stacks(int argc, char **argv)
{
	struct stacks_opts o = {};
	pid_t kids[RECORD_MAX_PIDS];
	int err = parse_args(argc, argv, &o), n = 0;

	if (err)
		return err > 0 ? 0 : 1;
	/* The children as they are now, before the parent's dump takes its time. */
	if (!o.no_subprocesses)
		n = target_tree__descendants(&o.pid, 1, kids, RECORD_MAX_PIDS);
	if (dump_one(o.pid, &o))
		return 1;
	if (n > RECORD_MAX_PIDS) {
		pr_warn("pid %d has %d child processes: the first %d are shown\n", o.pid, n,
			RECORD_MAX_PIDS);
		n = RECORD_MAX_PIDS;
	}
	for (int i = 0; i < n; i++) {
		if (!o.json)
			printf("\n");
		dump_one(kids[i], &o); /* one that exited meanwhile is said; the others shown */
	}
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("writing the output failed: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
