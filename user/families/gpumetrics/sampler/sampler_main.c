// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampler's life (sampler.h): the channel mapped, NVML loaded and started, the devices
 * asked opened, then a tick every period until the recorder says stop or goes away.
 *
 * Ticks keep to absolute deadlines (period k after the first), so a late wake-up does not
 * shift the ones after it; a deadline already past when the sampler wakes is skipped and
 * counted (BS_LOSS_GPUM_LATE), never taken late in a burst of samples a few microseconds
 * apart. The first SAMPLER_CALIBRATE ticks time their reads: when they take more than
 * 1/SAMPLER_BUSY_MAX of the period asked (NVML's calls are ioctls into the driver; a tick of
 * eight devices takes hundreds of microseconds), or the sampler's CPU time more than
 * 1/SAMPLER_BUSY_MAX of theirs, the period grows to fit and the new rate is said in a STATUS
 * record (timed again at it): the rate a device allows.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include "sampler.h"

static struct sampler S; /* 64 devices' state: not on the stack */

static int map_chan(struct sampler *s, int fd)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) || st.st_size <= GPUM_CHAN_HDR)
		return -1;
	p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	s->chan = p;
	s->ring = (char *)p + GPUM_CHAN_HDR;
	if (s->chan->magic != GPUM_CHAN_MAGIC || s->chan->version != GPUM_CHAN_VERSION ||
	    s->chan->size + GPUM_CHAN_HDR > (__u64)st.st_size || s->chan->size % 8)
		return -1;
	return 0;
}

/* CLOCK_MONOTONIC - CLOCK_REALTIME from the narrowest of a few bracketed reads. */
static void read_pair(struct sampler *s)
{
	__u64 best = ~0ull;

	for (int i = 0; i < 8; i++) {
		struct timespec a, r, b;
		__u64 ma, mb, rt;

		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_REALTIME, &r);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ma = (__u64)a.tv_sec * 1000000000ull + a.tv_nsec;
		mb = (__u64)b.tv_sec * 1000000000ull + b.tv_nsec;
		rt = (__u64)r.tv_sec * 1000000000ull + r.tv_nsec;
		if (mb - ma < best) {
			best = mb - ma;
			s->mono_minus_real = ma + (mb - ma) / 2 - rt;
		}
	}
}

/* Is ITEM (an index, or a UUID or its prefix as CUDA_VISIBLE_DEVICES takes it) device D? */
static int names(const struct sampler_dev *d, const char *item)
{
	char *end;
	unsigned long i = strtoul(item, &end, 10);

	if (*item && !*end)
		return i == d->index;
	return !strncmp(item, "GPU-", 4) && !strncmp(d->info.uuid, item, strlen(item));
}

/*
 * The devices ASK names ("all", "0,2", "cuda-visible": CUDA_VISIBLE_DEVICES's indices or
 * UUIDs) among NVML's COUNT: opened into S. 0, or -1 after a NO_DEVICE status.
 */
static int open_devices(struct sampler *s, const char *ask, unsigned count, unsigned hz)
{
	char list[512], *save = NULL, *item;
	struct sampler_dev probe;
	int all = !strcmp(ask, "all");
	nvmlReturn_t r;

	if (!strcmp(ask, "cuda-visible")) {
		const char *v = getenv("CUDA_VISIBLE_DEVICES");

		all = !v;
		ask = v ? v : "all";
	}
	snprintf(list, sizeof(list), "%s", ask);
	for (unsigned i = 0; i < count && s->ndev < GPUM_MAX_DEVICES; i++) {
		int asked = all;

		memset(&probe, 0, sizeof(probe));
		probe.index = i;
		if ((r = sampler__open_dev(s, &probe)) != NVML_SUCCESS) {
			if (!all)
				continue;
			sampler__put_status(s, BS_GPUM_NO_DEVICE, hz, 0, 0,
					    "NVML could not open GPU %u: %s", i,
					    nvml__err(&s->nvml, r));
			return -1;
		}
		for (item = all ? NULL : strtok_r(list, ",", &save); item && !asked;
		     item = strtok_r(NULL, ",", &save))
			asked = names(&probe, item);
		snprintf(list, sizeof(list), "%s", ask);
		save = NULL;
		if (asked)
			s->dev[s->ndev++] = probe;
		else
			sampler__close_dev(s, &probe);
	}
	if (!s->ndev) {
		sampler__put_status(s, BS_GPUM_NO_DEVICE, hz, 0, 0,
				    count ? "none of the GPUs asked (%s) is among NVML's %u"
					  : "NVML found no GPU (%s asked; %u)",
				    ask, count);
		return -1;
	}
	return 0;
}

