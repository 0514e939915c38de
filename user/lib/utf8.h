/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * UTF-8 as the writers of text formats need it (JSON, pickle): names from a trace are any bytes
 * (comms, command lines, symbols), and a reader of the format refuses invalid UTF-8.
 */
#ifndef BPFSIGHT_UTF8_H
#define BPFSIGHT_UTF8_H

#include <stddef.h>
#include <stdio.h>

/* U+FFFD, what a writer puts for a byte that starts no valid sequence. */
#define UTF8_REPLACEMENT     "\xef\xbf\xbd"
#define UTF8_REPLACEMENT_LEN 3

/*
 * Length of the valid UTF-8 sequence at S (at most N bytes, N > 0), 0 when invalid: overlong
 * forms, surrogates and code points above U+10FFFF are invalid (RFC 3629).
 */
size_t utf8__seq_len(const unsigned char *s, size_t n);

/*
 * Text for a terminal: S with every control character (C0, DEL, C1: a comm, a command line or a
 * symbol could move the cursor, retitle the window or rewrite the screen) and every byte that
 * starts no valid UTF-8 sequence shown as '?'. In place (S never grows): S.
 */
char *utf8__printable(char *s);
/* The same, written to F (S unchanged). */
void utf8__put_printable(FILE *f, const char *s);
/* 1 when utf8__printable would leave S as it is. */
int utf8__is_printable(const char *s);

#endif /* BPFSIGHT_UTF8_H */
