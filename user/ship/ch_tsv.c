// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A TabSeparated answer's fields, unescaped: ch_tsv.h. */
#include "ch_tsv.h"

char *ch_tsv__field(char *p, char **next)
{
	char *o = p, *s = p;

	while (*s && *s != '\t' && *s != '\n') {
		if (*s == '\\' && s[1]) {
			s++;
			*o++ = *s == 't'   ? '\t'
			       : *s == 'n' ? '\n'
			       : *s == 'r' ? '\r'
			       : *s == 'b' ? '\b'
			       : *s == 'f' ? '\f'
			       : *s == '0' ? '\0'
					   : *s;
			s++;
		} else {
			*o++ = *s++;
		}
	}
	*next = *s ? s + 1 : s;
	*o = 0;
	return p;
}