static int by_value(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

struct pace {
	__u64 period, next, ticks;
	__u64 slow_every, proc_every; /* ticks between NVML's slow reads, between process reads */
	unsigned hz_asked, hz;
	__u64 cost[SAMPLER_CALIBRATE];
	unsigned ncost;
	__u64 tick_ns;
	__u64 cal_cpu, cal_wall; /* the sampler's CPU time and the clock when a round began */
};

static void pace_every(struct pace *p)
{
	p->slow_every = SAMPLER_SLOW_NS / p->period ? SAMPLER_SLOW_NS / p->period : 1;
	p->proc_every = SAMPLER_PROC_NS / p->period ? SAMPLER_PROC_NS / p->period : 1;
}

static __u64 cpu_ns(void);

/*
 * The first ticks timed: the period made long enough for what a tick's reads take (twice
 * their median), and for the sampler's CPU time over those ticks to be at most half their
 * time (NVML's slow reads, every 10 ms whatever the rate, are outside the median: on an
 * H200's Firecracker VM, one device's ticks of 2.6 ms, every one with its slow reads at the
 * 191 Hz the median allowed, took 86% of a core). After a change the ticks are timed again,
 * at the new rate; the rate only goes down.
 */
static void calibrate(struct sampler *s, struct pace *p, __u64 cost)
{
	__u64 median, period, wall;
	double share;

	if (p->ncost >= SAMPLER_CALIBRATE)
		return;
	if (!p->ncost) {
		p->cal_cpu = cpu_ns();
		p->cal_wall = sampler__now();
	}
	p->cost[p->ncost++] = cost;
	if (p->ncost < SAMPLER_CALIBRATE)
		return;
	qsort(p->cost, SAMPLER_CALIBRATE, sizeof(p->cost[0]), by_value);
	median = p->cost[SAMPLER_CALIBRATE / 2];
	p->tick_ns = median;
	wall = sampler__now() - p->cal_wall;
	share = wall ? (double)(cpu_ns() - p->cal_cpu) / (double)wall : 0;
	period = median * SAMPLER_BUSY_MAX;
	if (share * SAMPLER_BUSY_MAX > 1 && p->period * share * SAMPLER_BUSY_MAX > period)
		period = (__u64)(p->period * share * SAMPLER_BUSY_MAX);
	if (period <= p->period + p->period / 10) /* within the ticks' jitter: kept */
		return;
	p->period = period;
	pace_every(p);
	p->ncost = 0;
	p->hz = (unsigned)(1000000000ull / p->period);
	sampler__put_status(s, BS_GPUM_RUNNING, p->hz_asked, p->hz ? p->hz : 1, (unsigned)median,
			    "a tick's NVML reads of %u device%s take %llu us (%.0f%% of a core): "
			    "sampling at %u Hz, not the %u asked",
			    s->ndev, s->ndev == 1 ? "" : "s", (unsigned long long)median / 1000,
			    share * 100, p->hz, p->hz_asked);
}

static __u64 cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* One tick: every device read, then their records. */
static void tick(struct sampler *s, struct pace *p)
{
	struct gpum_chan *c = s->chan;
	/* by ticks, not by the clock: a tick a little early never skips them */
	int slow = p->ticks % p->slow_every == 0, proc = s->proc && p->ticks % p->proc_every == 0;
	__u64 t0, t1, ts;

	p->ticks++;
	t0 = sampler__now();
	if (t0 - s->last_pair >= SAMPLER_KEY_NS) {
		s->last_pair = t0;
		read_pair(s);
		__atomic_store_n(&c->cpu_ns, cpu_ns(), __ATOMIC_RELAXED);
		t0 = sampler__now();
	}
	for (unsigned i = 0; i < s->ndev; i++) {
		struct sampler_dev *d = &s->dev[i];
		__u64 d0 = sampler__now();

		d->ts = 0;
		if (!d->lost)
			sampler__read(s, d, slow);
		if (!d->ts)
			d->ts = d0 + (sampler__now() - d0) / 2;
	}
	t1 = sampler__now();
	ts = t0 + (t1 - t0) / 2;
	for (unsigned i = 0; i < s->ndev; i++) {
		struct sampler_dev *d = &s->dev[i];

		if (d->info_dirty)
			sampler__put_device(s, d, d->ts);
		if (d->lost)
			__atomic_add_fetch(&c->lost, 1, __ATOMIC_RELAXED);
		else if (d->have)
			sampler__put_sample(s, d, d->ts);
		if (proc)
			sampler__read_procs(s, d, d->ts);
	}
	if (!c->first_tick_ns)
		__atomic_store_n(&c->first_tick_ns, ts, __ATOMIC_RELAXED);
	__atomic_store_n(&c->last_tick_ns, ts, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->ticks, 1, __ATOMIC_RELEASE);
	calibrate(s, p, t1 - t0);
}

static void run(struct sampler *s, struct pace *p)
{
	struct gpum_chan *c = s->chan;
	pid_t parent = getppid();
	struct timespec at;
	__u64 now;

	p->next = sampler__now();
	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) && getppid() == parent) {
		at.tv_sec = p->next / 1000000000ull;
		at.tv_nsec = p->next % 1000000000ull;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
		now = sampler__now();
		if (now >= p->next + p->period) {
			__u64 skipped = (now - p->next) / p->period;

			__atomic_add_fetch(&c->late, skipped, __ATOMIC_RELAXED);
			p->next += skipped * p->period;
		}
		tick(s, p);
		p->next += p->period;
	}
	__atomic_store_n(&c->cpu_ns, cpu_ns(), __ATOMIC_RELAXED);
}

