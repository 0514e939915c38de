/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report page's threads: a lane per busy thread on the page's time axis, each showing what
 * the families said the thread did (on a CPU, waiting for the GIL, in CUDA calls, in system
 * calls, in torch ops: page__lane_kind, page__lane), the PAGE_LANES busiest (by the time
 * summed over the kinds that say it was busy), named. Spans closer than LANE_QUANTUM_NS are kept
 * as one, and when a thread's kind holds LANE_RUNS_MAX runs, those closer than twice that are
 * merged (and so on): at most LANE_RUNS_MAX runs of 16 bytes per thread and kind, whatever the
 * number of records.
 */
#ifndef BPFSIGHT_PAGE_LANES_H
#define BPFSIGHT_PAGE_LANES_H

#include <stdio.h>

#define PAGE_LANES	8	 /* threads drawn */
#define PAGE_LANE_KINDS 8	 /* kinds of span */
#define LANE_QUANTUM_NS 20000ull /* spans closer than this are one, */
#define LANE_RUNS_MAX	16384	 /* twice that when a thread's kind has this many runs */
#define LANE_COLUMNS	3000	 /* drawn: the recording in this many columns at most */

struct page;
struct page_lanes;
struct trace_model;

struct page_lanes *page_lanes__new(void);
void page_lanes__free(struct page_lanes *l);
/* The busiest threads, named while the trace's model is here. */
void page_lanes__named(struct page_lanes *l, const struct trace_model *m);
/* <figure id="tl-threads">: a lane per busy thread on the page's axis. */
void page_lanes__draw(const struct page *p, struct page_lanes *l, FILE *f);

#endif /* BPFSIGHT_PAGE_LANES_H */
