// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The recorder's tables that a traced process can grow without bound by making things up:
 * distinct stacks (generated code, recursion on data) and distinct names (functions of
 * generated code, renamed threads). Each keeps to its cap; what is past it is not kept and is
 * counted lost (stacks_capped, strings_capped), and what was kept before still is.
 */
#include <stdlib.h>
#include <string.h>
#include "loss.h"
#include "record_ctx.h"
#include "stack_intern.h"
#include "stack_records.h"
#include "string_pool.h"
#include "unit.h"

static long stacks_written, strings_written;

static int sink(void *arg, const struct bs_hdr *rec)
{
	(void)arg;
	stacks_written += rec->type == BS_REC_STACK;
	strings_written += rec->type == BS_REC_STRING;
	return 0;
}

/* A stack of three frames of process PID whose innermost address is I: distinct per I. */
static __u32 stack_of(struct stack_intern *s, struct record_ctx *ctx, pid_t pid, __u64 i)
{
	struct bs_frame f[3] = {
		{ .addr = 0x400000 + i, .kind = BS_FRAME_NATIVE },
		{ .addr = 0x401000, .kind = BS_FRAME_NATIVE },
		{ .addr = 0x402000, .kind = BS_FRAME_NATIVE },
	};

	return stack_intern__frames(s, ctx, f, 3, 0, pid, (__u32)pid, i);
}

static void test_a_process_keeps_65536_stacks(void)
{
	struct record_opts o = { 0 };
	struct record_ctx ctx = { .opts = &o, .out = { sink, NULL } };
	struct stack_intern *s = stack_intern__new();
	__u32 first = 0, kept = 0;

	stacks_written = 0;
	if (!ASSERT_TRUE(s, "alloc"))
		return;
	for (__u64 i = 0; i < STACK_INTERN_PER_PROCESS + 1000; i++) {
		__u32 id = stack_of(s, &ctx, 100, i);

		kept += id != 0;
		first = first ?: id;
	}
	ASSERT_EQ(kept, STACK_INTERN_PER_PROCESS, "stacks kept for one process");
	ASSERT_EQ(stacks_written, STACK_INTERN_PER_PROCESS, "STACK records: one per stack kept");
	ASSERT_EQ(ctx.lost_user[loss__key(NULL, BS_LOSS_STACKS_CAPPED)], 1000, "the rest: lost");
	ASSERT_EQ(stack_of(s, &ctx, 100, 0), first, "a stack kept before: still its id");
	ASSERT_TRUE(stack_of(s, &ctx, 101, 1 << 30) != 0, "another process: its own quota");
	ASSERT_STREQ(loss_cause_name(BS_LOSS_STACKS_CAPPED), "stacks_capped", "its name");
	stack_intern__free(s);
}

static void test_the_names_keep_to_256_mib(void)
{
	struct record_opts o = { 0 };
	struct record_ctx ctx = { .opts = &o,
				  .out = { sink, NULL },
				  .strings = string_pool__new() };
	size_t len = (1 << 20) - 1; /* 1 MiB with its end */
	char *name = malloc(len + 1);
	__u32 kept = 0, first = 0;

	strings_written = 0;
	if (!ASSERT_TRUE(ctx.strings && name, "alloc"))
		goto cleanup;
	memset(name, 'a', len);
	name[len] = 0;
	for (int i = 0; i < 260; i++) {
		__u32 id;

		memcpy(name, &(char[4]){ (char)('A' + i % 26), (char)('A' + i / 26), '_', '_' }, 4);
		id = record_ctx__intern(&ctx, name);
		kept += id != 0;
		first = first ?: id;
	}
	ASSERT_EQ(kept, 256, "1 MiB names kept: 256 MiB");
	ASSERT_EQ(strings_written, 256, "STRING records: one per name kept");
	ASSERT_EQ(ctx.lost_user[loss__key(NULL, BS_LOSS_STRINGS_CAPPED)], 4, "the rest: lost");
	memcpy(name, "AA__", 4);
	ASSERT_EQ(record_ctx__intern(&ctx, name), first, "a name kept before: still its id");
	ASSERT_STREQ(loss_cause_name(BS_LOSS_STRINGS_CAPPED), "strings_capped", "its name");
cleanup:
	string_pool__free(ctx.strings);
	free(name);
}

int main(void)
{
	RUN_TEST(test_a_process_keeps_65536_stacks);
	RUN_TEST(test_the_names_keep_to_256_mib);
	return UNIT_EXIT();
}
