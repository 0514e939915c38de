/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The report page's bar of the verdict's ledger: where the critical unit's time went. */
#ifndef BPFSIGHT_PAGE_LEDGER_H
#define BPFSIGHT_PAGE_LEDGER_H

#include <stdio.h>

struct verdict;

/* The critical unit's ledger as one bar and its keys (nothing without a ledger). */
void page_ledger__bar(FILE *f, const struct verdict *v);

#endif /* BPFSIGHT_PAGE_LEDGER_H */
