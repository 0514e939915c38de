// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One spooled file to the server, each row once: ship_send.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ch_schema.h"
#include "ship_send.h"

/* A query's one-line answer of numbers into V[N]: how many it read. */
static int ch_numbers(struct ch_server *s, const char *sql, unsigned long long *v, int n)
{
	char *out = NULL, *p, *end;
	int err = ch_server__run(s, sql, NULL, 0, &out), i;

	if (err)
		return err;
	for (i = 0, p = out; i < n; i++, p = end) {
		v[i] = strtoull(p, &end, 10);
		if (end == p)
			break;
	}
	free(out);
	return i;
}

static int ship_post(struct ch_server *s, const char *cols, const char *buf, size_t len)
{
	char sql[512];

	snprintf(sql, sizeof(sql), "INSERT INTO " CH_DB ".events (%s) FORMAT TabSeparated", cols);
	return ch_server__run(s, sql, buf, len, NULL);
}

/* The ledger's row: the host and file as the first row has them (TSV already). */
static int ship_ledger(struct ch_server *s, const char *job, const char *id, const char *first,
		       __u64 rows)
{
	const char *host = strchr(first, '\t'), *rank, *file, *fend;
	char *row = NULL;
	int n, err;

	if (!host || !(rank = strchr(host + 1, '\t')) || !(file = strchr(rank + 1, '\t')) ||
	    !(fend = strchr(file + 1, '\t')))
		return -EPROTO;
	host++;
	file++;
	n = asprintf(&row, "%s\t%s\t%.*s\t%.*s\t%llu\n", job, id, (int)(rank - host), host,
		     (int)(fend - file), file, (unsigned long long)rows);
	if (n < 0)
		return -ENOMEM;
	err = ch_server__run(s,
			     "INSERT INTO " CH_DB ".files (job, file_id, host, file, rows) "
			     "FORMAT TabSeparated",
			     row, (size_t)n, NULL);
	free(row);
	return err;
}

int ship_send__shipped(struct ch_server *s, const char *job, const char *id)
{
	unsigned long long v = 0;
	char sql[512];
	int n;

	n = ch_version__ask(s); /* nothing else to a server older than the oldest tested */
	if (n)
		return n;
	snprintf(sql, sizeof(sql),
		 "SELECT count() FROM " CH_DB ".files WHERE job = '%s' AND file_id = '%s'", job,
		 id);
	n = ch_numbers(s, sql, &v, 1);
	return n < 0 ? n : n == 1 && v;
}

int ship_send__file(struct ch_server *s, const char *path, const char *cols, const char *job,
		    const char *id, __u64 batch_rows, struct ship_claim *claim,
		    struct ship_result *res)
{
	unsigned long long v[2] = { 0, 0 };
	char sql[512], *line = NULL, *first = NULL, *batch = NULL;
	size_t cap = 0, blen = 0, bcap = 0, nrows = 0;
	ssize_t n;
	FILE *f;
	int err;

	memset(res, 0, sizeof(*res));
	err = ship_send__shipped(s, job, id);
	if (err < 0)
		return err;
	if (err) {
		res->already = 1;
		/* a claim of this spool's left by a ship cut after the ledger row */
		return claim ? ship_claim__drop(s, job, id, claim) : 0;
	}
	if (claim) {
		err = ship_claim__take(s, job, id, claim);
		if (err < 0)
			return err;
		if (!err) {
			snprintf(s->error, sizeof(s->error),
				 "job %.48s's file %.40s: another spool is shipping it (%.200s): "
				 "nothing sent, it stays spooled (if that ship is gone, its host "
				 "down or its process killed: ship again with --take-over)",
				 job, id, claim->holder);
			return -EALREADY;
		}
	}
	snprintf(sql, sizeof(sql),
		 "SELECT count(), max(seq) FROM " CH_DB ".events WHERE job = '%s' AND "
		 "file_id = '%s'",
		 job, id);
	err = ch_numbers(s, sql, v, 2);
	if (err < 0)
		return err;
	if (err != 2)
		return -EPROTO;
	if (v[0] && v[0] != v[1] + 1) {
		snprintf(s->error, sizeof(s->error),
			 "the server holds %llu rows of %s but not its first %llu: not ship's "
			 "(ALTER TABLE " CH_DB
			 ".events DELETE WHERE file_id = '%s', then ship again)",
			 v[0], id, v[0], id);
		return -EPROTO;
	}
	res->held = v[0];
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = 0;
	while (!err && (n = getline(&line, &cap, f)) > 0) {
		if (!first && !(first = strdup(line)))
			err = -ENOMEM;
		if (res->rows++ < res->held)
			continue;
		if (blen + (size_t)n + 1 > bcap) {
			size_t ncap = (blen + (size_t)n + 1) * 2;
			char *nb = realloc(batch, ncap);

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			batch = nb;
			bcap = ncap;
		}
		memcpy(batch + blen, line, (size_t)n);
		blen += (size_t)n;
		if (++nrows >= batch_rows || blen >= SHIP_BATCH_BYTES) {
			err = ship_post(s, cols, batch, blen);
			res->sent += err ? 0 : nrows;
			blen = nrows = 0;
		}
	}
	if (!err && ferror(f))
		err = -EIO;
	fclose(f);
	if (!err && nrows) {
		err = ship_post(s, cols, batch, blen);
		res->sent += err ? 0 : nrows;
	}
	if (!err && first)
		err = ship_ledger(s, job, id, first, res->rows);
	if (!err && claim)
		err = ship_claim__drop(s, job, id, claim);
	free(line);
	free(first);
	free(batch);
	return err;
}
