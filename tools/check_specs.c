// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Run by the build before bpfsight is linked: compile every argument spec of every uprobe
 * family's API table (struct family.api, ucall_spec.h) and run the family's own checks, so
 * that a malformed spec fails `make` with its function's name, never a recording or a
 * decoder. Linked with every object of the product: the registry says which tables there are.
 */
#include <stdio.h>
#include "family.h"
#include "ucall_api.h"

int main(void)
{
	char err[256];
	int bad = 0;

	for (int i = 0; families[i]; i++) {
		if (!families[i]->api || !ucall_table__check(families[i]->api, err, sizeof(err)))
			continue;
		fprintf(stderr, "%s API table: %s\n", families[i]->api->family, err);
		bad = 1;
	}
	return bad;
}
