// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A ledger given whole (ledger.h): what the pass that rendered a file's rows found, read back
 * from a server (stats --from). The critical unit and its entries are that pass's, by the same
 * C; nothing is built here, so the verdict's lines (verdict_ledger.c) word the same entries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "ledger_int.h"

/* L is given: built, with a timeline, its unit chosen (ledger__build leaves it as it is). */
static void given(struct ledger *l)
{
	l->timeline = 1;
	l->built = 2;
	l->finished = 1;
}

int ledger__give_unit(struct ledger *l, const struct ledger_unit *u, const struct ledger_entry *e,
		      size_t n)
{
	struct ledger_entry *c = n ? calloc(n, sizeof(*c)) : NULL;

	if (n && !c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c[i] = e[i];
		c[i].what = ledger__intern(l, e[i].what ? e[i].what : "");
		c[i].where = ledger__intern(l, e[i].where ? e[i].where : "");
		c[i].waker_where = ledger__intern(l, e[i].waker_where ? e[i].waker_where : "");
		if (!c[i].what || !c[i].where || !c[i].waker_where) {
			free(c);
			return -ENOMEM;
		}
	}
	free(l->unit_e);
	l->unit_e = c;
	l->unit_ne = n;
	l->unit = *u;
	l->has_unit = 1;
	given(l);
	return 0;
}

int ledger__give_time_in(struct ledger *l, __u32 pid, __u32 tid, enum ledger_kind kind, __u64 ns)
{
	struct lthread *t = ledger__thr(l, pid, tid, 1);
	size_t cap = t ? t->ne : 0;

	if (!t || array__grow((void **)&t->e, t->ne, &cap, sizeof(*t->e)))
		return -ENOMEM;
	t->e[t->ne++] = (struct ledger_entry){ .kind = kind, .ns = ns, .what = "", .where = "" };
	given(l);
	return 0;
}
