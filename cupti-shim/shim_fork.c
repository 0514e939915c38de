// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every lock the shim defines, taken by fork's prepare handler (shim_core.c) in the order its
 * code nests them: a lock is only ever taken with locks before it in this list held, never one
 * after it, so taking them all in this order cannot deadlock against a thread of the shim.
 * The forked child's only thread is the one that forked: a lock held by another thread at the
 * fork would stay held in the child forever. Before each was listed, a DataLoader worker
 * forked while the parent's poller listed the functions never found (entries, then STATUS
 * records: strings, send) waited for the entries' lock at its first poll or its os._exit's
 * drain, and never exited.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"

static const struct shim_lock {
	const char *name; /* its variable */
	pthread_mutex_t *m;
} locks[] = {
	/* The poller's state: everything below is taken under it. */
	{ "shim_ctl", &shim_ctl },
	/* pyfunc: the noted status (copied out, then sent) and the entries (held while STATUS
	 * records of the names never found are sent). */
	{ "shim_pyfunc_noted_lock", &shim_pyfunc_noted_lock },
	{ "shim_pyfunc_entries_lock", &shim_pyfunc_entries_lock },
	/* CUPTI's loading (a dlopen) and its errors said. */
	{ "shim_cupti_load_lock", &shim_cupti_load_lock },
	{ "shim_cupti_err_lock", &shim_cupti_err_lock },
	/* The chained NVTX injection's dlopen, then NVTX's names and ranges. */
	{ "shim_nvtx_chain_lock", &shim_nvtx_chain_lock },
	{ "shim_nvtx_lock", &shim_nvtx_lock },
	/* Interned strings, then the buffers' list and the sending, which everything above may
	 * end in. */
	{ "shim_str_lock", &shim_str_lock },
	{ "shim_buf_list_lock", &shim_buf_list_lock },
	{ "shim_buf_send_lock", &shim_buf_send_lock },
};

#define NLOCKS (sizeof(locks) / sizeof(locks[0]))

void shim_fork__lock_all(void)
{
	for (size_t i = 0; i < NLOCKS; i++)
		pthread_mutex_lock(locks[i].m);
}

/*
 * In the parent, and in the child, where the thread that forked holds them all: unlocked, not
 * initialized again (undefined for a locked mutex; DRD: "Mutex reinitialization").
 */
void shim_fork__unlock_all(void)
{
	for (size_t i = NLOCKS; i-- > 0;)
		pthread_mutex_unlock(locks[i].m);
}

#ifdef SHIM_TEST_HOOK
static const struct shim_lock *lock_named(const char *name)
{
	for (size_t i = 0; name && i < NLOCKS; i++)
		if (!strcmp(locks[i].name, name))
			return &locks[i];
	return NULL;
}

struct holder {
	const struct shim_lock *l;
	unsigned int ms;
	sem_t held;
};

static void *hold(void *arg)
{
	struct holder *h = arg;
	const struct timespec ts = { h->ms / 1000, (long)(h->ms % 1000) * SHIM_NS_PER_MS };

	pthread_mutex_lock(h->l->m);
	sem_post(&h->held);
	nanosleep(&ts, NULL);
	pthread_mutex_unlock(h->l->m);
	free(h);
	return NULL;
}

/*
 * Test hooks (the test variant only; tests/workloads/shim/fork_locks.c): a thread that holds
 * lock NAME for MS milliseconds, returning once it holds it (0; -1: no such lock); and the
 * locks' names, comma-separated, into ALL, those held now (trylock) into HELD: the count held.
 */
SHIM_EXPORT int bpfsight_shim_test_hold_lock(const char *name, unsigned int ms)
{
	struct holder *h = calloc(1, sizeof(*h));
	pthread_t t;

	if (!h || !(h->l = lock_named(name))) {
		free(h);
		return -1;
	}
	h->ms = ms;
	sem_init(&h->held, 0, 0);
	if (pthread_create(&t, NULL, hold, h)) {
		free(h);
		return -1;
	}
	pthread_detach(t);
	while (sem_wait(&h->held) && errno == EINTR)
		;
	return 0;
}

SHIM_EXPORT int bpfsight_shim_test_locks(char *all, char *held, size_t len)
{
	size_t a = 0, b = 0;
	int n = 0;

	all[0] = held[0] = 0;
	for (size_t i = 0; i < NLOCKS; i++) {
		a += (size_t)snprintf(all + a, a < len ? len - a : 0, "%s%s", a ? "," : "",
				      locks[i].name);
		if (pthread_mutex_trylock(locks[i].m)) {
			b += (size_t)snprintf(held + b, b < len ? len - b : 0, "%s%s", b ? "," : "",
					      locks[i].name);
			n++;
		} else {
			pthread_mutex_unlock(locks[i].m);
		}
	}
	return n;
}
#endif
