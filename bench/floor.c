// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floor: run a command with empty BPF programs attached (bench/floor.bpf.c), the floor
 * that bpfsight's and bpftrace's probe costs are compared with.
 *
 *   floor [--syscalls] [--sched] [--rss-stat] [-u BIN:FUNC]... [-e BIN:FUNC]...
 *         [-U BIN:PROVIDER:NAME]... [--perf-uprobes] -- CMD [ARGS...]
 *
 * --syscalls: tp_btf sys_enter + sys_exit (what osrt attaches); --sched: tp_btf sched_switch
 * + sched_waking (what sched attaches); --rss-stat: tp_btf rss_stat (what mem attaches); -u:
 * an entry uprobe and a uretprobe on FUNC in BIN, as uprobe_multi links like bpfsight's
 * (Linux 6.6+; --perf-uprobes, or an older kernel: perf-event uprobes, as bpftrace attaches
 * them); -e: the entry uprobe alone (what families that need no return attach: mem on
 * PyTorch's allocator); -U: a USDT probe (libbpf's, perf-event).
 * The probes are system-wide, as bpfsight's are, and attached before CMD starts. Exits with
 * CMD's status.
 *
 * --body NAME: the -u programs do one thing instead of nothing (floor.bpf.c's probe bodies:
 * empty ktime pid cookie task tstore array query rbuf read8 read48), for
 * bench/bench_parts.py to price with the kernel's BPF stats; rbuf's records are consumed.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/perf_event.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"
#include "uprobe_multi.h"

#define MAX_LINKS 64

static struct bpf_link *links[MAX_LINKS];
static int nlinks;
static int multi_fds[MAX_LINKS];
static int nmulti;
/* What -u attaches as uprobe_multi links: the empty programs, or --body's. */
static struct bpf_program *multi_entry, *multi_return;

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

/* The file offset of function NAME in the ELF file PATH (.symtab, else .dynsym). */
static int func_offset(const char *path, const char *name, __u64 *off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = -ENOENT;
	Elf_Scn *scn = NULL;
	__u64 vaddr = 0;
	size_t nph;
	GElf_Shdr sh;
	Elf *elf;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	for (int pass = 0; pass < 2 && !vaddr; pass++) {
		while ((scn = elf_nextscn(elf, scn))) {
			Elf_Data *data;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize)
				continue;
			data = elf_getdata(scn, NULL);
			for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *n;

				if (!gelf_getsym(data, i, &sym) ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
					continue;
				n = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (n && !strcmp(n, name)) {
					vaddr = sym.st_value;
					break;
				}
			}
		}
	}
	/* A virtual address becomes a file offset through the PT_LOAD that maps it. */
	if (vaddr && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD &&
			    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
				*off = vaddr - ph.p_vaddr + ph.p_offset;
				err = 0;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return err;
}

/*
 * An entry and a return uprobe_multi link at FUNC of BIN (ENTRY_ONLY: the entry's alone), the
 * way bpfsight attaches.
 */
static int attach_multi(struct floor_bpf *skel, const char *bin, const char *func, int entry_only)
{
	__u64 off;
	int err = func_offset(bin, func, &off);

	if (err) {
		fprintf(stderr, "floor: no function %s in %s: %s\n", func, bin, strerror(-err));
		return err;
	}
	for (int ret = 0; ret < 2 - entry_only; ret++) {
		int fd;

		if (nmulti == MAX_LINKS)
			return -E2BIG;
		const struct bpf_program *prog = ret ? multi_return : multi_entry;

		fd = uprobe_multi__attach(prog, bin, &off, NULL, 1, ret);
		if (fd < 0) {
			fprintf(stderr, "floor: cannot attach a uprobe_multi link to %s:%s: %s\n",
				bin, func, strerror(-fd));
			return fd;
		}
		multi_fds[nmulti++] = fd;
	}
	return 0;
}

