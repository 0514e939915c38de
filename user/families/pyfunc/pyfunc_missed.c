// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The entries never found, said once each as the recording ends (pyfunc.h): each process's
 * shim says at its drain which entries it never found and why (a STATUS whose cupti_result is
 * BS_PYFUNC_NEVER_FOUND); a launcher's ranks, a DataLoader's spawned workers or a helper
 * process (`python -c ...`) each say the same. So they are gathered, one line per function:
 * the why of the first process that said it, how many others did, and nothing for a function
 * whose calls some process of the recording did record (its helpers lacking it is no news).
 * The file keeps every process's (pyfunc_not_found).
 */
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "hmap.h"
#include "msg.h"
#include "pyfunc.h"

struct missed_fn {
	char *function, *why;
	__u32 pid, others;
};

struct pyfunc_missed {
	struct hmap *ids;    /* func_id of a call seen -> int */
	struct hmap *called; /* hash of a function's name with calls -> int */
	struct missed_fn *v;
	size_t n, cap;
};

static __u64 name_hash(const char *s)
{
	__u64 h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

struct pyfunc_missed *pyfunc_missed__new(void)
{
	struct pyfunc_missed *m = calloc(1, sizeof(*m));

	if (m && (!(m->ids = hmap__new(sizeof(int))) || !(m->called = hmap__new(sizeof(int))))) {
		pyfunc_missed__free(m);
		return NULL;
	}
	return m;
}

void pyfunc_missed__free(struct pyfunc_missed *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].function);
		free(m->v[i].why);
	}
	free(m->v);
	hmap__free(m->ids);
	hmap__free(m->called);
	free(m);
}

void pyfunc_missed__call(struct pyfunc_missed *m, __u32 func_id, const char *name)
{
	int *seen = hmap__get(m->ids, (struct hkey){ func_id, 0 }, 1), *called;

	if (!seen || *seen)
		return;
	*seen = 1;
	called = hmap__get(m->called, (struct hkey){ name_hash(name), 0 }, 1);
	if (called)
		*called = 1;
}

void pyfunc_missed__status(struct pyfunc_missed *m, __u32 pid, const char *text)
{
	char *function, *why;
	size_t i;

	if (pyfunc_never_found__split(text, &function, &why))
		return;
	for (i = 0; i < m->n && strcmp(m->v[i].function, function); i++)
		;
	if (i < m->n) {
		m->v[i].others += m->v[i].pid != pid;
		free(function);
		free(why);
		return;
	}
	if (array__grow((void **)&m->v, m->n, &m->cap, sizeof(*m->v))) {
		free(function);
		free(why);
		return;
	}
	m->v[m->n++] = (struct missed_fn){ function, why, pid, 0 };
}

void pyfunc_missed__say(const struct pyfunc_missed *m)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct missed_fn *f = &m->v[i];

		if (hmap__get(m->called, (struct hkey){ name_hash(f->function), 0 }, 0))
			continue;
		if (f->others)
			pr_warn("never found: %s: %s (pid %u and %u other process%s)\n",
				f->function, f->why, f->pid, f->others, f->others == 1 ? "" : "es");
		else
			pr_warn("never found: %s: %s (pid %u)\n", f->function, f->why, f->pid);
	}
}
