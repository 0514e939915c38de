// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The flight recorder without BPF: records appended to its in-memory writer with chosen
 * times, a dump, the dump read back. What it holds is exactly the window (cut inside a
 * chunk), with the state records written before it, and cumulative snapshots counted from
 * the window's start (a closing one restarting its key at zero).
 */
#include <stdlib.h>
#include <unistd.h>
#include "unit.h"
#include "flight_meta.h"
#include "flight_recorder.h"
#include "mono_clock.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "osrt_records.h"

#define S 1000000000ull

static char dir[] = "/tmp/bpfsight-unit-flight-XXXXXX";

struct named_string {
	struct bs_string s;
	char text[8];
};

static struct flight_recorder *start(const char *name, __u64 window, struct trace_meta *meta)
{
	static struct flight_opts fo;
	static char out[128];
	int err;

	flight_opts__init(&fo);
	fo.window_ns = window;
	fo.text = "5s";
	fo.cooldown_ns = 0; /* a test may dump twice */
	memset(meta, 0, sizeof(*meta));
	meta->version = 1; /* start clocks 0: the window is never clipped by the start */
	snprintf(out, sizeof(out), "%s/%s.bst", dir, name);
	return flight__new(&fo, meta, out, 1, &err);
}

/* Append, as record_ctx__write does: the flight recorder sees it first. */
static void put(struct flight_recorder *fr, const void *rec)
{
	if (!flight__observe(fr, rec))
		trace_writer__append(flight__writer(fr), rec);
}

static void syscall_at(struct flight_recorder *fr, __u64 ts, __u32 nr)
{
	struct bs_syscall r = {
		.h = { .type = BS_REC_SYSCALL, .size = sizeof(r), .pid = 7, .tid = 7, .ts = ts },
		.dur = 10,
		.nr = nr
	};

	put(fr, &r);
}

static void agg_at(struct flight_recorder *fr, __u64 ts, __u64 count, __u32 flags)
{
	struct bs_syscall_agg r = { .h = { .type = BS_REC_SYSCALL_AGG,
					   .size = sizeof(r),
					   .pid = 7,
					   .tid = 7,
					   .ts = ts },
				    .nr = 39,
				    .flags = flags,
				    .count = count,
				    .total_ns = count * 100,
				    .min_ns = 90,
				    .max_ns = 200 };

	put(fr, &r);
}

/* Dump now and read it back: every record into RECS (copies), count in *N. */
static int dump_and_read(struct flight_recorder *fr, const char *path, struct bs_hdr **recs,
			 int max, int *n, int *clean)
{
	const struct bs_hdr *h;
	struct trace_reader *r;
	char err[256];
	int e;

	flight__trigger(fr, "unit", 0);
	if (flight__dump(fr))
		return -1;
	r = trace_reader__open(path, err, sizeof(err), &e);
	if (!r)
		return -1;
	*n = 0;
	while (trace_reader__next(r, &h) == 1 && *n < max) {
		recs[*n] = malloc(h->size);
		memcpy(recs[*n], h, h->size);
		(*n)++;
	}
	*clean = trace_reader__status(r)->clean_close;
	trace_reader__free(r);
	return 0;
}

static void free_recs(struct bs_hdr **recs, int n)
{
	for (int i = 0; i < n; i++)
		free(recs[i]);
}

