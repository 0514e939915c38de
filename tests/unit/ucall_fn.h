/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* For the unit tests that build a uprobe-API family's call records (bs_ucall) by hand. */
#ifndef BPFSIGHT_TEST_UCALL_FN_H
#define BPFSIGHT_TEST_UCALL_FN_H

#include <string.h>
#include "ucall_api.h"
#include "unit.h"

/* The index of function NAME in table T (bs_ucall.fn); a failure of the case when T has none. */
static inline __u32 ucall_fn(const struct ucall_table *t, const char *name)
{
	for (__u32 i = 0; i < t->napis; i++)
		if (!strcmp(t->apis[i].name, name))
			return i;
	unit_fail("%s is not in %s's table", name, t->family);
	return 0;
}

#endif /* BPFSIGHT_TEST_UCALL_FN_H */
