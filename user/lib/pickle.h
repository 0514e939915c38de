/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A streaming writer of Python pickles (protocol 2), enough for data: dicts, lists, 2-tuples,
 * strings, integers, None and booleans. What Python's pickle.load and PyTorch's memory_viz.js
 * (which knows only a subset of the opcodes: no POP, LONG1 of 8 bytes at most) both read.
 *
 * The caller writes the opcodes in the order the unpickler's stack wants them: a dict is
 * PICKLE_DICT, PICKLE_MARK, then key, value, ..., then PICKLE_SETITEMS; a list the same with
 * PICKLE_APPENDS (in batches: memory_viz.js spreads a batch as arguments of a call, which a
 * million-item batch overflows). A pickle may be written as several streams
 * concatenated later (pieces known only at the end): their memo ids come from one counter,
 * and each stream refers only to what it memoized itself.
 */
#ifndef BPFSIGHT_PICKLE_H
#define BPFSIGHT_PICKLE_H

#include <stdio.h>
#include <linux/types.h>

/* Items per APPENDS or SETITEMS batch, as Python's own pickler writes them. */
#define PICKLE_BATCH 1000

struct string_pool;

struct pickle {
	FILE *f;
	__u32 *next_memo;	  /* the pickle's memo counter, shared by its streams */
	__u32 own_memo;		  /* that counter, when the stream is the whole pickle */
	struct string_pool *strs; /* strings memoized by this stream */
	__u32 *str_memo;	  /* their memo ids, by pool id */
	__u32 nstr_memo;
	int err; /* -ENOMEM when memoizing failed (the string is then written in full) */
};

/* A stream to F; MEMO: the pickle's memo counter (NULL: the stream is the whole pickle). */
void pickle__init(struct pickle *p, FILE *f, __u32 *memo);
void pickle__free(struct pickle *p);
/* 0, or a negative errno: memory, or F's first failed write. */
int pickle__error(const struct pickle *p);

/* The opcodes that take no argument, by what they push or do (Python's names in comments). */
enum pickle_op {
	PICKLE_STOP = '.',     /* STOP: the object on top is the pickle's; the last opcode */
	PICKLE_DICT = '}',     /* EMPTY_DICT */
	PICKLE_LIST = ']',     /* EMPTY_LIST */
	PICKLE_MARK = '(',     /* MARK */
	PICKLE_SETITEMS = 'u', /* SETITEMS: the keys and values since the mark into the dict */
	PICKLE_APPENDS = 'e',  /* APPENDS: the items since the mark onto the list */
	PICKLE_TUPLE2 = 0x86,  /* TUPLE2: the two items on top as a tuple */
	PICKLE_NONE = 'N',     /* NONE */
	PICKLE_TRUE = 0x88,    /* NEWTRUE */
	PICKLE_FALSE = 0x89,   /* NEWFALSE */
};

void pickle__proto(struct pickle *p); /* the first opcode of a pickle: PROTO 2 */
void pickle__op(struct pickle *p, enum pickle_op op);
void pickle__int(struct pickle *p, __s64 v);
void pickle__uint(struct pickle *p, __u64 v);
/* S (NULL: "") as a str; invalid UTF-8 becomes U+FFFD. */
void pickle__str(struct pickle *p, const char *s);
/* The same, memoized the first time: a key or name written again costs 2 or 5 bytes. */
void pickle__str_memo(struct pickle *p, const char *s);
/* Memoize the object on top (it stays there): its memo id, for pickle__get. */
__u32 pickle__put(struct pickle *p);
/* Push memoized object ID again (the same object: a list shared by many entries). */
void pickle__get(struct pickle *p, __u32 id);

#endif /* BPFSIGHT_PICKLE_H */
