/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpfsight report's page: one self-contained HTML file (inline CSS, SVG and the flame graphs'
 * script, no font, no link that loads anything) that any browser opens offline. Its size is bounded
 * whatever the trace: each timeline is drawn with at most REPORT_COLUMNS points per series
 * and REPORT_SERIES series, each stats report shows its top REPORT_ROWS rows, and the page
 * says so.
 */
#ifndef BPFSIGHT_REPORT_HTML_H
#define BPFSIGHT_REPORT_HTML_H

#include <stdio.h>

#define REPORT_ROWS 20 /* rows per stats report (the timelines' bounds: page.h) */

struct stats;

struct report_input {
	const char *path;	   /* the trace, as the user named it */
	const char *version;	   /* bpfsight's */
	const char *info_text;	   /* `bpfsight info FILE`'s output */
	const struct stats *stats; /* every report of the recorded families */
};

/*
 * Walk PATH once for the timelines (the families' page plug-ins: page.h; the steps and
 * ranges, the threads' lanes, losses) and write the page to OUT: the verdict, the headline
 * figures, info folded (page_summary.h, page_info.h), the timelines on one axis (page_axis.h,
 * page_zoom.h), a part per family. Returns the walk's exit
 * status (EXIT_READ_OK, EXIT_READ_CORRUPT) or EXIT_READ_FAIL after a message on stderr.
 */
int report_html__write(const struct report_input *in, FILE *out);

struct verdict;
struct table;

/* A page of a ClickHouse server's answers (report --from): no walk, the events stay there. */
struct report_from_input {
	const char *from;		   /* the server's URL */
	const char *version;		   /* bpfsight's */
	const struct verdict *verdict;	   /* judged from the server's answers (stats --from's) */
	const struct table *const *tables; /* the reports computed there */
	int ntables;
	const char *warning; /* the events lost while recording, a sentence; NULL: none */
};

/* The verdict, then each report's first REPORT_ROWS rows, to OUT: 0, or -EIO. */
int report_html__write_from(const struct report_from_input *in, FILE *out);

#endif /* BPFSIGHT_REPORT_HTML_H */
