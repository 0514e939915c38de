// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family's tables in the SQLite export, nsys's where nsys has them:
 *   GPU_METRICS              nsys's table and columns: a row per metric per sample,
 *                            timestamp (ns), typeId (the GPU: nsys's typeId & 0xff), metricId,
 *                            value, the value as recorded (exact: an integer, or GPM's double)
 *   TARGET_INFO_GPU_METRICS  nsys's: per GPU and metric, typeId, sourceId (the GPU), typeName
 *                            (its model), metricId, metricName ("SM Active [%]", "Power
 *                            [mW]": the unit of value)
 *   BPFSIGHT_GPU_DEVICES     each device: its identity, what it lacks and why, whether lost
 *   BPFSIGHT_GPU_PROCESSES   a process's use of a GPU, as NVML accounts it
 * A metric a device lacks has no row (not 0). Memory: the statements, a bit per GPU and metric.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_sqlite.h"
#include "gpumetrics.h"

static const char gpum_schema[] =
	"CREATE TABLE GPU_METRICS (timestamp INTEGER NOT NULL, typeId INTEGER NOT NULL,"
	" metricId INTEGER NOT NULL, value INTEGER NOT NULL);"
	"CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT"
	" NULL, typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL);"
	"CREATE TABLE BPFSIGHT_GPU_DEVICES (timestamp INTEGER NOT NULL, deviceId INTEGER NOT NULL,"
	" name TEXT NOT NULL, uuid TEXT NOT NULL, busId TEXT NOT NULL, totalMemory INTEGER,"
	" powerLimitMw INTEGER, gpm INTEGER NOT NULL, lost INTEGER NOT NULL, unsupported TEXT,"
	" denied TEXT);"
	"CREATE TABLE BPFSIGHT_GPU_PROCESSES (timestamp INTEGER NOT NULL, globalPid INTEGER NOT"
	" NULL, deviceId INTEGER NOT NULL, smUtil INTEGER, memUtil INTEGER, encUtil INTEGER,"
	" decUtil INTEGER, usedMemory INTEGER);";

static const char gpum_indexes[] =
	"CREATE INDEX GPU_METRICS_ts ON GPU_METRICS(timestamp);"
	"CREATE INDEX GPU_METRICS_metric ON GPU_METRICS(typeId, metricId);";

enum { Q_METRIC, Q_INFO, Q_DEVICE, Q_PROC, Q_N };

static const char *const gpum_sql[Q_N] = {
	[Q_METRIC] = "INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)",
	[Q_INFO] = "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, ?, ?, ?, ?)",
	[Q_DEVICE] = "INSERT INTO BPFSIGHT_GPU_DEVICES VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[Q_PROC] = "INSERT INTO BPFSIGHT_GPU_PROCESSES VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
};

struct sq_gpum {
	struct sq_stmts *q;
	__u64 described[GPUM_MAX_DEVICES]; /* metrics with a TARGET_INFO_GPU_METRICS row */
};

static int gpum_open(struct sq *s, void **st)
{
	struct sq_gpum *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	*st = g;
	err = sq_stmts__open(s, gpum_sql, Q_N, (void **)&g->q);
	return err;
}

static void gpum_free(void *st)
{
	struct sq_gpum *g = st;

	if (g)
		sq_stmts__free(g->q);
	free(g);
}

static int describe(struct sq *s, struct sq_gpum *g, __u32 dev, unsigned k,
		    const struct trace_model *m)
{
	const struct gpum_walk *w = gpum_walk__of(m);
	sqlite3_stmt *q = g->q->stmt[Q_INFO];
	char name[96];

	g->described[dev] |= GPUM_BIT(k);
	snprintf(name, sizeof(name), "%s [%s]", gpum_metrics[k].title, gpum_metrics[k].raw);
	sqlite3_bind_int64(q, 1, dev);
	sqlite3_bind_int64(q, 2, dev);
	sq_bind_text(q, 3, w && w->dev[dev].known ? w->dev[dev].info.name : "");
	sqlite3_bind_int64(q, 4, k);
	sq_bind_text(q, 5, name);
	return sq_run(s, q);
}

static int sample_rows(struct sq *s, struct sq_gpum *g, const struct bs_hdr *rec,
		       const struct trace_model *m)
{
	sqlite3_stmt *q = g->q->stmt[Q_METRIC];
	__u64 have, val[GPUM_NMETRICS];
	__u32 dev;
	int err = 0;

	if (gpum_sample__read(gpum_walk__of(m), rec, &dev, &have, val))
		return 0;
	for (unsigned k = 0; k < GPUM_NMETRICS && !err; k++) {
		if (!(have & GPUM_BIT(k)))
			continue;
		if (!(g->described[dev] & GPUM_BIT(k)) && (err = describe(s, g, dev, k, m)))
			break;
		sqlite3_bind_int64(q, 1, (__s64)rec->ts);
		sqlite3_bind_int64(q, 2, dev);
		sqlite3_bind_int64(q, 3, k);
		if (GPUM_DOUBLES & GPUM_BIT(k))
			sqlite3_bind_double(q, 4, gpum_value(k, val[k]));
		else
			sqlite3_bind_int64(q, 4, (__s64)val[k]);
		err = sq_run(s, q);
	}
	return err;
}

static int device_row(struct sq *s, struct sq_gpum *g, const struct bs_hdr *rec,
		      const struct event *ev)
{
	const struct bs_gpum_device *d = (const void *)rec;
	sqlite3_stmt *q = g->q->stmt[Q_DEVICE];

	sqlite3_bind_int64(q, 1, (__s64)rec->ts);
	sqlite3_bind_int64(q, 2, d->device);
	sq_bind_arg(q, 3, ev, "model");
	sq_bind_arg(q, 4, ev, "uuid");
	sq_bind_arg(q, 5, ev, "bus_id");
	if (d->mem_total)
		sqlite3_bind_int64(q, 6, (__s64)d->mem_total);
	if (d->power_limit)
		sqlite3_bind_int64(q, 7, d->power_limit);
	sqlite3_bind_int(q, 8, !!(d->flags & BS_GPUM_DEV_GPM));
	sqlite3_bind_int(q, 9, !!(d->flags & BS_GPUM_DEV_LOST));
	sq_bind_arg(q, 10, ev, "unsupported");
	sq_bind_arg(q, 11, ev, "denied");
	return sq_run(s, q);
}

static int proc_row(struct sq *s, struct sq_gpum *g, const struct bs_hdr *rec)
{
	const struct bs_gpum_proc *p = (const void *)rec;
	sqlite3_stmt *q = g->q->stmt[Q_PROC];
	static const __u32 bits[] = { BS_GPUM_PROC_SM, BS_GPUM_PROC_MEM, BS_GPUM_PROC_ENC,
				      BS_GPUM_PROC_DEC };
	const __u32 vals[] = { p->sm_util, p->mem_util, p->enc_util, p->dec_util };

	sqlite3_bind_int64(q, 1, (__s64)rec->ts);
	sqlite3_bind_int64(q, 2, global_tid(rec->pid, 0));
	sqlite3_bind_int64(q, 3, p->device);
	for (int i = 0; i < 4; i++)
		if (p->have & bits[i])
			sqlite3_bind_int64(q, 4 + i, vals[i]);
	if (p->have & BS_GPUM_PROC_USED)
		sqlite3_bind_int64(q, 8, (__s64)p->used_mem);
	return sq_run(s, q);
}

static int gpum_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	switch (rec->type) {
	case BS_REC_GPUM_KEY:
	case BS_REC_GPUM_SAMPLE:
		return sample_rows(s, st, rec, m);
	case BS_REC_GPUM_DEVICE:
		return ev ? device_row(s, st, rec, ev) : 0;
	case BS_REC_GPUM_PROC:
		return proc_row(s, st, rec);
	default:
		return 0;
	}
}

const struct sqlite_family gpum_sqlite = {
	.schema = gpum_schema,
	.indexes = gpum_indexes,
	.open = gpum_open,
	.free = gpum_free,
	.record = gpum_record,
};
