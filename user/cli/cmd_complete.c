// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight __complete WHAT: the words a shell completion offers, one per line, taken from the
 * tables the commands themselves use (dispatch table, getopt tables, family and report
 * registries), so a completion never lists a stale option or family. Hidden from usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "family.h"
#include "stats.h"
#include "msg.h"

/* One word per line from an "a, b, c" list. */
static void print_list(const char *list)
{
	size_t n;

	while (*list) {
		n = strcspn(list, ",");
		printf("%.*s\n", (int)n, list);
		list += n;
		list += strspn(list, ", ");
	}
}

static int print_options(const char *name)
{
	const struct bpfsight_cmd *c;

	const struct option *opts = NULL;

	for (c = bpfsight_cmds; c->name; c++)
		if ((c->opts || c->opts_fn) && !strcmp(c->name, name))
			break;
	if (!c->name) {
		pr_err("no command '%s'\n", name);
		return 1;
	}
	/* "--name=" for an option that takes a value: the shell then completes the value. */
	opts = c->opts_fn ? c->opts_fn() : c->opts;
	for (const struct option *o = opts; o->name; o++)
		printf("--%s%s\n", o->name, o->has_arg == required_argument ? "=" : "");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bpfsight __complete commands|options CMD|families|reports|stats-formats|"
		   "export-formats|kinds\n");
}

int cmd_complete(int argc, char **argv)
{
	char buf[STATS_REPORT_LIST_MAX];

	if (argc == 3 && !strcmp(argv[1], "options"))
		return print_options(argv[2]);
	if (argc != 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "commands")) {
		for (const struct bpfsight_cmd *c = bpfsight_cmds; c->name; c++)
			if (c->help)
				printf("%s\n", c->name);
		return 0;
	}
	if (!strcmp(argv[1], "families"))
		family__list_selectable(buf, sizeof(buf));
	else if (!strcmp(argv[1], "reports"))
		stats__list_reports(buf, sizeof(buf));
	else if (!strcmp(argv[1], "stats-formats"))
		stats__list_formats(buf, sizeof(buf));
	else if (!strcmp(argv[1], "export-formats"))
		export__list_formats(buf, sizeof(buf));
	else if (!strcmp(argv[1], "kinds"))
		dump__list_kinds(buf, sizeof(buf));
	else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	} else {
		usage(stderr);
		return 1;
	}
	print_list(buf);
	return 0;
}
