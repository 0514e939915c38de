// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export --format clickhouse (export_clickhouse.h): one row per decoded event, as `dump` has
 * it (kind, name, time, thread, arguments as JSON), labelled with the job, host, rank and the
 * file it came from, its time on one clock: the wall clock in ns, from the header's clock
 * pair (a merged file's is merge's fitted clock, its ranks' own offsets applied). One wide
 * table rather than one per kind: the fleet's questions group by kind, host and rank, and a
 * kind added to bpfsight needs no new table. Metadata records (strings, symbols) make no row,
 * but those the reports read (rec_decoder's row: the in-kernel aggregates' snapshots, a
 * thread's last switch-out); and what the reports read of the whole file ends it (ch_file_rows).
 * The export model's EX_ROWS view: what a family adds to the rows for its reports and rules in
 * the server (keys on a record's, a stack's, a process's row; rows of its own) is its struct
 * ex_rows, rendered here as any format renders the model; this file names no family.
 *
 * Streamed: a row is written as its event is read; memory holds one row's arguments, and the
 * file's threads and stacks (for the last rows): it grows with those, never with events.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export.h"
#include "export_clickhouse.h"
#include "export_model.h"
#include "family.h"
#include "cpu_samples.h"
#include "export_samples.h"
#include "array.h"
#include "hmap.h"
#include "json.h"
#include "stack_format.h"
#include "trace_ranks.h"

struct ch_export {
	struct ex_sink sink; /* EX_ROWS: the families' part of the rows */
	FILE *f;
	FILE *args; /* one row's arguments as JSON */
	char *args_buf;
	size_t args_len;
	/* the row being made, as the families' keys go on it: an event's args written so far
	 * (RAW: ",key":value appended; EMPTY: none yet), else a stack's or process's object (J) */
	int in_row, raw, empty;
	struct json *j;
	struct export_opts labels;
	const char *host;
	/* the header's CLOCK_REALTIME less its CLOCK_MONOTONIC, added modulo 2^64: a corrupt
	 * header's clocks wrap, never overflow */
	__u64 wall_minus_mono;
	__u64 seq;
	struct hmap *threads; /* {pid, tid} of the records (a merged file's namespaced): names */
	struct hmap *stacks;  /* {stack id, in kernel} of the rows: their folded text */
	struct hmap *frames;  /* stack_frame__key of their frames -> __u32 id, 1 and up */
	const struct bs_frame **frame; /* frame[id - 1]: the first of each (the model's) */
	size_t nframes, frame_cap;
	/* the records' first and last times, the first clamped to the start (gil_sum's span) */
	__u64 first_ts, last_ts;
	char *families; /* the header's, the families recorded (the verdict says so); NULL: none */
	char *gpus;	/* the header's GPUs, a line each (the MFU rule's peak); NULL: none */
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
	ex_sink__fini(&st->sink);
	if (st->args)
		fclose(st->args);
	free(st->args_buf);
	hmap__free(st->threads);
	hmap__free(st->stacks);
	hmap__free(st->frames);
	free(st->frame);
	free(st->families);
	free(st->gpus);
	free(st);
}

static const struct ex_sink_ops ch_sink_ops;

static void *ch_open(const char *out, const struct trace_meta *meta, const struct export_opts *opts,
		     int *err)
{
	struct ch_export *st = calloc(1, sizeof(*st));
	int fd;

	if (!st) {
		*err = -ENOMEM;
		return NULL;
	}
	st->labels = opts ? *opts : (struct export_opts){ .rank = -1 };
	if (ex_sink__init(&st->sink, &ch_sink_ops, meta, EX_ROWS) || ex_sink__rows_new(&st->sink)) {
		*err = -ENOMEM;
		ch_free(st);
		return NULL;
	}
	st->args = open_memstream(&st->args_buf, &st->args_len);
	st->threads = hmap__new(1);
	st->stacks = hmap__new(1);
	st->frames = hmap__new(sizeof(__u32));
	fd = st->args && st->threads && st->stacks && st->frames ? export__create(out) : -ENOMEM;
	if (fd < 0 || !(st->f = fdopen(fd, "w"))) {
		*err = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		ch_free(st);
		return NULL;
	}
	st->host = meta->hostname ? meta->hostname : "";
	st->wall_minus_mono = meta->start.realtime_ns - meta->start.mono_ns;
	st->families = meta->families ? strdup(meta->families) : NULL; /* NULL: not said */
	st->gpus = meta->gpus && *meta->gpus ? strdup(meta->gpus) : NULL;
	return st;
}

/* One row: its labels (a merged file's pid's rank, host and file), times, names; ARGS JSON. */
static int ch_row(struct ch_export *st, const struct trace_model *m, __u32 pid, __u32 tid, __u64 ts,
		  __u64 dur, const char *kind, const char *name, const char *args, size_t args_len)
{
	const __u32 low = (1u << BS_RANK_NS_SHIFT) - 1;
	const struct trace_rank *r;
	const char *host = st->host, *file = st->labels.file;
	__s32 rank = st->labels.rank;
	FILE *f = st->f;

	/* A merged file: the rank, host and file of the pid's namespace. */
	r = trace_model__ranks(m) ? trace_model__rank(m, pid) : NULL;
	if (r) {
		rank = r->r.rank;
		host = r->host ? r->host : host;
		file = r->path;
	}
	ch_tsv_str(f, st->labels.job);
	ch_tsv_str(f, host);
	fprintf(f, "%d\t", rank);
	ch_tsv_str(f, file);
	ch_tsv_str(f, st->labels.file_id);
	fprintf(f, "%llu\t%lld\t%llu\t%u\t%u\t", (unsigned long long)st->seq++,
		(long long)(__s64)(ts + st->wall_minus_mono), (unsigned long long)dur, pid & low,
		tid & low);
	ch_tsv_str(f, kind);
	ch_tsv_str(f, name);
	ch_tsv(f, args, args_len);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

/* V as a JSON value into J. */
static void ch_value(struct json *j, const struct ex_value *v)
{
	switch (v->kind) {
	case EX_INT:
		json__s64(j, v->i);
		break;
	case EX_UINT:
		json__u64(j, v->u);
		break;
	case EX_REAL:
	case EX_FIXED:
		json__double_g(j, v->d); /* exact: the server reads back the double it was */
		break;
	case EX_TEXT:
	case EX_STRING:
	case EX_NAME:
		if (v->s) {
			json__str(j, v->s);
			break;
		}
		/* fallthrough */
	default:
		json__null(j);
	}
}

/* The sink's key: V on the row being made (an event's args, or a stack's, a process's). */
static int ch_key(struct ex_sink *s, const struct ex_value *v)
{
	struct ch_export *st = (struct ch_export *)s;
	struct json j;

	if (!st->in_row)
		return 0;
	if (!st->raw) {
		json__key(st->j, v->key);
		ch_value(st->j, v);
		return 0;
	}
	fprintf(st->args, "%s", st->empty ? "" : ",");
	st->empty = 0;
	json__init(&j, st->args, 0);
	json__str(&j, v->key);
	fputc(':', st->args);
	ch_value(&j, v);
	return ferror(st->args) ? -ENOMEM : 0;
}

static int ch_row_id(struct ex_sink *s, __u64 *id)
{
	struct ch_export *st = (struct ch_export *)s;

	*id = st->seq;
	return st->in_row && st->raw;
}

/* A family's own row (its ex_rows.end): at the recording's start. */
static int ch_own_row(struct ex_sink *s, __u32 pid, __u32 tid, const char *kind, const char *name,
		      const struct ex_value *v, __u32 n)
{
	struct ch_export *st = (struct ch_export *)s;
	const struct trace_model *m = s->model;
	struct json j;

	rewind(st->args);
	json__init(&j, st->args, 0);
	json__begin_object(&j);
	for (__u32 i = 0; i < n; i++) {
		json__key(&j, v[i].key);
		ch_value(&j, &v[i]);
	}
	json__end_object(&j);
	if (fflush(st->args))
		return -ENOMEM;
	return ch_row(st, m, pid, tid, trace_model__start(m), 0, kind, name, st->args_buf,
		      st->args_len);
}

static const struct ex_sink_ops ch_sink_ops = {
	.key = ch_key,
	.row_id = ch_row_id,
	.own_row = ch_own_row,
};

/*
 * The families' keys on REC's row (struct ex_rows.record), into its args' object: written over
 * its closing brace, each `,"key":value`, the comma left out when they are its first. A
 * record that makes no row (ROW 0) is theirs to see all the same.
 */
static int ch_rows_record(struct ch_export *st, const struct bs_hdr *rec, int row)
{
	size_t had = st->args_len;
	int err;

	if (!row || !had || st->args_buf[had - 1] != '}')
		return ex_sink__rows_record(&st->sink, rec);
	fseek(st->args, -1, SEEK_CUR);
	st->in_row = st->raw = 1;
	st->empty = had == 2; /* "{}" */
	err = ex_sink__rows_record(&st->sink, rec);
	st->in_row = st->raw = 0;
	if (err)
		return err;
	fputc('}', st->args);
	return fflush(st->args) ? -ENOMEM : 0;
}

static int ch_record(void *vst, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	struct ch_export *st = vst;
	struct event row;
	struct json j;

	st->sink.model = m;
	/* what gil_data__add takes of every record: the span, the threads (their names) */
	__u64 ts = rec->ts && rec->ts < trace_model__start(m) ? trace_model__start(m) : rec->ts;

	if (ts && (!st->first_ts || ts < st->first_ts))
		st->first_ts = ts;
	if (ts > st->last_ts)
		st->last_ts = ts;
	if (!hmap__get(st->threads, (struct hkey){ rec->pid, rec->tid }, 1))
		return -ENOMEM;
	/* a fork's child is a thread the reports know (gil_sum lists it) before it has a record */
	if (rec->type == BS_REC_FORK && rec->size >= sizeof(struct bs_fork) &&
	    !hmap__get(st->threads,
		       (struct hkey){ ((const struct bs_fork *)rec)->child_pid,
				      ((const struct bs_fork *)rec)->child_tid },
		       1))
		return -ENOMEM;
	/* A metadata record the reports read (short calls' aggregates) is a row of its own. */
	if (!ev && family__decode_row(rec, m, &row) == 1)
		ev = &row;
	if (!ev)
		return ch_rows_record(st, rec, 0);
	if (cpu_samples__is_sample(rec, ev) &&
	    !hmap__get(st->stacks, (struct hkey){ ev->stack_id, ev->stack_in_kernel }, 1))
		return -ENOMEM;
	rewind(st->args);
	json__init(&j, st->args, 0);
	event__json_args(ev, &j);
	if (fflush(st->args))
		return -ENOMEM;
	/* an event's stack (--stacks=...): its id in args, beside a sample's own, and its row */
	if (ev->stack && !ev->stack_id && st->args_len && st->args_buf[st->args_len - 1] == '}') {
		if (!hmap__get(st->stacks, (struct hkey){ ev->stack->id, 0 }, 1))
			return -ENOMEM;
		fseek(st->args, -1, SEEK_CUR);
		fprintf(st->args, "%s\"stack_id\":%u}", st->args_len > 2 ? "," : "", ev->stack->id);
		if (fflush(st->args))
			return -ENOMEM;
	}
	{
		int err = ch_rows_record(st, rec, 1);

		if (err)
			return err;
	}
	return ch_row(st, m, ev->pid, ev->tid, ev->ts, ev->dur, ev->kind, ev->name, st->args_buf,
		      st->args_len);
}

/*
 * A merged file's ranks (`rank`, one per RANK record, in file order: the ranks report's
 * columns; its row labelled with the rank's own host, rank and file, its pid the rank's).
 */
static int ch_rank_rows(struct ch_export *st, const struct trace_model *m)
{
	const struct trace_rank *r;
	__u32 i = 0;
	int err = 0;

	while (!err && (r = trace_ranks__next(trace_model__ranks(m), &i))) {
		struct json j;

		rewind(st->args);
		json__init(&j, st->args, 0);
		json__begin_object(&j);
		json__kv_u64(&j, "index", r->index);
		json__kv_u64(&j, "ns", r->r.ns);
		json__kv_s64(&j, "rank", r->r.rank);
		json__kv_s64(&j, "nranks", r->r.nranks);
		json__kv_u64(&j, "pid", r->r.h.pid);
		if (r->host)
			json__kv_str(&j, "host", r->host);
		json__kv_str(&j, "aligned_by", trace_ranks__aligned_by(r->r.flags));
		json__kv_s64(&j, "offset_ns", r->r.offset_ns);
		json__kv_u64(&j, "offset_err_ns", r->r.offset_err_ns);
		json__kv_s64(&j, "drift_ppb", r->r.drift_ppb);
		json__kv_u64(&j, "points", r->r.points);
		json__kv_u64(&j, "residual_rms_ns", r->r.residual_rms_ns);
		json__kv_u64(&j, "residual_max_ns", r->r.residual_max_ns);
		json__end_object(&j);
		err = fflush(st->args)
			      ? -ENOMEM
			      : ch_row(st, m, r->r.h.pid, r->r.h.pid, trace_model__start(m), 0,
				       "rank", r->label ? r->label : "", st->args_buf,
				       st->args_len);
	}
	return err;
}

/* Frame F's id among the file's frames (stack_frame__key tells them apart): 0 without memory. */
static __u32 ch_frame_id(struct ch_export *st, const struct bs_frame *f)
{
	__u64 k[2];
	__u32 *id;

	stack_frame__key(f, k);
	id = hmap__get(st->frames, (struct hkey){ k[0], k[1] }, 1);
	if (id && !*id) {
		if (array__grow((void **)&st->frame, st->nframes, &st->frame_cap,
				sizeof(*st->frame)))
			return 0;
		st->frame[st->nframes++] = f;
		*id = (__u32)st->nframes;
	}
	return id ? *id : 0;
}

/* S's frames' ids, innermost first, comma-separated: its `frames`. */
static int ch_frame_ids(struct ch_export *st, const struct trace_stack *s, struct json *j)
{
	char *ids = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&ids, &len);
	int err = f ? 0 : -ENOMEM;

	for (__u32 i = 0; i < s->nframes && !err; i++) {
		__u32 id = ch_frame_id(st, &s->frames[i]);

		err = id ? 0 : -ENOMEM;
		fprintf(f, "%s%u", i ? "," : "", id);
	}
	if (f && fclose(f) && !err)
		err = -ENOMEM;
	if (!err)
		json__kv_str(j, "frames", ids);
	free(ids);
	return err;
}

/* The families' keys (struct ex_rows) on J's object: process PID's (PROCESS), else S's. */
static void ch_keys_of(struct ch_export *st, struct json *j, const struct trace_stack *s,
		       int kernel, int process, __u32 pid)
{
	st->in_row = 1;
	st->raw = 0;
	st->j = j;
	if (process)
		ex_sink__rows_process(&st->sink, pid);
	else
		ex_sink__rows_stack(&st->sink, s, kernel);
	st->in_row = 0;
	st->j = NULL;
}

/*
 * Each stack the rows name (`stack`: its folded text as its name; its frames' ids innermost
 * first, `frames`; a user stack's hook's keys), then each frame they name (`frame`: its
 * function as stats' reports show it as its name; its id, kind, function and file string ids,
 * line, address and file): what cpu_sum, gil_stacks and offcpu_stacks read, which SQL cannot
 * read from the folded text, each frame's text once however many stacks hold it.
 */
static int ch_stack_rows(struct ch_export *st, const struct trace_model *m)
{
	__u64 start = trace_model__start(m);
	struct hkey key;
	size_t it = 0;
	char buf[512];
	int err = 0;

	while (!err && hmap__next(st->stacks, &it, &key)) {
		const struct trace_stack *s = trace_model__stack(m, (__u32)key.a);
		char *line = export_folded__line(s, (int)key.b, m);
		struct json j;

		if (!line)
			return -ENOMEM;
		rewind(st->args);
		json__init(&j, st->args, 0);
		json__begin_object(&j);
		json__kv_u64(&j, "stack_id", key.a);
		json__kv_s64(&j, "kernel", (int)key.b);
		if (s && s->nframes)
			err = ch_frame_ids(st, s, &j);
		ch_keys_of(st, &j, s, (int)key.b, 0, 0);
		json__end_object(&j);
		if (!err)
			err = fflush(st->args) ? -ENOMEM
					       : ch_row(st, m, 0, 0, start, 0, "stack", line,
							st->args_buf, st->args_len);
		free(line);
	}
	for (size_t i = 0; !err && i < st->nframes; i++) {
		const struct bs_frame *f = st->frame[i];
		struct json j;

		rewind(st->args);
		json__init(&j, st->args, 0);
		json__begin_object(&j);
		json__kv_u64(&j, "frame_id", i + 1);
		json__kv_u64(&j, "frame_kind", f->kind);
		json__kv_u64(&j, "func_id", f->func_id);
		json__kv_u64(&j, "file_id", f->file_id);
		json__kv_u64(&j, "line", f->line);
		json__kv_u64(&j, "addr", f->addr);
		json__kv_str(&j, "path", stack_frame__file(f, m));
		json__end_object(&j);
		err = fflush(st->args) ? -ENOMEM
				       : ch_row(st, m, 0, 0, start, 0, "frame",
						stack_frame__func(f, m, buf, sizeof(buf)),
						st->args_buf, st->args_len);
	}
	return err;
}

/*
 * A process of a pool (a family's finding: a trainer's DataLoader workers), as args of its
 * threads' names: `pool` ("DataLoader worker"), `owner` (its pid as the reports show it) and
 * `owner_what` ("trainer"): stats --from's model joins it to the pool as stats' does.
 */
static void pool_args(const struct trace_model *m, __u32 pid, struct json *j)
{
	__u32 owner = 0, n = 0, o2 = 0, n2 = 0;
	const char *what, *owner_what;

	if (!trace_model__process_role(m, pid) || !(what = trace_model__pool(m, pid, &owner, &n)) ||
	    !(owner_what = trace_model__pool(m, owner, &o2, &n2)))
		return;
	json__kv_str(j, "pool", what);
	json__kv_u64(j, "owner", owner);
	json__kv_str(j, "owner_what", owner_what);
}

/* ,"KEY":"VALUE" into F, VALUE escaped as a JSON string; nothing for no VALUE. */
static void ch_args_str(FILE *f, const char *key, const char *value)
{
	struct json j;

	if (!value)
		return;
	fprintf(f, ",\"%s\":", key);
	json__init(&j, f, 0);
	json__str(&j, value);
}

/*
 * What the reports read of the whole file, as the last rows: the recording's window
 * (`trace_window`: its start, its length; sched_sum clips the first run slices to it; the
 * first and last records' times, the first clamped to the start, and its end if it has one:
 * gil_sum's span, all wall-clock ns), each stack the rows name (`stack`: its folded text as
 * its name, export --format folded's; `stacks --from` counts the samples by it; a user
 * stack's the call it is in and its line in the job's code, rank_waits'), its ranks, and
 * each thread's names as the file's reports name it (`thread_names`: the thread's name, its
 * process's in args, either left out when the file has none; a merged file's rank namespace,
 * `ns`, with which its reports show the ids).
 */
static int ch_file_rows(struct ch_export *st, const struct trace_model *m)
{
	__u64 start = trace_model__start(m), end = trace_model__end(m);
	struct hkey key;
	size_t it = 0;
	int err;

	/* the families' own rows (struct ex_rows.end), before the window's */
	st->sink.model = m;
	if ((err = ex_sink__rows_end(&st->sink)))
		return err;
	rewind(st->args);
	fprintf(st->args, "{\"first_ts\":%lld,\"last_ts\":%lld",
		(long long)(st->first_ts + st->wall_minus_mono),
		(long long)(st->last_ts + st->wall_minus_mono));
	if (end)
		fprintf(st->args, ",\"end_ts\":%lld", (long long)(end + st->wall_minus_mono));
	/* what a record with no time (CUPTI's start of 0) has as its ts: the reports skip it */
	fprintf(st->args, ",\"clock_shift\":%lld", (long long)st->wall_minus_mono);
	/* the families and GPUs recorded, as JSON strings (a header's text: escaped); the
	 * GPUs a line each, the MFU rule's peak (cublas_step_gemms) */
	ch_args_str(st->args, "families", st->families);
	ch_args_str(st->args, "gpus", st->gpus);
	fputc('}', st->args);
	if (fflush(st->args))
		return -ENOMEM;
	err = ch_row(st, m, 0, 0, start, end > start ? end - start : 0, "trace_window",
		     "trace_window", st->args_buf, st->args_len);
	err = err ?: ch_stack_rows(st, m);
	it = 0;
	while (!err && hmap__next(st->threads, &it, &key)) {
		const char *thread = trace_model__thread_name(m, (__u32)key.b);
		const char *proc = trace_model__process_name(m, (__u32)key.a);
		struct json j;

		rewind(st->args);
		json__init(&j, st->args, 0);
		json__begin_object(&j);
		if (proc) {
			json__key(&j, "process");
			json__str(&j, proc);
		}
		if (thread) {
			json__key(&j, "thread");
			json__str(&j, thread);
		}
		pool_args(m, (__u32)key.a, &j);
		ch_keys_of(st, &j, NULL, 0, 1, (__u32)key.a);
		/* a merged file's rank namespace: its reports show the pids and tids with it */
		if (key.a >> BS_RANK_NS_SHIFT) {
			json__key(&j, "ns");
			json__u64(&j, key.a >> BS_RANK_NS_SHIFT);
		}
		json__end_object(&j);
		if (fflush(st->args))
			return -ENOMEM;
		err = ch_row(st, m, (__u32)key.a, (__u32)key.b, start, 0, "thread_names",
			     thread ? thread : "", st->args_buf, st->args_len);
	}
	return err ? err : ch_rank_rows(st, m);
}

static int ch_finish(void *vst, const struct trace_model *m, const struct trace_status *status)
{
	struct ch_export *st = vst;
	int err = ch_file_rows(st, m);

	if (!err && (fflush(st->f) || ferror(st->f)))
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
