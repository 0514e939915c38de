// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pyfunc family: a skeleton holding the reading side (pyfunc_read.h) until the record side
 * (the shim's module, --python-functions) is merged from pyfunc-shim, whose pyfunc.c replaces
 * this one.
 */
#include <errno.h>
#include "msg.h"
#include "pyfunc.h"
#include "pyfunc_read.h"

static int pyfunc_attach(struct record_ctx *ctx, void **state)
{
	pr_err("-t pyfunc: this build reads pyfunc records but cannot record them yet\n");
	return -EOPNOTSUPP;
}

const struct family family_pyfunc = {
	.name = "pyfunc",
	.desc = "Named Python functions, every call timed (--python-functions)",
	.flags = FAMILY_OPT_IN,
	.attach = pyfunc_attach,
	.decoders = pyfunc_decoders,
	.reports = pyfunc_reports,
	.sqlite = &pyfunc_sqlite,
};
