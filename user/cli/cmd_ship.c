// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight ship FILE... --to URL: trace files to a ClickHouse server (docs/CLICKHOUSE.md).
 * Each file is rendered (export --format clickhouse) into the spool, then every spooled file
 * is sent, the oldest first (ship_send.h: each row once, however often tried); a server down
 * or slow is retried for --retry-for, then what is left stays spooled for the next ship.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cache_dir.h"
#include "ch_labels.h"
#include "export_clickhouse.h"
#include "ch_schema.h"
#include "commands.h"
#include "export.h"
#include "getopt_error.h"
#include "human.h"
#include "mono_clock.h"
#include "msg.h"
#include "parse.h"
#include "ship_lock.h"
#include "ship_send.h"
#include "ship_spool.h"

/* Exit statuses past EXIT_READ_*'s (0 shipped, 1 bad arguments or an unreadable file). */
#define EXIT_SHIP_DOWN	  2 /* the server did not answer: the rest stays spooled */
#define EXIT_SHIP_BUSY	  3 /* another ship was shipping a file: not sent twice at once */
#define EXIT_SHIP_AUTH	  4 /* the server refused the credentials */
#define EXIT_SHIP_FULL	  5 /* the spool had no room for a file: it was not taken */
#define EXIT_SHIP_REFUSED 6 /* the server refused a statement (said) */
#define EXIT_SHIP_CLAIMED 7 /* another spool or host holds a file's claim: not sent */

extern const struct exporter export_clickhouse; /* export_clickhouse.c */

struct ship_opts {
	const char *url, *spool;
	__u64 spool_max, retry_ns;
	int timeout_s;
	int verbose; /* -v: the server's release said */
	__u64 batch_rows;
	const char *watch; /* --watch DIR */
	int busy;	   /* the last file taken is being written */
	struct export_opts
		labels;		 /* the rows' (struct export_opts: export --format clickhouse's) */
	struct ship_held *held;	 /* the spooled files this ship holds locked (ship_lock.h) */
	struct ship_claim claim; /* its files' claims in the server (ship_claim.h) */
	char claimant[4400];
};

/* A spooled file's lock, held from its rendering to its ledger row. */
struct ship_held {
	struct ship_held *next;
	int fd;
	char job[256], id[64];
};

/* JOB's file ID locked for O (0), or -EBUSY said (another ship has it), or a spool error. */
static int ship_hold(struct ship_opts *o, const struct ship_spool *sp, const char *job,
		     const char *id, const char *what)
{
	struct ship_held *h;
	int fd, pid;

	for (h = o->held; h; h = h->next)
		if (!strcmp(h->job, job) && !strcmp(h->id, id))
			return 0;
	fd = ship_lock__take(sp, job, id, &pid);
	if (fd == -EBUSY) {
		pr_err("%s (content id %s): another ship (pid %d) is shipping it to job %s now: "
		       "not shipped twice at once; it is that ship's (run this one again once it "
		       "is done, and nothing is added)\n",
		       what, id, pid, job);
		return fd;
	}
	h = fd < 0 ? NULL : calloc(1, sizeof(*h));
	if (!h) {
		pr_err("%s: cannot lock it in the spool %s: %s\n", what, sp->dir,
		       strerror(fd < 0 ? -fd : ENOMEM));
		ship_lock__drop(sp, job, id, fd);
		return fd < 0 ? fd : -ENOMEM;
	}
	h->fd = fd;
	snprintf(h->job, sizeof(h->job), "%s", job);
	snprintf(h->id, sizeof(h->id), "%s", id);
	h->next = o->held;
	o->held = h;
	return 0;
}

/* JOB's file ID's lock released (the file shipped, or not taken). */
static void ship_release(struct ship_opts *o, const struct ship_spool *sp, const char *job,
			 const char *id)
{
	for (struct ship_held **p = &o->held; *p; p = &(*p)->next) {
		struct ship_held *h = *p;

		if (strcmp(h->job, job) || strcmp(h->id, id))
			continue;
		*p = h->next;
		ship_lock__drop(sp, job, id, h->fd);
		free(h);
		return;
	}
}

