// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * monitor's metrics (user/monitor/metrics.c) fed records as the recorder writes them: cumulative
 * in-kernel snapshots become exact increments, top-N and "other", a recycled pid starting from
 * zero, the exit grace; mem's bytes (gauges of a process's own, summed under "other", gone at
 * its exit, its peaks kept for the grace) and its state freed with the processes, the live
 * blocks' forgetting a process whatever its devices; and hmap__del, which the metrics rely on
 * to forget threads; slots given back at an exit, a restarted process (its job and role) going
 * on with its predecessor's series, workers named by their fork order.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "unit.h"
#include "metrics.h"
#include "metrics_ident.h"
#include "record_options.h"
#include "mono_clock.h"
#include "hmap.h"
#include "osrt_records.h"
#include "cuda_records.h"
#include "mem_records.h"
#include "mem_live.h"

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

/*
 * --osrt-mode blocked (monitor's default): the sleeps have their own names, their series apart
 * from every call's; records of every call (a kernel where blocked mode fell back) still show
 * under the calls' names.
 */
static void test_blocked_sleeps_have_their_own_names(void)
{
	struct metrics_opts o = { .top_n = 10, .grace_ns = 5 * SEC, .rebalance_ns = 1000 * SEC };
	struct bs_syscall r = { .dur = 3000000, .nr = 35, .flags = BS_SYSCALL_BLOCKED };
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);
	const char *blocks =
		"bpfsight_syscall_blocks_total{pid=\"100\",comm=\"work\",syscall=\"nanosleep\"}";

	fork_proc(m, 100, "work", 1);
	agg(m, 100, 100, 35, 7, BS_AGG_BLOCKED, 2); /* 7 short sleeps */
	hdr(&r.h, BS_REC_SYSCALL, sizeof(r), 100, 100, 3);
	metrics__record(m, &r.h); /* and one of 3 ms */
	ASSERT_EQ(sample(m, blocks), 8.0, "7 short sleeps and one long");
	ASSERT_EQ(sample(m, "bpfsight_syscall_blocked_seconds_total{pid=\"100\",comm=\"work\","
			    "syscall=\"nanosleep\"}"),
		  0.003000007, "3 ms and 7 ns asleep");
	ASSERT_EQ(sample(m, "bpfsight_syscall_block_duration_seconds_count{syscall=\"nanosleep\"}"),
		  8.0, "the sleeps' histogram");
	ASSERT_EQ(
		sample(m,
		       "bpfsight_syscalls_total{pid=\"100\",comm=\"work\",syscall=\"nanosleep\"}"),
		-1.0, "no sleep counted as a call");
	agg(m, 100, 100, 110, 5, 0, 4); /* every call of getppid, recorded exactly */
	ASSERT_EQ(
		sample(m, "bpfsight_syscalls_total{pid=\"100\",comm=\"work\",syscall=\"getppid\"}"),
		5.0, "every call's records keep their names");
	ASSERT_EQ(sample(m, blocks), 8.0, "the sleeps unchanged");
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

/* An exited process's series go when its grace ends, not at the next rebalance (10 s). */
static void test_grace_ends_between_rebalances(void)
{
	struct metrics_opts o = { .top_n = 10, .grace_ns = 5 * SEC, .rebalance_ns = 1000 * SEC };
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);

	fork_proc(m, 300, "p", 1);
	agg(m, 300, 300, 39, 1, 0, 2);
	exit_proc(m, 300, 3 * SEC);
	fork_proc(m, 301, "q", 7 * SEC);
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"300\",comm=\"p\",syscall=\"getpid\"}"),
		  1.0, "1 s before the grace ends");
	fork_proc(m, 302, "r", 9 * SEC);
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"300\",comm=\"p\",syscall=\"getpid\"}"),
		  -1.0, "1 s after it");
	metrics__free(m);
	record_args__free(&a);
}

/* The job and role a made-up pid's /proc would give: pids 500-599 are job "train", main. */
static int fake_ident(__u32 pid, struct metrics_ident *id, const void *arg)
{
	(void)arg;
	memset(id, 0, sizeof(*id));
	if (pid < 500 || pid >= 600)
		return -1; /* gone: its name is its job */
	snprintf(id->job, sizeof(id->job), "train");
	snprintf(id->role, sizeof(id->role), "main");
	return 0;
}

