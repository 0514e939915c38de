// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * monitor --ship (monitor_ship.h). Each interval is a file of the spool, JOB.monitor-H-N.tsv
 * (H: this monitor's host, pid and start; N: the interval's number), so ship's ledger keeps
 * it once whoever sends it: this thread, or a later `bpfsight ship --to URL --spool DIR`
 * sending what a monitor stopped with the server down left.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cache_dir.h"
#include "ch_labels.h"
#include "export_clickhouse.h"
#include "ch_schema.h"
#include "human.h"
#include "metrics.h"
#include "monitor_intervals.h"
#include "monitor_ship.h"
#include "msg.h"
#include "ship_lock.h"
#include "ship_send.h"
#include "ship_spool.h"

struct monitor_ship {
	struct metrics *m;
	struct ch_server s;
	struct ship_spool sp;
	struct monitor_intervals mi;
	char host[256], id[64];
	__u64 interval_ns, n;
	int schema, down; /* the tables made; the last try failed (said once) */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;
	/* the metrics (read by the HTTP server's thread) */
	__u64 spooled, shipped, rows, dropped, failures;
};

static __u64 wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void count(__u64 *c, __u64 n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

/* The interval to now into the spool; a spool full drops it (counted, said once a while). */
static void ship_interval(struct monitor_ship *ms)
{
	char *text = NULL, part[4200], path[4200], id[96], b1[32];
	size_t len = 0;
	__u64 end = wall_ns(), used;
	FILE *f = open_memstream(&text, &len);
	long rows;

	if (!f)
		return;
	metrics__render(ms->m, f);
	if (fclose(f))
		return free(text);
	snprintf(id, sizeof(id), "%s-%llu", ms->id, (unsigned long long)ms->n);
	ship_spool__path(&ms->sp, ms->mi.job, id, ".part", part, sizeof(part));
	f = fopen(part, "we");
	rows = f ? monitor_intervals__write(&ms->mi, text, end, id, f) : -errno;
	free(text);
	if (f && fclose(f) && rows >= 0)
		rows = -EIO;
	if (rows <= 0) {
		unlink(part);
		if (rows < 0) {
			count(&ms->dropped, 1);
			pr_warn("--ship: an interval not spooled in %s: %s (its counters' "
				"increments go to the next one)\n",
				ms->sp.dir, strerror((int)-rows));
		} else {
			monitor_intervals__take(&ms->mi, end); /* nothing changed: no row */
		}
		return;
	}
	used = ship_spool__bytes(&ms->sp, NULL);
	if (used > ms->sp.max_bytes) {
		unlink(part);
		if (!ms->dropped)
			pr_warn("--ship: the spool %s is full (%s): intervals are dropped, counted "
				"in bpfsight_ship_intervals_dropped_total (their counters' increments "
				"go to the next one taken)\n",
				ms->sp.dir, human__bytes((double)used, b1, sizeof(b1)));
		count(&ms->dropped, 1);
		return;
	}
	ship_spool__path(&ms->sp, ms->mi.job, id, ".tsv", path, sizeof(path));
	if (rename(part, path)) {
		pr_warn("--ship: cannot spool %s: %s\n", path, strerror(errno));
		unlink(part);
		count(&ms->dropped, 1);
		return;
	}
	monitor_intervals__take(&ms->mi, end);
	ms->n++;
	count(&ms->spooled, 1);
}

/* One spooled interval sent, under its lock: 0, -EBUSY (another ship's), or the failure. */
static int ship_one(struct monitor_ship *ms, const char *job, const char *id, const char *path)
{
	struct ship_result res;
	int holder, fd, err;

	fd = ship_lock__take(&ms->sp, job, id, &holder);
	if (fd < 0)
		return fd;
	if (access(path, F_OK)) {
		ship_lock__drop(&ms->sp, job, id, fd); /* sent by the ship that held it */
		return 0;
	}
	err = ms->schema ? 0 : ch_schema__create(&ms->s);
	ms->schema = !err;
	err = err
		      ?: ship_send__file(&ms->s, path, CH_EVENT_COLUMNS, job, id, SHIP_BATCH_ROWS,
					 NULL, &res); /* an interval is this monitor's alone */
	if (!err) {
		unlink(path);
		count(&ms->shipped, 1);
		count(&ms->rows, res.sent);
	}
	ship_lock__drop(&ms->sp, job, id, fd);
	return err;
}

/* This monitor's spooled intervals, the oldest first, until one fails (tried next time). */
static void ship_drain(struct monitor_ship *ms)
{
	char **names, path[4200];
	const char *job, *id;
	int n, err = 0;

	n = ship_spool__list(&ms->sp, &names);
	for (int i = 0; i < n && !err; i++) {
		snprintf(path, sizeof(path), "%s/%s", ms->sp.dir, names[i]);
		if (ship_spool__entry(names[i], &job, &id) || strncmp(id, ms->id, strlen(ms->id)))
			continue;
		err = ship_one(ms, job, id, path);
		err = err == -EBUSY ? 0 : err;
	}
	ship_spool__free_list(names, n);
	if (err) {
		count(&ms->failures, 1);
		ms->schema = 0;
		if (!ms->down)
			pr_warn("--ship: %s: the intervals wait in the spool %s, tried again every "
				"interval\n",
				ms->s.error, ms->sp.dir);
	} else if (ms->down) {
		pr_info("--ship: the server answers again: the spooled intervals sent\n");
	}
	ms->down = err != 0;
}

static void *ship_thread(void *arg)
{
	struct monitor_ship *ms = arg;
	struct timespec t;

	pthread_mutex_lock(&ms->lock);
	clock_gettime(CLOCK_MONOTONIC, &t);
	while (!ms->stop) {
		t.tv_sec += (time_t)(ms->interval_ns / 1000000000ull);
		t.tv_nsec += (long)(ms->interval_ns % 1000000000ull);
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		while (!ms->stop && pthread_cond_timedwait(&ms->wake, &ms->lock, &t) != ETIMEDOUT)
			;
		if (ms->stop)
			break;
		pthread_mutex_unlock(&ms->lock);
		ship_interval(ms);
		ship_drain(ms);
		pthread_mutex_lock(&ms->lock);
	}
	pthread_mutex_unlock(&ms->lock);
	return NULL;
}

struct monitor_ship *monitor_ship__new(struct metrics *m, const char *url, const char *spool,
				       __u64 spool_max, __u64 interval_ns)
{
	struct monitor_ship *ms = calloc(1, sizeof(*ms));
	struct export_opts labels = { .rank = -1 };
	char dir[4400], cache[4096];
	pthread_condattr_t ca;

	if (!ms) {
		pr_err("out of memory\n");
		return NULL;
	}
	if (ch_server__parse(&ms->s, url))
		goto fail;
	if (ch_labels__option(&labels, 1, *ms->s.job ? ms->s.job : "monitor"))
		goto fail;
	ms->mi.job = *ms->s.job ? ms->s.job : "monitor";
	/* a try never outlasts an interval much: the next one is due */
	ms->s.timeout_s = (int)(interval_ns / 1000000000ull);
	ms->s.timeout_s = ms->s.timeout_s < 1 ? 1 : ms->s.timeout_s > 30 ? 30 : ms->s.timeout_s;
	if (!spool) {
		if (!cache_dir__path(cache, sizeof(cache))) {
			pr_err("the caches are off (BPFSIGHT_NO_CACHE): name --ship's spool, "
			       "--ship-spool DIR\n");
			goto fail;
		}
		snprintf(dir, sizeof(dir), "%s/ship/%s_%s", cache, ms->s.host, ms->s.port);
		spool = dir;
	}
	if (ship_spool__open(&ms->sp, spool, spool_max))
		goto fail;
	if (gethostname(ms->host, sizeof(ms->host) - 1))
		snprintf(ms->host, sizeof(ms->host), "unknown");
	ms->mi.host = ms->host;
	ms->mi.start_ns = wall_ns();
	/* unique to this monitor: no two monitors' intervals share a ledger row */
	snprintf(ms->id, sizeof(ms->id), "monitor-%x-%llx",
		 (unsigned)getpid() ^ (unsigned)gethostid(), (unsigned long long)ms->mi.start_ns);
	ms->m = m;
	ms->interval_ns = interval_ns;
	pthread_mutex_init(&ms->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ms->wake, &ca);
	pthread_condattr_destroy(&ca);
	return ms;
fail:
	free(ms);
	return NULL;
}

int monitor_ship__start(struct monitor_ship *ms)
{
	int err = pthread_create(&ms->thread, NULL, ship_thread, ms);

	ms->started = !err;
	return -err;
}

void monitor_ship__stop(struct monitor_ship *ms)
{
	__u32 left = 0;
	char b1[32];
	__u64 bytes;

	if (!ms)
		return;
	if (ms->started) {
		pthread_mutex_lock(&ms->lock);
		ms->stop = 1;
		pthread_cond_signal(&ms->wake);
		pthread_mutex_unlock(&ms->lock);
		pthread_join(ms->thread, NULL);
		/* the last interval, to the recording's end, and one more try */
		ship_interval(ms);
		ship_drain(ms);
	}
	bytes = ship_spool__bytes(&ms->sp, &left);
	if (ms->down && left)
		pr_warn("--ship: %u intervals (%s) stay in the spool %s: `bpfsight ship --to URL "
			"--spool %s` sends them, each once\n",
			left, human__bytes((double)bytes, b1, sizeof(b1)), ms->sp.dir, ms->sp.dir);
	pr_info("--ship: %llu intervals spooled, %llu shipped (%llu rows), %llu dropped\n",
		(unsigned long long)ms->spooled, (unsigned long long)ms->shipped,
		(unsigned long long)ms->rows, (unsigned long long)ms->dropped);
	monitor_intervals__free(&ms->mi);
	pthread_cond_destroy(&ms->wake);
	pthread_mutex_destroy(&ms->lock);
	free(ms);
}

static __u64 get(const __u64 *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void monitor_ship__render(struct monitor_ship *ms, FILE *f)
{
	if (!ms)
		return;
	fprintf(f,
		"# HELP bpfsight_ship_intervals_total monitor --ship's intervals, by what became "
		"of them: spooled, then shipped (the server holds their rows)\n"
		"# TYPE bpfsight_ship_intervals_total counter\n"
		"bpfsight_ship_intervals_total{state=\"spooled\"} %llu\n"
		"bpfsight_ship_intervals_total{state=\"shipped\"} %llu\n"
		"# HELP bpfsight_ship_intervals_dropped_total intervals not spooled (the spool "
		"full): their gauges lost, their counters' increments in the next one\n"
		"# TYPE bpfsight_ship_intervals_dropped_total counter\n"
		"bpfsight_ship_intervals_dropped_total %llu\n"
		"# HELP bpfsight_ship_rows_total rows the server took from monitor --ship\n"
		"# TYPE bpfsight_ship_rows_total counter\n"
		"bpfsight_ship_rows_total %llu\n"
		"# HELP bpfsight_ship_failures_total rounds of sending that failed (the server "
		"down, slow or refusing): the intervals wait in the spool\n"
		"# TYPE bpfsight_ship_failures_total counter\n"
		"bpfsight_ship_failures_total %llu\n",
		(unsigned long long)get(&ms->spooled), (unsigned long long)get(&ms->shipped),
		(unsigned long long)get(&ms->dropped), (unsigned long long)get(&ms->rows),
		(unsigned long long)get(&ms->failures));
}
