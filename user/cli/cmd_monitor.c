// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight monitor: a recording that writes no file (unless asked) and serves what it sees as
 * Prometheus metrics. The recording is record's (recorder.c), its records go to the metrics
 * (the recorder's sink) instead of a trace writer; the HTTP server runs beside it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "commands.h"
#include "family.h"
#include "flight_opts.h"
#include "http_server.h"
#include "metrics.h"
#include "parse.h"
#include "record_args.h"
#include "recorder.h"

#define DEFAULT_LISTEN "127.0.0.1:9464"
#define DEFAULT_TOP    30
#define DEFAULT_GRACE  (120 * 1000000000ull)
/* Syscalls under this are counted in BPF; above it each one is a ring record. */
#define DEFAULT_OSRT_THRESHOLD 100000ull
#define REBALANCE_NS	       (10 * 1000000000ull)

static void usage(FILE *f)
{
	char fams[256];

	family__list_selectable(fams, sizeof(fams));
	fprintf(f,
		"usage: bpfsight monitor [OPTIONS] [-a | -p PID...]   serve Prometheus metrics\n"
		"\n"
		"  -l, --listen ADDR:PORT   where /metrics is served (default " DEFAULT_LISTEN ",\n"
		"                           this machine only; 0.0.0.0:9464 for a Prometheus\n"
		"                           elsewhere; port 0 picks a free one)\n"
		"  -t, --trace LIST         families, comma-separated (default: all but cpu)\n"
		"                           available: %s\n"
		"  -p, --pid PID            only PID and its future children (repeatable); the\n"
		"                           monitor ends when they have all exited\n"
		"  -a, --system-wide        every process (the default)\n"
		"      --top N              processes with series of their own, the busiest ones\n"
		"                           (default %d); the others add up under pid=\"other\"\n"
		"      --exit-grace DUR     an exited process's series stay DUR (default 2m)\n"
		"      --osrt-threshold DUR syscalls shorter than DUR are only counted in the\n"
		"                           kernel: the histogram's first bucket (default 100us)\n"
		"      --gil-mode MODE      default or full (as record)\n"
		"      --buffer-size SIZE   BPF ring buffer (default 16M, a power of two)\n"
		"      --bpf-stats          turn on the kernel's BPF run-time statistics for\n"
		"                           bpfsight_bpf_run_seconds_total (two clock reads per\n"
		"                           probe hit: 1.4x the osrt probes' cost here)\n"
		"  -o, --output FILE        with --flight-recorder: its dumps are FILE's stem + -N.bst\n"
		"  -f, --force              overwrite dump files that exist\n"
		"%s"
		"  -d, --duration DUR       stop after DUR (default: until SIGTERM or Ctrl-C)\n"
		"  -v, --verbose            libbpf's debug output\n"
		"  -h, --help               this help\n"
		"\n"
		"Needs root, or CAP_BPF + CAP_PERFMON. Logs go to stderr. SIGTERM or SIGINT stop it\n"
		"cleanly (exit status 0); with --flight-recorder SIGUSR1 dumps the window. Metrics:\n"
		"docs/PRODUCTION.md.\n",
		fams, DEFAULT_TOP, flight_opts_help);
}

enum {
	OPT_TOP = 256,
	OPT_GRACE,
	OPT_THRESHOLD,
	OPT_GIL_MODE,
	OPT_BUFFER,
	OPT_BPF_STATS,
};

/* Also printed by `bpfsight __complete options monitor`: completion and the docs test read it. */
const struct option monitor_options[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "trace", required_argument, NULL, 't' },
	{ "pid", required_argument, NULL, 'p' },
	{ "system-wide", no_argument, NULL, 'a' },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "exit-grace", required_argument, NULL, OPT_GRACE },
	{ "osrt-threshold", required_argument, NULL, OPT_THRESHOLD },
	{ "gil-mode", required_argument, NULL, OPT_GIL_MODE },
	{ "buffer-size", required_argument, NULL, OPT_BUFFER },
	{ "bpf-stats", no_argument, NULL, OPT_BPF_STATS },
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'f' },
	{ "duration", required_argument, NULL, 'd' },
	{ "verbose", no_argument, NULL, 'v' },
	FLIGHT_LONG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void render(void *arg, FILE *f)
{
	metrics__render(arg, f);
	metrics_self__render(f);
}

#define FAIL(...) record_args__fail("monitor", __VA_ARGS__)

