// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The one option table of record, monitor and top, and its parser (record_options.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "family_record.h"
#include "flight_opts.h"
#include "kernel_features.h"
#include "parse.h"
#include "privileges.h"
#include "record_args.h"
#include "env.h"
#include "record_options.h"
#include "run_as.h"
#include "getopt_error.h"
#include "human.h"
#include "msg.h"
#include "unwind_maps.h"

#define R   RECORD_CMD_RECORD
#define M   RECORD_CMD_MONITOR
#define T   RECORD_CMD_TOP
#define RM  (R | M)
#define RMT (R | M | T)

#define DEFAULT_LISTEN	"127.0.0.1:9464"
#define DEFAULT_TOP	30
#define DEFAULT_GRACE	(120 * 1000000000ull)
#define DEFAULT_REFRESH 1000000000ull

/*
 * One option. HELP is --help's text, wrapped when printed; HELP_MONITOR is monitor's where
 * it differs. PARSE takes the value (NULL for a flag); 0, or 1 after saying what is wrong.
 */
struct rec_option {
	const char *name;
	char short_name;
	const char *arg; /* the value's name in --help; NULL: a flag */
	__u32 cmds;
	const char *help, *help_monitor;
	int (*parse)(struct record_args *a, const char *arg);
	const char *help_top; /* top's, where it differs from monitor's */
};

#define FAIL(...) msg__fail(__VA_ARGS__)

static int opt_output(struct record_args *a, const char *arg)
{
	a->o.output = arg;
	return 0;
}

static int opt_force(struct record_args *a, const char *arg)
{
	a->o.force = 1;
	return 0;
}

/* -t repeats add up, as nsys's --trace does: -t cuda,nvtx -t gil records the three. */
static int opt_trace(struct record_args *a, const char *arg)
{
	char *joined;

	if (asprintf(&joined, "%s%s%s", a->trace ?: "", a->trace ? "," : "", arg) < 0)
		return FAIL("out of memory");
	free(a->trace);
	a->trace = joined;
	return 0;
}

static int opt_pid(struct record_args *a, const char *arg)
{
	return record_args__pids(a->cmd, arg, &a->o);
}

static int opt_subprocesses(struct record_args *a, const char *arg)
{
	a->o.no_subprocesses = 0; /* py-spy's flag: what -p does anyway */
	return 0;
}

static int opt_no_subprocesses(struct record_args *a, const char *arg)
{
	a->o.no_subprocesses = 1;
	return 0;
}

static int opt_all(struct record_args *a, const char *arg)
{
	a->o.system_wide = 1;
	return 0;
}

static int opt_exclude_pid(struct record_args *a, const char *arg)
{
	struct record_opts pids = { 0 };

	/* -p's parsing (a thread names its process, no zombie, not bpfsight), then kept apart. */
	if (record_args__pids(a->cmd, arg, &pids))
		return 1;
	for (__u32 i = 0; i < pids.npids; i++) {
		if (a->o.nexclude_pids == RECORD_MAX_PIDS)
			return FAIL("too many --exclude-pid (at most %d): --exclude-comm names "
				    "processes by their name",
				    RECORD_MAX_PIDS);
		a->o.exclude_pids[a->o.nexclude_pids++] = pids.pids[i];
	}
	return 0;
}

static int opt_exclude_comm(struct record_args *a, const char *arg)
{
	size_t n = strlen(arg);

	if (!n || n >= BS_COMM_LEN)
		return FAIL(
			"bad --exclude-comm '%s': a process name as `ps -o comm` shows it, 1 to "
			"%d characters (the kernel keeps the first %d: memcheck-amd64-, "
			"qemu-x86_64)",
			arg, BS_COMM_LEN - 1, BS_COMM_LEN - 1);
	if (a->o.nexclude_comms == BS_EXCLUDE_COMMS)
		return FAIL("too many --exclude-comm (at most %d)", BS_EXCLUDE_COMMS);
	memset(a->o.exclude_comms[a->o.nexclude_comms], 0, BS_COMM_LEN);
	memcpy(a->o.exclude_comms[a->o.nexclude_comms++], arg, n);
	return 0;
}

static int opt_duration(struct record_args *a, const char *arg)
{
	int ret = parse_duration_ns(arg, &a->o.duration_ns);

	if (ret == -ERANGE)
		return FAIL("duration '%s' is out of range: at most 584 years (2^64 ns)", arg);
	if (ret == -EDOM)
		return FAIL("-d %s: a recording of no time records nothing; leave -d out to record "
			    "until %s",
			    arg,
			    a->cmd_bit == M ? "SIGTERM or Ctrl-C"
					    : "CMD or the -p processes exit, or Ctrl-C");
	if (ret)
		return FAIL("bad duration '%s': use e.g. 10, 10s, 500ms or 2m", arg);
	return 0;
}

static int opt_start_at(struct record_args *a, const char *arg)
{
	if (start_at__parse(arg, &a->o.start_at))
		return FAIL("bad --start-at '%s': /DUR starts at the next multiple of DUR of "
			    "wall-clock time (e.g. /10s), @HH:MM:SS at that local time",
			    arg);
	return 0;
}

static int opt_listen(struct record_args *a, const char *arg)
{
	a->listen = arg;
	return 0;
}

static int opt_top(struct record_args *a, const char *arg)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || n < 1 || n > 100000)
		return FAIL("bad --top '%s': how many processes get series of their own, 1 to "
			    "100000 (default %d)",
			    arg, DEFAULT_TOP);
	a->top_n = n;
	return 0;
}

