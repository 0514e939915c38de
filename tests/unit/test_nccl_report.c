// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl family, decode side: the API table against the real libnccl.so and nccl.h, decoding
 * of hand-built records carrying the argument words the x86-64 ABI really puts there (checked
 * with bpftrace on tests/workloads/nccl/nccl_calls), the communicator join and group
 * nesting of the walk, and the arithmetic of nccl_sum and nccl_comm_sum.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include CUDA_NCCL_H /* the real nccl.h (Makefile): enum values and sizes to check */
#include "nccl.h"
#include "nccl_decode.h"
#include "table.h"
#include "trace_model.h"
#include "unit.h"
#include "nccl_rec.h"
#include "cuda_records.h"

/* An int argument's word: x86-64 leaves the upper half of its register undefined. */
#define I(v) (0xdead0000ull << 32 | (__u32)(v))

/* A record of FN as ucall.bpf.h writes it; WITH_DEREF adds the 192-byte copy. */
static struct rec *mk(struct rec *r, const char *fn, __u32 pid, __u32 tid, __u64 ts, __u64 dur,
		      __s64 ret, int with_deref)
{
	memset(r, 0, sizeof(*r));
	r->u.h.type = BS_REC_NCCL_CALL;
	r->u.h.size = sizeof(r->u) + (with_deref ? BS_UCALL_DEREF_STRUCT : 0);
	r->u.h.pid = pid;
	r->u.h.tid = tid;
	r->u.h.ts = ts;
	r->u.dur = dur;
	/* ncclResult_t is an int: the upper half of rax is whatever was there. */
	r->u.ret = (__s64)(0x7777ull << 32 | (__u32)ret);
	r->u.fn = fn_of(fn);
	r->u.deref_len = with_deref ? BS_UCALL_DEREF_STRUCT : 0;
	return r;
}

static void set_args(struct rec *r, int n, const __u64 *v)
{
	for (int i = 0; i < n; i++)
		r->u.args[i] = v[i];
}

/* A recognizable ncclUniqueId: byte i = i + SEED. */
static void fill_id(__u8 *id, int seed)
{
	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
		id[i] = (__u8)(i + seed);
}

static const struct event_arg *arg(const struct event *ev, const char *key)
{
	for (__u32 i = 0; i < ev->nargs; i++)
		if (!strcmp(ev->args[i].key, key))
			return &ev->args[i];
	return NULL;
}

#define ARG_U(ev, key, v)   ASSERT_TRUE(arg(ev, key) && arg(ev, key)->u == (__u64)(v), key)
#define ARG_S(ev, key, v)   ASSERT_TRUE(arg(ev, key) && arg(ev, key)->s == (__s64)(v), key)
#define ARG_STR(ev, key, v) ASSERT_STREQ(arg(ev, key) ? arg(ev, key)->str : NULL, v, key)
#define NO_ARG(ev, key)	    ASSERT_TRUE(!arg(ev, key), "no " key)

static int decode(const struct rec *r, const struct nccl_walk *w, struct event *ev)
{
	event__init(ev, &r->u.h, "nccl_api");
	return nccl__decode(&r->u.h, NULL, w, ev);
}

/*
 * The addresses of the table's entries that PATH's .dynsym defines as functions into ADDR, and
 * of their pncclX aliases into PADDR. 0, or -1 when PATH cannot be read (said).
 */
