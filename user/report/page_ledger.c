// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The report page's picture of the ledger (ledger.h): the critical unit's time as one bar, a
 * segment per entry the verdict names (the time on a CPU, ready to run, each wait), with its
 * share and its text, under the verdict's headline; see page_ledger.h.
 */
#include <stdio.h>
#include "human.h"
#include "ledger.h"
#include "page.h"
#include "page_ledger.h"
#include "verdict.h"

#define BAR_ENTRIES 8	 /* segments named; the rest one "other" segment */
#define BAR_MIN	    0.01 /* of the unit's time: a smaller entry joins "other" */

/* A colour class per kind of entry: on a CPU, no CPU, the GIL, locks, the calls, I/O, sleep. */
static int colour(enum ledger_kind k)
{
	switch (k) {
	case LEDGER_CODE:
	case LEDGER_INTERP:
	case LEDGER_CPU:
		return 0;
	case LEDGER_RUNNABLE:
		return 7;
	case LEDGER_GIL:
		return 1;
	case LEDGER_LOCK:
	case LEDGER_BLOCKED:
		return 3;
	case LEDGER_COLLECTIVE:
	case LEDGER_GPU_SYNC:
	case LEDGER_API:
	case LEDGER_INPUT:
		return 2;
	case LEDGER_SYSCALL:
	case LEDGER_IO:
	case LEDGER_CHILD:
	case LEDGER_FAULT:
		return 4;
	default: /* sleep, waiting for work */
		return 5;
	}
}

void page_ledger__bar(FILE *f, const struct verdict *v)
{
	const struct ledger *l = v ? verdict__state(v, "ledger") : NULL;
	const struct ledger_entry *e;
	struct ledger_unit u;
	char text[512], d[32];
	__u64 rest = 0;
	size_t n, shown = 0;

	if (!l || !ledger__has_timeline(l) || ledger__critical(l, &u, &e, &n) || !u.total_ns)
		return;
	fprintf(f, "<div class=\"ledger\" id=\"ledger\"><p class=\"ledger-of\">Where the time of ");
	page__esc(f, u.name);
	fprintf(f,
		" (%u thread%s of pid %u, %s) went: <a href=\"#r-ledger\">-r ledger</a></p>\n"
		"<div class=\"bar\">",
		u.nthreads, u.nthreads == 1 ? "" : "s", u.pid,
		human__ns((double)u.total_ns, d, sizeof(d)));
	for (size_t i = 0; i < n; i++) {
		double share = (double)e[i].ns / (double)u.total_ns;

		if (shown == BAR_ENTRIES || share < BAR_MIN) {
			rest += e[i].ns;
			continue;
		}
		ledger__entry_text(&e[i], u.nthreads > 1, text, sizeof(text));
		fprintf(f, "<span class=\"seg b%d\" style=\"width:%.2f%%\" title=\"%.1f%%: ",
			colour(e[i].kind), 100 * share, 100 * share);
		page__esc(f, text);
		fprintf(f, "\"></span>");
		shown++;
	}
	if (rest)
		fprintf(f,
			"<span class=\"seg rest\" style=\"width:%.2f%%\" title=\"%.1f%%: the rest\">"
			"</span>",
			100.0 * (double)rest / (double)u.total_ns,
			100.0 * (double)rest / (double)u.total_ns);
	fprintf(f, "</div>\n<ul class=\"ledger-keys\">");
	shown = 0;
	for (size_t i = 0; i < n && shown < BAR_ENTRIES; i++) {
		double share = (double)e[i].ns / (double)u.total_ns;

		if (share < BAR_MIN)
			continue;
		ledger__entry_text(&e[i], u.nthreads > 1, text, sizeof(text));
		fprintf(f, "<li class=\"b%d\"><span class=\"share\">%.1f%%</span> ",
			colour(e[i].kind), 100 * share);
		page__esc(f, text);
		fprintf(f, "</li>");
		shown++;
	}
	fprintf(f, "</ul></div>\n");
}
