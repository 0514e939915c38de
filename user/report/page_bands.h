/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report page's steps and ranges (page__band_row, page__band): training steps, NVTX ranges,
 * capture ranges, a row each on the page's time axis under "Steps and ranges", those of shaded
 * rows drawn behind every timeline too (by the page's script). Bands narrower than a column of
 * LANE_COLUMNS are drawn merged with their neighbours, the first one's label saying how many.
 */
#ifndef BPFSIGHT_PAGE_BANDS_H
#define BPFSIGHT_PAGE_BANDS_H

#include <stdio.h>

#define PAGE_BAND_ROWS 6

struct page;
struct page_bands;

struct page_bands *page_bands__new(void);
void page_bands__free(struct page_bands *b);
/* <figure id="tl-ranges">, when any row has a band. */
void page_bands__draw(const struct page *p, const struct page_bands *b, FILE *f);

#endif /* BPFSIGHT_PAGE_BANDS_H */
