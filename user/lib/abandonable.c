// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Work that may never end, run where it can be left behind (abandonable.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include "abandonable.h"

#define SLICE_MS 50

struct job {
	void (*fn)(void *);
	void (*drop)(void *);
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	int done, abandoned;
};

static void job_free(struct job *j)
{
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->done_cond);
	free(j);
}

static void *worker(void *p)
{
	struct job *j = p;
	int abandoned;

	j->fn(j->arg);
	pthread_mutex_lock(&j->lock);
	j->done = 1;
	abandoned = j->abandoned;
	pthread_cond_signal(&j->done_cond);
	pthread_mutex_unlock(&j->lock);
	if (abandoned) { /* the caller has gone: what was made is ours to free */
		j->drop(j->arg);
		job_free(j);
	}
	return NULL;
}

int abandonable__thread(void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int err;

	if (pthread_attr_init(&at))
		return ENOMEM;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &at, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	return err;
}

int abandonable__run(void (*fn)(void *), void (*drop)(void *), void *arg, unsigned int timeout_ms,
		     int (*give_up)(void *), void *give_up_arg)
{
	struct job *j = calloc(1, sizeof(*j));
	unsigned int waited = 0;
	int done;

	if (!j) {
		fn(arg);
		return 0;
	}
	*j = (struct job){ .fn = fn, .drop = drop, .arg = arg };
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->done_cond, NULL);
	if (abandonable__thread(worker, j)) {
		job_free(j);
		fn(arg);
		return 0;
	}
	pthread_mutex_lock(&j->lock);
	while (!j->done && waited < timeout_ms && !(give_up && give_up(give_up_arg))) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += SLICE_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&j->done_cond, &j->lock, &until) == ETIMEDOUT)
			waited += SLICE_MS;
	}
	done = j->done;
	j->abandoned = !done;
	pthread_mutex_unlock(&j->lock);
	if (!done)
		return -ETIMEDOUT;
	job_free(j);
	return 0;
}
