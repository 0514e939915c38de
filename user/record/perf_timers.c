// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A cpu-clock perf event per online CPU running a BPF program (perf_timers.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "msg.h"
#include "perf_timers.h"

int perf_timers__open(struct perf_timers *t, struct bpf_program *prog, __u32 hz, __u64 period_ns,
		      const char *who)
{
	int ncpu = libbpf_num_possible_cpus(), fd, err = 0;
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
	};

	if (hz) {
		a.freq = 1;
		a.sample_freq = hz;
	} else {
		a.sample_period = period_ns; /* cpu-clock counts nanoseconds */
	}
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	t->n = 0;
	t->links = calloc(ncpu, sizeof(*t->links));
	if (!t->links)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		fd = syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* a possible CPU that is not online */
			err = -errno;
			pr_err("%s: perf_event_open on CPU %d: %s\n", who, cpu, strerror(errno));
			goto fail;
		}
		t->links[t->n] = bpf_program__attach_perf_event(prog, fd);
		if (!t->links[t->n]) {
			err = -errno;
			close(fd);
			pr_err("%s: attaching the sampler on CPU %d: %s\n", who, cpu,
			       strerror(-err));
			goto fail;
		}
		t->n++;
	}
	if (t->n)
		return 0;
	err = -ENODEV;
fail:
	perf_timers__close(t);
	return err;
}

void perf_timers__close(struct perf_timers *t)
{
	for (int i = 0; i < t->n; i++)
		bpf_link__destroy(t->links[i]);
	free(t->links);
	t->links = NULL;
	t->n = 0;
}
