// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --trigger hang's watch (user/flight/flight_hang.c) without BPF: looks with chosen times and
 * calls in flight, progress records. A call in flight past DUR fires once however many calls
 * wait with it (the oldest named), not again while they stay, again once they returned and a
 * call stalls anew; a process whose steps stop fires once DUR after its last one, again after
 * a new step; an exited process is forgotten; ranks whose main threads all stop running fire
 * once, again after one of them moved and stopped anew.
 */
#include <string.h>
#include "unit.h"
#include "flight_hang.h"
#include "nccl_records.h"
#include "torch_records.h"

#define S 1000000000ull

static struct bs_ucall call_at(__u32 pid, __u64 ts)
{
	struct bs_ucall r = { .h = { .type = BS_REC_NCCL_CALL,
				     .size = sizeof(r),
				     .pid = pid,
				     .tid = pid,
				     .ts = ts },
			      .fn = 10, /* the nccl table's entry 10: a collective */
			      .depth = BS_UCALL_OPEN };

	return r;
}

static struct flight_hang *watch(__u64 dur)
{
	static struct flight_opts fo;
	int err;

	flight_opts__init(&fo);
	fo.window_ns = 30 * S;
	fo.hang_ns = dur;
	fo.hang_text = "hang:3s";
	return flight_hang__new(&fo, &err);
}

/* One look at NOW with the calls C[0..N) in flight: whether it fired, WHY and PID. */
static int look(struct flight_hang *h, __u64 now, const struct bs_ucall *c, int n, char *why,
		__u32 *pid)
{
	flight_hang__begin(h, now);
	for (int i = 0; i < n; i++)
		flight_hang__thread(h, c[i].h.pid, c[i].h.tid, &c[i].h);
	flight_hang__thread(h, 99, 99, NULL); /* a thread in no call */
	return flight_hang__stalled(h, why, 256, pid);
}

static void test_calls_fire_once_per_stall(void)
{
	struct flight_hang *h = watch(3 * S);
	struct bs_ucall c[3] = { call_at(11, 10 * S), call_at(12, 10 * S - 5),
				 call_at(13, 11 * S) };
	char why[256];
	__u32 pid = 0;

	ASSERT_TRUE(h, "a watch");
	ASSERT_EQ(look(h, 12 * S, c, 3, why, &pid), 0, "under DUR: nothing");
	ASSERT_EQ(look(h, 13 * S, c, 3, why, &pid), 1, "DUR after the oldest entry: fired");
	ASSERT_EQ(pid, 12, "the oldest call's process named");
	ASSERT_TRUE(strstr(why, "hang:3s: pid 12 tid 12 in ") && strstr(why, " for 3.0 s"), why);
	ASSERT_EQ(look(h, 14 * S + 1, c, 3, why, &pid), 0,
		  "the same stall: not again, not for the call that crossed DUR since");
	ASSERT_EQ(look(h, 15 * S, c, 1, why, &pid), 0, "two returned, one still in: nothing");
	c[1] = call_at(12, 20 * S);
	ASSERT_EQ(look(h, 22 * S, c, 2, why, &pid), 0, "a new call of 12, under DUR");
	ASSERT_EQ(look(h, 23 * S, c, 2, why, &pid), 1, "which stalls: fired again");
	ASSERT_EQ(pid, 12, "for it");
	flight_hang__free(h);
}

static void step_at(struct flight_hang *h, __u32 pid, __u64 ts)
{
	struct bs_torch_step s = { .h = { .type = BS_REC_TORCH_STEP,
					  .size = sizeof(s),
					  .pid = pid,
					  .tid = pid,
					  .ts = ts } };

	ASSERT_TRUE(flight_hang__watches(h, s.h.type), "steps are progress");
	flight_hang__observe(h, &s.h);
}

static void test_steps_that_stop(void)
{
	struct flight_hang *h = watch(2 * S);
	struct bs_exit x = {
		.h = { .type = BS_REC_EXIT, .size = sizeof(x), .pid = 21, .tid = 21, .ts = 9 * S },
		.group_dead = 1
	};
	char why[256];
	__u32 pid = 0;

	ASSERT_EQ(look(h, 10 * S, NULL, 0, why, &pid), 0, "no step yet: nothing to stop");
	step_at(h, 20, 10 * S);
	step_at(h, 21, 10 * S);
	step_at(h, 20, 11 * S);
	ASSERT_EQ(look(h, 12 * S, NULL, 0, why, &pid), 1, "21's last step 2 s ago");
	ASSERT_EQ(pid, 21, "21");
	ASSERT_TRUE(strstr(why, "pid 21 ended no step for 2.0 s") != NULL, why);
	ASSERT_EQ(look(h, 12 * S + 1, NULL, 0, why, &pid), 0, "21 once; 20 not yet");
	ASSERT_EQ(look(h, 13 * S, NULL, 0, why, &pid), 1, "20's last step 2 s ago");
	ASSERT_EQ(pid, 20, "20");
	step_at(h, 20, 14 * S);
	ASSERT_EQ(look(h, 15 * S, NULL, 0, why, &pid), 0, "20 stepped again");
	ASSERT_TRUE(flight_hang__watches(h, BS_REC_EXIT), "exits are watched");
	flight_hang__observe(h, &x.h);
	step_at(h, 20, 16 * S);
	ASSERT_EQ(look(h, 17 * S, NULL, 0, why, &pid), 0, "21 exited: forgotten");
	ASSERT_EQ(look(h, 18 * S, NULL, 0, why, &pid), 1, "20 again, 2 s after its new step");
	ASSERT_EQ(pid, 20, "20 again");
	flight_hang__free(h);
}