static int opt_grace(struct record_args *a, const char *arg)
{
	if (parse_duration_ns(arg, &a->grace_ns))
		return FAIL("bad --exit-grace '%s': use e.g. 0, 30s or 5m", arg);
	return 0;
}

static int opt_kill(struct record_args *a, const char *arg)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "none", 0 },	  { "TERM", SIGTERM }, { "INT", SIGINT },
		     { "KILL", SIGKILL }, { "HUP", SIGHUP },   { "USR1", SIGUSR1 },
		     { "USR2", SIGUSR2 } };
	const char *s = strncasecmp(arg, "SIG", 3) ? arg : arg + 3;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcasecmp(s, sigs[i].name)) {
			a->o.kill_signal = sigs[i].sig;
			return 0;
		}
	return FAIL("bad --kill '%s': use none, TERM, INT, KILL, HUP, USR1 or USR2", arg);
}

/* --user: resolved now (run_as.h), so a bad one fails before anything starts. */
static int opt_user(struct record_args *a, const char *arg)
{
	return run_as__resolve(arg, &a->o);
}

static int opt_buffer(struct record_args *a, const char *arg)
{
	__u64 *b = &a->o.ringbuf_bytes;

	if (parse_size(arg, b) || *b < 4096 || (*b & (*b - 1)))
		return FAIL("bad --buffer-size '%s': a power of two of at least 4K, e.g. 64M", arg);
	/* The map's max_entries is a u32: 4G would wrap to 0. */
	if (*b > RECORD_MAX_RINGBUF)
		return FAIL("--buffer-size '%s' is too big: the kernel's ring buffer holds at most "
			    "2G",
			    arg);
	return 0;
}

/* --capture-range=KIND[ARG]: the family whose KIND it is opens and closes the ranges. */
static int opt_capture(struct record_args *a, const char *arg)
{
	return record_args__capture(a->cmd, arg, &a->o);
}

/* The names of the families that HAVE something, SEP between them: "cuda, nccl". */
static void names_of(char *buf, size_t len, const char *sep, int (*has)(const struct family *f))
{
	size_t used = 0;

	buf[0] = 0;
	for_each_family_while(fit, used < len)
		if (has(fit.f))
			used += snprintf(buf + used, len - used, "%s%s", used ? sep : "",
					 fit.f->name);
}

static int takes_stacks(const struct family *f)
{
	return f->record->stack_default_ns || (f->flags & FAMILY_STACKS_EVERY);
}

static int stacks_by_default(const struct family *f)
{
	return (f->flags & FAMILY_STACKS_DEFAULT) && takes_stacks(f);
}

static int stacks_by_default_targets(const struct family *f)
{
	return stacks_by_default(f) && (f->flags & FAMILY_STACKS_DEFAULT_ATTACH);
}

static int uses_shim(const struct family *f)
{
	return f->record->shim != NULL;
}

/* --stacks LIST: "none", or FAMILY[:THRESHOLD] entries (docs/STACKS.md). */
static int opt_stacks(struct record_args *a, const char *list)
{
	char *copy = strdup(list), *save = NULL, *tok, *colon, fams[256];
	struct record_opts *o = &a->o;
	int ret = 0;

	if (!copy)
		return 1;
	a->stacks_given = 1;
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++)
		o->stack_ns[i] = RECORD_STACKS_OFF;
	for (tok = strtok_r(copy, ",", &save); tok && !ret && strcmp(list, "none");
	     tok = strtok_r(NULL, ",", &save)) {
		int i;

		colon = strchr(tok, ':');
		if (colon)
			*colon++ = 0;
		for (i = 0; families[i] && strcmp(families[i]->name, tok); i++)
			;
		if (!families[i] || !takes_stacks(families[i])) {
			names_of(fams, sizeof(fams), ", ", takes_stacks);
			ret = FAIL("--stacks: '%s' takes no stacks; families that do: %s (or none)",
				   tok, fams);
			break;
		}
		o->stack_ns[i] = families[i]->record->stack_default_ns;
		if (colon && families[i]->record->stack_bytes && parse_size(colon, &o->stack_ns[i]))
			ret = FAIL("--stacks: bad size '%s' for %s: use e.g. 0, 64K or 1M", colon,
				   tok);
		else if (colon && !families[i]->record->stack_bytes &&
			 parse_threshold_ns(colon, &o->stack_ns[i]))
			ret = FAIL("--stacks: bad threshold '%s' for %s: use e.g. 0, 100us or 5ms",
				   colon, tok);
	}
	free(copy);
	return ret;
}

/*
 * --unwind=tables[:SIZE] or fp. The rows' map is allocated whole when a recording that takes
 * stacks starts: SIZE is what an operator gives the tables (12 bytes a row).
 */
static int opt_unwind(struct record_args *a, const char *arg)
{
	__u64 bytes;

	a->o.unwind_fp = !strcmp(arg, "fp");
	a->o.unwind_rows = 0;
	if (a->o.unwind_fp || !strcmp(arg, "tables"))
		return 0;
	if (strncmp(arg, "tables:", 7) || parse_size(arg + 7, &bytes) || bytes < (64ull << 10) ||
	    bytes > (1ull << 30))
		return FAIL("bad --unwind '%s': use tables (the default), tables:SIZE (the unwind "
			    "tables' memory, 64K to 1G, default %uM) or fp (frame pointers only)",
			    arg,
			    (unsigned)((__u64)BS_UNW_ROWS * sizeof(struct bs_unwind_row) >> 20));
	a->o.unwind_rows = bytes / sizeof(struct bs_unwind_row) & ~1ull; /* pairs of rows */
	return 0;
}

static int opt_inject(struct record_args *a, const char *arg)
{
	a->o.inject = 1;
	return 0;
}

