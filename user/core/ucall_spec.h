/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The argument spec of a uprobe family's API function (ucall_api.args): one grammar for every
 * family (cuda, nccl), one compiler. The compiled spec says what the generic BPF programs
 * capture (the bpf_cookie: the out pointer, the copy, the stack words) and how a decoder
 * reads each argument back; nothing else restates it. Every table entry is compiled at build
 * time (tools/check_specs.c), so a malformed spec fails `make`, not a recording.
 *
 * A spec is fields separated by spaces, one per argument in order, as x86-64 SysV passes
 * them: an argument word goes in the next of rdi rsi rdx rcx r8 r9 (args[0..5]) while one is
 * left, else in the next stack word (args[6..11], the 7th.. words above the return address).
 *
 *   -            an argument word not shown
 *   KEY[:TYPE]   the next argument word (dim3: the next two, both in registers if two are
 *                left, else both on the stack)
 *   *KEY[:TYPE]  the next word points to the u64 the call writes: KEY shows it as read at
 *                return (bs_ucall.out), only when the call succeeded. At most one.
 *   &KEY[:TYPE]  the next word points to what is copied at return (the copy, bs_ucall's
 *   &-           deref): 192 bytes, or with TYPE str a NUL-terminated string of up to 512.
 *                KEY (type str or mem) shows the copy; '-' shows nothing (the @ fields read
 *                it); KEY of an integer type shows the word itself, the object's address (a
 *                C++ method's `this`, whose members the @ fields read). &*KEY (str or mem):
 *                the call writes it, so it is shown only when the call succeeded.
 *   KEY!N  -!N   a struct passed by value in N stack words (memory class, more than 16 bytes):
 *                it takes no register, and the stack-argument area is the copy (KEY: type mem)
 *   ^KEY[:TYPE]  the next word points to the value (a Fortran argument: BLAS's sgemm_ takes
 *                every int by reference): the 4 bytes there, read at entry (0 when the read
 *                faults), replace the word in the record; an integer of 4 bytes or less
 *   KEY[:TYPE]@N N bytes into the copied object; takes no word. The copy (192 bytes) starts
 *                at the object when that reaches every @ field, else at the 8-byte boundary
 *                at or below the lowest N (the cookie's off8), and must then reach them all.
 *   KEY=VALUE    a constant: a number, or one of the key's names (kind=HtoD)
 *
 * TYPE: u64 u32 s32 u16 u8 (the word's low bits, or that many bytes of the copy), dim3 (two
 * words x | y << 32 and z, or 12 bytes of the copy), fn (a function or handle shown by name:
 * an argument word, at most one), str and mem (the copy itself, '&' and '!' fields only).
 * Without :TYPE a field has its key's type. One copy per spec: one '&' field, or '!' fields.
 * KEYs and their types are the family's (ucall_table.keys); a key appears once unless the
 * family lets it repeat (cuda's bytes: the sizes multiply).
 *
 * For example:
 *   "*ptr bytes"                 cudaMalloc: the u64 the first argument points to, read at
 *                                return and shown as ptr when the call succeeded; the second
 *                                argument word as bytes
 *   "&- kernel:fn - " "grid:dim3@0 block:dim3@12 ..."
 *                                cudaLaunchKernelExC: the first argument's pointee, copied at
 *                                return; fields read from the copy at offsets
 *   "- &comm rank@24 nranks@28"  c10d::ProcessGroupGloo::allreduce: the first word is where
 *                                the returned Work goes (a class returned in memory), the
 *                                second `this`, shown as comm, its object copied: rank and
 *                                nranks read from its members
 *   "*comm nranks unique_id!16 rank"
 *                                ncclCommInitRank: a 128-byte struct passed by value in 16
 *                                stack words, copied from the stack-argument area; it takes no
 *                                register, so rank is still in rdx
 *
 * A family gives only its vocabulary, the keys its specs may name and the types each may have
 * (cuda_keys in user/families/cuda/cuda_api.c, nccl_keys in nccl_api.c), and a check of what
 * its decoder needs beyond the grammar (a launch has a kernel, grid, block, shared memory and
 * stream). The compiled descriptor serves both sides: ucall_spec__cookie makes the probe's
 * bpf_cookie from it, and the decoders walk its fields over the record. A table is compiled
 * once per process, on first use (ucall_table__spec). `make` builds and runs build/check_specs
 * (every table the registry names, struct family.api) before it links build/bpfsight, so a
 * malformed spec fails the build with the function's name and the problem ("cuda API table:
 * cudaMalloc: 'bytez': unknown key 'bytez'"); tests/unit/test_ucall_spec.c checks each error
 * and what good specs compile to.
 */
#ifndef BPFSIGHT_UCALL_SPEC_H
#define BPFSIGHT_UCALL_SPEC_H

#include <stddef.h>
#include <linux/types.h>
#include "ucall_records.h"

enum ucall_type {
	UCALL_T_U64,
	UCALL_T_U32,
	UCALL_T_S32,
	UCALL_T_U16,
	UCALL_T_U8,
	UCALL_T_DIM3,
	UCALL_T_FN,
	UCALL_T_STR,
	UCALL_T_MEM,
	UCALL_T_NR,
};

#define UCALL_T_INTS                                                                               \
	(1u << UCALL_T_U64 | 1u << UCALL_T_U32 | 1u << UCALL_T_S32 | 1u << UCALL_T_U16 |           \
	 1u << UCALL_T_U8)

/* Bytes a field of TYPE reads from the copy (0: str and mem, the copy itself). */
extern const __u8 ucall_type_size[UCALL_T_NR];

/* A key a family's specs may name; its index is ucall_field.key. */
struct ucall_key {
	const char *name;
	__u16 types;		   /* 1 << UCALL_T_* it may have */
	__u8 type;		   /* its type without :TYPE */
	__u8 repeat;		   /* it may appear more than once */
	const char *const *values; /* names a constant may use (KEY=NAME: its index) */
	__u32 nvalues;
};

#define UCALL_MAX_KEYS 64 /* ucall_spec.keys is a mask */

enum ucall_src {
	UCALL_SRC_WORD,	 /* args[word] (dim3: args[word], args[word + 1]) */
	UCALL_SRC_OUT,	 /* bs_ucall.out, read through args[word] at return */
	UCALL_SRC_COPY,	 /* the copy itself (type str or mem) */
	UCALL_SRC_AT,	 /* bytes of the copied object at off */
	UCALL_SRC_CONST, /* konst */
};

struct ucall_field {
	__u8 key;
	__u8 type;    /* enum ucall_type */
	__u8 src;     /* enum ucall_src */
	__u8 word;    /* WORD, OUT; COPY through '&': the pointer's word */
	__u8 written; /* '*', '&*': shown only when the call succeeded */
	__u8 _pad;
	__u16 off; /* AT: bytes into the copied object; the copy holds it from copy_off8 * 8 */
	__u64 konst;
};

#define UCALL_SPEC_MAX_FIELDS 24

/* A compiled spec. */
struct ucall_spec {
	__u8 nfields;
	__u8 nwords;	/* argument words it reaches: registers, then 6 + stack words */
	__s8 out_word;	/* the '*' field's word, -1: none */
	__s8 fn_word;	/* the fn field's word, -1: none */
	__u8 copy_arg;	/* the cookie's deref: '&' word + 1, BS_DEREF_ARG_STACK, 0: no copy */
	__u8 copy_mode; /* BS_DEREF_* */
	__u8 copy_off8; /* where the copy starts in the copied object, / 8 */
	__u8 _pad;
	__u64 keys;  /* 1 << key of every field */
	__u32 byref; /* 1 << word of every '^' field: the cookie's BS_UCOOKIE_BYREF */
	struct ucall_field f[UCALL_SPEC_MAX_FIELDS];
};

/*
 * Compile ARGS (NULL: "") naming KEYS[NKEYS] into *S. 0, or -EINVAL with the first problem
 * in ERR ("'bytes@8': '@' fields need a '&' or '!' field"); *S is then empty.
 */
int ucall_spec__compile(const char *args, const struct ucall_key *keys, __u32 nkeys,
			struct ucall_spec *s, char *err, size_t len);

/* Does S have a field of KEY? */
static inline int ucall_spec__has(const struct ucall_spec *s, int key)
{
	return !!(s->keys & (1ull << key));
}

/* The bpf_cookie of function FN (its table index) whose spec is S. */
__u64 ucall_spec__cookie(const struct ucall_spec *s, __u32 fn);

#endif /* BPFSIGHT_UCALL_SPEC_H */
