// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of cuda: API-call events, read through the args strings of the API table
 * (cuda_api.c documents their format), and the cuda_api_sum, cuda_launch_sum, cuda_memcpy_sum
 * and cuda_err_sum reports.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "cuda_errors.h"
#include "stats_math.h"
#include "table.h"
#include "time_sum.h"

/*
 * What an args field can be. The shown keys come first, in the order events list them; the
 * others only feed derived values (bytes, kind, the src/dst shown).
 */
enum cuda_key {
	K_KERNEL,
	K_FUNC,
	K_NAME,
	K_HANDLE,
	K_GRID_X,
	K_GRID_Y,
	K_GRID_Z,
	K_BLOCK_X,
	K_BLOCK_Y,
	K_BLOCK_Z,
	K_SHARED_BYTES,
	K_DST,
	K_DST_DEVICE,
	K_DST_CTX,
	K_SRC,
	K_SRC_DEVICE,
	K_SRC_CTX,
	K_BYTES,
	K_VALUE,
	K_KIND,
	K_COUNT,
	K_PTR,
	K_WIDTH,
	K_HEIGHT,
	K_DEPTH,
	K_ADDR,
	K_POOL,
	K_MODULE,
	K_LIBRARY,
	K_GRAPH,
	K_GRAPH_EXEC,
	K_MODE,
	K_FLAGS,
	K_CTX,
	K_STREAM,
	K_EVENT,
	K_SHOWN_NR,
	K_GRID = K_SHOWN_NR, /* dim3 */
	K_BLOCK,
	K_SRC_MT, /* CUmemorytype */
	K_DST_MT,
	K_SRC_HOST,
	K_DST_HOST,
	K_SRC_ARR,
	K_DST_ARR,
	K_NR,
};

enum cuda_type { T_U64, T_U32, T_S32, T_U16, T_U8, T_DIM3, T_FN, T_STR };
#define T_INTS (1u << T_U64 | 1u << T_U32 | 1u << T_S32 | 1u << T_U16 | 1u << T_U8)

enum cuda_show { SHOW_NUM, SHOW_HEX, SHOW_NAME, SHOW_KIND, SHOW_NONE };

static const struct cuda_key_def {
	const char *name;
	__u8 show;
	__u8 types; /* 1 << T_* allowed */
} keys[K_NR] = {
	[K_KERNEL] = { "kernel", SHOW_NAME, 1u << T_FN },
	[K_FUNC] = { "func", SHOW_NAME, 1u << T_FN },
	[K_NAME] = { "name", SHOW_NAME, 1u << T_FN | 1u << T_STR },
	[K_HANDLE] = { "handle", SHOW_HEX, T_INTS },
	[K_GRID_X] = { "grid_x", SHOW_NUM, T_INTS },
	[K_GRID_Y] = { "grid_y", SHOW_NUM, T_INTS },
	[K_GRID_Z] = { "grid_z", SHOW_NUM, T_INTS },
	[K_BLOCK_X] = { "block_x", SHOW_NUM, T_INTS },
	[K_BLOCK_Y] = { "block_y", SHOW_NUM, T_INTS },
	[K_BLOCK_Z] = { "block_z", SHOW_NUM, T_INTS },
	[K_SHARED_BYTES] = { "shared_bytes", SHOW_NUM, T_INTS },
	[K_DST] = { "dst", SHOW_HEX, T_INTS },
	[K_DST_DEVICE] = { "dst_device", SHOW_NUM, T_INTS },
	[K_DST_CTX] = { "dst_ctx", SHOW_HEX, T_INTS },
	[K_SRC] = { "src", SHOW_HEX, T_INTS },
	[K_SRC_DEVICE] = { "src_device", SHOW_NUM, T_INTS },
	[K_SRC_CTX] = { "src_ctx", SHOW_HEX, T_INTS },
	[K_BYTES] = { "bytes", SHOW_NUM, T_INTS },
	[K_VALUE] = { "value", SHOW_NUM, T_INTS },
	[K_KIND] = { "kind", SHOW_KIND, T_INTS },
	[K_COUNT] = { "count", SHOW_NUM, T_INTS },
	[K_PTR] = { "ptr", SHOW_HEX, T_INTS },
	[K_WIDTH] = { "width", SHOW_NUM, T_INTS },
	[K_HEIGHT] = { "height", SHOW_NUM, T_INTS },
	[K_DEPTH] = { "depth", SHOW_NUM, T_INTS },
	[K_ADDR] = { "addr", SHOW_HEX, T_INTS },
	[K_POOL] = { "pool", SHOW_HEX, T_INTS },
	[K_MODULE] = { "module", SHOW_HEX, T_INTS },
	[K_LIBRARY] = { "library", SHOW_HEX, T_INTS },
	[K_GRAPH] = { "graph", SHOW_HEX, T_INTS },
	[K_GRAPH_EXEC] = { "graph_exec", SHOW_HEX, T_INTS },
	[K_MODE] = { "mode", SHOW_NUM, T_INTS },
	[K_FLAGS] = { "flags", SHOW_NUM, T_INTS },
	[K_CTX] = { "ctx", SHOW_HEX, T_INTS },
	[K_STREAM] = { "stream", SHOW_HEX, T_INTS },
	[K_EVENT] = { "event", SHOW_HEX, T_INTS },
	[K_GRID] = { "grid", SHOW_NONE, 1u << T_DIM3 },
	[K_BLOCK] = { "block", SHOW_NONE, 1u << T_DIM3 },
	[K_SRC_MT] = { "src_mt", SHOW_NONE, T_INTS },
	[K_DST_MT] = { "dst_mt", SHOW_NONE, T_INTS },
	[K_SRC_HOST] = { "src_host", SHOW_NONE, T_INTS },
	[K_DST_HOST] = { "dst_host", SHOW_NONE, T_INTS },
	[K_SRC_ARR] = { "src_arr", SHOW_NONE, T_INTS },
	[K_DST_ARR] = { "dst_arr", SHOW_NONE, T_INTS },
};

