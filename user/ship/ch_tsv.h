/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The server's TabSeparated answers read back: every reader of one (stats --from's reports,
 * ship's claims) unescapes a field the same way, so a path with a tab or a backslash comes back
 * as it went in.
 */
#ifndef BPFSIGHT_CH_TSV_H
#define BPFSIGHT_CH_TSV_H

/*
 * The field at P: unescaped in place (ClickHouse's \t, \n, \r, \b, \f, \0; \\, \' and any
 * other escaped byte as itself),
 * NUL-terminated; *NEXT the next field (past the tab or newline that ended it), or the end.
 */
char *ch_tsv__field(char *p, char **next);

#endif /* BPFSIGHT_CH_TSV_H */
