/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The top of `bpfsight report`'s page, what a reader looks at first: the verdict `bpfsight
 * stats` opens with, each claim linked to the section that shows it, then headline figures.
 */
#ifndef BPFSIGHT_PAGE_SUMMARY_H
#define BPFSIGHT_PAGE_SUMMARY_H

#include <stdio.h>

struct page;
struct stats;

struct trace_model;

/* P's focus: the thread the verdict's accounts put first, named by M (the page's walk). */
void page_summary__focus(struct page *p, const struct stats *s, const struct trace_model *m);
/* <section id="verdict">: the headline, the claims as stats lists them (piped), the legend. */
void page_summary__verdict(FILE *f, const struct stats *s);
/* The same of verdict V (a server's answers': report --from), "no verdict" for NULL. */
struct verdict;
void page_summary__verdict_of(FILE *f, const struct verdict *v);
/*
 * The page's own figures (inside the caller's <section id="figures">, before the families'):
 * the recording's duration, the focus thread's time on a CPU and waiting for the GIL (the
 * verdict's accounts), the events lost.
 */
void page_summary__figures(FILE *f, const struct page *p, const struct stats *s);

#endif /* BPFSIGHT_PAGE_SUMMARY_H */
