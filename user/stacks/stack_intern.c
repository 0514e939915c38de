// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Symbolize raw user stacks while recording and intern them (stack_intern.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include "record_ctx.h"
#include "native_frames.h"
#include "records.h"
#include "stack_intern.h"
#include "hmap.h"
#include "proc_meta.h"

/* A process's raw addresses seen before: the cache in front of symbolization. */
struct raw_ent {
	__u64 *ips;
	__u32 n;
	__u32 id;
	__u32 capped; /* the tag it was cached with */
};

/* A stack written to the file, by content. */
struct stack_ent {
	struct bs_frame *frames;
	__u32 n;
	__u32 id;
	__u32 flags;
};

#define RAW_CACHE_MAX (1u << 16) /* a cache: emptied when it grows past this */

struct stack_intern {
	struct hmap *raw;    /* (hash of ips, pid << 32 | generation) -> struct raw_ent */
	struct hmap *stacks; /* (hash of frames, n << 16 | flags) -> struct stack_ent */
	struct hmap *gens;   /* pid -> __u32 generation, bumped by forget */
	struct hmap *vdsos;  /* pid -> __u64 its vDSO's address + 1 (1: none) */
	struct hmap *made;   /* pid -> __u32 stacks it added (STACK_INTERN_PER_PROCESS) */
	__u64 frame_bytes;   /* the frames of every stack kept (STACK_INTERN_MAX_BYTES) */
	__u32 next_id;
};

static __u64 hash64(const void *p, size_t len, __u64 h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 1099511628211ull; /* FNV-1a 64 */
	}
	return h;
}

struct stack_intern *stack_intern__new(void)
{
	struct stack_intern *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->raw = hmap__new(sizeof(struct raw_ent));
	s->stacks = hmap__new(sizeof(struct stack_ent));
	s->made = hmap__new(sizeof(__u32));
	s->gens = hmap__new(sizeof(__u32));
	s->vdsos = hmap__new(sizeof(__u64));
	if (!s->raw || !s->stacks || !s->gens || !s->vdsos || !s->made) {
		stack_intern__free(s);
		return NULL;
	}
	return s;
}

static void raw_clear(struct stack_intern *s)
{
	size_t it = 0;
	struct raw_ent *e;

	while ((e = hmap__next(s->raw, &it, NULL)))
		free(e->ips);
	hmap__free(s->raw);
	s->raw = hmap__new(sizeof(struct raw_ent));
}

void stack_intern__free(struct stack_intern *s)
{
	size_t it = 0;
	struct stack_ent *e;

	if (!s)
		return;
	if (s->raw)
		raw_clear(s);
	hmap__free(s->raw);
	while (s->stacks && (e = hmap__next(s->stacks, &it, NULL)))
		free(e->frames);
	hmap__free(s->stacks);
	hmap__free(s->gens);
	hmap__free(s->vdsos);
	hmap__free(s->made);
	free(s);
}

void stack_intern__forget(struct stack_intern *s, pid_t pid)
{
	__u32 *g = hmap__get(s->gens, (struct hkey){ (__u64)pid, 0 }, 1);

	if (g)
		(*g)++;
	g = hmap__get(s->vdsos, (struct hkey){ (__u64)pid, 0 }, 0);
	if (g)
		*(__u64 *)g = 0; /* an exec maps another one */
}

/* Where PID's vDSO is (its auxiliary vector's AT_SYSINFO_EHDR), read once; 0 = none. */
static __u64 vdso_of(struct stack_intern *s, pid_t pid)
{
	__u64 *v = hmap__get(s->vdsos, (struct hkey){ (__u64)pid, 0 }, 1);

	if (!v)
		return 0;
	if (!*v)
		*v = proc_meta__vdso(pid) + 1;
	return *v - 1;
}

/*
 * The vDSO function at offset OFF: every process of this kernel maps the same image, so ours
 * (mapped whole, section headers included) names theirs. NULL when none covers it.
 */
static const char *vdso_func(__u64 off)
{
	const Elf64_Ehdr *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Shdr *sh;
	const char *base = (const char *)eh;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_shentsize != sizeof(*sh))
		return NULL;
	sh = (const void *)(base + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sym = (const void *)(base + sh[i].sh_offset);
		const char *str;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		str = base + sh[sh[i].sh_link].sh_offset;
		for (size_t j = 0; j < sh[i].sh_size / sizeof(*sym); j++)
			if (ELF64_ST_TYPE(sym[j].st_info) == STT_FUNC && sym[j].st_value <= off &&
			    off < sym[j].st_value + sym[j].st_size)
				return str + sym[j].st_name;
	}
	return NULL;
}

/* A frame in PID's vDSO (clock_gettime and friends), or 0. */
static int vdso_frame(struct stack_intern *s, struct record_ctx *ctx, pid_t pid, __u64 addr,
		      struct bs_frame *f)
{
	__u64 base = vdso_of(s, pid);