static int table_addrs(const char *path, __u64 *addr, __u64 *paddr)
{
	Elf_Scn *scn = NULL;
	Elf *e = NULL;
	int fd = open(path, O_RDONLY);

	if (!ASSERT_TRUE(fd >= 0, path))
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!ASSERT_TRUE(e, "elf_begin")) {
		close(fd);
		return -1;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *data = NULL;
		GElf_Shdr sh;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		while ((data = elf_getdata(scn, data))) {
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				const char *name;

				if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
					continue;
				name = elf_strptr(e, sh.sh_link, sym.st_name);
				for (__u32 f = 0; name && f < nccl_table.napis; f++) {
					if (!strcmp(name, nccl_table.apis[f].name))
						addr[f] = sym.st_value;
					else if (name[0] == 'p' &&
						 !strcmp(name + 1, nccl_table.apis[f].name))
						paddr[f] = sym.st_value;
				}
			}
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

/*
 * Every symbol of the table is a function libnccl.so defines, as is its pnccl alias; gloo's
 * (ProcessGroupGloo's methods) are functions libtorch_cpu.so defines.
 */
static void test_table_symbols(void)
{
	const char *path = getenv("BPFSIGHT_LIBNCCL") ?: "/usr/local/cuda/lib64/libnccl.so";
	const char *torch =
		getenv("BPFSIGHT_LIBTORCH_CPU") ?: "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13";
	__u64 addr[64] = { 0 }, paddr[64] = { 0 }, gaddr[64] = { 0 }, unused[64];

	if (!ASSERT_TRUE(nccl_table.napis <= 64, "table fits the test"))
		return;
	if (table_addrs(path, addr, paddr) || table_addrs(torch, gaddr, unused))
		return;
	for (__u32 f = 0; f < nccl_table.napis; f++) {
		const char *name = nccl_table.apis[f].name;
		int gloo = !!(nccl_table.apis[f].flags & NCCL_F_GLOO);

		if (gloo && !gaddr[f])
			unit_fail("%s: not a function %s exports", name, torch);
		else if (gloo && (addr[f] || !nccl_table.apis[f].shown))
			unit_fail("%s: in libnccl, or no name shown", name);
		else if (!gloo && !addr[f])
			unit_fail("%s: not a function libnccl.so exports", name);
		else if (!gloo && paddr[f] != addr[f])
			unit_fail("%s: p%s is not at the same address", name, name);
		for (__u32 g = 0; g < f; g++)
			if (!strcmp(nccl_table.apis[g].name, name))
				unit_fail("%s: twice in the table", name);
	}
}

/* Every spec compiles and passes nccl's check; the index is the format. */
static void test_table_args(void)
{
	static const char *const first[] = { "ncclGetUniqueId", "ncclCommInitRank",
					     "ncclCommInitRankConfig" };
	static struct ucall_spec *compiled; /* not nccl_table's */
	struct ucall_api bad = { .name = "x", .args = "comm *rank" };
	struct ucall_table t = nccl_table;
	char why[256];

	ASSERT_STREQ(nccl_table.family, "nccl", "family");
	ASSERT_EQ(nccl_table.rec_type, BS_REC_NCCL_CALL, "record type");
	if (ucall_table__check(&nccl_table, why, sizeof(why)))
		unit_fail("%s", why);
	/* The file format: indexes never move (append only). */
	for (__u32 f = 0; f < 3; f++)
		ASSERT_STREQ(nccl_table.apis[f].name, first[f], "append-only order");
	ASSERT_EQ(fn_of("ncclAllReduce"), 17, "ncclAllReduce index");
	ASSERT_EQ(fn_of("ncclRecv"), 27, "ncclRecv index");
	ASSERT_EQ(ucall_api__cookie(&nccl_table, fn_of("ncclCommInitRank")),
		  BS_UCOOKIE(1, BS_DEREF_ARG_STACK, 0, BS_DEREF_STRUCT, 1) | BS_UCOOKIE_STACK,
		  "InitRank cookie (the unique id is on the stack)");
	/* 7 argument words: the stream is the first stack word. */
	ASSERT_EQ(ucall_api__cookie(&nccl_table, fn_of("ncclAllReduce")) & BS_UCOOKIE_STACK,
		  BS_UCOOKIE_STACK, "AllReduce copies its stack arguments");
	ASSERT_EQ(ucall_api__cookie(&nccl_table, fn_of("ncclCommUserRank")),
		  BS_UCOOKIE(fn_of("ncclCommUserRank"), 0, 0, 0, 2), "UserRank cookie");
	ASSERT_EQ(ucall_api__cookie(&nccl_table, fn_of("ncclCommInitRankScalable")),
		  BS_UCOOKIE(fn_of("ncclCommInitRankScalable"), 5, 0, BS_DEREF_STRUCT, 1),
		  "InitRankScalable cookie (&unique_id is word 4)");
	ASSERT_TRUE(!ucall_table__api(&nccl_table, nccl_table.napis), "past the end");
	/* A broken spec is caught, with nccl's keys and nccl's own check. */
	t.apis = &bad;
	t.napis = 1;
	t.compiled = &compiled;
	ASSERT_EQ(ucall_table__check(&t, why, sizeof(why)), 0, "good spec");
	bad.args = "comm *rank bogus";
	ASSERT_EQ(ucall_table__check(&t, why, sizeof(why)), -EINVAL, "unknown key");
	ASSERT_STREQ(why, "x: 'bogus': unknown key 'bogus'", "unknown key message");
	bad.args = "comm rank:u64";
	ASSERT_EQ(ucall_table__check(&t, why, sizeof(why)), -EINVAL, "rank is a C int");
	bad.args = "comm unique_id";
	ASSERT_EQ(ucall_table__check(&t, why, sizeof(why)), -EINVAL, "an id is a copy");
	ASSERT_STREQ(why, "x: 'unique_id': a mem is the copy: '&' or '!'", "id message");
	bad.args = "&*comms devlist";
	ASSERT_EQ(ucall_table__check(&t, why, sizeof(why)), -EINVAL, "comms without ndev");
	ASSERT_STREQ(why, "x: comms needs ndev", "comms message");
	bad = (struct ucall_api){ .name = "g", .flags = NCCL_F_GROUP_END, .args = "comm" };
	ASSERT_EQ(ucall_table__check(&t, why, sizeof(why)), -EINVAL, "group with an argument");
	ASSERT_STREQ(why, "g: group calls take no arguments", "group message");
}

/* The names and sizes the decoder uses are nccl.h's. */
static void test_enums_match_header(void)
{
	static const struct {
		int v;
		const char *name;
		int size;
	} dts[] = {
		{ ncclInt8, "ncclInt8", 1 },
		{ ncclUint8, "ncclUint8", 1 },
		{ ncclInt32, "ncclInt32", 4 },
		{ ncclUint32, "ncclUint32", 4 },
		{ ncclInt64, "ncclInt64", 8 },
		{ ncclUint64, "ncclUint64", 8 },
		{ ncclFloat16, "ncclFloat16", 2 },
		{ ncclFloat32, "ncclFloat32", 4 },
		{ ncclFloat64, "ncclFloat64", 8 },
		{ ncclBfloat16, "ncclBfloat16", 2 },
		{ ncclFloat8e4m3, "ncclFloat8e4m3", 1 },
		{ ncclFloat8e5m2, "ncclFloat8e5m2", 1 },
	};
	static const struct {
		int v;
		const char *name;
	} ops[] = { { ncclSum, "ncclSum" },
		    { ncclProd, "ncclProd" },
		    { ncclMax, "ncclMax" },
		    { ncclMin, "ncclMin" },
		    { ncclAvg, "ncclAvg" } },
	  res[] = { { ncclSuccess, "ncclSuccess" },
		    { ncclUnhandledCudaError, "ncclUnhandledCudaError" },
		    { ncclSystemError, "ncclSystemError" },
		    { ncclInternalError, "ncclInternalError" },
		    { ncclInvalidArgument, "ncclInvalidArgument" },
		    { ncclInvalidUsage, "ncclInvalidUsage" },
		    { ncclRemoteError, "ncclRemoteError" },
		    { ncclInProgress, "ncclInProgress" } };

	ASSERT_EQ(sizeof(ncclUniqueId), NCCL_ID_BYTES, "ncclUniqueId size");
	ASSERT_EQ(NCCL_UNIQUE_ID_BYTES, NCCL_ID_BYTES, "NCCL_UNIQUE_ID_BYTES");
	ASSERT_EQ(ncclInProgress, NCCL_IN_PROGRESS, "ncclInProgress");
	ASSERT_EQ(ncclNumTypes, sizeof(dts) / sizeof(dts[0]), "every datatype");
	for (size_t i = 0; i < sizeof(dts) / sizeof(dts[0]); i++) {
		ASSERT_STREQ(nccl__datatype_name(dts[i].v), dts[i].name, "datatype name");
		ASSERT_EQ(nccl__datatype_size(dts[i].v), dts[i].size, dts[i].name);
	}
	ASSERT_TRUE(!nccl__datatype_name(ncclNumTypes), "no type past the last");
	ASSERT_EQ(nccl__datatype_size(-1), 0, "negative type");
	ASSERT_EQ(ncclNumOps, 5, "ncclNumOps");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		ASSERT_STREQ(nccl__op_name(ops[i].v), ops[i].name, "op name");
	ASSERT_TRUE(!nccl__op_name(ncclNumOps), "user-defined op");
	ASSERT_EQ(ncclNumResults, 8, "ncclNumResults");
	for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++)
		ASSERT_STREQ(nccl__result_name(res[i].v), res[i].name, "result name");
	ASSERT_TRUE(!nccl__result_name(ncclNumResults), "unknown result");
}

