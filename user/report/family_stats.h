/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `stats`, `report` and the verdict take of a family: its reports, its verdict rules, its
 * part of the report page and the steps its records give. Its struct family (core/family.h)
 * points to it (.stats), or NULL when it adds nothing to them: family__stats() reads that as
 * an empty side.
 */
#ifndef BPFSIGHT_FAMILY_STATS_H
#define BPFSIGHT_FAMILY_STATS_H

#include "family.h"

struct report;	       /* report.h */
struct family_verdict; /* verdict.h */
struct page_family;    /* page.h */
struct family_steps;   /* steps.h */
struct family_ledger;  /* ledger.h */

struct family_stats {
	/* Its reports, NULL-terminated. May be NULL. */
	const struct report *const *reports;
	/* The rules of stats' verdict on its data (verdict.h): claims that cite its reports. */
	const struct family_verdict *verdict;
	/* `bpfsight report`'s page: its timelines and sections (page.h). May be NULL. */
	const struct page_family *page;
	/*
	 * The steps its records give (struct family_steps, steps.h: torch's steps, NVTX ranges
	 * of a name, ...), ending with a zeroed entry; the per-step reports ask the steps
	 * service, which chooses among every family's per process. May be NULL.
	 */
	const struct family_steps *steps;
	/*
	 * What its records tell the ledger (ledger.h): the time a thread spent in its calls or
	 * waits, its CPU samples, its timeline; and the frames that say what a stack waits in.
	 * May be NULL.
	 */
	const struct family_ledger *ledger;
};

/* F's stats side, an empty one (every member NULL) when it has none. */
static inline const struct family_stats *family__stats(const struct family *f)
{
	static const struct family_stats none;

	return f->stats ? f->stats : &none;
}

#endif /* BPFSIGHT_FAMILY_STATS_H */
