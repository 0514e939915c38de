// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What the folded and svg exports share (export_samples.h). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "cpu_samples.h"
#include "export_samples.h"

void *samples_export__open(const char *out, const struct trace_meta *meta,
			   const struct export_opts *opts, int *err)
{
	struct samples_export *st = calloc(1, sizeof(*st));
	int fd;

	if (!st || !(st->counts = cpu_samples__new())) {
		free(st);
		*err = -ENOMEM;
		return NULL;
	}
	st->unit = 1;
	snprintf(st->title, sizeof(st->title), "CPU samples: %s",
		 meta->target && *meta->target ? meta->target : "recording");
	fd = export__create(out);
	st->f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!st->f) {
		*err = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		cpu_samples__free(st->counts);
		free(st);
		return NULL;
	}
	return st;
}

int samples_export__record(void *vst, const struct bs_hdr *rec, const struct event *ev,
			   const struct trace_model *m)
{
	struct samples_export *st = vst;

	return cpu_samples__add(st->counts, rec, ev);
}

int samples_export__close(struct samples_export *st, int err)
{
	if (!err && ferror(st->f))
		err = -EIO;
	if (fclose(st->f) && !err)
		err = -errno;
	cpu_samples__free(st->counts);
	free(st);
	return err;
}

void samples_export__abort(void *vst)
{
	if (vst)
		samples_export__close(vst, -ECANCELED);
}
