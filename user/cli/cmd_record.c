// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight record: parse and check everything a user can get wrong, then run a recording. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "env.h"
#include "commands.h"
#include "family.h"
#include "kernel_features.h"
#include "privileges.h"
#include "record_args.h"
#include "nsys_args.h"
#include "record_options.h"
#include "recorder.h"
#include "stats.h"
#include "msg.h"
#include "output_name.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bpfsight record [OPTIONS] [--] CMD [ARGS...]   trace CMD and its children\n"
		"       bpfsight record [OPTIONS] -p PID [-p PID]...   attach to running processes\n"
		"       bpfsight record [OPTIONS] -a                    trace the whole system\n"
		"\n");
	record_args__print_options(f, "record");
	fprintf(f,
		"\n"
		"Needs root, or CAP_BPF + CAP_PERFMON. Exit status: CMD's in launch mode, else 0,\n"
		"or 1 on error. SIGINT/SIGTERM stop the recording and close the file cleanly;\n"
		"SIGUSR1 flushes it to disk and goes on (with --flight-recorder: dumps).\n");
}

#define FAIL(...) msg__fail(__VA_ARGS__)

/*
 * Stacks are read in a bpf_loop (Linux 5.17+), probed (kernel_features.h;
 * BPFSIGHT_NO_BPF_LOOP=1 or BPFSIGHT_FORCE_FALLBACKS=bpf_loop forces its absence, for the
 * tests). Without it, the stacks a family takes by default are off (said once), the CPU samples
 * a job's recording takes by default too, and the ones asked for (--stacks, -t cpu) are
 * refused with the reason.
 */
static int check_stacks(struct record_opts *o, int stacks_given)
{
	int asked = 0;

	if (!record_opts__wants_stacks(o) || kfeature__has(KF_BPF_LOOP))
		return 0;
	for_each_family_slot(it, o->stack_ns) {
		if (!(o->families & (1ull << it.i)))
			continue;
		if ((it.f->flags & FAMILY_STACKS) && !(o->families_named & (1ull << it.i)) &&
		    family__samples(it.f)) {
			o->families &= ~(1ull << it.i); /* a default's samples: left out, said */
			pr_err("not sampling CPUs (%s): this kernel has no bpf_loop (Linux 5.17 or "
			       "later)\n",
			       it.f->name);
			continue;
		}
		if ((it.f->flags & FAMILY_STACKS) ||
		    (stacks_given && *it.slot != RECORD_STACKS_OFF))
			asked = 1;
	}
	if (!record_opts__wants_stacks(o))
		return 0;
	if (asked)
		return FAIL("stacks need the bpf_loop helper (Linux 5.17 or later), which this "
			    "kernel lacks: drop --stacks and -t cpu");
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++)
		o->stack_ns[i] = RECORD_STACKS_OFF;
	pr_err("no stacks on GIL waits: this kernel has no bpf_loop "
	       "(Linux 5.17 or later)\n");
	return 0;
}

/*
 * What the writer would refuse with a bare errno (ELOOP, EINVAL), said plainly before
 * anything starts. An existing regular file is the writer's to judge (--force).
 */
static int check_output(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return 0; /* does not exist (or the writer says why it cannot be created) */
	if (S_ISLNK(st.st_mode))
		return FAIL("%s is a symbolic link: bpfsight never writes a trace through a link "
			    "(give the path it points to, or remove it)",
			    path);
	if (S_ISDIR(st.st_mode))
		return FAIL("%s is a directory: give a file name, e.g. -o %s/run.bst", path, path);
	if (!S_ISREG(st.st_mode))
		return FAIL("%s is not a regular file (a FIFO, device or socket): a trace is a "
			    "crash-safe file on a filesystem, give its path",
			    path);
	return 0;
}

/* nsys-like default name: report1.bst, report2.bst, ... first that does not exist. */
static const char *default_output(char *buf, size_t len)
{
	for (int i = 1; i < 100000; i++) {
		snprintf(buf, len, "report%d.bst", i);
		if (access(buf, F_OK))
			return buf;
	}
	return "report.bst";
}

/* What only record checks: something to trace, where to write it, what --inject may do. */
static int check_record(struct record_args *a)
{
	struct record_opts *o = &a->o;

	if (!o->cmd && !o->npids && !o->system_wide) {
		FAIL("nothing to trace: give a command (bpfsight record -- CMD), -p PID or -a");
		usage(stderr);
		return 1;
	}
	if (o->run_as && !o->cmd)
		return FAIL(
			"--user is for a launched command (bpfsight record --user USER -- CMD)");
	/* As nsys and strace: CMD runs as bpfsight does. Under sudo that is root: say so. */
	if (o->cmd && !o->run_as && env__sudo_uid())
		pr_note("%s runs as root (bpfsight's user under sudo); --user sudo runs it as the "
			"user who ran sudo (uid %s)\n",
			o->cmd[0], env__sudo_uid());
	if (o->inject && o->cmd)
		return FAIL("--inject is for running processes (-p, -a): a launched command gets "
			    "the cupti-shim from its environment already");
	if (!o->dry_run && o->output && check_output(o->output))
		return 1;
	if (o->dry_run && o->flight.window_ns)
		return FAIL("--dry-run records nothing: drop --flight-recorder");
	return 0;
}