static void test_window_cut_and_state(void)
{
	struct named_string str = {
		.s = { .h = { .type = BS_REC_STRING, .size = sizeof(str) }, .id = 1, .len = 4 },
		.text = "prog"
	};
	struct trace_meta meta;
	struct flight_recorder *fr = start("cut", 5 * S, &meta);
	struct bs_hdr *recs[64];
	char path[160];
	__u64 now = mono_now_ns(), first = 0;
	int n = 0, clean = 0, syscalls = 0, strings = 0;

	if (!ASSERT_TRUE(fr, "flight recorder"))
		return;
	str.s.h.ts = now - 10 * S;
	put(fr, &str); /* interned long before the window */
	for (int i = 0; i <= 10; i++) {
		syscall_at(fr, now - 10 * S + i * S, 100 + i);
		if (i % 3 == 2)
			trace_writer__flush(flight__writer(fr)); /* several chunks, one cut */
	}
	snprintf(path, sizeof(path), "%s/cut-1.bst", dir);
	if (!ASSERT_EQ(dump_and_read(fr, path, recs, 64, &n, &clean), 0, "dump"))
		goto out;
	ASSERT_EQ(clean, 1, "closed cleanly");
	for (int i = 0; i < n; i++) {
		if (recs[i]->type == BS_REC_STRING) {
			strings++;
			ASSERT_EQ(strings == 1 && syscalls == 0, 1, "the string before the events");
		}
		if (recs[i]->type != BS_REC_SYSCALL)
			continue;
		if (!syscalls++)
			first = ((struct bs_syscall *)recs[i])->nr;
	}
	ASSERT_EQ(strings, 1, "the string, once");
	/* The window is the 5 s before the dump: calls at now-4 s .. now (nr 106..110). */
	ASSERT_EQ(syscalls, 5, "calls in the window");
	ASSERT_EQ(first, 106, "the first call in the window");
out:
	free_recs(recs, n);
	flight__free(fr);
}

/* What a trigger saw goes into its dump whatever its time (a call in flight for longer than the
 * window), after the window, and into no later dump. */
static void test_added_to_the_next_dump_only(void)
{
	struct trace_meta meta;
	struct flight_recorder *fr = start("extra", 5 * S, &meta);
	struct bs_syscall old = {
		.h = { .type = BS_REC_SYSCALL, .size = sizeof(old), .pid = 7, .tid = 8 },
		.dur = 60 * S,
		.nr = 200
	};
	struct bs_hdr *recs[64];
	__u64 now = mono_now_ns();
	char path[160];
	int n = 0, clean, found = 0, last = -1;

	if (!ASSERT_TRUE(fr, "flight recorder"))
		return;
	old.h.ts = now - 60 * S; /* began long before the window */
	syscall_at(fr, now - 1 * S, 101);
	ASSERT_EQ(flight__add_to_dump(fr, &old.h), 0, "added");
	snprintf(path, sizeof(path), "%s/extra-1.bst", dir);
	if (!ASSERT_EQ(dump_and_read(fr, path, recs, 64, &n, &clean), 0, "dump"))
		goto out;
	for (int i = 0; i < n; i++)
		if (recs[i]->type == BS_REC_SYSCALL) {
			found += ((struct bs_syscall *)recs[i])->nr == 200;
			last = (int)((struct bs_syscall *)recs[i])->nr;
		}
	ASSERT_EQ(found, 1, "in the dump, though 60 s before its window");
	ASSERT_EQ(last, 200, "after the window's records");
	free_recs(recs, n);
	n = 0;
	snprintf(path, sizeof(path), "%s/extra-2.bst", dir);
	if (!ASSERT_EQ(dump_and_read(fr, path, recs, 64, &n, &clean), 0, "second dump"))
		goto out;
	found = 0;
	for (int i = 0; i < n; i++)
		found += recs[i]->type == BS_REC_SYSCALL &&
			 ((struct bs_syscall *)recs[i])->nr == 200;
	ASSERT_EQ(found, 0, "not in the next dump");
out:
	free_recs(recs, n);
	flight__free(fr);
}

