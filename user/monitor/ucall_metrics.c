// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The metrics of the uprobe API families (ucall_metrics.h). */
#include <errno.h>
#include <stdlib.h>
#include "ucall_metrics.h"
#include "hmap.h"

struct ucall_metrics {
	const struct ucall_metrics_def *def;
	struct m_bounds bounds;
};

int ucall_metrics__open(const struct ucall_metrics_def *def, void **st)
{
	struct ucall_metrics *um = calloc(1, sizeof(*um));

	if (!um)
		return -ENOMEM;
	um->def = def;
	m_bounds__init(&um->bounds, 0);
	*st = um;
	return 0;
}

void ucall_metrics__free(void *st)
{
	free(st);
}

void ucall_metrics__series_free(void *counters)
{
	hmap__free(((struct ucall_series *)counters)->calls);
}

void ucall_metrics__record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	const struct ucall_metrics *um = st;
	const struct bs_ucall *r = (const void *)h;
	struct ucall_series *s;
	struct m_hist *hist;

	/* depth > 0: a call the library made inside one the application made */
	if (h->type != um->def->type || r->depth)
		return;
	s = metrics__series(m, um->def->family, h->pid, 1);
	hist = s ? m_map__at(&s->calls, sizeof(*hist), (struct hkey){ r->fn, 0 }) : NULL;
	if (hist)
		m_hist__add(hist, &um->bounds, r->dur, 1, r->dur);
}

void ucall_metrics__render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	const struct ucall_metrics *um = st;
	const struct ucall_series *s;
	const struct ucall_api *a;
	const struct m_hist *h;
	struct hkey k;
	char labels[256];
	size_t used;

	metrics__head(f, um->def->name, "histogram", um->def->help);
	for (size_t i = 0; i < n; i++) {
		s = metrics_owner__series(&ow[i], um->def->family);
		for (size_t it = 0; s && s->calls && (h = hmap__next(s->calls, &it, &k));) {
			FILE *lf;

			if (!(a = ucall_table__api(um->def->table, k.a)))
				continue;
			lf = fmemopen(labels, sizeof(labels), "w");
			if (!lf)
				continue;
			fprintf(lf, "api=\"%s\",", ucall_api__shown(a));
			metrics__owner_labels(lf, &ow[i]);
			used = ftell(lf);
			fclose(lf);
			labels[used < sizeof(labels) ? used : sizeof(labels) - 1] = 0;
			metrics__hist_lines(f, um->def->name, labels, h, &um->bounds);
		}
	}
}
