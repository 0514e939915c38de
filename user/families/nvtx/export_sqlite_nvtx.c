// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's table in the SQLite export: nsys's NVTX_EVENTS, with nsys's columns in
 * nsys's order, and ENUM_NSYS_EVENT_TYPE, the event types it uses (nsys's values): one row per
 * range and mark, per name given to a thread or a category, and per domain the first time a
 * process uses it (NvtxDomainCreate).
 *
 * Memory: the statement and the set of domains per process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_sqlite.h"
#include "nvtx.h"
#include "nvtx_decode.h"
#include "hmap.h"

/* nsys's ENUM_NSYS_EVENT_TYPE values for NVTX. */
#define NVTX_T_CATEGORY	     33
#define NVTX_T_MARK	     34
#define NVTX_T_THREAD	     39
#define NVTX_T_PUSHPOP	     59
#define NVTX_T_STARTEND	     60
#define NVTX_T_DOMAIN_CREATE 75

static const char nvtx_schema[] =
	"CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (33, 'NvtxCategory', 'NvtxCategory'),"
	" (34, 'NvtxMark', 'NvtxMark'), (39, 'NvtxThread', 'NvtxThread'),"
	" (59, 'NvtxPushPopRange', 'NvtxPushPopRange'),"
	" (60, 'NvtxStartEndRange', 'NvtxStartEndRange'),"
	" (75, 'NvtxDomainCreate', 'NvtxDomainCreate');"
	"CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER,"
	" eventType INTEGER NOT NULL REFERENCES ENUM_NSYS_EVENT_TYPE(id), rangeId INTEGER,"
	" category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,"
	" textId INTEGER REFERENCES StringIds(id), domainId INTEGER, uint64Value INTEGER,"
	" int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,"
	" floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);";

static const char nvtx_indexes[] = "CREATE INDEX NVTX_EVENTS_start ON NVTX_EVENTS(start);"
				   "CREATE INDEX NVTX_EVENTS_globalTid ON NVTX_EVENTS(globalTid);";

static const char *const nvtx_sql[] = {
	"INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
	" ?, NULL, NULL, NULL)",
};

struct sq_nvtx {
	sqlite3_stmt *stmt;
	struct hmap *domains; /* {pid, domain id} -> u8: NvtxDomainCreate written */
};

static void nvtx_free(void *st)
{
	struct sq_nvtx *n = st;

	sq_finalize(&n->stmt, 1);
	hmap__free(n->domains);
	free(n);
}

static int nvtx_open(struct sq *s, void **st)
{
	struct sq_nvtx *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	*st = n;
	n->domains = hmap__new(1);
	if (!n->domains)
		return -ENOMEM;
	return sq_prepare(s, nvtx_sql, &n->stmt, 1);
}

/* The NvtxDomainCreate row of a domain, the first time a process uses it. */
static int nvtx_domain(struct sq *s, struct sq_nvtx *n, const struct bs_hdr *rec, __u32 domain_id,
		       const struct trace_model *m)
{
	sqlite3_stmt *st = n->stmt;
	struct hkey key = { rec->pid, domain_id };

	if (!domain_id || hmap__get(n->domains, key, 0))
		return 0;
	if (!hmap__get(n->domains, key, 1))
		return -ENOMEM;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int(st, 3, NVTX_T_DOMAIN_CREATE);
	sq_bind_text(st, 7, nvtx_domain_name(m, domain_id));
	sqlite3_bind_int64(st, 8, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 11, domain_id);
	return sq_run(s, st);
}

/* The message, inline (text) or, for a registered string, by StringIds (textId), as nsys. */
static int nvtx_text(struct sq *s, sqlite3_stmt *st, const char *text, int registered)
{
	int err = 0;
	__u32 id;

	if (!registered) {
		sq_bind_text(st, 7, text);
		return 0;
	}
	id = sq_intern(s, text, &err);
	if (!id)
		return err;
	sqlite3_bind_int64(st, 10, id);
	return 0;
}

