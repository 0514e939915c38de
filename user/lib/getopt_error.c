// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One line for a refused option, with what was meant; see getopt_error.h. */
#include <stdio.h>
#include <string.h>
#include "getopt_error.h"

/* Edits from A to B (insert, delete, replace, swap two neighbours): a typo's distance. */
static int distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), i, j;
	int d[40][40], cost, best;

	if (la >= 40 || lb >= 40)
		return 99;
	for (i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			cost = a[i - 1] != b[j - 1];
			best = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

/* Of the N words WORD(i) names, the one NAME (LEN bytes) is a typo of, or NULL. */
static const char *closest_of(const char *name, size_t len,
			      const char *(*word)(const void *arg, int i), const void *arg)
{
	const char *best = NULL, *w;
	int bd = 99, dd;

	for (int i = 0; (w = word(arg, i)); i++) {
		dd = distance(name, len, w);
		/* A word it begins with ("--out" for "--output=") counts as one edit. */
		if (len >= 3 && !strncmp(w, name, strlen(w)) && dd > 1)
			dd = 1;
		if (dd < bd) {
			bd = dd;
			best = w;
		}
	}
	/* Close enough to be the same word: one edit in four letters. */
	return best && bd <= (int)(len > 4 ? len / 4 + 1 : 1) ? best : NULL;
}

static const char *option_word(const void *arg, int i)
{
	return ((const struct option *)arg)[i].name;
}

static const char *closest(const char *name, size_t len, const struct option *longs)
{
	return longs ? closest_of(name, len, option_word, longs) : NULL;
}

static const char *list_word(const void *arg, int i)
{
	return ((const char *const *)arg)[i];
}

const char *getopt_error__closest_word(const char *name, const char *const *words)
{
	return closest_of(name, strlen(name), list_word, words);
}

const char *getopt_error__closest(const char *name, const struct option *longs)
{
	return closest(name, strlen(name), longs);
}

static void long_error(const char *cmd, const char *arg, const struct option *longs)
{
	const char *name = arg + 2, *eq = strchr(name, '='), *meant;
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct option *o, *only = NULL;
	char matches[256] = "";
	size_t used = 0;
	int n = 0;

	for (o = longs; o && o->name; o++) {
		if (strlen(o->name) == len && !strncmp(o->name, name, len)) {
			if (o->has_arg == required_argument && !eq)
				fprintf(stderr, "bpfsight %s: --%s needs a value", cmd, o->name);
			else if (o->has_arg == no_argument && eq)
				fprintf(stderr, "bpfsight %s: --%s takes no value", cmd, o->name);
			else
				fprintf(stderr, "bpfsight %s: bad option '%s'", cmd, arg);
			return;
		}
		if (len && !strncmp(o->name, name, len) && used < sizeof(matches)) {
			used += snprintf(matches + used, sizeof(matches) - used, "%s--%s",
					 n++ ? ", " : "", o->name);
			only = o;
		}
	}
	if (n == 1 && only->has_arg == required_argument && !eq) {
		/* An abbreviation getopt took, then found without its value. */
		fprintf(stderr, "bpfsight %s: --%s needs a value", cmd, only->name);
		return;
	}
	if (n > 1) {
		fprintf(stderr, "bpfsight %s: '--%.*s' is short for more than one option (%s)", cmd,
			(int)len, name, matches);
		return;
	}
	fprintf(stderr, "bpfsight %s: unknown option '--%.*s'", cmd, (int)len, name);
	meant = closest(name, len, longs);
	if (meant)
		fprintf(stderr, " (did you mean --%s?)", meant);
}

void getopt_error__print(const char *cmd, int argc, char **argv, const char *shorts,
			 const struct option *longs)
{
	int at_arg = optind - 1 < argc ? optind - 1 : argc - 1;
	const char *arg = at_arg > 0 ? argv[at_arg] : "";
	const char *at;

	if (arg && !strncmp(arg, "--", 2) && arg[2]) {
		long_error(cmd, arg, longs);
	} else if (optopt && optopt < 0x80 && (at = strchr(shorts, optopt)) && optopt != ':' &&
		   optopt != '+') {
		const struct option *o;

		for (o = longs; o && o->name && o->val != optopt; o++)
			;
		fprintf(stderr, "bpfsight %s: -%c needs a value", cmd, optopt);
		if (o && o->name)
			fprintf(stderr, " (-%c is --%s)", optopt, o->name);
	} else if (optopt && optopt < 0x80) {
		fprintf(stderr, "bpfsight %s: unknown option '-%c'", cmd, optopt);
	} else {
		fprintf(stderr, "bpfsight %s: bad option '%s'", cmd, arg ? arg : "");
	}
	fprintf(stderr, "; bpfsight %s --help lists the options\n", cmd);
}