static void exec_proc(struct metrics *m, __u32 pid, const char *comm, __u64 ts)
{
	struct bs_exec e = {};

	hdr(&e.h, BS_REC_EXEC, sizeof(e), pid, pid, ts);
	snprintf(e.comm, sizeof(e.comm), "%s", comm);
	metrics__record(m, &e.h);
}

#define TRAIN(pid, role, sys)                                                                      \
	"bpfsight_syscalls_total{pid=\"" pid "\",comm=\"python3\",job_name=\"train\",role=\"" role \
	"\",syscall=\"" sys "\"}"

/*
 * Slots go to what runs: exited one-shot processes give theirs back at once (their series
 * stay for the grace), so the restarted trainer, seen after top_n of them, gets its own; it
 * goes on with its predecessor's counts under the same job and role, and its forked workers
 * with their predecessors' by fork order.
 */
static void test_restart_continues_slots_freed(void)
{
	struct metrics_opts o = {
		.top_n = 3, .grace_ns = 100 * SEC, .rebalance_ns = 1000 * SEC, .ident = fake_ident
	};
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);

	fork_proc(m, 500, "python3", 1);
	exec_proc(m, 500, "python3", 2);
	agg(m, 500, 500, 39, 7, 0, 3);
	ASSERT_EQ(sample(m, "bpfsight_processes_with_series"), 1.0, "the trainer");
	ASSERT_EQ(sample(m, TRAIN("500", "main", "getpid")), 7.0, "the trainer's series");
	exit_proc(m, 500, 5);
	/* Four one-shot processes (more than --top 3) come and go. */
	for (__u32 pid = 700; pid < 704; pid++) {
		fork_proc(m, pid, "sleep", 6 + pid);
		exec_proc(m, pid, "sleep", 6 + pid);
		agg(m, pid, pid, 39, 1, 0, 6 + pid);
		exit_proc(m, pid, 7 + pid);
	}
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"703\",comm=\"sleep\",job_name=\"sleep\","
			    "role=\"main\",syscall=\"getpid\"}"),
		  4.0, "one-shot processes of one command go on in one series (job: their name)");
	ASSERT_EQ(sample(m, "bpfsight_processes_with_series"), 2.0,
		  "the exited trainer's and the last sleep's, kept for the grace");
	/* The restart: a new pid, the same job and role. */
	fork_proc(m, 510, "python3", 800);
	exec_proc(m, 510, "python3", 801);
	agg(m, 510, 510, 39, 2, 0, 802);
	ASSERT_EQ(sample(m, TRAIN("510", "main", "getpid")), 9.0, "7 before the restart, 2 after");
	ASSERT_EQ(sample(m, TRAIN("500", "main", "getpid")), -1.0,
		  "the predecessor's series end as its successor takes them");
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"other\",comm=\"\",syscall=\"getpid\"}"),
		  -1.0, "nothing under other: every process had a slot");
	metrics__free(m);
	record_args__free(&a);
}

/* A forked child is its parent's worker N, by fork order; a restart's workers go on. */
static void test_workers_by_fork_order(void)
{
	struct metrics_opts o = {
		.top_n = 10, .grace_ns = 100 * SEC, .rebalance_ns = 1000 * SEC, .ident = fake_ident
	};
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);
	struct bs_fork f = { .child_pid = 521, .child_tid = 521 };

	fork_proc(m, 520, "python3", 1);
	exec_proc(m, 520, "python3", 2);
	for (__u32 i = 0; i < 2; i++) {
		f.child_pid = f.child_tid = 521 + i;
		hdr(&f.h, BS_REC_FORK, sizeof(f), 520, 520, 3 + i);
		snprintf(f.comm, sizeof(f.comm), "python3");
		metrics__record(m, &f.h);
		agg(m, 521 + i, 521 + i, 39, 4 + i, 0, 5);
	}
	ASSERT_EQ(sample(m, TRAIN("522", "worker 1", "getpid")), 5.0, "the second worker");
	for (__u32 pid = 520; pid < 523; pid++)
		exit_proc(m, pid, 10);
	fork_proc(m, 530, "python3", 11);
	exec_proc(m, 530, "python3", 12);
	f.child_pid = f.child_tid = 531;
	hdr(&f.h, BS_REC_FORK, sizeof(f), 530, 530, 13);
	metrics__record(m, &f.h);
	agg(m, 531, 531, 39, 1, 0, 14);
	ASSERT_EQ(sample(m, TRAIN("531", "worker 0", "getpid")), 5.0,
		  "the restart's worker 0 goes on from 4");
	ASSERT_EQ(sample(m, TRAIN("522", "worker 1", "getpid")), 5.0,
		  "worker 1 of the last run, for the grace");
	metrics__free(m);
	record_args__free(&a);
}