/*
 * -o's %-escapes (output_name.h), now; a launched command's %p once it is forked (the
 * recorder expands output_pattern then). 0, or 1 after saying what is wrong.
 */
static int expand_output(struct record_opts *o, char *buf, size_t len)
{
	if (!o->output || !strchr(o->output, '%'))
		return 0;
	if (o->cmd && output_name__wants_pid(o->output)) {
		o->output_pattern = o->output;
		/* Checked as far as it can be: every other escape expanded. */
		return output_name__expand(o->output, 0, buf, len);
	}
	if (output_name__expand(o->output, o->npids ? o->pids[0] : getpid(), buf, len))
		return 1;
	o->output = buf;
	return 0;
}

/* The file the recording wrote (record_opts.written). */
static void note_written(void *arg, const char *path)
{
	snprintf(arg, PATH_MAX, "%s", path);
}

/*
 * nsys's --stats=true and --export=sqlite, as nsys does them once the file is closed: the
 * reports on stdout, the SQLite file beside the trace (its stem + .sqlite). The recording's
 * exit status, or the export's when it failed and the recording did not.
 */
static int after_written(const struct nsys_args *n, const struct record_opts *o, const char *path,
			 int ret)
{
	char out[PATH_MAX + 8];
	size_t len = strlen(path);
	int e;

	if (!*path)
		return ret;
	if (n->stats) {
		char *sv[] = { "stats", (char *)path, NULL };

		fflush(stdout);
		cmd_stats(2, sv);
	}
	if (n->export_sqlite) {
		/* FILE last: getopt keeps record's order (options stop at the first operand). */
		char *ev[] = {
			"export", "--format", "sqlite", "-o", out, (char *)path, NULL, NULL
		};

		if (len > 4 && !strcmp(path + len - 4, ".bst"))
			len -= 4;
		snprintf(out, sizeof(out), "%.*s.sqlite", (int)len, path);
		if (o->force) {
			ev[5] = "--force";
			ev[6] = (char *)path;
		}
		e = cmd_export(o->force ? 7 : 6, ev);
		if (e && !ret)
			ret = e;
	}
	return ret;
}

/* record and profile: PROFILE reads the command line as nsys does (nsys_args.h). */
static int record_main(const char *name, int profile, int argc, char **argv)
{
	struct record_args a = {};
	struct nsys_args n = {};
	char outbuf[64], named[4096], written[PATH_MAX] = "", *cmdline = cmd__join_args(argc, argv);
	int ret = 1, e;

	if (!cmdline || nsys_args__rewrite(&n, name, profile, argc, argv)) {
		free(cmdline);
		nsys_args__free(&n);
		return 1;
	}
	argc = n.argc;
	argv = n.argv;
	e = record_args__start(&a, name, cmdline, argc, argv, usage);
	if (e >= 0) {
		ret = e;
		goto out;
	}
	if (optind < argc)
		a.o.cmd = argv + optind;
	if (expand_output(&a.o, named, sizeof(named)))
		goto out;
	if (check_record(&a) || record_args__check(&a))
		goto out;
	if (!privileges__can_trace()) {
		FAIL("tracing needs root (or CAP_BPF and CAP_PERFMON): run it with sudo");
		goto out;
	}
	if (check_stacks(&a.o, a.stacks_given) || record_args__check_kernel("record", &a.o))
		goto out;
	a.o.thread_names = !a.o.dry_run; /* every thread shown by its threading name */
	if (a.o.dry_run)
		a.o.output = NULL; /* nothing is written */
	else if (!a.o.output)
		a.o.output = default_output(outbuf, sizeof(outbuf));
	a.o.verdict_line = stats__verdict_line;
	if (n.stats || n.export_sqlite) {
		a.o.written = note_written;
		a.o.written_arg = written;
	}
	record_args__libbpf_print(a.o.verbose);
	ret = recorder__run(&a.o);
	ret = after_written(&n, &a.o, written, ret);
out:
	record_args__free(&a);
	nsys_args__free(&n);
	free(cmdline);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	return record_main("record", 0, argc, argv);
}

int cmd_profile(int argc, char **argv)
{
	return record_main("profile", 1, argc, argv);
}
