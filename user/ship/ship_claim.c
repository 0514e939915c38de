// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A file's claim in the server, one ship at a time across spools and hosts: ship_claim.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ch_schema.h"
#include "ch_tsv.h"
#include "msg.h"
#include "ship_claim.h"

/* S as an SQL string's body: quotes and backslashes escaped, into BUF. */
static const char *sql_str(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		if (*s == '\'' || *s == '\\')
			buf[o++] = '\\';
		buf[o++] = *s;
	}
	buf[o] = 0;
	return buf;
}

int ship_claim__claimant(const char *dir, char *buf, size_t len)
{
	char host[256] = "", path[PATH_MAX];

	if (gethostname(host, sizeof(host) - 1))
		return -errno;
	if (!realpath(dir, path))
		return -errno;
	return snprintf(buf, len, "%s:%s", host, path) < (int)len ? 0 : -ENAMETOOLONG;
}

/*
 * The file's claims in the order the server made them visible (their part's first block); a
 * partition's name is its claim id (18.16 shows it bare, later releases quoted). ALL INNER:
 * a claim's partition is one row (ANY INNER de-duplicates the left side too on 20.x and
 * later: the same here, where a claim is one row, but not the same SQL).
 */
const char ship_claim__order_sql[] =
	"SELECT claim_id, claimant, host, spool, pid, toString(at) FROM (SELECT claim_id, "
	"claimant, host, spool, pid, at FROM " CH_DB ".claims WHERE job = '%s' AND file_id = "
	"'%s') AS claims ALL INNER JOIN (SELECT replaceAll(partition, '\\'', '') AS claim_id, "
	"min(min_block_number) AS first_block FROM system.parts WHERE database = '" CH_DB "' AND "
	"table = 'claims' AND active GROUP BY claim_id) AS parts USING claim_id ORDER BY "
	"first_block FORMAT TabSeparated";

/* Drop claim ID (its partition). */
static int drop_claim(struct ch_server *s, const char *id)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "ALTER TABLE " CH_DB ".claims DROP PARTITION '%s'", id);
	return ch_server__run(s, sql, NULL, 0, NULL);
}

/*
 * Each live claim of the file, in order: FN(ARG, its fields) for each, until FN says stop
 * (non-zero; its own errors it keeps in ARG). 0, or run's errors.
 */
static int each_claim(struct ch_server *s, const char *job, const char *id,
		      int (*fn)(void *arg, char **field), void *arg)
{
	char sql[1024], *out = NULL, *line, *save = NULL;
	int err, stop = 0;

	snprintf(sql, sizeof(sql), ship_claim__order_sql, job, id);
	err = ch_server__run(s, sql, NULL, 0, &out);
	/* each line's fields unescaped (a spool's path may hold a tab or a backslash) */
	for (line = err ? NULL : strtok_r(out, "\n", &save); line && !stop;
	     line = strtok_r(NULL, "\n", &save)) {
		char *field[6], *p = line;
		int n = 0;

		for (const char *c = line; *c; c++)
			n += *c == '\t'; /* an escaped tab is "\\t": these are the separators */
		for (int i = 0; n == 5 && i < 6; i++)
			field[i] = ch_tsv__field(p, &p);
		if (n == 5)
			stop = fn(arg, field);
	}
	free(out);
	return err;
}

struct claim_walk {
	struct ch_server *s;
	struct ship_claim *c;
	int first, won, err;
};

/* --take-over: every claim not C's dropped. */
static int drop_others(void *arg, char **f)
{
	struct claim_walk *w = arg;

	if (strcmp(f[1], w->c->claimant) && (w->err = drop_claim(w->s, f[0])))
		return 1;
	if (!strcmp(f[1], w->c->claimant))
		return 0;
	pr_note("took over the claim of host %s, spool %s, pid %s (since %s)\n", f[2], f[3], f[4],
		f[5]);
	return 0;
}

/* The first claim decides: C's (won), or another's (said in C->holder). */
static int decide(void *arg, char **f)
{
	struct claim_walk *w = arg;

	w->won = !strcmp(f[1], w->c->claimant);
	if (!w->won)
		snprintf(w->c->holder, sizeof(w->c->holder), "host %s, spool %s, pid %s, since %s",
			 f[2], f[3], f[4], f[5]);
	return 1;
}

/* C's own claims dropped (all of them: a cut ship of the same spool left one too). */
static int drop_mine(void *arg, char **f)
{
	struct claim_walk *w = arg;

	if (!strcmp(f[1], w->c->claimant) && (w->err = drop_claim(w->s, f[0])))
		return 1;
	return 0;
}

int ship_claim__take(struct ch_server *s, const char *job, const char *id, struct ship_claim *c)
{
	struct claim_walk w = { .s = s, .c = c };
	char sql[4096], host[256] = "", q1[1024], q2[512], q3[1024], cid[64];
	unsigned long long h = 0xcbf29ce484222325ull;
	struct timespec ts;
	int err;

	c->holder[0] = 0;
	if (c->take_over) {
		err = each_claim(s, job, id, drop_others, &w);
		if (err || w.err)
			return err ?: w.err;
	}
	/*
	 * the claim's id: its partition's name, of characters SQL and partition names take,
	 * its claimant's hash in it so that two hosts' ships never share one (a loser drops its
	 * own partition)
	 */
	for (const char *p = c->claimant; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(cid, sizeof(cid), "c%016llx-%d-%lld-%09ld", (unsigned long long)h, (int)getpid(),
		 (long long)ts.tv_sec, ts.tv_nsec);
	gethostname(host, sizeof(host) - 1);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO " CH_DB
		 ".claims (job, file_id, claim_id, claimant, host, spool, pid) "
		 "VALUES ('%s', '%s', '%s', '%s', '%s', '%s', %d)",
		 job, id, cid, sql_str(c->claimant, q1, sizeof(q1)), sql_str(host, q2, sizeof(q2)),
		 sql_str(strchr(c->claimant, ':') + 1, q3, sizeof(q3)), (int)getpid());
	err = ch_server__run(s, sql, NULL, 0, NULL);
	if (err)
		return err;
	err = each_claim(s, job, id, decide, &w);
	if (err)
		return err;
	if (w.won)
		return 1;
	if (!c->holder[0]) /* our claim is not there: dropped by a --take-over meanwhile */
		snprintf(c->holder, sizeof(c->holder), "a ship that took it over");
	err = drop_claim(s, cid);
	return err ? err : 0;
}

int ship_claim__drop(struct ch_server *s, const char *job, const char *id,
		     const struct ship_claim *c)
{
	struct claim_walk w = { .s = s, .c = (struct ship_claim *)c };
	int err = each_claim(s, job, id, drop_mine, &w);

	return err ?: w.err;
}