/* One look at NOW of ranks: pid 20 + i is rank i, its main thread's CPU time CPU[i]. */
static int look_ranks(struct flight_hang *h, __u64 now, const __u64 *cpu, int n, char *why,
		      __u32 *pid)
{
	flight_hang__begin(h, now);
	for (int i = 0; i < n; i++)
		flight_hang__rank(h, 20 + i, i, cpu[i]);
	return flight_hang__stalled(h, why, 256, pid);
}

/* A job on any backend (gloo): no call in flight, the ranks' main threads stop running. */
static void test_ranks_that_stop(void)
{
	struct flight_hang *h = watch(3 * S);
	__u64 cpu[3] = { 100, 200, 300 };
	char why[256];
	__u32 pid = 0;

	ASSERT_TRUE(h, "a watch");
	ASSERT_EQ(look_ranks(h, 10 * S, cpu, 3, why, &pid), 0, "first look: nothing");
	cpu[1] = 250;
	ASSERT_EQ(look_ranks(h, 12 * S, cpu, 3, why, &pid), 0, "rank 1 ran at 12 s");
	ASSERT_EQ(look_ranks(h, 14 * S, cpu, 3, why, &pid), 0,
		  "ranks 0 and 2 still for 4 s, rank 1 for 2: not the whole job");
	ASSERT_EQ(look_ranks(h, 15 * S, cpu, 3, why, &pid), 1, "every rank still for DUR: fired");
	ASSERT_EQ(pid, 20, "the lowest rank's process named");
	ASSERT_TRUE(strstr(why, "hang:3s: 3 ranks stopped: their main threads have not run for "
				"3.0 s"),
		    why);
	ASSERT_EQ(look_ranks(h, 20 * S, cpu, 3, why, &pid), 0, "the same stall: not again");
	cpu[2] = 301;
	ASSERT_EQ(look_ranks(h, 21 * S, cpu, 3, why, &pid), 0, "rank 2 moved");
	ASSERT_EQ(look_ranks(h, 24 * S, cpu, 3, why, &pid), 1, "and stopped again: fired again");
	ASSERT_EQ(look_ranks(h, 40 * S, cpu, 1, why, &pid), 0,
		  "one rank left (the others exited): no job to hang");
	flight_hang__free(h);
}

static void test_no_trigger_no_watch(void)
{
	struct flight_opts fo;
	int err = 1;

	flight_opts__init(&fo);
	ASSERT_TRUE(!flight_hang__new(&fo, &err) && !err, "no hang:DUR, no watch");
	ASSERT_EQ(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "hang:2s", "t"), 0, "hang:2s");
	ASSERT_EQ(fo.hang_ns, 2 * S, "its DUR");
	ASSERT_EQ(fo.ntriggers, 0, "not a family's trigger");
	ASSERT_TRUE(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "hang:5s", "t") < 0, "one only");
	ASSERT_TRUE(flight_opts__check(&fo, "t") < 0, "needs --flight-recorder");
}

/* --trigger ...@WHO: a pid or a process name, refused when it is neither. */
static void test_trigger_who(void)
{
	struct flight_opts fo;

	flight_opts__init(&fo);
	ASSERT_EQ(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "gil:*>100ms@4242", "t"), 0, "@pid");
	ASSERT_EQ(fo.triggers[0].pid, 4242, "its pid");
	ASSERT_EQ(fo.triggers[0].min_dur_ns, 100000000ull, "its DUR, before the @");
	ASSERT_EQ(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "osrt:read>1s@python3.11", "t"), 0,
		  "@name");
	ASSERT_TRUE(!strcmp(fo.triggers[1].comm, "python3.11") && !fo.triggers[1].pid, "its name");
	ASSERT_TRUE(!strcmp(fo.triggers[1].name, "read"), "NAME stops at >");
	ASSERT_EQ(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "gil:*>100ms", "t"), 0, "no @");
	ASSERT_TRUE(!fo.triggers[2].pid && !fo.triggers[2].comm[0], "anyone's");
	ASSERT_TRUE(flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "gil:*>100ms@", "t") < 0,
		    "@ and nothing");
	ASSERT_TRUE(
		flight_opts__parse(&fo, OPT_FLIGHT_TRIGGER, "gil:*>1s@a-name-of-16-chars", "t") < 0,
		"a name longer than a comm");
	ASSERT_EQ(fo.ntriggers, 3, "the refused ones are not kept");
}

int main(void)
{
	RUN_TEST(test_calls_fire_once_per_stall);
	RUN_TEST(test_steps_that_stop);
	RUN_TEST(test_ranks_that_stop);
	RUN_TEST(test_no_trigger_no_watch);
	RUN_TEST(test_trigger_who);
	return UNIT_EXIT();
}
