// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A recording's file header (record_meta.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bpfsight_version.h"
#include "family.h"
#include "family_record.h"
#include "kernel_features.h"
#include "nv_gpus.h"
#include "record_clock.h"
#include "record_meta.h"

void record_meta__fill(struct record_meta *rm, const struct record_opts *o)
{
	struct trace_meta *m = &rm->meta;
	struct utsname *u = &rm->uts;
	char *buf_fams = rm->families, *target = rm->target, *options = rm->options;
	char *kernel = rm->kernel, *boot_id = rm->boot_id;
	size_t fams_len = sizeof(rm->families), target_len = sizeof(rm->target);
	size_t options_len = sizeof(rm->options), kernel_len = sizeof(rm->kernel);
	size_t boot_len = sizeof(rm->boot_id), used = 0;
	char missing[160];
	FILE *f;

	memset(m, 0, sizeof(*m));
	uname(u);
	snprintf(kernel, kernel_len, "%s %s", u->release, u->version);
	boot_id[0] = 0;
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (fgets(boot_id, boot_len, f))
			boot_id[strcspn(boot_id, "\n")] = 0;
		fclose(f);
	}
	buf_fams[0] = 0;
	for_each_family(it)
		if (o->families & (1ull << it.i))
			used += snprintf(buf_fams + used, fams_len - used, "%s%s", used ? "," : "",
					 it.f->name);
	if (o->system_wide) {
		snprintf(target, target_len, "system-wide");
	} else {
		used = 0;
		if (o->cmd) {
			used += snprintf(target, target_len, "launch:");
			for (char **a = o->cmd; *a && used < target_len; a++)
				used += snprintf(target + used, target_len - used, " %s", *a);
		}
		for (__u32 i = 0; i < o->npids - o->nchildren && used < target_len; i++)
			used += snprintf(target + used, target_len - used, "%s%d",
					 i ? "," : (used ? "; pid: " : "pid: "), o->pids[i]);
		/* The children -p took in (target_tree.h): how many, and which. */
		for (__u32 i = o->npids - o->nchildren; i < o->npids && used < target_len; i++)
			used += snprintf(target + used, target_len - used, "%s%d",
					 i == o->npids - o->nchildren ? " + children " : ",",
					 o->pids[i]);
	}
	kfeatures__missing(missing, sizeof(missing));
	used = snprintf(options, options_len, "ringbuf_bytes=%llu duration_ns=%llu",
			(unsigned long long)o->ringbuf_bytes, (unsigned long long)o->duration_ns);
	for_each_family_while(fit, used < options_len)
		if (fit.f->record->opts_describe && o->family_opts[fit.i]) {
			fit.f->record->opts_describe(o->family_opts[fit.i], options + used,
						     options_len - used);
			used += strlen(options + used);
		}
	if (*missing && used < options_len)
		snprintf(options + used, options_len - used, " without=%s", missing);
	m->version = 1;
	m->hostname = u->nodename;
	m->kernel = kernel;
	m->boot_id = boot_id;
	m->cmdline = (char *)o->cmdline;
	m->families = buf_fams;
	m->target = target;
	m->options = options;
	m->tool_version = BPFSIGHT_VERSION;
	/* Which GPUs: a reader needs the model for its peak (gemm_step_sum's MFU). */
	nv_gpus__read(NV_GPUS_DIR, rm->gpus, sizeof(rm->gpus));
	m->gpus = rm->gpus;
	record_clocks__now(&m->start);
}
