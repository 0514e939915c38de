// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight record: parse and check everything a user can get wrong, then run a recording. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "commands.h"
#include "family.h"
#include "kernel_features.h"
#include "parse.h"
#include "proc_meta.h"
#include "record_args.h"
#include "recorder.h"

static void usage(FILE *f)
{
	char fams[256];

	family__list_selectable(fams, sizeof(fams));
	fprintf(f,
		"usage: bpfsight record [OPTIONS] [--] CMD [ARGS...]   trace CMD and its children\n"
		"       bpfsight record [OPTIONS] -p PID [-p PID]...   attach to running processes\n"
		"       bpfsight record [OPTIONS] -a                    trace the whole system\n"
		"\n"
		"  -o, --output FILE        trace file (default: reportN.bst, first unused N)\n"
		"  -f, --force              overwrite FILE if it exists\n"
		"  -t, --trace LIST         families to record, comma-separated (default: all but\n"
		"                           cpu)\n"
		"                           available: %s\n"
		"  -p, --pid PID            attach to PID (repeatable, or comma-separated); its\n"
		"                           threads and future children are traced\n"
		"  -a, --system-wide        every process, including those started while recording\n"
		"  -d, --duration DUR       stop after DUR (10, 10s, 500ms, 2m); default: until CMD\n"
		"                           or the -p processes exit, or Ctrl-C\n"
		"      --kill SIG|none      launch mode: signal sent to CMD when -d ends\n"
		"                           (default TERM, as nsys)\n"
		"      --osrt-threshold DUR syscalls shorter than DUR are counted in-kernel, not\n"
		"                           recorded one by one (default 1us; 0 records all)\n"
		"      --buffer-size SIZE   BPF ring buffer (default 16M, a power of two)\n"
		"      --capture-range=cudaProfilerApi\n"
		"                           keep only what happens between cudaProfilerStart and\n"
		"                           cudaProfilerStop (repeated ranges allowed), as nsys\n"
		"      --capture-range=nvtx:NAME\n"
		"                           keep only what happens inside NVTX ranges whose text\n"
		"                           is NAME (default domain; NAME@DOMAIN, NAME@* any)\n"
		"      --gil-mode MODE      default: probe only the GIL's contended path (waits;\n"
		"                           costs nothing while uncontended); full: also every\n"
		"                           take_gil/drop_gil for exact hold times: 3 probe hits\n"
		"                           (~1.8 us here) per GIL release/acquire, an I/O loop\n"
		"                           releasing the GIL twice per iteration ran 7x slower;\n"
		"                           CPU-bound contention is unaffected\n"
		"      --stacks LIST        events that carry the calling thread's stack (native and\n"
		"                           Python): FAMILY[:THRESHOLD],... (cuda, nccl: calls of\n"
		"                           at least THRESHOLD, default 100us; :0 every call) or\n"
		"                           none (the default)\n"
		"      --sample-rate HZ     cpu: samples per second of each CPU (default 99, 1 to\n"
		"                           10000); the cpu family is recorded only when -t names it\n"
		"      --inject             -p/-a with -t gpu or nvtx: load the cupti-shim into\n"
		"                           running processes that lack it (-p: each target; -a:\n"
		"                           those using libcudart/libcuda), through ptrace, x86-64\n"
		"                           only; see docs/GPU.md, \"Injection\"\n"
		"      --dry-run            find and list every uprobe site (object, symbol,\n"
		"                           offset, instruction, cost class); record nothing.\n"
		"                           With CMD, runs it and lists what was found\n"
		"      --features           what this kernel offers (probed) and the fallback\n"
		"                           each absence selects; record nothing\n"
		"%s"
		"  -v, --verbose            libbpf's debug output, and a line when the probes\n"
		"                           of each file (library, program) are live\n"
		"  -h, --help               this help\n"
		"\n"
		"Needs root, or CAP_BPF + CAP_PERFMON. Exit status: CMD's in launch mode, else 0,\n"
		"or 1 on error. SIGINT/SIGTERM stop the recording and close the file cleanly;\n"
		"SIGUSR1 flushes it to disk and goes on (with --flight-recorder: dumps).\n",
		fams, flight_opts_help);
}

static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bpfsight record: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* The families --stacks takes, for its errors: "cuda, nccl". */
static void stack_families(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; families[i] && used < len; i++)
		if (families[i]->stack_default_ns)
			used += snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
					 families[i]->name);
}

