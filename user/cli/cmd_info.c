// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight info [--json] FILE: what a trace holds, where it came from, what it lost. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "family_stats.h"
#include "commands.h"
#include "getopt_error.h"
#include "family.h"
#include "report.h"
#include "stats.h"
#include "json.h"
#include "stack_svc.h"
#include "table.h"
#include "table_view.h"
#include "trace_walk.h"
#include "msg.h"
#include "utf8.h"

struct info {
	__u64 by_type[BS_REC_TYPE_MAX];
	__u64 duration_ns;
	int duration_estimated;
	char start_time[40];
	/* The reports info shows (struct report.info): their states, then tables with rows. */
	struct info_report {
		const struct report *r;
		void *st;
		struct table *t;
	} reports[32];
	int nreports;
};

/* One line of the events table: types sharing a kind are counted together. */
struct info_kind {
	char name[32];
	__u64 count;
};

/*
 * The command messages are from: "info", or the command that runs info for its text (report
 * sets BPFSIGHT_CMD in the info it starts), so the user reads the name of what they ran.
 */
static const char *info_cmd(void)
{
	const char *c = getenv("BPFSIGHT_CMD");

	return c && !strcmp(c, "report") ? "report" : "info";
}

static void info_usage(FILE *f)
{
	fprintf(f, "Usage: bpfsight info [--json] FILE\n"
		   "\n"
		   "Where a trace comes from, how long it is, its events by kind, what was lost.\n"
		   "\n"
		   "  -j, --json   one JSON object instead of text\n"
		   "  -h, --help   this help\n");
}

/* "2025-03-01T12:34:56.789Z" */
static void iso_time(__u64 realtime_ns, char *buf, size_t len)
{
	time_t sec = realtime_ns / 1000000000ull;
	struct tm tm;
	size_t n;

	if (!realtime_ns || !gmtime_r(&sec, &tm)) {
		snprintf(buf, len, "unknown");
		return;
	}
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03lluZ",
		 (unsigned long long)(realtime_ns % 1000000000ull / 1000000));
}

/* Kinds in record-type order, merged by name; returns how many. */
static int info_kinds(const struct info *in, struct info_kind *kinds, int max)
{
	const struct rec_decoder *d;
	char name[32];
	int t, k, n = 0;

	for (t = 0; t < BS_REC_TYPE_MAX; t++) {
		if (!in->by_type[t])
			continue;
		d = family__decoder(t);
		if (d && d->kind)
			snprintf(name, sizeof(name), "%s", d->kind);
		else
			snprintf(name, sizeof(name), "unknown_0x%02x", t);
		for (k = 0; k < n && strcmp(kinds[k].name, name); k++)
			;
		if (k == n) {
			if (n == max)
				continue;
			memcpy(kinds[n].name, name, sizeof(name));
			kinds[n++].count = 0;
		}
		kinds[k].count += in->by_type[t];
	}
	return n;
}

