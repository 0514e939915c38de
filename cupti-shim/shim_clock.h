/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A cheap CLOCK_MONOTONIC for the shim's hottest path (the torch ops: two timestamps each):
 * the CPU's time-stamp counter mapped onto CLOCK_MONOTONIC ns. Under a hypervisor's clock
 * (kvm-clock) clock_gettime costs several times one rdtsc, and an op's two reads were most
 * of what recording an op cost (bench/RESULTS.md, section torch).
 *
 * The poller keeps the map (shim_clock.c): every 50 ms it reads CLOCK_MONOTONIC tightly
 * around an rdtsc and steers the map toward it, continuously (the map's value never jumps:
 * it changes slope to close the gap over the next period), so times stay monotonic and
 * within a fraction of a microsecond of CLOCK_MONOTONIC, the clock of every other record.
 * Used only where the TSC is invariant and synchronized (constant_tsc and nonstop_tsc) and
 * once two readings 50 ms apart gave its rate; until then, and elsewhere, clock_gettime.
 */
#ifndef BPFSIGHT_SHIM_CLOCK_H
#define BPFSIGHT_SHIM_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

struct shim_clock_map {
	_Atomic uint32_t seq; /* odd while the poller writes */
	uint32_t ready;	      /* the map may be used */
	uint64_t base_tsc, base_ns;
	uint64_t mult; /* ns per tick, 32.32 fixed point */
};

extern struct shim_clock_map shim_clock_map;

uint64_t shim_now(void); /* clock_gettime(CLOCK_MONOTONIC): shim_core.c */

/* At the shim's start: can the TSC be used at all here? */
void shim_clock__init(void);
/* Poller: a new reading, the map steered toward it. */
void shim_clock__poll(void);
/* Poller: no one needs the map any more; the next use starts from fresh readings. */
void shim_clock__reset(void);

#if defined(__x86_64__)
static inline uint64_t shim_clock__tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* CLOCK_MONOTONIC ns, cheaply. */
static inline uint64_t shim_clock__now(void)
{
	const struct shim_clock_map *m = &shim_clock_map;
	uint64_t tsc, ns, base_tsc, base_ns, mult;
	uint32_t s;

	do {
		s = atomic_load_explicit(&shim_clock_map.seq, memory_order_acquire);
		if (!m->ready)
			return shim_now();
		base_tsc = m->base_tsc;
		base_ns = m->base_ns;
		mult = m->mult;
		tsc = shim_clock__tsc();
		atomic_thread_fence(memory_order_acquire);
	} while ((s & 1) || s != atomic_load_explicit(&shim_clock_map.seq, memory_order_relaxed));
	/* A tick before the base (another CPU's counter a hair behind): the base itself. */
	ns = tsc > base_tsc
		     ? base_ns + (uint64_t)(((unsigned __int128)(tsc - base_tsc) * mult) >> 32)
		     : base_ns;
	return ns;
}
#else
static inline uint64_t shim_clock__now(void)
{
	return shim_now();
}
#endif

#endif /* BPFSIGHT_SHIM_CLOCK_H */