static int opt_no_edges(struct record_args *a, const char *arg)
{
	a->o.no_edges = 1;
	return 0;
}

static int opt_bpf_stats(struct record_args *a, const char *arg)
{
	a->bpf_stats = 1;
	return 0;
}

static int opt_job_env(struct record_args *a, const char *arg)
{
	for (const char *c = arg; *c; c++)
		if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (c > arg && *c >= '0' && *c <= '9')))
			return FAIL("bad --job-label-env '%s': an environment variable's name "
				    "(SLURM_JOB_NAME)",
				    arg);
	if (!*arg)
		return FAIL("bad --job-label-env '': an environment variable's name "
			    "(SLURM_JOB_NAME)");
	a->job_env = arg;
	return 0;
}

static int opt_follow(struct record_args *a, const char *arg)
{
	a->follow = 1;
	return 0;
}

static int opt_ship(struct record_args *a, const char *arg)
{
	/* the rest of the URL is ship's to read (ch_http.h), once monitor starts */
	if (strncmp(arg, "clickhouse://", 13) && strncmp(arg, "http://", 7) &&
	    strncmp(arg, "https://", 8))
		return FAIL("bad --ship '%s': clickhouse://HOST:PORT/JOB (or http://, https://)",
			    arg);
	a->ship_url = arg;
	return 0;
}

static int opt_ship_interval(struct record_args *a, const char *arg)
{
	if (parse_duration_ns(arg, &a->ship_interval_ns) || a->ship_interval_ns < 100000000ull)
		return FAIL("bad --ship-interval '%s': a duration of at least 100ms (10s, 1m)",
			    arg);
	a->ship_opts = 1;
	return 0;
}

static int opt_ship_spool(struct record_args *a, const char *arg)
{
	if (!*arg)
		return FAIL("--ship-spool needs a folder");
	a->ship_spool = arg;
	a->ship_opts = 1;
	return 0;
}

static int opt_ship_spool_max(struct record_args *a, const char *arg)
{
	if (parse_size(arg, &a->ship_spool_max) || !a->ship_spool_max)
		return FAIL("bad --ship-spool-max '%s': a size (64M, 1G)", arg);
	a->ship_opts = 1;
	return 0;
}

static int opt_dry_run(struct record_args *a, const char *arg)
{
	a->o.dry_run = 1;
	return 0;
}

static int opt_features(struct record_args *a, const char *arg)
{
	if (!privileges__can_trace())
		return FAIL("probing the kernel needs root (or CAP_BPF and CAP_PERFMON)");
	kfeatures__print(stdout);
	a->done = 1;
	return 0;
}

static int opt_flight(struct record_args *a, const char *arg, int which)
{
	return flight_opts__parse(&a->o.flight, which, arg, a->cmd) ? 1 : 0;
}

static int opt_flight_window(struct record_args *a, const char *arg)
{
	return opt_flight(a, arg, OPT_FLIGHT);
}

static int opt_flight_trigger(struct record_args *a, const char *arg)
{
	return opt_flight(a, arg, OPT_FLIGHT_TRIGGER);
}

static int opt_flight_after(struct record_args *a, const char *arg)
{
	return opt_flight(a, arg, OPT_FLIGHT_AFTER);
}

static int opt_flight_cooldown(struct record_args *a, const char *arg)
{
	return opt_flight(a, arg, OPT_FLIGHT_COOLDOWN);
}

static int opt_flight_max_dumps(struct record_args *a, const char *arg)
{
	return opt_flight(a, arg, OPT_FLIGHT_MAX_DUMPS);
}

static int opt_verbose(struct record_args *a, const char *arg)
{
	a->o.verbose = 1;
	return 0;
}

static int opt_interval(struct record_args *a, const char *arg)
{
	if (parse_duration_ns(arg, &a->interval_ns) || a->interval_ns < 100000000ull ||
	    a->interval_ns > 3600000000000ull)
		return FAIL("bad --interval '%s': the time between refreshes, from 100ms to 1h, "
			    "e.g. 2 or 500ms (default 1s)",
			    arg);
	return 0;
}

static int opt_iterations(struct record_args *a, const char *arg)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || n < 1 || n > 1000000000)
		return FAIL("bad --iterations '%s': how many refreshes before top exits, from 1",
			    arg);
	a->iterations = n;
	return 0;
}

static int opt_batch(struct record_args *a, const char *arg)
{
	a->batch = 1;
	return 0;
}

static int opt_sort(struct record_args *a, const char *arg)
{
	a->sort = arg; /* the columns are known once the families are: cmd_top checks it */
	return 0;
}

static int opt_functions(struct record_args *a, const char *arg)
{
	a->functions = 1;
	return 0;
}

static int opt_ledger(struct record_args *a, const char *arg)
{
	a->ledger = 1;
	return 0;
}

static int opt_help(struct record_args *a, const char *arg)
{
	a->done = a->help = 1;
	return 0;
}

/* Where the families' options go in the table (and in --help). */
#define FAMILY_OPTIONS_HERE                                                                        \
	{                                                                                          \
		.name = NULL, .cmds = RMT                                                          \
	}