/* NVML loaded and started, the devices opened: 0, or -1 after a STATUS saying why not. */
static int start(struct sampler *s, const char *devices, unsigned hz)
{
	char why[GPUM_STATUS_TEXT], driver[96] = "";
	unsigned count = 0;
	int missing;
	nvmlReturn_t r;

	if (nvml__load(&s->nvml, why, sizeof(why), &missing)) {
		sampler__put_status(s, missing ? BS_GPUM_NO_NVML : BS_GPUM_NVML_FAILED, hz, 0, 0,
				    "%s", why);
		return -1;
	}
	if ((r = s->nvml.nvmlInit_v2()) != NVML_SUCCESS) {
		sampler__put_status(s, BS_GPUM_NVML_FAILED, hz, 0, 0, "nvmlInit: %s",
				    nvml__err(&s->nvml, r));
		return -1;
	}
	if ((r = s->nvml.nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS) {
		sampler__put_status(s, BS_GPUM_NVML_FAILED, hz, 0, 0, "nvmlDeviceGetCount: %s",
				    nvml__err(&s->nvml, r));
		return -1;
	}
	if (open_devices(s, devices, count, hz))
		return -1;
	if (s->nvml.nvmlSystemGetDriverVersion)
		s->nvml.nvmlSystemGetDriverVersion(driver, sizeof(driver));
	sampler__put_status(s, BS_GPUM_RUNNING, hz, hz, 0, "driver %s", driver[0] ? driver : "?");
	return 0;
}

int main(int argc, char **argv)
{
	struct sampler *s = &S;
	struct pace p = { 0 };
	sigset_t all;
	char *end;
	long fd;

	/* It dies with the recorder, whatever killed it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigprocmask(SIG_BLOCK, &all, NULL); /* the recorder's Ctrl-C is the recorder's */
	if (argc != 5) {
		fprintf(stderr, "usage: %s CHAN_FD HZ DEVICES PROC (run by bpfsight)\n", argv[0]);
		return 2;
	}
	fd = strtol(argv[1], &end, 10);
	p.hz_asked = p.hz = (unsigned)strtoul(argv[2], NULL, 10);
	if (*end || fd < 0 || map_chan(s, (int)fd) || !p.hz) {
		fprintf(stderr, "%s: not a channel, or no rate: run by bpfsight\n", argv[0]);
		return 2;
	}
	close((int)fd);
	s->proc = !strcmp(argv[4], "1");
	p.period = 1000000000ull / p.hz;
	pace_every(&p);
	if (start(s, argv[3], p.hz))
		return 0; /* said in the channel: the recording goes on without metrics */
	read_pair(s);
	s->last_pair = sampler__now();
	run(s, &p);
	for (unsigned i = 0; i < s->ndev; i++)
		sampler__close_dev(s, &s->dev[i]);
	s->nvml.nvmlShutdown();
	return 0;
}
