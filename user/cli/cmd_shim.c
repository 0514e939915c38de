// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight shim: write the embedded cupti-shim where a job can load it, and print the two
 * lines its environment needs. Set once in a production job's environment, they let any
 * later `bpfsight record -p PID -t gpu,nvtx` switch GPU timing and NVTX ranges on and off
 * in the running job, without a restart (the shim idles while no tracer is attached).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>
#include "commands.h"
#include "getopt_error.h"
#include "shim_blob.h"
#include "shim_waker.h"
#include "msg.h"

/*
 * Where `make install` and the Debian package put the shim: PREFIX/lib/bpfsight beside
 * PREFIX/bin/bpfsight, so an installed bpfsight finds its own copy (identical: left as it
 * is, no root needed) whatever the PREFIX. A binary elsewhere (build/) keeps the old default.
 */
static const char *default_dir(char *buf, size_t len)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return SHIM_INSTALL_DIR;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash || slash - exe < 4 || strncmp(slash - 4, "/bin", 4))
		return SHIM_INSTALL_DIR;
	slash[-4] = 0; /* exe is now PREFIX ("" for /bin/bpfsight) */
	if (snprintf(buf, len, "%s/lib/bpfsight", exe) >= (int)len)
		return SHIM_INSTALL_DIR;
	return buf;
}

static void usage(FILE *f)
{
	char buf[PATH_MAX];

	fprintf(f,
		"usage: bpfsight shim [--install DIR] [--print-env]\n"
		"       bpfsight shim --wake PID\n"
		"\n"
		"Writes the cupti-shim built into bpfsight as DIR/" SHIM_FILE_NAME " (default\n"
		"DIR %s; an identical file is left as it is) and prints its path\n"
		"and the environment a job needs to be traced later without a restart:\n"
		"  export CUDA_INJECTION64_PATH=DIR/" SHIM_FILE_NAME "\n"
		"  export NVTX_INJECTION64_PATH=DIR/" SHIM_FILE_NAME "\n"
		"\n"
		"  -i, --install DIR   where to write it\n"
		"  -e, --print-env     print only the two export lines (for eval)\n"
		"  -w, --wake PID      wake PID's shim, asleep since its last tracer left, to read\n"
		"                      its probes' semaphores now (bpfsight does it; bpftrace not)\n"
		"  -h, --help          this help\n"
		"\n"
		"The shim does nothing until a tracer attaches (bpfsight record -p PID -t gpu,nvtx\n"
		"or -a), and stops when it detaches; then it sleeps, without a timer, until the next\n"
		"bpfsight wakes it. To keep another NVTX injection library too,\n"
		"set BPFSIGHT_NVTX_CHAIN=/path/to/it (the shim passes every NVTX call on).\n",
		default_dir(buf, sizeof(buf)));
}

/* Also printed by `bpfsight __complete options shim`: completion and the docs test read it. */
const struct option shim_options[] = {
	{ "install", required_argument, NULL, 'i' },
	{ "print-env", no_argument, NULL, 'e' },
	{ "wake", required_argument, NULL, 'w' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* --wake PID: for a shim driven by another tracer (bpftrace), which cannot wake it. */
static int wake(const char *arg)
{
	char *end;
	long pid = strtol(arg, &end, 10);
	int r;

	if (*end || pid <= 0) {
		pr_err("--wake %s: give a process id\n", arg);
		return 1;
	}
	r = shim_waker__wake((pid_t)pid);
	if (r < 0) {
		pr_err("--wake %ld: %s\n", pid,
		       r == -ENOENT || r == -ESRCH   ? "no such process"
		       : r == -EACCES || r == -EPERM ? "permission denied (run it as root)"
						     : strerror(-r));
		return 1;
	}
	if (!r) {
		pr_err("--wake %ld: the process has no sleeping cupti-shim (none loaded, or one "
		       "that never slept: it polls until its first tracer leaves)\n",
		       pid);
		return 1;
	}
	return 0;
}

int cmd_shim(int argc, char **argv)
{
	char path[PATH_MAX], buf[PATH_MAX];
	const char *dir = default_dir(buf, sizeof(buf));
	int c, env_only = 0, err;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "i:ehw:", shim_options, NULL)) != -1) {
		switch (c) {
		case 'w':
			return wake(optarg);
		case 'i':
			dir = optarg;
			break;
		case 'e':
			env_only = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			getopt_error__print("shim", argc, argv, "i:ehw:", shim_options);
			return 1;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 1;
	}
	if (!*dir) {
		pr_err("--install needs a directory\n");
		return 1;
	}
	err = shim_blob__install(NULL, dir, SHIM_FILE_NAME, path, sizeof(path));
	if (err == -ENOENT && !shim_blob__size()) {
		pr_err("this bpfsight was built without the cupti-shim (no "
		       "$CUDA_HOME/include/cupti.h at build time): rebuild with the CUDA toolkit\n");
		return 1;
	}
	if (err) {
		pr_err("cannot write %s/%s: %s\n", dir, SHIM_FILE_NAME,
		       err == -EACCES ? "permission denied (run it as root, or give --install DIR)"
		       : err == -EPERM
			       ? "it, or a directory above it, is not root's (or yours), or others "
				 "can write it: whoever can could swap the library every job loads"
			       : strerror(-err));
		return 1;
	}
	if (!env_only)
		printf("%s\n\n# in the job's environment:\n", path);
	printf("export CUDA_INJECTION64_PATH=%s\n", path);
	printf("export NVTX_INJECTION64_PATH=%s\n", path);
	return 0;
}
