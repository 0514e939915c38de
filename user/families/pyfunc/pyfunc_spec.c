// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --python-functions SPEC -> the canonical text the shim reads (pyfunc_spec.h). The presets'
 * names were checked against Debian's torch 1.13, python3-dask 2022.12 and
 * python3-distributed (tests/e2e/test_pyfunc_presets.py runs the pytorch and dask presets
 * against the jobs' own counts); Lightning's against its sources' hooks (not packaged here).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "array.h"
#include "pyfunc_spec.h"

const char pyfunc_spec_presets[] = "pytorch, lightning, dask";

struct preset_entry {
	const char *module, *qualname, *flags;
};

struct preset {
	const char *name, *domain;
	const struct preset_entry *entries;
};

/*
 * nsys's --pytorch=functions-trace: forward by nn.Module class (every subclass's forward,
 * named by its class), autograd's backward both ways in, every optimizer's step and
 * zero_grad, and the DataLoader's next batch.
 */
static const struct preset_entry pytorch[] = {
	{ "torch.nn.modules.module", "Module.forward", "s" },
	{ "torch.autograd", "backward", "" },
	{ "torch._tensor", "Tensor.backward", "" },
	{ "torch.optim.optimizer", "Optimizer.step", "s" },
	{ "torch.optim.optimizer", "Optimizer.zero_grad", "s" },
	{ "torch.utils.data.dataloader", "_BaseDataLoaderIter.__next__", "s" },
	{ 0 },
};

/* The LightningModule hooks Lightning's SimpleProfiler times, both packages' paths. */
#define LIGHTNING_HOOKS(mod)                                                                       \
	{ mod, "LightningModule.training_step", "s" },                                             \
		{ mod, "LightningModule.validation_step", "s" },                                   \
		{ mod, "LightningModule.test_step", "s" },                                         \
		{ mod, "LightningModule.predict_step", "s" },                                      \
		{ mod, "LightningModule.backward", "s" },                                          \
		{ mod, "LightningModule.optimizer_step", "s" },                                    \
		{ mod, "LightningModule.optimizer_zero_grad", "s" },                               \
		{ mod, "LightningModule.on_before_backward", "s" },                                \
		{ mod, "LightningModule.on_after_backward", "s" },                                 \
		{ mod, "LightningModule.on_before_optimizer_step", "s" },                          \
		{ mod, "LightningModule.on_before_zero_grad", "s" },                               \
		{ mod, "LightningModule.on_train_batch_start", "s" },                              \
		{ mod, "LightningModule.on_train_batch_end", "s" },                                \
		{ mod, "LightningModule.on_validation_batch_start", "s" },                         \
		{ mod, "LightningModule.on_validation_batch_end", "s" },                           \
		{ mod, "LightningModule.on_train_epoch_start", "s" },                              \
		{ mod, "LightningModule.on_train_epoch_end", "s" },                                \
		{ mod, "LightningModule.on_validation_epoch_start", "s" },                         \
	{                                                                                          \
		mod, "LightningModule.on_validation_epoch_end", "s"                                \
	}

static const struct preset_entry lightning[] = {
	LIGHTNING_HOOKS("lightning.pytorch.core.module"),
	LIGHTNING_HOOKS("pytorch_lightning.core.module"),
	{ 0 },
};

/*
 * nsys's --dask=functions-trace: the local schedulers' entry points and each task's
 * execution (dask.core's _execute_task recurses into nested tasks), distributed's worker
 * executing a task (a coroutine: its pieces end at each await) and the function it runs in
 * its thread pool, and the scheduler taking a graph.
 */
static const struct preset_entry dask[] = {
	{ "dask.base", "compute", "" },
	{ "dask.threaded", "get", "" },
	{ "dask.multiprocessing", "get", "" },
	{ "dask.local", "get_sync", "" },
	{ "dask.local", "get_async", "" },
	{ "dask.local", "execute_task", "" },
	{ "dask.local", "batch_execute_tasks", "" },
	{ "dask.core", "_execute_task", "" },
	{ "distributed.worker", "Worker.execute", "" },
	{ "distributed.worker", "apply_function", "" },
	{ "distributed.worker", "apply_function_simple", "" },
	{ "distributed.scheduler", "Scheduler.update_graph", "" },
	{ 0 },
};

static const struct preset presets[] = {
	{ "pytorch", "PyTorch", pytorch },
	{ "lightning", "Lightning", lightning },
	{ "dask", "Dask", dask },
};

struct entry {
	char *module, *qualname, *domain;
	char flags[8];
};

struct pyfunc_spec_build {
	struct entry *v;
	size_t n, cap;
};

static int ident_char(unsigned char c, int first)
{
	/* bytes >= 0x80: a non-ASCII identifier's UTF-8, which Python allows */
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80 ||
	       (!first && c >= '0' && c <= '9');
}

/* S[0..N) is a Python identifier, or with ANGLE a "<locals>"-like part of a qualname. */
static int is_part(const char *s, size_t n, int angle)
{
	if (angle && n > 2 && s[0] == '<' && s[n - 1] == '>')
		return is_part(s + 1, n - 2, 0);
	if (!n || !ident_char(s[0], 1))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!ident_char(s[i], 0))
			return 0;
	return 1;
}

