// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The TSC mapped onto CLOCK_MONOTONIC (shim_clock.h): the poller's side.
 *
 * Each reading brackets one rdtsc between two clock_gettime calls and keeps the midpoint of
 * the tightest of four (wider than 2 us, the thread preempted each time: skipped).
 * The rate (ns per tick) is the slope over the readings of the last ~2 s, so it follows the
 * clock's own slewing (NTP) and an error of a reading moves it by a fraction of a ppm. A new
 * reading does not move the map's value: the map goes on from where it was at that tick with
 * a slope that closes the gap to the reading over the next STEER_NS; a gap past JUMP_NS
 * (the machine suspended, the counter reset) restarts the map at the reading instead.
 *
 * Before the map is first used, the poller checks that every CPU the process may run on
 * reads the same counter: it moves itself to each in turn (sched_setaffinity of its own
 * thread; the application's threads are not touched) and takes a reading there; each must
 * lie within CPU_SKEW_NS of the line through two readings on the first CPU, taken before and
 * after. A hypervisor may not keep its virtual CPUs' counters in step (here the kernel's own
 * clock is kvm-clock, not the TSC): where they are not, the map is never used.
 */
#include <sched.h>
#include <fcntl.h>
#include <time.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "shim_clock.h"

#define RING	      40	  /* readings kept: 2 s at the poller's 50 ms */
#define BRACKET_NS    2000ull	  /* a reading's clock_gettime calls at most this apart */
#define MIN_SPAN_NS   20000000ull /* the rate from readings at least 20 ms apart */
#define STEER_NS      50000000ll  /* a gap is closed over the next 50 ms */
#define JUMP_NS	      1000000ll	  /* beyond 1 ms the map restarts */
#define MAX_STEER_PPM 1000	  /* the slope moves by at most 0.1% to close a gap */
#define CPU_SKEW_NS   1000ll	  /* every CPU's reading within this of one line */

struct shim_clock_map shim_clock_map;

static bool usable;
static int cpus_checked; /* 0 not yet, 1 every CPU agrees, -1 one does not: never used */
static struct {
	uint64_t tsc, ns;
} ring[RING];
static unsigned int nring, head;

/* The TSC runs at one rate whatever the CPU's state, and every CPU's counter with it. */
void shim_clock__init(void)
{
#if defined(__x86_64__)
	char buf[8192], *flags;
	ssize_t n;
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	flags = strstr(buf, "\nflags");
	if (!flags)
		return;
	*strchrnul(flags + 1, '\n') = 0;
	usable = strstr(flags, " constant_tsc") && strstr(flags, " nonstop_tsc");
#endif
}

#if defined(__x86_64__)
/* The tightest of four brackets: an error of at most half of it. */
static bool reading(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = BRACKET_NS + 1;

	for (int i = 0; i < 4; i++) {
		uint64_t a = shim_now(), t = shim_clock__tsc(), b = shim_now();

		if (b - a < best) {
			best = b - a;
			*tsc = t;
			*ns = a + (b - a) / 2;
		}
	}
	return best <= BRACKET_NS;
}

/*
 * Readings on every CPU of the process (its main thread's affinity) lie on one line: the
 * one through two readings on the first CPU, before and after the others.
 */
