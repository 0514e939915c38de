// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unwind tables built in a thread of their own (unwind_builder.h). */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "abandonable.h"
#include "mono_clock.h"
#include "unwind_builder.h"
#include "unwind_store.h"

/*
 * Shared by the owner and the thread under LOCK. Once STOP is set the owner never looks at
 * it again: the thread (detached) frees it on its way out, after a build under way ends.
 */
struct unwind_builder {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_cond_t done_cond; /* a job was done (unwind_builder__wait) */
	struct unwind_build_job *todo, **todo_tail;
	struct unwind_build_job *done, **done_tail;
	struct unwind_build_job *cur; /* under way */
	__u64 cur_since;
	__u32 pending;
	int stop;
	pid_t tid; /* the thread's, once it runs (unwind_builder__urgent) */
	int urgent;
};

#define NICE_IDLE 10 /* its priority while nothing waits for it */

void unwind_build_job__free(struct unwind_build_job *j)
{
	if (!j)
		return;
	unwind_table__free(&j->t);
	free(j->open_path);
	free(j->root);
	free(j->shown);
	free(j->store);
	free(j);
}

static void free_list(struct unwind_build_job *j)
{
	while (j) {
		struct unwind_build_job *next = j->next;

		unwind_build_job__free(j);
		j = next;
	}
}

static void destroy(struct unwind_builder *b)
{
	free_list(b->todo);
	free_list(b->done);
	pthread_cond_destroy(&b->cond);
	pthread_cond_destroy(&b->done_cond);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static void *run(void *arg)
{
	struct unwind_builder *b = arg;
	struct unwind_build_job *j;
	char *untrimmed = NULL; /* the store written to since its last trim (a copy), or NULL */
	int wrote;

	/*
	 * The least urgent work of the recording: on a busy machine the loop, and the reads
	 * that name stacks (a second each once the recording stops), go first.
	 */
	pthread_mutex_lock(&b->lock);
	b->tid = (pid_t)syscall(SYS_gettid);
	setpriority(PRIO_PROCESS, (id_t)b->tid, b->urgent ? 0 : NICE_IDLE);
	for (;;) {
		if (untrimmed && (b->stop || !b->todo)) {
			/* The batch is done: the store trimmed once, not after each table. */
			pthread_mutex_unlock(&b->lock);
			unwind_store__trim(untrimmed);
			free(untrimmed);
			untrimmed = NULL;
			pthread_mutex_lock(&b->lock);
		}
		while (!b->stop && !b->todo)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stop)
			break;
		j = b->todo;
		b->todo = j->next;
		if (!b->todo)
			b->todo_tail = &b->todo;
		j->next = NULL;
		b->cur = j;
		b->cur_since = mono_now_ns();
		pthread_mutex_unlock(&b->lock);
		j->err = unwind_store__table_untrimmed(j->store, j->open_path, j->root, &j->t,
						       &j->how, j->why, sizeof(j->why), &wrote);
		if (wrote && !untrimmed)
			untrimmed = strdup(j->store); /* no memory: trimmed now instead */
		if (wrote && !untrimmed)
			unwind_store__trim(j->store);
		pthread_mutex_lock(&b->lock);
		b->cur = NULL;
		*b->done_tail = j;
		b->done_tail = &j->next;
		pthread_cond_broadcast(&b->done_cond);
	}
	pthread_mutex_unlock(&b->lock);
	destroy(b);
	return NULL;
}

struct unwind_builder *unwind_builder__new(void)
{
	struct unwind_builder *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;

	if (!b)
		return NULL;
	b->todo_tail = &b->todo;
	b->done_tail = &b->done;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->done_cond, &ca);
	pthread_condattr_destroy(&ca);
	/* Signals stay the main thread's (Ctrl-C, -d's alarm, SIGUSR1's flush). */
	if (abandonable__thread(run, b)) {
		destroy(b);
		return NULL;
	}
	return b;
}

