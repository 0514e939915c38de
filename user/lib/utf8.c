// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* UTF-8 for the writers of text formats (utf8.h). */
#include <string.h>
#include <linux/types.h>
#include "utf8.h"

size_t utf8__seq_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	__u32 cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* The length of the character at S (N bytes left), and whether a terminal may show it. */
static size_t printable_len(const unsigned char *s, size_t n, int *ok)
{
	size_t len = utf8__seq_len(s, n);

	*ok = len && !(len == 1 && (s[0] < 0x20 || s[0] == 0x7f)) &&
	      !(len == 2 && s[0] == 0xc2 && s[1] < 0xa0); /* U+0080..U+009F: C1 */
	return len ? len : 1;
}

char *utf8__printable(char *s)
{
	size_t n = strlen(s), i = 0, o = 0, len;
	int ok;

	while (i < n) {
		len = printable_len((const unsigned char *)s + i, n - i, &ok);
		if (ok) {
			memmove(s + o, s + i, len);
			o += len;
		} else {
			s[o++] = '?';
		}
		i += len;
	}
	s[o] = 0;
	return s;
}

void utf8__put_printable(FILE *f, const char *s)
{
	size_t n = strlen(s), i = 0, len;
	int ok;

	while (i < n) {
		len = printable_len((const unsigned char *)s + i, n - i, &ok);
		if (ok)
			fwrite(s + i, 1, len, f);
		else
			fputc('?', f);
		i += len;
	}
}

int utf8__is_printable(const char *s)
{
	size_t n = strlen(s), i = 0;
	int ok = 1;

	while (i < n && ok)
		i += printable_len((const unsigned char *)s + i, n - i, &ok);
	return ok;
}