static void ship_usage(FILE *f)
{
	fprintf(f,
		"Usage: bpfsight ship FILE... --to URL [--rank N] [--spool DIR] [--spool-max SIZE] [-v]\n"
		"                     [--retry-for DURATION] [--timeout SECONDS] [--watch DIR]\n"
		"       bpfsight ship --to URL        (send what the spool holds)\n"
		"\n"
		"Send trace files to a ClickHouse server over its HTTP interface, a row per event\n"
		"in bpfsight.events (docs/CLICKHOUSE.md). A file shipped twice adds nothing; a\n"
		"server down or slow loses nothing: files wait in the spool, sent by the next ship.\n"
		"\n"
		"  --to URL              clickhouse://HOST:PORT/JOB (or http://, https://; an IPv6\n"
		"                        address in brackets: [::1]:8123): the server and the job\n"
		"                        the rows belong to (default job: each\n"
		"                        FILE's name less .bst). Credentials: BPFSIGHT_CLICKHOUSE_USER and\n"
		"                        BPFSIGHT_CLICKHOUSE_PASSWORD, or BPFSIGHT_CLICKHOUSE_CREDENTIALS\n"
		"                        naming a file of user:password (mode 600); never the URL\n"
		"  --rank N              the rows' rank (default: a merged file's ranks, else -1)\n"
		"  --spool DIR           where files wait (default: the cache's ship/HOST_PORT)\n"
		"  --spool-max SIZE      the spool's bound (default 1G): a file past it is refused\n"
		"  --retry-for DURATION  how long a server down is retried (default 60s)\n"
		"  --timeout SECONDS     per connection, send and answer (default 30)\n"
		"  --watch DIR           go on: ship each .bst file that appears in DIR once its\n"
		"                        recorder closed it (flight-recorder dumps, capture ranges),\n"
		"                        until SIGINT or SIGTERM\n"
		"  --take-over           ship the files another spool or host claimed (exit 7) and\n"
		"                        left: only when that ship is gone (its host down, its\n"
		"                        process killed), or the rows are sent twice at once\n"
		"  -v, --verbose         say which ClickHouse release the server runs\n"
		"  -h, --help            this help\n"
		"\n"
		"Exit status: 0 shipped, 1 bad arguments or an unreadable FILE, 2 the server did\n"
		"not answer (the rest stays spooled), 3 another ship was shipping a file (it is\n"
		"that one's), 4 credentials refused, 5 spool full, 6 the\n"
		"server refused a statement or is older than ClickHouse " CH_OLDEST ", or https\n"
		"failed (its certificate: BPFSIGHT_CLICKHOUSE_CA\n"
		"names a file of the CAs that sign it, else the system's are asked), 7 another\n"
		"spool or host is shipping a file (its claim in the server; it stays spooled).\n");
}