static void test_id_hash(void)
{
	__u8 id[NCCL_ID_BYTES];

	/* FNV-1a 64 of bytes 0..127, computed independently (Python). */
	fill_id(id, 0);
	ASSERT_EQ(nccl__id_hash(id), 0x356c6cc8137514a5ull, "FNV-1a 64 of 0..127");
	id[127] ^= 1;
	ASSERT_TRUE(nccl__id_hash(id) != 0x356c6cc8137514a5ull, "last byte counts");
}

/* ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream): stream on the stack. */
static void test_decode_allreduce(void)
{
	const __u64 w[] = { 0x5e000000, 0x7ec00000,	1024,	  I(ncclFloat32),
			    I(ncclSum), 0x7f0000c00000, 0x57a0001 };
	struct event ev;
	struct rec r;

	mk(&r, "ncclAllReduce", 10, 11, 5000, 1234, ncclInvalidArgument, 0);
	set_args(&r, 7, w);
	ASSERT_EQ(decode(&r, NULL, &ev), 1, "decodes");
	ASSERT_STREQ(ev.name, "ncclAllReduce", "name");
	ASSERT_STREQ(ev.kind, "nccl_api", "kind");
	ASSERT_EQ(ev.dur, 1234, "dur");
	ASSERT_EQ(ev.ts, 5000, "ts");
	ARG_S(&ev, "ret", 4);
	ARG_STR(&ev, "error", "ncclInvalidArgument");
	ARG_U(&ev, "sendbuff", 0x5e000000);
	ASSERT_EQ(arg(&ev, "sendbuff")->kind, EVENT_ARG_HEX, "sendbuff is hex");
	ARG_U(&ev, "recvbuff", 0x7ec00000);
	ARG_U(&ev, "count", 1024);
	ARG_STR(&ev, "datatype", "ncclFloat32");
	ARG_U(&ev, "bytes", 4096);
	ARG_STR(&ev, "op", "ncclSum");
	ARG_U(&ev, "comm", 0x7f0000c00000);
	ASSERT_EQ(arg(&ev, "comm")->kind, EVENT_ARG_HEX, "comm is hex");
	ARG_U(&ev, "stream", 0x57a0001);
	NO_ARG(&ev, "rank");
	NO_ARG(&ev, "group_depth");
	NO_ARG(&ev, "depth");
	ASSERT_EQ(ev.nargs, 10, "nargs");

	/* Success: no error; an op NCCL numbers past ncclAvg is a user-defined one. */
	mk(&r, "ncclAllReduce", 10, 11, 5000, 1, ncclSuccess, 0);
	set_args(&r, 7, w);
	r.u.args[4] = I(ncclNumOps + 2);
	r.u.args[3] = I(42);
	decode(&r, NULL, &ev);
	NO_ARG(&ev, "error");
	ARG_STR(&ev, "op", "ncclRedOp_7");
	ARG_STR(&ev, "datatype", "ncclDataType_42");
	NO_ARG(&ev, "bytes");
}

/* ncclReduce: 8 arguments, comm and stream both on the stack; root is a C int in r9. */
static void test_decode_reduce_and_p2p(void)
{
	const __u64 red[] = { 0x1000, 0x2000, 100, I(ncclFloat64), I(ncclProd), I(3), 0xc0, 0x5a };
	const __u64 send[] = { 0x1000, 1000, I(ncclBfloat16), I(-1), 0xc0, 0x5a };
	struct event ev;
	struct rec r;

	mk(&r, "ncclReduce", 1, 1, 1, 1, 0, 0);
	set_args(&r, 8, red);
	decode(&r, NULL, &ev);
	ARG_S(&ev, "root", 3);
	ARG_STR(&ev, "op", "ncclProd");
	ARG_U(&ev, "bytes", 800);
	ARG_U(&ev, "comm", 0xc0);
	ARG_U(&ev, "stream", 0x5a);

	mk(&r, "ncclSend", 1, 1, 1, 1, 0, 0);
	set_args(&r, 6, send);
	decode(&r, NULL, &ev);
	ARG_S(&ev, "peer", -1);
	ARG_U(&ev, "bytes", 2000);
	ARG_U(&ev, "stream", 0x5a);
	NO_ARG(&ev, "recvbuff");

	/* ncclBcast's inner ncclBroadcast: depth 1. */
	mk(&r, "ncclBroadcast", 1, 1, 1, 1, 0, 0);
	r.u.depth = 1;
	decode(&r, NULL, &ev);
	ARG_U(&ev, "depth", 1);
}