/*
 * More exited processes with series than --top: the one that lived shortest goes first, so
 * one-shot processes exiting after a job's trainer never push its series out before a restart.
 */
static void test_exited_one_shots_go_before_a_job(void)
{
	struct metrics_opts o = {
		.top_n = 2, .grace_ns = 100 * SEC, .rebalance_ns = 1000 * SEC, .ident = fake_ident
	};
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);

	fork_proc(m, 560, "python3", 1);
	exec_proc(m, 560, "python3", 2);
	agg(m, 560, 560, 39, 3, 0, 3);
	exit_proc(m, 560, 20);			  /* lived 19 s */
	for (__u32 pid = 661; pid < 665; pid++) { /* one-shots of another job, after it */
		fork_proc(m, pid, "sleep", 21 + pid - 661);
		exec_proc(m, pid, "sleep", 21 + pid - 661);
		agg(m, pid, pid, 39, 1, 0, 21 + pid - 661);
		exit_proc(m, pid, 21 + pid - 661);
	}
	ASSERT_EQ(sample(m, TRAIN("560", "main", "getpid")), 3.0,
		  "the trainer's series stay through 4 one-shot exits (--top 2)");
	ASSERT_EQ(sample(m, "bpfsight_syscalls_total{pid=\"661\",comm=\"sleep\",job_name=\"sleep\","
			    "role=\"main\",syscall=\"getpid\"}"),
		  -1.0, "the first one-shot's went");
	metrics__free(m);
	record_args__free(&a);
}

/*
 * torch 2.1+ names a DataLoader's worker processes pt_data_worker as each begins: a forked
 * worker so named is "DataLoader worker N" of its trainer; a restart's worker N goes on in its
 * series under that role from its fork, before it names itself.
 */
static void comm_proc(struct metrics *m, __u32 pid, const char *comm, __u64 ts)
{
	struct bs_comm c = {};

	hdr(&c.h, BS_REC_COMM, sizeof(c), pid, pid, ts);
	snprintf(c.comm, sizeof(c.comm), "%s", comm);
	metrics__record(m, &c.h);
}

#define WORKER(pid, comm, role)                                                                    \
	"bpfsight_syscalls_total{pid=\"" pid "\",comm=\"" comm                                     \
	"\",job_name=\"train\",role=\"" role "\",syscall=\"getpid\"}"

