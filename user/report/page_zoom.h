/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report page's script for its one time axis (page_axis.h): dragging over any timeline
 * zooms every plot to the range dragged over, a click without a drag resets them, and the
 * shaded bands (page_bands.h) are drawn behind every plot. Inline, with no dependency.
 */
#ifndef BPFSIGHT_PAGE_ZOOM_H
#define BPFSIGHT_PAGE_ZOOM_H

#include <stdio.h>

struct page;

/* The <script> element, at the end of the page's body. */
void page_zoom__script(FILE *f, const struct page *p);

#endif /* BPFSIGHT_PAGE_ZOOM_H */