static const char *str_or(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

/* "label:  value" with control characters shown as '?': the header is the recorder's text. */
static void info_field(const char *label, const char *value)
{
	printf("%-17s", label);
	utf8__put_printable(stdout, value);
	putchar('\n');
}

/* The header's GPUs, a line each ("0000:18:00.0 NVIDIA H100 80GB HBM3"). */
static void info_gpus(const char *gpus)
{
	char line[256];
	int n = 0;

	for (const char *p = gpus; p && *p; p += strcspn(p, "\n"), p += *p == '\n', n++) {
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
		info_field(n ? "" : "gpus:", line);
	}
	if (!n)
		info_field("gpus:", "none recorded");
}

static void info_json_gpus(struct json *j, const char *gpus)
{
	json__key(j, "gpus");
	json__begin_array(j);
	for (const char *p = gpus; p && *p; p += strcspn(p, "\n"), p += *p == '\n')
		json__strn(j, p, strcspn(p, "\n"));
	json__end_array(j);
}

/*
 * What the families' reorder hooks made of the file (the gpu family's GPU links): their info
 * hooks, in registry order (struct family_reorder).
 */
static void info_print_reorders(const struct trace_walk *w)
{
	for_each_family(it) {
		const struct family_reorder *h = it.f->decode->reorder;

		if (h && h->info_text)
			h->info_text(trace_walk__reorder_state(w, it.f), stdout);
	}
}

static void info_json_reorders(const struct trace_walk *w, struct json *j)
{
	for_each_family(it) {
		const struct family_reorder *h = it.f->decode->reorder;

		if (h && h->info_json)
			h->info_json(trace_walk__reorder_state(w, it.f), j);
	}
}

/* "lost by family:" and a line per family: its total, then its causes. */
static void print_lost_by_family(const struct trace_walk *w)
{
	printf("lost by family:\n");
	for (int i = 0; i < w->nlost_by; i++) {
		const char *fam = w->lost_by[i].family;
		__u64 sum = 0;
		int seen = 0;

		for (int k = 0; k < i && !seen; k++)
			seen = !strcmp(w->lost_by[k].family, fam);
		if (seen)
			continue; /* printed with its first cause */
		for (int k = i; k < w->nlost_by; k++)
			if (!strcmp(w->lost_by[k].family, fam))
				sum += w->lost_by[k].count;
		printf("  %-14s %llu (", fam, (unsigned long long)sum);
		for (int k = i, first = 1; k < w->nlost_by; k++)
			if (!strcmp(w->lost_by[k].family, fam)) {
				printf("%s%s %llu", first ? "" : ", ",
				       loss_cause_name(w->lost_by[k].slot),
				       (unsigned long long)w->lost_by[k].count);
				first = 0;
			}
		printf(")\n");
	}
}

/* "lost_by_family": {"cuda": {"task_map_full": 3}, ...} */
static void json_lost_by_family(struct json *j, const struct trace_walk *w)
{
	json__key(j, "lost_by_family");
	json__begin_object(j);
	for (int i = 0; i < w->nlost_by; i++) {
		const char *fam = w->lost_by[i].family;
		int seen = 0;

		for (int k = 0; k < i && !seen; k++)
			seen = !strcmp(w->lost_by[k].family, fam);
		if (seen)
			continue;
		json__key(j, fam);
		json__begin_object(j);
		for (int k = i; k < w->nlost_by; k++)
			if (!strcmp(w->lost_by[k].family, fam))
				json__kv_u64(j, loss_cause_name(w->lost_by[k].slot),
					     w->lost_by[k].count);
		json__end_object(j);
	}
	json__end_object(j);
}

/* What the unwind tables took (bpf/unwind_table.h), as the recorder's end-of-run line said. */
static void info_print_unwind(const struct trace_walk *w)
{
	const struct bs_unwind_usage *u = trace_model__unwind_usage(w->m);
	char line[256];

	if (!u)
		return;
	unwind_usage__text(u, line, sizeof(line));
	printf("unwind tables:   %s\n", line);
}

static void info_json_unwind(const struct trace_walk *w, struct json *j)
{
	const struct bs_unwind_usage *u = trace_model__unwind_usage(w->m);

	if (!u)
		return;
	json__key(j, "unwind_tables");
	json__begin_object(j);
	json__kv_u64(j, "files", u->files);
	json__kv_u64(j, "files_without", u->failed);
	json__kv_u64(j, "files_refused_full", u->full);
	json__kv_u64(j, "processes", u->procs);
	json__kv_u64(j, "rows", u->rows);
	json__kv_u64(j, "rows_reserved", u->cap_rows);
	json__kv_u64(j, "bytes", u->bytes);
	json__kv_u64(j, "bytes_reserved", u->cap_bytes);
	json__kv_u64(j, "build_ns", u->build_ns);
	json__kv_u64(j, "built", u->built);
	json__kv_u64(j, "from_store", u->cached);
	json__kv_u64(j, "store_refused", u->refused);
	json__kv_u64(j, "store_read_ns", u->cache_ns);
	json__kv_u64(j, "files_frame_pointers", u->fp_files);
	json__end_object(j);
}

static void info_print_text(const struct trace_walk *w, const struct info *in,
			    const struct info_kind *kinds, int nkinds)
{
	const struct trace_status *st = trace_walk__status(w);
	const struct trace_meta *m = trace_walk__meta(w);
	__u32 c;
	int k;

	info_field("file:", w->path);
	info_field("host:", str_or(m->hostname, "unknown"));
	info_field("kernel:", str_or(m->kernel, "unknown"));
	info_field("boot id:", str_or(m->boot_id, "unknown"));
	info_field("command:", str_or(m->cmdline, "unknown"));
	info_field("target:", str_or(m->target, "unknown"));
	info_field("families:", str_or(m->families, "none"));
	info_field("options:", str_or(m->options, "none"));
	info_gpus(m->gpus);
	printf("version:         bpfsight %s (format %u)\n", str_or(m->tool_version, "unknown"),
	       m->version);
	printf("start:           %s\n", in->start_time);
	printf("duration:        %llu.%09llu s%s\n",
	       (unsigned long long)(in->duration_ns / 1000000000ull),
	       (unsigned long long)(in->duration_ns % 1000000000ull),
	       in->duration_estimated ? " (estimated from the last record: no clean end)" : "");
	printf("records:         %llu\n", (unsigned long long)st->records);
	printf("events:\n");
	if (!nkinds)
		printf("  none\n");
	for (k = 0; k < nkinds; k++)
		printf("  %-14s %llu\n", kinds[k].name, (unsigned long long)kinds[k].count);
	if (!w->lost_total && !st->clean_close) {
		/* No end: whatever came after the last complete chunk is not accounted for. */
		printf("lost:            none recorded, but the file has no end (recorder killed, "
		       "or its disk full): what came after the last chunk is unknown\n");
	} else if (!w->lost_total) {
		printf("lost:            none\n");
	} else {
		printf("lost:            %llu events%s\n", (unsigned long long)w->lost_total,
		       st->clean_close ? ""
				       : ", and the file has no end: what came after the last "
					 "chunk is unknown");
		for (c = 0; c <= BS_LOSS_MAX; c++)
			if (w->lost[c])
				printf("  %-14s %llu\n", loss_cause_name(c),
				       (unsigned long long)w->lost[c]);
		print_lost_by_family(w);
	}
	info_print_reorders(w);
	info_print_unwind(w);
	if (w->short_records)
		printf("corrupt records: %llu (too short for their type, not decoded)\n",
		       (unsigned long long)w->short_records);
	printf("chunks:          %u\n", st->chunks);
	printf("corrupt chunks:  %u\n", st->corrupt_chunks);
	printf("skipped bytes:   %llu\n", (unsigned long long)st->skipped_bytes);
	if (st->truncated && st->writer_pid)
		printf("truncated:       no: a recording in progress (recorder pid %u), %u chunks "
		       "so far\n",
		       st->writer_pid, st->chunks);
	else if (st->truncated)
		printf("truncated:       yes (not closed cleanly: recorder killed, or its disk full?); "
		       "recovered %u chunks\n",
		       st->chunks);
	else
		printf("truncated:       no\n");
	printf("clean close:     %s\n", st->clean_close ? "yes" : "no");
	for (int i = 0; i < in->nreports; i++) {
		char title[64];

		if (!in->reports[i].t)
			continue;
		snprintf(title, sizeof(title), "%s:", in->reports[i].r->info->title);
		printf("%-16s per process (bpfsight stats -r %s)\n", title, in->reports[i].r->name);
		/* Exact numbers; a column 0 on every row (a CPU job's GPU counts) said, not shown. */
		table__print_view(in->reports[i].t, &(const struct table_view){ .raw = 1 }, stdout);
	}
}

static void info_print_json(const struct trace_walk *w, const struct info *in,
			    const struct info_kind *kinds, int nkinds)
{
	const struct trace_status *st = trace_walk__status(w);
	const struct trace_meta *m = trace_walk__meta(w);
	struct json j;
	__u32 c;
	int k;

	json__init(&j, stdout, 1);
	json__begin_object(&j);
	json__kv_str(&j, "file", w->path);
	json__kv_str(&j, "host", m->hostname);
	json__kv_str(&j, "kernel", m->kernel);
	json__kv_str(&j, "boot_id", m->boot_id);
	json__kv_str(&j, "command", m->cmdline);
	json__kv_str(&j, "target", m->target);
	json__kv_str(&j, "families", m->families);
	json__kv_str(&j, "options", m->options);
	info_json_gpus(&j, m->gpus);
	json__kv_str(&j, "version", m->tool_version);
	json__kv_u64(&j, "format_version", m->version);
	json__kv_u64(&j, "start_realtime_ns", m->start.realtime_ns);
	json__kv_u64(&j, "start_monotonic_ns", m->start.mono_ns);
	json__kv_str(&j, "start_time", in->start_time);
	json__kv_u64(&j, "duration_ns", in->duration_ns);
	json__kv_bool(&j, "duration_estimated", in->duration_estimated);
	json__key(&j, "events");
	json__begin_object(&j);
	for (k = 0; k < nkinds; k++)
		json__kv_u64(&j, kinds[k].name, kinds[k].count);
	json__end_object(&j);
	json__kv_u64(&j, "records", st->records);
	json__key(&j, "lost");
	json__begin_object(&j);
	for (c = 0; c <= BS_LOSS_MAX; c++)
		if (w->lost[c])
			json__kv_u64(&j, loss_cause_name(c), w->lost[c]);
	json__end_object(&j);
	json__kv_u64(&j, "lost_total", w->lost_total);
	info_json_reorders(w, &j);
	json_lost_by_family(&j, w);
	info_json_unwind(w, &j);
	json__kv_u64(&j, "corrupt_records", w->short_records);
	json__kv_u64(&j, "chunks", st->chunks);
	json__kv_u64(&j, "corrupt_chunks", st->corrupt_chunks);
	json__kv_u64(&j, "skipped_bytes", st->skipped_bytes);
	json__kv_bool(&j, "truncated", st->truncated);
	if (st->writer_pid) /* a recording in progress: not truncated for good */
		json__kv_u64(&j, "recorder_pid", st->writer_pid);
	json__kv_bool(&j, "clean_close", st->clean_close);
	for (int i = 0; i < in->nreports; i++)
		if (in->reports[i].t) {
			json__key(&j, in->reports[i].r->info->key);
			table__print_json(in->reports[i].t, &j);
		}
	json__end_object(&j);
}

/* The families' reports info shows (struct report.info), fed during info's one walk. */
static int info_reports_new(struct info *in)
{
	for_each_family(it)
		for (const struct report *const *r = family__stats(it.f)->reports; r && *r; r++) {
			if (!(*r)->info ||
			    in->nreports == (int)(sizeof(in->reports) / sizeof(in->reports[0])))
				continue;
			in->reports[in->nreports].r = *r;
			in->reports[in->nreports].st = (*r)->new ();
			if (!in->reports[in->nreports++].st)
				return -ENOMEM;
		}
	return 0;
}

/* Their tables, kept when they have rows. */
static int info_reports_emit(struct info *in, const struct trace_model *m)
{
	int err;

	for (int i = 0; i < in->nreports; i++) {
		struct info_report *ir = &in->reports[i];

		ir->t = table__new(ir->r->name);
		if (!ir->t) {
			pr_info("%s\n", strerror(ENOMEM));
			return -ENOMEM;
		}
		err = ir->r->emit(ir->st, m, ir->t);
		if (err) {
			pr_err("%s: %s\n", ir->r->name, strerror(-err));
			return err;
		}
		if (!table__nrows(ir->t)) {
			table__free(ir->t);
			ir->t = NULL;
		}
	}
	return 0;
}

static void info_reports_free(struct info *in)
{
	for (int i = 0; i < in->nreports; i++) {
		table__free(in->reports[i].t);
		if (in->reports[i].st)
			in->reports[i].r->free(in->reports[i].st);
	}
}

/* Also printed by `bpfsight __complete options info`: completion and the docs test read it. */
const struct option info_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

int cmd_info(int argc, char **argv)
{
	struct info_kind kinds[BS_REC_TYPE_MAX];
	const struct trace_status *st;
	const struct trace_meta *m;
	const struct rec_decoder *dec;
	const struct bs_hdr *rec;
	int c, as_json = 0, nkinds, status, ret;
	struct trace_walk w;
	struct info in = {};
	const char *path;
	__u64 end;

	msg__set_cmd(info_cmd()); /* report's page runs info: its messages are report's */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "jh", info_options, NULL)) != -1) {
		switch (c) {
		case 'j':
			as_json = 1;
			break;
		case 'h':
			info_usage(stdout);
			return EXIT_READ_OK;
		default:
			getopt_error__print("info", argc, argv, "jh", info_options);
			return EXIT_READ_FAIL;
		}
	}
	path = cmd__trace_arg("info", argc, argv, info_usage);
	if (!path)
		return EXIT_READ_FAIL;
	if (trace_walk__open(&w, info_cmd(), path))
		return EXIT_READ_FAIL;
	w.quiet = 1; /* its "truncated:" line says how the file ended */

	/* Every record counts once, under its kind, metadata and too-short ones included. */
	if (info_reports_new(&in)) {
		pr_info("%s\n", strerror(ENOMEM));
		info_reports_free(&in);
		trace_walk__close(&w);
		return EXIT_READ_FAIL;
	}
	while ((ret = trace_walk__next(&w, &rec, &dec))) {
		in.by_type[rec->type]++;
		for (int i = 0; ret == 1 && i < in.nreports; i++)
			in.reports[i].r->add(in.reports[i].st, rec, w.m);
	}
	status = trace_walk__finish(&w);
	if (info_reports_emit(&in, w.m))
		status = EXIT_READ_FAIL;

	st = trace_walk__status(&w);
	m = trace_walk__meta(&w);
	iso_time(m->start.realtime_ns, in.start_time, sizeof(in.start_time));
	if (st->has_end) {
		end = st->end.mono_ns;
	} else {
		/* No footer: the last record is the best bound we have, and we say so. */
		end = st->last_ts;
		in.duration_estimated = 1;
	}
	in.duration_ns = end > m->start.mono_ns ? end - m->start.mono_ns : 0;
	nkinds = info_kinds(&in, kinds, BS_REC_TYPE_MAX);

	if (as_json) {
		info_print_json(&w, &in, kinds, nkinds);
	} else {
		info_print_text(&w, &in, kinds, nkinds);
	}
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("writing the output failed\n");
		status = EXIT_READ_FAIL;
	}
	info_reports_free(&in);
	trace_walk__close(&w);
	return status;
}
