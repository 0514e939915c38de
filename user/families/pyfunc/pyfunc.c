// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pyfunc family, record side (pyfunc.h): --python-functions SPEC is read into the canonical
 * text (pyfunc_spec.c), written into every shim of the recording (pyfunc_write.c), and the
 * channel attaches the control site bpfsight:pyfunc, whose semaphore makes the shim's module
 * install its hooks in the job's interpreter; they are removed when the recording ends (or
 * its recorder dies: the kernel drops the semaphore). What the shim says (the mechanism, the
 * code objects found, entries not found yet, an interpreter refused) is said on stderr once
 * per process and message.
 *
 * The option implies the family (FAMILY_OPT_IMPLIES): `record --python-functions SPEC` is
 * enough. Launch mode puts the shim in LD_PRELOAD; -p needs the job to have the shim, or
 * --inject.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "kernel_features.h"
#include "msg.h"
#include "pyfunc.h"
#include "pyfunc_spec.h"
#include "family_attach.h"
#include "record_ctx.h"
#include "shim_family.h"
#include "shim_link.h"
#include "family_record.h"
#include "family_stats.h"

struct pyfunc_state {
	void *shim; /* the channel's state for this family */
	struct pyfunc_writer *writer;
	struct hmap *said; /* {pid, hash of the text} -> int */
	struct pyfunc_missed *missed;
};

static __u64 text_hash(const char *s)
{
	__u64 h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

static void listen(void *arg, const struct bs_hdr *rec, const char *text)
{
	const struct bs_shim_status *s = (const void *)rec;
	struct pyfunc_state *st = arg;
	int *said;

	if (rec->type == BS_REC_PYFUNC_CALL && rec->size >= sizeof(struct bs_pyfunc_call)) {
		pyfunc_missed__call(st->missed, ((const struct bs_pyfunc_call *)rec)->func_id,
				    text);
		return;
	}
	if (rec->type != BS_REC_SHIM_STATUS || s->event != BS_SHIM_EV_PYFUNC)
		return;
	if (s->cupti_result == BS_PYFUNC_NEVER_FOUND) { /* said once each, at the end */
		pyfunc_missed__status(st->missed, rec->pid, text);
		return;
	}
	said = hmap__get(st->said, (struct hkey){ rec->pid, text_hash(text) }, 1);
	if (!said || *said)
		return;
	*said = 1;
	pr_info("%spid %u: %s\n", s->cupti_result && s->cupti_result != -ENOENT ? "warning: " : "",
		rec->pid, text);
}

static void pyfunc_free(struct record_ctx *ctx, struct pyfunc_state *st)
{
	if (!st)
		return;
	if (st->shim) {
		shim_link__listen(st->shim, NULL, NULL);
		shim_link__detach(ctx, st->shim);
	}
	pyfunc_writer__free(st->writer);
	hmap__free(st->said);
	pyfunc_missed__free(st->missed);
	free(st);
}

static int pyfunc_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	const struct pyfunc_opts *o = record_opts__family(ctx->opts, &family_pyfunc);
	struct pyfunc_state *st;
	int err;

	if (!o || !o->text) {
		pr_err("-t pyfunc traces the Python functions --python-functions SPEC names: "
		       "give it\n");
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->said = hmap__new(sizeof(int))) || !(st->missed = pyfunc_missed__new())) {
		if (st)
			hmap__free(st->said);
		free(st);
		return -ENOMEM;
	}
	/* The writer is told of each shim first: the text is there before the semaphore
	 * rises (pyfunc_write.c). */
	err = pyfunc_writer__new(a->uprobes, o->text, &st->writer);
	if (!err)
		err = shim_link__attach(a, &st->shim);
	if (err) {
		pyfunc_free(ctx, st);
		return err;
	}
	shim_link__listen(st->shim, listen, st);
	*state = st;
	return 0;
}

static void pyfunc_detach(struct record_ctx *ctx, void *state)
{
	struct pyfunc_state *st = state;

	/* The drains are done: every process's entries never found are in. */
	if (st)
		pyfunc_missed__say(st->missed);
	pyfunc_free(ctx, state);
}

static int pyfunc_consume(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	return shim_link__consume(ctx, ((struct pyfunc_state *)state)->shim, rec);
}

static void pyfunc_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	pyfunc_writer__observe(((struct pyfunc_state *)state)->writer, rec);
}

/* An exec or an exit: the process's next shim gets the spec again (pyfunc_write.c). */
static const __u16 pyfunc_observes[] = { BS_REC_EXEC, BS_REC_EXIT, 0 };

static int pyfunc_poll(struct record_ctx *ctx, void *state)
{
	return shim_link__poll(ctx, ((struct pyfunc_state *)state)->shim);
}

static void pyfunc_stop(struct record_ctx *ctx, void *state)
{
	shim_link__stop(ctx, ((struct pyfunc_state *)state)->shim);
}

static int pyfunc_prelaunch(const struct record_opts *o)
{
	return shim_link__prelaunch(o, &family_pyfunc);
}