static void test_dataloader_workers_named_by_torch(void)
{
	struct metrics_opts o = {
		.top_n = 10, .grace_ns = 100 * SEC, .rebalance_ns = 1000 * SEC, .ident = fake_ident
	};
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);
	struct bs_fork f = {};

	fork_proc(m, 540, "python3", 1);
	exec_proc(m, 540, "python3", 2);
	for (__u32 i = 0; i < 2; i++) {
		f.child_pid = f.child_tid = 541 + i;
		hdr(&f.h, BS_REC_FORK, sizeof(f), 540, 540, 3 + i);
		snprintf(f.comm, sizeof(f.comm), "python3");
		metrics__record(m, &f.h);
		if (i == 0) /* torch's worker loop names it; a plain fork (i 1) stays a worker */
			comm_proc(m, 541, "pt_data_worker", 4);
		agg(m, 541 + i, 541 + i, 39, 4 + i, 0, 5);
	}
	ASSERT_EQ(sample(m, WORKER("541", "pt_data_worker", "DataLoader worker 0")), 4.0,
		  "the named fork is the DataLoader's worker 0");
	ASSERT_EQ(sample(m, WORKER("542", "python3", "worker 1")), 5.0,
		  "an unnamed fork stays worker 1");
	for (__u32 pid = 540; pid < 543; pid++)
		exit_proc(m, pid, 10);
	fork_proc(m, 550, "python3", 11);
	exec_proc(m, 550, "python3", 12);
	f.child_pid = f.child_tid = 551;
	hdr(&f.h, BS_REC_FORK, sizeof(f), 550, 550, 13);
	metrics__record(m, &f.h);
	agg(m, 551, 551, 39, 1, 0, 14);
	ASSERT_EQ(sample(m, WORKER("551", "python3", "DataLoader worker 0")), 5.0,
		  "the restart's worker 0 goes on from 4 as the DataLoader's, before it is named");
	comm_proc(m, 551, "pt_data_worker", 15);
	ASSERT_EQ(sample(m, WORKER("551", "pt_data_worker", "DataLoader worker 0")), 5.0,
		  "named: the same series");
	metrics__free(m);
	record_args__free(&a);
}

/*
 * Every slot taken (--top 1), a process with events gets the slot of an owner idle for a whole
 * rebalance window at once. Both live (the rebalance asks the kernel): this test and its parent.
 */
static void test_idle_owner_gives_its_slot(void)
{
	struct metrics_opts o = { .top_n = 1, .grace_ns = 100 * SEC, .rebalance_ns = 10 * SEC };
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);
	__u32 idle = (__u32)getppid(), busy = (__u32)getpid();
	char sel[2][128];

	snprintf(sel[0], sizeof(sel[0]),
		 "bpfsight_syscalls_total{pid=\"%u\",comm=\"idle\",syscall=\"getpid\"}", idle);
	snprintf(sel[1], sizeof(sel[1]),
		 "bpfsight_syscalls_total{pid=\"%u\",comm=\"busy\",syscall=\"getpid\"}", busy);
	fork_proc(m, idle, "idle", 1);
	agg(m, idle, idle, 39, 1, 0, 2);
	fork_proc(m, busy, "busy", 3);
	agg(m, busy, busy, 39, 1, 0, 4);
	ASSERT_EQ(sample(m, sel[1]), -1.0, "no slot free: busy counts under other");
	agg(m, busy, busy, 39, 2, 0, 12 * SEC); /* a window in which idle had its event */
	ASSERT_EQ(sample(m, sel[1]), -1.0, "idle had events in the last window: it keeps its slot");
	agg(m, busy, busy, 39, 3, 0, 23 * SEC); /* a whole window without idle's events */
	agg(m, busy, busy, 39, 4, 0, 24 * SEC);
	ASSERT_EQ(sample(m, sel[1]), 1.0, "busy has idle's slot, from its next event on");
	ASSERT_EQ(sample(m, sel[0]), -1.0, "idle's series went");
	metrics__free(m);
	record_args__free(&a);
}

static void mem_alloc(struct metrics *m, __u32 pid, __s16 device, __u64 addr, __u64 bytes, int free,
		      __u64 allocated, __u64 reserved, __u64 ts)
{
	struct bs_mem_alloc r = {
		.addr = addr,
		.bytes = bytes,
		.allocated = allocated,
		.reserved = reserved,
		.device = device,
		.source = device == BS_MEM_DEV_CPU ? BS_MEM_SRC_CPU : BS_MEM_SRC_REPORT,
		.flags = (free ? BS_MEM_FREE : 0) | (device == BS_MEM_DEV_CPU ? 0 : BS_MEM_TOTALS)
	};

	hdr(&r.h, BS_REC_MEM_ALLOC, sizeof(r), pid, pid, ts);
	metrics__record(m, &r.h);
}

static void mem_rss(struct metrics *m, __u32 pid, __u64 rss, __u64 ts)
{
	struct bs_mem_rss r = { .rss = rss, .anon = rss };

	hdr(&r.h, BS_REC_MEM_RSS, sizeof(r), pid, pid, ts);
	metrics__record(m, &r.h);
}

