/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the cuda family's unit tests share (test_cuda_table.c, test_cuda_abi.c,
 * test_cuda_report.c): CUDA's own headers when the toolkit is here, call records built by
 * hand and decoded, asserts on a decoded event's args.
 */
#ifndef BPFSIGHT_TEST_CUDA_REC_H
#define BPFSIGHT_TEST_CUDA_REC_H

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include "commands.h"
#include "cuda.h"
#include "cuda_errors.h"
#include "event.h"
#include "stats.h"
#include "table.h"
#include "trace_model.h"
#include "trace_writer.h"
#include "unit.h"

#define CUDA_INC "/usr/local/cuda/include/"
#define CUDART	 "/usr/local/cuda/lib64/libcudart.so.13"
#define LIBCUDA	 "/usr/local/cuda/lib64/stubs/libcuda.so"

/* The CUDA headers are only needed here; "cuda.h" alone would be bpfsight's own. */
#if __has_include("/usr/local/cuda/include/cuda.h") &&                                             \
		  __has_include("/usr/local/cuda/include/cuda_runtime_api.h")
#define HAVE_CUDA_HEADERS 1
#include "/usr/local/cuda/include/cuda.h"
#include "/usr/local/cuda/include/cuda_runtime_api.h"
#endif

static inline int fn_of(const char *name)
{
	for (__u32 i = 0; i < cuda_table.napis; i++)
		if (!strcmp(cuda_table.apis[i].name, name))
			return i;
	return -1;
}

/* A call record with room for the largest deref. */
struct rec {
	struct bs_ucall u;
	char deref[BS_UCALL_DEREF_STRING];
};

static inline void rec_init(struct rec *r, const char *name, __u32 pid, __u64 ts, __u64 dur,
			    __s64 ret)
{
	int fn = fn_of(name);

	memset(r, 0, sizeof(*r));
	if (fn < 0)
		unit_fail("%s is not in cuda_table", name);
	r->u.h.type = BS_REC_CUDA_CALL;
	r->u.h.size = sizeof(r->u);
	r->u.h.pid = pid;
	r->u.h.tid = pid;
	r->u.h.ts = ts;
	r->u.fn = fn < 0 ? 0xfff : fn;
	r->u.dur = dur;
	r->u.ret = ret;
}

static inline void rec_deref(struct rec *r, const void *p, __u16 len)
{
	memcpy(r->deref, p, len);
	r->u.deref_len = len;
	r->u.h.size = sizeof(r->u) + len;
}

static inline const struct event_arg *ev_arg(const struct event *ev, const char *key)
{
	for (__u32 i = 0; i < ev->nargs; i++)
		if (!strcmp(ev->args[i].key, key))
			return &ev->args[i];
	return NULL;
}

#define ASSERT_ARG(ev, key, k, field, val)                                                         \
	({                                                                                         \
		const struct event_arg *___arg = ev_arg(ev, key);                                  \
		ASSERT_TRUE(___arg, "arg " key " present") &&                                      \
			ASSERT_EQ(___arg->kind, k, "arg " key " kind") &&                          \
			ASSERT_EQ(___arg->field, val, "arg " key);                                 \
	})
#define ASSERT_U64(ev, key, val) ASSERT_ARG(ev, key, EVENT_ARG_U64, u, val)
#define ASSERT_S64(ev, key, val) ASSERT_ARG(ev, key, EVENT_ARG_S64, s, val)
#define ASSERT_HEX(ev, key, val) ASSERT_ARG(ev, key, EVENT_ARG_HEX, u, val)
#define ASSERT_STR(ev, key, val)                                                                   \
	({                                                                                         \
		const struct event_arg *___arg = ev_arg(ev, key);                                  \
		ASSERT_TRUE(___arg && ___arg->kind == EVENT_ARG_STR, "arg " key " is a string") && \
			ASSERT_STREQ(___arg->str, val, "arg " key);                                \
	})
#define ASSERT_NO_ARG(ev, key) ASSERT_TRUE(!ev_arg(ev, key), "no arg " key)

static inline int decode(struct rec *r, const struct trace_model *m, struct event *ev)
{
	event__init(ev, &r->u.h, cuda_decoders[0].kind);
	return cuda_decoders[0].decode(&r->u.h, m, ev);
}

/* The spec of table entry NAME, compiled. */
static inline const struct ucall_spec *spec_of(const char *name)
{
	static struct ucall_spec tmp;
	int fn = fn_of(name);

	return fn < 0 ? NULL : ucall_table__spec(&cuda_table, fn, &tmp);
}

#endif /* BPFSIGHT_TEST_CUDA_REC_H */