	if (!base || addr < base || addr - base >= 2 * 4096)
		return 0;
	*f = (struct bs_frame){ .addr = addr - base,
				.func_id = record_ctx__intern(ctx, vdso_func(addr - base)),
				.file_id = record_ctx__intern(ctx, "[vdso]"),
				.kind = BS_FRAME_NATIVE };
	return 1;
}

/*
 * A frame in PID's uprobe page ([uprobes]: where the kernel single-steps the instruction a
 * uprobe displaced, bpfsight's own or another tool's), or 0. A sample that caught a thread
 * there has no file to name; it says what it is. Rare: the maps are read each time.
 */
static int xol_frame(struct record_ctx *ctx, pid_t pid, __u64 addr, struct bs_frame *f)
{
	unsigned long long lo, hi;
	char path[64], line[512];
	int found = 0;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	if (!maps)
		return 0;
	while (!found && fgets(line, sizeof(line), maps))
		found = strstr(line, "[uprobes]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2 &&
			addr >= lo && addr < hi;
	fclose(maps);
	if (!found)
		return 0;
	*f = (struct bs_frame){ .addr = addr - lo,
				.func_id = record_ctx__intern(
					ctx, "[uprobe: a probed instruction stepped out of line]"),
				.file_id = record_ctx__intern(ctx, "[uprobes]"),
				.kind = BS_FRAME_NATIVE };
	return 1;
}

static __u32 gen_of(struct stack_intern *s, pid_t pid)
{
	__u32 *g = hmap__get(s->gens, (struct hkey){ (__u64)pid, 0 }, 0);

	return g ? *g : 0;
}

/* Where every thread's stack begins: a walk that ends elsewhere ended early. */
static int is_root(const char *func)
{
	static const char *const roots[] = { "_start",
					     "__libc_start_main",
					     "__libc_start_call_main",
					     "start_thread",
					     "clone",
					     "clone3",
					     "__clone",
					     "__clone3" };

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(func, roots[i]))
			return 1;
	return 0;
}

static const char VDSO[] = "[vdso]";

__u32 stack_intern__symbolize(struct stack_intern *s, struct record_ctx *ctx, struct uprobe_mgr *m,
			      pid_t pid, const __u64 *ips, __u32 n, int capped, __u32 end,
			      struct bs_frame *frames)
{
	struct native_frame uf;
	const char *cut_in = NULL;
	int root = 0, exact = 1;
	__u32 k = 0;

	for (__u32 i = 0; i < n && i < BS_STACK_MAX_FRAMES; i++) {
		int found = m ? !native_frames__resolve(m, pid, ips[i], !exact, &uf) : 0;

		/*
		 * The sampled instruction may be in the vDSO (clock_gettime): no file maps it. So
		 * may a return address: under a paravirtual clock (kvm-clock, every cloud VM) the
		 * sample lands in the vDSO's helper that clock_gettime calls.
		 */
		if (!found && (i == 0 || cut_in == VDSO) &&
		    vdso_frame(s, ctx, pid, ips[i], &frames[k])) {
			k++;
			cut_in = VDSO;
			continue;
		}
		if (!found && i == 0 && xol_frame(ctx, pid, ips[i], &frames[k])) {
			k++;
			cut_in = "[uprobes]";
			continue;
		}
		if (i > 0 && (!found || !uf.valid)) {
			/* Not a return address: the frame below kept no frame pointer. */
			frames[k++] =
				(struct bs_frame){ .kind = BS_FRAME_CUT,
						   .file_id = record_ctx__intern(ctx, cut_in) };
			return k;
		}
		root = found && is_root(uf.func);
		/* The walk went through a signal frame: the next is the interrupted instruction. */
		exact = found && !strcmp(uf.func, "__restore_rt");
		frames[k++] = (struct bs_frame){
			.addr = found ? uf.vaddr : ips[i],
			.func_id = found ? record_ctx__intern(ctx, uf.func) : 0,
			.file_id = found ? record_ctx__intern(ctx, uf.module) : 0,
			.kind = BS_FRAME_NATIVE,
		};
		cut_in = found ? uf.module : NULL;
	}
	/*
	 * The walk (bpf/stack_native.bpf.h) ends at a frame pointer it cannot follow: a stack that ends
	 * neither at a thread's first function nor at the depth limit ended in code without
	 * frame pointers (its caller's frames are unknown).
	 */
	if (k && end > BS_STACK_END_WHOLE)
		frames[k++] = (struct bs_frame){ .kind = BS_FRAME_CUT,
						 .file_id = record_ctx__intern(ctx, cut_in),
						 .line = end - 1 };
	else if (k && !root && !capped && !end)
		frames[k++] = (struct bs_frame){ .kind = BS_FRAME_CUT,
						 .file_id = record_ctx__intern(ctx, cut_in) };
	return k;
}

