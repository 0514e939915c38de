// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Lookups over the families' record sides (family_record.h). */
#include "family.h"
#include "family_record.h"

int family__ring_only(__u16 type)
{
	for_each_family(it)
		for (const __u16 *t = it.f->record->ring_only; t && *t; t++)
			if (*t == type)
				return 1;
	return 0;
}
