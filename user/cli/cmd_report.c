// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight report FILE [-o OUT.html] [--force]: one self-contained HTML page of a trace, for
 * a machine with no GUI (report_html.h). The verdict and the tables are the stats reports',
 * the recording's details `bpfsight info`'s own output (this binary run as `info FILE`, so
 * the page says exactly what info says), the timelines come from one more walk of the trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "bpfsight_version.h"
#include "commands.h"
#include "getopt_error.h"
#include "report_html.h"
#include "stats_from.h"
#include "stats.h"
#include "steps.h"
#include "msg.h"
#include "sudo_owner.h"

#define INFO_MAX (256 * 1024) /* info's text is a few KiB; more is cut, and says so */

static void report_usage(FILE *f)
{
	char sources[256];

	steps__list(sources, sizeof(sources));
	fprintf(f,
		"Usage: bpfsight report FILE [-o OUT] [--force] [--steps SOURCE]\n"
		"       bpfsight report --from clickhouse://HOST:PORT/JOB -o OUT [--force]\n"
		"              [--host NAME] [--rank N] [--file PATH] [-v]\n"
		"\n"
		"One self-contained HTML page of a trace (no network: all inline): stats' verdict\n"
		"first, headline figures, info's summary (folded), timelines on one time axis\n"
		"(drag to zoom them all: steps and ranges, GPU busy, GIL contention, off-CPU,\n"
		"system calls, a lane per busy thread, loss), then a part per family: its flame\n"
		"graphs (click to zoom, search) and the top rows of its stats reports with data.\n"
		"Opens in any browser, offline.\n"
		"\n"
		"  -o, --output OUT   default: FILE with .bst replaced by .html\n"
		"      --force        replace OUT if it exists\n"
		"      --steps SOURCE the per-step reports' steps where a process has no torch\n"
		"                     steps, as stats --steps: SOURCE's, one of\n"
		"                     %s\n"
		"      --from URL     a page of a ClickHouse server's rows (bpfsight ship): the\n"
		"                     verdict judged from its answers and the reports computed\n"
		"                     there, as stats --from (no timelines: the events stay there)\n"
		"      --host NAME    --from: only NAME's rows\n"
		"      --rank N       --from: only rank N's rows\n"
		"      --file PATH    --from: only the rows of the file shipped as PATH\n"
		"  -v, --verbose      --from: say which ClickHouse release the server runs\n"
		"  -h, --help         this help\n"
		"\n"
		"Exit status: 0 done, 1 failed (nothing is left at OUT), 3 written but corrupt\n"
		"chunks of FILE were skipped; --from: 2, 4, 6 as stats --from's.\n",
		sources);
}

