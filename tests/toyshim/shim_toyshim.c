// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy shim family's module in the cupti-shim (struct shim_module, shim.h): built into a
 * test variant of the shim only (libbpfsight-shim-toyshim.so, cupti-shim/shim.mk), added by
 * one line (SHIM_MODULES_EXTRA). While a tracer wants it (its bpfsight:toyshim semaphore, as
 * the family's struct family_shim names the site), bpfsight_toyshim_tick writes one TICK
 * record, its name interned as the shim's other strings are, into the calling thread's batch.
 */
#include <stdatomic.h>
#include "shim.h"
#include "shim_usdt.h"
#include "toyshim_records.h"

SHIM_SEMAPHORE(toyshim);

static bool wanted(void)
{
	return atomic_load(&shim_session) && SHIM_SEM(batch) > 0 && SHIM_SEM(toyshim) > 0;
}

/* The poller: its state bit follows the semaphore, so STATUS records say it is on. */
static void toyshim_poll(void)
{
	bool on = wanted();

	if (on != !!(shim_core__state() & BS_SHIM_ST_TOYSHIM_ON))
		shim_core__set_state(on ? BS_SHIM_ST_TOYSHIM_ON : 0,
				     on ? 0 : BS_SHIM_ST_TOYSHIM_ON);
}

static void toyshim_state(uint32_t st)
{
	STAP_PROBE1(bpfsight, toyshim, (uint64_t)st);
}

const struct shim_module shim_toyshim_module = {
	.name = "toyshim",
	.poll = toyshim_poll,
	.state = toyshim_state,
	.fork_clear = BS_SHIM_ST_TOYSHIM_ON,
};

/* 1 while a tracer wants ticks. */
SHIM_EXPORT int bpfsight_toyshim_on(void)
{
	return wanted() && (shim_core__state() & BS_SHIM_ST_TOYSHIM_ON);
}

/* One tick of NAME with VALUE into this thread's batch: 1 when written, 0 when not wanted. */
SHIM_EXPORT int bpfsight_toyshim_tick(const char *name, uint64_t value)
{
	uint32_t session = atomic_load(&shim_session);
	struct shim_thread *t;
	struct bs_toyshim_tick r;
	int ok;

	if (!wanted() || !(t = shim_thread__self()))
		return 0;
	shim_thread__lock(t);
	shim_hdr(&r.h, BS_REC_TOYSHIM_TICK, sizeof(r), shim_thread__tid(t), shim_now());
	r.value = value;
	r.name_id = shim_str__use(shim_str__intern_c(name), session, shim_thread__tid(t));
	r._pad = 0;
	ok = shim_thread__append(t, session, &r, sizeof(r));
	shim_thread__unlock(t);
	return ok;
}