// clang-format off
static const struct rec_option table[] = {
	{ "output", 'o', "FILE", RM,
	  "trace file (default: reportN.bst, first unused N)",
	  "with --flight-recorder: its dumps are FILE's stem + -N.bst", opt_output },
	{ "force", 'f', NULL, RM, "overwrite FILE if it exists",
	  "overwrite dump files that exist", opt_force },
	{ "trace", 't', "LIST", RMT,
	  "families to record, comma-separated (default: all but the opt-in ones)",
	  "families, comma-separated (default: those with metrics, all but the opt-in ones "
	  "with --flight-recorder)",
	  opt_trace,
	  "families, comma-separated (default: those with columns, below)" },
	{ "pid", 'p', "PID", RMT,
	  "attach to PID (repeatable, or comma-separated); its threads and child processes, "
	  "those it has (a DataLoader's workers) and those it starts, are traced",
	  "only PID and its child processes, existing and future (repeatable); it ends when they "
	  "have all exited",
	  opt_pid },
	{ "subprocesses", 0, NULL, RMT,
	  "-p: take in PID's existing child processes too (the default; py-spy's spelling)", NULL,
	  opt_subprocesses },
	{ "no-subprocesses", 0, NULL, RMT,
	  "-p: only PID and the children it starts while recording, not those it has now",
	  NULL, opt_no_subprocesses },
	{ "system-wide", 'a', NULL, RMT,
	  "every process, including those started while recording",
	  "every process (the default)", opt_all },
	{ "exclude-pid", 0, "PID", RMT,
	  "-a: leave out PID and its child processes, existing and future (repeatable, or "
	  "comma-separated): nothing of theirs is recorded, and no probe is written into their "
	  "memory (a program under Valgrind, QEMU's user mode, Pin or DynamoRIO reads one as its "
	  "own code)",
	  "leave out PID and its child processes, existing and future (repeatable): nothing of "
	  "theirs is monitored, no probe is written into their memory",
	  opt_exclude_pid, "leave out PID and its child processes (repeatable): not shown, no "
	  "probe written into their memory" },
	{ "exclude-comm", 0, "NAME", RMT,
	  "-a: leave out the processes named NAME (as `ps -o comm` shows it: memcheck-amd64-, "
	  "qemu-x86_64), from their start or the exec that names them so, and their child "
	  "processes (repeatable, at most 8)",
	  "leave out the processes named NAME (`ps -o comm`), from their start or exec on, and "
	  "their child processes (repeatable, at most 8)",
	  opt_exclude_comm, NULL },
	{ "duration", 'd', "DUR", RMT,
	  "stop after DUR (10, 10s, 500ms, 2m); default: until CMD or the -p processes exit, or "
	  "Ctrl-C",
	  "stop after DUR (default: until SIGTERM or Ctrl-C)", opt_duration },
	{ "start-at", 0, "/DUR|@HH:MM:SS", R,
	  "attach, then start recording (and a launched CMD) at the next multiple of DUR of "
	  "wall-clock time (/10s) or at a local time (@14:30:00): recorders of hosts whose "
	  "clocks agree start together", NULL, opt_start_at },
	{ "listen", 'l', "ADDR:PORT", M,
	  "where /metrics is served (default " DEFAULT_LISTEN ", this machine only; a bare "
	  "PORT is 127.0.0.1:PORT; :PORT or 0.0.0.0:PORT for a Prometheus elsewhere; port 0 "
	  "picks a free one)", NULL, opt_listen },
	{ "top", 0, "N", M,
	  "processes with series of their own (default 30): a free slot at a process's first "
	  "event, given back at its exit or after 10 s idle; the others add up under "
	  "pid=\"other\"", NULL, opt_top },
	{ "exit-grace", 0, "DUR", M,
	  "an exited process's series stay DUR (default 2m); with -p, the monitor serves the "
	  "last interval this long after its targets exit", NULL, opt_grace },
	{ "job-label-env", 0, "NAME", M,
	  "the environment variable whose value is a process's job label (default: "
	  "TORCHELASTIC_RUN_ID, else MASTER_ADDR:MASTER_PORT, else its command line)", NULL,
	  opt_job_env },
	{ "follow", 0, NULL, M,
	  "with -p: when the targets exit, wait up to --exit-grace for a process of the same "
	  "job (job label or command line) and monitor it, series continued", NULL,
	  opt_follow },
	{ "kill", 0, "SIG|none", R,
	  "launch mode: signal sent to CMD when -d ends (default TERM, as nsys)", NULL, opt_kill },
	{ "user", 'u', "USER", R,
	  "launch mode: run CMD as USER (a name or uid of /etc/passwd, with its groups of "
	  "/etc/group; or UID:GID; sudo: the user who ran sudo, SUDO_UID), as strace -u; "
	  "default: as bpfsight runs (root under sudo, said in a note)",
	  NULL, opt_user },
	{ "interval", 'i', "DUR", T, "time between refreshes (default 1s)", NULL, opt_interval },
	{ "iterations", 'n', "N", T, "refresh N times, then exit", NULL, opt_iterations },
	{ "batch", 'b', NULL, T,
	  "plain text frames on stdout, one after the other, no screen control (as top -b; the "
	  "default when stdout is not a terminal)", NULL, opt_batch },
	{ "sort", 's', "KEY", T,
	  "the column rows are sorted by, highest first: a key of the columns below (default "
	  "cpu; < and > change it while running)", NULL, opt_sort },
	{ "functions", 0, NULL, T,
	  "start in the function view (f switches): py-spy top's %Own, %Total, OwnTime, "
	  "TotalTime per function and line of the CPU samples (-s own, total, own-time, "
	  "total-time); records the family that samples, whatever -t says", NULL, opt_functions },
	{ "ledger", 0, NULL, T,
	  "start in the ledger view (w switches): where the time of the job's critical thread went "
	  "each interval, as the verdict's first lines word it (with -p)", NULL, opt_ledger },
	{ "buffer-size", 0, "SIZE", RMT, "BPF ring buffer (default 16M, a power of two)", NULL,
	  opt_buffer },
	{ "capture-range", 0, "KIND", R,
	  "keep only what happens inside the ranges a family marks, as nsys: cudaProfilerApi "
	  "(between cudaProfilerStart and cudaProfilerStop, repeated ranges allowed), "
	  "nvtx:NAME (inside NVTX ranges whose text is NAME in the default domain; NAME@DOMAIN, "
	  "NAME@* any), steps:N or steps:SKIP+N (-t torch: N whole training steps from the next "
	  "optimizer step's end, after SKIP more, then the recording stops), steps:SKIP+NxREPEAT "
	  "(torch.profiler's schedule: REPEAT windows of N steps, each after SKIP, each to a file "
	  "of its own, -o's stem + -1.bst, -2.bst, ...)", NULL, opt_capture },
	{ "stacks", 0, "LIST", R,
	  "events that carry the calling thread's stack (native and Python): "
	  "FAMILY[:THRESHOLD],... (its events of at least THRESHOLD; :0 every one), or none",
	  NULL, opt_stacks },
	{ "unwind", 0, "HOW", RM,
	  "how native stacks are walked: tables (the default: the unwind tables of .eh_frame of "
	  "every file mapped, loaded before its first stack, frame pointers where a file has "
	  "them; tables:SIZE for their memory, default 128M) or fp (frame pointers only)",
	  NULL, opt_unwind },
	FAMILY_OPTIONS_HERE,
	{ "inject", 0, NULL, R,
	  "-p/-a with -t gpu or nvtx: load the cupti-shim into running processes that lack it "
	  "(-p: each target; -a: those using libcudart/libcuda), through ptrace, x86-64 only; "
	  "see docs/GPU.md, \"Injection\"", NULL, opt_inject },
	{ "no-edges", 0, NULL, R,
	  "do not read the job's threads (state, system call, stack) when the recording starts "
	  "(-p) and ends: what was open at its edges is then unknown (docs/USAGE.md)",
	  NULL, opt_no_edges },
	{ "bpf-stats", 0, NULL, M,
	  "turn on the kernel's BPF run-time statistics for bpfsight_bpf_run_seconds_total (two "
	  "clock reads per probe hit: see bench/RESULTS.md)", NULL, opt_bpf_stats },
	{ "ship", 0, "URL", M,
	  "every --ship-interval, the interval's values (counters' increments, gauges as read) "
	  "to ClickHouse, clickhouse://HOST:PORT/JOB (credentials as ship takes them; "
	  "docs/CLICKHOUSE.md, \"monitor's intervals\")", NULL, opt_ship },
	{ "ship-interval", 0, "DUR", M, "--ship's interval (default 10s)", NULL,
	  opt_ship_interval },
	{ "ship-spool", 0, "DIR", M,
	  "where --ship's intervals wait for the server (default: ship's, the cache's "
	  "ship/HOST_PORT)", NULL, opt_ship_spool },
	{ "ship-spool-max", 0, "SIZE", M,
	  "--ship's spool bound (default 64M): an interval past it is not spooled, counted in "
	  "bpfsight_ship_intervals_dropped_total, its counters' increments go to the next one",
	  NULL, opt_ship_spool_max },
	{ "dry-run", 0, NULL, R,
	  "find and list every uprobe site (object, symbol, offset, instruction, cost class); "
	  "record nothing. With CMD, runs it and lists what was found", NULL, opt_dry_run },
	{ "features", 0, NULL, R,
	  "what this kernel offers (probed) and the fallback each absence selects; record "
	  "nothing", NULL, opt_features },
	{ "flight-recorder", 0, "DUR[,SIZE]", RM,
	  "keep at least the last DUR in memory (compressed, at most SIZE, default 256M) and "
	  "write it only when triggered, to FILE's stem + -N.bst; SIGUSR1 triggers", NULL,
	  opt_flight_window },
	{ "trigger", 0, "FAMILY:NAME[>DUR][@WHO]", RM,
	  "dump when an event of FAMILY named NAME (* any) lasts over DUR, e.g. "
	  "osrt:nanosleep>250ms; with no DUR, a trigger FAMILY offers of its own, each of whose "
	  "events dumps (a bad NAME lists them); @WHO: only process WHO's events (a pid, or its "
	  "name as ps shows it), e.g. gil:*>100ms@python3 (repeatable); hang:DUR: a process of the job "
	  "made no progress for DUR (a call entered and not left, no step ended): the dump holds "
	  "every thread of the job too",
	  NULL, opt_flight_trigger },
	{ "trigger-after", 0, "DUR", RM,
	  "keep recording DUR after a trigger before writing (default 0s)", NULL,
	  opt_flight_after },
	{ "trigger-cooldown", 0, "DUR", RM,
	  "ignore triggers for DUR after a dump (default 10s)", NULL, opt_flight_cooldown },
	{ "max-dumps", 0, "N", RM,
	  "write at most N dumps, then ignore triggers (default 10; 0 = no limit)", NULL,
	  opt_flight_max_dumps },
	{ "verbose", 'v', NULL, RMT,
	  "libbpf's debug output, and a line when the probes of each file (library, program) "
	  "are live", "libbpf's debug output", opt_verbose },
	{ "help", 'h', NULL, RMT, "this help", NULL, opt_help },
};
// clang-format on

