/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small hash map with 128-bit keys and values stored inline: the per-process, per-thread and
 * per-key state of every part (open addressing, linear probing).
 */
#ifndef BPFSIGHT_HMAP_H
#define BPFSIGHT_HMAP_H

#include <stddef.h>
#include <linux/types.h>

struct hkey {
	__u64 a, b;
};

struct hmap;

/* Values are VAL_SIZE bytes, zeroed on creation, stored inline. */
struct hmap *hmap__new(size_t val_size);
void hmap__free(struct hmap *m);
/*
 * The value of KEY; created when absent and CREATE is set. NULL when absent (or out of
 * memory). Inserting may move every value: do not keep pointers across a creating call.
 */
void *hmap__get(struct hmap *m, struct hkey key, int create);
size_t hmap__count(const struct hmap *m);
/* Remove KEY (nothing when absent); like an insert, it may move other values. */
void hmap__del(struct hmap *m, struct hkey key);
/* Iterate: start with *iter = 0; returns the next value (and its key) or NULL at the end. */
void *hmap__next(const struct hmap *m, size_t *iter, struct hkey *key);
/* Remove every key whose half A (WHICH 0) or B (WHICH 1) is V: a process's entries. */
void hmap__del_all(struct hmap *m, int which, __u64 v);

#endif /* BPFSIGHT_HMAP_H */
