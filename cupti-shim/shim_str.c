// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * String interning: every name the shim records (NVTX messages by content, domains,
 * registered strings, thread and category names, kernel and API names) gets an id from 1,
 * stable for the process's life. Records carry ids; the text travels once per session in a
 * STRING record.
 *
 * Lookups are lock-free (entries are immutable once published and never removed), so
 * threads recording the same message do not contend; only a new string takes the lock.
 *
 * Ordering across threads: a string used for the first time in a session is appended to
 * the pending-strings batch, and only then marked sent (both under the send lock). A thread
 * that finds it marked therefore knows the STRING record is queued or already sent, and
 * every batch is sent after the pending strings (shim_buf.c): a STRING precedes its users.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

#define BUCKETS	  16384
#define MAX_COUNT (1u << 20)
#define MAX_BYTES (64u << 20)

struct shim_str {
	struct shim_str *next; /* bucket chain */
	uint64_t hash;
	_Atomic uint32_t sent; /* the last session its STRING record went to */
	uint32_t id;
	uint32_t len;
	char text[];
};

static _Atomic(struct shim_str *) buckets[BUCKETS];
pthread_mutex_t shim_str_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t count;
static size_t bytes;
/* What a record is named once the table is full: the loss shows in the trace. */
static const char full_text[] = "[bpfsight-shim: string table full]";
static struct shim_str *full;

static uint64_t hash_of(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static struct shim_str *find(struct shim_str *e, uint64_t h, const char *text, size_t len)
{
	for (; e; e = e->next)
		if (e->hash == h && e->len == len && !memcmp(e->text, text, len))
			return e;
	return NULL;
}

/* A new entry (shim_str_lock held); NULL when out of memory. */
static struct shim_str *add(uint64_t h, const char *text, size_t len)
{
	struct shim_str *e = malloc(sizeof(*e) + len + 1);

	if (!e)
		return NULL;
	e->hash = h;
	atomic_init(&e->sent, 0);
	e->id = ++count;
	e->len = (uint32_t)len;
	memcpy(e->text, text, len);
	e->text[len] = '\0';
	bytes += len;
	return e;
}

static struct shim_str *table_full(void)
{
	if (!full)
		full = add(hash_of(full_text, sizeof(full_text) - 1), full_text,
			   sizeof(full_text) - 1);
	return full;
}

struct shim_str *shim_str__intern(const char *text, size_t len)
{
	struct shim_str *e, *head;
	_Atomic(struct shim_str *) *b;
	uint64_t h;

	if (len > SHIM_STR_MAX_LEN)
		len = SHIM_STR_MAX_LEN;
	h = hash_of(text, len);
	b = &buckets[h % BUCKETS];
	e = find(atomic_load_explicit(b, memory_order_acquire), h, text, len);
	if (e)
		return e;

	pthread_mutex_lock(&shim_str_lock);
	head = atomic_load_explicit(b, memory_order_relaxed);
	e = find(head, h, text, len);
	if (!e) {
		e = count < MAX_COUNT && bytes + len <= MAX_BYTES ? add(h, text, len) : NULL;
		if (e) {
			e->next = head;
			atomic_store_explicit(b, e, memory_order_release);
		} else {
			e = table_full();
		}
	}
	pthread_mutex_unlock(&shim_str_lock);
	return e;
}

struct shim_str *shim_str__intern_c(const char *text)
{
	return text ? shim_str__intern(text, strnlen(text, SHIM_STR_MAX_LEN)) : NULL;
}

/* wchar_t is UTF-32 on Linux; NVTX's W functions take it. Invalid code points become U+FFFD. */
struct shim_str *shim_str__intern_wide(const wchar_t *w)
{
	char buf[SHIM_STR_MAX_LEN + 4];
	size_t n = 0;

	if (!w)
		return NULL;
	for (; *w && n < SHIM_STR_MAX_LEN; w++) {
		uint32_t c = (uint32_t)*w;

		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		if (c < 0x80) {
			buf[n++] = (char)c;
		} else if (c < 0x800) {
			buf[n++] = (char)(0xc0 | c >> 6);
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[n++] = (char)(0xe0 | c >> 12);
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[n++] = (char)(0xf0 | c >> 18);
			buf[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	return shim_str__intern(buf, n);
}

/* S's STRING record queued for SESSION (the send lock held); false when that session is over. */
static bool put_string(struct shim_str *s, uint32_t session, uint32_t tid, uint64_t now)
{
	uint32_t size = (uint32_t)(sizeof(struct bs_string) + ((s->len + 7) & ~7u));
	struct bs_string *rec = shim_buf__reserve_string(session, size);

	if (!rec)
		return false;
	shim_hdr(&rec->h, BS_REC_STRING, (uint16_t)size, tid, now);
	rec->id = s->id;
	rec->len = s->len;
	memset(rec + 1, 0, size - sizeof(*rec));
	memcpy(rec + 1, s->text, s->len);
	atomic_store_explicit(&s->sent, session, memory_order_release);
	return true;
}

uint32_t shim_str__use(struct shim_str *s, uint32_t session, uint32_t tid)
{
	if (!s)
		return 0;
	if (atomic_load_explicit(&s->sent, memory_order_acquire) == session)
		return s->id;
	shim_buf__send_lock();
	if (atomic_load_explicit(&s->sent, memory_order_relaxed) != session)
		put_string(s, session, tid, shim_now());
	shim_buf__send_unlock();
	return s->id;
}

/*
 * Entries are published at a bucket's head and never removed, so a walk sees every string
 * interned before it began; one interned meanwhile is sent by its first use, as ever.
 */
uint32_t shim_str__resend_all(uint32_t session, uint32_t tid)
{
	uint64_t now = shim_now();
	uint32_t n = 0;

	shim_buf__send_lock();
	for (size_t b = 0; b < BUCKETS; b++)
		for (struct shim_str *e = atomic_load_explicit(&buckets[b], memory_order_acquire);
		     e; e = e->next) {
			if (!put_string(e, session, tid, now))
				goto out;
			n++;
		}
out:
	shim_buf__send_unlock();
	return n;
}