#define NTABLE	    (sizeof(table) / sizeof(table[0]))
#define MAX_OPTIONS (NTABLE + 32) /* with the families' own */
#define FAMILY_VAL  0x1000	  /* getopt values: FAMILY_VAL + family * FAMILY_OPTS + option */
#define FAMILY_OPTS 16		  /* so at most 16 options per family (add_long) */
#define TABLE_VAL   0x100	  /* getopt values of long-only table entries: + index */

static __u32 cmd_bit(const char *cmd)
{
	return !strcmp(cmd, "monitor") ? M : !strcmp(cmd, "top") ? T : R;
}

/* A family's option goes to top where it goes to monitor: top records as monitor does. */
static int takes(__u32 family_cmds, __u32 cmds)
{
	return (family_cmds & cmds) || ((cmds & T) && (family_cmds & M));
}

/*
 * Walk CMD's options in --help's order, the families' at their place: FN gets a table entry
 * (F NULL) or a family's option (F its family).
 */
static void each_option(__u32 cmds,
			void (*fn)(void *arg, const struct rec_option *t, int ti,
				   const struct family *f, int fi, int oi),
			void *arg)
{
	for (size_t t = 0; t < NTABLE; t++) {
		if (!(table[t].cmds & cmds))
			continue;
		if (table[t].name) {
			fn(arg, &table[t], t, NULL, -1, -1);
			continue;
		}
		for_each_family(it)
			for (int k = 0; it.f->record->options && it.f->record->options[k].name; k++)
				if (takes(it.f->record->options[k].cmds, cmds))
					fn(arg, NULL, -1, it.f, it.i, k);
	}
}

