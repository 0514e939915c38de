// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "parse.h"

struct unit {
	const char *suffix;
	__u64 mult;
};

/* V in units of MULT, to the nearest whole one, with or without a suffix alike. */
static int scaled(double v, __u64 mult, __u64 *out)
{
	double x = v * mult + 0.5;

	if (x >= 1.8e19)
		return -ERANGE; /* past 2^64: the conversion would be undefined */
	*out = (__u64)x;
	return 0;
}

/*
 * A non-negative decimal (fractions and exponents allowed) with one of UNITS; "" uses
 * DEFAULT_MULT. strtod's other words are refused: "nan" (its conversion is undefined: a
 * --duration nan ran for 2^63 ns), "inf", hexadecimal.
 */
static int parse_with_units(const char *s, const struct unit *units, __u64 default_mult, __u64 *out)
{
	const char *word;
	char *end;
	double v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	word = strpbrk(s, "xXnNiI"); /* in the number: hexadecimal, nan, inf */
	if (errno || end == s || v < 0 || !isfinite(v) || (word && word < end))
		return -EINVAL;
	if (!*end)
		return scaled(v, default_mult, out);
	for (const struct unit *u = units; u->suffix; u++)
		if (!strcmp(end, u->suffix))
			return scaled(v, u->mult, out);
	return -EINVAL;
}

static const struct unit time_units[] = {
	{ "ns", 1 },
	{ "us", 1000 },
	{ "ms", 1000000 },
	{ "s", 1000000000ull },
	{ "m", 60000000000ull },
	{ "min", 60000000000ull },
	{ "h", 3600000000000ull },
	{ NULL, 0 },
};

int parse_duration_ns(const char *s, __u64 *ns)
{
	int err = parse_with_units(s, time_units, 1000000000ull, ns);

	if (!err && *ns == 0)
		return -EDOM; /* a zero-length recording is a mistake, not a request */
	return err;
}

int parse_threshold_ns(const char *s, __u64 *ns)
{
	return parse_with_units(s, time_units, 1, ns);
}

int parse_size(const char *s, __u64 *bytes)
{
	static const struct unit units[] = {
		{ "K", 1024 },	     { "KiB", 1024 },	    { "M", 1 << 20 }, { "MiB", 1 << 20 },
		{ "G", 1ull << 30 }, { "GiB", 1ull << 30 }, { NULL, 0 },
	};

	return parse_with_units(s, units, 1, bytes);
}
