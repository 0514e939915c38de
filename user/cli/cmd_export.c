// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight export FILE --format FORMAT [-o OUT] [--force]: one of the formats writes OUT. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "export_model.h"
#include "commands.h"
#include "getopt_error.h"
#include "ch_labels.h"
#include "export.h"
#include "export_split.h"
#include "trace_ranks.h"
#include "family.h"
#include "trace_walk.h"
#include "mono_clock.h"
#include "msg.h"

#define PROGRESS_NS    500000000ull /* redraw at most twice a second */
#define PROGRESS_EVERY 4096	    /* records between clock reads */

static volatile sig_atomic_t export_stop;

static void export_on_signal(int sig)
{
	export_stop = sig;
}

/*
 * The I-th format export offers: every trace's (export_formats.c), then the families' own;
 * NULL past the last.
 */
static const struct exporter *export_nth(size_t i)
{
	for (const struct exporter *const *e = export_formats; *e; e++)
		if (!i--)
			return *e;
	for_each_family(it)
		for (const struct exporter *const *e = family__exporters(it.f); e && *e; e++)
			if (!i--)
				return *e;
	return NULL;
}

/* "perfetto, chrome, ...": every format, or every suffix (SUFFIXES), into BUF. */
static void export_list(char *buf, size_t len, int suffixes)
{
	const struct exporter *ex;
	size_t used = 0;
	int n;

	buf[0] = 0;
	for (size_t i = 0; (ex = export_nth(i)); i++) {
		n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			     suffixes ? ex->suffix : ex->format);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += n;
	}
}

void export__list_formats(char *buf, size_t len)
{
	export_list(buf, len, 0);
}

/* TEXT wrapped at 88 columns, its lines after the first indented by 23 spaces. */
static void export_wrapped(FILE *f, const char *text)
{
	int col = 23, len;

	for (const char *p = text; *p; p += len + (p[len] == ' ')) {
		len = (int)strcspn(p, " ");
		if (p != text && col + 1 + len > 88) {
			fprintf(f, "\n%23s", "");
			col = 23;
		} else if (p != text) {
			col += fprintf(f, " ");
		}
		col += fprintf(f, "%.*s", len, p);
	}
	fputc('\n', f);
}

static void export_usage(FILE *f)
{
	const struct exporter *ex;
	char suffixes[512], text[768];
	int width = 16;

	fprintf(f, "Usage: bpfsight export FILE --format FORMAT [-o OUT] [--force]\n"
		   "\n"
		   "Convert a trace for the tools that open it. Formats:\n");
	/* the names' column fits the longest, two spaces before its text */
	for (size_t i = 0; (ex = export_nth(i)); i++)
		if ((int)strlen(ex->format) + 1 > width)
			width = (int)strlen(ex->format) + 1;
	for (size_t i = 0; (ex = export_nth(i)); i++)
		fprintf(f, "  %-*s %s\n", width, ex->format, ex->desc);
	export_list(suffixes, sizeof(suffixes), 1);
	snprintf(text, sizeof(text),
		 "default: FILE with .bst replaced by the format's suffix (%s, in the order "
		 "above); an OUT ending in .gz is gzip-compressed (perfetto, chrome; pprof always "
		 "is)",
		 suffixes);
	fprintf(f, "\n"
		   "  -f, --format FORMAT  one of the above (required)\n"
		   "  -o, --output OUT     ");
	export_wrapped(f, text);
	fprintf(f,
		"      --force          replace OUT if it exists (a symlink is never followed or\n"
		"                       replaced)\n"
		"      --job NAME       clickhouse: the rows' job (default: FILE's name less .bst)\n"
		"      --rank N         clickhouse: the rows' rank (default: a merged file's ranks,\n"
		"                       else -1)\n"
		"  -h, --help           this help\n"
		"\n"
		"Exit status: 0 done, 1 failed (nothing is left at OUT), 3 written but corrupt\n"
		"chunks of FILE were skipped.\n");
}

struct export_progress {
	int on; /* stderr is a terminal */
	const struct trace_reader *r;
	off_t size;
	__u64 start, last;
	int drawn;
};