static const char *const type_names[] = { "u64", "u32", "s32", "u16", "u8", "dim3", "fn", "str" };
static const __u8 type_size[] = { 8, 4, 4, 2, 1, 12, 8, 0 };

/* Memcpy directions; the first five are cudaMemcpyKind's values. */
enum cuda_kind {
	KIND_HTOH,
	KIND_HTOD,
	KIND_DTOH,
	KIND_DTOD,
	KIND_DEFAULT,
	KIND_PTOP,
	KIND_BATCH,
	KIND_UNKNOWN,
	KIND_NR,
};

static const char *const kind_names[KIND_NR] = {
	"HtoH", "HtoD", "DtoH", "DtoD", "default", "PtoP", "batch", "unknown",
};

/* CUmemorytype */
#define MT_HOST	   1
#define MT_DEVICE  2
#define MT_ARRAY   3
#define MT_UNIFIED 4

enum field_src { SRC_WORD, SRC_DEREF, SRC_CONST, SRC_OUT };

struct cuda_field {
	__u8 key;
	__u8 type;
	__u8 src;
	__u8 word; /* SRC_WORD, SRC_OUT */
	__u16 off; /* SRC_DEREF */
	__u64 konst;
};

#define CUDA_MAX_FIELDS 24

/* An args string, compiled. */
struct cuda_spec {
	int ok;
	int nfields;
	int nwords;   /* argument words the string describes */
	int out_word; /* -1: none */
	int fn_word;  /* -1: none */
	int has_deref, has_str;
	__u64 keys; /* 1 << key of every field */
	struct cuda_field f[CUDA_MAX_FIELDS];
};

static int spec_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int key_lookup(const char *s, size_t n)
{
	for (int k = 0; k < K_NR; k++)
		if (strlen(keys[k].name) == n && !strncmp(keys[k].name, s, n))
			return k;
	return -1;
}

static int kind_lookup(const char *s)
{
	for (int k = 0; k < KIND_NR; k++)
		if (!strcmp(kind_names[k], s))
			return k;
	return -1;
}

/* One field: [*]KEY[:TYPE][@OFF] or KEY=VALUE. */
static int spec_field(struct cuda_spec *s, const char *tok, char *err, size_t len)
{
	struct cuda_field *f = &s->f[s->nfields];
	const char *p = tok, *end;
	int out = 0, key;
	char *num_end;

	if (s->nfields >= CUDA_MAX_FIELDS)
		return spec_err(err, len, "more than %d fields", CUDA_MAX_FIELDS);
	memset(f, 0, sizeof(*f));
	if (*p == '*') {
		out = 1;
		p++;
	}
	end = p + strcspn(p, ":@=");
	key = key_lookup(p, end - p);
	if (key < 0)
		return spec_err(err, len, "unknown key in '%s'", tok);
	f->key = key;
	f->type = T_U64;
	f->src = SRC_WORD;
	p = end;
	if (*p == '=') {
		if (out)
			return spec_err(err, len, "'%s': a constant cannot be out", tok);
		f->src = SRC_CONST;
		if (key == K_KIND) {
			int k = kind_lookup(p + 1);

			if (k < 0)
				return spec_err(err, len, "'%s': unknown direction", tok);
			f->konst = k;
		} else {
			f->konst = strtoull(p + 1, &num_end, 0);
			if (num_end == p + 1 || *num_end)
				return spec_err(err, len, "'%s': bad number", tok);
		}
		p += strlen(p);
	}
	if (*p == ':') {
		size_t n;

		p++;
		n = strcspn(p, "@");
		f->type = 0xff;
		for (size_t t = 0; t < sizeof(type_names) / sizeof(type_names[0]); t++)
			if (strlen(type_names[t]) == n && !strncmp(type_names[t], p, n))
				f->type = t;
		if (f->type == 0xff)
			return spec_err(err, len, "'%s': unknown type", tok);
		p += n;
	}
	if (*p == '@') {
		unsigned long off = strtoul(p + 1, &num_end, 10);

		if (num_end == p + 1 || *num_end || out)
			return spec_err(err, len, "'%s': bad deref offset", tok);
		if (f->type == T_STR ? off != 0 : off + type_size[f->type] > BS_UCALL_DEREF_STRUCT)
			return spec_err(err, len, "'%s': past the deref copy", tok);
		f->src = SRC_DEREF;
		f->off = off;
		p += strlen(p);
		if (f->type == T_STR)
			s->has_str = 1;
		else
			s->has_deref = 1;
	}
	if (*p)
		return spec_err(err, len, "'%s': trailing characters", tok);
	if (!(keys[key].types & 1u << f->type))
		return spec_err(err, len, "'%s': type %s not allowed", tok, type_names[f->type]);
	if (f->type == T_STR && f->src != SRC_DEREF)
		return spec_err(err, len, "'%s': str needs @0", tok);
	if (f->type == T_FN && f->src != SRC_WORD)
		return spec_err(err, len, "'%s': fn must be an argument word", tok);
	if (s->keys & (1ull << key) && key != K_BYTES)
		return spec_err(err, len, "'%s': key given twice", tok);
	s->keys |= 1ull << key;
	if (f->src == SRC_WORD) {
		f->word = s->nwords;
		s->nwords += f->type == T_DIM3 ? 2 : 1;
		if (s->nwords > BS_UCALL_NARGS)
			return spec_err(err, len, "'%s': past argument word %d", tok,
					BS_UCALL_NARGS);
		if (out) {
			if (s->out_word >= 0)
				return spec_err(err, len, "two out fields");
			f->src = SRC_OUT;
			s->out_word = f->word;
		}
		if (f->type == T_FN) {
			if (s->fn_word >= 0)
				return spec_err(err, len, "two fn fields");
			s->fn_word = f->word;
		}
	}
	s->nfields++;
	return 0;
}