static void test_cumulative_from_window_start(void)
{
	struct trace_meta meta;
	struct flight_recorder *fr = start("agg", 5 * S, &meta);
	struct bs_hdr *recs[64];
	char path[160];
	__u64 now = mono_now_ns(), counts[8];
	__u32 flags[8];
	int n = 0, clean = 0, k = 0;

	if (!ASSERT_TRUE(fr, "flight recorder"))
		return;
	agg_at(fr, now - 8 * S, 100, 0);
	agg_at(fr, now - 6 * S, 150, 0); /* the base: last before the window */
	syscall_at(fr, now - 6 * S, 1);
	agg_at(fr, now - 3 * S, 180, 0);
	agg_at(fr, now - 2 * S, 190, BS_AGG_FINAL); /* the thread ended */
	agg_at(fr, now - 1 * S, 5, 0);		    /* a recycled tid: from zero */
	syscall_at(fr, now - 1 * S, 2);
	snprintf(path, sizeof(path), "%s/agg-1.bst", dir);
	if (!ASSERT_EQ(dump_and_read(fr, path, recs, 64, &n, &clean), 0, "dump"))
		goto out;
	for (int i = 0; i < n && k < 8; i++) {
		const struct bs_syscall_agg *a = (const void *)recs[i];

		if (recs[i]->type != BS_REC_SYSCALL_AGG)
			continue;
		counts[k] = a->count;
		flags[k++] = a->flags;
		ASSERT_EQ(a->total_ns, a->count * 100, "total less its base too");
	}
	ASSERT_EQ(k, 3, "the window's snapshots");
	ASSERT_EQ(counts[0], 30, "180 less the base 150");
	ASSERT_EQ(counts[1], 40, "the closing one, less the base");
	ASSERT_EQ(flags[1], BS_AGG_FINAL, "still closing");
	ASSERT_EQ(counts[2], 5, "after a close: from zero, nothing to subtract");
out:
	free_recs(recs, n);
	flight__free(fr);
}

/* What keeps memory flat: the store forgets what no event still held can need. */
static void test_meta_store_forgets(void)
{
	struct flight_meta *fm = flight_meta__new();
	struct bs_process proc = {
		.h = { .type = BS_REC_PROCESS, .size = sizeof(proc), .pid = 5, .tid = 5, .ts = 100 }
	};
	struct bs_thread th = {
		.h = { .type = BS_REC_THREAD, .size = sizeof(th), .pid = 5, .tid = 6, .ts = 100 }
	};
	struct bs_exit th_exit = {
		.h = { .type = BS_REC_EXIT, .size = sizeof(th_exit), .pid = 5, .tid = 6, .ts = 200 }
	};
	struct bs_exit proc_exit = { .h = { .type = BS_REC_EXIT,
					    .size = sizeof(proc_exit),
					    .pid = 5,
					    .tid = 5,
					    .ts = 400 },
				     .group_dead = 1 };
	struct bs_stack st = {
		.h = { .type = BS_REC_STACK, .size = sizeof(st), .pid = 5, .tid = 5, .ts = 100 },
		.id = 9
	};
	struct bs_stack_ref ref = { .h = { .type = BS_REC_STACK_REF,
					   .size = sizeof(ref),
					   .pid = 5,
					   .tid = 5,
					   .ts = 300 },
				    .stack_id = 9,
				    .event_type = BS_REC_SYSCALL };
	struct named_string str = {
		.s = { .h = { .type = BS_REC_STRING, .size = sizeof(str), .ts = 100 },
		       .id = 1,
		       .len = 4 },
		.text = "prog"
	};

	if (!ASSERT_TRUE(fm, "store"))
		return;
	flight_meta__observe(fm, &str.s.h, 0);
	flight_meta__observe(fm, &proc.h, 0);
	flight_meta__observe(fm, &th.h, 0);
	flight_meta__observe(fm, &st.h, 0);
	flight_meta__observe(fm, &ref.h, 0);
	flight_meta__observe(fm, &th_exit.h, 0);
	flight_meta__observe(fm, &proc_exit.h, 0);
	ASSERT_EQ(flight_meta__count(fm), 4, "string, process, thread, stack");
	flight_meta__prune(fm, 150);
	ASSERT_EQ(flight_meta__count(fm), 4, "all still needed from 150 on");
	flight_meta__prune(fm, 250);
	ASSERT_EQ(flight_meta__count(fm), 3, "the thread ended at 200: gone");
	flight_meta__prune(fm, 350);
	ASSERT_EQ(flight_meta__count(fm), 2, "the stack was last used at 300: gone");
	flight_meta__prune(fm, 500);
	ASSERT_EQ(flight_meta__count(fm), 1, "the process ended at 400: only the string is left");
	ASSERT_TRUE(flight_meta__bytes(fm) < 200, "and its bytes");
	flight_meta__free(fm);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_window_cut_and_state);
	RUN_TEST(test_added_to_the_next_dump_only);
	RUN_TEST(test_cumulative_from_window_start);
	RUN_TEST(test_meta_store_forgets);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return UNIT_EXIT();
}
