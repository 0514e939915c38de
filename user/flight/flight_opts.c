// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Parsing of the flight recorder's options, shared by every subcommand that offers it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "flight_opts.h"
#include "getopt_error.h"
#include "parse.h"
#include "msg.h"

void flight_opts__init(struct flight_opts *fo)
{
	memset(fo, 0, sizeof(*fo));
	fo->size_bytes = FLIGHT_DEFAULT_SIZE;
	fo->cooldown_ns = FLIGHT_DEFAULT_COOLDOWN_NS;
	fo->max_dumps = FLIGHT_DEFAULT_MAX_DUMPS;
}

static int bad(const char *cmd, const char *fmt, const char *arg)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), fmt, arg);
	pr_err("%s\n", buf);
	return -EINVAL;
}

/* DUR[,SIZE] */
static int parse_window(struct flight_opts *fo, const char *arg, const char *cmd)
{
	char dur[64];
	const char *comma = strchr(arg, ',');
	size_t n = comma ? (size_t)(comma - arg) : strlen(arg);

	if (n >= sizeof(dur))
		return bad(cmd, "bad --flight-recorder '%s': use DUR[,SIZE], e.g. 60s or 60s,256M",
			   arg);
	memcpy(dur, arg, n);
	dur[n] = 0;
	if (parse_duration_ns(dur, &fo->window_ns))
		return bad(cmd, "bad --flight-recorder '%s': use DUR[,SIZE], e.g. 60s or 60s,256M",
			   arg);
	if (comma && (parse_size(comma + 1, &fo->size_bytes) || fo->size_bytes < FLIGHT_MIN_SIZE))
		return bad(cmd, "bad --flight-recorder size in '%s': at least 1M, e.g. 256M", arg);
	fo->text = arg;
	return 0;
}

/* --trigger names a family that has no events: which it may have meant, which there are. */
static int bad_family(const char *cmd, const char *arg, const char *fam)
{
	const char *names[FAMILY_MAX + 1], *meant;
	char list[512];
	size_t used = 0;
	int n = 0;

	list[0] = 0;
	for_each_family_while(fit, n < FAMILY_MAX) {
		if (!fit.f->decode->decoders)
			continue;
		names[n++] = fit.f->name;
		if (used < sizeof(list))
			used += snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "",
					 fit.f->name);
	}
	names[n] = NULL;
	meant = getopt_error__closest_word(fam, names);
	pr_err("--trigger '%s': no family '%s'%s%s%s; families: %s\n", arg, fam,
	       meant ? " (did you mean " : "", meant ? meant : "", meant ? "?)" : "", list);
	return -EINVAL;
}

/* "mem:oom, ...": the triggers families offer with no duration, for messages. */
static void offered_triggers(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for_each_family(it)
		for (const struct family_trigger *t = it.f->decode->triggers; t && t->name; t++)
			if (used < len)
				used += snprintf(buf + used, len - used, "%s%s:%s",
						 used ? ", " : "", it.f->name, t->name);
}

/* FAMILY:NAME with no duration: a trigger family FAM offers. */
static int family_trigger(struct flight_trigger *t, int fam, const char *arg, const char *cmd)
{
	char msg[512], list[256];

	for (const struct family_trigger *ft = families[fam]->decode->triggers; ft && ft->name;
	     ft++)
		if (!strcmp(ft->name, t->name)) {
			t->type = ft->type;
			return 0;
		}
	offered_triggers(list, sizeof(list));
	snprintf(msg, sizeof(msg),
		 "bad --trigger '%%s': use FAMILY:NAME>DUR, e.g. osrt:nanosleep>250ms%s%s",
		 list[0] ? "; with no duration: " : "", list);
	return bad(cmd, msg, arg);
}

/* hang:DUR: no progress for DUR (flight_hang.h); once. */
static int parse_hang(struct flight_opts *fo, const char *arg, const char *cmd)
{
	__u64 ns;

	if (fo->hang_ns)
		return bad(cmd, "--trigger '%s': one hang trigger only (its DUR is the job's)",
			   arg);
	if (parse_duration_ns(arg + 5, &ns) || ns < FLIGHT_HANG_MIN_NS)
		return bad(
			cmd,
			"bad --trigger '%s': use hang:DUR, DUR at least 100ms, e.g. hang:60s (no "
			"progress for DUR: a call entered and not left, no step ended)",
			arg);
	fo->hang_ns = ns;
	fo->hang_text = arg;
	return 0;
}