static int spec_parse(const char *args, struct cuda_spec *s, char *err, size_t len)
{
	const char *p = args ? args : "";
	char tok[64];
	int ret;

	memset(s, 0, sizeof(*s));
	s->out_word = s->fn_word = -1;
	while (*p) {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (!n)
			break;
		if (n >= sizeof(tok))
			return spec_err(err, len, "field too long");
		memcpy(tok, p, n);
		tok[n] = 0;
		p += n;
		if (!strcmp(tok, "-")) {
			if (++s->nwords > BS_UCALL_NARGS)
				return spec_err(err, len, "past argument word %d", BS_UCALL_NARGS);
			continue;
		}
		ret = spec_field(s, tok, err, len);
		if (ret)
			return ret;
	}
	s->ok = 1;
	return 0;
}

/*
 * Compiled once: dump decodes every call, and the strings never change. (pthread_once is out
 * of reach: -Iuser makes <pthread.h> include user/sched.h.) Racing first callers each compile,
 * one publishes, the others free theirs.
 */
static struct cuda_spec *specs;

static const struct cuda_spec *spec_of(__u32 fn, struct cuda_spec *tmp)
{
	struct cuda_spec *s = __atomic_load_n(&specs, __ATOMIC_ACQUIRE), *expected = NULL;

	if (!s) {
		s = calloc(cuda_table.napis, sizeof(*s));
		if (!s) { /* out of memory: the slow way */
			spec_parse(cuda_table.apis[fn].args, tmp, NULL, 0);
			return tmp;
		}
		for (__u32 i = 0; i < cuda_table.napis; i++)
			spec_parse(cuda_table.apis[i].args, &s[i], NULL, 0);
		if (!__atomic_compare_exchange_n(&specs, &expected, s, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			free(s);
			s = expected;
		}
	}
	return &s[fn];
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static int has_key(const struct cuda_spec *s, int key)
{
	return !!(s->keys & (1ull << key));
}

/* Everything the record side and the decoder rely on, per entry (the unit test runs this). */
static int api_check(const struct ucall_api *a, const struct cuda_spec *s, char *err, size_t len)
{
	int driver = starts_with(a->name, "cu") && !starts_with(a->name, "cuda");
	int profiler = !!(a->flags & (CUDA_F_PROFILER_START | CUDA_F_PROFILER_STOP));
	int fn_arg = CUDA_FUNC_ARG_OF(a->flags);
	int want_mode;

	if (!driver && !starts_with(a->name, "cuda") && !starts_with(a->name, "__cuda"))
		return spec_err(err, len, "neither runtime nor driver name");
	if (driver != !!(a->flags & CUDA_F_DRIVER))
		return spec_err(err, len, "CUDA_F_DRIVER does not match the name");
	if (a->out_arg != s->out_word + 1)
		return spec_err(err, len, "out_arg %u, but the '*' field is word %d", a->out_arg,
				s->out_word);
	if (fn_arg != s->fn_word)
		return spec_err(err, len, "CUDA_F_FUNC_ARG %d, but the fn field is word %d", fn_arg,
				s->fn_word);
	want_mode = s->has_str ? BS_DEREF_STRING : s->has_deref ? BS_DEREF_STRUCT : BS_DEREF_NONE;
	if (a->deref_mode != want_mode || (s->has_str && s->has_deref))
		return spec_err(err, len, "deref_mode %u, but the @ fields want %d", a->deref_mode,
				want_mode);
	if (a->deref_mode != BS_DEREF_NONE && a->deref_arg != BS_DEREF_ARG_STACK &&
	    (!a->deref_arg || a->deref_arg > s->nwords))
		return spec_err(err, len, "deref_arg %u is not an argument word", a->deref_arg);
	if (a->deref_mode == BS_DEREF_NONE && (a->deref_arg || a->deref_off8))
		return spec_err(err, len, "deref_arg without @ fields");
	if (a->deref_mode == BS_DEREF_STRING && a->deref_off8)
		return spec_err(err, len, "a deref string starts at the pointer");
	if (a->out_arg > 15 || a->deref_arg > 15 || a->deref_mode > 3)
		return spec_err(err, len, "does not fit the cookie");
	if (profiler != (a->group == CUDA_GRP_PROFILER) ||
	    (a->flags & CUDA_F_PROFILER_START && a->flags & CUDA_F_PROFILER_STOP))
		return spec_err(err, len, "profiler flags and group disagree");
	if (!!(a->flags & CUDA_F_NAMES_OUT) !=
	    (has_key(s, K_NAME) && s->has_str && s->out_word >= 0))
		return spec_err(err, len, "CUDA_F_NAMES_OUT needs *handle and name:str, and back");
	if (!!(a->flags & CUDA_F_ALIAS_OUT) !=
	    (has_key(s, K_NAME) && s->fn_word >= 0 && s->out_word >= 0))
		return spec_err(err, len, "CUDA_F_ALIAS_OUT needs *handle and name:fn, and back");
	if ((a->flags & (CUDA_F_NAMES_OUT | CUDA_F_ALIAS_OUT)) && a->group != CUDA_GRP_MODULE)
		return spec_err(err, len, "naming functions belong to CUDA_GRP_MODULE");
	switch (a->group) {
	case CUDA_GRP_LAUNCH:
		if (has_key(s, K_FUNC))
			break;
		if (!has_key(s, K_KERNEL) || !has_key(s, K_STREAM) || !has_key(s, K_SHARED_BYTES) ||
		    !(has_key(s, K_GRID) ||
		      (has_key(s, K_GRID_X) && has_key(s, K_GRID_Y) && has_key(s, K_GRID_Z))) ||
		    !(has_key(s, K_BLOCK) ||
		      (has_key(s, K_BLOCK_X) && has_key(s, K_BLOCK_Y) && has_key(s, K_BLOCK_Z))))
			return spec_err(err, len,
					"a launch needs kernel, grid, block, "
					"shared_bytes and stream");
		break;
	case CUDA_GRP_MEMCPY:
		if (!has_key(s, K_KIND) && !(has_key(s, K_SRC_MT) && has_key(s, K_DST_MT)))
			return spec_err(err, len, "a copy needs a kind or memory types");
		if (!has_key(s, K_COUNT) &&
		    !(has_key(s, K_BYTES) && has_key(s, K_DST) && has_key(s, K_SRC)))
			return spec_err(err, len, "a copy needs dst, src and bytes");
		break;
	case CUDA_GRP_MEMSET:
		if (!has_key(s, K_DST) || !has_key(s, K_BYTES) || !has_key(s, K_VALUE))
			return spec_err(err, len, "a memset needs dst, value and bytes");
		break;
	case CUDA_GRP_ALLOC:
		if (!has_key(s, K_BYTES) && !has_key(s, K_WIDTH))
			return spec_err(err, len, "an allocation needs a size");
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Check the whole API table: every args string, its agreement with the entry's deref, out and
 * flags, and unique names. 0, or -EINVAL with the first problem in ERR.
 */
int cuda_table__check(const struct ucall_table *t, char *err, size_t len)
{
	struct cuda_spec s;
	char why[160];

	if (t->napis > 0x1000)
		return spec_err(err, len, "%u entries: fn has 12 bits", t->napis);
	for (__u32 i = 0; i < t->napis; i++) {
		const struct ucall_api *a = &t->apis[i];

		if (!a->name || !a->name[0])
			return spec_err(err, len, "entry %u has no name", i);
		for (__u32 j = 0; j < i; j++)
			if (!strcmp(t->apis[j].name, a->name))
				return spec_err(err, len, "%s: listed twice (%u, %u)", a->name, j,
						i);
		if (spec_parse(a->args, &s, why, sizeof(why)) || api_check(a, &s, why, sizeof(why)))
			return spec_err(err, len, "%s: %s", a->name, why);
	}
	return 0;
}

/* One call, read through its args string. */
struct cuda_call {
	const struct ucall_api *api; /* NULL: fn unknown to this table */
	__s32 code;		     /* cudaError_t / CUresult */
	int kind;		     /* enum cuda_kind, -1 when not a copy */
	__u64 have;		     /* 1 << key of the values read */
	__u64 is_signed;
	__u64 v[K_NR];
	const char *str; /* name:str, not necessarily terminated */
	__u32 strn;
};

static __u64 le_read(const __u8 *p, int n)
{
	__u64 v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static __u64 narrow(__u64 v, int type)
{
	switch (type) {
	case T_U32:
		return (__u32)v;
	case T_S32:
		return (__u64)(__s64)(__s32)v;
	case T_U16:
		return (__u16)v;
	case T_U8:
		return (__u8)v;
	default:
		return v;
	}
}

static void call_set(struct cuda_call *c, int key, __u64 v, int type)
{
	c->v[key] = v;
	c->have |= 1ull << key;
	if (type == T_S32)
		c->is_signed |= 1ull << key;
}

/* Memory types to a direction: arrays are device memory, unified memory is cudaMemcpyDefault. */
static int kind_of_mt(__u64 src, __u64 dst)
{
	int s_dev, d_dev;

	if (src < MT_HOST || src > MT_UNIFIED || dst < MT_HOST || dst > MT_UNIFIED)
		return KIND_UNKNOWN;
	if (src == MT_UNIFIED || dst == MT_UNIFIED)
		return KIND_DEFAULT;
	s_dev = src != MT_HOST;
	d_dev = dst != MT_HOST;
	return s_dev ? (d_dev ? KIND_DTOD : KIND_DTOH) : (d_dev ? KIND_HTOD : KIND_HTOH);
}

/* The pointer shown for a side of a copy described by memory type, host, device, array. */
static void pick_side(struct cuda_call *c, int mt, int host, int dev, int arr)
{
	int from = dev;

	if (c->have & (1ull << mt)) {
		if (c->v[mt] == MT_HOST)
			from = host;
		else if (c->v[mt] == MT_ARRAY)
			from = arr;
	} else if (c->have & (1ull << arr) && c->v[arr]) {
		from = arr;
	}
	if (from != dev && c->have & (1ull << from))
		call_set(c, dev, c->v[from], T_U64);
}

static void cuda_call__read(const struct bs_hdr *rec, struct cuda_call *c)
{
	const struct bs_ucall *u = (const void *)rec;
	const __u8 *deref = NULL;
	__u64 bytes = 1, v = 0;
	const struct cuda_spec *s;
	struct cuda_spec tmp;
	int nbytes = 0, bytes_lost = 0;
	__u32 dlen = 0;

	memset(c, 0, sizeof(*c)); /* values never read are 0, as a report expects */
	c->api = ucall_table__api(&cuda_table, u->fn);
	c->code = (__s32)u->ret;
	c->kind = -1;
	if (!c->api)
		return;
	s = spec_of(u->fn, &tmp);
	/* A deref the record does not hold (truncated, or none captured) reads as absent. */
	if (u->deref_len && rec->size >= sizeof(*u) + u->deref_len) {
		deref = (const __u8 *)(u + 1);
		dlen = u->deref_len;
	}
	for (int i = 0; s->ok && i < s->nfields; i++) {
		const struct cuda_field *f = &s->f[i];
		int ok = 1;

		switch (f->src) {
		case SRC_WORD:
			if (f->type == T_DIM3) {
				call_set(c, f->key == K_GRID ? K_GRID_X : K_BLOCK_X,
					 (__u32)u->args[f->word], T_U64);
				call_set(c, f->key == K_GRID ? K_GRID_Y : K_BLOCK_Y,
					 u->args[f->word] >> 32, T_U64);
				call_set(c, f->key == K_GRID ? K_GRID_Z : K_BLOCK_Z,
					 (__u32)u->args[f->word + 1], T_U64);
				continue;
			}
			v = narrow(u->args[f->word], f->type);
			break;
		case SRC_OUT:
			ok = c->code == 0; /* a failed call left nothing worth showing */
			v = u->out;
			break;
		case SRC_CONST:
			v = f->konst;
			break;
		default: /* SRC_DEREF */
			if (f->type == T_STR) {
				if (deref) {
					c->str = (const char *)deref;
					c->strn = dlen;
				}
				continue;
			}
			if (!deref || (__u32)f->off + type_size[f->type] > dlen) {
				ok = 0;
				break;
			}
			if (f->type == T_DIM3) {
				int base = f->key == K_GRID ? K_GRID_X : K_BLOCK_X;

				for (int d = 0; d < 3; d++)
					call_set(c, base + d, le_read(deref + f->off + 4 * d, 4),
						 T_U64);
				continue;
			}
			v = narrow(le_read(deref + f->off, type_size[f->type]), f->type);
			break;
		}
		if (f->key == K_BYTES) {
			nbytes++;
			bytes_lost |= !ok;
			bytes *= v;
			continue;
		}
		if (!ok)
			continue;
		/* A kind word outside cudaMemcpyKind must not read as PtoP or batch. */
		if (f->key == K_KIND && f->src != SRC_CONST && v > KIND_DEFAULT)
			v = KIND_UNKNOWN;
		call_set(c, f->key, v, f->type);
	}
	if (nbytes && !bytes_lost)
		call_set(c, K_BYTES, bytes, T_U64);
	if (c->have & (1ull << K_KIND))
		c->kind = (int)c->v[K_KIND];
	else if (c->have & (1ull << K_SRC_MT) && c->have & (1ull << K_DST_MT))
		c->kind = kind_of_mt(c->v[K_SRC_MT], c->v[K_DST_MT]);
	else if (c->api->group == CUDA_GRP_MEMCPY)
		c->kind = KIND_UNKNOWN;
	if (c->kind >= 0)
		call_set(c, K_KIND, c->kind, T_U64);
	pick_side(c, K_SRC_MT, K_SRC_HOST, K_SRC, K_SRC_ARR);
	pick_side(c, K_DST_MT, K_DST_HOST, K_DST, K_DST_ARR);
}

static const char *call_name(const struct bs_ucall *u, const struct cuda_call *c, char *buf,
			     size_t len)
{
	if (c->api)
		return c->api->name;
	snprintf(buf, len, "cuda_fn_%u", u->fn);
	return buf;
}

/* The name of a kernel, host function or handle in PID; BUF holds the hex fallback. */
static const char *func_name(const struct trace_model *m, __u32 pid, __u64 addr, char *buf,
			     size_t len)
{
	const char *name = trace_model__symbol(m, pid, addr);

	if (name)
		return name;
	snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	return buf;
}

static const char *code_name(const struct cuda_call *c)
{
	if (!c->api)
		return NULL;
	return c->api->flags & CUDA_F_DRIVER ? cuda_result_name(c->code) : cuda_error_name(c->code);
}

static int decode_call(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_ucall *u = (const void *)rec;
	struct cuda_call c;
	const char *err;
	char buf[32];

	cuda_call__read(rec, &c);
	ev->name = call_name(u, &c, ev->namebuf, sizeof(ev->namebuf));
	ev->dur = u->dur;
	event__arg_s64(ev, "ret", c.code);
	if (c.code) {
		err = code_name(&c);
		if (err) {
			event__arg_str(ev, "error", err);
		} else {
			const char *prefix = !c.api			    ? "error_"
					     : c.api->flags & CUDA_F_DRIVER ? "CUresult_"
									    : "cudaError_";

			snprintf(buf, sizeof(buf), "%s%d", prefix, c.code);
			event__arg_strn(ev, "error", buf, sizeof(buf));
		}
	}
	if (u->depth)
		event__arg_u64(ev, "depth", u->depth);
	for (int k = 0; k < K_SHOWN_NR; k++) {
		const char *key = keys[k].name, *name;

		if (!(c.have & (1ull << k))) {
			/* The record outlives the event: point into it when the string ends there. */
			if (k == K_NAME && c.str && memchr(c.str, 0, c.strn))
				event__arg_str(ev, key, c.str);
			else if (k == K_NAME && c.str)
				event__arg_strn(ev, key, c.str, c.strn);
			continue;
		}
		switch (keys[k].show) {
		case SHOW_NUM:
			if (c.is_signed & (1ull << k))
				event__arg_s64(ev, key, (__s64)c.v[k]);
			else
				event__arg_u64(ev, key, c.v[k]);
			break;
		case SHOW_HEX:
			event__arg_hex(ev, key, c.v[k]);
			break;
		case SHOW_KIND:
			event__arg_str(ev, key,
				       kind_names[c.v[k] < KIND_NR ? c.v[k] : KIND_NR - 1]);
			break;
		case SHOW_NAME:
			name = func_name(m, rec->pid, c.v[k], buf, sizeof(buf));
			if (name == buf)
				event__arg_strn(ev, key, buf, sizeof(buf));
			else
				event__arg_str(ev, key, name);
			break;
		default:
			break;
		}
	}
	return 1;
}

/*
 * "cuda_driver" for cu* calls (the Chrome export's cuda hook). A call made by an enclosing
 * traced call (depth > 0) lies inside it in time: on the thread's track.
 */
static const struct export_style call_style = { .cat = "cuda_runtime", .ph = 'X', .on_thread = 1 };

const struct rec_decoder cuda_decoders[] = {
	{ BS_REC_CUDA_CALL, sizeof(struct bs_ucall), "cuda_api", decode_call, &call_style },
	{ 0 },
};

/* The calls the reports count: records too short to be one are skipped, never read. */
static const struct bs_ucall *as_call(const struct bs_hdr *rec)
{
	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(struct bs_ucall))
		return NULL;
	return (const void *)rec;
}

/* ---- cuda_api_sum: nsys's, over the calls the application made (depth 0). ---- */
struct api_stat {
	struct samples samples;
	__u64 count, total, min, max;
};

struct api_sum {
	struct hmap *by_fn; /* {fn, 0} -> struct api_stat */
	int err;
};

static void *api_sum__new(void)
{
	struct api_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->by_fn = hmap__new(sizeof(struct api_stat));
	if (!st->by_fn) {
		free(st);
		return NULL;
	}
	return st;
}

static void api_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = as_call(rec);
	struct api_sum *st = vst;
	struct api_stat *a;

	/* A driver call made by the runtime is part of its caller's time: count it once. */
	if (!u || u->depth)
		return;
	a = hmap__get(st->by_fn, (struct hkey){ u->fn, 0 }, 1);
	if (!a || samples__add(&a->samples, (double)u->dur, 1)) {
		st->err = -ENOMEM;
		return;
	}
	if (!a->count || u->dur < a->min)
		a->min = u->dur;
	if (!a->count || u->dur > a->max)
		a->max = u->dur;
	a->count++;
	a->total += u->dur;
}

struct api_row {
	char name[64]; /* a copy: rows move while sorting */
	struct api_stat *a;
};

static int api_row_cmp(const void *x, const void *y)
{
	const struct api_row *a = x, *b = y;

	if (a->a->total != b->a->total)
		return a->a->total < b->a->total ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int api_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct api_sum *st = vst;
	struct api_row *rows;
	struct api_stat *a;
	size_t it = 0, n = 0, i;
	long double grand = 0;
	struct hkey key;
	int c[9], err;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->by_fn) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((a = hmap__next(st->by_fn, &it, &key))) {
		const struct ucall_api *api = ucall_table__api(&cuda_table, (__u32)key.a);

		if (api)
			snprintf(rows[n].name, sizeof(rows[n].name), "%s", api->name);
		else
			snprintf(rows[n].name, sizeof(rows[n].name), "cuda_fn_%u", (__u32)key.a);
		rows[n++].a = a;
		grand += a->total;
	}
	qsort(rows, n, sizeof(*rows), api_row_cmp);

	time_sum__cols(t, c);
	c[8] = table__add_col(t, "name", "Name", TABLE_STR);
	for (i = 0; i < n; i++) {
		a = rows[i].a;
		table__row(t);
		time_sum__set(t, c, a->count, a->total, a->min, a->max, &a->samples, grand);
		table__set_str(t, c[8], rows[i].name);
	}
	err = table__err(t);
	free(rows);
	return err;
}

static void api_sum__free(void *vst)
{
	struct api_sum *st = vst;
	struct api_stat *a;
	size_t it = 0;

	if (!st)
		return;
	while ((a = hmap__next(st->by_fn, &it, NULL)))
		samples__free(&a->samples);
	hmap__free(st->by_fn);
	free(st);
}

static const struct report cuda_api_sum = {
	.name = "cuda_api_sum",
	.desc = "CUDA API Summary",
	.new = api_sum__new,
	.add = api_sum__add,
	.emit = api_sum__emit,
	.free = api_sum__free,
};

/* ---- cuda_launch_sum: kernel launches per kernel name and launch shape. ---- */
struct launch_row {
	char *name;
	__u32 grid[3], block[3];
	__u64 shared;
	__u64 count, total;
};

struct launch_sum {
	struct hmap *idx; /* hash of the row's key -> row index + 1 */
	struct launch_row *rows;
	size_t n, cap;
	int err;
};

static void *launch_sum__new(void)
{
	struct launch_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->idx = hmap__new(sizeof(size_t));
	if (!st->idx) {
		free(st);
		return NULL;
	}
	return st;
}

static __u64 fnv64(__u64 h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int launch_row_is(const struct launch_row *r, const char *name, const __u32 *grid,
			 const __u32 *block, __u64 shared)
{
	return !strcmp(r->name, name) && !memcmp(r->grid, grid, sizeof(r->grid)) &&
	       !memcmp(r->block, block, sizeof(r->block)) && r->shared == shared;
}

static struct launch_row *launch_row_get(struct launch_sum *st, const char *name, const __u32 *grid,
					 const __u32 *block, __u64 shared)
{
	__u64 shape = fnv64(fnv64(fnv64(0xcbf29ce484222325ull, grid, 12), block, 12), &shared, 8);
	struct hkey key = { fnv64(0xcbf29ce484222325ull, name, strlen(name)), shape };
	struct launch_row *r;
	size_t *slot;

	/* Keys are hashes: a collision moves on to the next key until the row matches. */
	for (;;) {
		slot = hmap__get(st->idx, key, 1);
		if (!slot)
			return NULL;
		if (!*slot)
			break;
		if (launch_row_is(&st->rows[*slot - 1], name, grid, block, shared))
			return &st->rows[*slot - 1];
		key.b += 0x9e3779b97f4a7c15ull;
	}
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		struct launch_row *rows = realloc(st->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		st->rows = rows;
		st->cap = cap;
	}
	r = &st->rows[st->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	if (!r->name)
		return NULL;
	memcpy(r->grid, grid, sizeof(r->grid));
	memcpy(r->block, block, sizeof(r->block));
	r->shared = shared;
	*slot = ++st->n;
	return r;
}

static void launch_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = as_call(rec);
	struct launch_sum *st = vst;
	__u32 grid[3], block[3];
	struct launch_row *r;
	struct cuda_call c;
	const char *name;
	char buf[32];

	if (!u || u->depth)
		return;
	cuda_call__read(rec, &c);
	if (!c.api || c.api->group != CUDA_GRP_LAUNCH || !(c.have & (1ull << K_KERNEL)))
		return;
	for (int d = 0; d < 3; d++) {
		grid[d] = (__u32)c.v[K_GRID_X + d];
		block[d] = (__u32)c.v[K_BLOCK_X + d];
	}
	name = func_name(m, rec->pid, c.v[K_KERNEL], buf, sizeof(buf));
	r = launch_row_get(st, name, grid, block,
			   c.have & (1ull << K_SHARED_BYTES) ? c.v[K_SHARED_BYTES] : 0);
	if (!r) {
		st->err = -ENOMEM;
		return;
	}
	r->count++;
	r->total += u->dur;
}

static int launch_row_cmp(const void *x, const void *y)
{
	const struct launch_row *a = x, *b = y;
	int d;

	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	d = strcmp(a->name, b->name);
	if (d)
		return d;
	d = memcmp(a->grid, b->grid, sizeof(a->grid));
	if (d)
		return d;
	d = memcmp(a->block, b->block, sizeof(a->block));
	if (d)
		return d;
	return (a->shared > b->shared) - (a->shared < b->shared);
}

static int launch_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct launch_sum *st = vst;
	char dims[40];
	int c[6];

	if (st->err)
		return st->err;
	/* The index points at rows by position: it is not used after this sort. */
	if (st->n) /* rows is NULL until the first launch */
		qsort(st->rows, st->n, sizeof(*st->rows), launch_row_cmp);
	c[0] = table__add_col(t, "count", "Num Launches", TABLE_U64);
	c[1] = table__add_col(t, "total_ns", "Total API Time (ns)", TABLE_U64);
	c[2] = table__add_col(t, "grid", "Grid", TABLE_STR);
	c[3] = table__add_col(t, "block", "Block", TABLE_STR);
	c[4] = table__add_col(t, "shared_bytes", "Shared (B)", TABLE_U64);
	c[5] = table__add_col(t, "name", "Kernel", TABLE_STR);
	for (size_t i = 0; i < st->n; i++) {
		const struct launch_row *r = &st->rows[i];

		table__row(t);
		table__set_u64(t, c[0], r->count);
		table__set_u64(t, c[1], r->total);
		snprintf(dims, sizeof(dims), "%ux%ux%u", r->grid[0], r->grid[1], r->grid[2]);
		table__set_str(t, c[2], dims);
		snprintf(dims, sizeof(dims), "%ux%ux%u", r->block[0], r->block[1], r->block[2]);
		table__set_str(t, c[3], dims);
		table__set_u64(t, c[4], r->shared);
		table__set_str(t, c[5], r->name);
	}
	return table__err(t);
}

static void launch_sum__free(void *vst)
{
	struct launch_sum *st = vst;

	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		free(st->rows[i].name);
	free(st->rows);
	hmap__free(st->idx);
	free(st);
}

static const struct report cuda_launch_sum = {
	.name = "cuda_launch_sum",
	.desc = "CUDA Kernel Launches by Kernel and Shape",
	.new = launch_sum__new,
	.add = launch_sum__add,
	.emit = launch_sum__emit,
	.free = launch_sum__free,
};

/* ---- cuda_memcpy_sum: copy and memset calls per direction (CPU time of the calls). ---- */
#define MEMSET_ROW KIND_NR

struct memcpy_stat {
	__u64 count, total, min, max, bytes, nbytes; /* nbytes: calls whose size is known */
};

struct memcpy_sum {
	struct memcpy_stat rows[KIND_NR + 1];
};

static void *memcpy_sum__new(void)
{
	return calloc(1, sizeof(struct memcpy_sum));
}

static void memcpy_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = as_call(rec);
	struct memcpy_sum *st = vst;
	struct memcpy_stat *r;
	struct cuda_call c;

	if (!u || u->depth)
		return;
	cuda_call__read(rec, &c);
	if (!c.api)
		return;
	if (c.api->group == CUDA_GRP_MEMSET)
		r = &st->rows[MEMSET_ROW];
	else if (c.api->group == CUDA_GRP_MEMCPY && c.kind >= 0 && c.kind < KIND_NR)
		r = &st->rows[c.kind];
	else
		return;
	if (!r->count || u->dur < r->min)
		r->min = u->dur;
	if (!r->count || u->dur > r->max)
		r->max = u->dur;
	r->count++;
	r->total += u->dur;
	if (c.have & (1ull << K_BYTES)) {
		r->bytes += c.v[K_BYTES];
		r->nbytes++;
	}
}

struct memcpy_row {
	const char *name;
	const struct memcpy_stat *s;
};

static int memcpy_row_cmp(const void *x, const void *y)
{
	const struct memcpy_row *a = x, *b = y;

	if (a->s->total != b->s->total)
		return a->s->total < b->s->total ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int memcpy_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct memcpy_row rows[KIND_NR + 1];
	struct memcpy_sum *st = vst;
	int c[7], n = 0;

	for (int i = 0; i <= KIND_NR; i++) {
		if (!st->rows[i].count)
			continue;
		rows[n].name = i == MEMSET_ROW ? "memset" : kind_names[i];
		rows[n++].s = &st->rows[i];
	}
	qsort(rows, n, sizeof(rows[0]), memcpy_row_cmp);
	c[0] = table__add_col(t, "total_ns", "Total Time (ns)", TABLE_U64);
	c[1] = table__add_col(t, "count", "Count", TABLE_U64);
	c[2] = table__add_col(t, "bytes", "Total (B)", TABLE_U64);
	c[3] = table__add_col(t, "avg_ns", "Avg (ns)", TABLE_DOUBLE);
	c[4] = table__add_col(t, "min_ns", "Min (ns)", TABLE_U64);
	c[5] = table__add_col(t, "max_ns", "Max (ns)", TABLE_U64);
	c[6] = table__add_col(t, "name", "Operation", TABLE_STR);
	for (int i = 0; i < n; i++) {
		const struct memcpy_stat *s = rows[i].s;

		table__row(t);
		table__set_u64(t, c[0], s->total);
		table__set_u64(t, c[1], s->count);
		if (s->nbytes) /* batch copies: the sizes are not in the record */
			table__set_u64(t, c[2], s->bytes);
		table__set_double(t, c[3], (double)s->total / s->count);
		table__set_u64(t, c[4], s->min);
		table__set_u64(t, c[5], s->max);
		table__set_str(t, c[6], rows[i].name);
	}
	return table__err(t);
}

static void memcpy_sum__free(void *vst)
{
	free(vst);
}

static const struct report cuda_memcpy_sum = {
	.name = "cuda_memcpy_sum",
	.desc = "CUDA Memory Copy and Memset Calls by Direction",
	.new = memcpy_sum__new,
	.add = memcpy_sum__add,
	.emit = memcpy_sum__emit,
	.free = memcpy_sum__free,
};

/* ---- cuda_err_sum: failed calls per function and code, nested driver calls included. ---- */
struct err_sum {
	struct hmap *counts; /* {fn, (u32)code} -> __u64 */
	int err;
};

static void *err_sum__new(void)
{
	struct err_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->counts = hmap__new(sizeof(__u64));
	if (!st->counts) {
		free(st);
		return NULL;
	}
	return st;
}

static void err_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = as_call(rec);
	struct err_sum *st = vst;
	__u64 *n;

	/* Nested calls count too: the driver's code is often the cause of the runtime's. */
	if (!u || !(__s32)u->ret)
		return;
	n = hmap__get(st->counts, (struct hkey){ u->fn, (__u32)u->ret }, 1);
	if (!n) {
		st->err = -ENOMEM;
		return;
	}
	(*n)++;
}

