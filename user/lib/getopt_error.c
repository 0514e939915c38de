// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One line for a refused option, with what was meant; see getopt_error.h. */
#include <stdio.h>
#include <string.h>
#include "getopt_error.h"
#include "msg.h"

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

static void long_error(char *buf, size_t size, const char *arg, const struct option *longs)
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
				snprintf(buf, size, "--%s needs a value", o->name);
			else if (o->has_arg == no_argument && eq)
				snprintf(buf, size, "--%s takes no value", o->name);
			else
				snprintf(buf, size, "bad option '%s'", arg);
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
		snprintf(buf, size, "--%s needs a value", only->name);
		return;
	}
	if (n > 1) {
		snprintf(buf, size, "'--%.*s' is short for more than one option (%s)", (int)len,
			 name, matches);
		return;
	}
	meant = closest(name, len, longs);
	snprintf(buf, size, "unknown option '--%.*s'%s%s%s", (int)len, name,
		 meant ? " (did you mean --" : "", meant ? meant : "", meant ? "?)" : "");
}

void getopt_error__print(const char *cmd, int argc, char **argv, const char *shorts,
			 const struct option *longs)
{
	int at_arg = optind - 1 < argc ? optind - 1 : argc - 1;
	const char *arg = at_arg > 0 ? argv[at_arg] : "";
	const char *at;
	char what[512];

	if (arg && !strncmp(arg, "--", 2) && arg[2]) {
		long_error(what, sizeof(what), arg, longs);
	} else if (optopt && optopt < 0x80 && (at = strchr(shorts, optopt)) && optopt != ':' &&
		   optopt != '+') {
		const struct option *o;

		for (o = longs; o && o->name && o->val != optopt; o++)
			;
		if (o && o->name)
			snprintf(what, sizeof(what), "-%c needs a value (-%c is --%s)", optopt,
				 optopt, o->name);
		else
			snprintf(what, sizeof(what), "-%c needs a value", optopt);
	} else if (optopt && optopt < 0x80) {
		snprintf(what, sizeof(what), "unknown option '-%c'", optopt);
	} else {
		snprintf(what, sizeof(what), "bad option '%s'", arg ? arg : "");
	}
	pr_err("%s; bpfsight %s --help lists the options\n", what, cmd);
}
