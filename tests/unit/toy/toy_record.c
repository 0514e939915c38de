// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The toy family's record side: its option (--toy-scale) and its capture kind (toyRange). */
#include <stdlib.h>
#include <string.h>
#include "family_record.h"
#include "msg.h"
#include "toy.h"

void toy_opts_init(void *opts, const char *cmd)
{
	((struct toy_opts *)opts)->scale = !strcmp(cmd, "monitor") ? 2 : 1;
}

static int toy_parse_scale(void *opts, const char *arg, const char *cmd)
{
	char *end;

	((struct toy_opts *)opts)->scale = strtoull(arg, &end, 10);
	if (*end || end == arg)
		return msg__fail("bad --toy-scale '%s': a number", arg);
	return 0;
}

const struct family_option toy_options[] = {
	{ "toy-scale", "N", "the toy's metrics multiply its values by N",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, toy_parse_scale },
	{ 0 },
};

static const struct family_capture toy_capture = { .kind = "toyRange", .arg = ":N" };

const struct family_record toy_recording = {
	.options = toy_options,
	.opts_size = sizeof(struct toy_opts),
	.opts_init = toy_opts_init,
	.capture = &toy_capture,
};
