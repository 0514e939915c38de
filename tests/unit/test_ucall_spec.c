// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The argument-spec compiler (user/core/ucall_spec.c): what a spec compiles to (words, copies,
 * cookies), and the exact error of every way a spec can be malformed, as the build's check
 * (tools/check_specs.c) reports it.
 */
#include <errno.h>
#include <string.h>
#include "ucall_api.h"
#include "unit.h"

enum { K_PTR, K_BYTES, K_KIND, K_GRID, K_KERNEL, K_NAME, K_ID, K_RANK, K_NR };

static const char *const kinds[] = { "HtoD", "DtoH" };

static const struct ucall_key keys[K_NR] = {
	[K_PTR] = { "ptr", UCALL_T_INTS },
	[K_BYTES] = { "bytes", UCALL_T_INTS, .repeat = 1 },
	[K_KIND] = { "kind", UCALL_T_INTS, .values = kinds, .nvalues = 2 },
	[K_GRID] = { "grid", 1u << UCALL_T_DIM3, UCALL_T_DIM3 },
	[K_KERNEL] = { "kernel", 1u << UCALL_T_FN, UCALL_T_FN },
	[K_NAME] = { "name", 1u << UCALL_T_FN | 1u << UCALL_T_STR, UCALL_T_FN },
	[K_ID] = { "id", 1u << UCALL_T_MEM, UCALL_T_MEM },
	[K_RANK] = { "rank", 1u << UCALL_T_S32, UCALL_T_S32 },
};

static int compile(const char *args, struct ucall_spec *s, char *err, size_t len)
{
	err[0] = 0;
	return ucall_spec__compile(args, keys, K_NR, s, err, len);
}

#define ASSERT_FIELD(s, i, k, t, sr, w, what)                                                      \
	do {                                                                                       \
		ASSERT_EQ((s)->f[i].key, k, what " key");                                          \
		ASSERT_EQ((s)->f[i].type, t, what " type");                                        \
		ASSERT_EQ((s)->f[i].src, sr, what " src");                                         \
		ASSERT_EQ((s)->f[i].word, w, what " word");                                        \
	} while (0)

