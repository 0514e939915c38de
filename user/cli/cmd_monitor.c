// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight monitor: a recording that writes no file (unless asked) and serves what it sees as
 * Prometheus metrics. The recording is record's (recorder.c), its records go to the metrics
 * (the recorder's sink) instead of a trace writer; the HTTP server runs beside it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "commands.h"
#include "family.h"
#include "http_server.h"
#include "metrics.h"
#include "metrics_ident.h"
#include "monitor_follow.h"
#include "monitor_ship.h"
#include "privileges.h"
#include "record_args.h"
#include "uprobe_broker.h"
#include "record_options.h"
#include "recorder.h"
#include "msg.h"

#define REBALANCE_NS (10 * 1000000000ull)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bpfsight monitor [OPTIONS] [-a | -p PID...]   serve Prometheus metrics\n\n");
	record_args__print_options(f, "monitor");
	fprintf(f,
		"\n"
		"Needs root, or CAP_BPF + CAP_PERFMON. Logs go to stderr. SIGTERM or SIGINT stop it\n"
		"cleanly (exit status 0); with --flight-recorder SIGUSR1 dumps the window. Metrics:\n"
		"docs/PRODUCTION.md.\n");
}

/* What the HTTP server renders: the metrics, --ship's own, the daemon's. */
struct monitor_served {
	struct metrics *m;
	struct monitor_ship *ship; /* NULL without --ship */
};

static void render(void *arg, FILE *f)
{
	struct monitor_served *sv = arg;

	metrics__render(sv->m, f);
	monitor_ship__render(sv->ship, f);
	metrics_self__render(f);
}

#define FAIL(...) msg__fail(__VA_ARGS__)

/* metrics_opts.ident: the job and role labels, the job from --job-label-env's variable. */
static int ident(__u32 pid, struct metrics_ident *id, const void *arg)
{
	return metrics_ident__read(pid, arg, id);
}

/*
 * The recording, and with -p what comes after its targets' exit: --exit-grace's serving,
 * --follow's next recording of the restarted job (the same metrics: its series go on).
 */
static int record(struct record_args *a)
{
	struct monitor_follow mf = { a->job_env, a->grace_ns, a->follow };
	struct record_opts *o = &a->o;
	int ret;

	if (!o->system_wide)
		monitor_follow__init(&mf, o);
	for (;;) {
		ret = recorder__run(o);
		/* -d's end is the monitor's (with -p, until the targets' exit or a signal) */
		if (ret || o->system_wide || o->duration_ns || recorder__stop_signalled() ||
		    !monitor_follow__wait(&mf, o))
			return ret;
	}
}

/* What only monitor checks: it launches nothing, and -o names the flight recorder's dumps. */
static int check_monitor(struct record_args *a, int argc, char **argv)
{
	struct record_opts *o = &a->o;

	if (optind < argc)
		return FAIL("monitor launches nothing: drop '%s' (run it, then -p its pid, or "
			    "monitor everything with -a)",
			    argv[optind]);
	if (record_args__check(a))
		return 1;
	if (!o->npids)
		o->system_wide = 1;
	if (o->flight.window_ns && !o->output)
		return FAIL(
			"--flight-recorder needs -o FILE: its dumps are FILE-1.bst, FILE-2.bst...");
	if (a->ship_opts && !a->ship_url)
		return FAIL("--ship-interval, --ship-spool and --ship-spool-max are --ship's: add "
			    "--ship clickhouse://HOST:PORT/JOB");
	if (a->follow && o->system_wide)
		return FAIL("--follow follows -p's job across its restarts: -a sees every process "
			    "already (drop --follow)");
	if (a->follow && o->duration_ns)
		return FAIL(
			"--follow waits for the job's restarts, -d stops at its time: drop one");
	if (a->follow && o->flight.window_ns)
		return FAIL("--follow records the job again after a restart, which would start "
			    "--flight-recorder's window over: use -a with the flight recorder");
	if (!o->flight.window_ns && o->output)
		return FAIL("monitor writes no trace file: -o names --flight-recorder's dumps (add "
			    "--flight-recorder=60s, or drop -o)");
	return 0;
}

int cmd_monitor(int argc, char **argv)
{
	struct record_args a = {};
	struct record_opts *o = &a.o;
	struct metrics_opts mo = { .rebalance_ns = REBALANCE_NS };
	struct http_server *srv = NULL;
	struct metrics *m = NULL;
	struct monitor_served sv = {};
	char err[512];
	int ret = 1, stats_fd = -1, e;

	e = record_args__start(&a, "monitor", "bpfsight monitor", argc, argv, usage);
	if (e >= 0) {
		ret = e;
		goto out;
	}
	if (check_monitor(&a, argc, argv))
		goto out;
	mo.top_n = a.top_n;
	mo.grace_ns = a.grace_ns;
	o->records_again = a.follow;
	mo.ident = ident;
	mo.ident_arg = a.job_env;
	/* A bad address is refused before anything is loaded. */
	srv = http_server__listen(a.listen, err, sizeof(err));
	if (!srv) {
		FAIL("%s", err);
		goto out;
	}
	if (!privileges__can_trace()) {
		FAIL("monitoring needs root (or CAP_BPF and CAP_PERFMON): run it with sudo");
		goto out;
	}
	if (record_args__check_kernel("monitor", o))
		goto out;
	m = metrics__new(&mo, o);
	if (!m) {
		FAIL("out of memory");
		goto out;
	}
	sv.m = m;
	if (a.ship_url && !(sv.ship = monitor_ship__new(m, a.ship_url, a.ship_spool,
							a.ship_spool_max, a.ship_interval_ns)))
		goto out;
	/*
	 * The BPF programs' run time, for bpfsight_bpf_run_seconds_total; on while we hold the fd.
	 * Not by default: the kernel then reads the clock twice around every program run.
	 */
	if (a.bpf_stats && (stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0)
		pr_warn("no BPF run time (bpf_stats): %s\n", strerror(errno));
	/*
	 * Before the server's thread: it serves with no more than recording needs. --follow
	 * loads the probes again at each restart: it keeps what loading them needs.
	 */
	e = a.follow ? 0 : privileges__drop(o->flight.window_ns != 0, uprobe_broker__start);
	if (e)
		pr_warn("cannot drop the capabilities monitoring does not need: %s\n",
			strerror(-e));
	e = http_server__start(srv, render, &sv);
	if (e) {
		FAIL("cannot start the HTTP server: %s", strerror(-e));
		goto out;
	}
	e = sv.ship ? monitor_ship__start(sv.ship) : 0;
	if (e) {
		FAIL("cannot start --ship's thread: %s", strerror(-e));
		goto out;
	}
	o->sink = metrics__record;
	o->sink_arg = m;
	o->sink_name = http_server__url(srv);
	record_args__libbpf_print(o->verbose);
	ret = record(&a);
out:
	http_server__free(srv);	     /* before the metrics it reads */
	monitor_ship__stop(sv.ship); /* the last interval: every record is counted */
	metrics__free(m);
	if (stats_fd >= 0)
		close(stats_fd);
	record_args__free(&a);
	return ret;
}