struct long_build {
	struct option *out;
	int n;
};

static void add_long(void *arg, const struct rec_option *t, int ti, const struct family *f, int fi,
		     int oi)
{
	struct long_build *b = arg;
	const char *name = t ? t->name : f->record->options[oi].name;
	const char *val = t ? t->arg : f->record->options[oi].arg;

	if (b->n >= (int)MAX_OPTIONS - 1 || oi >= FAMILY_OPTS)
		return;
	b->out[b->n++] = (struct option){
		.name = name,
		.has_arg = val ? required_argument : no_argument,
		.val = t ? (t->short_name ?: TABLE_VAL + ti) : FAMILY_VAL + fi * FAMILY_OPTS + oi,
	};
}

static struct option record_longs[MAX_OPTIONS], monitor_longs[MAX_OPTIONS], top_longs[MAX_OPTIONS];

const struct option *record_args__long_options(const char *cmd)
{
	__u32 bit = cmd_bit(cmd);
	struct option *out = bit == R ? record_longs : bit == M ? monitor_longs : top_longs;
	struct long_build b = { out, 0 };

	if (!out[0].name) /* made once: the tables never change */
		each_option(cmd_bit(cmd), add_long, &b);
	return out;
}

const struct option *record_long_options(void)
{
	return record_args__long_options("record");
}

const struct option *monitor_long_options(void)
{
	return record_args__long_options("monitor");
}

const struct option *top_long_options(void)
{
	return record_args__long_options("top");
}

/* "+o:ft:..." for getopt_long: record stops at CMD (its own options are CMD's). */
static void short_options(__u32 cmds, char *buf, size_t len)
{
	size_t n = 0;

	if (cmds == R)
		buf[n++] = '+';
	for (size_t t = 0; t < NTABLE && n + 3 < len; t++)
		if (table[t].short_name && (table[t].cmds & cmds)) {
			buf[n++] = table[t].short_name;
			if (table[t].arg)
				buf[n++] = ':';
		}
	buf[n] = 0;
}

void record_args__short_options(const char *cmd, char *buf, size_t len)
{
	short_options(cmd_bit(cmd), buf, len);
}

int record_args__init(struct record_args *a, const char *cmd)
{
	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
	a->cmd_bit = cmd_bit(cmd);
	a->o.ringbuf_bytes = 16 << 20;
	a->o.kill_signal = SIGTERM;
	a->o.cmd_name = a->cmd_bit == R ? NULL : cmd;
	a->listen = DEFAULT_LISTEN;
	a->top_n = DEFAULT_TOP;
	a->grace_ns = DEFAULT_GRACE;
	a->ship_interval_ns = 10 * 1000000000ull;
	a->ship_spool_max = 64ull << 20;
	a->interval_ns = DEFAULT_REFRESH;
	flight_opts__init(&a->o.flight);
	/* Stacks are asked for (docs/STACKS.md); metrics need none. */
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++)
		a->o.stack_ns[i] = RECORD_STACKS_OFF;
	for_each_family(it) {
		if (!it.f->record->opts_size)
			continue;
		a->o.family_opts[it.i] = calloc(1, it.f->record->opts_size);
		if (!a->o.family_opts[it.i])
			return -ENOMEM;
		/* top records as monitor does: monitor's defaults (e.g. osrt's threshold) */
		if (it.f->record->opts_init)
			it.f->record->opts_init(a->o.family_opts[it.i],
						a->cmd_bit == T ? "monitor" : cmd);
	}
	return 0;
}

void record_args__free(struct record_args *a)
{
	free(a->trace);
	a->trace = NULL;
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++) {
		free(a->o.family_opts[i]);
		a->o.family_opts[i] = NULL;
	}
}

int record_args__start(struct record_args *a, const char *cmd, const char *cmdline, int argc,
		       char **argv, void (*usage)(FILE *f))
{
	int e;

	if (record_args__init(a, cmd) || !cmdline)
		return msg__fail("out of memory");
	a->o.cmdline = cmdline;
	e = record_args__parse(a, argc, argv);
	if (e == 2)
		usage(stderr);
	if (e)
		return 1;
	if (a->done && a->help) /* --help; --features answered already */
		usage(stdout);
	return a->done ? 0 : -1;
}

