/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Interning of strings to small ids, for the writer side (trace_model does the reading). */
#ifndef BPFSIGHT_STRING_POOL_H
#define BPFSIGHT_STRING_POOL_H

#include <linux/types.h>

struct string_pool;

struct string_pool *string_pool__new(void);
void string_pool__free(struct string_pool *p);
/* The id of S; *is_new = 1 when S was added now. ids start at 1; 0 on allocation failure. */
__u32 string_pool__intern(struct string_pool *p, const char *s, int *is_new);
/* The id of S if the pool has it, else 0. */
__u32 string_pool__find(const struct string_pool *p, const char *s);
/* The bytes of the strings the pool holds (their ends included). */
__u64 string_pool__bytes(const struct string_pool *p);

#endif
