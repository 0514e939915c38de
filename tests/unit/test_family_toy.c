// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Adding a family is its folder plus one registry line (docs/ARCHITECTURE.md, "Adding a
 * family"): the toy family of tests/unit/toy/, whose decoder (with its export style), stats
 * report, one export description for every format, a format of its own, option, loss cause,
 * capture-range kind, metrics, report page, top's column and flight-recorder trigger are all
 * registered by its struct family, is added to the registry here with one line. Its trace
 * goes through `bpfsight stats`, `info`, `dump`, every exporter (its own among them) and
 * the report's page; record and monitor take its option (--help, their getopt tables, the
 * parser); monitor's metrics count its ticks. Nothing outside its folder and this file knows
 * the toy. This test links every object but families.o (the Makefile's rule for it) and
 * families.c built again with the toy as its last line (-DFAMILIES_EXTRA=family_toy): the
 * product's registry plus one line, which cannot drift from the product's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include "commands.h"
#include "cpu.h"
#include "cuda.h"
#include "export_perfetto.h"
#include "flight_trigger.h"
#include "gil.h"
#include "gpu.h"
#include "nccl.h"
#include "nvtx.h"
#include "metrics_family.h"
#include "osrt.h"
#include "page.h"
#include "proc.h"
#include "record_args.h"
#include "record_options.h"
#include "report.h"
#include "report_html.h"
#include "stats.h"
#include "sched.h"
#include "table.h"
#include "top.h"
#include "top_screen.h"
#include "toy.h"
#include "trace_model.h"
#include "verdict.h"
#include "trace_build.h"

/* ---- the test -------------------------------------------------------------------------- */

#define PID	 700
#define TID	 701
#define TICKS	 3
#define T0	 5000000ull
#define TICK_DUR 2000ull

static char dir[64];

/* A trace of process PID with N toy ticks (values 10, 20, 30...) and one system call. */
static int write_trace(const char *path, int n)
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
	struct bs_loss loss = {
		.h = { .type = BS_REC_LOSS, .size = sizeof(loss), .ts = T0 + 60000 },
		.cause = TOY_LOSS,
		.count = 5,
	};
	struct tb b;

	if (tb_open(&b, path, "proc,osrt,toy"))
		return -1;
	tb_put(&b, &p);
	for (int i = 0; i < n; i++) {
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
	tb_put(&b, &loss);
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

/*
 * Room to grow (records.h): every family's types in blocks no other family has a type in, its
 * own loss causes numbers no other declares, and its losses counted apart from every other's
 * (by its index, not its block: the toy's block, 0xff0, is past a byte), a LOSS record naming
 * it by its block.
 */
static void test_blocks_and_causes_apart(void)
{
	static const struct family *owner[BS_REC_TYPE_MAX >> 4];
	const struct family *cause_owner[BS_LOSS_MAX] = { 0 };
	int shared = 0, twice = 0, keys = 0;
	struct bs_loss l = { .block = BS_LOSS_BLOCK_SET | TOY_REC, .cause = BS_LOSS_RINGBUF_FULL };

	for_each_family(it) {
		for (const struct rec_decoder *d = it.f->decode->decoders; d && d->type; d++) {
			const struct family **o = &owner[BS_REC_BLOCK(d->type) >> 4];

			shared += *o && *o != it.f;
			*o = it.f;
		}
		for (const struct loss_cause *c = it.f->losses; c && c->name; c++) {
			if (!ASSERT_TRUE(c->cause < BS_LOSS_MAX, "a family's cause below 256"))
				continue;
			twice += cause_owner[c->cause] && cause_owner[c->cause] != it.f;
			cause_owner[c->cause] = it.f;
		}
		for (int j = 0; j < it.i; j++)
			keys += loss__key(it.f, BS_LOSS_TASK_MAP) ==
				loss__key(families[j], BS_LOSS_TASK_MAP);
	}
	ASSERT_EQ(shared, 0, "no block holds two families' types");
	ASSERT_EQ(twice, 0, "no two families declare one cause");
	ASSERT_EQ(keys, 0, "each family's losses counted apart");
	ASSERT_EQ(loss__family_block(&family_toy), TOY_REC, "the toy's block, past a byte");
	ASSERT_TRUE(loss__family(&l) == &family_toy, "a LOSS naming its block is the toy's");
	ASSERT_TRUE(loss__key(&family_toy, TOY_LOSS) < BS_LOST_KEYS &&
			    loss__key(&family_toy, BS_LOSS_TASK_MAP) < BS_LOST_KEYS,
		    "its keys in the lost array");
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

/* Without -r: the toy's rule makes the verdict, and its report comes right after it. */
static void test_stats_verdict_from_toy_rule(void)
{
	char trace[128], out[128], *text, *verdict, *report;
	char *argv[] = { "stats", trace, NULL };
	size_t len;

	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	snprintf(out, sizeof(out), "%s/stats.txt", dir);
	if (!ASSERT_EQ(run_cmd(cmd_stats, out, 2, argv), 0, "stats exit"))
		return;
	text = slurp(out, &len);
	verdict = text ? strstr(text, "Verdict: CPU-bound: the toy ticked 3 times") : NULL;
	report = text ? strstr(text, "** ") : NULL;
	ASSERT_TRUE(verdict, "the toy's claim heads the verdict");
	ASSERT_TRUE(verdict && report > verdict && strstr(report, "(toy_sum):"),
		    "the report it cites follows it");
	free(text);
}

/*
 * A verdict from a server's answers (stats --from): the toy's rule judged when the input it
 * reads (toy_sum) is given, and said not to be when it is not, never left out silently.
 */
static void test_verdict_from_answers_judges_what_was_given(void)
{
	static const struct table_col col = { "ticks", "Ticks", TABLE_U64 };
	struct trace_model *m = trace_model__new();
	struct verdict *given = m ? verdict__new(m, "toy") : NULL;
	struct verdict *not = m ? verdict__new(m, "toy") : NULL;
	struct table *t = table__new("toy_sum");
	char head[256], line[512], out[2048] = "";
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");

	if (!ASSERT_TRUE(given && not &&t && f, "set up"))
		goto out;
	table__add_col(t, &col);
	table__row(t);
	table__set_u64(t, 0, 3);
	verdict__from(given, "clickhouse://h:1/j");
	verdict__from(not, "clickhouse://h:1/j");
	verdict__count(given, "toy_tick", 3);
	verdict__count(not, "toy_tick", 3);
	verdict__set_report(given, "toy_sum", t, NULL);
	verdict__judge(given);
	verdict__judge(not );
	ASSERT_STREQ(verdict__headline(given, head, sizeof(head)),
		     "CPU-bound: the toy ticked 3 times", "its input given: the toy's rule judged");
	ASSERT_STREQ(verdict__unjudged(given, line, sizeof(line)), "", "nothing to say left out");
	ASSERT_STREQ(verdict__headline(not, head, sizeof(head)), "", "not given: no claim");
	ASSERT_STREQ(verdict__unjudged(not, line, sizeof(line)),
		     "Not judged from clickhouse://h:1/j: the rules of toy (toy_sum) (what they "
		     "read is not computed there yet).",
		     "the family with events whose rules were not judged, and what they read");
	verdict__print(not, 0, f);
	fflush(f);
	ASSERT_TRUE(strstr(out, "Verdict: nothing to judge") && strstr(out, "Not judged from "),
		    "printed: nothing to judge, and what was not judged");
out:
	if (f)
		fclose(f);
	table__free(t);
	verdict__free(given);
	verdict__free(not );
	trace_model__free(m);
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
	/* Its export description: the counter emitted at the end, a "C" event of its series. */
	ASSERT_EQ(count(text, "{\"ph\":\"C\",\"cat\":\"toy_cat\",\"name\":\"toy total\",\"pid\":0,"
			      "\"tid\":0,\"ts\":0.000,\"args\":{\"total\":60}}"),
		  1, "the toy's counter");
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
	int toy_desc;	   /* it carries the style's description */
	__u64 tick_iid;	   /* interned name "tick" */
	__u64 total_track; /* uuid of the counter track named "toy total" */
	int totals;	   /* its values of 60 */
	int begins_on_toy, ends_on_toy;
};

static void pf_track_descriptor(struct pbr *td, struct pf_seen *s)
{
	__u64 uuid = 0, parent = 0, v;
	struct pbr sub, name = { 0 }, desc = { 0 };
	int counter = 0;
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
		else if (f == TD_COUNTER)
			counter = 1;
	}
	if (name.p && pb_streq(&name, "toy ticks")) {
		s->toy_track = uuid;
		s->toy_parent = parent;
		s->toy_desc = desc.p && pb_streq(&desc, "Ticks of the toy family.");
	}
	if (name.p && counter && pb_streq(&name, "toy total"))
		s->total_track = uuid;
}

static void pf_track_event(struct pbr *te, struct pf_seen *s)
{
	__u64 type = 0, track = 0, name = 0, value = 0, v;
	struct pbr sub;
	__u32 f;

	while (pb_field(te, &f, &v, &sub)) {
		if (f == TE_TYPE)
			type = v;
		else if (f == TE_TRACK_UUID)
			track = v;
		else if (f == TE_NAME_IID)
			name = v;
		else if (f == TE_COUNTER_VALUE)
			value = v;
	}
	if (track && track == s->total_track && type == TE_TYPE_COUNTER && value == 60)
		s->totals++;
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
	/* Its export description: a counter track of the ticks' total, 60 once. */
	ASSERT_TRUE(s.total_track, "a counter track toy total");
	ASSERT_EQ(s.totals, 1, "its value");
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

/* Its own format: export offers it after the others and writes it; none without ticks. */
static void test_export_offers_toy_format(void)
{
	char trace[128], empty[128], out[128], list[512], *text;
	size_t len = 0;

	export__list_formats(list, sizeof(list));
	ASSERT_TRUE(strlen(list) > 11 && !strcmp(list + strlen(list) - 11, ", toy-total"),
		    "the toy's format listed last");
	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	snprintf(empty, sizeof(empty), "%s/no_ticks.bst", dir);
	if (!ASSERT_EQ(write_trace(empty, 0), 0, "a trace without ticks"))
		return;
	snprintf(out, sizeof(out), "%s/t.toy", dir);
	if (!ASSERT_EQ(export_to(trace, "toy-total", out), 0, "toy-total export exit"))
		return;
	text = slurp(out, &len);
	ASSERT_TRUE(text && !strcmp(text, "ticks 3 total 60\n"), "what it wrote");
	free(text);
	snprintf(out, sizeof(out), "%s/empty.toy", dir);
	ASSERT_EQ(export_to(empty, "toy-total", out), 1, "a trace without ticks: refused");
	ASSERT_TRUE(access(out, F_OK) != 0, "and nothing left");
}

/* Everything F writes (a FILE) into a string, for the tests below. */
static char *captured(void (*fn)(FILE *f, void *arg), void *arg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fn(f, arg);
	fclose(f);
	return text;
}

static void render_metrics(FILE *f, void *m)
{
	metrics__render(m, f);
}

static void write_page(FILE *f, void *in)
{
	report_html__write(in, f);
}

static void test_record_and_monitor_take_toy_option(void)
{
	char *rec[] = { "record", "--toy-scale", "7", "-o", "x.bst", "--", "true", NULL };
	char *mon[] = { "monitor", "--toy-scale=3", NULL };
	char *bad[] = { "record", "--toy-scale", "many", "--", "true", NULL };
	char *help[] = { "record", "--help", NULL };
	char out[128], *text;
	struct record_args a;
	size_t len;
	int found = 0;

	ASSERT_EQ(record_args__init(&a, "record"), 0, "record's options");
	ASSERT_EQ(((struct toy_opts *)record_opts__family(&a.o, &family_toy))->scale, 1,
		  "record's default");
	ASSERT_EQ(record_args__parse(&a, 7, rec), 0, "record --toy-scale 7");
	ASSERT_EQ(((struct toy_opts *)record_opts__family(&a.o, &family_toy))->scale, 7,
		  "the toy's option parsed by record");
	ASSERT_TRUE(optind == 6 && !strcmp(rec[optind], "true"), "CMD after the options");
	record_args__free(&a);

	ASSERT_EQ(record_args__init(&a, "monitor"), 0, "monitor's options");
	ASSERT_EQ(((struct toy_opts *)record_opts__family(&a.o, &family_toy))->scale, 2,
		  "monitor's default");
	ASSERT_EQ(record_args__parse(&a, 2, mon), 0, "monitor --toy-scale=3");
	ASSERT_EQ(((struct toy_opts *)record_opts__family(&a.o, &family_toy))->scale, 3,
		  "the toy's option parsed by monitor");
	record_args__free(&a);

	record_args__init(&a, "record");
	ASSERT_EQ(record_args__parse(&a, 5, bad), 1, "a bad value is refused");
	record_args__free(&a);

	for (const struct option *o = record_long_options(); o->name; o++)
		found += !strcmp(o->name, "toy-scale") && o->has_arg == required_argument;
	/* `bpfsight __complete options record` prints this table: completion offers it too. */
	ASSERT_EQ(found, 1, "record's getopt table has --toy-scale=");
	snprintf(out, sizeof(out), "%s/help.txt", dir);
	ASSERT_EQ(run_cmd(cmd_record, out, 2, help), 0, "record --help");
	text = slurp(out, &len);
	ASSERT_TRUE(text && strstr(text, "      --toy-scale N        the toy's metrics multiply"),
		    "record --help lists --toy-scale N");
	free(text);
}

static void test_capture_range_takes_toy_kind(void)
{
	char *good[] = { "record", "-t", "toy", "--capture-range=toyRange:4", "-a", NULL };
	char *absent[] = { "record", "-t", "osrt", "--capture-range=toyRange:4", "-a", NULL };
	struct record_args a;

	record_args__init(&a, "record");
	ASSERT_EQ(record_args__parse(&a, 5, good), 0, "--capture-range=toyRange:4");
	ASSERT_TRUE(a.o.capture == &family_toy && !strcmp(a.o.capture_arg, "4"),
		    "the toy's kind, its value");
	ASSERT_TRUE(record_opts__captures(&a.o, &family_toy), "the toy opens the ranges");
	ASSERT_EQ(record_args__check(&a), 0, "the toy is recorded");
	record_args__free(&a);
	record_args__init(&a, "record");
	ASSERT_EQ(record_args__parse(&a, 5, absent), 0, "parsed");
	ASSERT_EQ(record_args__check(&a), 1, "refused: the toy is not recorded");
	record_args__free(&a);
}

static void test_flight_fires_on_toy_trigger(void)
{
	struct toy_tick tick = { .h = { .type = TOY_REC, .size = sizeof(tick), .pid = PID } };
	struct bs_process p = { .h = { .type = BS_REC_PROCESS, .size = sizeof(p), .pid = PID } };
	struct flight_triggers *ft;
	struct flight_opts fo;
	int err;

	flight_opts__init(&fo);
	ASSERT_EQ(flight_opts__parse(&fo, OPT_FLIGHT, "10s", "record"), 0, "--flight-recorder");
	ASSERT_EQ(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "toy:tock", "record"), -EINVAL,
		  "a trigger the toy does not offer");
	ASSERT_EQ(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "toy:tick", "record"), 0,
		  "the toy's own, with no duration");
	ASSERT_EQ(fo.triggers[0].type, TOY_REC, "its record type");
	ft = flight_triggers__new(&fo, &err);
	if (!ASSERT_TRUE(ft, "triggers"))
		return;
	ASSERT_TRUE(flight_triggers__match(ft, &tick.h) == &fo.triggers[0],
		    "a tick fires, however short");
	ASSERT_TRUE(!flight_triggers__match(ft, &p.h), "another record does not");
	tick.h.size = sizeof(tick.h);
	ASSERT_TRUE(!flight_triggers__match(ft, &tick.h), "nor a tick too short for its type");
	flight_triggers__free(ft);
}

static void test_info_and_dump_name_toy_loss(void)
{
	char trace[128], out[128], *text;
	char *info[] = { "info", trace, NULL };
	char *info_json[] = { "info", "--json", trace, NULL };
	char *dump[] = { "dump", "--kind", "loss", trace, NULL };
	size_t len;

	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	snprintf(out, sizeof(out), "%s/info.txt", dir);
	ASSERT_EQ(run_cmd(cmd_info, out, 2, info), 0, "info");
	text = slurp(out, &len);
	ASSERT_TRUE(text && strstr(text, "lost:            5 events\n  toy_dropped    5\n"),
		    "info names the toy's loss cause");
	/* its reorder hook's line, where the gpu family's links go: after the losses */
	ASSERT_TRUE(
		text && strstr(text, "  toy            5 (toy_dropped 5)\ntoy ticks:       3\n"),
		"info says what the toy's reorder hook counted, after the losses");
	free(text);
	ASSERT_EQ(run_cmd(cmd_info, out, 3, info_json), 0, "info --json");
	text = slurp(out, &len);
	ASSERT_TRUE(text && strstr(text, "\"toy_ticks\": 3,\n"), "and in its JSON");
	free(text);
	snprintf(out, sizeof(out), "%s/dump.txt", dir);
	ASSERT_EQ(run_cmd(cmd_dump, out, 4, dump), 0, "dump");
	text = slurp(out, &len);
	ASSERT_TRUE(text && strstr(text, "\"kind\":\"loss\",\"name\":\"toy_dropped\""),
		    "dump names it");
	free(text);
}

static void test_monitor_counts_toy(void)
{
	char *mon[] = { "monitor", "--toy-scale", "3", NULL };
	struct metrics_opts mo = { .top_n = 10,
				   .grace_ns = 1ull << 40,
				   .rebalance_ns = 1ull << 40 };
	struct bs_process p = { .h = { .type = BS_REC_PROCESS, .size = sizeof(p), .pid = PID },
				.comm = "toyproc" };
	struct bs_loss l = { .h = { .type = BS_REC_LOSS, .size = sizeof(l) },
			     .cause = TOY_LOSS,
			     .count = 5 };
	struct record_args a;
	struct metrics *m;
	char *text;

	record_args__init(&a, "monitor");
	ASSERT_EQ(record_args__parse(&a, 3, mon), 0, "monitor --toy-scale 3");
	m = metrics__new(&mo, &a.o);
	if (!ASSERT_TRUE(m, "metrics"))
		goto out;
	metrics__record(m, &p.h);
	for (int i = 0; i < TICKS; i++) {
		struct toy_tick t = {
			.h = { .type = TOY_REC, .size = sizeof(t), .pid = PID, .tid = TID },
			.value = 10 * (i + 1)
		};

		metrics__record(m, &t.h);
	}
	metrics__record(m, &l.h);
	text = captured(render_metrics, m);
	ASSERT_TRUE(text && strstr(text,
				   "\nbpfsight_toy_ticks_total{pid=\"700\",comm=\"toyproc\"} 3\n"),
		    "the toy's ticks in its process's series");
	ASSERT_TRUE(text && strstr(text, "\nbpfsight_toy_scaled_total 180\n"),
		    "60 times --toy-scale 3");
	ASSERT_TRUE(text && strstr(text, "\nbpfsight_events_lost_total{family=\"toy\","
					 "cause=\"toy_dropped\"} 5\n"),
		    "its loss cause, labelled with the toy");
	free(text);
out:
	metrics__free(m);
	record_args__free(&a);
}

/* top: the toy's column (and only it: top records the families with columns), its ticks per
 * second in its thread's row, drawn under its heading; top takes monitor's option default. */
static void test_top_shows_toy(void)
{
	char *args[] = { "top", "-p", "1", NULL };
	struct bs_process p = { .h = { .type = BS_REC_PROCESS,
				       .size = sizeof(p),
				       .pid = PID,
				       .tid = PID,
				       .ts = 1000000000 },
				.comm = "toyproc" };
	struct top_view v = { .threads = 1, .target = "pid 700", .interval_ns = 1000000000 };
	struct top_frame fr = { 0 };
	struct record_args a;
	struct top *t = NULL;
	char *text = NULL;
	__u64 want = 0;
	size_t len;
	FILE *f;

	record_args__init(&a, "top");
	ASSERT_EQ(((struct toy_opts *)record_opts__family(&a.o, &family_toy))->scale, 2,
		  "top takes monitor's defaults");
	ASSERT_EQ(record_args__parse(&a, 3, args), 0, "top -p 1");
	ASSERT_EQ(record_args__check(&a), 0, "checked");
	/*
	 * By default top records what has columns (the toy among them; not opt-in ones), and proc;
	 * with -p the families that sample too (the function view's) and the threads' timeline
	 * (the ledger view's).
	 */
	for_each_family(it)
		if ((it.f->top && !(it.f->flags & FAMILY_OPT_IN)) ||
		    (it.f->flags & (FAMILY_ALWAYS | FAMILY_TIMELINE)) || family__samples(it.f))
			want |= 1ull << it.i;
	ASSERT_EQ(a.o.families, want, "the families top records");
	ASSERT_TRUE(family__find("toy")->top && family__find("sched") &&
			    !family__find("sched")->top,
		    "the toy has columns, sched none");
	t = top__new(&a.o);
	if (!ASSERT_TRUE(t, "top"))
		goto out;
	top__replay(t);
	top__record(t, &p.h);
	for (int i = 0; i < TICKS; i++) {
		struct toy_tick k = { .h = { .type = TOY_REC,
					     .size = sizeof(k),
					     .pid = PID,
					     .tid = TID,
					     .ts = 1000000000 + i } };

		top__record(t, &k.h);
	}
	ASSERT_EQ(top__cut(t, 1500000000, &fr), 0, "a frame");
	f = open_memstream(&text, &len);
	top_screen__render(f, &fr, &v, 80, 0);
	fclose(f);
	ASSERT_TRUE(text && strstr(text, " TOY/s\n") && strstr(text, "    701  toyproc     "),
		    "the toy's heading and its thread's row");
	ASSERT_TRUE(text && strstr(text, "    701  toyproc            6.0\n"),
		    "3 ticks in 0.5 s: 6.0 a second");
out:
	free(text);
	top_frame__free(&fr);
	top__free(t);
	record_args__free(&a);
}

/* The page as `bpfsight report` makes it (its info text aside: cmd_report runs the binary). */
static void test_report_draws_toy(void)
{
	char trace[128], path[64], *text, *lane, *legend;
	struct stats *stats;
	int status;

	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	stats = stats__collect(trace, NULL, &status);
	if (!ASSERT_TRUE(stats, "the stats reports"))
		return;
	struct report_input in = { trace, "test", "info", stats };

	text = captured(write_page, &in);
	ASSERT_TRUE(
		text && strstr(text, "<figure class=\"timeline\" id=\"tl-toy\"><figcaption>Toy"),
		"the toy's timeline");
	ASSERT_TRUE(
		text && strstr(text, "<section id=\"toy\"><h2>Toy</h2><p>3 ticks, 60 in all</p>"),
		"the toy's section");
	ASSERT_TRUE(text && strstr(text, "<div class=\"report\" id=\"r-toy_sum\">"),
		    "its stats report's table");
	ASSERT_TRUE(text && strstr(text, "<section class=\"family\" id=\"family-toy\"><h2>toy "),
		    "its part of the page");
	ASSERT_TRUE(text && strstr(text, "<a class=\"fig\" href=\"#toy\"><span class=\"v\">60"
					 "</span><span class=\"l\">toy total</span></a>"),
		    "its headline figure");
	lane = text ? strstr(text, "<g class=\"lane\" data-tid=\"701\" data-pid=\"700\">") : NULL;
	legend = text ? strstr(text, "\">toy ticks</li>") : NULL;
	if (ASSERT_TRUE(lane && legend, "the thread's lane, its legend")) {
		/* The legend's colour "sK" is the lane's row of ticks "kK". */
		while (legend > text && legend[-1] != 's')
			legend--;
		snprintf(path, sizeof(path), "<path class=\"k%d\" d=\"M", atoi(legend));
		ASSERT_TRUE(strstr(lane, path) && strstr(lane, path) < strstr(lane, "</g>"),
			    "the ticks in the thread's lane");
	}
	ASSERT_EQ(text ? count(text, "<title>tick (2.00 µs)</title>") : 0, TICKS,
		  "a band per tick");
	free(text);
	stats__free(stats);
}

int main(void)
{
	char trace[128];

	if (tb_tmp_dir(dir, sizeof(dir)))
		return 1;
	snprintf(trace, sizeof(trace), "%s/toy.bst", dir);
	if (write_trace(trace, TICKS)) {
		fprintf(stderr, "cannot write %s\n", trace);
		return 1;
	}
	RUN_TEST(test_registry_finds_toy);
	RUN_TEST(test_blocks_and_causes_apart);
	RUN_TEST(test_stats_runs_toy_report);
	RUN_TEST(test_stats_verdict_from_toy_rule);
	RUN_TEST(test_verdict_from_answers_judges_what_was_given);
	RUN_TEST(test_chrome_draws_toy);
	RUN_TEST(test_perfetto_draws_toy);
	RUN_TEST(test_sqlite_has_toy_table);
	RUN_TEST(test_export_offers_toy_format);
	RUN_TEST(test_record_and_monitor_take_toy_option);
	RUN_TEST(test_capture_range_takes_toy_kind);
	RUN_TEST(test_flight_fires_on_toy_trigger);
	RUN_TEST(test_info_and_dump_name_toy_loss);
	RUN_TEST(test_monitor_counts_toy);
	RUN_TEST(test_report_draws_toy);
	RUN_TEST(test_top_shows_toy);
	/* Every file the tests wrote (a list of names missed the ones added since). */
	DIR *d = opendir(dir);

	for (struct dirent *e; d && (e = readdir(d));)
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
	return UNIT_EXIT();
}
