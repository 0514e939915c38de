// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The shared reading loop of info, dump and stats; see trace_walk.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "proc.h"
#include "trace_walk.h"

int trace_walk__open(struct trace_walk *w, const char *cmd, const char *path)
{
	char err[256] = "";
	int e = 0;

	memset(w, 0, sizeof(*w));
	w->cmd = cmd;
	w->path = path;
	w->r = trace_reader__open(path, err, sizeof(err), &e);
	if (!w->r) {
		fprintf(stderr, "bpfsight %s: %s: %s\n", cmd, path,
			err[0] ? err : strerror(e < 0 ? -e : EIO));
		return EXIT_READ_FAIL;
	}
	w->m = trace_model__new();
	if (!w->m) {
		fprintf(stderr, "bpfsight %s: %s: %s\n", cmd, path, strerror(ENOMEM));
		trace_reader__free(w->r);
		w->r = NULL;
		return EXIT_READ_FAIL;
	}
	return 0;
}

int trace_walk__next(struct trace_walk *w, const struct bs_hdr **recp,
		     const struct rec_decoder **decp)
{
	const struct rec_decoder *dec;
	const struct bs_hdr *rec;
	const struct bs_loss *l;

	if (!trace_reader__next(w->r, &rec))
		return 0;
	dec = family__decoder(rec->type);
	*recp = rec;
	*decp = dec;
	if (dec && rec->size < dec->min_size) {
		/* The reader checked the chunk; a short record means a writer bug: say so once. */
		if (!w->short_records++)
			fprintf(stderr,
				"bpfsight %s: warning: %s: record of type 0x%02x is %u bytes, "
				"needs %u: skipping such records\n",
				w->cmd, w->path, rec->type, rec->size, dec->min_size);
		return 2;
	}
	trace_model__observe(w->m, rec);
	if (rec->type == BS_REC_LOSS) {
		l = (const void *)rec;
		w->lost[loss_cause__slot(l->cause)] += l->count;
		w->lost_total += l->count;
	}
	return 1;
}

const struct trace_meta *trace_walk__meta(const struct trace_walk *w)
{
	return trace_reader__meta(w->r);
}

const struct trace_status *trace_walk__status(const struct trace_walk *w)
{
	return trace_reader__status(w->r);
}

int trace_walk__loss_summary(const struct trace_walk *w, char *buf, size_t len)
{
	size_t used = 0;
	__u32 c;
	int n;

	buf[0] = 0;
	if (!w->lost_total)
		return 0;
	for (c = 0; c <= BS_LOSS_MAX; c++) {
		if (!w->lost[c])
			continue;
		n = snprintf(buf + used, len - used, "%s%s: %llu", used ? ", " : "",
			     loss_cause_name(c), (unsigned long long)w->lost[c]);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += n;
	}
	return 1;
}

int trace_walk__finish(struct trace_walk *w)
{
	const struct trace_status *st = trace_reader__status(w->r);
	int status = EXIT_READ_OK;

	if (st->truncated)
		fprintf(stderr,
			"bpfsight %s: warning: %s was not closed cleanly (recorder killed, or its disk "
			"full?): "
			"showing the %u complete chunks\n",
			w->cmd, w->path, st->chunks);
	if (st->corrupt_chunks) {
		fprintf(stderr,
			"bpfsight %s: warning: %s: %u corrupt chunks skipped (%llu bytes passed "
			"over): the output is incomplete\n",
			w->cmd, w->path, st->corrupt_chunks, (unsigned long long)st->skipped_bytes);
		status = EXIT_READ_CORRUPT;
	}
	if (w->short_records) {
		fprintf(stderr,
			"bpfsight %s: warning: %s: %llu records too short for their type "
			"were skipped\n",
			w->cmd, w->path, (unsigned long long)w->short_records);
		status = EXIT_READ_CORRUPT;
	}
	return status;
}

void trace_walk__close(struct trace_walk *w)
{
	trace_reader__free(w->r);
	trace_model__free(w->m);
	w->r = NULL;
	w->m = NULL;
}
