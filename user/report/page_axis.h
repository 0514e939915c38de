/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report page's one time axis: every timeline (and the threads' lanes, the steps and
 * ranges) is an SVG of the same width whose plot is a nested <svg class="plot"> spanning the
 * whole recording in the same user units. The page's script (page_zoom.c) zooms them all
 * together by changing the plots' viewBox, and relabels the time ticks (class "tick", the
 * share of the axis in data-f).
 */
#ifndef BPFSIGHT_PAGE_AXIS_H
#define BPFSIGHT_PAGE_AXIS_H

#include <stdio.h>

#define SVG_W  960
#define PLOT_X 60 /* left margin: the value labels */
#define PLOT_W (SVG_W - PLOT_X - 10)
#define PLOT_Y 10
#define AXIS_H 30 /* below the plot: the time labels */

struct page;

/*
 * Open a timeline's SVG with a plot PLOT_H high: the axes, the time ticks, and when UNIT is
 * not NULL the values' scale from 0 to TOP (in UNIT); then the plot, which the caller fills
 * in the outer SVG's units and closes with page_axis__close_plot().
 */
void page_axis__open(FILE *f, const struct page *p, int plot_h, double top, const char *unit);
void page_axis__close_plot(FILE *f);
/* "1.5 s", "250 ms": an axis label of S seconds. */
void page_axis__secs(char *buf, size_t len, double s);

#endif /* BPFSIGHT_PAGE_AXIS_H */
