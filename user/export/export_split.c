// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A merged file (bpfsight merge) exported as one file per rank, into a directory: what
 * Holistic Trace Analysis reads (a directory of Kineto traces, each with its
 * distributedInfo's rank). One pass: each record goes to the exporter of its rank, found by
 * its pid (a rank's own process, else the first rank of the pid's namespace: processes beside
 * the rank's in its file; pid 0, the file's losses, to the section being read).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "export_split.h"
#include "trace_ranks.h"
#include "msg.h"
#include "sudo_owner.h"

struct part {
	void *st;
	char *path;
};

struct split {
	const struct exporter *ex;
	struct trace_meta meta; /* the merged file's */
	const char *dir, *suffix;
	int force;
	struct part *parts; /* by the rank's index in the file (trace_ranks order) */
	__u32 nparts, cur;
	int err;
};

int export_split__is_merged(const struct trace_meta *meta)
{
	return meta && meta->options && !strncmp(meta->options, "merged=", 7);
}

/* DIR/rankR.SUFFIX, or DIR/fileNS.SUFFIX for a file without ranks; "-nsNS" when taken. */
static char *part_path(struct split *s, const struct trace_rank *r)
{
	struct stat st;
	char *p = NULL;
	int n;

	if (r->r.rank < 0)
		return asprintf(&p, "%s/file%u%s", s->dir, r->r.ns, s->suffix) < 0 ? NULL : p;
	if (asprintf(&p, "%s/rank%d%s", s->dir, r->r.rank, s->suffix) < 0)
		return NULL;
	if (lstat(p, &st))
		return p;
	free(p);
	n = asprintf(&p, "%s/rank%d-ns%u%s", s->dir, r->r.rank, r->r.ns, s->suffix);
	return n < 0 ? NULL : p;
}

/* The rank a RANK record just added to the model: its part opened. */
static int open_part(struct split *s, const struct trace_model *m, const struct trace_meta *meta)
{
	const struct trace_ranks *ranks = trace_model__ranks(m);
	__u32 n = trace_ranks__count(ranks), i = n - 1;
	const struct trace_rank *r;
	struct trace_meta pm = *meta;
	struct part *v;
	int err = 0;

	if (!n || n <= s->nparts)
		return 0;
	r = trace_ranks__next(ranks, &i);
	v = realloc(s->parts, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->parts = v;
	memset(&s->parts[s->nparts], 0, (n - s->nparts) * sizeof(*v));
	s->nparts = n;
	s->cur = n - 1;
	s->parts[n - 1].path = part_path(s, r);
	if (!s->parts[n - 1].path)
		return -ENOMEM;
	pm.hostname = (char *)r->host;
	if (s->force)
		unlink(s->parts[n - 1].path);
	s->parts[n - 1].st = s->ex->open(s->parts[n - 1].path, &pm, NULL, &err);
	if (!s->parts[n - 1].st)
		pr_err("cannot create %s: %s\n", s->parts[n - 1].path,
		       strerror(err < 0 ? -err : EIO));
	return s->parts[n - 1].st ? 0 : err ? err : -EIO;
}

/* The part of PID's rank (see the top). */
static struct part *part_of(struct split *s, const struct trace_model *m, __u32 pid)
{
	const struct trace_rank *r = pid ? trace_model__rank(m, pid) : NULL;

	if (!r)
		return s->nparts ? &s->parts[s->cur] : NULL;
	return r->index < s->nparts ? &s->parts[r->index] : NULL;
}

static int split_record(void *st, const struct bs_hdr *rec, const struct event *ev,
			const struct trace_model *m)
{
	struct split *s = st;
	struct part *p;

	if (rec->type == BS_REC_RANK) {
		s->err = open_part(s, m, &s->meta);
		return s->err;
	}
	p = part_of(s, m, rec->pid);
	return p && p->st ? s->ex->record(p->st, rec, ev, m) : 0;
}

void *export_split__open(const struct exporter *ex, const char *dir, const char *suffix, int force,
			 const struct trace_meta *meta, int *err)
{
	struct split *s = calloc(1, sizeof(*s));
	struct rlimit rl;

	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!mkdir(dir, 0700)) {
		sudo_owner__give_path(dir);
	} else if (errno != EEXIST) {
		*err = -errno;
		free(s);
		return NULL;
	}
	/* A file per rank, all open at once: up to 1,024 of them. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	s->ex = ex;
	s->dir = dir;
	s->suffix = suffix;
	s->force = force;
	s->meta = *meta;
	return s;
}

static void split_free(void *st, int remove)
{
	struct split *s = st;

	if (!s)
		return;
	for (__u32 i = 0; i < s->nparts; i++) {
		if (s->parts[i].st)
			s->ex->abort(s->parts[i].st);
		if (remove && s->parts[i].path)
			unlink(s->parts[i].path);
		free(s->parts[i].path);
	}
	if (remove)
		rmdir(s->dir); /* only when nothing else is in it */
	free(s->parts);
	free(s);
}

/* Every rank's file finished; then freed, as an exporter's finish does. */
static int split_finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct split *s = st;
	int err = 0, e;

	for (__u32 i = 0; i < s->nparts; i++) {
		if (!s->parts[i].st)
			continue;
		e = s->ex->finish(s->parts[i].st, m, status);
		s->parts[i].st = NULL;
		if (e && !err)
			err = e;
	}
	split_free(s, !!err);
	return err;
}

static void split_abort(void *st)
{
	split_free(st, 1);
}

const struct exporter export_split = {
	.format = "split",
	.desc = "one file per rank of a merged file",
	.record = split_record,
	.finish = split_finish,
	.abort = split_abort,
};