#define MEM_BYTES(pid, dev, kind)                                                                  \
	"bpfsight_memory_bytes{pid=\"" pid "\",comm=\"p\",device=\"" dev "\",kind=\"" kind "\"}"
#define MEM_PEAK(pid, dev, kind)                                                                   \
	"bpfsight_memory_peak_bytes{pid=\"" pid "\",comm=\"p\",device=\"" dev "\",kind=\"" kind    \
	"\"}"

static void test_mem_bytes_other_exit(void)
{
	struct metrics_opts o = { .top_n = 1, .grace_ns = 5 * SEC, .rebalance_ns = 1000 * SEC };
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);

	fork_proc(m, 300, "p", 1);
	fork_proc(m, 301, "p", 1);
	/* 300 owns the one series: CPU tensors by the records, a free's size from its block. */
	mem_alloc(m, 300, BS_MEM_DEV_CPU, 0x1000, 3000, 0, 0, 0, 2);
	mem_alloc(m, 300, BS_MEM_DEV_CPU, 0x2000, 5000, 0, 0, 0, 3);
	mem_alloc(m, 300, BS_MEM_DEV_CPU, 0x1000, 0, 1, 0, 0, 4); /* Delete: no size said */
	mem_alloc(m, 300, BS_MEM_DEV_CPU, 0x9000, 0, 1, 0, 0, 4); /* allocated before: nothing */
	/* The GPU's: the allocator's totals, whatever was allocated before the recording. */
	mem_alloc(m, 300, 1, 0xa000, 512, 0, 10240, 20480, 5);
	mem_alloc(m, 300, 1, 0xa000, 512, 1, 9728, 20480, 6);
	mem_rss(m, 300, 7 << 20, 6);
	ASSERT_EQ(sample(m, MEM_BYTES("300", "cpu", "allocated")), 5000.0, "CPU: 3000 freed");
	ASSERT_EQ(sample(m, MEM_PEAK("300", "cpu", "allocated")), 8000.0, "CPU peak");
	ASSERT_EQ(sample(m, MEM_BYTES("300", "cpu", "reserved")), -1.0, "no CPU reserve");
	ASSERT_EQ(sample(m, MEM_BYTES("300", "1", "allocated")), 9728.0, "GPU 1: its totals");
	ASSERT_EQ(sample(m, MEM_BYTES("300", "1", "reserved")), 20480.0, "GPU 1 reserved");
	ASSERT_EQ(sample(m, MEM_PEAK("300", "1", "allocated")), 10240.0, "GPU 1 peak");
	ASSERT_EQ(sample(m, MEM_BYTES("300", "cpu", "rss")), (double)(7 << 20), "RSS");
	ASSERT_EQ(sample(m, "bpfsight_memory_allocations_total{pid=\"300\",comm=\"p\","
			    "device=\"cpu\"}"),
		  2.0, "CPU allocations");
	ASSERT_EQ(sample(m, "bpfsight_memory_frees_total{pid=\"300\",comm=\"p\",device=\"cpu\"}"),
		  2.0, "CPU frees");
	ASSERT_EQ(sample(m, "bpfsight_memory_ooms_total{pid=\"300\",comm=\"p\",device=\"1\"}"), 0.0,
		  "the OOM counter from 0");
	/* 301 has no series of its own: its bytes are other's, summed; no peak for other. */
	mem_alloc(m, 301, BS_MEM_DEV_CPU, 0x1000, 700, 0, 0, 0, 7);
	mem_alloc(m, 301, BS_MEM_DEV_CPU, 0x2000, 11, 0, 0, 0, 7);
	ASSERT_EQ(sample(m, "bpfsight_memory_bytes{pid=\"other\",comm=\"\",device=\"cpu\","
			    "kind=\"allocated\"}"),
		  711.0, "other: 301's bytes");
	ASSERT_EQ(sample(m, "bpfsight_memory_peak_bytes{pid=\"other\",comm=\"\",device=\"cpu\","
			    "kind=\"allocated\"}"),
		  -1.0, "no peak for other");
	ASSERT_EQ(sample(m, "bpfsight_memory_allocations_total{pid=\"other\",comm=\"\","
			    "device=\"cpu\"}"),
		  2.0, "other's allocations");
	/* 300 exits: it holds nothing; its peaks stay for the grace. */
	exit_proc(m, 300, 8);
	ASSERT_EQ(sample(m, MEM_BYTES("300", "cpu", "allocated")), -1.0, "bytes gone at the exit");
	ASSERT_EQ(sample(m, MEM_BYTES("300", "cpu", "rss")), -1.0, "RSS gone at the exit");
	ASSERT_EQ(sample(m, MEM_PEAK("300", "1", "reserved")), 20480.0, "peaks kept");
	mem_rss(m, 300, 9 << 20, 9); /* late after the exit: brings nothing back */
	ASSERT_EQ(sample(m, MEM_BYTES("300", "cpu", "rss")), -1.0, "nothing after the exit");
	/* A recycled pid starts over. */
	fork_proc(m, 300, "p", 10);
	mem_alloc(m, 300, BS_MEM_DEV_CPU, 0x2000, 0, 1, 0, 0, 11); /* the old one's block */
	mem_alloc(m, 300, BS_MEM_DEV_CPU, 0x3000, 64, 0, 0, 0, 11);
	ASSERT_EQ(sample(m, MEM_BYTES("300", "cpu", "allocated")), 64.0,
		  "the new 300 (owning the series the old one left) holds its own 64 only");
	ASSERT_EQ(sample(m, MEM_PEAK("300", "1", "reserved")), -1.0, "no peak of the old one");
	ASSERT_EQ(sample(m, "bpfsight_memory_bytes{pid=\"other\",comm=\"\",device=\"cpu\","
			    "kind=\"allocated\"}"),
		  711.0, "other: still 301's");
	metrics__free(m);
	record_args__free(&a);
}