static void export_progress_init(struct export_progress *p, const char *path,
				 const struct trace_reader *r)
{
	struct stat st;

	memset(p, 0, sizeof(*p));
	p->r = r;
	p->on = isatty(STDERR_FILENO);
	if (!p->on)
		return;
	if (!stat(path, &st) && S_ISREG(st.st_mode))
		p->size = st.st_size;
	p->start = p->last = mono_now_ns();
}

static void export_progress_draw(struct export_progress *p, __u64 events)
{
	__u64 now = mono_now_ns();
	double secs;
	off_t pos;

	if (!p->on || now - p->last < PROGRESS_NS)
		return;
	p->last = now;
	secs = (now - p->start) / 1e9;
	pos = p->size > 0 ? trace_reader__offset(p->r) : -1;
	if (pos >= 0)
		fprintf(stderr, "\r\033[Kbpfsight export: %3.0f%%  %llu events  %.1f M events/s",
			100.0 * (pos > p->size ? p->size : pos) / p->size,
			(unsigned long long)events, events / secs / 1e6);
	else
		fprintf(stderr, "\r\033[Kbpfsight export: %llu events  %.1f M events/s",
			(unsigned long long)events, events / secs / 1e6);
	p->drawn = 1;
}

static void export_progress_clear(struct export_progress *p)
{
	if (p->drawn)
		fprintf(stderr, "\r\033[K");
	p->drawn = 0;
}

/* FILE with .bst (if any) replaced by SUFFIX; NULL when out of memory. */
static char *export_default_out(const char *file, const char *suffix)
{
	size_t n = strlen(file);
	char *out;

	if (n > 4 && !strcmp(file + n - 4, ".bst"))
		n -= 4;
	if (asprintf(&out, "%.*s%s", (int)n, file, suffix) < 0)
		return NULL;
	return out;
}

/*
 * May OUT be written? 0 when it does not exist (or is a file --force lets us replace, which
 * *replace then says); else 1 after saying why not.
 */
static int export_check_out(const char *out, int force, int *replace)
{
	struct stat st;

	*replace = 0;
	if (lstat(out, &st)) {
		if (errno == ENOENT)
			return 0;
		pr_err("%s: %s\n", out, strerror(errno));
		return 1;
	}
	if (S_ISLNK(st.st_mode)) {
		pr_err("%s is a symbolic link: refusing to follow or replace it; "
		       "choose another -o\n",
		       out);
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		pr_err("%s exists and is not a regular file\n", out);
		return 1;
	}
	if (!force) {
		pr_err("%s exists: use --force to replace it\n", out);
		return 1;
	}
	*replace = 1;
	return 0;
}

static const struct exporter *export_find(const char *format)
{
	const struct exporter *ex;

	for (size_t i = 0; (ex = export_nth(i)); i++)
		if (!strcmp(ex->format, format))
			return ex;
	return NULL;
}

/* Also printed by `bpfsight __complete options export`: completion and the docs test read it. */
const struct option export_options[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'F' },
	{ "job", required_argument, NULL, 'J' },
	{ "rank", required_argument, NULL, 'R' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

/* export's options: -1 to go on, else the exit status (--help, a bad option). */
static int export_parse(int argc, char **argv, const char **format, const char **out_arg,
			int *force, struct export_opts *opts)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", export_options, NULL)) != -1) {
		switch (c) {
		case 'f':
			*format = optarg;
			break;
		case 'o':
			*out_arg = optarg;
			break;
		case 'F':
			*force = 1;
			break;
		case 'J':
		case 'R':
			if (ch_labels__option(opts, c == 'J', optarg))
				return EXIT_READ_FAIL;
			break;
		case 'h':
			export_usage(stdout);
			return EXIT_READ_OK;
		default:
			getopt_error__print("export", argc, argv, "f:o:h", export_options);
			return EXIT_READ_FAIL;
		}
	}
	return -1;
}

/*
 * The exporter of FORMAT and, into *OUT (the caller frees it), the file it writes: OUT_ARG,
 * else FILE with the format's suffix. NULL, said on stderr, when there is none.
 */
