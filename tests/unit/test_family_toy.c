// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Adding a family is one registry line plus the family's own code (docs/ARCHITECTURE.md,
 * "Adding a family"): a toy family, whose decoder (with its export style), stats report and
 * export hooks for the three formats are all registered by its struct family, is added to the
 * registry here with one line, and a trace of its records goes through `bpfsight stats` and
 * every exporter (cmd_stats, cmd_export) untouched. This test links every object but
 * families.o (the Makefile's rule for it): the registry below is the product's plus the toy.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include "commands.h"
#include "cuda.h"
#include "export_chrome.h"
#include "export_perfetto.h"
#include "export_sqlite.h"
#include "gil.h"
#include "gpu.h"
#include "nccl.h"
#include "nvtx.h"
#include "osrt.h"
#include "proc.h"
#include "report.h"
#include "sched.h"
#include "table.h"
#include "trace_build.h"

/* ---- the toy family: everything it is, in one place ---------------------------------- */

#define TOY_REC 0xe0 /* a block of 16 no family uses (0xf0, 0xf1: trace_format.h) */

struct toy_tick {
	struct bs_hdr h;
	__u64 dur;
	__u64 value;
};

static int toy_decode(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct toy_tick *t = (const void *)rec;

	ev->name = "tick";
	ev->dur = t->dur;
	event__arg_u64(ev, "value", t->value);
	return 1;
}

static const struct export_style toy_style = {
	.cat = "toy_cat",
	.ph = 'X',
	.track = "toy ticks",
	.desc = "Ticks of the toy family.",
};

static const struct rec_decoder toy_decoders[] = {
	{ TOY_REC, sizeof(struct toy_tick), "toy_tick", toy_decode, &toy_style },
	{ 0 },
};

/* toy_sum: ticks and the sum of their values. */
struct toy_sum {
	__u64 n, total;
};

static void *toy_sum__new(void)
{
	return calloc(1, sizeof(struct toy_sum));
}

static void toy_sum__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct toy_sum *s = st;

	if (rec->type != TOY_REC)
		return;
	s->n++;
	s->total += ((const struct toy_tick *)rec)->value;
}

static int toy_sum__emit(void *st, const struct trace_model *m, struct table *t)
{
	struct toy_sum *s = st;
	int n = table__add_col(t, "ticks", "Ticks", TABLE_U64);
	int v = table__add_col(t, "total", "Total", TABLE_U64);

	table__row(t);
	table__set_u64(t, n, s->n);
	table__set_u64(t, v, s->total);
	return table__err(t);
}

static const struct report toy_sum = {
	.name = "toy_sum",
	.desc = "Toy ticks",
	.new = toy_sum__new,
	.add = toy_sum__add,
	.emit = toy_sum__emit,
	.free = free,
};

static const struct report *const toy_reports[] = { &toy_sum, NULL };

/* Chrome: a counter of the ticks' values written at the end. */
static int toy_chrome_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	*st = calloc(1, sizeof(struct toy_sum));
	return *st ? 0 : -ENOMEM;
}

static int toy_chrome_observe(struct chrome *c, void *st, const struct bs_hdr *rec,
			      const struct trace_model *m)
{
	toy_sum__add(st, rec, m);
	return 0;
}

static int toy_chrome_finish(struct chrome *c, void *st)
{
	const struct toy_sum *s = st;

	chrome_begin(c, 'C', "toy_cat", "toy total", 0, 0);
	fprintf(c->f, ",\"ts\":0,\"args\":{\"total\":%llu}}", (unsigned long long)s->total);
	return 0;
}

static const struct chrome_family toy_chrome = {
	.open = toy_chrome_open,
	.free = free,
	.observe = toy_chrome_observe,
	.finish = toy_chrome_finish,
};

/* Perfetto: a track of its own at the end, named after the ticks' total. */
static int toy_pf_open(struct pf *pf, void **st)
{
	*st = calloc(1, sizeof(struct toy_sum));
	return *st ? 0 : -ENOMEM;
}