/* @WHO of a trigger: a pid (digits) or a process name (its comm, 15 characters at most). */
static int parse_who(struct flight_trigger *t, const char *who, const char *arg, const char *cmd)
{
	char *end;
	unsigned long pid = strtoul(who, &end, 10);

	if (*who && !*end && pid && pid <= 0x7fffffff) {
		t->pid = (__u32)pid;
		return 0;
	}
	if (!*who || strlen(who) >= sizeof(t->comm) || strchr(who, '/'))
		return bad(cmd,
			   "bad --trigger '%s': after @, a pid or a process name (its comm, up "
			   "to 15 characters), e.g. gil:*>100ms@python3",
			   arg);
	snprintf(t->comm, sizeof(t->comm), "%s", who);
	return 0;
}

/* FAMILY:NAME>DUR, or FAMILY:NAME (a trigger FAMILY offers), each with @WHO or not. */
static int parse_trigger(struct flight_opts *fo, const char *arg, const char *cmd)
{
	const char *at = strrchr(arg, '@');
	char spec[128];
	const char *colon, *gt, *end;
	struct flight_trigger *t;
	char fam[32];
	int i;

	/* FAMILY:NAME[>DUR] as before; the @WHO after it is parsed once the rest is. */
	snprintf(spec, sizeof(spec), "%.*s", at ? (int)(at - arg) : (int)strlen(arg), arg);
	colon = strchr(spec, ':');
	gt = strrchr(spec, '>');
	end = gt && colon && gt > colon ? gt : spec + strlen(spec);

	if (!strncmp(arg, "hang:", 5))
		return parse_hang(fo, arg, cmd);
	if (fo->ntriggers == FLIGHT_MAX_TRIGGERS)
		return bad(cmd, "too many --trigger (at most 16): '%s'", arg);
	if (!colon || colon == spec || end == colon + 1 || (size_t)(colon - spec) >= sizeof(fam) ||
	    (size_t)(end - colon - 1) >= sizeof(t->name))
		return bad(cmd,
			   "bad --trigger '%s': use FAMILY:NAME>DUR, e.g. osrt:nanosleep>250ms",
			   arg);
	t = &fo->triggers[fo->ntriggers];
	memset(t, 0, sizeof(*t));
	memcpy(fam, spec, colon - spec);
	fam[colon - spec] = 0;
	for (i = 0; families[i] && strcmp(families[i]->name, fam); i++)
		;
	if (!families[i] || !families[i]->decode->decoders)
		return bad_family(cmd, arg, fam);
	memcpy(t->name, colon + 1, end - colon - 1);
	t->name[end - colon - 1] = 0;
	if (end != gt && family_trigger(t, i, arg, cmd))
		return -EINVAL;
	if (end == gt && parse_duration_ns(gt + 1, &t->min_dur_ns))
		return bad(cmd, "bad --trigger duration in '%s': e.g. 250ms, 1s", arg);
	if (at && parse_who(t, at + 1, arg, cmd))
		return -EINVAL;
	t->family = i;
	t->text = arg;
	fo->ntriggers++;
	return 0;
}

int flight_opts__parse(struct flight_opts *fo, int opt, const char *arg, const char *cmd)
{
	unsigned long n;
	char *end;

	switch (opt) {
	case OPT_FLIGHT:
		return parse_window(fo, arg, cmd);
	case OPT_FLIGHT_TRIGGER:
		return parse_trigger(fo, arg, cmd);
	case OPT_FLIGHT_AFTER:
		/* A unit is required (a plain number would be ns here, seconds in -d), but for 0. */
		if (parse_threshold_ns(arg, &fo->after_ns) ||
		    (!strpbrk(arg, "smh") && fo->after_ns))
			return bad(cmd, "bad --trigger-after '%s': e.g. 0s, 500ms, 5s", arg);
		return 0;
	case OPT_FLIGHT_COOLDOWN:
		if (parse_threshold_ns(arg, &fo->cooldown_ns) ||
		    (!strpbrk(arg, "smh") && fo->cooldown_ns))
			return bad(cmd, "bad --trigger-cooldown '%s': e.g. 0s, 500ms, 30s", arg);
		return 0;
	case OPT_FLIGHT_MAX_DUMPS:
		errno = 0;
		n = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || n > 1000000)
			return bad(cmd, "bad --max-dumps '%s': a number, 0 for no limit", arg);
		fo->max_dumps = (__u32)n;
		return 0;
	}
	return 1;
}

int flight_opts__check(const struct flight_opts *fo, const char *cmd)
{
	if (!fo->window_ns && (fo->ntriggers || fo->hang_ns || fo->after_ns))
		return bad(cmd, "%s needs --flight-recorder=DUR: triggers dump its window",
			   fo->ntriggers || fo->hang_ns ? "--trigger" : "--trigger-after");
	return 0;
}

int flight_opts__dump_path(const char *output, __u32 n, char *buf, size_t len)
{
	size_t stem = strlen(output);

	if (stem > 4 && !strcmp(output + stem - 4, ".bst"))
		stem -= 4;
	return snprintf(buf, len, "%.*s-%u.bst", (int)stem, output, n);
}