/*
 * Stacks are read in a bpf_loop (Linux 5.17+), probed (kernel_features.h; BPFSIGHT_NO_BPF_LOOP=1
 * or BPFSIGHT_FORCE_FALLBACKS=bpf_loop forces its absence, for the tests). Without it, the stacks a family takes by default are off
 * (said once), and the ones asked for (--stacks, -t cpu) are refused with the reason.
 */
static int check_stacks(struct record_opts *o, int stacks_given)
{
	int asked = 0;

	for (int i = 0; families[i]; i++) {
		if (!(o->families & (1ull << i)))
			continue;
		if ((families[i]->flags & FAMILY_STACKS) ||
		    (stacks_given && o->stack_ns[i] != RECORD_STACKS_OFF))
			asked = 1;
	}
	if (!record_opts__wants_stacks(o))
		return 0;
	if (kfeature__has(KF_BPF_LOOP))
		return 0;
	if (asked)
		return fail("stacks need the bpf_loop helper (Linux 5.17 or later), which this "
			    "kernel lacks: drop --stacks and -t cpu");
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++)
		o->stack_ns[i] = RECORD_STACKS_OFF;
	fprintf(stderr, "bpfsight record: no stacks on GIL waits: this kernel has no bpf_loop "
			"(Linux 5.17 or later)\n");
	return 0;
}

/* --stacks LIST: "none", or FAMILY[:THRESHOLD] entries (docs/STACKS.md). */
static int parse_stacks(const char *list, struct record_opts *o)
{
	char *copy = strdup(list), *save = NULL, *tok, *colon, fams[256];
	int ret = 0;

	if (!copy)
		return 1;
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++)
		o->stack_ns[i] = RECORD_STACKS_OFF;
	if (!strcmp(list, "none")) {
		free(copy);
		return 0;
	}
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		int i;

		colon = strchr(tok, ':');
		if (colon)
			*colon++ = 0;
		for (i = 0; families[i] && strcmp(families[i]->name, tok); i++)
			;
		if (!families[i] || !families[i]->stack_default_ns) {
			stack_families(fams, sizeof(fams));
			ret = fail("--stacks: '%s' takes no stacks; families that do: %s (or none)",
				   tok, fams);
			break;
		}
		o->stack_ns[i] = families[i]->stack_default_ns;
		if (colon && parse_threshold_ns(colon, &o->stack_ns[i]))
			ret = fail("--stacks: bad threshold '%s' for %s: use e.g. 0, 100us or 5ms",
				   colon, tok);
	}
	free(copy);
	return ret;
}

static int parse_signal(const char *s, int *sig)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "none", 0 },	  { "TERM", SIGTERM }, { "INT", SIGINT },
		     { "KILL", SIGKILL }, { "HUP", SIGHUP },   { "USR1", SIGUSR1 },
		     { "USR2", SIGUSR2 } };

	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcasecmp(s, sigs[i].name)) {
			*sig = sigs[i].sig;
			return 0;
		}
	return -EINVAL;
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
		return fail("%s is a symbolic link: bpfsight never writes a trace through a "
			    "link (give the path it points to, or remove it)",
			    path);
	if (S_ISDIR(st.st_mode))
		return fail("%s is a directory: give a file name, e.g. -o %s/run.bst", path, path);
	if (!S_ISREG(st.st_mode))
		return fail("%s is not a regular file (a FIFO, device or socket): a trace is "
			    "a crash-safe file on a filesystem, give its path",
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

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	char *s, *p;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = p = malloc(len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++)
		p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
	*p = 0;
	return s;
}

static int family_index(const char *name)
{
	for (int i = 0; families[i]; i++)
		if (!strcmp(families[i]->name, name))
			return i;
	return 63;
}

enum {
	OPT_THRESHOLD = 256,
	OPT_BUFFER,
	OPT_KILL,
	OPT_CAPTURE,
	OPT_GIL_MODE,
	OPT_DRY_RUN,
	OPT_SAMPLE_RATE,
	OPT_STACKS,
	OPT_INJECT,
	OPT_FEATURES,
};

static int parse_capture(const char *s, struct record_opts *o)
{
	if (!strcmp(s, "cudaProfilerApi")) {
		o->capture_range = RECORD_CAPTURE_PROFILER_API;
		return 0;
	}
	if (!strncmp(s, "nvtx:", 5) && s[5]) {
		o->capture_range = RECORD_CAPTURE_NVTX;
		o->capture_nvtx = s + 5;
		return 0;
	}
	return -EINVAL;
}

