// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Itanium C++ demangling with a budget (see elf_syms.h for the contract).
 *
 * The names come from traced processes (their symbols, the kernel names their shim sends), so
 * they are hostile input to a root process: substitutions let each level of a name repeat the
 * whole of the level before it, and a 215-byte name of 30 levels demangles to ~30 GB.
 * __cxa_demangle builds its output in one growing heap string; libstdc++'s callback form
 * (the one its verbose terminate handler uses) hands the output over in pieces of at most 256
 * bytes and keeps its own state on the stack. The callback counts the pieces and, past the
 * budget, leaves the demangler with longjmp: nothing is allocated, so nothing leaks, and the
 * work done is bounded by the output allowed.
 *
 * Results are cached: a stack sample names each of its frames, and the same few hundred
 * functions come again in every sample.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elf_syms.h"

/* Linked from libsupc++.a (the Makefile's LDLIBS): libstdc++.so does not export it. */
int __gcclibcxx_demangle_callback(const char *mangled,
				  void (*cb)(const char *text, size_t len, void *opaque),
				  void *opaque);

/* The longest input tried (real names, even of deep templates, are well under it). */
#define MAX_IN 1024
/* The most output read before giving up: 16 times the largest buffer a caller passes. */
#define MAX_OUT	    (64 << 10)
#define CACHE_SLOTS 1024
/* The longest result the cache keeps (the largest caller's buffer). */
#define CACHE_OUT 4096

struct sink {
	char *buf;
	size_t len, used, total;
	jmp_buf over;
};

struct slot {
	char *in, *out; /* OUT: the result, cut at CACHE_OUT - 1 bytes */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot cache[CACHE_SLOTS];
static unsigned long long over_budget;

static void take(const char *text, size_t len, void *opaque)
{
	struct sink *s = opaque;
	size_t room = s->len - 1 - s->used;

	s->total += len;
	if (s->total > MAX_OUT)
		longjmp(s->over, 1);
	if (len > room)
		len = room;
	memcpy(s->buf + s->used, text, len);
	s->used += len;
}

/*
 * Demangle NAME into BUF (LEN bytes, LEN > 0), cut at LEN - 1 bytes: the whole output's length,
 * or -1 when NAME is not a valid mangled name, or -2 when it is over the budget.
 */
static long run(const char *name, char *buf, size_t len)
{
	struct sink s = { .buf = buf, .len = len };

	if (strnlen(name, MAX_IN + 1) > MAX_IN)
		return -2;
	if (setjmp(s.over))
		return -2;
	if (__gcclibcxx_demangle_callback(name, take, &s))
		return -1;
	buf[s.used] = 0;
	return (long)s.total;
}

static struct slot *slot_of(const char *name)
{
	__u64 h = 14695981039346656037ull;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return &cache[h % CACHE_SLOTS];
}

static void keep(struct slot *c, const char *name, const char *out)
{
	char *in = strdup(name), *o = strdup(out);

	if (!in || !o) {
		free(in);
		free(o);
		return;
	}
	free(c->in);
	free(c->out);
	*c = (struct slot){ in, o };
}

void demangle(const char *name, char *buf, size_t len)
{
	char tmp[CACHE_OUT];
	struct slot *c;
	long n;

	if (!buf || !len)
		return;
	if (!name)
		name = "";
	/* Only "_Z..." names: the demangler would also read "i" as the type name "int". */
	if (strncmp(name, "_Z", 2)) {
		snprintf(buf, len, "%s", name);
		return;
	}
	pthread_mutex_lock(&lock);
	c = slot_of(name);
	if (c->in && !strcmp(c->in, name)) {
		snprintf(buf, len, "%s", c->out);
	} else {
		n = run(name, tmp, sizeof(tmp));
		if (n == -2)
			over_budget++;
		/* A name that is not valid, or over the budget, is shown as it is. */
		keep(c, name, n < 0 ? name : tmp);
		snprintf(buf, len, "%s", n < 0 ? name : tmp);
	}
	pthread_mutex_unlock(&lock);
}

unsigned long long demangle__over_budget(void)
{
	unsigned long long n;

	pthread_mutex_lock(&lock);
	n = over_budget;
	pthread_mutex_unlock(&lock);
	return n;
}