static void test_words_and_cookies(void)
{
	struct ucall_spec s;
	char err[160];

	ASSERT_EQ(compile("*ptr bytes", &s, err, sizeof(err)), 0, "out");
	ASSERT_EQ(s.nfields, 2, "out fields");
	ASSERT_FIELD(&s, 0, K_PTR, UCALL_T_U64, UCALL_SRC_OUT, 0, "*ptr");
	ASSERT_EQ(s.f[0].written, 1, "*ptr is written");
	ASSERT_FIELD(&s, 1, K_BYTES, UCALL_T_U64, UCALL_SRC_WORD, 1, "bytes");
	ASSERT_EQ(ucall_spec__cookie(&s, 5), BS_UCOOKIE(5, 0, 0, 0, 1), "out cookie");

	/* A dim3 takes two registers; the 7th word is the first stack word. */
	ASSERT_EQ(compile("kernel grid - - bytes ptr", &s, err, sizeof(err)), 0, "launch");
	ASSERT_EQ(s.fn_word, 0, "fn word");
	ASSERT_FIELD(&s, 1, K_GRID, UCALL_T_DIM3, UCALL_SRC_WORD, 1, "grid");
	ASSERT_FIELD(&s, 2, K_BYTES, UCALL_T_U64, UCALL_SRC_WORD, 5, "bytes");
	ASSERT_FIELD(&s, 3, K_PTR, UCALL_T_U64, UCALL_SRC_WORD, 6, "ptr");
	ASSERT_EQ(s.nwords, 7, "launch words");
	ASSERT_EQ(ucall_spec__cookie(&s, 0), BS_UCOOKIE_STACK, "stack words copied");

	/* A dim3 that finds one register left goes to the stack; the register stays free. */
	ASSERT_EQ(compile("ptr - - - - grid rank", &s, err, sizeof(err)), 0, "dim3 on the stack");
	ASSERT_FIELD(&s, 1, K_GRID, UCALL_T_DIM3, UCALL_SRC_WORD, 6, "grid");
	ASSERT_FIELD(&s, 2, K_RANK, UCALL_T_S32, UCALL_SRC_WORD, 5, "rank");
	ASSERT_EQ(s.nwords, 8, "words");

	/* A by-value struct: stack words only, and the stack-argument area is the copy. */
	ASSERT_EQ(compile("rank id!16 ptr", &s, err, sizeof(err)), 0, "by value");
	ASSERT_FIELD(&s, 0, K_RANK, UCALL_T_S32, UCALL_SRC_WORD, 0, "rank");
	ASSERT_FIELD(&s, 1, K_ID, UCALL_T_MEM, UCALL_SRC_COPY, 0, "id");
	ASSERT_FIELD(&s, 2, K_PTR, UCALL_T_U64, UCALL_SRC_WORD, 1, "ptr");
	ASSERT_EQ(ucall_spec__cookie(&s, 2),
		  BS_UCOOKIE(2, BS_DEREF_ARG_STACK, 0, BS_DEREF_STRUCT, 0) | BS_UCOOKIE_STACK,
		  "by-value cookie");

	/* By reference (Fortran): the words point to the values, which the cookie reads. */
	ASSERT_EQ(compile("^rank - ^bytes:u8 - - - - ^ptr:u32", &s, err, sizeof(err)), 0, "byref");
	ASSERT_FIELD(&s, 0, K_RANK, UCALL_T_S32, UCALL_SRC_WORD, 0, "^rank");
	ASSERT_FIELD(&s, 1, K_BYTES, UCALL_T_U8, UCALL_SRC_WORD, 2, "^bytes");
	ASSERT_FIELD(&s, 2, K_PTR, UCALL_T_U32, UCALL_SRC_WORD, 7, "^ptr");
	ASSERT_EQ(s.byref, 1u << 0 | 1u << 2 | 1u << 7, "byref words");
	ASSERT_EQ(ucall_spec__cookie(&s, 3), 3 | BS_UCOOKIE_STACK | (__u64)s.byref << 33,
		  "byref cookie");
	ASSERT_EQ(BS_UCOOKIE_BYREF(ucall_spec__cookie(&s, 3)), s.byref, "byref bits read back");

	/* Fields of a struct copy: from the object's start while 192 bytes reach them all. */
	ASSERT_EQ(compile("- &- ptr@8 bytes:u32@184", &s, err, sizeof(err)), 0, "struct");
	ASSERT_EQ(ucall_spec__cookie(&s, 1), BS_UCOOKIE(1, 2, 0, BS_DEREF_STRUCT, 0), "from 0");
	ASSERT_FIELD(&s, 0, K_PTR, UCALL_T_U64, UCALL_SRC_AT, 0, "ptr@8");
	ASSERT_EQ(s.f[0].off, 8, "ptr@8 offset");
	ASSERT_FIELD(&s, 1, K_BYTES, UCALL_T_U32, UCALL_SRC_AT, 0, "bytes@184");
	/* ... else from the lowest field's 8-byte boundary. */
	ASSERT_EQ(compile("&- ptr@36 bytes:u32@200", &s, err, sizeof(err)), 0, "struct, moved");
	ASSERT_EQ(ucall_spec__cookie(&s, 1), BS_UCOOKIE(1, 1, 4, BS_DEREF_STRUCT, 0), "from 32");
	ASSERT_EQ(s.f[0].off, 36, "offsets stay the object's");

	/* An integer '&' field is the word itself, and its pointee is the copy (`this`). */
	ASSERT_EQ(compile("- &ptr rank@24 bytes:u32@172", &s, err, sizeof(err)), 0, "object");
	ASSERT_FIELD(&s, 0, K_PTR, UCALL_T_U64, UCALL_SRC_WORD, 1, "&ptr is its word");
	ASSERT_FIELD(&s, 1, K_RANK, UCALL_T_S32, UCALL_SRC_AT, 0, "rank@24");
	ASSERT_EQ(ucall_spec__cookie(&s, 1), BS_UCOOKIE(1, 2, 0, BS_DEREF_STRUCT, 0), "its copy");

	ASSERT_EQ(compile("*ptr - &name:str", &s, err, sizeof(err)), 0, "string");
	ASSERT_FIELD(&s, 1, K_NAME, UCALL_T_STR, UCALL_SRC_COPY, 2, "name");
	ASSERT_EQ(ucall_spec__cookie(&s, 9), BS_UCOOKIE(9, 3, 0, BS_DEREF_STRING, 1),
		  "string cookie");

	ASSERT_EQ(compile("&*id rank", &s, err, sizeof(err)), 0, "written copy");
	ASSERT_EQ(s.f[0].written, 1, "&*id is written");
	ASSERT_EQ(s.copy_arg, 1, "copy arg");

	ASSERT_EQ(compile("  bytes=4 kind=DtoH bytes=0x10 ", &s, err, sizeof(err)), 0, "consts");
	ASSERT_EQ(s.nfields, 3, "const fields");
	ASSERT_EQ(s.nwords, 0, "constants take no word");
	ASSERT_EQ(s.f[0].konst, 4, "bytes=4");
	ASSERT_EQ(s.f[1].konst, 1, "kind=DtoH is its index");
	ASSERT_EQ(s.f[2].konst, 16, "bytes=0x10");
	ASSERT_EQ(s.f[1].src, UCALL_SRC_CONST, "const src");

	ASSERT_EQ(compile("", &s, err, sizeof(err)), 0, "empty");
	ASSERT_EQ(ucall_spec__cookie(&s, 3), 3, "no capture");
	ASSERT_EQ(ucall_spec__compile(NULL, keys, K_NR, &s, err, sizeof(err)), 0, "NULL");
}