struct err_row {
	char name[64];
	__u32 fn;
	__s32 code;
	__u64 count;
};

static int err_row_cmp(const void *x, const void *y)
{
	const struct err_row *a = x, *b = y;
	int d;

	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	d = strcmp(a->name, b->name);
	if (d)
		return d;
	return (a->code > b->code) - (a->code < b->code);
}

static int err_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct err_sum *st = vst;
	struct err_row *rows;
	size_t it = 0, n = 0;
	struct hkey key;
	int c[4], err;
	__u64 *cnt;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->counts) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((cnt = hmap__next(st->counts, &it, &key))) {
		const struct ucall_api *api = ucall_table__api(&cuda_table, (__u32)key.a);

		rows[n].fn = (__u32)key.a;
		rows[n].code = (__s32)key.b;
		rows[n].count = *cnt;
		if (api)
			snprintf(rows[n].name, sizeof(rows[n].name), "%s", api->name);
		else
			snprintf(rows[n].name, sizeof(rows[n].name), "cuda_fn_%u", rows[n].fn);
		n++;
	}
	qsort(rows, n, sizeof(*rows), err_row_cmp);
	c[0] = table__add_col(t, "count", "Count", TABLE_U64);
	c[1] = table__add_col(t, "code", "Code", TABLE_S64);
	c[2] = table__add_col(t, "error", "Error", TABLE_STR);
	c[3] = table__add_col(t, "name", "Name", TABLE_STR);
	for (size_t i = 0; i < n; i++) {
		const struct ucall_api *api = ucall_table__api(&cuda_table, rows[i].fn);

		table__row(t);
		table__set_u64(t, c[0], rows[i].count);
		table__set_s64(t, c[1], rows[i].code);
		if (api)
			table__set_str(t, c[2],
				       api->flags & CUDA_F_DRIVER ? cuda_result_name(rows[i].code)
								  : cuda_error_name(rows[i].code));
		table__set_str(t, c[3], rows[i].name);
	}
	err = table__err(t);
	free(rows);
	return err;
}

static void err_sum__free(void *vst)
{
	struct err_sum *st = vst;

	if (!st)
		return;
	hmap__free(st->counts);
	free(st);
}

static const struct report cuda_err_sum = {
	.name = "cuda_err_sum",
	.desc = "CUDA API Errors",
	.new = err_sum__new,
	.add = err_sum__add,
	.emit = err_sum__emit,
	.free = err_sum__free,
};

const struct report *const cuda_reports[] = {
	&cuda_api_sum, &cuda_launch_sum, &cuda_memcpy_sum, &cuda_err_sum, NULL,
};
