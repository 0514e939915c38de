// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floor: run a command with empty BPF programs attached (bench/floor.bpf.c), the floor
 * that bpfsight's and bpftrace's probe costs are compared with.
 *
 *   floor [--syscalls] [--sched] [-u BIN:FUNC]... [-U BIN:PROVIDER:NAME]... -- CMD [ARGS...]
 *
 * --syscalls: tp_btf sys_enter + sys_exit (what osrt attaches); --sched: tp_btf sched_switch
 * + sched_wakeup (what sched attaches); -u: an entry uprobe and a uretprobe on FUNC in BIN;
 * -U: a USDT probe. The probes are system-wide (as bpfsight's are for the syscall and
 * scheduler tracepoints) and attached before CMD starts. Exits with CMD's status.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

#define MAX_LINKS 64

static struct bpf_link *links[MAX_LINKS];
static int nlinks;

static int keep(struct bpf_link *l, const char *what)
{
	int err = -errno;

	if (!l) {
		fprintf(stderr, "floor: cannot attach %s: %s\n", what, strerror(-err));
		return err;
	}
	if (nlinks == MAX_LINKS) {
		bpf_link__destroy(l);
		fprintf(stderr, "floor: more than %d probes\n", MAX_LINKS);
		return -E2BIG;
	}
	links[nlinks++] = l;
	return 0;
}

/* "BIN:FUNC" -> an entry uprobe and a uretprobe on FUNC. */
static int attach_uprobe(struct floor_bpf *skel, char *spec)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	char *colon = strrchr(spec, ':');
	int err;

	if (!colon || colon == spec || !colon[1]) {
		fprintf(stderr, "floor: -u wants BIN:FUNC, not '%s'\n", spec);
		return -EINVAL;
	}
	*colon = 0;
	opts.func_name = colon + 1;
	opts.retprobe = false;
	err = keep(bpf_program__attach_uprobe_opts(skel->progs.floor_uprobe, -1, spec, 0, &opts),
		   colon + 1);
	if (err)
		return err;
	opts.retprobe = true;
	return keep(bpf_program__attach_uprobe_opts(skel->progs.floor_uretprobe, -1, spec, 0,
						     &opts), colon + 1);
}

/* "BIN:PROVIDER:NAME" -> a USDT probe. */
static int attach_usdt(struct floor_bpf *skel, char *spec)
{
	char *name = strrchr(spec, ':'), *provider;

	if (!name || name == spec)
		goto bad;
	*name++ = 0;
	provider = strrchr(spec, ':');
	if (!provider || provider == spec || !*name)
		goto bad;
	*provider++ = 0;
	return keep(bpf_program__attach_usdt(skel->progs.floor_usdt, -1, spec, provider, name,
					     NULL), name);
bad:
	fprintf(stderr, "floor: -U wants BIN:PROVIDER:NAME\n");
	return -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: floor [--syscalls] [--sched] [-u BIN:FUNC]... [-U BIN:PROVIDER:NAME]..."
		   " -- CMD [ARGS...]\n\n"
		   "Runs CMD with empty BPF programs attached: the floor of the overhead benchmark.\n"
		   "  --syscalls   tp_btf sys_enter and sys_exit\n"
		   "  --sched      tp_btf sched_switch and sched_wakeup\n"
		   "  -u BIN:FUNC  entry uprobe and uretprobe on FUNC\n"
		   "  -U BIN:PROVIDER:NAME  USDT probe\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "syscalls", no_argument, NULL, 's' },
		{ "sched", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char *uprobes[MAX_LINKS], *usdts[MAX_LINKS];
	int nup = 0, nusdt = 0, syscalls = 0, sched = 0, c, err, status = 0;
	struct floor_bpf *skel;
	pid_t child;

	while ((c = getopt_long(argc, argv, "+u:U:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			syscalls = 1;
			break;
		case 'S':
			sched = 1;
			break;
		case 'u':
			if (nup < MAX_LINKS)
				uprobes[nup++] = optarg;
			break;
		case 'U':
			if (nusdt < MAX_LINKS)
				usdts[nusdt++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor: cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	bpf_program__set_autoload(skel->progs.floor_sys_enter, syscalls);
	bpf_program__set_autoload(skel->progs.floor_sys_exit, syscalls);
	bpf_program__set_autoload(skel->progs.floor_sched_switch, sched);
	bpf_program__set_autoload(skel->progs.floor_sched_wakeup, sched);
	err = floor_bpf__load(skel);
	if (err) {
		fprintf(stderr, "floor: cannot load the BPF object: %s\n", strerror(-err));
		goto out;
	}
	if (syscalls) {
		err = keep(bpf_program__attach(skel->progs.floor_sys_enter), "sys_enter");
		err = err ?: keep(bpf_program__attach(skel->progs.floor_sys_exit), "sys_exit");
	}
	if (!err && sched) {
		err = keep(bpf_program__attach(skel->progs.floor_sched_switch), "sched_switch");
		err = err ?: keep(bpf_program__attach(skel->progs.floor_sched_wakeup),
				  "sched_wakeup");
	}
	for (int i = 0; !err && i < nup; i++)
		err = attach_uprobe(skel, uprobes[i]);
	for (int i = 0; !err && i < nusdt; i++)
		err = attach_usdt(skel, usdts[i]);
	if (err)
		goto out;

	/* Everything is attached, system-wide: CMD sees the probes from its first instruction. */
	child = fork();
	if (child < 0) {
		err = -errno;
		perror("floor: fork");
		goto out;
	}
	if (child == 0) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "floor: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	signal(SIGINT, SIG_IGN);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR) {
			err = -errno;
			goto out;
		}
	err = 0;
out:
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	floor_bpf__destroy(skel);
	if (err)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