static const struct {
	const char *args, *err;
} bad[] = {
	{ "ptr bytez", "'bytez': unknown key 'bytez'" },
	{ "^ptr", "'^ptr': a '^' field is ^KEY of an integer of 4 bytes or less" },
	{ "^*rank", "'^*rank': a '^' field is ^KEY of an integer of 4 bytes or less" },
	{ "^rank=1", "'^rank=1': a constant is KEY=VALUE" },
	{ "&- ^rank@8", "'^rank@8': a '^' field is an argument word" },
	{ "ptr)", "'ptr)': unknown key 'ptr)'" },
	{ "ptr:u128", "'ptr:u128': unknown type 'u128'" },
	{ "rank:u64", "'rank:u64': rank cannot be u64" },
	{ "-:u32", "'-:u32': '-' has no type" },
	{ "ptr ptr", "'ptr': ptr given twice" },
	{ "- - - - - - - - - - - - ptr", "'ptr': past argument word 12" },
	{ "- - - - - - - - - - - grid", "'grid': past argument word 12" },
	{ "*ptr *bytes", "'*bytes': two out fields" },
	{ "*-", "'*-': '*' needs a key" },
	{ "*grid", "'*grid': an out value is an integer" },
	{ "kernel name", "'name': two fn fields" },
	{ "name:str", "'name:str': a str is the copy: '&' or '!'" },
	{ "id", "'id': a mem is the copy: '&' or '!'" },
	{ "&grid", "'&grid': a '&' field is type str, mem or an integer" },
	{ "&*ptr", "'&*ptr': '&*' is type str or mem" },
	{ "&*-", "'&*-': '&*' needs a key" },
	{ "&- &name:str", "'&name:str': two copies" },
	{ "&- id!16", "'id!16': two copies" },
	{ "bytes@8", "'@' fields need a '&' or '!' field" },
	{ "&name:str ptr@0", "'@' fields read a struct copy, not a string" },
	{ "&- ptr@0 bytes@192", "bytes@192 is past the copy (192 bytes from 0)" },
	{ "&- ptr@x", "'ptr@x': bad offset" },
	{ "&- ptr@-8", "'ptr@-8': bad offset" },
	{ "&- *ptr@8", "'*ptr@8': an '@' field is KEY[:TYPE]@N" },
	{ "&- kernel@8", "'kernel@8': fn must be an argument word" },
	{ "&- name:str@0", "'name:str@0': a str is not read at an offset" },
	{ "ptr!4", "'ptr!4': a by-value struct is type mem" },
	{ "-!0", "'-!0': bad word count" },
	{ "&-!4", "'&-!4': a by-value struct is KEY!N or -!N" },
	{ "id:mem!16", "'id:mem!16': a by-value struct is KEY!N or -!N" },
	{ "ptr-", "'ptr-': unknown key 'ptr-'" },
	{ "kind=sideways", "'kind=sideways': unknown value of kind" },
	{ "bytes=12x", "'bytes=12x': bad number" },
	{ "bytes=", "'bytes=': bad number" },
	{ "bytes=-1", "'bytes=-1': bad number" },
	{ "grid=1", "'grid=1': a constant needs an integer key" },
	{ "*bytes=1", "'*bytes=1': a constant is KEY=VALUE" },
	{ "-=1", "'-=1': a constant is KEY=VALUE" },
	{ "ptr:u32:u8", "'ptr:u32:u8': unknown type 'u32:u8'" },
	{ "ptr#", "'ptr#': unknown key 'ptr#'" },
};

