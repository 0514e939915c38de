// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ClickHouse URLs (user/ship/ch_url.c): the host, port and job of clickhouse://, http:// and
 * https:// URLs, an IPv6 address in brackets among them, as ship and stats --from take them;
 * and the ones refused, each said on stderr with a non-zero return.
 */
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "ch_http.h"

static struct ch_server s;

static void test_names_and_ipv4(void)
{
	char w[300];

	ASSERT_EQ(ch_server__parse(&s, "clickhouse://ch.example:9000/job-311"), 0, "parsed");
	ASSERT_STREQ(s.host, "ch.example", "host");
	ASSERT_STREQ(s.port, "9000", "port");
	ASSERT_STREQ(s.job, "job-311", "job");
	ASSERT_STREQ(ch_server__where(&s, w, sizeof(w)), "ch.example:9000", "where");
	ASSERT_EQ(ch_server__parse(&s, "https://10.0.0.7/j"), 0, "https without a port");
	ASSERT_STREQ(s.port, "8443", "https's default port");
	ASSERT_EQ(s.tls, 1, "TLS");
}

static void test_ipv6_in_brackets(void)
{
	char w[300];

	ASSERT_EQ(ch_server__parse(&s, "clickhouse://[::1]:8124/six"), 0, "[::1]:8124");
	ASSERT_STREQ(s.host, "::1", "the address without its brackets (getaddrinfo's)");
	ASSERT_STREQ(s.port, "8124", "port");
	ASSERT_STREQ(s.job, "six", "job");
	ASSERT_STREQ(ch_server__where(&s, w, sizeof(w)), "[::1]:8124", "brackets back, for Host");
	ASSERT_EQ(ch_server__parse(&s, "http://[fd00::7]/j"), 0, "no port");
	ASSERT_STREQ(s.host, "fd00::7", "host");
	ASSERT_STREQ(s.port, "8123", "http's default port");
	ASSERT_EQ(ch_server__parse(&s, "https://[::ffff:10.1.2.3]:9443/"), 0, "v4-mapped, no job");
	ASSERT_STREQ(s.host, "::ffff:10.1.2.3", "host");
	ASSERT_STREQ(s.job, "", "no job");
}

static void test_refused(void)
{
	static const char *const bad[] = {
		"clickhouse://[::1:8123/j", /* no closing bracket */
		"clickhouse://[]:8123/j",   /* empty */
		"clickhouse://[zz]:8123/j", /* not an address */
		"clickhouse://[::1]x/j",    /* junk after it */
		"clickhouse://[::1]:/j",    /* an empty port */
		"clickhouse://[::1]:70000/j",
		"clickhouse://::1:8123/j", /* colons without brackets: no port to tell */
		"clickhouse://u:p@[::1]:8123/j",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ASSERT_TRUE(ch_server__parse(&s, bad[i]) != 0, bad[i]);
}

/* A server's version() answer, and which releases are refused (older than 18.16). */
static void test_versions(void)
{
	static const struct {
		const char *text;
		unsigned major, minor;
		int ok;
	} v[] = {
		{ "18.16.1\n", 18, 16, 1 },  { "26.7.2.1\n", 26, 7, 1 }, { "19.1.6", 19, 1, 1 },
		{ "18.14.19\n", 18, 14, 0 }, { "1.1.54394", 1, 1, 0 },	 { "23.8.9.54", 23, 8, 1 },
	};
	struct ch_version got;

	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		if (!ASSERT_EQ(ch_version__parse(v[i].text, &got), 0, v[i].text))
			continue;
		ASSERT_EQ(got.major, v[i].major, v[i].text);
		ASSERT_EQ(got.minor, v[i].minor, v[i].text);
		ASSERT_EQ(ch_version__at_least(&got, CH_OLDEST_MAJOR, CH_OLDEST_MINOR), v[i].ok,
			  v[i].text);
		ASSERT_TRUE(!strchr(got.text, '\n'), "said without its newline");
	}
	ASSERT_STREQ((ch_version__parse("26.7.2.1\n", &got), got.text), "26.7.2.1", "as said");
	ASSERT_TRUE(ch_version__parse("Ok.\n", &got) != 0, "not a version");
	ASSERT_TRUE(ch_version__parse("", &got) != 0, "nothing");
	ASSERT_TRUE(ch_version__parse(".16", &got) != 0, "no major");
}

int main(void)
{
	unsetenv("BPFSIGHT_CLICKHOUSE_USER");
	unsetenv("BPFSIGHT_CLICKHOUSE_CREDENTIALS");
	RUN_TEST(test_names_and_ipv4);
	RUN_TEST(test_ipv6_in_brackets);
	RUN_TEST(test_refused);
	RUN_TEST(test_versions);
	return UNIT_EXIT();
}