const struct option ship_options[] = {
	{ "to", required_argument, NULL, 'T' },
	{ "rank", required_argument, NULL, 'R' },
	{ "spool", required_argument, NULL, 'S' },
	{ "spool-max", required_argument, NULL, 'M' },
	{ "retry-for", required_argument, NULL, 'r' },
	{ "timeout", required_argument, NULL, 't' },
	{ "watch", required_argument, NULL, 'W' },
	{ "take-over", no_argument, NULL, 'O' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static int ship_parse(int argc, char **argv, struct ship_opts *o)
{
	__u64 v;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hv", ship_options, NULL)) != -1) {
		switch (c) {
		case 'T':
			o->url = optarg;
			break;
		case 'R':
			if (ch_labels__option(&o->labels, 0, optarg))
				return EXIT_READ_FAIL;
			break;
		case 'S':
			o->spool = optarg;
			break;
		case 'M':
			if (parse_size(optarg, &o->spool_max) || !o->spool_max)
				return pr_err("bad --spool-max '%s': a size (64M, 1G)\n", optarg),
				       1;
			break;
		case 'r':
			if (parse_duration_ns(optarg, &o->retry_ns))
				return pr_err("bad --retry-for '%s': a duration (30s, 5m)\n",
					      optarg),
				       1;
			break;
		case 't':
			if (parse_duration_ns(optarg, &v) || v < 1000000000ULL ||
			    v > 3600000000000ULL)
				return pr_err("bad --timeout '%s': 1 to 3600 seconds\n", optarg), 1;
			o->timeout_s = (int)(v / 1000000000ULL);
			break;
		case 'W':
			o->watch = optarg;
			break;
		case 'O':
			o->claim.take_over = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			ship_usage(stdout);
			return EXIT_READ_OK;
		default:
			getopt_error__print("ship", argc, argv, "hv", ship_options);
			return EXIT_READ_FAIL;
		}
	}
	if (!o->url) {
		pr_err("where to? --to clickhouse://HOST:PORT/JOB\n");
		return EXIT_READ_FAIL;
	}
	return -1;
}

/*
 * Did FILE change between two looks (a recorder's last writes)? The content id is read before
 * the rows are rendered, each by its own pass: a recorder that closed the file in between
 * would leave rows of its last bytes under the id of its earlier ones, and the next look (a
 * --watch round) would ship them again under the id of the last.
 */
static int changed(const char *file, const struct stat *before)
{
	struct stat now;

	return stat(file, &now) || now.st_ino != before->st_ino || now.st_dev != before->st_dev ||
	       now.st_size != before->st_size || now.st_mtim.tv_sec != before->st_mtim.tv_sec ||
	       now.st_mtim.tv_nsec != before->st_mtim.tv_nsec;
}

/* FILE rendered into the spool: 0, or the exit status of its failure (said). */
static int ship_take(struct ch_server *s, struct ship_spool *sp, struct ship_opts *o,
		     const char *file)
{
	char path[4200], part[4200], b1[32], b2[32];
	__u64 events, used;
	struct stat before;
	int err;

	o->busy = 0;
	if (stat(file, &before)) {
		pr_err("cannot read %s: %s\n", file, strerror(errno));
		return EXIT_READ_FAIL;
	}
	if (ch_labels__for_file(&o->labels, file))
		return EXIT_READ_FAIL;
	err = ship_hold(o, sp, o->labels.job, o->labels.file_id, file);
	o->busy = err == -EBUSY; /* --watch: tried again next round */
	if (err)
		return err == -EBUSY ? EXIT_SHIP_BUSY : EXIT_READ_FAIL;
	ship_spool__path(sp, o->labels.job, o->labels.file_id, ".tsv", path, sizeof(path));
	if (!access(path, F_OK))
		return 0; /* spooled by a ship that could not send it */
	/* a server that answers and holds it: nothing to render (one that does not: the spool) */
	if (ship_send__shipped(s, o->labels.job, o->labels.file_id) == 1) {
		pr_info("%s (content id %s): already shipped to job %s: nothing added\n", file,
			o->labels.file_id, o->labels.job);
		ship_release(o, sp, o->labels.job, o->labels.file_id);
		return 0;
	}
	ship_spool__path(sp, o->labels.job, o->labels.file_id, ".part", part, sizeof(part));
	unlink(part);
	err = export__render(&export_clickhouse, file, part, &o->labels, &events);
	if (!err && changed(file, &before)) {
		unlink(part);
		err = -EBUSY; /* rendered again once it holds still */
	}
	o->busy = err == -EBUSY;
	if (err)
		ship_release(o, sp, o->labels.job, o->labels.file_id);
	if (err == -EBUSY) {
		if (!o->watch)
			pr_err("%s: not shipped: a recorder is writing it now (or it changed while "
			       "it was read); ship it once it is closed (its rows and content id are "
			       "not its last yet)\n",
			       file);
		return o->watch ? 0 : EXIT_READ_FAIL;
	}
	if (err) {
		pr_err("%s: not shipped: %s\n", file, strerror(-err));
		return EXIT_READ_FAIL;
	}
	if (!events) {
		ship_release(o, sp, o->labels.job, o->labels.file_id);
		unlink(part);
		pr_err("%s holds no events: nothing to ship\n", file);
		return EXIT_READ_FAIL;
	}
	used = ship_spool__bytes(sp, NULL);
	if (used > sp->max_bytes) {
		ship_release(o, sp, o->labels.job, o->labels.file_id);
		unlink(part);
		pr_err("%s: not shipped: the spool %s is full (%s of %s with it): nothing was "
		       "lost, ship it again once the server took the spool's files, or raise "
		       "--spool-max\n",
		       file, sp->dir, human__bytes((double)used, b1, sizeof(b1)),
		       human__bytes((double)sp->max_bytes, b2, sizeof(b2)));
		return EXIT_SHIP_FULL;
	}
	if (rename(part, path)) {
		pr_err("%s: cannot spool it as %s: %s\n", file, path, strerror(errno));
		unlink(part);
		ship_release(o, sp, o->labels.job, o->labels.file_id);
		return EXIT_READ_FAIL;
	}
	return 0;
}

/* --watch's SIGINT or SIGTERM: no more rounds, no more retries. */
static volatile sig_atomic_t ship_stop;

static int ship_status(int err)
{
	if (ch_server__retryable(err))
		return EXIT_SHIP_DOWN;
	return err == -EACCES ? EXIT_SHIP_AUTH : EXIT_SHIP_REFUSED;
}

/* Every spooled file to S, retrying a server down for O->retry_ns: the exit status. */
static int ship_drain(struct ch_server *s, struct ship_spool *sp, struct ship_opts *o)
{
	__u64 t0 = mono_now_ns(), rows = 0, nfiles = 0, wait_ms = 250;
	int n, i, err = 0, schema = 0, busy = 0, lock_failed = 0, claimed = 0;
	char **names, path[4200], b1[32], where[300];
	const char *job, *id;
	struct ship_result res;
	__u32 left;

	n = ship_spool__list(sp, &names);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", sp->dir, names[i]);
		if (ship_spool__entry(names[i], &job, &id))
			continue;
		/* another ship's now: it sends it (said; this one's status says so) */
		err = ship_hold(o, sp, job, id, path);
		busy |= err == -EBUSY;
		if (err == -EBUSY) {
			err = 0;
			continue;
		}
		if (err) {
			lock_failed = 1; /* the spool cannot be locked in: said */
			break;
		}
		if (access(path, F_OK)) {
			ship_release(o, sp, job, id); /* sent by the ship that held it */
			continue;
		}
		for (;;) {
			err = schema ? 0 : ch_schema__create(s);
			schema = !err;
			err = err
				      ?: ship_send__file(s, path, CH_EVENT_COLUMNS, job, id,
							 o->batch_rows, &o->claim, &res);
			if (!ch_server__retryable(err) || mono_now_ns() - t0 >= o->retry_ns ||
			    ship_stop)
				break;
			pr_warn("%s (retrying for %llus)\n", s->error,
				(unsigned long long)((o->retry_ns - (mono_now_ns() - t0)) /
						     1000000000ULL));
			usleep(wait_ms * 1000);
			wait_ms = wait_ms < 4000 ? wait_ms * 2 : 4000;
			schema = 0;
		}
		if (err == -EALREADY) { /* another spool's or host's now: it stays spooled */
			pr_err("%s\n", s->error);
			ship_release(o, sp, job, id);
			claimed = 1;
			err = 0;
			continue;
		}
		if (err)
			break;
		unlink(path);
		ship_release(o, sp, job, id);
		rows += res.sent;
		nfiles++;
		if (res.already)
			pr_info("%s (content id %s): already shipped to job %s: nothing added\n",
				path, id, job);
		else
			pr_info("shipped %llu rows of job %s (content id %s)%s\n",
				(unsigned long long)res.rows, job, id,
				res.held ? ", the server held some of a cut ship" : "");
	}
	ship_spool__free_list(names, n);
	if (lock_failed)
		return EXIT_READ_FAIL;
	if (err) {
		__u64 bytes = ship_spool__bytes(sp, &left);

		pr_err("%s%s\n", s->error,
		       err == -EACCES ? ": credentials refused (see --help)" : "");
		pr_err("%u files (%s) stay in the spool %s: `bpfsight ship --to URL` sends them\n",
		       left, human__bytes((double)bytes, b1, sizeof(b1)), sp->dir);
		return ship_status(err);
	}
	pr_info("%llu rows of %llu files to %s in %.2f s\n", (unsigned long long)rows,
		(unsigned long long)nfiles, ch_server__where(s, where, sizeof(where)),
		(double)(mono_now_ns() - t0) / 1e9);
	return claimed ? EXIT_SHIP_CLAIMED : busy ? EXIT_SHIP_BUSY : EXIT_READ_OK;
}

