/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The clocks a recording's header and footer keep, as the driver and --start-at read them. */
#ifndef BPFSIGHT_RECORD_CLOCK_H
#define BPFSIGHT_RECORD_CLOCK_H

#include "trace_meta.h"

/*
 * The clocks now (trace_clocks__now), with BPFSIGHT_TEST_CLOCK_SHIFT_NS's shift when the
 * tests set it (record_clock.c).
 */
void record_clocks__now(struct trace_clocks *c);

#endif /* BPFSIGHT_RECORD_CLOCK_H */
