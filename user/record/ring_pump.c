// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ring buffer's pump (ring_pump.h). The queue is a list of blocks: whoever reads the ring
 * (rlock) appends each record (a size word and its bytes) at the tail block's `wpos` and
 * publishes it as `used` every so many records (qlock); the queue's reader takes what `used`
 * said when it last held qlock, so it reads without a lock while the ring's reader writes past
 * it, and neither waits on the other for more than a moment: a starved thread holding a lock
 * the recording thread needs would stall the stop. A read block goes back to a small free
 * list (glibc maps blocks this big and unmaps them on free).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "records.h"
#include "ring_pump.h"

#define BLOCK_BYTES  (1u << 20)
#define FREE_KEEP    4
#define PUMP_WAIT_MS 20 /* as the recorder's own drain period: BPF wakes the ring rarely */
/*
 * The pump's priority (root only; else it stays as it was). It only copies records, but the
 * ring fills while it waits for a core, and on a machine busy with other work a thread of
 * nice 0 waits its turn behind all of them: the records are lost then, however empty the
 * queue is. The copy is a small part of the recorder's work, so it takes little from others.
 */
#define PUMP_NICE -10
/* A pass of the ring holds rlock this long at most, publishing as it goes. */
#define PASS_RECORDS  4096
#define PUBLISH_EVERY 256 /* a power of two */

struct block {
	struct block *next;
	size_t cap;
	size_t used; /* published: what the reader may read (under qlock) */
	size_t wpos; /* the ring's reader writes here (under rlock) */
	size_t off;  /* the queue's reader, alone */
	char data[];
};

/* A record in a block: its size, then its bytes, the whole rounded up to 8. */
struct rec_size {
	__u64 size;
};
#define REC_SPACE(n) (sizeof(struct rec_size) + (((n) + 7) & ~(size_t)7))

struct ring_pump {
	/*
	 * qlock: the list, `used`, the counts, the free list; held briefly. rlock: one reader
	 * of the ring at a time (the pump's thread, or the queue's reader finding it empty);
	 * held for a pass of at most PASS_RECORDS records.
	 */
	pthread_mutex_t qlock, rlock;
	pthread_cond_t ready; /* records published: the queue's reader may wait on it */
	pthread_cond_t space; /* the queue's reader freed room: the pump waits at the bound */
	struct ring_buffer *rb;
	struct block *head, *tail, *free_list;
	int nfree, quit, thread_started, reading;
	pid_t tid;
	size_t queued, peak, max;
	size_t held, held_peak; /* bytes of blocks allocated (queue and free list), and the most */
	size_t taken;		/* read since the queue's reader last held qlock (its own) */
	size_t pass_bytes;	/* written by this pass, not yet published (under rlock) */
	long pass_records;	/* under rlock */
	__u64 records;		/* under qlock */
	__u64 dropped[RING_PUMP_BLOCKS]; /* by record-type block (records.h), under qlock */
	ring_pump_fn fn;
	void *arg;
	pthread_t thread;
};

/* Under qlock. */
static struct block *block_get(struct ring_pump *p, size_t need)
{
	struct block *b = p->free_list;

	if (b && need <= b->cap) {
		p->free_list = b->next;
		p->nfree--;
	} else {
		size_t cap = need > BLOCK_BYTES ? need : BLOCK_BYTES;

		if (!(b = malloc(sizeof(*b) + cap)))
			return NULL;
		b->cap = cap;
		p->held += cap;
		if (p->held > p->held_peak)
			p->held_peak = p->held;
	}
	b->next = NULL;
	b->used = b->wpos = b->off = 0;
	return b;
}

/* Under qlock. */
static void block_put(struct ring_pump *p, struct block *b)
{
	if (b->cap == BLOCK_BYTES && p->nfree < FREE_KEEP) {
		b->next = p->free_list;
		p->free_list = b;
		p->nfree++;
	} else {
		p->held -= b->cap;
		free(b);
	}
}