int record_args__parse(struct record_args *a, int argc, char **argv)
{
	const struct option *longs = record_args__long_options(a->cmd);
	char shorts[64];
	int c;

	short_options(a->cmd_bit, shorts, sizeof(shorts));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		int ret = -1;

		if (c >= FAMILY_VAL) {
			int fi = (c - FAMILY_VAL) / FAMILY_OPTS,
			    oi = (c - FAMILY_VAL) % FAMILY_OPTS;

			ret = families[fi]->record->options[oi].parse(a->o.family_opts[fi], optarg,
								      a->cmd);
			if (!ret && (families[fi]->record->options[oi].cmds & FAMILY_OPT_IMPLIES))
				a->implied |= 1ull << fi;
		} else if (c >= TABLE_VAL && c < TABLE_VAL + (int)NTABLE) {
			ret = table[c - TABLE_VAL].parse(a, optarg);
		} else {
			for (size_t t = 0; t < NTABLE; t++)
				if (c && table[t].short_name == c && (table[t].cmds & a->cmd_bit))
					ret = table[t].parse(a, optarg);
			/* One meaning for -f: --format, where stats and export have one. */
			if (c == 'f' && optind > 1 && strncmp(argv[optind - 1], "--", 2))
				pr_info("-f is deprecated here: spell it --force (-f is "
					"--format in stats and export)\n");
		}
		if (ret < 0) { /* getopt's '?': one line says what is wrong */
			getopt_error__print(a->cmd, argc, argv, shorts, longs);
			return 1;
		}
		if (ret || a->done)
			return ret;
	}
	return 0;
}

/* --help: "  -o, --output FILE" in 27 columns, the text wrapped to 80. */
static void print_one(FILE *f, char short_name, const char *name, const char *arg, const char *help)
{
	char head[64];
	int col, n = snprintf(head, sizeof(head), "  %c%c%s--%s%s%s", short_name ? '-' : ' ',
			      short_name ?: ' ', short_name ? ", " : "  ", name, arg ? " " : "",
			      arg ?: "");

	fputs(head, f);
	if (n > 25) {
		fputc('\n', f);
		n = 0;
	}
	fprintf(f, "%*s", 27 - n, "");
	col = 27;
	while (*help) {
		size_t w = strcspn(help, " ");

		if (col > 27 && col + 1 + (int)w > 80) {
			fprintf(f, "\n%27s", "");
			col = 27;
		} else if (col > 27) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)w, help);
		col += w;
		help += w;
		help += strspn(help, " ");
	}
	fputc('\n', f);
}

struct help_ctx {
	FILE *f;
	__u32 cmds;
};