/*
 * The programs -u attaches: the empty pair, or BODY's (b_BODY_ent, b_BODY_ret), the only
 * body programs loaded. Body maps are created only for a body.
 */
static int pick_multi(struct floor_bpf *skel, const char *body)
{
	char want[2][32];
	struct bpf_program *prog;

	multi_entry = skel->progs.floor_multi_entry;
	multi_return = skel->progs.floor_multi_return;
	snprintf(want[0], sizeof(want[0]), "b_%s_ent", body ? body : "");
	snprintf(want[1], sizeof(want[1]), "b_%s_ret", body ? body : "");
	bpf_object__for_each_program(prog, skel->obj) {
		const char *name = bpf_program__name(prog);

		if (strncmp(name, "b_", 2))
			continue;
		bpf_program__set_autoload(prog, false);
		if (body && !strcmp(name, want[0]))
			multi_entry = prog;
		else if (body && !strcmp(name, want[1]))
			multi_return = prog;
	}
	if (body && multi_entry == skel->progs.floor_multi_entry) {
		fprintf(stderr, "floor: no probe body '%s' (see bench/floor.bpf.c)\n", body);
		return -EINVAL;
	}
	bpf_program__set_autoload(skel->progs.floor_multi_entry, false);
	bpf_program__set_autoload(skel->progs.floor_multi_return, false);
	bpf_map__set_autocreate(skel->maps.body_rb, !!body);
	bpf_map__set_autocreate(skel->maps.body_task, !!body);
	bpf_map__set_autocreate(skel->maps.body_slots, !!body);
	return 0;
}

static int drop_record(void *ctx, void *data, size_t size)
{
	return 0;
}

/* "BIN:FUNC" -> an entry uprobe and (unless ENTRY_ONLY) a uretprobe on FUNC. */
static int attach_uprobe(struct floor_bpf *skel, char *spec, int multi, int entry_only)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	char *colon = strrchr(spec, ':');
	int err;

	if (!colon || colon == spec || !colon[1]) {
		fprintf(stderr, "floor: -u and -e want BIN:FUNC, not '%s'\n", spec);
		return -EINVAL;
	}
	*colon = 0;
	if (multi)
		return attach_multi(skel, spec, colon + 1, entry_only);
	opts.func_name = colon + 1;
	opts.retprobe = false;
	err = keep(bpf_program__attach_uprobe_opts(skel->progs.floor_uprobe, -1, spec, 0, &opts),
		   colon + 1);
	if (err || entry_only)
		return err;
	opts.retprobe = true;
	return keep(
		bpf_program__attach_uprobe_opts(skel->progs.floor_uretprobe, -1, spec, 0, &opts),
		colon + 1);
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
	return keep(
		bpf_program__attach_usdt(skel->progs.floor_usdt, -1, spec, provider, name, NULL),
		name);
bad:
	fprintf(stderr, "floor: -U wants BIN:PROVIDER:NAME\n");
	return -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: floor [--syscalls] [--sched] [--rss-stat] [-u BIN:FUNC]... [-e BIN:FUNC]... "
		"[-U BIN:PROVIDER:NAME]... [--perf-uprobes] -- CMD [ARGS...]\n\n"
		"Runs CMD with empty BPF programs attached: the benchmark's floor.\n"
		"  --syscalls       tp_btf sys_enter and sys_exit\n"
		"  --sched          tp_btf sched_switch and sched_waking\n"
		"  --rss-stat       tp_btf rss_stat\n"
		"  -u BIN:FUNC      entry and return uprobe on FUNC (uprobe_multi links)\n"
		"  -e BIN:FUNC      entry uprobe alone on FUNC\n"
		"  -U BIN:PROVIDER:NAME  USDT probe\n"
		"  --perf-uprobes   -u as perf-event uprobes (as bpftrace attaches them)\n"
		"  --body NAME      -u programs that do NAME (see bench/floor.bpf.c)\n");
}