/*
 * ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank): the id (128
 * bytes, memory class) goes on the stack, so rank is in rdx; the copy is the stack area.
 */
static void test_decode_init_rank(void)
{
	struct event ev;
	struct rec r;

	mk(&r, "ncclCommInitRank", 20, 20, 100, 5000, ncclSuccess, 1);
	r.u.args[0] = 0x7ffd0000a000; /* &comm */
	r.u.args[1] = I(4);
	r.u.args[2] = I(2);
	r.u.args[3] = 0x1111; /* rcx, r8, r9: whatever was there */
	fill_id(r.deref, 0);
	memcpy(&r.u.args[6], r.deref, 48); /* the stack words are the id's first 48 bytes */
	r.u.out = 0x55550000c000;
	ASSERT_EQ(decode(&r, NULL, &ev), 1, "decodes");
	ARG_S(&ev, "ret", 0);
	NO_ARG(&ev, "error");
	ARG_U(&ev, "comm", 0x55550000c000);
	ARG_S(&ev, "nranks", 4);
	ARG_S(&ev, "rank", 2);
	ARG_STR(&ev, "unique_id_hash", "356c6cc8137514a5");
	ASSERT_EQ(ev.nargs, 5, "nargs");

	/* Failed (no GPU): no communicator, but the id it was given is still known. */
	r.u.ret = ncclUnhandledCudaError;
	decode(&r, NULL, &ev);
	ARG_STR(&ev, "error", "ncclUnhandledCudaError");
	NO_ARG(&ev, "comm");
	ARG_STR(&ev, "unique_id_hash", "356c6cc8137514a5");
	ARG_S(&ev, "rank", 2);

	/* A copy that faulted (zero-filled) or is missing: no hash. */
	memset(r.deref, 0, sizeof(r.deref));
	decode(&r, NULL, &ev);
	NO_ARG(&ev, "unique_id_hash");
	fill_id(r.deref, 0);
	r.u.h.size = sizeof(r.u); /* claims a copy the record does not hold */
	decode(&r, NULL, &ev);
	NO_ARG(&ev, "unique_id_hash");
	ARG_S(&ev, "nranks", 4);

	/* ncclCommInitRankConfig: config after rank, in rcx. */
	mk(&r, "ncclCommInitRankConfig", 20, 20, 100, 5000, ncclInProgress, 1);
	r.u.args[1] = I(8);
	r.u.args[2] = I(5);
	r.u.args[3] = 0x7ffd0000b000;
	fill_id(r.deref, 0);
	r.u.out = 0xc0;
	decode(&r, NULL, &ev);
	ARG_STR(&ev, "error", "ncclInProgress");
	ARG_U(&ev, "comm", 0xc0); /* nonblocking: the handle is valid */
	ARG_S(&ev, "rank", 5);
	ARG_S(&ev, "nranks", 8);
	ARG_U(&ev, "config", 0x7ffd0000b000);

	/* ncclGetUniqueId writes the id: hashed only when it succeeded. */
	mk(&r, "ncclGetUniqueId", 20, 20, 50, 10, ncclSuccess, 1);
	fill_id(r.deref, 0);
	decode(&r, NULL, &ev);
	ARG_STR(&ev, "unique_id_hash", "356c6cc8137514a5");
	r.u.ret = ncclSystemError;
	decode(&r, NULL, &ev);
	NO_ARG(&ev, "unique_id_hash");
}

/* Records of unknown functions and odd sizes decode without reading past them. */
static void test_decode_bad_input(void)
{
	const struct rec_decoder *d = NULL;
	struct event ev;
	struct rec r;

	for (const struct rec_decoder *x = nccl_decoders; x->type; x++)
		if (x->type == BS_REC_NCCL_CALL)
			d = x;
	if (!ASSERT_TRUE(d, "decoder registered"))
		return;
	ASSERT_EQ(d->min_size, sizeof(struct bs_ucall), "min_size");
	ASSERT_STREQ(d->kind, "nccl_api", "kind");
	mk(&r, "ncclAllReduce", 1, 1, 1, 1, 0, 0);
	r.u.fn = 200; /* a newer table's function */
	event__init(&ev, &r.u.h, d->kind);
	ASSERT_EQ(d->decode(&r.u.h, NULL, &ev), 1, "decodes");
	ASSERT_STREQ(ev.name, "nccl_fn_200", "unknown fn name");
	ASSERT_EQ(ev.nargs, 1, "only ret");
	/* InitAll claims 24 handles but ndev says 1000: only what the copy holds. */
	mk(&r, "ncclCommInitAll", 1, 1, 1, 1, 0, 1);
	r.u.args[1] = I(1000);
	for (int i = 0; i < 24; i++)
		((__u64 *)r.deref)[i] = 0x100 + i;
	decode(&r, NULL, &ev);
	ASSERT_TRUE(arg(&ev, "comms") && strlen(arg(&ev, "comms")->str) < sizeof(ev.strbuf),
		    "comms fits");
	ASSERT_TRUE(!strncmp(arg(&ev, "comms")->str, "0x100,0x101,", 12), "comms list");
	r.u.args[1] = I(-3);
	decode(&r, NULL, &ev);
	ARG_STR(&ev, "comms", "");
}