/* Under rlock: what this pass wrote becomes the reader's. */
static void publish(struct ring_pump *p)
{
	if (!p->pass_bytes)
		return;
	pthread_mutex_lock(&p->qlock);
	p->tail->used = p->tail->wpos;
	p->queued += p->pass_bytes;
	if (p->queued > p->peak)
		p->peak = p->queued;
	p->pass_bytes = 0;
	pthread_cond_signal(&p->ready);
	pthread_mutex_unlock(&p->qlock);
}

/* Under rlock: a tail block with room for NEED bytes, or NULL. */
static struct block *room(struct ring_pump *p, size_t need)
{
	struct block *t = p->tail, *b;

	if (t && t->wpos + need <= t->cap)
		return t;
	publish(p);
	pthread_mutex_lock(&p->qlock);
	b = block_get(p, need);
	if (b) {
		if (t)
			t->next = b;
		else
			p->head = b;
		p->tail = b;
	}
	pthread_mutex_unlock(&p->qlock);
	return b;
}

/* libbpf's callback, under rlock: one record into the tail block. */
static int copy_record(void *arg, void *data, size_t size)
{
	struct ring_pump *p = arg;
	size_t need = REC_SPACE(size);
	struct block *t = room(p, need);
	struct rec_size *r;

	if (!t) { /* taken from the ring and not kept: counted, never silent */
		const struct bs_hdr *h = data;

		pthread_mutex_lock(&p->qlock);
		p->dropped[size >= sizeof(*h) && h->type < BS_REC_TYPE_MAX ? h->type >> 4 : 0]++;
		pthread_mutex_unlock(&p->qlock);
		return -ENOMEM;
	}
	r = (struct rec_size *)(t->data + t->wpos);
	r->size = size;
	memcpy(r + 1, data, size);
	t->wpos += need;
	p->pass_bytes += need;
	if (!(++p->pass_records & (PUBLISH_EVERY - 1)))
		publish(p);
	/* A pass ends at its length or at the bound; there the ring keeps the rest. */
	return p->pass_records >= PASS_RECORDS ||
			       __atomic_load_n(&p->queued, __ATOMIC_RELAXED) + p->pass_bytes >=
				       p->max
		       ? -EAGAIN
		       : 0;
}

/* Move what the ring holds into the queue (a pass at most); returns records moved. */
static long pump_pass(struct ring_pump *p)
{
	long n;

	pthread_mutex_lock(&p->rlock);
	p->pass_records = 0;
	ring_buffer__consume(p->rb);
	publish(p);
	n = p->pass_records;
	pthread_mutex_unlock(&p->rlock);
	if (n) {
		pthread_mutex_lock(&p->qlock);
		p->records += n;
		pthread_mutex_unlock(&p->qlock);
	}
	return n;
}

/* Under qlock: what the reader took leaves the count, and its read blocks go. */
static void settle(struct ring_pump *p)
{
	struct block *b;

	if (p->taken) {
		p->queued -= p->taken;
		p->taken = 0;
		pthread_cond_signal(&p->space);
	}
	while ((b = p->head) && b != p->tail && b->off == b->used) {
		p->head = b->next;
		block_put(p, b);
	}
}