static bool cpus_agree(void)
{
	struct {
		uint64_t tsc, ns;
	} first = { 0, 0 }, last = { 0, 0 }, r[CPU_SETSIZE];
	cpu_set_t all, mine, one;
	int cpu0 = -1, n = 0;
	bool ok = true;

	if (sched_getaffinity(getpid(), sizeof(all), &all) ||
	    sched_getaffinity(0, sizeof(mine), &mine))
		return false;
	for (int c = 0; c < CPU_SETSIZE && ok; c++) {
		if (!CPU_ISSET(c, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		ok = !sched_setaffinity(0, sizeof(one), &one) && reading(&r[n].tsc, &r[n].ns);
		if (ok && cpu0 < 0) {
			cpu0 = c;
			first.tsc = r[n].tsc;
			first.ns = r[n].ns;
		}
		n++;
	}
	if (ok && cpu0 >= 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu0, &one);
		ok = !sched_setaffinity(0, sizeof(one), &one) && reading(&last.tsc, &last.ns) &&
		     last.tsc > first.tsc;
	}
	sched_setaffinity(0, sizeof(mine), &mine);
	for (int i = 0; ok && i < n; i++) {
		long double line = first.ns + (long double)(r[i].tsc - first.tsc) *
						      (last.ns - first.ns) / (last.tsc - first.tsc);
		long double off = (long double)r[i].ns - line;

		ok = off < CPU_SKEW_NS && off > -CPU_SKEW_NS;
	}
	return ok && cpu0 >= 0;
}

static void publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	struct shim_clock_map *m = &shim_clock_map;

	atomic_fetch_add_explicit(&m->seq, 1, memory_order_acq_rel); /* odd: writing */
	atomic_thread_fence(memory_order_release);
	m->base_tsc = base_tsc;
	m->base_ns = base_ns;
	m->mult = mult;
	m->ready = 1;
	atomic_fetch_add_explicit(&m->seq, 1, memory_order_release);
}

/* The map's value at TSC (the poller's own read of it). */
static uint64_t mapped(uint64_t tsc)
{
	const struct shim_clock_map *m = &shim_clock_map;

	if (tsc <= m->base_tsc)
		return m->base_ns;
	return m->base_ns + (uint64_t)(((unsigned __int128)(tsc - m->base_tsc) * m->mult) >> 32);
}

void shim_clock__poll(void)
{
	uint64_t tsc, ns, old_tsc, old_ns, rate, at;
	int64_t gap, steer;

	if (!usable || cpus_checked < 0)
		return;
	if (!cpus_checked)
		cpus_checked = cpus_agree() ? 1 : -1;
	if (cpus_checked < 0)
		return;
	if (!shim_clock_map.ready && !nring && reading(&tsc, &ns)) {
		/* The first use: a rate now (the caller registers ops right after), from two
		 * readings MIN_SPAN_NS apart; the next ones refine it. */
		const struct timespec wait = { 0, MIN_SPAN_NS };

		ring[head] = (typeof(ring[0])){ tsc, ns };
		head = (head + 1) % RING;
		nring = 1;
		nanosleep(&wait, NULL);
	}
	if (!reading(&tsc, &ns))
		return;
	old_tsc = ring[nring < RING ? 0 : head].tsc;
	old_ns = ring[nring < RING ? 0 : head].ns;
	ring[head] = (typeof(ring[0])){ tsc, ns };
	head = (head + 1) % RING;
	nring += nring < RING;
	if (nring < 2 || tsc <= old_tsc || ns - old_ns < MIN_SPAN_NS)
		return;
	rate = (uint64_t)(((unsigned __int128)(ns - old_ns) << 32) / (tsc - old_tsc));
	if (!shim_clock_map.ready) {
		publish(tsc, ns, rate);
		return;
	}
	at = mapped(tsc);
	gap = (int64_t)(ns - at);
	if (gap > JUMP_NS || gap < -JUMP_NS) {
		publish(tsc, ns, rate);
		return;
	}
	/* From (tsc, at), the slope that meets the clock STEER_NS from now. */
	steer = gap * 1000000 / STEER_NS; /* ppm */
	if (steer > MAX_STEER_PPM)
		steer = MAX_STEER_PPM;
	if (steer < -MAX_STEER_PPM)
		steer = -MAX_STEER_PPM;
	publish(tsc, at, (uint64_t)((__int128)rate * (1000000 + steer) / 1000000));
}
#else
void shim_clock__poll(void)
{
}
#endif

void shim_clock__reset(void)
{
	atomic_fetch_add_explicit(&shim_clock_map.seq, 1, memory_order_acq_rel);
	shim_clock_map.ready = 0;
	atomic_fetch_add_explicit(&shim_clock_map.seq, 1, memory_order_release);
	nring = 0;
	head = 0;
}