static void nvtx_payload(sqlite3_stmt *st, __u16 flags, __u64 raw)
{
	__u32 lo = (__u32)raw;
	double d;
	float f;

	switch (flags & BS_NVTX_PAYLOAD_MASK) {
	case BS_NVTX_PAYLOAD_U64:
		sqlite3_bind_int64(st, 12, (__s64)raw);
		break;
	case BS_NVTX_PAYLOAD_I64:
		sqlite3_bind_int64(st, 13, (__s64)raw);
		break;
	case BS_NVTX_PAYLOAD_F64:
		memcpy(&d, &raw, sizeof(d));
		sqlite3_bind_double(st, 14, d);
		break;
	case BS_NVTX_PAYLOAD_U32:
		sqlite3_bind_int64(st, 15, lo);
		break;
	case BS_NVTX_PAYLOAD_I32:
		sqlite3_bind_int64(st, 16, (__s32)lo);
		break;
	case BS_NVTX_PAYLOAD_F32:
		memcpy(&f, &lo, sizeof(f));
		sqlite3_bind_double(st, 17, f);
		break;
	default:
		break;
	}
}

/* A range or a mark. An open range (recording stopped first) has no end: NULL. */
static int nvtx_event(struct sq *s, struct sq_nvtx *n, const struct bs_hdr *rec,
		      const struct event *ev, const struct trace_model *m)
{
	const struct bs_nvtx_range *r = (const void *)rec;
	const struct bs_nvtx_mark *k = (const void *)rec;
	sqlite3_stmt *st = n->stmt;
	int range = rec->type == BS_REC_NVTX_RANGE;
	__u32 domain = range ? r->domain_id : k->domain_id;
	__u16 flags = range ? r->flags : k->flags;
	int err;

	err = nvtx_domain(s, n, rec, domain, m);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, rec->ts);
	if (range && !(flags & BS_NVTX_OPEN))
		sqlite3_bind_int64(st, 2, rec->ts + r->dur);
	sqlite3_bind_int(st, 3,
			 !range			   ? NVTX_T_MARK
			 : flags & BS_NVTX_PUSHPOP ? NVTX_T_PUSHPOP
						   : NVTX_T_STARTEND);
	if (range && !(flags & BS_NVTX_PUSHPOP))
		sqlite3_bind_int64(st, 4, (__s64)r->range_id);
	sqlite3_bind_int64(st, 5, range ? r->category : k->category);
	if (flags & BS_NVTX_COLOR)
		sqlite3_bind_int64(st, 6, range ? r->color : k->color);
	err = nvtx_text(s, st, ev->name, !!(flags & BS_NVTX_REGISTERED));
	if (err) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return err;
	}
	sqlite3_bind_int64(st, 8, global_tid(rec->pid, rec->tid));
	if (range)
		sqlite3_bind_int64(st, 9, global_tid(rec->pid, r->end_tid));
	sqlite3_bind_int64(st, 11, domain);
	nvtx_payload(st, flags, range ? r->payload : k->payload);
	return sq_run(s, st);
}

/* nvtxNameOsThread and nvtxNameCategory, as nsys keeps them. */
static int nvtx_name(struct sq *s, struct sq_nvtx *n, const struct bs_hdr *rec,
		     const struct event *ev, const struct trace_model *m)
{
	const struct bs_nvtx_name *nm = (const void *)rec;
	sqlite3_stmt *st = n->stmt;
	int err;

	if (nm->kind != BS_NVTX_NAME_THREAD && nm->kind != BS_NVTX_NAME_CATEGORY)
		return 0;
	err = nvtx_domain(s, n, rec, nm->domain_id, m);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, rec->ts);
	if (nm->kind == BS_NVTX_NAME_THREAD) {
		sqlite3_bind_int(st, 3, NVTX_T_THREAD);
		sqlite3_bind_int64(st, 8, global_tid(rec->pid, (__u32)nm->key));
	} else {
		sqlite3_bind_int(st, 3, NVTX_T_CATEGORY);
		sqlite3_bind_int64(st, 5, (__s64)nm->key);
		sqlite3_bind_int64(st, 8, global_tid(rec->pid, rec->tid));
	}
	sq_bind_text(st, 7, ev->name);
	sqlite3_bind_int64(st, 11, nm->domain_id);
	return sq_run(s, st);
}

static int nvtx_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	if (!ev)
		return 0;
	switch (rec->type) {
	case BS_REC_NVTX_RANGE:
	case BS_REC_NVTX_MARK:
		return nvtx_event(s, st, rec, ev, m);
	case BS_REC_NVTX_NAME:
		return nvtx_name(s, st, rec, ev, m);
	default:
		return 0;
	}
}

const struct sqlite_family nvtx_sqlite = {
	.schema = nvtx_schema,
	.indexes = nvtx_indexes,
	.open = nvtx_open,
	.free = nvtx_free,
	.record = nvtx_record,
};
