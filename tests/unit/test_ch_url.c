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

int main(void)
{
	unsetenv("BPFSIGHT_CLICKHOUSE_USER");
	unsetenv("BPFSIGHT_CLICKHOUSE_CREDENTIALS");
	RUN_TEST(test_names_and_ipv4);
	RUN_TEST(test_ipv6_in_brackets);
	RUN_TEST(test_refused);
	return UNIT_EXIT();
}