static __u64 live_apply(struct mem_live *l, __u32 pid, __s16 device, __u64 addr, __u64 bytes,
			int free, __u8 source)
{
	struct bs_mem_alloc r = {
		.addr = addr,
		.bytes = bytes,
		.device = device,
		.source = source,
		.flags = free ? BS_MEM_FREE : 0,
	};

	hdr(&r.h, BS_REC_MEM_ALLOC, sizeof(r), pid, pid, 1);
	return mem_live__apply(l, &r, 0, NULL);
}

static void count_block(void *arg, __u32 pid, __s16 device, __u64 addr, const struct mem_block *b)
{
	(*(__u64 *)arg)++;
}

/*
 * A process's exit forgets what it had, on whatever device its records name (any 16-bit
 * value: once only -1 to 255 were forgotten), its last CPU Delete included, and nothing of
 * another process's.
 */
static void test_mem_live_forget(void)
{
	static const __s16 devs[] = {
		BS_MEM_DEV_CPU, 0, 7, 255, 256, 300, -5, INT16_MAX, INT16_MIN
	};
	const size_t ndevs = sizeof(devs) / sizeof(devs[0]);
	struct mem_live *l = mem_live__new();
	const struct mem_dev *d;
	__u64 n = 0;

	if (!ASSERT_TRUE(l, "mem_live__new"))
		return;
	for (size_t i = 0; i < ndevs; i++)
		for (__u64 b = 0; b < 2; b++)
			live_apply(l, 100, devs[i], 0x1000 + b * 0x100, 64, 0, BS_MEM_SRC_REPORT);
	live_apply(l, 200, 0, 0x1000, 4096, 0, BS_MEM_SRC_REPORT);
	live_apply(l, 200, BS_MEM_DEV_CPU, 0x1000, 32, 0, BS_MEM_SRC_CPU);
	/* 100's Delete of a block allocated before: its report is left out, until 100 goes */
	live_apply(l, 100, BS_MEM_DEV_CPU, 0x9000, 0, 1, BS_MEM_SRC_CPU);
	ASSERT_EQ(mem_live__count(l), 2 * ndevs + 2, "every block live");
	mem_live__forget(l, 100);
	ASSERT_EQ(mem_live__count(l), 2, "200's blocks only");
	for (size_t i = 0; i < ndevs; i++) {
		ASSERT_TRUE(!mem_live__dev(l, 100, devs[i]), "100's devices forgotten");
		ASSERT_TRUE(!mem_live__get(l, 100, devs[i], 0x1000), "100's blocks forgotten");
	}
	mem_live__each(l, 0, 0, count_block, &n);
	ASSERT_EQ(n, 2, "every block left is 200's");
	d = mem_live__dev(l, 200, 0);
	ASSERT_TRUE(d && d->live == 4096 && mem_live__get(l, 200, BS_MEM_DEV_CPU, 0x1000),
		    "200's kept");
	ASSERT_EQ(live_apply(l, 100, BS_MEM_DEV_CPU, 0x9000, 48, 1, BS_MEM_SRC_REPORT), 48,
		  "100's Delete forgotten: a report of that address counts what it says");
	mem_live__forget(l, 999); /* never seen: nothing */
	ASSERT_EQ(mem_live__count(l), 2, "an unknown pid forgets nothing");
	live_apply(l, 100, 300, 0x1000, 16, 0, BS_MEM_SRC_REPORT);
	d = mem_live__dev(l, 100, 300);
	ASSERT_TRUE(d && d->live == 16 && d->peak == 16, "the pid again starts from nothing");
	ASSERT_EQ(mem_live__unkept(l), 0, "nothing left unkept");
	mem_live__free(l);
}