/* --page-faults: the software page-fault event on every online CPU, sampled each PERIOD. */
static int attach_page_faults(struct floor_bpf *skel, unsigned long long period)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = period,
	};
	int ncpu = libbpf_num_possible_cpus(), err = 0;

	for (int cpu = 0; cpu < ncpu && !err; cpu++) {
		int fd = syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)
				continue;
			fprintf(stderr, "floor: perf_event_open on CPU %d: %s\n", cpu,
				strerror(errno));
			return -errno;
		}
		err = keep(bpf_program__attach_perf_event(skel->progs.floor_page_fault, fd),
			   "page-faults");
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "syscalls", no_argument, NULL, 's' },
		{ "sched", no_argument, NULL, 'S' },
		{ "rss-stat", no_argument, NULL, 'R' },
		{ "page-faults", required_argument, NULL, 'F' },
		{ "perf-uprobes", no_argument, NULL, 'P' },
		{ "body", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char *uprobes[MAX_LINKS], *usdts[MAX_LINKS];
	int entry_only[MAX_LINKS];
	int nup = 0, nusdt = 0, syscalls = 0, sched = 0, rss = 0, perf = 0, multi, c, err;
	int status = 0;
	unsigned long long fault_period = 0;
	struct ring_buffer *rb = NULL;
	const char *body = NULL;
	struct floor_bpf *skel;
	pid_t child;

	while ((c = getopt_long(argc, argv, "+u:e:U:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			syscalls = 1;
			break;
		case 'S':
			sched = 1;
			break;
		case 'R':
			rss = 1;
			break;
		case 'F':
			fault_period = strtoull(optarg, NULL, 0);
			break;
		case 'P':
			perf = 1;
			break;
		case 'b':
			body = optarg;
			break;
		case 'u':
		case 'e':
			if (nup < MAX_LINKS) {
				entry_only[nup] = c == 'e';
				uprobes[nup++] = optarg;
			}
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
	bpf_program__set_autoload(skel->progs.floor_sched_waking, sched);
	bpf_program__set_autoload(skel->progs.floor_rss_stat, rss);
	bpf_program__set_autoload(skel->progs.floor_page_fault, fault_period > 0);
	multi = nup && !perf && uprobe_multi__supported();
	if (body && !multi) {
		fprintf(stderr, "floor: --body needs -u and uprobe_multi links\n");
		err = -EINVAL;
		goto out;
	}
	err = pick_multi(skel, body);
	if (err)
		goto out;
	for (int i = 0; i < 2; i++) {
		struct bpf_program *prog = i ? multi_return : multi_entry;

		bpf_program__set_autoload(prog, multi);
		if (multi)
			uprobe_multi__prepare(prog);
	}
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
		err = err
			      ?: keep(bpf_program__attach(skel->progs.floor_sched_waking),
				      "sched_waking");
	}
	if (!err && rss)
		err = keep(bpf_program__attach(skel->progs.floor_rss_stat), "rss_stat");
	if (!err && fault_period)
		err = attach_page_faults(skel, fault_period);
	for (int i = 0; !err && i < nup; i++)
		err = attach_uprobe(skel, uprobes[i], multi, entry_only[i]);
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
	if (body && !strcmp(body, "rbuf")) {
		/* The programs never wake us: drain the records on a short timer. */
		rb = ring_buffer__new(bpf_map__fd(skel->maps.body_rb), drop_record, NULL, NULL);
		if (!rb) {
			err = -errno;
			goto out;
		}
	}
	for (;;) {
		pid_t w = waitpid(child, &status, rb ? WNOHANG : 0);

		if (w == child)
			break;
		if (w < 0 && errno != EINTR) {
			err = -errno;
			goto out;
		}
		if (rb) {
			ring_buffer__consume(rb);
			usleep(5000); /* bpfsight is woken for each 1 MB: ~6 ms at this rate */
		}
	}
	err = 0;
out:
	ring_buffer__free(rb);
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	for (int i = 0; i < nmulti; i++)
		close(multi_fds[i]);
	floor_bpf__destroy(skel);
	if (err)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
