// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Per-thread batch buffers and the bpfsight:batch probe.
 *
 * Each thread that records owns one buffer (its own lock: uncontended but for the poller's
 * timed flush) so recording never serializes threads. A batch is sent by firing
 * bpfsight:batch(buf, bytes) once per full (or timed-out) buffer, never once per record.
 *
 * All sending happens under one lock (shim_buf_send_lock) for two reasons: batch sequence numbers
 * then reach the ring in order (a gap really is a loss), and the pending-strings batch is
 * sent before any other, so a STRING record always precedes its users (shim_str.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "shim_usdt.h"

#define BATCH_HDR sizeof(struct bs_shim_batch_hdr)

struct shim_thread {
	/*
	 * The owner appends under it on every record, the poller flushes under it every 250 ms:
	 * a flag, not a mutex (two atomic operations and a call less per record: a PyTorch op's
	 * record is one). Whoever finds it taken yields: the other holds it to copy a batch.
	 */
	_Atomic bool busy;
	struct shim_thread *next;
	struct shim_thread *prev;
	uint32_t tid;
	uint32_t session; /* the session the buffered records belong to */
	uint32_t nrec;
	uint32_t len;			/* bytes of records after the batch header */
	void *nvtx;			/* shim_nvtx.c's per-thread state */
	void *module[SHIM_MAX_MODULES]; /* the modules' (shim_modules.c) */
	uint64_t data[(BATCH_HDR + BS_SHIM_BATCH_MAX) / 8];
};

pthread_mutex_t shim_buf_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_thread *threads; /* every live thread's buffer */
pthread_mutex_t shim_buf_send_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_thread strings; /* pending STRING records (shim_buf_send_lock) */
static _Atomic uint64_t seq;	   /* last batch sent */
static pthread_key_t thread_key;
static __thread struct shim_thread *self;
static int dump_fd = -1; /* BPFSIGHT_SHIM_DUMP: every batch sent, as sent */

static void thread_gone(void *arg);

void shim_buf__init(void)
{
	const char *dump = secure_getenv("BPFSIGHT_SHIM_DUMP");

	if (pthread_key_create(&thread_key, thread_gone))
		shim_log("no pthread key: thread-exit flush off");
	/*
	 * The shim runs inside other people's programs, setuid ones too: secure_getenv (no
	 * dump in a secure-execution process), never through a link, never readable by others.
	 */
	if (dump && *dump) {
		dump_fd = open(dump, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (dump_fd < 0)
			shim_log("BPFSIGHT_SHIM_DUMP %s: %s", dump, strerror(errno));
	}
}

void shim_hdr(struct bs_hdr *h, uint16_t type, uint16_t size, uint32_t tid, uint64_t ts)
{
	h->type = type;
	h->size = size;
	h->cpu = 0;
	h->pid = shim_pid;
	h->tid = tid;
	h->ts = ts;
}

static void dump_batch(const void *buf, size_t bytes)
{
	/* One write per batch: O_APPEND keeps the batches of several processes whole. */
	if (write(dump_fd, buf, bytes) != (ssize_t)bytes)
		shim_log("BPFSIGHT_SHIM_DUMP: short write");
}

/* Send T's records (shim_buf_send_lock held) if a tracer still listens to their session. */
static void fire(struct shim_thread *t)
{
	struct bs_shim_batch_hdr *h = (struct bs_shim_batch_hdr *)t->data;

	if (!t->nrec)
		return;
	if (t->session == atomic_load_explicit(&shim_session, memory_order_relaxed) &&
	    SHIM_SEM(batch)) {
		h->magic = BS_SHIM_MAGIC;
		h->version = BS_SHIM_VERSION;
		h->nrec = t->nrec;
		h->len = t->len;
		h->seq = atomic_load_explicit(&seq, memory_order_relaxed) + 1;
		atomic_store_explicit(&seq, h->seq, memory_order_relaxed);
		SHIM_PROBE_BATCH(h, BATCH_HDR + t->len);
		if (dump_fd >= 0)
			dump_batch(h, BATCH_HDR + t->len);
	}
	t->nrec = 0;
	t->len = 0;
}

void shim_thread__flush(struct shim_thread *t)
{
	if (!t->nrec)
		return;
	pthread_mutex_lock(&shim_buf_send_lock);
	fire(&strings);
	fire(t);
	pthread_mutex_unlock(&shim_buf_send_lock);
}

/* Room for SIZE bytes in T for SESSION; NULL when the session is over. */
static void *reserve(struct shim_thread *t, uint32_t session, uint32_t size, bool locked_send)
{
	void *p;

	if (!session || session != atomic_load_explicit(&shim_session, memory_order_relaxed))
		return NULL;
	if (t->session != session) {
		t->nrec = 0;
		t->len = 0;
		t->session = session;
	}
	if (t->len + size > BS_SHIM_BATCH_MAX) {
		if (locked_send)
			fire(t);
		else
			shim_thread__flush(t);
	}
	p = (char *)t->data + BATCH_HDR + t->len;
	t->len += size;
	t->nrec++;
	return p;
}

void *shim_thread__reserve(struct shim_thread *t, uint32_t session, uint32_t size)
{
	return reserve(t, session, size, false);
}

bool shim_thread__append(struct shim_thread *t, uint32_t session, const void *rec, uint32_t size)
{
	void *p = reserve(t, session, size, false);

	if (!p)
		return false;
	memcpy(p, rec, size);
	return true;
}

void *shim_buf__reserve_string(uint32_t session, uint32_t size)
{
	return reserve(&strings, session, size, true);
}

/*
 * The session begins with REC: it is published (shim_session) and REC sent, alone in its
 * batch, under the send lock. A thread that sees the session at once may fill its own buffer,
 * but it queues a string or sends a batch only through that lock, so REC goes first: a
 * tracer reads the session's strings after its ATTACH.
 */
void shim_buf__begin_session(uint32_t session, const void *rec, uint32_t size)
{
	void *p;

	pthread_mutex_lock(&shim_buf_send_lock);
	atomic_store(&shim_session, session);
	p = reserve(&strings, session, size, true);
	if (p) {
		memcpy(p, rec, size);
		fire(&strings);
	}
	pthread_mutex_unlock(&shim_buf_send_lock);
}

void shim_buf__send_lock(void)
{
	pthread_mutex_lock(&shim_buf_send_lock);
}

void shim_buf__send_unlock(void)
{
	pthread_mutex_unlock(&shim_buf_send_lock);
}

uint64_t shim_buf__seq(void)
{
	return atomic_load_explicit(&seq, memory_order_relaxed);
}

struct shim_thread *shim_thread__self(void)
{
	struct shim_thread *t = self;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t) {
		shim_core__add_dropped(1);
		return NULL;
	}
	t->tid = (uint32_t)gettid();
	pthread_mutex_lock(&shim_buf_list_lock);
	t->next = threads;
	if (threads)
		threads->prev = t;
	threads = t;
	pthread_mutex_unlock(&shim_buf_list_lock);
	/* The key's destructor sends what the thread leaves behind when it exits. */
	pthread_setspecific(thread_key, t);
	self = t;
	return t;
}

static void unlink_thread(struct shim_thread *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		threads = t->next;
	if (t->next)
		t->next->prev = t->prev;
}

/* T's module states, its thread gone. */
static void modules_gone(struct shim_thread *t)
{
	for (int i = 0; i < SHIM_MAX_MODULES && shim_modules[i]; i++) {
		if (t->module[i] && shim_modules[i]->thread_gone)
			shim_modules[i]->thread_gone(t->module[i]);
		t->module[i] = NULL;
	}
}

static void thread_gone(void *arg)
{
	struct shim_thread *t = arg;

	shim_thread__lock(t);
	shim_thread__flush(t);
	shim_nvtx__thread_gone(t->nvtx);
	t->nvtx = NULL;
	modules_gone(t);
	shim_thread__unlock(t);
	pthread_mutex_lock(&shim_buf_list_lock);
	unlink_thread(t);
	pthread_mutex_unlock(&shim_buf_list_lock);
	/* A later NVTX call on this thread (another key's destructor) starts afresh. */
	if (self == t)
		self = NULL;
	free(t);
}

bool shim_thread__self_busy(void)
{
	struct shim_thread *t = self;

	return t && atomic_load_explicit(&t->busy, memory_order_acquire);
}

void shim_thread__lock(struct shim_thread *t)
{
	while (atomic_exchange_explicit(&t->busy, true, memory_order_acquire))
		sched_yield();
}

void shim_thread__unlock(struct shim_thread *t)
{
	atomic_store_explicit(&t->busy, false, memory_order_release);
}

uint32_t shim_thread__tid(const struct shim_thread *t)
{
	return t->tid;
}

void **shim_thread__nvtx(struct shim_thread *t)
{
	return &t->nvtx;
}

void **shim_thread__module(struct shim_thread *t, int slot)
{
	return &t->module[slot];
}

void shim_buf__for_each(void (*fn)(struct shim_thread *t, void *arg), void *arg)
{
	struct shim_thread *t;

	pthread_mutex_lock(&shim_buf_list_lock);
	for (t = threads; t; t = t->next) {
		shim_thread__lock(t);
		fn(t, arg);
		shim_thread__unlock(t);
	}
	pthread_mutex_unlock(&shim_buf_list_lock);
}

static void flush_one(struct shim_thread *t, void *arg)
{
	shim_thread__flush(t);
}

void shim_buf__flush_all(void)
{
	shim_buf__for_each(flush_one, NULL)
		;
	pthread_mutex_lock(&shim_buf_send_lock);
	fire(&strings);
	pthread_mutex_unlock(&shim_buf_send_lock);
}

static void drop_one(struct shim_thread *t, void *arg)
{
	t->nrec = 0;
	t->len = 0;
}

void shim_buf__drop_all(void)
{
	shim_buf__for_each(drop_one, NULL)
		;
	pthread_mutex_lock(&shim_buf_send_lock);
	drop_one(&strings, NULL);
	pthread_mutex_unlock(&shim_buf_send_lock);
}

/*
 * In the child only the forking thread exists: the other buffers are copies nobody owns,
 * and every buffered record belongs to the parent's session.
 */
void shim_buf__atfork_child(void)
{
	struct shim_thread *t, *next;

	for (t = threads; t; t = next) {
		next = t->next;
		if (t == self)
			continue;
		unlink_thread(t);
		shim_nvtx__thread_gone(t->nvtx);
		modules_gone(t);
		free(t);
	}
	drop_one(&strings, NULL);
	atomic_store(&seq, 0); /* per process, from 1 */
	if (self) {
		atomic_store(&self->busy, false);
		self->tid = (uint32_t)gettid();
		drop_one(self, NULL);
	}
}