static void deadline(struct timespec *t, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static void *pump_main(void *arg)
{
	struct ring_pump *p = arg;
	int epfd = ring_buffer__epoll_fd(p->rb);
	struct epoll_event ev;
	struct timespec until;

	p->tid = gettid();
	setpriority(PRIO_PROCESS, 0, PUMP_NICE);
	pthread_mutex_lock(&p->qlock);
	while (!p->quit) {
		if (p->queued >= p->max) {
			deadline(&until, PUMP_WAIT_MS);
			pthread_cond_timedwait(&p->space, &p->qlock, &until);
			continue;
		}
		pthread_mutex_unlock(&p->qlock);
		epoll_wait(epfd, &ev, 1, PUMP_WAIT_MS);
		pump_pass(p);
		pthread_mutex_lock(&p->qlock);
	}
	pthread_mutex_unlock(&p->qlock);
	return NULL;
}

struct ring_pump *ring_pump__new(int ring_fd, size_t max_queued, ring_pump_fn fn, void *arg)
{
	struct ring_pump *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	if (!p)
		return NULL;
	p->max = max_queued;
	p->fn = fn;
	p->arg = arg;
	pthread_mutex_init(&p->qlock, NULL);
	pthread_mutex_init(&p->rlock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->ready, &ca);
	pthread_cond_init(&p->space, &ca);
	pthread_condattr_destroy(&ca);
	p->rb = ring_buffer__new(ring_fd, copy_record, p, NULL);
	if (!p->rb) {
		err = errno;
		ring_pump__free(p);
		errno = err;
		return NULL;
	}
	/* Signals are the recording's business: this thread takes none. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&p->thread, NULL, pump_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		ring_pump__free(p);
		errno = err;
		return NULL;
	}
	p->thread_started = 1;
	return p;
}

long ring_pump__read(struct ring_pump *p, int timeout_ms, long max)
{
	struct timespec until;
	long n = 0;
	int stop = 0, waited = 0;

	if (p->reading)
		return 0; /* from inside a record's handler: the outer read goes on */
	deadline(&until, timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&p->qlock);
	p->reading = 1;
	for (;;) {
		struct block *b;
		size_t avail;

		settle(p);
		if (stop || n >= max)
			break;
		b = p->head;
		avail = b ? b->used : 0;
		if (!b || b->off == avail) {
			long moved;

			/*
			 * The ring itself. Nothing there, and nothing the pump's thread published
			 * while this pass waited for its own to end, means both are empty.
			 */
			pthread_mutex_unlock(&p->qlock);
			moved = pump_pass(p);
			pthread_mutex_lock(&p->qlock);
			settle(p);
			if (moved || (p->head && p->head->off != p->head->used))
				continue;
			if (n || timeout_ms <= 0 || waited)
				break;
			waited = pthread_cond_timedwait(&p->ready, &p->qlock, &until) == ETIMEDOUT;
			continue;
		}
		pthread_mutex_unlock(&p->qlock);
		while (b->off < avail && n < max && !stop) {
			struct rec_size *r = (struct rec_size *)(b->data + b->off);

			b->off += REC_SPACE(r->size);
			p->taken += REC_SPACE(r->size);
			n++;
			stop = p->fn(p->arg, r + 1, r->size);
		}
		pthread_mutex_lock(&p->qlock);
	}
	p->reading = 0;
	pthread_mutex_unlock(&p->qlock);
	return n;
}

pid_t ring_pump__tid(struct ring_pump *p)
{
	return p ? __atomic_load_n(&p->tid, __ATOMIC_RELAXED) : 0;
}

size_t ring_pump__held_peak(struct ring_pump *p)
{
	size_t n;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->qlock);
	n = p->held_peak;
	pthread_mutex_unlock(&p->qlock);
	return n;
}

size_t ring_pump__queued(struct ring_pump *p, size_t *peak)
{
	size_t q;

	pthread_mutex_lock(&p->qlock);
	q = p->queued;
	if (peak)
		*peak = p->peak;
	pthread_mutex_unlock(&p->qlock);
	return q;
}

void ring_pump__take_dropped(struct ring_pump *p, __u64 by_block[RING_PUMP_BLOCKS])
{
	pthread_mutex_lock(&p->qlock);
	for (int i = 0; i < RING_PUMP_BLOCKS; i++) {
		by_block[i] += p->dropped[i];
		p->dropped[i] = 0;
	}
	pthread_mutex_unlock(&p->qlock);
}

void ring_pump__free(struct ring_pump *p)
{
	struct block *b, *next;

	if (!p)
		return;
	if (p->thread_started) {
		pthread_mutex_lock(&p->qlock);
		p->quit = 1;
		pthread_cond_signal(&p->space);
		pthread_mutex_unlock(&p->qlock);
		pthread_join(p->thread, NULL);
	}
	ring_buffer__free(p->rb);
	for (b = p->head; b; b = next) {
		next = b->next;
		free(b);
	}
	for (b = p->free_list; b; b = next) {
		next = b->next;
		free(b);
	}
	pthread_cond_destroy(&p->ready);
	pthread_cond_destroy(&p->space);
	pthread_mutex_destroy(&p->qlock);
	pthread_mutex_destroy(&p->rlock);
	free(p);
}
