// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export --format clickhouse (export_clickhouse.h): one row per decoded event, as `dump` has
 * it (kind, name, time, thread, arguments as JSON), labelled with the job, host, rank and the
 * file it came from, its time on one clock: the wall clock in ns, from the header's clock
 * pair (a merged file's is merge's fitted clock, its ranks' own offsets applied). One wide
 * table rather than one per kind: the fleet's questions group by kind, host and rank, and a
 * kind added to bpfsight needs no new table. Metadata records (strings, symbols) make no row.
 *
 * Streamed: a row is written as its event is read; memory holds one row's arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export.h"
#include "export_clickhouse.h"
#include "json.h"
#include "trace_ranks.h"

struct ch_labels export_clickhouse_labels = { .rank = -1 };
__u64 export_clickhouse_rows;

struct ch_export {
	FILE *f;
	FILE *args; /* one row's arguments as JSON */
	char *args_buf;
	size_t args_len;
	struct ch_labels labels;
	const char *host;
	/* the header's CLOCK_REALTIME less its CLOCK_MONOTONIC, added modulo 2^64: a corrupt
	 * header's clocks wrap, never overflow */
	__u64 wall_minus_mono;
	__u64 seq;
};

/* S as a TabSeparated field: ClickHouse's escapes for the bytes that would end it. */
static void ch_tsv(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		switch (c) {
		case '\t':
			fputs("\\t", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\0':
			fputs("\\0", f);
			break;
		default:
			fputc(c, f);
		}
	}
}

static void ch_tsv_str(FILE *f, const char *s)
{
	if (s)
		ch_tsv(f, s, strlen(s));
	fputc('\t', f);
}

static void ch_free(struct ch_export *st)
{
	if (st->args)
		fclose(st->args);
	free(st->args_buf);
	free(st);
}

static void *ch_open(const char *out, const struct trace_meta *meta, int *err)
{
	struct ch_export *st = calloc(1, sizeof(*st));
	int fd;

	if (!st) {
		*err = -ENOMEM;
		return NULL;
	}
	st->args = open_memstream(&st->args_buf, &st->args_len);
	fd = st->args ? export__create(out) : -ENOMEM;
	if (fd < 0 || !(st->f = fdopen(fd, "w"))) {
		*err = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		ch_free(st);
		return NULL;
	}
	st->labels = export_clickhouse_labels;
	st->host = meta->hostname ? meta->hostname : "";
	st->wall_minus_mono = meta->start.realtime_ns - meta->start.mono_ns;
	export_clickhouse_rows = 0;
	return st;
}

static int ch_record(void *vst, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	const __u32 low = (1u << BS_RANK_NS_SHIFT) - 1;
	struct ch_export *st = vst;
	const struct trace_rank *r;
	const char *host = st->host, *file = st->labels.file;
	__s32 rank = st->labels.rank;
	struct json j;
	FILE *f = st->f;

	if (!ev)
		return 0;
	/* A merged file: the rank, host and file of the pid's namespace. */
	r = trace_model__ranks(m) ? trace_model__rank(m, ev->pid) : NULL;
	if (r) {
		rank = r->r.rank;
		host = r->host ? r->host : host;
		file = r->path;
	}
	rewind(st->args);
	json__init(&j, st->args, 0);
	event__json_args(ev, &j);
	if (fflush(st->args))
		return -ENOMEM;

	ch_tsv_str(f, st->labels.job);
	ch_tsv_str(f, host);
	fprintf(f, "%d\t", rank);
	ch_tsv_str(f, file);
	ch_tsv_str(f, st->labels.file_id);
	fprintf(f, "%llu\t%lld\t%llu\t%u\t%u\t", (unsigned long long)st->seq++,
		(long long)(__s64)(ev->ts + st->wall_minus_mono), (unsigned long long)ev->dur,
		ev->pid & low, ev->tid & low);
	ch_tsv_str(f, ev->kind);
	ch_tsv_str(f, ev->name);
	ch_tsv(f, st->args_buf, st->args_len);
	fputc('\n', f);
	export_clickhouse_rows++;
	return ferror(f) ? -EIO : 0;
}

static int ch_finish(void *vst, const struct trace_model *m, const struct trace_status *status)
{
	struct ch_export *st = vst;
	int err = 0;

	if (fflush(st->f) || ferror(st->f))
		err = -errno ?: -EIO;
	if (fclose(st->f) && !err)
		err = -errno ?: -EIO;
	st->f = NULL;
	ch_free(st);
	return err;
}

static void ch_abort(void *vst)
{
	struct ch_export *st = vst;

	if (!st)
		return;
	if (st->f)
		fclose(st->f);
	ch_free(st);
}

const struct exporter export_clickhouse = {
	.format = "clickhouse",
	.desc = "rows of ClickHouse's bpfsight.events table, TabSeparated (docs/CLICKHOUSE.md)",
	.suffix = ".ch.tsv",
	.open = ch_open,
	.record = ch_record,
	.finish = ch_finish,
	.abort = ch_abort,
};