__u32 stack_intern__frames(struct stack_intern *s, struct record_ctx *ctx,
			   const struct bs_frame *frames, __u32 n, __u32 flags, pid_t pid,
			   __u32 tid, __u64 ts)
{
	struct hkey key;
	struct stack_ent *e;
	__u32 *made;
	struct {
		struct bs_stack h;
		struct bs_frame f[BS_STACK_MAX_FRAMES + 1];
	} rec;
	__u32 id;

	if (!n)
		return 0;
	if (n > BS_STACK_MAX_FRAMES + 1)
		n = BS_STACK_MAX_FRAMES + 1;
	key = (struct hkey){ hash64(frames, n * sizeof(*frames), 14695981039346656037ull),
			     (__u64)n << 16 | flags };
	e = hmap__get(s->stacks, key, 0);
	if (e) /* the same key: the same frames, or a 64-bit collision (then compared) */
		return e->n == n && !memcmp(e->frames, frames, n * sizeof(*frames)) ? e->id : 0;
	/* Stacks a traced process makes up (generated code, recursion) are kept to a bound. */
	made = hmap__get(s->made, (struct hkey){ (__u64)pid, 0 }, 1);
	if (!made || *made >= STACK_INTERN_PER_PROCESS ||
	    s->frame_bytes + n * sizeof(*frames) > STACK_INTERN_MAX_BYTES) {
		record_ctx__lost(ctx, NULL, BS_LOSS_STACKS_CAPPED, 1);
		return 0;
	}
	e = hmap__get(s->stacks, key, 1);
	if (!e)
		return 0;
	e->frames = malloc(n * sizeof(*frames));
	if (!e->frames)
		return 0;
	memcpy(e->frames, frames, n * sizeof(*frames));
	e->n = n;
	e->flags = flags;
	e->id = id = ++s->next_id;
	(*made)++;
	s->frame_bytes += n * sizeof(*frames);
	record_ctx__hdr(&rec.h.h, BS_REC_STACK, sizeof(rec.h) + n * sizeof(*frames), pid, tid, ts);
	rec.h.id = id;
	rec.h.nframes = n;
	rec.h.flags = flags;
	memcpy(rec.f, frames, n * sizeof(*frames));
	record_ctx__write(ctx, &rec);
	return id;
}

static struct hkey raw_key(struct stack_intern *s, pid_t pid, const __u64 *w, __u32 n, __u32 tag)
{
	return (struct hkey){ hash64(w, n * sizeof(*w), 14695981039346656037ull ^ tag),
			      (__u64)pid << 32 | gen_of(s, pid) };
}

__u32 stack_intern__cached(struct stack_intern *s, pid_t pid, const __u64 *w, __u32 n, __u32 tag)
{
	struct raw_ent *e = hmap__get(s->raw, raw_key(s, pid, w, n, tag), 0);

	if (e && e->n == n && e->capped == tag && !memcmp(e->ips, w, n * sizeof(*w)))
		return e->id;
	return 0;
}

void stack_intern__cache(struct stack_intern *s, pid_t pid, const __u64 *w, __u32 n, __u32 tag,
			 __u32 id)
{
	struct hkey key = raw_key(s, pid, w, n, tag);
	struct raw_ent *e;

	if (!id || !n)
		return;
	if (hmap__count(s->raw) >= RAW_CACHE_MAX)
		raw_clear(s);
	e = s->raw ? hmap__get(s->raw, key, 1) : NULL;
	if (!e || e->ips) /* a collision keeps the first entry */
		return;
	e->ips = malloc(n * sizeof(*w));
	if (!e->ips)
		return;
	memcpy(e->ips, w, n * sizeof(*w));
	e->n = n;
	e->id = id;
	e->capped = tag;
}

__u32 stack_intern__native(struct stack_intern *s, struct record_ctx *ctx, struct uprobe_mgr *m,
			   pid_t pid, __u32 tid, __u64 ts, const __u64 *ips, __u32 n, int capped)
{
	struct bs_frame frames[BS_STACK_MAX_FRAMES + 1];
	__u32 k, id;

	if (!n)
		return 0;
	if (n > BS_STACK_MAX_FRAMES)
		n = BS_STACK_MAX_FRAMES;
	id = stack_intern__cached(s, pid, ips, n, !!capped);
	if (id)
		return id;
	k = stack_intern__symbolize(s, ctx, m, pid, ips, n, capped, 0, frames);
	id = stack_intern__frames(s, ctx, frames, k,
				  capped && frames[k - 1].kind != BS_FRAME_CUT ? BS_STACK_TRUNCATED
									       : 0,
				  pid, tid, ts);
	stack_intern__cache(s, pid, ips, n, !!capped, id);
	return id;
}