/* Also printed by `bpfsight __complete options report`: completion and the docs test read it. */
const struct option report_options[] = {
	{ "output", required_argument, NULL, 'o' }, { "force", no_argument, NULL, 'F' },
	{ "steps", required_argument, NULL, 'S' },  { "from", required_argument, NULL, 'R' },
	{ "host", required_argument, NULL, 'H' },   { "rank", required_argument, NULL, 'N' },
	{ "file", required_argument, NULL, 'P' },   { "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },	    { NULL, 0, NULL, 0 },
};

/* `bpfsight info PATH`'s stdout into a string (NULL after a message on failure). */
static char *info_text(const char *path)
{
	char *argv[] = { "bpfsight", "info", (char *)path, NULL };
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap + 64);
	int fds[2], st;
	pid_t pid;
	ssize_t n;

	if (!buf || pipe2(fds, O_CLOEXEC)) {
		free(buf);
		pr_info("%s\n", strerror(errno));
		return NULL;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* Its messages are report's (cmd_info.c), said once: the page's walk says more. */
		setenv("BPFSIGHT_CMD", "report", 1);
		if (dup2(fds[1], STDOUT_FILENO) >= 0)
			execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		free(buf);
		pr_err("cannot run bpfsight info: %s\n", strerror(errno));
		return NULL;
	}
	while ((n = read(fds[0], buf + len, cap - len)) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		len += n;
		if (len == cap) {
			char *t = cap < INFO_MAX ? realloc(buf, 2 * cap + 64) : NULL;

			if (!t)
				break;
			buf = t;
			cap *= 2;
		}
	}
	close(fds[0]); /* info, if still writing, gets EPIPE */
	buf[len] = 0;
	if (len == cap)
		strcat(buf, "\n[... cut]\n");
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* 3: corrupt chunks skipped, the report says so too; 1: info said why on stderr. */
	if (!WIFEXITED(st) ||
	    (WEXITSTATUS(st) != EXIT_READ_OK && WEXITSTATUS(st) != EXIT_READ_CORRUPT)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static char *default_out(const char *file)
{
	size_t n = strlen(file);
	char *out;

	if (n > 4 && !strcmp(file + n - 4, ".bst"))
		n -= 4;
	if (asprintf(&out, "%.*s.html", (int)n, file) < 0)
		return NULL;
	return out;
}

/* OUT may be written (absent, or a regular file and FORCE), TMP its temporary name: 0, or
 * -1 (said). */
static int page_check(const char *out, int force, char *tmp, size_t len)
{
	struct stat st;

	if (snprintf(tmp, len, "%s.XXXXXX", out) >= (int)len) {
		pr_err("%s: %s\n", out, strerror(ENAMETOOLONG));
		return -1;
	}
	if (!lstat(out, &st) && (!force || !S_ISREG(st.st_mode))) {
		pr_err("%s exists%s\n", out,
		       S_ISREG(st.st_mode) ? ": use --force to replace it"
					   : " and is not a regular file");
		return -1;
	}
	return 0;
}

/* The page, written to TMP (a temporary name beside OUT), opened: NULL (said). */
static FILE *page_create(const char *out, char *tmp, int *fd)
{
	FILE *f = NULL;

	*fd = mkostemp(tmp, O_CLOEXEC);
	if (*fd >= 0)
		sudo_owner__give_fd(*fd);
	if (*fd < 0 || fchmod(*fd, 0644) || !(f = fdopen(*fd, "w"))) {
		pr_err("cannot create %s: %s\n", out, strerror(errno));
		if (*fd >= 0) {
			close(*fd);
			unlink(tmp);
		}
		return NULL;
	}
	return f;
}

/*
 * The page F at TMP complete (WROTE: its writer said nothing went wrong, else it said what
 * did): flushed, synced and renamed to OUT, never half a page there. 0, or EXIT_READ_FAIL.
 */
static int page_finish(FILE *f, int fd, const char *tmp, const char *out, int wrote)
{
	if (wrote && (fflush(f) || ferror(f) || fsync(fd))) {
		pr_err("writing %s failed: %s\n", out, strerror(errno));
		wrote = 0;
	}
	fclose(f);
	if (wrote && rename(tmp, out)) {
		pr_err("cannot write %s: %s\n", out, strerror(errno));
		wrote = 0;
	}
	if (!wrote) {
		unlink(tmp);
		return EXIT_READ_FAIL;
	}
	pr_info("wrote %s\n", out);
	return 0;
}

/* report --from: the page of a server's answers (stats_from__page), as a file's is written. */
static int report_from(const struct stats_from *from, int argc, const char *out, int force)
{
	char tmp[PATH_MAX];
	int fd, status;
	FILE *f;

	if (optind < argc || !out) {
		pr_err("report --from reads the server: %s\n",
		       optind < argc ? "no FILE (remove it, or --from)" : "-o OUT.html, the page");
		return EXIT_READ_FAIL;
	}
	if (page_check(out, force, tmp, sizeof(tmp)) || !(f = page_create(out, tmp, &fd)))
		return EXIT_READ_FAIL;
	status = stats_from__page(from, f);
	/* the server's failure (2, 4, 6: said) before the page's, which is then none */
	fd = page_finish(f, fd, tmp, out, !status);
	return status ?: fd;
}

int cmd_report(int argc, char **argv)
{
	char *out = NULL, *info = NULL, tmp[PATH_MAX];
	const char *file, *out_arg = NULL, *steps = NULL;
	struct stats *stats = NULL;
	int c, force = 0, status = EXIT_READ_FAIL, fd = -1;
	FILE *f = NULL;
	struct stat st;
	struct stats_from from = { .rank = -2 };
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:hv", report_options, NULL)) != -1) {
		switch (c) {
		case 'o':
			out_arg = optarg;
			break;
		case 'F':
			force = 1;
			break;
		case 'S':
			if (steps__check(optarg, "--steps"))
				return EXIT_READ_FAIL;
			steps = optarg;
			break;
		case 'R':
			from.url = optarg;
			break;
		case 'H':
			from.host = optarg;
			break;
		case 'P':
			from.file = optarg;
			break;
		case 'N':
			errno = 0;
			from.rank = (int)strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || from.rank < -1) {
				pr_err("--rank %s: a rank, 0 and up (-1: the rows of no known rank)\n",
				       optarg);
				return EXIT_READ_FAIL;
			}
			break;
		case 'v':
			from.verbose = 1;
			break;
		case 'h':
			report_usage(stdout);
			return 0;
		default:
			getopt_error__print("report", argc, argv, "o:hv", report_options);
			return EXIT_READ_FAIL;
		}
	}
	if (from.url)
		return report_from(&from, argc, out_arg, force);
	if (from.host || from.file || from.rank != -2 || from.verbose) {
		pr_err("--host, --rank, --file and -v go with --from: a server's rows\n");
		return EXIT_READ_FAIL;
	}
	file = cmd__trace_arg("report", argc, argv, report_usage);
	if (!file)
		return EXIT_READ_FAIL;
	/* Read three times (info, stats, timelines): a pipe cannot be. */
	if (stat(file, &st)) {
		pr_err("%s: %s\n", file, strerror(errno));
		return EXIT_READ_FAIL;
	}
	if (!S_ISREG(st.st_mode)) {
		pr_err("%s: not a regular file (a pipe? save it first)\n", file);
		return EXIT_READ_FAIL;
	}
	out = out_arg ? strdup(out_arg) : default_out(file);
	if (!out) {
		pr_info("%s\n", strerror(ENOMEM));
		goto done;
	}
	if (page_check(out, force, tmp, sizeof(tmp)))
		goto done;

	info = info_text(file);
	if (!info)
		goto done;
	/* The page's own walk says how the file ended: once, as report's. */
	stats = stats__collect_opts(
		file, &(struct stats_opts){ .cmd = "report", .quiet = 1, .steps = steps }, &status);
	if (!stats)
		goto done;
	if (!stats__events(stats)) {
		/* A page of empty timelines would read as a job that did nothing. */
		pr_err("%s holds no events: nothing to report in %s\n", file, out);
		status = EXIT_READ_FAIL;
		goto done;
	}
	/* Written to a temporary name beside OUT, renamed once complete: never half a page. */
	f = page_create(out, tmp, &fd);
	if (!f) {
		status = EXIT_READ_FAIL;
		goto done;
	}
	struct report_input in = { file, BPFSIGHT_VERSION, info, stats };
	int walk = report_html__write(&in, f);

	if (page_finish(f, fd, tmp, out, walk != EXIT_READ_FAIL))
		status = EXIT_READ_FAIL;
	else if (walk > status)
		status = walk;
done:
	stats__free(stats);
	free(info);
	free(out);
	return status;
}