static const struct exporter *export_pick(const char *format, const char *file, const char *out_arg,
					  char **out)
{
	const struct exporter *ex;
	char list[512];

	export_list(list, sizeof(list), 0);
	if (!format) {
		pr_err("which format? --format %s\n", list);
		return NULL;
	}
	ex = export_find(format);
	if (!ex) {
		pr_err("unknown format '%s' (formats: %s)\n", format, list);
		return NULL;
	}
	*out = out_arg ? strdup(out_arg) : export_default_out(file, ex->suffix);
	if (!*out) {
		pr_err("out of memory\n");
		return NULL;
	}
	return ex;
}

/*
 * Every record of W, decoded, through EX into *ST, with progress on a terminal, until the
 * end or a signal; then EX's finish, which releases *ST (set to NULL). 0, or the exporter's
 * error (*ST is then the caller's to abort). EVENTS counts the decoded events.
 */
static int export_walk(const struct exporter *ex, void **st, struct trace_walk *w, const char *file,
		       __u64 *events)
{
	struct sigaction sa = {}, old_int, old_term;
	const struct rec_decoder *dec;
	struct export_progress prog;
	const struct bs_hdr *rec;
	struct event ev;
	int ret, err = 0;
	__u64 n = 0;

	/* Ctrl-C must not leave half a file that looks like an export. */
	sa.sa_handler = export_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	export_progress_init(&prog, file, w->r);

	while (!export_stop && (ret = trace_walk__next(w, &rec, &dec))) {
		const struct event *evp = NULL;

		if (ret != 1)
			continue;
		if (dec) {
			/* family__decode: a span clipped to the start says where it began */
			if (family__decode(rec, w->m, &ev) == 1) {
				evp = &ev;
				(*events)++;
			}
		}
		err = ex->record(*st, rec, evp, w->m);
		if (err)
			break;
		if (prog.on && !(++n % PROGRESS_EVERY))
			export_progress_draw(&prog, *events);
	}
	export_progress_clear(&prog);
	if (!err && !export_stop) {
		err = ex->finish(*st, w->m, trace_walk__status(w));
		*st = NULL; /* finish releases it, whatever it returns */
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return err;
}

int export__render(const struct exporter *ex, const char *file, const char *out,
		   const struct export_opts *opts, __u64 *events)
{
	struct trace_walk w;
	int err = 0, status, busy;
	void *st;

	*events = 0;
	if (trace_walk__open(&w, "ship", file))
		return -EINVAL;
	st = ex->open(out, trace_walk__meta(&w), opts, &err);
	if (st)
		err = export_walk(ex, &st, &w, file, events);
	else
		err = err ?: -EIO;
	if (err || export_stop) {
		if (st)
			ex->abort(st);
		unlink(out);
		trace_walk__close(&w);
		return export_stop ? -EINTR : err;
	}
	/* a recording still writing it: its rows and its content id are not yet its last */
	busy = trace_walk__status(&w)->truncated && trace_walk__status(&w)->writer_pid;
	status = trace_walk__finish(&w);
	trace_walk__close(&w);
	if (busy)
		unlink(out);
	return busy ? -EBUSY : status == EXIT_READ_FAIL ? -EIO : 0;
}

/* May DIR take a file per rank? It may not exist, or be a directory (non-empty: --force). */
static int export_check_dir(const char *dir, int force)
{
	struct stat st;
	int n = 0;

	if (lstat(dir, &st)) {
		if (errno == ENOENT)
			return 0;
		pr_err("cannot use %s for the ranks' files: %s\n", dir, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		pr_err("%s is not a directory: a merged file's Chrome export is a "
		       "directory of one file per rank (HTA reads it so)\n",
		       dir);
		return 1;
	}
	for (DIR *d = opendir(dir); d;) {
		struct dirent *e = readdir(d);

		if (!e) {
			closedir(d);
			break;
		}
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	}
	if (n && !force) {
		pr_err("%s is not empty: use --force to write there\n", dir);
		return 1;
	}
	return 0;
}

/*
 * A merged file to Chrome/Kineto JSON: one file per rank, OUT_ARG a directory (default: FILE
 * less .bst, plus .kineto), each with its rank's distributedInfo. The exit status.
 */
static int export_by_rank(const struct exporter *ex, struct trace_walk *w, const char *file,
			  const char *out_arg, int force)
{
	char *dir = out_arg ? strdup(out_arg) : export_default_out(file, ".kineto");
	__u64 events = 0;
	int err = 0, status = EXIT_READ_FAIL;
	void *st = NULL;

	if (!dir || export_check_dir(dir, force))
		goto out;
	st = export_split__open(ex, dir, ".json", force, trace_walk__meta(w), &err);
	if (!st) {
		pr_err("cannot create %s: %s\n", dir, strerror(-err));
		goto out;
	}
	err = export_walk(&export_split, &st, w, file, &events);
	if (err || export_stop) {
		if (st)
			export_split.abort(st);
		pr_info("%s: removed what was written in %s\n",
			export_stop ? "interrupted" : strerror(err < 0 ? -err : EIO), dir);
		status = export_stop ? 128 + export_stop : EXIT_READ_FAIL;
		goto out;
	}
	status = trace_walk__finish(w);
	pr_info("wrote %s/ (a file per rank, %u ranks, %llu events)\n", dir,
		trace_ranks__count(trace_model__ranks(w->m)), (unsigned long long)events);
out:
	free(dir);
	return status;
}

int cmd_export(int argc, char **argv)
{
	const char *format = NULL, *out_arg = NULL, *file;
	int ret, force = 0, replace, err = 0, status = EXIT_READ_FAIL;
	struct export_opts opts = { .rank = -1 };
	const struct exporter *ex;
	struct trace_walk w;
	__u64 events = 0;
	char *out = NULL;
	void *st;

	ret = export_parse(argc, argv, &format, &out_arg, &force, &opts);
	if (ret >= 0)
		return ret;
	file = cmd__trace_arg("export", argc, argv, export_usage);
	if (!file)
		return EXIT_READ_FAIL;
	ex = export_pick(format, file, out_arg, &out);
	if (!ex)
		return EXIT_READ_FAIL;
	/* Its header only: a merged file's Chrome export is a directory. */
	if (trace_walk__open(&w, "export", file))
		goto out_free;
	if (ex->per_rank && export_split__is_merged(trace_walk__meta(&w))) {
		status = export_by_rank(ex, &w, file, out_arg, force);
		goto out_close;
	}
	/* Refuse before reading records; replace only once FILE proved readable. */
	if (export_check_out(out, force, &replace))
		goto out_close;
	if (replace && unlink(out) && errno != ENOENT) {
		pr_err("cannot replace %s: %s\n", out, strerror(errno));
		goto out_close;
	}
	if (ch_labels__for_file(&opts, file))
		goto out_close;
	st = ex->open(out, trace_walk__meta(&w), &opts, &err);
	if (!st) {
		pr_err("cannot create %s: %s\n", out, strerror(err < 0 ? -err : EIO));
		/* Nothing of ours is there unless the exporter got as far as creating it. */
		if (err != -EEXIST && err != -ELOOP)
			unlink(out);
		goto out_close;
	}
	err = export_walk(ex, &st, &w, file, &events);
	if (err || export_stop) {
		if (st)
			ex->abort(st);
		if (export_stop)
			pr_info("interrupted: removed %s\n", out);
		else if (err == -ENODATA && ex->needs)
			pr_err("%s holds no %s: nothing to write to %s\n", file, ex->needs, out);
		else
			pr_err("writing %s failed: %s: removed it\n", out,
			       strerror(err < 0 ? -err : EIO));
		unlink(out);
		status = export_stop ? 128 + export_stop : EXIT_READ_FAIL;
		goto out_close;
	}
	status = trace_walk__finish(&w);
	if (!events) {
		/* A timeline of nothing would read as a job that did nothing. */
		pr_err("%s holds no events: nothing to write to %s\n", file, out);
		unlink(out);
		status = EXIT_READ_FAIL;
		goto out_close;
	}
	pr_info("wrote %s (%llu events)\n", out, (unsigned long long)events);

out_close:
	trace_walk__close(&w);
out_free:
	free(out);
	return status;
}
