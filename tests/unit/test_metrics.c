// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * monitor's metrics (user/monitor/metrics.c) fed records as the recorder writes them: cumulative
 * in-kernel snapshots become exact increments, top-N and "other", a recycled pid starting from
 * zero, the exit grace; and hmap__del, which the metrics rely on to forget threads.
 */
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "metrics.h"
#include "record_options.h"
#include "mono_clock.h"
#include "hmap.h"
#include "osrt_records.h"
#include "cuda_records.h"

#define SEC 1000000000ull

static __u64 t0; /* records carry CLOCK_MONOTONIC times, as the render's clock */

static void hdr(struct bs_hdr *h, __u16 type, __u32 size, __u32 pid, __u32 tid, __u64 ts)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = tid;
	h->ts = t0 + ts;
}

static void fork_proc(struct metrics *m, __u32 pid, const char *comm, __u64 ts)
{
	struct bs_fork f = { .child_pid = pid, .child_tid = pid };

	hdr(&f.h, BS_REC_FORK, sizeof(f), 1, 1, ts);
	snprintf(f.comm, sizeof(f.comm), "%s", comm);
	metrics__record(m, &f.h);
}

static void agg(struct metrics *m, __u32 pid, __u32 tid, __u32 nr, __u64 count, __u32 flags,
		__u64 ts)
{
	struct bs_syscall_agg a = { .nr = nr, .flags = flags, .count = count, .total_ns = count };

	hdr(&a.h, BS_REC_SYSCALL_AGG, sizeof(a), pid, tid, ts);
	metrics__record(m, &a.h);
}

static void exit_proc(struct metrics *m, __u32 pid, __u64 ts)
{
	struct bs_exit e = { .group_dead = 1 };

	hdr(&e.h, BS_REC_EXIT, sizeof(e), pid, pid, ts);
	metrics__record(m, &e.h);
}

/* The value of the sample line starting with LINE in M's exposition, or -1. */
static double sample(struct metrics *m, const char *line)
{
	char *text = NULL, *p;
	size_t len = 0;
	double v = -1;
	FILE *f = open_memstream(&text, &len);

	metrics__render(m, f);
	fclose(f);
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, line, strlen(line)) && p[strlen(line)] == ' ') {
			v = strtod(p + strlen(line) + 1, NULL);
			break;
		}
	if (getenv("SHOW"))
		fputs(text, stderr);
	free(text);
	return v;
}

static void test_hmap_del(void)
{
	struct hmap *h = hmap__new(sizeof(__u64));
	static __u64 ref[4096];
	__u64 *v;

	srand(7);
	for (int round = 0; round < 200000; round++) {
		__u64 k = rand() % 4096;

		if (rand() % 3) {
			v = hmap__get(h, (struct hkey){ k, k * 7 }, 1);
			*v = ++ref[k];
		} else {
			hmap__del(h, (struct hkey){ k, k * 7 });
			ref[k] = 0;
		}
	}
	size_t n = 0;
	for (__u64 k = 0; k < 4096; k++) {
		v = hmap__get(h, (struct hkey){ k, k * 7 }, 0);
		if (ref[k]) {
			n++;
			if (!ASSERT_TRUE(v && *v == ref[k], "a key kept finds its value"))
				break;
		} else if (!ASSERT_TRUE(!v, "a deleted key is gone")) {
			break;
		}
	}
	ASSERT_EQ(hmap__count(h), n, "count");
	hmap__free(h);
}

/* Metrics as monitor makes them: with monitor's options (its families' defaults). */
static struct metrics *monitor_metrics(const struct metrics_opts *mo, struct record_args *a)
{
	if (record_args__init(a, "monitor"))
		return NULL;
	return metrics__new(mo, &a->o);
}

static void test_syscall_increments_and_recycled_pid(void)
{
	/* No rebalance (which asks the kernel whether these made-up pids live). */
	struct metrics_opts o = { .top_n = 10, .grace_ns = 5 * SEC, .rebalance_ns = 1000 * SEC };
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);

	fork_proc(m, 100, "work", 1);
	agg(m, 100, 100, 110, 5, 0, 2);		   /* getppid: 5 so far */
	agg(m, 100, 100, 110, 12, 0, 3);	   /* 12 */
	agg(m, 100, 101, 110, 3, 0, 4);		   /* another thread */
	agg(m, 100, 101, 110, 4, BS_AGG_FINAL, 5); /* it exited: its key closes */
	agg(m, 100, 101, 110, 2, 0, 6);		   /* a recycled tid counts from zero */
	ASSERT_EQ(
		sample(m, "bpfsight_syscalls_total{pid=\"100\",comm=\"work\",syscall=\"getppid\"}"),
		18.0, "12 + 4 + 2 calls");
	ASSERT_EQ(sample(m, "bpfsight_syscall_duration_seconds_count{syscall=\"getppid\"}"), 18.0,
		  "histogram count");
	exit_proc(m, 100, 7);
	fork_proc(m, 100, "again", 8); /* the pid reused: nothing continues */
	agg(m, 100, 100, 110, 1, 0, 9);
	ASSERT_EQ(sample(m,
			 "bpfsight_syscalls_total{pid=\"100\",comm=\"again\",syscall=\"getppid\"}"),
		  1.0, "the new process starts from zero");
	ASSERT_EQ(
		sample(m, "bpfsight_syscalls_total{pid=\"100\",comm=\"work\",syscall=\"getppid\"}"),
		-1.0, "the old one's series are gone");
	metrics__free(m);
	record_args__free(&a);
}

static void test_top_n_other_and_grace(void)
{
	struct metrics_opts o = { .top_n = 2, .grace_ns = 5 * SEC, .rebalance_ns = 1000 * SEC };
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);

	for (__u32 pid = 200; pid < 204; pid++) {
		fork_proc(m, pid, "p", 1);
		agg(m, pid, pid, 39, pid - 199, 0, 2); /* getpid: 1, 2, 3, 4 calls */
	}
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"200\",comm=\"p\",syscall=\"getpid\"}"),
		  1.0, "first owner");
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"201\",comm=\"p\",syscall=\"getpid\"}"),
		  2.0, "second owner");
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"other\",comm=\"\",syscall=\"getpid\"}"),
		  7.0, "3 + 4 under other");
	ASSERT_EQ(sample(m, "bpfsight_processes_with_series"), 2.0, "owners");
	exit_proc(m, 200, 3 * SEC);
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"200\",comm=\"p\",syscall=\"getpid\"}"),
		  1.0, "an exited process within the grace");
	metrics__free(m);
	record_args__free(&a);
}

int main(void)
{
	t0 = mono_now_ns();
	RUN_TEST(test_hmap_del);
	RUN_TEST(test_syscall_increments_and_recycled_pid);
	RUN_TEST(test_top_n_other_and_grace);
	return UNIT_EXIT();
}