/* The walk: an init's out joins every later call on that communicator. */
static void test_walk_join(void)
{
	struct nccl_walk *w = nccl_walk__new();
	const struct nccl_comm *cm;
	struct event ev;
	struct rec r;

	if (!ASSERT_TRUE(w, "walk"))
		return;
	mk(&r, "ncclCommInitRank", 30, 31, 100, 50, ncclSuccess, 1);
	r.u.args[1] = I(4);
	r.u.args[2] = I(2);
	fill_id(r.deref, 0);
	r.u.out = 0xc0;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ASSERT_EQ(ev.nargs, 5, "init: no duplicate join args");

	mk(&r, "ncclAllReduce", 30, 32, 200, 10, 0, 0); /* another thread of the process */
	r.u.args[2] = 8;
	r.u.args[3] = I(ncclFloat32);
	r.u.args[5] = 0xc0;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ARG_S(&ev, "rank", 2);
	ARG_S(&ev, "nranks", 4);
	ARG_STR(&ev, "unique_id_hash", "356c6cc8137514a5");
	/* The same pointer in another process is another communicator. */
	r.u.h.pid = 33;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	NO_ARG(&ev, "rank");
	/* Without the walk's context for this very record: no join. */
	r.u.h.pid = 30;
	decode(&r, w, &ev);
	NO_ARG(&ev, "rank");

	/* ncclCommInitAll: comms[i] is rank i of ndev. */
	mk(&r, "ncclCommInitAll", 30, 31, 300, 50, ncclSuccess, 1);
	r.u.args[1] = I(2);
	((__u64 *)r.deref)[0] = 0xa0;
	((__u64 *)r.deref)[1] = 0xa1;
	((__u64 *)r.deref)[2] = 0xa2; /* past ndev */
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ARG_STR(&ev, "comms", "0xa0,0xa1");
	cm = nccl_walk__comm(w, 30, 0xa1);
	ASSERT_TRUE(cm && cm->rank == 1 && cm->nranks == 2 && !cm->have_hash, "comms[1]");
	ASSERT_TRUE(!nccl_walk__comm(w, 30, 0xa2), "comms[2] past ndev");

	/* ncclCommSplit(comm, color, key, *newcomm, config): the new one's parent. */
	mk(&r, "ncclCommSplit", 30, 31, 400, 50, ncclSuccess, 0);
	r.u.args[0] = 0xa0;
	r.u.args[1] = I(3);
	r.u.args[2] = I(11);
	r.u.out = 0xb0;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ARG_U(&ev, "comm", 0xa0);
	ARG_S(&ev, "color", 3);
	ARG_S(&ev, "key", 11);
	ARG_U(&ev, "newcomm", 0xb0);
	ARG_S(&ev, "rank", 0); /* the parent's */
	cm = nccl_walk__comm(w, 30, 0xb0);
	ASSERT_TRUE(cm && cm->parent == 0xa0 && cm->rank == -1 && cm->nranks == -1, "split");
	/* A failed split creates nothing, whatever *newcomm held. */
	r.u.ret = ncclInvalidArgument;
	r.u.out = 0xb1;
	nccl_walk__observe(w, &r.u.h);
	ASSERT_TRUE(!nccl_walk__comm(w, 30, 0xb1), "failed split");
	ASSERT_EQ(nccl_walk__err(w), 0, "no error");
	nccl_walk__free(w);
}

/* Recording began after the init (-p): ncclCommUserRank/ncclCommCount fill the join in. */
static void test_walk_learns_from_queries(void)
{
	struct nccl_walk *w = nccl_walk__new();
	struct event ev;
	struct rec r;

	if (!ASSERT_TRUE(w, "walk"))
		return;
	mk(&r, "ncclAllGather", 40, 40, 100, 10, 0, 0);
	r.u.args[4] = 0xd0;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	NO_ARG(&ev, "rank");
	NO_ARG(&ev, "nranks");

	mk(&r, "ncclCommUserRank", 40, 40, 200, 10, 0, 0);
	r.u.args[0] = 0xd0;
	r.u.out = 0x1234567800000003ull; /* an int: the 4 bytes after it are not its */
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ARG_S(&ev, "rank", 3);
	ASSERT_EQ(ev.nargs, 3, "ret comm rank");
	mk(&r, "ncclCommCount", 40, 40, 300, 10, 0, 0);
	r.u.args[0] = 0xd0;
	r.u.out = 0xffffffff00000008ull;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ARG_S(&ev, "nranks", 8);
	ARG_S(&ev, "rank", 3); /* joined */
	/* A failed query teaches nothing: the join still says 8. */
	mk(&r, "ncclCommCount", 40, 40, 350, 10, ncclInvalidArgument, 0);
	r.u.args[0] = 0xd0;
	r.u.out = 99;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ARG_S(&ev, "nranks", 8);

	mk(&r, "ncclAllGather", 40, 40, 400, 10, 0, 0);
	r.u.args[4] = 0xd0;
	nccl_walk__observe(w, &r.u.h);
	decode(&r, w, &ev);
	ARG_S(&ev, "rank", 3);
	ARG_S(&ev, "nranks", 8);
	NO_ARG(&ev, "unique_id_hash");
	nccl_walk__free(w);
}

/* Group nesting per thread, from the order calls return in. */
#define GLOO_NEXTTAG "_ZN4c10d16ProcessGroupGloo7nextTagEv"