/* ---- options ---- */

#define SPEC_TEXT_MAX sizeof(((struct bs_pyfunc_spec *)0)->text)

static void pyfunc_opts_init(void *opts, const char *cmd)
{
	((struct pyfunc_opts *)opts)->text = NULL;
}

static int parse_functions(void *opts, const char *arg, const char *cmd)
{
	struct pyfunc_opts *o = opts;
	char err[512];
	char *text = malloc(SPEC_TEXT_MAX);
	int n;

	if (!text) {
		pr_err("--python-functions: out of memory\n");
		return 1;
	}
	n = pyfunc_spec__parse(arg, text, SPEC_TEXT_MAX, err, sizeof(err));
	if (n < 0) {
		pr_err("--python-functions %s: %s\n", arg, err);
		free(text);
		return 1;
	}
	free(o->text); /* given twice: the last wins */
	o->text = text;
	return 0;
}

static void pyfunc_opts_describe(const void *opts, char *buf, size_t len)
{
	const struct pyfunc_opts *o = opts;
	size_t n = 0;

	buf[0] = 0;
	if (!o->text)
		return;
	for (const char *p = o->text; *p; p++)
		n += *p == '\n';
	snprintf(buf, len, " python_functions=%zu", n);
}

static const struct family_option pyfunc_options[] = {
	{ "python-functions", "SPEC",
	  "time every call of these Python functions in the job's interpreter (implies -t "
	  "pyfunc): module:Qual.name,... (__main__ too), a file in nsys's Python functions trace "
	  "JSON format, or a preset (pytorch, lightning, dask); with -p the job needs the cupti-shim "
	  "(--inject). docs/PYFUNC.md",
	  FAMILY_OPT_RECORD | FAMILY_OPT_IMPLIES, parse_functions },
	{ 0 },
};

/* ---- what it tells the cupti-shim channel (shim_family.h) ---- */

static const struct shim_site pyfunc_sites[] = { { "pyfunc" }, { 0 } };

static const struct shim_rec pyfunc_recs[] = {
	{ BS_REC_PYFUNC_CALL, sizeof(struct bs_pyfunc_call),
	  .strings = { offsetof(struct bs_pyfunc_call, func_id),
		       offsetof(struct bs_pyfunc_call, file_id),
		       offsetof(struct bs_pyfunc_call, domain_id) } },
	{ 0 },
};

static const struct shim_name pyfunc_states[] = { { BS_SHIM_ST_PYFUNC_ON, "pyfunc_on" }, { 0 } };
static const struct shim_name pyfunc_events[] = { { BS_SHIM_EV_PYFUNC, "pyfunc" }, { 0 } };
static const struct shim_count pyfunc_counts[] = { { "python_calls", "Python Calls" }, { 0 } };

static int pyfunc_count_of(const struct bs_hdr *rec)
{
	return rec->type == BS_REC_PYFUNC_CALL ? 0 : -1;
}

static const struct family_shim pyfunc_shim = {
	.sites = pyfunc_sites,
	.recs = pyfunc_recs,
	.states = pyfunc_states,
	.events = pyfunc_events,
	.counts = pyfunc_counts,
	.count_of = pyfunc_count_of,
	.hint = { "LD_PRELOAD", "Python function calls (--python-functions)", "" },
	.env = NULL, /* launch mode: LD_PRELOAD (a Python job may never touch CUDA) */
};

/* --trigger hang: a process whose named functions stopped ending made no progress. */
static const __u16 pyfunc_progress[] = { BS_REC_PYFUNC_CALL, 0 };

static const struct family_record pyfunc_recording = {
	.shim = &pyfunc_shim,
	.ring_only = shim_ring_only,
	.needs = 1u << KF_ATTACH_COOKIE,
	.options = pyfunc_options,
	.opts_size = sizeof(struct pyfunc_opts),
	.opts_init = pyfunc_opts_init,
	.opts_describe = pyfunc_opts_describe,
	.attach = pyfunc_attach,
	.poll = pyfunc_poll,
	.detach = pyfunc_detach,
	.consume = pyfunc_consume,
	.consumes = shim_link_consumes,
	.observe = pyfunc_observe,
	.observes = pyfunc_observes,
	.stop = pyfunc_stop,
	.prelaunch = pyfunc_prelaunch,
};

static const struct family_decode pyfunc_reading = {
	.progress = pyfunc_progress,
	.decoders = pyfunc_decoders,
};

static const struct family_stats pyfunc_stats = {
	.reports = pyfunc_reports,
};

const struct family family_pyfunc = {
	.name = "pyfunc",
	.desc = "every call of the Python functions --python-functions names (sys.monitoring or "
		"a C profile function in the cupti-shim)",
	/* not by default: it hooks the job's interpreter, and needs a spec */
	.flags = FAMILY_OPT_IN | FAMILY_WRITES_TARGETS | FAMILY_SHIM,
	.export = &pyfunc_export,
	.record = &pyfunc_recording,
	.decode = &pyfunc_reading,
	.stats = &pyfunc_stats,
};
