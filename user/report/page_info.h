/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight info`'s text as the report's page shows it: folded, as tables that fit the page
 * rather than preformatted text. Its lines are info's own (cmd_info.c): "key:   value" pairs,
 * indented "  name  value" lines under them, and tables whose header is underlined by runs of
 * dashes, one per column.
 */
#ifndef BPFSIGHT_PAGE_INFO_H
#define BPFSIGHT_PAGE_INFO_H

#include <stdio.h>

/* <section id="info">: TEXT (info's output) in a <details> closed by default. */
void page_info__write(FILE *f, const char *text);

#endif /* BPFSIGHT_PAGE_INFO_H */