/* FNV-1a of S: how the walk names a communicator it guesses. */
static __u64 fnv(const char *s)
{
	__u64 h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * A gloo collective as torch 1.13 makes it: ProcessGroupGloo::nextTag(this) returning its tag,
 * the process group's rank_ and size_ in its copy.
 */
static void gloo_coll(struct nccl_walk *w, struct rec *r, __u32 pid, __u64 pg, __u64 ts, __u32 tag)
{
	mk(r, GLOO_NEXTTAG, pid, pid, ts, 2, tag, 1);
	r->u.ret = tag;
	r->u.args[0] = pg;
	((__s32 *)r->deref)[6] = 2; /* rank_ @24 */
	((__s32 *)r->deref)[7] = 4; /* size_ @28 */
	nccl_walk__observe(w, &r->u.h);
}

/* gloo's process groups: named by first use apart from NCCL's, numbered by their tags. */
static void test_walk_gloo(void)
{
	struct nccl_walk *w = nccl_walk__new();
	const struct nccl_ctx *ctx;
	struct event ev;
	struct rec r;

	if (!ASSERT_TRUE(w, "walk"))
		return;
	/* An NCCL communicator of unseen creation first: it does not shift gloo's count. */
	mk(&r, "ncclAllReduce", 50, 50, 100, 10, 0, 0);
	r.u.args[5] = 0xc0;
	nccl_walk__observe(w, &r.u.h);
	ctx = nccl_walk__ctx(w, &r.u.h);
	ASSERT_TRUE(ctx && ctx->comm.group == fnv("nccl comm #1"), "nccl's guess");

	gloo_coll(w, &r, 50, 0x5000, 1000, 7);
	ctx = nccl_walk__ctx(w, &r.u.h);
	if (!ASSERT_TRUE(ctx && ctx->have_comm, "gloo's process group"))
		goto out;
	ASSERT_EQ(ctx->coll_seq, 7, "seq: the tag");
	ASSERT_EQ(ctx->comm.group, fnv("gloo pg #1"), "the process's first process group");
	ASSERT_TRUE(ctx->comm.rank == 2 && ctx->comm.nranks == 4, "rank_ and size_");
	decode(&r, w, &ev);
	ASSERT_STREQ(ev.name, "gloo collective", "shown name");
	NO_ARG(&ev, "ret");
	NO_ARG(&ev, "error");
	ARG_U(&ev, "tag", 7);
	ARG_U(&ev, "comm", 0x5000);
	ARG_S(&ev, "rank", 2);
	ARG_U(&ev, "seq", 7);

	/* One inside another call of the family (none is probed now): not the application's. */
	gloo_coll(w, &r, 50, 0x5000, 2000, 8);
	r.u.depth = 1;
	nccl_walk__observe(w, &r.u.h);
	ctx = nccl_walk__ctx(w, &r.u.h);
	ASSERT_TRUE(ctx && ctx->coll_seq == -1, "depth 1: no seq");

	/* A second process group, and a rank_/size_ that make no sense (another layout). */
	gloo_coll(w, &r, 50, 0x6000, 4000, 0);
	ctx = nccl_walk__ctx(w, &r.u.h);
	ASSERT_TRUE(ctx && ctx->comm.group == fnv("gloo pg #2") && ctx->coll_seq == 0, "pg #2");
	((__s32 *)r.deref)[6] = 5;
	r.u.h.pid = 51;
	nccl_walk__observe(w, &r.u.h);
	ctx = nccl_walk__ctx(w, &r.u.h);
	ASSERT_TRUE(ctx && ctx->comm.rank == -1 && ctx->comm.nranks == -1, "rank 5 of 4: unknown");
out:
	nccl_walk__free(w);
}

static void test_walk_groups(void)
{
	static const struct {
		const char *fn;
		__u32 tid;
		__u64 ts, dur;
		int ret;
		int depth;   /* group_depth shown, 0 = none */
		__u64 group; /* group_ns shown, 0 = none */
	} seq[] = {
		{ "ncclGroupStart", 7, 100, 5, 0, 0, 0 },
		{ "ncclAllReduce", 7, 110, 5, 0, 1, 0 },
		{ "ncclGroupStart", 7, 120, 5, 0, 1, 0 },
		{ "ncclSend", 7, 130, 5, 0, 2, 0 },
		{ "ncclAllReduce", 8, 135, 5, 0, 0, 0 }, /* another thread: not in the group */
		{ "ncclGroupEnd", 7, 140, 10, 0, 1, 30 },
		{ "ncclRecv", 7, 160, 5, 0, 1, 0 },
		{ "ncclGroupEnd", 7, 170, 30, 0, 0, 100 },
		{ "ncclAllReduce", 7, 210, 5, 0, 0, 0 },
		/* An End without a Start: NCCL refuses it; nothing goes negative. */
		{ "ncclGroupEnd", 8, 220, 5, ncclInvalidUsage, 0, 0 },
		{ "ncclSend", 8, 230, 5, 0, 0, 0 },
	};
	struct nccl_walk *w = nccl_walk__new();
	struct event ev;
	struct rec r;
	char what[64];

	if (!ASSERT_TRUE(w, "walk"))
		return;
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		mk(&r, seq[i].fn, 70, seq[i].tid, seq[i].ts, seq[i].dur, seq[i].ret, 0);
		nccl_walk__observe(w, &r.u.h);
		decode(&r, w, &ev);
		snprintf(what, sizeof(what), "call %zu (%s) group_depth", i, seq[i].fn);
		if (seq[i].depth)
			ASSERT_TRUE(arg(&ev, "group_depth") &&
					    arg(&ev, "group_depth")->u == (__u64)seq[i].depth,
				    what);
		else
			ASSERT_TRUE(!arg(&ev, "group_depth"), what);
		snprintf(what, sizeof(what), "call %zu (%s) group_ns", i, seq[i].fn);
		if (seq[i].group)
			ASSERT_TRUE(arg(&ev, "group_ns") && arg(&ev, "group_ns")->u == seq[i].group,
				    what);
		else
			ASSERT_TRUE(!arg(&ev, "group_ns"), what);
	}
	nccl_walk__free(w);
}

static const struct report *find_report(const char *name)
{
	for (const struct report *const *rp = nccl_reports; *rp; rp++)
		if (!strcmp((*rp)->name, name))
			return *rp;
	return NULL;
}

/* Feed RECS to report NAME; the table, or NULL. */
static struct table *run_report(const char *name, struct rec *recs, int n)
{
	const struct report *rep = find_report(name);
	struct table *t = NULL;
	void *st;

