// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Run by the build before bpfsight is linked: compile every argument spec of every uprobe
 * family's API table (ucall_spec.h) and run the family's own checks, so that a malformed
 * spec fails `make` with its function's name, never a recording or a decoder.
 */
#include <stdio.h>
#include "cuda.h"
#include "nccl.h"

static const struct ucall_table *const tables[] = { &cuda_table, &nccl_table };

int main(void)
{
	char err[256];
	int bad = 0;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (!ucall_table__check(tables[i], err, sizeof(err)))
			continue;
		fprintf(stderr, "%s API table: %s\n", tables[i]->family, err);
		bad = 1;
	}
	return bad;
}