/* Heap bytes in use (glibc's count). */
static size_t heap_used(void)
{
	return mallinfo2().uordblks;
}

/*
 * Processes that allocate and exit, one after the other for hours: what mem keeps of them
 * (their live blocks, devices, series) goes with them, so the heap stays where a few hundred
 * of them left it.
 */
static void test_mem_churn_leaves_nothing(void)
{
	struct metrics_opts o = { .top_n = 30, .grace_ns = SEC, .rebalance_ns = SEC };
	struct record_args a;
	struct metrics *m = monitor_metrics(&o, &a);
	size_t warm = 0;
	__u64 ts = 1;

	/* Made-up pids past pid_max: the rebalance's kill(pid, 0) finds none alive. */
	for (__u32 i = 0; i < 20000; i++, ts += SEC / 4) {
		__u32 pid = 5000000 + i;

		fork_proc(m, pid, "p", ts);
		for (__u64 b = 0; b < 8; b++)
			mem_alloc(m, pid, BS_MEM_DEV_CPU, 0x1000 + b * 64, 64, 0, 0, 0, ts);
		mem_alloc(m, pid, 0, 0x1000, 1 << 20, 0, 1 << 20, 2 << 20, ts);
		mem_rss(m, pid, 64 << 20, ts);
		exit_proc(m, pid, ts);
		if (i == 1000)
			warm = heap_used();
	}
	ASSERT_TRUE(sample(m, "bpfsight_processes") <= 10, "exited processes go after the grace");
	ASSERT_TRUE(heap_used() <= warm + 64 * 1024,
		    "the heap after 20000 processes is what it was after 1000");
	if (heap_used() > warm + 64 * 1024)
		fprintf(stderr, "heap %zu after 1000, %zu after 20000\n", warm, heap_used());
	metrics__free(m);
	record_args__free(&a);
}

int main(void)
{
	t0 = mono_now_ns();
	RUN_TEST(test_hmap_del);
	RUN_TEST(test_syscall_increments_and_recycled_pid);
	RUN_TEST(test_blocked_sleeps_have_their_own_names);
	RUN_TEST(test_top_n_other_and_grace);
	RUN_TEST(test_grace_ends_between_rebalances);
	RUN_TEST(test_restart_continues_slots_freed);
	RUN_TEST(test_workers_by_fork_order);
	RUN_TEST(test_dataloader_workers_named_by_torch);
	RUN_TEST(test_exited_one_shots_go_before_a_job);
	RUN_TEST(test_idle_owner_gives_its_slot);
	RUN_TEST(test_mem_bytes_other_exit);
	RUN_TEST(test_mem_live_forget);
	RUN_TEST(test_mem_churn_leaves_nothing);
	return UNIT_EXIT();
}
