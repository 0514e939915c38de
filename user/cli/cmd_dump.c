// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight dump [--kind K[,K]] [--pid P] FILE: one NDJSON line per event, in file order. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "getopt_error.h"
#include "family.h"
#include "json.h"
#include "stack_format.h"
#include "trace_walk.h"
#include "msg.h"

#define DUMP_MAX_KINDS 32

struct dump_opts {
	const char *kinds[DUMP_MAX_KINDS];
	int nkinds;
	int has_pid;
	__u32 pid;
	char kindbuf[512];
};

/* Did a decoder before D (of family F) give its kind? (Two record types may make one kind.) */
static int kind_listed_before(int f, const struct rec_decoder *d)
{
	for (int g = 0; g <= f; g++)
		for (const struct rec_decoder *e = families[g]->decode->decoders;
		     e && e->kind && e != d; e++)
			if (e->decode != family__decode_meta && !strcmp(e->kind, d->kind))
				return 1;
	return 0;
}

void dump__list_kinds(char *buf, size_t len)
{
	const struct rec_decoder *d;
	size_t used = 0;
	int n;

	buf[0] = 0;
	for_each_family(it) {
		for (d = it.f->decode->decoders; d && d->kind; d++) {
			if (d->decode == family__decode_meta || kind_listed_before(it.i, d))
				continue; /* never printed (not offered), or offered once already */
			n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", d->kind);
			if (n < 0 || (size_t)n >= len - used)
				return;
			used += n;
		}
	}
}

static void dump_usage(FILE *f)
{
	char kinds[512];

	dump__list_kinds(kinds, sizeof(kinds));
	fprintf(f,
		"Usage: bpfsight dump [--kind K[,K]] [--pid P] FILE\n"
		"\n"
		"Every event of a trace as NDJSON, one per line, in file order:\n"
		"  {\"ts\":N,\"dur\":N,\"pid\":N,\"tid\":N,\"kind\":\"...\",\"name\":\"...\","
		"\"args\":{...}}\n"
		"ts is CLOCK_MONOTONIC ns, dur ns (0 for instants).\n"
		"\n"
		"  -k, --kind LIST   only these kinds (%s)\n"
		"  -p, --pid PID     only events of this process\n"
		"  -h, --help        this help\n",
		kinds);
}

/* A kind of records that feed the model and the reports, not dump (syscall_agg, string). */
static int dump_kind_is_meta(const char *kind)
{
	for_each_family(it)
		for (const struct rec_decoder *d = it.f->decode->decoders; d && d->kind; d++)
			if (!strcmp(d->kind, kind))
				return d->decode == family__decode_meta;
	return 0;
}

/* Split LIST into o->kinds (pointing into o->kindbuf); -EINVAL after saying why. */
static int dump_parse_kinds(struct dump_opts *o, const char *list)
{
	char kinds[512], *tok, *save = NULL;
	size_t used = strlen(o->kindbuf);

	/* Repeated --kind options add up: append after what earlier ones left. */
	if (used + strlen(list) + 2 > sizeof(o->kindbuf)) {
		pr_err("--kind list too long\n");
		return -EINVAL;
	}
	if (used)
		o->kindbuf[used++] = 0;
	strcpy(o->kindbuf + used, list);
	for (tok = strtok_r(o->kindbuf + used, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!family__kind_is_event(tok)) {
			dump__list_kinds(kinds, sizeof(kinds));
			pr_err("%s '%s' (kinds: %s)\n",
			       dump_kind_is_meta(tok) ? "no events are of the metadata kind"
						      : "unknown kind",
			       tok, kinds);
			return -EINVAL;
		}
		if (o->nkinds == DUMP_MAX_KINDS) {
			pr_err("too many kinds\n");
			return -EINVAL;
		}
		o->kinds[o->nkinds++] = tok;
	}
	return 0;
}

static int dump_want_kind(const struct dump_opts *o, const char *kind)
{
	int i;

	if (!o->nkinds)
		return 1;
	for (i = 0; i < o->nkinds; i++)
		if (!strcmp(o->kinds[i], kind))
			return 1;
	return 0;
}

void dump_event(FILE *out, const struct event *ev, const struct trace_model *m)
{
	struct json j;

	json__init(&j, out, 0);
	json__begin_object(&j);
	json__kv_u64(&j, "ts", ev->ts);
	json__kv_u64(&j, "dur", ev->dur);
	json__kv_u64(&j, "pid", ev->pid);
	json__kv_u64(&j, "tid", ev->tid);
	json__kv_str(&j, "kind", ev->kind ? ev->kind : "");
	json__kv_str(&j, "name", ev->name ? ev->name : "");
	json__key(&j, "args");
	event__json_args(ev, &j);
	if (ev->stack) {
		json__key(&j, "stack");
		stack__json(ev->stack, m, &j);
	}
	if (ev->holder_stack) {
		json__key(&j, "holder_stack");
		stack__json(ev->holder_stack, m, &j);
	}
	json__end_object(&j);
	fputc('\n', out);
}

/* Also printed by `bpfsight __complete options dump`: completion and the docs test read it. */
const struct option dump_options[] = {
	{ "kind", required_argument, NULL, 'k' },
	{ "pid", required_argument, NULL, 'p' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

int cmd_dump(int argc, char **argv)
{
	static char outbuf[1 << 16];
	const struct rec_decoder *dec;
	const struct bs_hdr *rec;
	struct dump_opts o = {};
	const char *file;
	struct trace_walk w;
	unsigned long v;
	struct event ev;
	int c, ret, status;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "k:p:h", dump_options, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (dump_parse_kinds(&o, optarg))
				return EXIT_READ_FAIL;
			break;
		case 'p':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v > 0xffffffffUL) {
				pr_err("bad pid '%s'\n", optarg);
				return EXIT_READ_FAIL;
			}
			o.pid = v;
			o.has_pid = 1;
			break;
		case 'h':
			dump_usage(stdout);
			return EXIT_READ_OK;
		default:
			getopt_error__print("dump", argc, argv, "k:p:h", dump_options);
			return EXIT_READ_FAIL;
		}
	}
	file = cmd__trace_arg("dump", argc, argv, dump_usage);
	if (!file || trace_walk__open(&w, "dump", file))
		return EXIT_READ_FAIL;
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));

	while ((ret = trace_walk__next(&w, &rec, &dec))) {
		if (ret != 1 || !dec || !dump_want_kind(&o, dec->kind))
			continue;
		if (o.has_pid && rec->pid != o.pid)
			continue;
		/* family__decode: a span clipped to the start says where it began */
		if (family__decode(rec, w.m, &ev) == 1)
			dump_event(stdout, &ev, w.m);
	}
	if (fflush(stdout) || ferror(stdout)) {
		pr_err("writing the output failed: %s\n", strerror(errno));
		trace_walk__close(&w);
		return EXIT_READ_FAIL;
	}
	status = trace_walk__finish(&w);
	trace_walk__close(&w);
	return status;
}