/* "100us", "1ms": a threshold as --stacks takes it. */
static void threshold_text(__u64 ns, char *buf, size_t len)
{
	if (ns && !(ns % 1000000))
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
	else if (ns && !(ns % 1000))
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

/* "1M", "64K": a size as --stacks takes it. */
static void size_text(__u64 bytes, char *buf, size_t len)
{
	if (bytes && !(bytes % (1 << 20)))
		snprintf(buf, len, "%lluM", (unsigned long long)(bytes >> 20));
	else if (bytes && !(bytes % 1024))
		snprintf(buf, len, "%lluK", (unsigned long long)(bytes >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

static void print_stack_families(FILE *f)
{
	char line[640], thr[32], dflt[128];
	size_t used;

	used = snprintf(line, sizeof(line), "families and their default THRESHOLD:");
	for_each_family_while(fit, used < sizeof(line)) {
		if (!takes_stacks(fit.f))
			continue;
		if (fit.f->record->stack_bytes)
			size_text(fit.f->record->stack_default_ns, thr, sizeof(thr));
		else
			threshold_text(fit.f->record->stack_default_ns, thr, sizeof(thr));
		used += snprintf(line + used, sizeof(line) - used, " %s:%s", fit.f->name, thr);
	}
	names_of(dflt, sizeof(dflt), ",", stacks_by_default);
	if (used < sizeof(line))
		used += snprintf(line + used, sizeof(line) - used, ". Default: %s",
				 dflt[0] ? dflt : "none");
	names_of(dflt, sizeof(dflt), ",", stacks_by_default_targets);
	if (dflt[0] && used < sizeof(line))
		snprintf(line + used, sizeof(line) - used,
			 " (%s: with -p only, not -a, a command or --flight-recorder)", dflt);
	fprintf(f, "%27s", "");
	human__wrap(f, line, 80, 27, 27);
}

static void print_option(void *arg, const struct rec_option *t, int ti, const struct family *f,
			 int fi, int oi)
{
	const struct help_ctx *h = arg;

	char fams[256];

	if (t)
		print_one(h->f, t->short_name, t->name, t->arg,
			  h->cmds == T && t->help_top		   ? t->help_top
			  : (h->cmds & (M | T)) && t->help_monitor ? t->help_monitor
								   : t->help);
	else
		print_one(h->f, 0, f->record->options[oi].name, f->record->options[oi].arg,
			  f->record->options[oi].help);
	if (t && t->parse == opt_trace) { /* the families there are, on a line of their own */
		family__list_selectable(fams, sizeof(fams));
		fprintf(h->f, "%27savailable: %s\n", "", fams);
	}
	if (t && t->parse == opt_stacks) /* which take stacks, at what, and which by default */
		print_stack_families(h->f);
}

void record_args__print_options(FILE *f, const char *cmd)
{
	struct help_ctx h = { f, cmd_bit(cmd) };

	each_option(h.cmds, print_option, &h);
}

static int recorded(const struct record_opts *o, const struct family *f)
{
	for_each_family(it)
		if (it.f == f)
			return !!(o->families & (1ull << it.i));
	return 0;
}

/* 1 when O records a family that records through the cupti-shim (--inject loads it). */
static int records_shim(const struct record_opts *o)
{
	for_each_family(it)
		if (uses_shim(it.f) && (o->families & (1ull << it.i)))
			return 1;
	return 0;
}

int record_args__check(struct record_args *a)
{
	struct record_opts *o = &a->o;
	char fams[128];

	if (o->system_wide && o->npids)
		return FAIL("-a %s every process already: drop -p, or drop -a to %s only the -p "
			    "processes and their children",
			    a->cmd_bit == R   ? "traces"
			    : a->cmd_bit == M ? "monitors"
					      : "shows",
			    a->cmd_bit == R   ? "trace"
			    : a->cmd_bit == M ? "monitor"
					      : "show");
	if ((o->nexclude_pids || o->nexclude_comms) &&
	    (o->npids || (a->cmd_bit == R && !o->system_wide)))
		return FAIL("--exclude-pid and --exclude-comm leave processes out of every process "
			    "(%s): %s",
			    a->cmd_bit == R ? "-a" : "without -p",
			    a->cmd_bit == R
				    ? "add -a, or drop them (a launched command or -p "
				      "touches no other process)"
				    : "drop -p, or drop them (-p touches no other process)");
	if ((o->nexclude_pids || o->nexclude_comms) && !kfeature__has(KF_UPROBE_MULTI))
		return FAIL("--exclude-pid and --exclude-comm need uprobe_multi links (Linux 6.6), "
			    "which this kernel lacks: without them a probe is written into every "
			    "process that maps its file");
	if (flight_opts__check(&o->flight, a->cmd))
		return 1;
	if (a->trace) {
		if (record_args__families(a->cmd, a->trace, &o->families, &o->families_explicit,
					  &o->families_named))
			return 1;
	} else if (a->cmd_bit == T) { /* top records what it shows: the families with columns */
		for_each_family(it)
			if (it.f->top && !(it.f->flags & FAMILY_OPT_IN))
				o->families |= 1ull << it.i;
	} else if (a->cmd_bit == M && !o->flight.window_ns) {
		/*
		 * monitor serves metrics: the families that have some. One without (nvtx) would
		 * turn its records on in every cupti-shim of the machine for nothing; the flight
		 * recorder's dumps keep them all.
		 */
		for_each_family(it)
			if (it.f->metrics && !(it.f->flags & FAMILY_OPT_IN))
				o->families |= 1ull << it.i;
	}
	/*
	 * top -p: the samples of its function view too (f), py-spy top's view of a process;
	 * --functions asks for them whatever -t says. Not every process's by default (-a): their
	 * stacks would be symbolized for the whole machine.
	 */
	for_each_family_while(fit, a->cmd_bit == T)
		if (family__samples(fit.f) && (a->functions || (o->npids && !a->trace)))
			o->families |= 1ull << fit.i;
	/* top -p: the threads' timeline too, for the ledger view (w) */
	for_each_family_while(fit, a->cmd_bit == T)
		if ((fit.f->flags & FAMILY_TIMELINE) && (a->ledger || (o->npids && !a->trace)))
			o->families |= 1ull << fit.i;
	record_args__default_families(o);
	/*
	 * A recording of a job (-p, launch) and the flight recorder sample its CPUs by default
	 * (99 Hz): the verdict's ledger splits a thread's time on a CPU by them, where in the
	 * job's code it went (bench/RESULTS.md has the cost). Not -a's plain recording, monitor
	 * or top: every process of the machine would be sampled and symbolized.
	 */
	for_each_family_while(fit, a->cmd_bit == R && !o->families_explicit)
		if (family__samples(fit.f) &&
		    (o->cmd || (o->npids && !o->system_wide) || o->flight.window_ns))
			o->families |= 1ull << fit.i;
	o->families |= a->implied; /* after the defaults: an option adds to them */
	/*
	 * The families whose stacks are on by default; top -p's too, for its ledger view (w): its
	 * waits are named by the places they block in (without, a lock job's intervals said "a
	 * futex" for its threading.Lock, named only where a system call's stack happened to be).
	 */
	if ((a->cmd_bit == R ||
	     (a->cmd_bit == T && o->npids && !o->system_wide && (a->ledger || !a->trace))) &&
	    !a->stacks_given)
		for_each_family_slot(it, o->stack_ns)
			if ((it.f->flags & FAMILY_STACKS_DEFAULT) &&
			    (o->families & (1ull << it.i)) &&
			    !((o->system_wide || o->flight.window_ns || o->cmd || !o->npids) &&
			      (it.f->flags & FAMILY_STACKS_DEFAULT_ATTACH)))
				*it.slot = it.f->record->stack_default_ns;
	for_each_family_slot(it, o->stack_ns)
		if (*it.slot != RECORD_STACKS_OFF && !(o->families & (1ull << it.i)))
			return FAIL("--stacks=%s: the %s family is not recorded: add it to -t",
				    it.f->name, it.f->name);
	if (o->capture && !recorded(o, o->capture))
		return FAIL("--capture-range=%s%s%s needs the %s family: add %s to -t",
			    o->capture->record->capture->kind, o->capture_arg ? ":" : "",
			    o->capture_arg ?: "", o->capture->name, o->capture->name);
	if (record_opts__capture_files(o) && o->flight.window_ns)
		return FAIL(
			"--capture-range=%s%s%s writes a file per range: drop --flight-recorder",
			o->capture->record->capture->kind, o->capture_arg ? ":" : "",
			o->capture_arg ?: "");
	if (o->inject && !records_shim(o)) {
		names_of(fams, sizeof(fams), " or ", uses_shim);
		return FAIL("--inject loads the cupti-shim for -t %s: add one of them to -t", fams);
	}
	return 0;
}
