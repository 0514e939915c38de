// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* record --start-at (start_at.h). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "parse.h"
#include "record_clock.h"
#include "trace_writer.h"
#include "start_at.h"
#include "msg.h"

#define NS_PER_S 1000000000ull
#define CHECK_NS (100 * 1000000ull) /* how often a stop is looked for while waiting */
/* @HH:MM:SS further away than this is a time that has passed today. */
#define LONGEST_WAIT_NS (12 * 3600 * NS_PER_S)

int start_at__parse(const char *s, struct start_at *a)
{
	unsigned h, m, sec;
	char end;

	memset(a, 0, sizeof(*a));
	a->tod_s = -1;
	if (s[0] == '/') {
		if (parse_duration_ns(s + 1, &a->period_ns) || !a->period_ns)
			return -EINVAL;
	} else if (s[0] == '@') {
		if (sscanf(s + 1, "%u:%u:%u%c", &h, &m, &sec, &end) != 3 || h > 23 || m > 59 ||
		    sec > 59)
			return -EINVAL;
		a->tod_s = (__s32)(h * 3600 + m * 60 + sec);
	} else {
		return -EINVAL;
	}
	a->set = 1;
	return 0;
}

__u64 start_at__next(const struct start_at *a, __u64 now_ns)
{
	time_t now_s = (time_t)(now_ns / NS_PER_S);
	struct tm tm;
	__s64 day_s, wait_s;

	if (a->period_ns)
		return (now_ns / a->period_ns + 1) * a->period_ns;
	localtime_r(&now_s, &tm);
	day_s = tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec;
	wait_s = a->tod_s - day_s;
	if (wait_s <= 0)
		wait_s += 24 * 3600;
	/* From the start of this second: the instant is on a whole second. */
	return ((__u64)now_s + (__u64)wait_s) * NS_PER_S;
}

static __u64 realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * NS_PER_S + (__u64)ts.tv_nsec;
}

static void sleep_until(__u64 at_ns)
{
	struct timespec ts = { (time_t)(at_ns / NS_PER_S), (long)(at_ns % NS_PER_S) };

	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int start_at__wait(__u64 at_ns, volatile const int *stop, struct trace_clocks *then)
{
	/* Above the low real-time priorities jobs are run at (chrt -f 1..19), below the
	 * kernel's interrupt threads (50): a job spinning at SCHED_FIFO 1 held the wake back. */
	struct sched_param rt = { .sched_priority = 20 }, old_param;
	int old_policy = sched_getscheduler(0), rt_on, stopped = 0;
	__u64 now;

	/*
	 * A real-time thread runs when its timer fires, whatever else wants the CPU; asleep
	 * all along, it costs nothing. It stays one until the clocks are read.
	 */
	sched_getparam(0, &old_param);
	rt_on = !sched_setscheduler(0, SCHED_FIFO, &rt);
	while (!stopped && (now = realtime_ns()) < at_ns) {
		stopped = *stop;
		if (!stopped)
			sleep_until(now + CHECK_NS < at_ns ? now + CHECK_NS : at_ns);
	}
	stopped |= *stop;
	if (!stopped)
		record_clocks__now(then);
	if (rt_on)
		sched_setscheduler(0, old_policy, &old_param);
	return stopped;
}

int start_at__begin(const struct start_at *a, struct trace_meta *meta, struct trace_writer *w,
		    int control_fd, volatile const int *stop)
{
	struct trace_clocks now;
	char when[64];
	struct tm tm;
	time_t s;
	__u64 at;
	int err;

	trace_clocks__now(&now);
	at = start_at__next(a, now.realtime_ns);
	if (at - now.realtime_ns > LONGEST_WAIT_NS) {
		pr_err("--start-at: %02d:%02d:%02d has passed today (it is %.1f h "
		       "away): give a time still to come\n",
		       a->tod_s / 3600, a->tod_s / 60 % 60, a->tod_s % 60,
		       (at - now.realtime_ns) / 3.6e12);
		return -1;
	}
	s = (time_t)(at / NS_PER_S);
	gmtime_r(&s, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	pr_info("probes live; starting at %s.%03lluZ (--start-at)\n", when,
		(unsigned long long)(at % NS_PER_S / 1000000));
	if (start_at__wait(at, stop, &meta->start))
		return 0; /* stopped: the recorder ends, CMD never runs */
	err = w ? trace_writer__rewrite_header(w, meta) : 0;
	if (err) {
		pr_err("cannot write the start clocks: %s\n", strerror(-err));
		return -1;
	}
	bpf_map_update_elem(control_fd, &(__u32){ 0 }, &(__u32){ 0 }, BPF_ANY);
	return 0;
}