static int toy_pf_observe(struct pf *pf, void *st, const struct bs_hdr *rec)
{
	toy_sum__add(st, rec, NULL);
	return 0;
}

static int toy_pf_finish(struct pf *pf, void *st, const struct trace_model *m)
{
	const struct toy_sum *s = st;
	char name[64];

	snprintf(name, sizeof(name), "toy total %llu", (unsigned long long)s->total);
	return pf__describe_named(pf, 0, pf->next_uuid++, 0, name, NULL);
}

static const struct perfetto_family toy_perfetto = {
	.open = toy_pf_open,
	.free = free,
	.observe = toy_pf_observe,
	.finish = toy_pf_finish,
};

/* SQLite: a table of its own, a row per tick. */
static const char *const toy_sql[] = { "INSERT INTO TOY_TICKS VALUES (?, ?, ?, ?)" };

static int toy_sq_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, toy_sql, 1, st);
}

static int toy_sq_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
			 const struct trace_model *m)
{
	sqlite3_stmt *q = ((struct sq_stmts *)st)->stmt[0];

	sqlite3_bind_int64(q, 1, ev->ts);
	sqlite3_bind_int64(q, 2, ev->ts + ev->dur);
	sqlite3_bind_int64(q, 3, global_tid(ev->pid, ev->tid));
	sq_bind_arg(q, 4, ev, "value");
	return sq_run(s, q);
}

static const struct sqlite_family toy_sqlite = {
	.schema = "CREATE TABLE TOY_TICKS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
		  " globalTid INTEGER NOT NULL, value INTEGER NOT NULL);",
	.indexes = "CREATE INDEX TOY_TICKS_start ON TOY_TICKS(start);",
	.open = toy_sq_open,
	.free = sq_stmts__free,
	.record = toy_sq_record,
};

static const struct family family_toy = {
	.name = "toy",
	.desc = "a family that exists only in this test",
	.decoders = toy_decoders,
	.reports = toy_reports,
	.chrome = &toy_chrome,
	.perfetto = &toy_perfetto,
	.sqlite = &toy_sqlite,
};

/* ---- the registry: the product's (families.c), plus one line ------------------------- */

const struct family *const families[] = {
	&family_proc, &family_osrt, &family_sched, &family_gil, &family_cuda,
	&family_nccl, &family_gpu,  &family_nvtx,  &family_toy, /* the one line */
	NULL,
};

/* ---- the test -------------------------------------------------------------------------- */

#define PID	 700
#define TID	 701
#define TICKS	 3
#define T0	 5000000ull
#define TICK_DUR 2000ull

static char dir[64];

/* A trace of process PID with TICKS toy ticks (values 10, 20, 30) and one system call. */
static int write_trace(const char *path)
{
	struct bs_process p = {
		.h = { .type = BS_REC_PROCESS,
		       .size = sizeof(p),
		       .pid = PID,
		       .tid = PID,
		       .ts = T0 },
		.comm = "toyproc",
	};
	struct bs_syscall sc = {
		.h = { .type = BS_REC_SYSCALL, .size = sizeof(sc), .pid = PID, .tid = TID },
		.nr = 39,
		.dur = 500,
	};
	struct tb b;

	if (tb_open(&b, path, "proc,osrt,toy"))
		return -1;
	tb_put(&b, &p);
	for (int i = 0; i < TICKS; i++) {
		struct toy_tick t = {
			.h = { .type = TOY_REC, .size = sizeof(t), .pid = PID, .tid = TID },
			.dur = TICK_DUR,
			.value = 10 * (i + 1),
		};

		t.h.ts = T0 + 10000 * (i + 1);
		tb_put(&b, &t);
	}
	sc.h.ts = T0 + 50000;
	tb_put(&b, &sc);
	return tb_close(&b, T0 + 100000);
}