	if (!ASSERT_TRUE(rep, name))
		return NULL;
	st = rep->new ();
	if (!ASSERT_TRUE(st, "new"))
		return NULL;
	for (int i = 0; i < n; i++)
		rep->add(st, &recs[i].u.h, NULL);
	t = table__new(name);
	if (!ASSERT_TRUE(t, "table") || !ASSERT_EQ(rep->emit(st, NULL, t), 0, "emit")) {
		table__free(t);
		t = NULL;
	}
	rep->free(st);
	return t;
}

static int row_of(const struct table *t, const char *col, const char *v)
{
	int c = table__col(t, col);

	for (int i = 0; i < table__nrows(t); i++)
		if (table__get_str(t, i, c) && !strcmp(table__get_str(t, i, c), v))
			return i;
	return -1;
}

#define CELL_U(t, row, col) table__get_u64(t, row, table__col(t, col))
#define CELL_D(t, row, col) table__get_double(t, row, table__col(t, col))

static void test_nccl_sum(void)
{
	struct rec recs[12];
	struct table *t;
	int n = 0, row;

	/* ncclAllReduce x3: 100, 300 (failed), 200 (unknown type: bytes unknown). */
	mk(&recs[n], "ncclAllReduce", 1, 1, 10, 100, 0, 0);
	recs[n].u.args[2] = 1024;
	recs[n++].u.args[3] = I(ncclFloat32);
	mk(&recs[n], "ncclAllReduce", 1, 1, 20, 300, ncclInvalidArgument, 0);
	recs[n].u.args[2] = 10;
	recs[n++].u.args[3] = I(ncclFloat64);
	mk(&recs[n], "ncclAllReduce", 1, 2, 30, 200, 0, 0);
	recs[n].u.args[2] = 1;
	recs[n++].u.args[3] = I(99);
	/* ncclBcast calls ncclBroadcast: only the outer call counts. */
	mk(&recs[n], "ncclBroadcast", 1, 1, 41, 900, 0, 0);
	recs[n].u.depth = 1;
	recs[n].u.args[2] = 300;
	recs[n++].u.args[3] = I(ncclUint8);
	mk(&recs[n], "ncclBcast", 1, 1, 40, 1000, 0, 0);
	recs[n].u.args[1] = 300;
	recs[n++].u.args[2] = I(ncclUint8);
	mk(&recs[n++], "ncclGroupStart", 1, 1, 50, 5, 0, 0);
	mk(&recs[n++], "ncclGroupEnd", 1, 1, 60, 50, 0, 0);
	mk(&recs[n++], "ncclCommInitRank", 1, 1, 1, 10000, ncclInProgress, 1);
	mk(&recs[n], "ncclAllReduce", 1, 1, 70, 7, 0, 0);
	recs[n++].u.fn = 200;
	recs[n].u.h.type = BS_REC_CUDA_CALL; /* another family's record: ignored */
	recs[n++].u.h.size = sizeof(struct bs_ucall);

	t = run_report("nccl_sum", recs, n);
	if (!t)
		return;
	if (!ASSERT_EQ(table__nrows(t), 6, "rows"))
		goto cleanup;
	/* By total time: InitRank 10000, Bcast 1000, AllReduce 600, End 50, fn_200 7, Start 5. */
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "name")), "ncclCommInitRank", "row 0");
	ASSERT_STREQ(table__get_str(t, 1, table__col(t, "name")), "ncclBcast", "row 1");
	ASSERT_STREQ(table__get_str(t, 2, table__col(t, "name")), "ncclAllReduce", "row 2");
	ASSERT_STREQ(table__get_str(t, 3, table__col(t, "name")), "ncclGroupEnd", "row 3");
	ASSERT_STREQ(table__get_str(t, 4, table__col(t, "name")), "nccl_fn_200", "row 4");
	ASSERT_STREQ(table__get_str(t, 5, table__col(t, "name")), "ncclGroupStart", "row 5");
	ASSERT_EQ(row_of(t, "name", "ncclBroadcast"), -1, "nested broadcast not counted");
	row = 2;
	ASSERT_EQ(CELL_U(t, row, "count"), 3, "allreduce count");
	ASSERT_EQ(CELL_U(t, row, "total_ns"), 600, "allreduce total");
	ASSERT_EQ(CELL_U(t, row, "min_ns"), 100, "allreduce min");
	ASSERT_EQ(CELL_U(t, row, "max_ns"), 300, "allreduce max");
	ASSERT_NEAR(CELL_D(t, row, "avg_ns"), 200, 1e-9, "allreduce avg");
	ASSERT_NEAR(CELL_D(t, row, "med_ns"), 200, 1e-9, "allreduce med");
	ASSERT_NEAR(CELL_D(t, row, "stddev_ns"), sqrt(20000.0 / 3), 1e-9, "allreduce stddev");
	ASSERT_EQ(CELL_U(t, row, "bytes"), 4096 + 80, "allreduce bytes");
	ASSERT_EQ(CELL_U(t, row, "errors"), 1, "allreduce errors");
	ASSERT_NEAR(CELL_D(t, row, "time_pct"), 600 * 100.0 / 11662, 1e-9, "allreduce pct");
	ASSERT_EQ(CELL_U(t, 1, "bytes"), 300, "bcast bytes");
	ASSERT_EQ(CELL_U(t, 1, "count"), 1, "bcast count");
	ASSERT_EQ(CELL_U(t, 0, "errors"), 0, "ncclInProgress is not an error");
	ASSERT_TRUE(!table__is_set(t, 3, table__col(t, "bytes")), "groups move no bytes");
	ASSERT_TRUE(!table__is_set(t, 0, table__col(t, "bytes")), "init moves no bytes");
cleanup:
	table__free(t);
}

