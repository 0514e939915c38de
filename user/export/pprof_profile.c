// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A profile.proto being built (pprof_profile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "array.h"
#include "hmap.h"
#include "pb.h"
#include "pprof_profile.h"
#include "stack_format.h"
#include "trace_model.h"

/* profile.proto field numbers. */
enum {
	P_SAMPLE_TYPE = 1,
	P_SAMPLE = 2,
	P_LOCATION = 4,
	P_FUNCTION = 5,
	P_STRING = 6,
	P_TIME = 9,
	P_DURATION = 10,
	P_PERIOD_TYPE = 11,
	P_PERIOD = 12,
	P_DEFAULT_TYPE = 14,
};

struct pprof_profile {
	struct hmap *strs; /* (hash, len | probe << 32) -> __u64 index + 1 */
	char **str;
	__u64 nstr;
	size_t capstr;
	struct hmap *funcs; /* (name index, file index) -> __u64 id */
	struct hmap *locs;  /* (frame identity) -> __u64 id */
	struct pb body;	    /* sample types and samples, as they come */
	struct pb tables;   /* functions and locations, written as they are met */
	__u64 samples;
	int err;
};

static __u64 fnv(const char *s)
{
	__u64 h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The string table index of S (interned: compared, never trusted to a hash alone). */
static __u64 str_index(struct pprof_profile *p, const char *s)
{
	size_t len = strlen(s);

	for (__u64 probe = 0;; probe++) {
		__u64 *v = hmap__get(p->strs, (struct hkey){ fnv(s), len | probe << 32 }, 1);

		if (!v)
			break;
		if (*v && !strcmp(p->str[*v - 1], s))
			return *v - 1;
		if (*v)
			continue; /* another string with this hash and length */
		if (array__grow((void **)&p->str, p->nstr, &p->capstr, sizeof(*p->str)))
			break;
		p->str[p->nstr] = strdup(s);
		if (!p->str[p->nstr])
			break;
		*v = ++p->nstr;
		return p->nstr - 1;
	}
	p->err = -ENOMEM;
	return 0;
}

struct pprof_profile *pprof_profile__new(void)
{
	struct pprof_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->strs = hmap__new(sizeof(__u64));
	p->funcs = hmap__new(sizeof(__u64));
	p->locs = hmap__new(sizeof(__u64));
	if (!p->strs || !p->funcs || !p->locs || pb__init(&p->body, 0) || pb__init(&p->tables, 0)) {
		pprof_profile__free(p);
		return NULL;
	}
	str_index(p, ""); /* string_table[0] is "" */
	return p;
}

void pprof_profile__free(struct pprof_profile *p)
{
	if (!p)
		return;
	for (__u64 i = 0; i < p->nstr; i++)
		free(p->str[i]);
	free(p->str);
	pb__free(&p->body);
	pb__free(&p->tables);
	hmap__free(p->strs);
	hmap__free(p->funcs);
	hmap__free(p->locs);
	free(p);
}

static void value_type(struct pprof_profile *p, __u32 field, const char *type, const char *unit)
{
	__u64 t = str_index(p, type), u = str_index(p, unit);

	pb__begin(&p->body, field);
	pb__int(&p->body, 1, t);
	pb__int(&p->body, 2, u);
	pb__end(&p->body);
}

void pprof_profile__sample_type(struct pprof_profile *p, const char *type, const char *unit)
{
	value_type(p, P_SAMPLE_TYPE, type, unit);
}

/* The function id of (NAME, FILE), writing its Function message when new. */
static __u64 func_id(struct pprof_profile *p, const char *name, const char *file)
{
	__u64 ni = str_index(p, name), fi = str_index(p, file);
	__u64 *id = hmap__get(p->funcs, (struct hkey){ ni, fi }, 1);

	if (!id)
		return 0;
	if (!*id) {
		*id = hmap__count(p->funcs);
		pb__begin(&p->tables, P_FUNCTION);
		pb__uint(&p->tables, 1, *id);
		pb__int(&p->tables, 2, ni);
		pb__int(&p->tables, 3, ni);
		pb__int(&p->tables, 4, fi);
		pb__end(&p->tables);
	}
	return *id;
}

/* The location id of frame F (or of a marker frame named TEXT), written when new. */
static __u64 loc_id(struct pprof_profile *p, const struct trace_model *m, const struct bs_frame *f,
		    const char *text)
{
	char buf[512];
	const char *name = text ? text : stack_frame__func(f, m, buf, sizeof(buf));
	__u64 fid = func_id(p, name, f ? stack_frame__file(f, m) : "");
	__u64 addr = f && f->kind == BS_FRAME_NATIVE ? f->addr : 0;
	__u64 line = f && f->kind == BS_FRAME_PYTHON ? f->line : 0;
	__u64 *id = hmap__get(p->locs, (struct hkey){ fid, addr ^ line << 48 }, 1);

	if (!id)
		return 0;
	if (!*id) {
		*id = hmap__count(p->locs);
		pb__begin(&p->tables, P_LOCATION);
		pb__uint(&p->tables, 1, *id);
		if (addr)
			pb__uint(&p->tables, 3, addr);
		pb__begin(&p->tables, 4); /* Line */
		pb__uint(&p->tables, 1, fid);
		if (line)
			pb__int(&p->tables, 2, line);
		pb__end(&p->tables);
		pb__end(&p->tables);
	}
	return *id;
}

void pprof_profile__sample(struct pprof_profile *p, const struct trace_model *m,
			   const struct trace_stack *s, const char *lead, const char *none)
{
	struct pb *pb = &p->body;

	p->samples++;
	pb__begin(pb, P_SAMPLE);
	if (lead)
		pb__uint(pb, 1, loc_id(p, m, NULL, lead));
	for (__u32 i = 0; s && i < s->nframes; i++)
		pb__uint(pb, 1, loc_id(p, m, &s->frames[i], NULL));
	if (s && (s->flags & BS_STACK_TRUNCATED))
		pb__uint(pb, 1, loc_id(p, m, NULL, "[truncated]"));
	if (!s || !s->nframes)
		pb__uint(pb, 1, loc_id(p, m, NULL, none));
}

void pprof_profile__value(struct pprof_profile *p, __s64 v)
{
	pb__int(&p->body, 2, v);
}

static void label(struct pprof_profile *p, const char *key, __u64 str, __s64 num)
{
	__u64 k = str_index(p, key);

	pb__begin(&p->body, 3);
	pb__int(&p->body, 1, k);
	if (str)
		pb__int(&p->body, 2, str);
	else
		pb__int(&p->body, 3, num);
	pb__end(&p->body);
}

void pprof_profile__label_num(struct pprof_profile *p, const char *key, __s64 num)
{
	label(p, key, 0, num);
}

void pprof_profile__label_str(struct pprof_profile *p, const char *key, const char *str)
{
	label(p, key, str_index(p, str), 0);
}

void pprof_profile__sample_end(struct pprof_profile *p)
{
	pb__end(&p->body);
}

__u64 pprof_profile__samples(const struct pprof_profile *p)
{
	return p->samples;
}

int pprof_profile__write(struct pprof_profile *p, int fd, const char *period_type,
			 const char *period_unit, __s64 period, __u64 time_ns, __u64 dur_ns,
			 const char *default_type)
{
	gzFile gz = gzdopen(fd, "wb");
	int err = p->err;

	if (!gz) {
		close(fd);
		return -ENOMEM;
	}
	value_type(p, P_PERIOD_TYPE, period_type, period_unit);
	pb__int(&p->body, P_PERIOD, period);
	if (time_ns) {
		pb__int(&p->body, P_TIME, time_ns);
		pb__int(&p->body, P_DURATION, dur_ns);
	}
	pb__int(&p->body, P_DEFAULT_TYPE, str_index(p, default_type));
	for (__u64 i = 0; i < p->nstr; i++)
		pb__string(&p->tables, P_STRING, p->str[i]);
	if (!err)
		err = p->err ?: pb__err(&p->body) ?: pb__err(&p->tables);
	if (!err && (gzwrite(gz, p->body.buf, p->body.len) != (int)p->body.len ||
		     gzwrite(gz, p->tables.buf, p->tables.len) != (int)p->tables.len))
		err = -EIO;
	if (gzclose(gz) != Z_OK && !err)
		err = -EIO;
	return err;
}
