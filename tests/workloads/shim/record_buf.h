/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The records a CUPTI test workload (cupti_feed.c, cupti_flood.c) hands CUPTI's buffer
 * callback, built up in one growing buffer; and CLOCK_MONOTONIC in ns, CUPTI's timestamps
 * under the shim.
 */
#ifndef BPFSIGHT_TEST_RECORD_BUF_H
#define BPFSIGHT_TEST_RECORD_BUF_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint8_t *buf;
static size_t len, cap;

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put(const void *rec, size_t size)
{
	if (len + size > cap) {
		cap = (cap + size) * 2;
		buf = realloc(buf, cap);
		if (!buf) {
			fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
			exit(1);
		}
	}
	memcpy(buf + len, rec, size);
	len += size;
}

#endif /* BPFSIGHT_TEST_RECORD_BUF_H */
