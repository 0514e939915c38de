/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A family's part of `bpfsight report`'s page (report_html.c): timelines and sections drawn
 * from its records, in one walk of the trace. The page feeds every record to each family's
 * `record`, then asks for their timelines (inside the page's "Timelines", the families
 * registered last first: the GPU leads, the system's families follow), then their sections
 * (flame graphs, in registry order), then a note each for the footer. Everything a family
 * draws goes through the helpers below, so every timeline looks alike and stays bounded
 * (REPORT_COLUMNS points per series, REPORT_SERIES series).
 */
#ifndef BPFSIGHT_PAGE_H
#define BPFSIGHT_PAGE_H

#include <stdio.h>
#include "records.h"
#include "level_bins.h"
#include "time_bins.h"
#include "trace_model.h"

#define REPORT_BIN_NS  10000000ull /* timelines are summed in 10 ms bins (as the exports) */
#define REPORT_COLUMNS 600	   /* points per drawn series */
#define REPORT_SERIES  8	   /* series per timeline: the largest by total */

struct stats;
struct steps;
struct page_lanes;
struct page_bands;

/* The page being made: the recording's span, which every timeline covers. */
struct page {
	__u64 origin, end;	   /* CLOCK_MONOTONIC ns */
	const struct stats *stats; /* every report's table (stats.h), for a family's figures */
	char focus[160];	   /* the verdict's focus thread, named ("" when none) */
	struct page_lanes *lanes;  /* the busy threads' lanes (page_lanes.h) */
	struct page_bands *bands;  /* steps and ranges (page_bands.h) */
	/* Every process's steps, the reports' (steps.h): the page draws them in its row "steps". */
	const struct steps *steps;
};

struct page_family {
	/* Its state for one page. 0, or a negative errno. */
	int (*open)(const struct page *p, void **st);
	/* Every record of the walk, checked against its decoder's size. 0, or -ENOMEM. */
	int (*record)(const struct page *p, void *st, const struct bs_hdr *rec,
		      const struct trace_model *m);
	/* After the walk (P's end known), while the trace's names are (a legend's). */
	int (*named)(const struct page *p, void *st, const struct trace_model *m);
	/* Its timelines: page__chart() or page__no_data() each. */
	void (*timelines)(const struct page *p, void *st, FILE *f);
	/* Sections of its own after the timelines ("<section id=...>", a flame graph). */
	void (*sections)(const struct page *p, void *st, FILE *f);
	/* Its headline figures under the verdict: page__figure() each (may be NULL). */
	void (*figures)(const struct page *p, void *st, FILE *f);
	/* What the footer adds ("; ... are not drawn"), or NULL. */
	const char *(*footnote)(void *st);
	void (*free)(void *st);
};

/* One line of a timeline: time per bin of something, its label, its total (which to draw). */
struct page_series {
	char label[96];
	const struct time_bins *bins;
	double total; /* ns summed: the largest REPORT_SERIES are drawn */
};

/* Bins of the page's width (REPORT_BIN_NS) from the recording's start. */
void page__bins_init(const struct page *p, struct time_bins *b);
/* The ns summed over every bin. */
double page__total(const struct time_bins *b);
/*
 * A timeline: the N series (sorted here, the largest drawn) as step lines over the whole
 * recording, on one y scale from 0 to the largest column, or to CAP when CAP > 0. ID is the
 * figure's HTML id, WHAT says what a line measures; UNIT follows the top value.
 */
void page__chart(const struct page *p, FILE *f, const char *id, const char *title, const char *what,
		 struct page_series *s, int n, double cap, const char *unit);
/*
 * The same, for bins of weighted time (time_bins__add_weighted: watts, basis points): a
 * column's value is divided by SCALE for the axis (CAP is in the bins' units).
 */
void page__chart_scaled(const struct page *p, FILE *f, const char *id, const char *title,
			const char *what, struct page_series *s, int n, double cap, double scale,
			const char *unit);
/* One line of a level timeline: bytes held over time (level_bins.h), its label. */
struct page_level {
	char label[96];
	const struct level_bins *bins;
};

/*
 * A timeline of levels: the N lines S (sorted here: the REPORT_SERIES highest peaks drawn) as
 * step lines, each column the highest level in it (a peak is never averaged away), on one
 * scale of bytes from 0.
 */
void page__level_chart(const struct page *p, FILE *f, const char *id, const char *title,
		       const char *what, struct page_level *s, int n);
struct table;
/* T's first MAX rows (0: all) as the page draws the reports' tables. */
void page__table(FILE *f, const struct table *t, int max);
/* REPORT's table (its name: "cuda_api_sum"), NULL when not made: what other families found. */
const struct table *page__report(const struct page *p, const char *report);
/*
 * A table cell's class attribute (with its leading space, or ""): "n", right-aligned, for a
 * NUMERIC column; "w", never broken over two lines, for one short word ("pytho n3" was).
 */
const char *page__cell_class(int numeric, const char *text);
/* A timeline without data, saying why (e.g. which family records it). */
void page__no_data(FILE *f, const char *id, const char *title, const char *why);
/*
 * A headline figure: VALUE in human units under LABEL, EXACT on hover (may be NULL), a link
 * to the section that shows it when HREF ("#tl-gpu") is given.
 */
void page__figure(FILE *f, const char *label, const char *value, const char *exact,
		  const char *href);
/*
 * A thread's lane (page_lanes.h): the kind of span NAME ("on a CPU", "GIL waits"), asked at
 * open, BUSY when its time says the thread was busy (the lanes drawn are the busiest): its
 * index, or a negative errno (too many kinds). Then each span of thread TID of PID,
 * [TS, TS + DUR): 0, or -ENOMEM.
 */
int page__lane_kind(const struct page *p, const char *name, int busy);
int page__lane(const struct page *p, int kind, __u32 pid, __u32 tid, __u64 ts, __u64 dur);
/*
 * Steps and ranges (page_bands.h): a row of bands NAME ("torch steps", "NVTX ranges"), asked at
 * open, SHADE: drawn behind every timeline too (steps, capture ranges); then each band with
 * its LABEL (a step's number, a range's name): 0, or -ENOMEM.
 */
int page__band_row(const struct page *p, const char *name, int shade);
int page__band(const struct page *p, int row, __u64 ts, __u64 dur, const char *label);
/* TEXT with HTML's special characters escaped. */
void page__esc(FILE *f, const char *text);

#endif /* BPFSIGHT_PAGE_H */