static char *dup_or_null(const char *s, int *bad)
{
	char *d = s ? strdup(s) : NULL;

	*bad |= s && !d;
	return d;
}

int unwind_builder__queue(struct unwind_builder *b, __u64 dev, __u64 ino, const char *open_path,
			  const char *root, const char *shown, const char *store)
{
	struct unwind_build_job *j = calloc(1, sizeof(*j));
	int bad = !j;

	if (j) {
		j->dev = dev;
		j->ino = ino;
		j->open_path = dup_or_null(open_path, &bad);
		j->root = dup_or_null(root, &bad);
		j->shown = dup_or_null(shown, &bad);
		j->store = dup_or_null(store, &bad);
	}
	if (bad) {
		unwind_build_job__free(j);
		return -ENOMEM;
	}
	pthread_mutex_lock(&b->lock);
	*b->todo_tail = j;
	b->todo_tail = &j->next;
	b->pending++;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return 0;
}

struct unwind_build_job *unwind_builder__done(struct unwind_builder *b)
{
	struct unwind_build_job *j;

	pthread_mutex_lock(&b->lock);
	j = b->done;
	if (j) {
		b->done = j->next;
		if (!b->done)
			b->done_tail = &b->done;
		j->next = NULL;
		b->pending--;
	}
	pthread_mutex_unlock(&b->lock);
	return j;
}

int unwind_builder__wait(struct unwind_builder *b, __u64 deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000ull),
			       (long)(deadline % 1000000000ull) };
	int done;

	pthread_mutex_lock(&b->lock);
	while (!b->done && mono_now_ns() < deadline)
		if (pthread_cond_timedwait(&b->done_cond, &b->lock, &ts) == ETIMEDOUT)
			break;
	done = b->done != NULL;
	pthread_mutex_unlock(&b->lock);
	return done;
}

void unwind_builder__urgent(struct unwind_builder *b, int urgent)
{
	pthread_mutex_lock(&b->lock);
	b->urgent = urgent;
	/* Raising it back needs CAP_SYS_NICE, which the recorder keeps; without, it stays. */
	if (b->tid)
		setpriority(PRIO_PROCESS, (id_t)b->tid, urgent ? 0 : NICE_IDLE);
	pthread_mutex_unlock(&b->lock);
}

__u32 unwind_builder__pending(struct unwind_builder *b)
{
	__u32 n;

	pthread_mutex_lock(&b->lock);
	n = b->pending;
	pthread_mutex_unlock(&b->lock);
	return n;
}

__u64 unwind_builder__busy(struct unwind_builder *b, __u64 now, __u64 *dev, __u64 *ino,
			   const char **shown)
{
	__u64 ns = 0;

	pthread_mutex_lock(&b->lock);
	if (b->cur) {
		ns = now > b->cur_since ? now - b->cur_since : 1;
		*dev = b->cur->dev;
		*ino = b->cur->ino;
		*shown = b->cur->shown;
	}
	pthread_mutex_unlock(&b->lock);
	return ns;
}

struct unwind_builder *unwind_builder__replace(struct unwind_builder *b)
{
	struct unwind_builder *nb = unwind_builder__new();

	if (!nb)
		return NULL;
	pthread_mutex_lock(&b->lock);
	pthread_mutex_lock(&nb->lock);
	nb->todo = b->todo;
	nb->todo_tail = b->todo ? b->todo_tail : &nb->todo;
	nb->done = b->done;
	nb->done_tail = b->done ? b->done_tail : &nb->done;
	nb->pending = b->pending - !!b->cur;
	b->todo = b->done = NULL;
	b->todo_tail = &b->todo;
	b->done_tail = &b->done;
	pthread_cond_signal(&nb->cond);
	pthread_mutex_unlock(&nb->lock);
	b->stop = 1;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return nb;
}

void unwind_builder__free(struct unwind_builder *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	b->stop = 1;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}