static void ship_on_signal(int sig)
{
	ship_stop = sig;
}

/*
 * --watch DIR: every second, each .bst file of DIR not seen yet (by name, size and time) and
 * closed by its recorder, shipped; a server down keeps it spooled for the next round. Until
 * SIGINT or SIGTERM: 0, or the exit status of what stopped it (spool full, credentials).
 */
static int ship_watch(struct ch_server *s, struct ship_spool *sp, struct ship_opts *o)
{
	struct sigaction sa = { .sa_handler = ship_on_signal };
	char seen[256][320], key[320], path[4352];
	int nseen = 0, ret = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pr_info("watching %s for trace files (SIGINT or SIGTERM stops)\n", o->watch);
	while (!ship_stop && !ret) {
		DIR *d = opendir(o->watch);
		struct dirent *e;
		struct stat st;
		int taken = 0;
		__u32 waiting = 0;

		if (!d)
			return pr_err("--watch %s: %s\n", o->watch, strerror(errno)),
			       EXIT_READ_FAIL;
		while (!ret && (e = readdir(d))) {
			size_t n = strlen(e->d_name);
			int i;

			if (n < 5 || strcmp(e->d_name + n - 4, ".bst"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", o->watch, e->d_name);
			if (stat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			snprintf(key, sizeof(key), "%.256s %lld %lld", e->d_name,
				 (long long)st.st_size, (long long)st.st_mtime);
			for (i = 0; i < nseen && strcmp(seen[i], key); i++)
				;
			if (i < nseen)
				continue;
			ret = ship_take(s, sp, o, path);
			if (ret == EXIT_READ_FAIL || ret == EXIT_SHIP_BUSY)
				ret = 0; /* said; a file that cannot be read is not the others' end */
			/* taken (or refused for good): not again; one being written: next round */
			if (!ret && !access(path, F_OK) && !o->busy) {
				snprintf(seen[nseen % 256], sizeof(seen[0]), "%s", key);
				nseen++;
			}
			taken = 1;
		}
		closedir(d);
		/* a file a server down left in the spool is tried again every round */
		if (!taken)
			ship_spool__bytes(sp, &waiting);
		if (!ret && (taken || waiting)) {
			ret = ship_drain(s, sp, o);
			/* spooled, or another ship's: the next round sees it */
			ret = ret == EXIT_SHIP_DOWN || ret == EXIT_SHIP_BUSY ||
					      ret == EXIT_SHIP_CLAIMED
				      ? 0
				      : ret;
		}
		for (int t = 0; t < 10 && !ship_stop && !ret; t++)
			usleep(100000);
	}
	return ret;
}

int cmd_ship(int argc, char **argv)
{
	struct ship_opts o = { .spool_max = 1ULL << 30,
			       .retry_ns = 60000000000ULL,
			       .timeout_s = 30,
			       .labels = { .rank = -1 } };
	char dir[4400], cache[4096];
	struct ship_spool sp;
	struct ch_server s;
	int ret, status = 0;

	ret = ship_parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	o.batch_rows = SHIP_BATCH_ROWS;
	if (getenv("BPFSIGHT_SHIP_BATCH_ROWS")) {
		o.batch_rows = strtoull(getenv("BPFSIGHT_SHIP_BATCH_ROWS"), NULL, 10);
		if (!o.batch_rows || o.batch_rows > SHIP_BATCH_ROWS)
			return pr_err("BPFSIGHT_SHIP_BATCH_ROWS: 1 to %d\n", SHIP_BATCH_ROWS), 1;
	}
	if (ch_server__parse(&s, o.url))
		return EXIT_READ_FAIL;
	s.timeout_s = o.timeout_s;
	s.verbose = o.verbose;
	if (*s.job && ch_labels__option(&o.labels, 1, s.job))
		return EXIT_READ_FAIL;
	if (!o.spool) {
		if (!cache_dir__path(cache, sizeof(cache))) {
			pr_err("the caches are off (BPFSIGHT_NO_CACHE): name a spool, --spool DIR\n");
			return EXIT_READ_FAIL;
		}
		snprintf(dir, sizeof(dir), "%s/ship/%s_%s", cache, s.host, s.port);
		o.spool = dir;
	}
	if (ship_spool__open(&sp, o.spool, o.spool_max))
		return EXIT_READ_FAIL;
	/* whose the claims are: this host's spool (ship_claim.h) */
	ret = ship_claim__claimant(sp.dir, o.claimant, sizeof(o.claimant));
	if (ret) {
		pr_err("the spool %s: %s\n", sp.dir, strerror(-ret));
		return EXIT_READ_FAIL;
	}
	o.claim.claimant = o.claimant;
	for (int i = optind; i < argc; i++) {
		ret = ship_take(&s, &sp, &o, argv[i]);
		status = status ?: ret;
	}
	ret = ship_drain(&s, &sp, &o);
	/* a server down at the start: what was taken stays spooled, the watch sends it later */
	if (o.watch &&
	    (!ret || ret == EXIT_SHIP_DOWN || ret == EXIT_SHIP_BUSY || ret == EXIT_SHIP_CLAIMED))
		ret = ship_watch(&s, &sp, &o);
	else
		ret = ret ?: status;
	/* what a server down or a refusal left spooled is unlocked for the next ship */
	while (o.held)
		ship_release(&o, &sp, o.held->job, o.held->id);
	return ret;
}