/* Dotted parts: a module ("pkg.mod") or, with ANGLE, a qualname ("f.<locals>.g"). */
static int is_dotted(const char *s, int angle)
{
	const char *dot;

	do {
		dot = strchr(s, '.');
		if (!is_part(s, dot ? (size_t)(dot - s) : strlen(s), angle))
			return 0;
		s = dot + 1;
	} while (dot);
	return 1;
}

int pyfunc_spec__add(struct pyfunc_spec_build *b, const char *module, const char *qualname,
		     const char *flags, const char *domain, const char *what, char *err,
		     size_t errlen)
{
	struct entry *e;

	if (!is_dotted(module, 0)) {
		snprintf(err, errlen, "%s: \"%s\" is not a module name (dotted Python identifiers)",
			 what, module);
		return -EINVAL;
	}
	if (!is_dotted(qualname, 1)) {
		snprintf(err, errlen,
			 "%s: \"%s\" is not a function's qualified name (\"f\", \"Class.method\", "
			 "\"outer.<locals>.inner\")",
			 what, qualname);
		return -EINVAL;
	}
	for (const char *d = domain; *d; d++)
		if ((unsigned char)*d < 0x20) {
			snprintf(err, errlen, "%s: the domain \"%s\" holds a control character",
				 what, domain);
			return -EINVAL;
		}
	for (size_t i = 0; i < b->n; i++) {
		e = &b->v[i];
		if (strcmp(e->module, module) || strcmp(e->qualname, qualname))
			continue;
		for (const char *f = flags; *f; f++) /* named again: its flags joined */
			if (!strchr(e->flags, *f) && strlen(e->flags) < sizeof(e->flags) - 1 &&
			    *f != 'p')
				strncat(e->flags, f, 1);
		/* named by the user too: said if never found */
		if (!strchr(flags, 'p') && strchr(e->flags, 'p'))
			memmove(strchr(e->flags, 'p'), strchr(e->flags, 'p') + 1,
				strlen(strchr(e->flags, 'p')));
		return 0;
	}
	if (array__grow((void **)&b->v, b->n, &b->cap, sizeof(*b->v)))
		return -ENOMEM;
	e = &b->v[b->n];
	memset(e, 0, sizeof(*e));
	snprintf(e->flags, sizeof(e->flags), "%s", flags);
	e->module = strdup(module);
	e->qualname = strdup(qualname);
	e->domain = strdup(domain);
	b->n++;
	return e->module && e->qualname && e->domain ? 0 : -ENOMEM;
}

static int add_preset(struct pyfunc_spec_build *b, const struct preset *p, char *err, size_t errlen)
{
	int ret = 0;

	char flags[8];

	/* 'p': a preset's entry, of a library the job may not use: not said when never found */
	for (const struct preset_entry *e = p->entries; e->module && !ret; e++) {
		snprintf(flags, sizeof(flags), "%sp", e->flags);
		ret = pyfunc_spec__add(b, e->module, e->qualname, flags, p->domain, p->name, err,
				       errlen);
	}
	return ret;
}

static int is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && !S_ISDIR(st.st_mode);
}

