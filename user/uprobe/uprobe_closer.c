// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Links closed by a few threads, off the recording's (uprobe_closer.h). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/types.h>
#include "array.h"
#include "uprobe_closer.h"

/* Closes at once share a grace period: this many wait together (bench/RESULTS.md). */
#define CLOSERS 8

struct uprobe_closer {
	pthread_mutex_t lock;
	pthread_cond_t more, done;
	int *fds; /* waiting to be closed */
	size_t nfds, cap;
	__u32 nthreads, idle, busy;
	pthread_t threads[CLOSERS];
	int ending;
};

static void *closer_main(void *arg)
{
	struct uprobe_closer *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		int fd;

		while (!c->nfds && !c->ending) {
			c->idle++;
			pthread_cond_wait(&c->more, &c->lock);
			c->idle--;
		}
		if (!c->nfds)
			break;
		fd = c->fds[--c->nfds];
		c->busy++;
		pthread_mutex_unlock(&c->lock);
		close(fd);
		pthread_mutex_lock(&c->lock);
		c->busy--;
		if (!c->nfds && !c->busy)
			pthread_cond_broadcast(&c->done);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

struct uprobe_closer *uprobe_closer__new(void)
{
	struct uprobe_closer *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->more, NULL);
	pthread_cond_init(&c->done, NULL);
	return c;
}

/* One more thread, when none is idle for what waits (C->lock held). */
static void grow(struct uprobe_closer *c)
{
	sigset_t all, old;

	if (c->idle >= c->nfds || c->nthreads == CLOSERS)
		return;
	/* The recording's signals (SIGINT, SIGTERM, the stop) stay its main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!pthread_create(&c->threads[c->nthreads], NULL, closer_main, c))
		c->nthreads++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void uprobe_closer__close(struct uprobe_closer *c, int fd)
{
	if (fd < 0)
		return;
	if (c) {
		pthread_mutex_lock(&c->lock);
		if (!c->ending &&
		    !array__grow((void **)&c->fds, c->nfds, &c->cap, sizeof(*c->fds))) {
			c->fds[c->nfds++] = fd;
			grow(c);
			if (c->nthreads) {
				pthread_cond_signal(&c->more);
				pthread_mutex_unlock(&c->lock);
				return;
			}
			c->nfds--; /* no thread: closed here */
		}
		pthread_mutex_unlock(&c->lock);
	}
	close(fd);
}

void uprobe_closer__drain(struct uprobe_closer *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	while (c->nfds || c->busy)
		pthread_cond_wait(&c->done, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

void uprobe_closer__free(struct uprobe_closer *c)
{
	if (!c)
		return;
	uprobe_closer__drain(c);
	pthread_mutex_lock(&c->lock);
	c->ending = 1;
	pthread_cond_broadcast(&c->more);
	pthread_mutex_unlock(&c->lock);
	for (__u32 i = 0; i < c->nthreads; i++)
		pthread_join(c->threads[i], NULL);
	free(c->fds);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->more);
	pthread_cond_destroy(&c->done);
	free(c);
}