static void test_malformed(void)
{
	char err[160], many[256] = "";
	struct ucall_spec s;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *want = bad[i].err;

		memset(&s, 0xa5, sizeof(s));
		if (!ASSERT_EQ(compile(bad[i].args, &s, err, sizeof(err)), -EINVAL, bad[i].args))
			continue;
		ASSERT_STREQ(err, want, bad[i].args);
		ASSERT_TRUE(s.nfields == 0 && s.keys == 0 && s.copy_arg == 0 && s.out_word == -1,
			    "a failed spec is empty");
	}
	for (int i = 0; i <= UCALL_SPEC_MAX_FIELDS; i++)
		strcat(many, "bytes=1 ");
	ASSERT_EQ(compile(many, &s, err, sizeof(err)), -EINVAL, "25 fields");
	ASSERT_STREQ(err, "'bytes=1': more than 24 fields", "25 fields");
	ASSERT_EQ(compile("bytes=1111111111111111111111111111111111111111111111111111111111111111",
			  &s, err, sizeof(err)),
		  -EINVAL, "long field");
	ASSERT_STREQ(err, "field 'bytes=11111111111111...' too long", "long field");
	/* No room for the message: still refused. */
	ASSERT_EQ(ucall_spec__compile("bytez", keys, K_NR, &s, NULL, 0), -EINVAL, "no err buffer");
}

/* The table check names the function, and the family's own check runs after the grammar. */
static int no_ptr(const struct ucall_api *a, const struct ucall_spec *s, char *err, size_t len)
{
	if (ucall_spec__has(s, K_PTR)) {
		snprintf(err, len, "ptr is not allowed here");
		return -EINVAL;
	}
	return 0;
}

static void test_table_check(void)
{
	struct ucall_api apis[2] = { { .name = "fa", .args = "bytes" },
				     { .name = "fb", .args = "rank" } };
	static struct ucall_spec *compiled;
	struct ucall_table t = { "test", 1, apis, 2, keys, K_NR, no_ptr, &compiled };
	struct ucall_spec tmp;
	char err[256];

	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), 0, "good table");
	apis[1].args = "rank bytez";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "bad spec");
	ASSERT_STREQ(err, "fb: 'bytez': unknown key 'bytez'", "bad spec message");
	apis[1].args = "ptr";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "family check");
	ASSERT_STREQ(err, "fb: ptr is not allowed here", "family check message");
	apis[1].args = NULL;
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "no spec");
	ASSERT_STREQ(err, "fb: no argument spec", "no spec message");
	apis[1] = apis[0];
	apis[1].args = "rank";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "duplicate");
	ASSERT_STREQ(err, "fa: listed twice (0, 1)", "duplicate message");

	/* A spec that does not compile (the build refuses it) captures the most, shows none. */
	apis[1] = (struct ucall_api){ .name = "fb", .args = "rank bytez" };
	ASSERT_EQ(ucall_table__spec(&t, 1, &tmp)->nfields, 0, "broken spec: no fields");
	ASSERT_EQ(ucall_api__cookie(&t, 1), 1 | BS_UCOOKIE_STACK, "broken spec: every word");
	ASSERT_EQ(ucall_api__cookie(&t, 0), 0, "fa's cookie");
	ASSERT_TRUE(!ucall_table__spec(&t, 2, &tmp), "past the end");
}

int main(void)
{
	RUN_TEST(test_words_and_cookies);
	RUN_TEST(test_malformed);
	RUN_TEST(test_table_check);
	return UNIT_EXIT();
}