static void test_nccl_comm_sum(void)
{
	struct rec recs[12];
	struct table *t;
	int n = 0;

	mk(&recs[n], "ncclCommInitRank", 50, 50, 10, 1000, ncclSuccess, 1);
	recs[n].u.args[1] = I(4);
	recs[n].u.args[2] = I(2);
	fill_id(recs[n].deref, 0);
	recs[n++].u.out = 0xc0;
	/* AllReduce on it: 1024 x f32; Send in a group: 10 x int8. */
	mk(&recs[n], "ncclAllReduce", 50, 50, 20, 100, 0, 0);
	recs[n].u.args[2] = 1024;
	recs[n].u.args[3] = I(ncclFloat32);
	recs[n++].u.args[5] = 0xc0;
	mk(&recs[n++], "ncclGroupStart", 50, 50, 25, 1, 0, 0);
	mk(&recs[n], "ncclSend", 50, 50, 30, 20, 0, 0);
	recs[n].u.args[1] = 10;
	recs[n].u.args[2] = I(ncclInt8);
	recs[n++].u.args[4] = 0xc0;
	mk(&recs[n++], "ncclGroupEnd", 50, 50, 35, 1, 0, 0);
	/* A communicator whose init was not recorded, then its queries (-p). */
	mk(&recs[n], "ncclBroadcast", 50, 51, 39, 900, 0, 0);
	recs[n].u.depth = 1;
	recs[n++].u.args[5] = 0xc1;
	mk(&recs[n], "ncclBcast", 50, 51, 38, 1000, 0, 0);
	recs[n].u.args[1] = 300;
	recs[n].u.args[2] = I(ncclUint8);
	recs[n++].u.args[4] = 0xc1;
	mk(&recs[n], "ncclCommUserRank", 50, 51, 50, 1, 0, 0);
	recs[n].u.args[0] = 0xc1;
	recs[n++].u.out = 1;
	mk(&recs[n], "ncclCommCount", 50, 51, 60, 1, 0, 0);
	recs[n].u.args[0] = 0xc1;
	recs[n++].u.out = 2;
	/* 0xc0 destroyed, and the allocator hands the address to the next communicator. */
	mk(&recs[n], "ncclCommDestroy", 50, 50, 70, 1, 0, 0);
	recs[n++].u.args[0] = 0xc0;
	mk(&recs[n], "ncclCommInitRank", 50, 50, 80, 1000, ncclSuccess, 1);
	recs[n].u.args[1] = I(1);
	recs[n].u.args[2] = I(0);
	fill_id(recs[n].deref, 1);
	recs[n++].u.out = 0xc0;
	mk(&recs[n], "ncclAllReduce", 50, 50, 90, 7, 0, 0);
	recs[n].u.args[2] = 2;
	recs[n].u.args[3] = I(ncclFloat64);
	recs[n++].u.args[5] = 0xc0;

	t = run_report("nccl_comm_sum", recs, n);
	if (!t)
		return;
	if (!ASSERT_EQ(table__nrows(t), 3, "rows"))
		goto cleanup;
	/* In order of first sight. */
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "comm")), "0xc0", "row 0 comm");
	ASSERT_EQ(CELL_U(t, 0, "pid"), 50, "pid");
	ASSERT_EQ(table__get_s64(t, 0, table__col(t, "rank")), 2, "row 0 rank");
	ASSERT_EQ(table__get_s64(t, 0, table__col(t, "nranks")), 4, "row 0 nranks");
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "unique_id_hash")), "356c6cc8137514a5",
		     "row 0 hash");
	ASSERT_EQ(CELL_U(t, 0, "operations"), 2, "row 0 operations");
	ASSERT_EQ(CELL_U(t, 0, "bytes"), 4096 + 10, "row 0 bytes");
	ASSERT_EQ(CELL_U(t, 0, "total_ns"), 120, "row 0 total");
	ASSERT_STREQ(table__get_str(t, 1, table__col(t, "comm")), "0xc1", "row 1 comm");
	ASSERT_EQ(table__get_s64(t, 1, table__col(t, "rank")), 1, "row 1 rank learnt later");
	ASSERT_EQ(table__get_s64(t, 1, table__col(t, "nranks")), 2, "row 1 nranks learnt later");
	ASSERT_TRUE(!table__is_set(t, 1, table__col(t, "unique_id_hash")), "row 1 no hash");
	ASSERT_EQ(CELL_U(t, 1, "operations"), 1, "row 1 operations (depth 0 only)");
	ASSERT_EQ(CELL_U(t, 1, "bytes"), 300, "row 1 bytes");
	ASSERT_STREQ(table__get_str(t, 2, table__col(t, "comm")), "0xc0", "row 2: reused address");
	ASSERT_EQ(table__get_s64(t, 2, table__col(t, "rank")), 0, "row 2 rank");
	ASSERT_EQ(table__get_s64(t, 2, table__col(t, "nranks")), 1, "row 2 nranks");
	ASSERT_TRUE(
		strcmp(table__get_str(t, 2, table__col(t, "unique_id_hash")), "356c6cc8137514a5"),
		"row 2: another id");
	ASSERT_EQ(CELL_U(t, 2, "operations"), 1, "row 2 operations");
	ASSERT_EQ(CELL_U(t, 2, "bytes"), 16, "row 2 bytes");
cleanup:
	table__free(t);
}

int main(void)
{
	RUN_TEST(test_table_symbols);
	RUN_TEST(test_table_args);
	RUN_TEST(test_enums_match_header);
	RUN_TEST(test_id_hash);
	RUN_TEST(test_decode_allreduce);
	RUN_TEST(test_decode_reduce_and_p2p);
	RUN_TEST(test_decode_init_rank);
	RUN_TEST(test_decode_bad_input);
	RUN_TEST(test_walk_join);
	RUN_TEST(test_walk_learns_from_queries);
	RUN_TEST(test_walk_groups);
	RUN_TEST(test_walk_gloo);
	RUN_TEST(test_nccl_sum);
	RUN_TEST(test_nccl_comm_sum);
	return UNIT_EXIT();
}