/* S is a Python name, dotted or not ("train_step", "pkg.mod.f"): what a bare name looks like. */
static int python_name(const char *s)
{
	int start = 1;

	if (!*s || strstr(s, ".json"))
		return 0;
	for (; *s; s++) {
		if (*s == '.' && !start) {
			start = 1;
			continue;
		}
		if (!(isalpha((unsigned char)*s) || *s == '_' ||
		      (!start && isdigit((unsigned char)*s))))
			return 0;
		start = 0;
	}
	return !start;
}

/* One comma-separated piece of the argument. */
static int add_piece(struct pyfunc_spec_build *b, char *piece, char *err, size_t errlen)
{
	char what[160], *colon;

	if (!*piece) {
		snprintf(err, errlen, "an empty entry (two commas, or one at an end)");
		return -EINVAL;
	}
	/* a preset's name before a file of that name: ./pytorch names the file */
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(piece, presets[i].name))
			return add_preset(b, &presets[i], err, errlen);
	if (is_file(piece))
		return pyfunc_spec__json_file(b, piece, err, errlen);
	colon = strchr(piece, ':');
	if (!colon) {
		const char *dot = strrchr(piece, '.');

		if (python_name(piece) && dot)
			/* pkg.mod.f: the module is all but the last name (or a class's method) */
			snprintf(err, errlen,
				 "\"%s\": a function is named with its module, a colon between: "
				 "%.*s:%s (or, for a method, MODULE:%s)",
				 piece, (int)(dot - piece), piece, dot + 1, piece);
		else if (python_name(piece))
			snprintf(err, errlen,
				 "\"%s\": a function is named with its module: __main__:%s (the "
				 "script run) or MODULE:%s (a module it imports); else a preset "
				 "(%s) or a file that exists",
				 piece, piece, piece, pyfunc_spec_presets);
		else
			snprintf(err, errlen,
				 "\"%s\": neither module:function, a preset (%s) nor a file that "
				 "exists",
				 piece, pyfunc_spec_presets);
		return strchr(piece, '/') || strstr(piece, ".json") ? -ENOENT : -EINVAL;
	}
	snprintf(what, sizeof(what), "\"%s\"", piece);
	*colon = 0;
	return pyfunc_spec__add(b, piece, colon + 1, "", "", what, err, errlen);
}

/* B's entries as the canonical text into OUT: its length, or -E2BIG. */
static int write_text(const struct pyfunc_spec_build *b, char *out, size_t len, char *err,
		      size_t errlen)
{
	size_t used = 0;

	for (size_t i = 0; i < b->n; i++) {
		const struct entry *e = &b->v[i];
		int n = snprintf(out + used, used < len ? len - used : 0, "%s\t%s\t%s\t%s\n",
				 e->module, e->qualname, e->flags, e->domain);

		used += n;
	}
	if (used >= len) {
		snprintf(err, errlen,
			 "%zu entries make a spec of %zu bytes, more than the %zu "
			 "the cupti-shim takes",
			 b->n, used, len ? len - 1 : 0);
		return -E2BIG;
	}
	return (int)used;
}

int pyfunc_spec__parse(const char *arg, char *out, size_t len, char *err, size_t errlen)
{
	struct pyfunc_spec_build b = { 0 };
	char *copy = strdup(arg), *piece, *next;
	int ret = copy ? 0 : -ENOMEM;

	err[0] = 0;
	if (copy && strchr(copy, ',') && is_file(copy)) /* a path with a comma in it */
		ret = pyfunc_spec__json_file(&b, copy, err, errlen);
	else
		for (piece = copy; !ret && piece; piece = next) {
			next = strchr(piece, ',');
			if (next)
				*next++ = 0;
			ret = add_piece(&b, piece, err, errlen);
		}
	if (!ret && !b.n) {
		snprintf(err, errlen, "no function named");
		ret = -EINVAL;
	}
	if (!ret)
		ret = write_text(&b, out, len, err, errlen);
	for (size_t i = 0; i < b.n; i++) {
		free(b.v[i].module);
		free(b.v[i].qualname);
		free(b.v[i].domain);
	}
	free(b.v);
	free(copy);
	return ret;
}