/* Also printed by `bpfsight __complete options record`: completion and the docs test read it. */
const struct option record_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'f' },
	{ "trace", required_argument, NULL, 't' },
	{ "pid", required_argument, NULL, 'p' },
	{ "system-wide", no_argument, NULL, 'a' },
	{ "duration", required_argument, NULL, 'd' },
	{ "kill", required_argument, NULL, OPT_KILL },
	{ "osrt-threshold", required_argument, NULL, OPT_THRESHOLD },
	{ "buffer-size", required_argument, NULL, OPT_BUFFER },
	{ "capture-range", required_argument, NULL, OPT_CAPTURE },
	{ "gil-mode", required_argument, NULL, OPT_GIL_MODE },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "inject", no_argument, NULL, OPT_INJECT },
	{ "sample-rate", required_argument, NULL, OPT_SAMPLE_RATE },
	{ "stacks", required_argument, NULL, OPT_STACKS },
	FLIGHT_LONG_OPTIONS,
	{ "features", no_argument, NULL, OPT_FEATURES },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_record(int argc, char **argv)
{
	struct record_opts o = {
		.osrt_threshold_ns = 1000,
		.ringbuf_bytes = 16 << 20,
		.kill_signal = SIGTERM,
		.sample_rate = 99,
	};
	char outbuf[64], *cmdline;
	const char *trace = NULL;
	int c, ret, stacks_given = 0;

	o.cmdline = cmdline = join_args(argc, argv);
	flight_opts__init(&o.flight);
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++)
		o.stack_ns[i] = RECORD_STACKS_OFF; /* stacks are asked for (docs/STACKS.md) */
	optind = 1;
	/* '+': options stop at CMD, so CMD's own options are left alone. */
	while ((c = getopt_long(argc, argv, "+o:ft:p:ad:vh", record_options, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			break;
		case 'f':
			o.force = 1;
			break;
		case 't':
			trace = optarg;
			break;
		case 'p':
			if (record_args__pids("record", optarg, &o))
				goto err;
			break;
		case 'a':
			o.system_wide = 1;
			break;
		case 'd':
			ret = parse_duration_ns(optarg, &o.duration_ns);
			if (ret == -ERANGE) {
				fail("duration '%s' is out of range: at most 584 years (2^64 ns)",
				     optarg);
				goto err;
			}
			if (ret) {
				fail("bad duration '%s': use e.g. 10, 10s, 500ms or 2m", optarg);
				goto err;
			}
			break;
		case OPT_KILL:
			if (parse_signal(optarg, &o.kill_signal)) {
				fail("bad --kill '%s': use none, TERM, INT, KILL, HUP, USR1 or USR2",
				     optarg);
				goto err;
			}
			break;
		case OPT_THRESHOLD:
			if (parse_threshold_ns(optarg, &o.osrt_threshold_ns)) {
				fail("bad --osrt-threshold '%s': use e.g. 0, 500ns, 1us or 2ms",
				     optarg);
				goto err;
			}
			break;
		case OPT_BUFFER:
			if (parse_size(optarg, &o.ringbuf_bytes) || o.ringbuf_bytes < 4096 ||
			    (o.ringbuf_bytes & (o.ringbuf_bytes - 1))) {
				fail("bad --buffer-size '%s': a power of two of at least 4K, e.g. 64M",
				     optarg);
				goto err;
			}
			/* The map's max_entries is a u32: 4G would wrap to 0. */
			if (o.ringbuf_bytes > RECORD_MAX_RINGBUF) {
				fail("--buffer-size '%s' is too big: the kernel's ring buffer holds at "
				     "most 2G",
				     optarg);
				goto err;
			}
			break;
		case OPT_CAPTURE:
			if (o.capture_range != RECORD_CAPTURE_ALL) {
				fail("--capture-range given twice: one range kind per recording");
				goto err;
			}
			if (parse_capture(optarg, &o)) {
				fail("bad --capture-range '%s': use cudaProfilerApi or nvtx:NAME "
				     "(NAME@DOMAIN, NAME@* for any domain)",
				     optarg);
				goto err;
			}
			break;
		case OPT_GIL_MODE:
			if (!strcmp(optarg, "default")) {
				o.gil_mode = RECORD_GIL_DEFAULT;
			} else if (!strcmp(optarg, "full")) {
				o.gil_mode = RECORD_GIL_FULL;
			} else {
				fail("bad --gil-mode '%s': use default or full", optarg);
				goto err;
			}
			break;
		case OPT_DRY_RUN:
			o.dry_run = 1;
			break;
		case OPT_INJECT:
			o.inject = 1;
			break;
		case OPT_FEATURES:
			if (!record_args__has_caps()) {
				fail("probing the kernel needs root (or CAP_BPF and CAP_PERFMON)");
				goto err;
			}
			kfeatures__print(stdout);
			free(cmdline);
			return 0;
		case OPT_STACKS:
			if (parse_stacks(optarg, &o))
				goto err;
			stacks_given = 1;
			break;
		case OPT_SAMPLE_RATE: {
			char *end;
			unsigned long hz;

			errno = 0;
			hz = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || hz < 1 || hz > 10000) {
				fail("bad --sample-rate '%s': samples per second, 1 to 10000 "
				     "(default 99)",
				     optarg);
				goto err;
			}
			o.sample_rate = hz;
			break;
		}
		case OPT_FLIGHT:
		case OPT_FLIGHT_TRIGGER:
		case OPT_FLIGHT_AFTER:
		case OPT_FLIGHT_COOLDOWN:
		case OPT_FLIGHT_MAX_DUMPS:
			if (flight_opts__parse(&o.flight, c, optarg, "record"))
				goto err;
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			free(cmdline);
			return 0;
		default:
			usage(stderr);
			goto err;
		}
	}
	if (optind < argc)
		o.cmd = argv + optind;
	if (!o.cmd && !o.npids && !o.system_wide) {
		fail("nothing to trace: give a command (bpfsight record -- CMD), -p PID or -a");
		usage(stderr);
		goto err;
	}
	if (o.system_wide && o.npids) {
		fail("-a traces every process already: drop -p, or drop -a to trace only the "
		     "-p processes and their children");
		goto err;
	}
	if (o.inject && o.cmd) {
		fail("--inject is for running processes (-p, -a): a launched command gets the "
		     "cupti-shim from its environment already");
		goto err;
	}
	if (!o.dry_run && o.output && check_output(o.output))
		goto err;
	if (flight_opts__check(&o.flight, "record"))
		goto err;
	if (o.dry_run && o.flight.window_ns) {
		fail("--dry-run records nothing: drop --flight-recorder");
		goto err;
	}
	if (trace) {
		if (record_args__families("record", trace, &o.families))
			goto err;
		o.families_explicit = 1;
	}
	record_args__default_families(&o);
	if (!stacks_given) /* the families whose stacks are on by default (gil) */
		for (int i = 0; families[i]; i++)
			if ((families[i]->flags & FAMILY_STACKS_DEFAULT) &&
			    (o.families & (1ull << i)))
				o.stack_ns[i] = families[i]->stack_default_ns;
	for (int i = 0; families[i]; i++)
		if (o.stack_ns[i] != RECORD_STACKS_OFF && !(o.families & (1ull << i))) {
			fail("--stacks=%s: the %s family is not recorded: add it to -t",
			     families[i]->name, families[i]->name);
			goto err;
		}
	if (o.capture_range == RECORD_CAPTURE_NVTX &&
	    !(o.families & (1ull << family_index("nvtx")))) {
		fail("--capture-range=nvtx:%s needs the nvtx family: add nvtx to -t",
		     o.capture_nvtx);
		goto err;
	}
	if (o.inject &&
	    !(o.families & ((1ull << family_index("gpu")) | (1ull << family_index("nvtx"))))) {
		fail("--inject loads the cupti-shim for -t gpu and nvtx: add one of them to -t");
		goto err;
	}
	if (!record_args__has_caps()) {
		fail("tracing needs root (or CAP_BPF and CAP_PERFMON): run it with sudo");
		goto err;
	}
	if (check_stacks(&o, stacks_given) || record_args__check_kernel("record", &o))
		goto err;
	if (o.dry_run)
		o.output = NULL; /* nothing is written */
	else if (!o.output)
		o.output = default_output(outbuf, sizeof(outbuf));
	record_args__libbpf_print(o.verbose);
	ret = recorder__run(&o);
	free(cmdline);
	return ret;
err:
	free(cmdline);
	return 1;
}
