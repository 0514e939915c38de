// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The join sites held after an attach (join_holds.h). Few at a time: a plain array. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "join_holds.h"

struct hold {
	struct uprobe_links links; /* attached while held */
	const void *file;
	pid_t pid;
	int held, tries;
	__u64 until; /* held: let go then; else: taken again then */
};

struct join_holds {
	join_attach_fn attach;
	void *arg;
	struct hold *v;
	size_t n, cap;
};

struct join_holds *join_holds__new(join_attach_fn attach, void *arg)
{
	struct join_holds *h = calloc(1, sizeof(*h));

	if (h) {
		h->attach = attach;
		h->arg = arg;
	}
	return h;
}

static void drop(struct join_holds *h, size_t i)
{
	uprobe_links__detach(&h->v[i].links);
	h->v[i] = h->v[--h->n];
}

/* Hold I taken (again) at NOW; dropped when that fails. */
static void take(struct join_holds *h, size_t i, __u64 now)
{
	struct hold *o = &h->v[i];

	if (h->attach(h->arg, o->file, o->pid, &o->links)) {
		drop(h, i);
		return;
	}
	o->held = 1;
	o->tries++;
	o->until = now + JOIN_ACK_NS;
}

int join_holds__take(struct join_holds *h, const void *file, pid_t pid, __u64 now)
{
	size_t n;

	if (!h)
		return -EINVAL;
	if (array__grow((void **)&h->v, h->n, &h->cap, sizeof(*h->v)))
		return -ENOMEM;
	h->v[h->n++] = (struct hold){ .links = { .fd = -1 }, .file = file, .pid = pid };
	n = h->n;
	take(h, n - 1, now);
	return h->n == n ? 0 : -EIO;
}

void join_holds__answered(struct join_holds *h, pid_t pid)
{
	for (size_t i = 0; h && i < h->n;) {
		if (h->v[i].pid == pid && pid)
			drop(h, i);
		else
			i++;
	}
}

void join_holds__poll(struct join_holds *h, __u64 now)
{
	for (size_t i = 0; h && i < h->n;) {
		struct hold *o = &h->v[i];
		size_t n = h->n;

		if (o->until > now) {
			i++;
			continue;
		}
		if (!o->held) {
			take(h, i, now);
		} else if (!o->pid || o->tries >= JOIN_TRIES) {
			drop(h, i);
		} else { /* unanswered: its rise was hidden; let go, and try again after a gap */
			uprobe_links__detach(&o->links);
			o->held = 0;
			o->until = now + JOIN_GAP_NS;
		}
		if (h->n == n) /* else I holds the last one now */
			i++;
	}
}

void join_holds__free(struct join_holds *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		uprobe_links__detach(&h->v[i].links);
	free(h->v);
	free(h);
}