/* Parse argv into O and MO; 0, or 1 after saying what is wrong. */
static int parse(int argc, char **argv, struct record_opts *o, struct metrics_opts *mo,
		 const char **listen_at, int *bpf_stats)
{
	const char *trace = NULL;
	char *end;
	unsigned long n;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "l:t:p:ao:fd:vh", monitor_options, NULL)) != -1) {
		switch (c) {
		case 'l':
			*listen_at = optarg;
			break;
		case 't':
			trace = optarg;
			break;
		case 'p':
			if (record_args__pids("monitor", optarg, o))
				return 1;
			break;
		case 'a':
			o->system_wide = 1;
			break;
		case 'd':
			if (parse_duration_ns(optarg, &o->duration_ns))
				return FAIL("bad duration '%s': use e.g. 10, 10s, 500ms or 2m",
					    optarg);
			break;
		case OPT_TOP:
			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > 100000)
				return FAIL(
					"bad --top '%s': how many processes get series of their "
					"own, 1 to 100000 (default %d)",
					optarg, DEFAULT_TOP);
			mo->top_n = n;
			break;
		case OPT_GRACE:
			if (parse_duration_ns(optarg, &mo->grace_ns))
				return FAIL("bad --exit-grace '%s': use e.g. 0, 30s or 5m", optarg);
			break;
		case OPT_THRESHOLD:
			if (parse_threshold_ns(optarg, &o->osrt_threshold_ns))
				return FAIL("bad --osrt-threshold '%s': use e.g. 0, 10us or 1ms",
					    optarg);
			break;
		case OPT_GIL_MODE:
			if (!strcmp(optarg, "default"))
				o->gil_mode = RECORD_GIL_DEFAULT;
			else if (!strcmp(optarg, "full"))
				o->gil_mode = RECORD_GIL_FULL;
			else
				return FAIL("bad --gil-mode '%s': use default or full", optarg);
			break;
		case OPT_BUFFER:
			if (parse_size(optarg, &o->ringbuf_bytes) || o->ringbuf_bytes < 4096 ||
			    (o->ringbuf_bytes & (o->ringbuf_bytes - 1)) ||
			    o->ringbuf_bytes > RECORD_MAX_RINGBUF)
				return FAIL("bad --buffer-size '%s': a power of two from 4K to 2G, "
					    "e.g. 64M",
					    optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case OPT_BPF_STATS:
			*bpf_stats = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default: { /* the flight recorder's options, or a bad one */
			int r = flight_opts__parse(&o->flight, c, optarg, "monitor");

			if (r < 0)
				return 1;
			if (r > 0) {
				usage(stderr);
				return 1;
			}
			break;
		}
		}
	}
	if (optind < argc)
		return FAIL("monitor launches nothing: drop '%s' (run it, then -p its pid, or "
			    "monitor everything with -a)",
			    argv[optind]);
	if (o->system_wide && o->npids)
		return FAIL("-a monitors every process already: drop -p, or drop -a");
	if (!o->npids)
		o->system_wide = 1;
	if (flight_opts__check(&o->flight, "monitor"))
		return 1;
	if (o->flight.window_ns && !o->output)
		return FAIL(
			"--flight-recorder needs -o FILE: its dumps are FILE-1.bst, FILE-2.bst...");
	if (!o->flight.window_ns && o->output)
		return FAIL("monitor writes no trace file: -o names --flight-recorder's dumps (add "
			    "--flight-recorder=60s, or drop -o)");
	if (trace) {
		if (record_args__families("monitor", trace, &o->families))
			return 1;
		o->families_explicit = 1;
	}
	record_args__default_families(o);
	mo->syscall_floor_ns = o->osrt_threshold_ns;
	return 0;
}

int cmd_monitor(int argc, char **argv)
{
	struct record_opts o = {
		.osrt_threshold_ns = DEFAULT_OSRT_THRESHOLD,
		.ringbuf_bytes = 16 << 20,
		.sample_rate = 99,
		.cmd_name = "monitor",
	};
	struct metrics_opts mo = {
		.top_n = DEFAULT_TOP,
		.grace_ns = DEFAULT_GRACE,
		.rebalance_ns = REBALANCE_NS,
	};
	const char *listen_at = DEFAULT_LISTEN;
	struct http_server *srv = NULL;
	struct metrics *m = NULL;
	char err[512];
	int ret = 1, stats_fd = -1, bpf_stats = 0, e;

	o.cmdline = "bpfsight monitor";
	flight_opts__init(&o.flight);
	for (int i = 0; i < RECORD_MAX_FAMILIES; i++)
		o.stack_ns[i] = RECORD_STACKS_OFF; /* metrics need no stacks */
	if (parse(argc, argv, &o, &mo, &listen_at, &bpf_stats))
		return 1;
	/* A bad address is refused before anything is loaded. */
	srv = http_server__listen(listen_at, err, sizeof(err));
	if (!srv)
		return FAIL("%s", err);
	if (!record_args__has_caps()) {
		FAIL("monitoring needs root (or CAP_BPF and CAP_PERFMON): run it with sudo");
		goto out;
	}
	if (record_args__check_kernel("monitor", &o))
		goto out;
	m = metrics__new(&mo);
	if (!m) {
		FAIL("out of memory");
		goto out;
	}
	/*
	 * The BPF programs' run time, for bpfsight_bpf_run_seconds_total; on while we hold the fd.
	 * Not by default: the kernel then reads the clock twice around every program run.
	 */
	if (bpf_stats && (stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0)
		fprintf(stderr, "bpfsight monitor: warning: no BPF run time (bpf_stats): %s\n",
			strerror(errno));
	e = http_server__start(srv, render, m);
	if (e) {
		FAIL("cannot start the HTTP server: %s", strerror(-e));
		goto out;
	}
	o.sink = metrics__record;
	o.sink_arg = m;
	o.sink_name = http_server__url(srv);
	record_args__libbpf_print(o.verbose);
	ret = recorder__run(&o);
out:
	http_server__free(srv); /* before the metrics it reads */
	metrics__free(m);
	if (stats_fd >= 0)
		close(stats_fd);
	return ret;
}