/* Run a bpfsight subcommand in this process, its stdout into OUT (NULL: left alone). */
static int run_cmd(int (*cmd)(int, char **), const char *out, int argc, char **argv)
{
	int saved = -1, fd, rc;

	fflush(stdout);
	if (out) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			return -1;
		saved = dup(STDOUT_FILENO);
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	rc = cmd(argc, argv);
	fflush(stdout);
	if (out) {
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
	return rc;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		buf = calloc(1, n + 1);
		if (buf && fread(buf, 1, n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = n;
	}
	fclose(f);
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static int export_to(const char *trace, const char *format, const char *out)
{
	char *argv[] = { "export", (char *)trace, "--format", (char *)format,
			 "-o",	   (char *)out,	  NULL };

	return run_cmd(cmd_export, "/dev/null", 6, argv);
}

static void test_registry_finds_toy(void)
{
	const struct rec_decoder *d = family__decoder(TOY_REC);

	ASSERT_TRUE(family__find("toy") == &family_toy, "family__find(toy)");
	ASSERT_TRUE(d && !strcmp(d->kind, "toy_tick"), "the toy's decoder");
	ASSERT_TRUE(family__kind_is_event("toy_tick"), "dump offers toy_tick");
	ASSERT_TRUE(family__kind_style("toy_tick") == &toy_style, "the toy's style");
}

static void test_stats_runs_toy_report(void)
{
	char trace[128], out[128], *text;
	char *argv[] = { "stats", "-r", "toy_sum", "--format", "csv", trace, NULL };
	size_t len;

	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	snprintf(out, sizeof(out), "%s/stats.csv", dir);
	if (!ASSERT_EQ(run_cmd(cmd_stats, out, 6, argv), 0, "stats exit"))
		return;
	text = slurp(out, &len);
	ASSERT_TRUE(text && strstr(text, "ticks,total\n3,60\n"), "toy_sum: 3 ticks, total 60");
	free(text);
}

static void test_chrome_draws_toy(void)
{
	char trace[128], out[128], *text;
	size_t len;

	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	snprintf(out, sizeof(out), "%s/toy.json", dir);
	if (!ASSERT_EQ(export_to(trace, "chrome", out), 0, "chrome export exit"))
		return;
	text = slurp(out, &len);
	if (!ASSERT_TRUE(text, "read the JSON"))
		return;
	/* The style: complete events of the toy's category, with their duration. */
	ASSERT_EQ(count(text, "{\"ph\":\"X\",\"cat\":\"toy_cat\",\"name\":\"tick\",\"pid\":700,"
			      "\"tid\":701,"),
		  TICKS, "toy ticks as X events of cat toy_cat");
	ASSERT_EQ(count(text, "\"dur\":2.000,\"args\":{\"value\":"), TICKS, "their dur and args");
	ASSERT_TRUE(strstr(text, "\"ts\":5010.000,\"dur\":2.000,\"args\":{\"value\":10}"),
		    "the first tick");
	/* The hooks: the counter written at the end. */
	ASSERT_EQ(count(text, "{\"ph\":\"C\",\"cat\":\"toy_cat\",\"name\":\"toy total\",\"pid\":0,"
			      "\"tid\":0,\"ts\":0,\"args\":{\"total\":60}}"),
		  1, "the toy's finish hook");
	/* The other families are unchanged beside it. */
	ASSERT_EQ(count(text, "\"cat\":\"os_runtime\""), 1, "the system call");
	free(text);
}

/* ---- just enough protobuf to read a Perfetto trace back ---------------------------------- */

struct pbr {
	const __u8 *p, *end;
};

static int pb_varint(struct pbr *r, __u64 *v)
{
	*v = 0;
	for (int s = 0; r->p < r->end && s < 64; s += 7) {
		__u8 b = *r->p++;

		*v |= (__u64)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 1;
	}
	return 0;
}

/* The next field: its number, and its value (varint) or bytes (length-delimited). */
static int pb_field(struct pbr *r, __u32 *field, __u64 *v, struct pbr *sub)
{
	__u64 key;

	if (r->p >= r->end || !pb_varint(r, &key))
		return 0;
	*field = key >> 3;
	switch (key & 7) {
	case 0:
		return pb_varint(r, v);
	case 1:
		r->p += 8;
		return r->p <= r->end;
	case 2:
		if (!pb_varint(r, v) || *v > (__u64)(r->end - r->p))
			return 0;
		sub->p = r->p;
		sub->end = r->p + *v;
		r->p += *v;
		return 1;
	case 5:
		r->p += 4;
		return r->p <= r->end;
	default:
		return 0;
	}
}

static int pb_streq(const struct pbr *s, const char *str)
{
	return (size_t)(s->end - s->p) == strlen(str) && !memcmp(s->p, str, s->end - s->p);
}

struct pf_seen {
	__u64 toy_track; /* uuid of the track named "toy ticks" */
	__u64 toy_parent;
	int toy_desc;	 /* it carries the style's description */
	__u64 tick_iid;	 /* interned name "tick" */
	int total_track; /* the finish hook's track */
	int begins_on_toy, ends_on_toy;
};

static void pf_track_descriptor(struct pbr *td, struct pf_seen *s)
{
	__u64 uuid = 0, parent = 0, v;
	struct pbr sub, name = { 0 }, desc = { 0 };
	__u32 f;

	while (pb_field(td, &f, &v, &sub)) {
		if (f == TD_UUID)
			uuid = v;
		else if (f == TD_PARENT_UUID)
			parent = v;
		else if (f == TD_NAME)
			name = sub;
		else if (f == TD_DESCRIPTION)
			desc = sub;
	}
	if (name.p && pb_streq(&name, "toy ticks")) {
		s->toy_track = uuid;
		s->toy_parent = parent;
		s->toy_desc = desc.p && pb_streq(&desc, "Ticks of the toy family.");
	}
	if (name.p && pb_streq(&name, "toy total 60"))
		s->total_track++;
}

static void pf_track_event(struct pbr *te, struct pf_seen *s)
{
	__u64 type = 0, track = 0, name = 0, v;
	struct pbr sub;
	__u32 f;

	while (pb_field(te, &f, &v, &sub)) {
		if (f == TE_TYPE)
			type = v;
		else if (f == TE_TRACK_UUID)
			track = v;
		else if (f == TE_NAME_IID)
			name = v;
	}
	if (!track || track != s->toy_track)
		return;
	if (type == TE_TYPE_SLICE_BEGIN && name == s->tick_iid)
		s->begins_on_toy++;
	if (type == TE_TYPE_SLICE_END)
		s->ends_on_toy++;
}

static void pf_interned(struct pbr *id, struct pf_seen *s)
{
	struct pbr sub, e, str;
	__u64 v, iid;
	__u32 f, g;

	while (pb_field(id, &f, &v, &sub)) {
		if (f != ID_EVENT_NAMES)
			continue;
		iid = 0;
		str.p = NULL;
		while (pb_field(&sub, &g, &v, &e)) {
			if (g == INTERNED_IID)
				iid = v;
			else if (g == INTERNED_NAME)
				str = e;
		}
		if (str.p && pb_streq(&str, "tick"))
			s->tick_iid = iid;
	}
}

static void test_perfetto_draws_toy(void)
{
	struct pf_seen s = { 0 };
	char trace[128], out[128], *buf;
	struct pbr r, pkt, sub;
	size_t len;
	__u32 f;
	__u64 v;

	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	snprintf(out, sizeof(out), "%s/toy.pftrace", dir);
	if (!ASSERT_EQ(export_to(trace, "perfetto", out), 0, "perfetto export exit"))
		return;
	buf = slurp(out, &len);
	if (!ASSERT_TRUE(buf, "read the trace"))
		return;
	r = (struct pbr){ (const __u8 *)buf, (const __u8 *)buf + len };
	while (pb_field(&r, &f, &v, &pkt)) {
		if (!ASSERT_EQ(f, TRACE_PACKET, "only TracePackets"))
			break;
		/* Interned data comes after the event in its packet: read it first. */
		struct pbr again = pkt;

		while (pb_field(&again, &f, &v, &sub))
			if (f == PKT_INTERNED_DATA)
				pf_interned(&sub, &s);
		while (pb_field(&pkt, &f, &v, &sub)) {
			if (f == PKT_TRACK_DESCRIPTOR)
				pf_track_descriptor(&sub, &s);
			else if (f == PKT_TRACK_EVENT)
				pf_track_event(&sub, &s);
		}
	}
	ASSERT_TRUE(r.p == r.end, "the whole file parsed");
	/* The style: a "toy ticks" track under the thread, with its description. */
	ASSERT_TRUE(s.toy_track && s.toy_parent, "a toy ticks track under a thread");
	ASSERT_TRUE(s.toy_desc, "with the style's description");
	ASSERT_TRUE(s.tick_iid, "the name tick interned");
	ASSERT_EQ(s.begins_on_toy, TICKS, "a slice per tick on it");
	ASSERT_EQ(s.ends_on_toy, TICKS, "each ended");
	/* The hooks: the track the finish hook described. */
	ASSERT_EQ(s.total_track, 1, "the toy's finish hook");
	free(buf);
}

static void test_sqlite_has_toy_table(void)
{
	char trace[128], out[128];
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	int rows = 0;

	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	snprintf(out, sizeof(out), "%s/toy.sqlite", dir);
	if (!ASSERT_EQ(export_to(trace, "sqlite", out), 0, "sqlite export exit"))
		return;
	if (!ASSERT_EQ(sqlite3_open_v2(out, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "open"))
		goto out;
	if (!ASSERT_EQ(sqlite3_prepare_v2(db,
					  "SELECT start, end, globalTid, value FROM TOY_TICKS"
					  " ORDER BY start",
					  -1, &st, NULL),
		       SQLITE_OK, "TOY_TICKS exists"))
		goto out;
	while (sqlite3_step(st) == SQLITE_ROW) {
		__u64 ts = T0 + 10000 * (rows + 1);

		ASSERT_EQ(sqlite3_column_int64(st, 0), ts, "start");
		ASSERT_EQ(sqlite3_column_int64(st, 1), ts + TICK_DUR, "end");
		ASSERT_EQ(sqlite3_column_int64(st, 2), (__s64)PID << 24 | TID, "globalTid");
		ASSERT_EQ(sqlite3_column_int64(st, 3), 10 * (rows + 1), "value");
		rows++;
	}
	ASSERT_EQ(rows, TICKS, "a row per tick");
	sqlite3_finalize(st);
	st = NULL;
	/* Its index, and the other families' tables beside it. */
	ASSERT_EQ(sqlite3_prepare_v2(db,
				     "SELECT (SELECT count(*) FROM sqlite_master WHERE name ="
				     " 'TOY_TICKS_start'), (SELECT count(*) FROM OSRT_API)",
				     -1, &st, NULL),
		  SQLITE_OK, "query the schema");
	if (st && sqlite3_step(st) == SQLITE_ROW) {
		ASSERT_EQ(sqlite3_column_int(st, 0), 1, "the toy's index");
		ASSERT_EQ(sqlite3_column_int(st, 1), 1, "the system call's row");
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
}

int main(void)
{
	char trace[128];

	if (tb_tmp_dir(dir, sizeof(dir)))
		return 1;
	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	if (write_trace(trace)) {
		fprintf(stderr, "cannot write %s\n", trace);
		return 1;
	}
	RUN_TEST(test_registry_finds_toy);
	RUN_TEST(test_stats_runs_toy_report);
	RUN_TEST(test_chrome_draws_toy);
	RUN_TEST(test_perfetto_draws_toy);
	RUN_TEST(test_sqlite_has_toy_table);
	for (const char *const *f = (const char *const[]){ "toy.bst", "stats.csv", "toy.json",
							   "toy.pftrace", "toy.sqlite", NULL };
	     *f; f++) {
		snprintf(trace, sizeof(trace), "%s/%s", dir, *f);
		unlink(trace);
	}
	rmdir(dir);
	return UNIT_EXIT();
}
