// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The command line's value parsers (user/core/parse.c): -d, --osrt-threshold, --buffer-size. */
#include <errno.h>
#include "unit.h"
#include "parse.h"

struct want {
	const char *s;
	int err;
	unsigned long long v;
};

#define S 1000000000ull

static void check_all(int (*parse)(const char *, __u64 *), const struct want *w, size_t n,
		      const char *what)
{
	char msg[96];

	for (size_t i = 0; i < n; i++) {
		__u64 v = 0xdeadbeef;
		int err = parse(w[i].s, &v);

		snprintf(msg, sizeof(msg), "%s \"%s\"", what, w[i].s ? w[i].s : "(null)");
		if (!ASSERT_EQ(err, w[i].err, msg))
			continue;
		if (!err)
			ASSERT_EQ(v, w[i].v, msg);
	}
}

static void test_duration(void)
{
	static const struct want w[] = {
		{ "10", 0, 10 * S },
		{ "10s", 0, 10 * S },
		{ "500ms", 0, S / 2 },
		{ "2m", 0, 120 * S },
		{ "2min", 0, 120 * S },
		{ "1h", 0, 3600 * S },
		{ "250us", 0, 250000 },
		{ "100ns", 0, 100 },
		{ "1.5s", 0, 3 * S / 2 },
		{ "0.5", 0, S / 2 },
		{ "0", -EDOM, 0 },
		{ "0s", -EDOM, 0 },
		{ "", -EINVAL, 0 },
		{ NULL, -EINVAL, 0 },
		{ "-5", -EINVAL, 0 },
		{ "+5", -EINVAL, 0 },
		{ "abc", -EINVAL, 0 },
		{ "10parsecs", -EINVAL, 0 },
		{ "10 s", -EINVAL, 0 },
		{ "5d", -EINVAL, 0 },
		{ "1e12h", -ERANGE, 0 },
		/* strtod's words: nan's conversion was undefined (2^63 ns) */
		{ "nan", -EINVAL, 0 },
		{ "nans", -EINVAL, 0 },
		{ "inf", -EINVAL, 0 },
		{ "infinity", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "1e3ms", 0, S },
		{ "0.0000000006", 0, 1 }, /* to the nearest ns, as "0.6ns" */
		{ "0.6", 0, 600000000 },
		{ "0.6ns", 0, 1 },
		{ "0.4ns", -EDOM, 0 }, /* nearest: 0 */
		{ "1.5us", 0, 1500 },
		{ "-1", -EINVAL, 0 },
		{ "-0", -EINVAL, 0 },
		{ "-infs", -EINVAL, 0 },
		{ "1e30s", -ERANGE, 0 },
		{ "1e30", -ERANGE, 0 },
	};

	check_all(parse_duration_ns, w, sizeof(w) / sizeof(w[0]), "duration");
}

static void test_threshold(void)
{
	static const struct want w[] = {
		{ "0", 0, 0 },
		{ "1us", 0, 1000 },
		{ "500ns", 0, 500 },
		{ "2ms", 0, 2000000 },
		{ "700", 0, 700 },
		{ "1s", 0, S },
		{ "-1", -EINVAL, 0 },
		{ "1x", -EINVAL, 0 },
		/* the nearest ns with a unit or without: "0.6" was 0 and "0.6ns" 1 */
		{ "0.6", 0, 1 },
		{ "0.6ns", 0, 1 },
		{ "0.4", 0, 0 },
		{ "0.5", 0, 1 },
		{ "1.5us", 0, 1500 },
		{ "nan", -EINVAL, 0 },
		{ "inf", -EINVAL, 0 },
		{ "1e30s", -ERANGE, 0 },
	};

	check_all(parse_threshold_ns, w, sizeof(w) / sizeof(w[0]), "threshold");
}

static void test_size(void)
{
	static const struct want w[] = {
		{ "16M", 0, 16 << 20 },	 { "64MiB", 0, 64 << 20 }, { "1G", 0, 1ull << 30 },
		{ "4096", 0, 4096 },	 { "4K", 0, 4096 },	   { "2GiB", 0, 2ull << 30 },
		{ "16MB", -EINVAL, 0 },	 { "-1M", -EINVAL, 0 },	   { "", -EINVAL, 0 },
		{ "1.5K", 0, 1536 },	 { "0x1000", -EINVAL, 0 }, { "nanK", -EINVAL, 0 },
		{ "nan", -EINVAL, 0 },	 { "inf", -EINVAL, 0 },	   { "-1", -EINVAL, 0 },
		{ "1e30G", -ERANGE, 0 }, { "0.6", 0, 1 },
	};

	check_all(parse_size, w, sizeof(w) / sizeof(w[0]), "size");
}

int main(void)
{
	RUN_TEST(test_duration);
	RUN_TEST(test_threshold);
	RUN_TEST(test_size);
	return UNIT_EXIT();
}
