/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A tiny streaming JSON writer. Output is always valid JSON whatever the input bytes:
 * control characters are escaped, invalid UTF-8 becomes U+FFFD, non-finite doubles null.
 * Commas are placed by the writer, so callers only say what comes next.
 */
#ifndef BPFSIGHT_JSON_H
#define BPFSIGHT_JSON_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *f;
	int pretty;	/* newline + indent per member; 0 = compact (NDJSON) */
	int depth;	/* deeper nesting is written but no longer indented */
	int after_key;	/* a key was written: the next value is its value */
	__u64 nonempty; /* bit d: the container at depth d has a member (depth < 64 only) */
};

void json__init(struct json *j, FILE *f, int pretty);
void json__begin_object(struct json *j);
void json__end_object(struct json *j);
void json__begin_array(struct json *j);
void json__end_array(struct json *j);
void json__key(struct json *j, const char *key);
void json__str(struct json *j, const char *s); /* NULL is written as null */
void json__strn(struct json *j, const char *s, size_t n);
void json__u64(struct json *j, __u64 v);
void json__s64(struct json *j, __s64 v);
void json__double(struct json *j, double v, int precision); /* fixed notation */
/* The shortest text that reads back as V ("%.17g" at most); non-finite as null. */
void json__double_g(struct json *j, double v);
void json__bool(struct json *j, int v);
void json__null(struct json *j);

/* key + value shorthands for objects. */
void json__kv_str(struct json *j, const char *key, const char *s);
void json__kv_u64(struct json *j, const char *key, __u64 v);
void json__kv_s64(struct json *j, const char *key, __s64 v);
void json__kv_double(struct json *j, const char *key, double v, int precision);
void json__kv_bool(struct json *j, const char *key, int v);

/* A JSON string literal (quotes included) of N bytes of S, on its own. */
void json_write_string(FILE *f, const char *s, size_t n);

#endif /* BPFSIGHT_JSON_H */
