// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The call-frame instructions of one FDE run into rows (cfi_rows.h), as readelf -wF and
 * libgcc's unwinder read them: remember_state saves the CFA rule with the registers' rules.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "cfi_rows.h"
#include "unwind_build.h"

/* DW_CFA_* (DWARF 5 table 7.29, and GNU's) */
enum {
	CFA_NOP = 0x00,
	CFA_SET_LOC = 0x01,
	CFA_ADVANCE_LOC1 = 0x02,
	CFA_ADVANCE_LOC2 = 0x03,
	CFA_ADVANCE_LOC4 = 0x04,
	CFA_OFFSET_EXTENDED = 0x05,
	CFA_RESTORE_EXTENDED = 0x06,
	CFA_UNDEFINED = 0x07,
	CFA_SAME_VALUE = 0x08,
	CFA_REGISTER = 0x09,
	CFA_REMEMBER_STATE = 0x0a,
	CFA_RESTORE_STATE = 0x0b,
	CFA_DEF_CFA = 0x0c,
	CFA_DEF_CFA_REGISTER = 0x0d,
	CFA_DEF_CFA_OFFSET = 0x0e,
	CFA_DEF_CFA_EXPRESSION = 0x0f,
	CFA_EXPRESSION = 0x10,
	CFA_OFFSET_EXTENDED_SF = 0x11,
	CFA_DEF_CFA_SF = 0x12,
	CFA_DEF_CFA_OFFSET_SF = 0x13,
	CFA_VAL_OFFSET = 0x14,
	CFA_VAL_OFFSET_SF = 0x15,
	CFA_VAL_EXPRESSION = 0x16,
	CFA_MIPS_ADVANCE_LOC8 = 0x1d,
	CFA_GNU_ARGS_SIZE = 0x2e,
	CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2f,
	CFA_ADVANCE_LOC = 0x40, /* high two bits; the low six an operand */
	CFA_OFFSET = 0x80,
	CFA_RESTORE = 0xc0,
};

/* How a register the walk restores is found in the caller. */
enum { RULE_SAME, RULE_UNDEF, RULE_OFFSET, RULE_AT_RBP, RULE_OTHER };

struct rule {
	__u8 how;
	__s64 off; /* RULE_OFFSET: saved at CFA + off; RULE_AT_RBP: at rbp + off */
};

enum { CFA_BY_REG, CFA_BY_PLT, CFA_BY_RBP_DEREF, CFA_BY_EXPR };

struct cfa_state {
	__u8 how;
	__u8 plt_from; /* CFA_BY_PLT: rsp + 16 from this byte of the 16-byte entry on */
	__u64 reg;
	__s64 off;	 /* CFA_BY_REG: reg + off (what def_cfa_offset sets whatever the rule) */
	__s64 deref_off; /* CFA_BY_RBP_DEREF: *(rbp + deref_off) */
	struct rule rbp, ra;
};

/* Deep enough for any compiler's nesting; deeper is an error, not an allocation. */
#define STATE_STACK 32

struct machine {
	const struct eh_section *s;
	const struct eh_cie *c;
	const struct eh_fde *f;
	struct row_buf *out;
	struct cfa_state st, initial, stack[STATE_STACK];
	unsigned int depth;
	__u64 loc;
	int flags;
};

int row_buf__push(struct row_buf *b, __u32 pc, __u8 kind, __s32 cfa_off, __s16 rbp_off)
{
	struct bs_unwind_row r = { .pc = pc, .cfa_off = cfa_off, .rbp_off = rbp_off, .kind = kind };
	struct bs_unwind_row *last;

	if (b->n && b->rows[b->n - 1].pc == pc)
		b->n--;
	last = b->n ? &b->rows[b->n - 1] : NULL;
	if (last && last->kind == kind && last->cfa_off == cfa_off && last->rbp_off == rbp_off)
		return 0;
	if (b->n >= UNWIND_MAX_ROWS)
		return -E2BIG; /* a file made to exhaust the recorder's memory */
	if (array__grow((void **)&b->rows, b->n, &b->cap, sizeof(r)))
		return -ENOMEM;
	b->rows[b->n++] = r;
	return 0;
}

/*
 * binutils' PLT expression (and its IBT and BND forms, which differ only in K):
 * CFA = rsp + 8 + ((rip & 15) >= K ? 8 : 0), the push of the lazy PLT's second slot.
 * K, or -1 for any other expression.
 */
static int plt_expression(const __u8 *p, __u64 len)
{
	static const __u8 head[] = { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a };
	static const __u8 tail[] = { 0x2a, 0x33, 0x24, 0x22 };

	if (len != sizeof(head) + 1 + sizeof(tail) || memcmp(p, head, sizeof(head)) ||
	    memcmp(p + sizeof(head) + 1, tail, sizeof(tail)))
		return -1;
	if (p[sizeof(head)] < 0x30 || p[sizeof(head)] > 0x3f) /* DW_OP_lit0..15 */
		return -1;
	return p[sizeof(head)] - 0x30;
}

/*
 * GCC's forms of the expressions stack realignment emits: DW_OP_breg6 (rbp) N, then
 * DW_OP_deref when DEREF. 0 with *N, or -1 for any other expression.
 */
static int rbp_expression(const __u8 *p, __u64 len, int deref, __s64 *n)
{
	struct cfi_cursor c = { p, p + len, 0 };

	if (cfi_u8(&c) != 0x76)
		return -1;
	*n = cfi_sleb(&c);
	if (deref && cfi_u8(&c) != 0x06)
		return -1;
	return c.bad || cfi_left(&c) ? -1 : 0;
}

/* What the walk does in the state M is in: a BS_UNW_* kind, and its offsets. */
static __u8 row_kind(const struct machine *m, __s32 *cfa_off, __s16 *rbp_off)
{
	const struct cfa_state *st = &m->st;
	__s64 rbp;

	if (m->c->signal)
		return BS_UNW_SIGNAL; /* the registers are in the ucontext, whatever the rules */
	if (m->c->ra_reg != DW_X86_64_RA)
		return BS_UNW_STOP_EXPR;
	if (st->ra.how == RULE_UNDEF)
		return BS_UNW_END;
	if (st->ra.how != RULE_OFFSET || st->ra.off != -8)
		return BS_UNW_STOP_EXPR;
	if (st->how == CFA_BY_PLT) {
		*cfa_off = st->plt_from;
		return st->rbp.how == RULE_SAME ? BS_UNW_PLT : BS_UNW_STOP_EXPR;
	}
	if (st->how == CFA_BY_RBP_DEREF) {
		if (st->rbp.how != RULE_AT_RBP || st->rbp.off != (__s16)st->rbp.off ||
		    st->deref_off != (__s32)st->deref_off)
			return BS_UNW_STOP_EXPR;
		*cfa_off = (__s32)st->deref_off;
		*rbp_off = (__s16)st->rbp.off;
		return BS_UNW_CFA_RBP_DEREF;
	}
	if (st->off != (__s32)st->off)
		return BS_UNW_STOP_EXPR;
	*cfa_off = (__s32)st->off;
	if (st->how != CFA_BY_REG || (st->reg != DW_X86_64_RSP && st->reg != DW_X86_64_RBP))
		return BS_UNW_STOP_EXPR;
	switch (st->rbp.how) {
	case RULE_SAME:
		rbp = 0;
		break;
	case RULE_OFFSET:
		rbp = st->rbp.off ? st->rbp.off : INT64_MAX; /* at the CFA itself: no such row */
		break;
	case RULE_AT_RBP: /* *(rbp + M) is *(CFA + M - cfa_off) when the CFA is rbp's */
		rbp = st->reg == DW_X86_64_RBP && st->rbp.off == (__s32)st->rbp.off
			      ? st->rbp.off - st->off
			      : INT64_MAX;
		rbp = rbp ? rbp : INT64_MAX;
		break;
	default:
		rbp = INT64_MAX;
	}
	if (rbp != (__s16)rbp)
		return BS_UNW_STOP_EXPR;
	*rbp_off = (__s16)rbp;
	return st->reg == DW_X86_64_RSP ? BS_UNW_CFA_RSP : BS_UNW_CFA_RBP;
}

/* The row the walk needs from the state, pushed at M->loc. */
static int emit(struct machine *m)
{
	__s32 cfa_off = 0;
	__s16 rbp_off = 0;
	__u8 kind = row_kind(m, &cfa_off, &rbp_off);

	if (kind >= BS_UNW_STOP_FIRST || kind == BS_UNW_SIGNAL || kind == BS_UNW_END)
		cfa_off = rbp_off = 0; /* what they say is their kind: identical ones merge */
	if (kind == BS_UNW_STOP_EXPR)
		m->flags |= CFI_ROWS_EXPR;
	if (kind == BS_UNW_CFA_RBP && cfa_off == 16 && rbp_off == -16)
		m->flags |= CFI_ROWS_FP;
	if (kind == BS_UNW_PLT || kind == BS_UNW_END || kind == BS_UNW_SIGNAL)
		m->flags |= CFI_ROWS_SPECIAL;
	if (kind != BS_UNW_CFA_RSP || cfa_off != 8 || rbp_off)
		m->flags |= CFI_ROWS_FRAME;
	return row_buf__push(m->out, (__u32)m->loc, kind, cfa_off, rbp_off);
}

/* Move to NEW_LOC, the rows before it pushed. 1 when it reaches the FDE's end. */
static int advance(struct machine *m, __u64 new_loc, int *err)
{
	if (new_loc <= m->loc)
		return 0; /* a zero advance: the next row replaces this one */
	*err = emit(m);
	m->loc = new_loc < m->f->end ? new_loc : m->f->end;
	return m->loc >= m->f->end;
}

static struct rule *rule_of(struct machine *m, __u64 reg)
{
	if (reg == DW_X86_64_RBP)
		return &m->st.rbp;
	if (reg == m->c->ra_reg)
		return &m->st.ra;
	return NULL;
}

/* Set REG's rule (registers the walk does not restore are ignored). */
static void set_rule(struct machine *m, __u64 reg, __u8 how, __s64 off)
{
	struct rule *r = rule_of(m, reg);

	if (r) {
		r->how = how;
		r->off = off;
	}
}

/* A factored offset V * data_align; 0, or -1 when it passes 64 bits. */
static int factored(struct machine *m, __s64 v, __s64 *out)
{
	return __builtin_mul_overflow(v, m->c->data_align, out) ? -1 : 0;
}

/* Whether a uleb128 operand fits a signed offset. */
static int as_signed(__u64 v, __s64 *out)
{
	if (v > (__u64)INT64_MAX)
		return -1;
	*out = (__s64)v;
	return 0;
}

enum { STEP_ON, STEP_END, STEP_BAD };

/* Run one instruction at C. */
static int step(struct machine *m, struct cfi_cursor *c, int in_cie, int *err)
{
	__u8 op = cfi_u8(c), arg = op & 0x3f;
	__u64 reg, v, delta = 0;
	__s64 off;
	struct rule *r;

	switch (op & 0xc0) {
	case CFA_ADVANCE_LOC:
		delta = arg;
		goto advance;
	case CFA_OFFSET:
		if (as_signed(cfi_uleb(c), &off) || factored(m, off, &off) || c->bad)
			return STEP_BAD;
		set_rule(m, arg, RULE_OFFSET, off);
		return STEP_ON;
	case CFA_RESTORE:
		if ((r = rule_of(m, arg)))
			*r = arg == DW_X86_64_RBP ? m->initial.rbp : m->initial.ra;
		return STEP_ON;
	}
	switch (op) {
	case CFA_NOP:
		return STEP_ON;
	case CFA_SET_LOC:
		if (eh_frame__pointer(c, m->s->debug_frame ? EH_PE_ABSPTR : m->c->fde_enc, m->s,
				      &v) ||
		    v < m->loc || in_cie)
			return STEP_BAD;
		return advance(m, v, err) ? STEP_END : STEP_ON;
	case CFA_ADVANCE_LOC1:
		delta = cfi_u8(c);
		goto advance;
	case CFA_ADVANCE_LOC2:
		delta = cfi_u16(c);
		goto advance;
	case CFA_ADVANCE_LOC4:
		delta = cfi_u32(c);
		goto advance;
	case CFA_MIPS_ADVANCE_LOC8:
		delta = cfi_u64(c);
		goto advance;
	case CFA_OFFSET_EXTENDED:
		reg = cfi_uleb(c);
		if (as_signed(cfi_uleb(c), &off) || factored(m, off, &off))
			return STEP_BAD;
		set_rule(m, reg, RULE_OFFSET, off);
		break;
	case CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
		reg = cfi_uleb(c);
		if (as_signed(cfi_uleb(c), &off) || factored(m, -off, &off))
			return STEP_BAD;
		set_rule(m, reg, RULE_OFFSET, off);
		break;
	case CFA_OFFSET_EXTENDED_SF:
		reg = cfi_uleb(c);
		if (factored(m, cfi_sleb(c), &off))
			return STEP_BAD;
		set_rule(m, reg, RULE_OFFSET, off);
		break;
	case CFA_RESTORE_EXTENDED:
		reg = cfi_uleb(c);
		if ((r = rule_of(m, reg)))
			*r = r == &m->st.rbp ? m->initial.rbp : m->initial.ra;
		break;
	case CFA_UNDEFINED:
		set_rule(m, cfi_uleb(c), RULE_UNDEF, 0);
		break;
	case CFA_SAME_VALUE:
		set_rule(m, cfi_uleb(c), RULE_SAME, 0);
		break;
	case CFA_REGISTER:
		reg = cfi_uleb(c);
		v = cfi_uleb(c);
		/* rbp kept in rbp is its own value; anything else a row cannot hold */
		set_rule(m, reg, reg == v && reg == DW_X86_64_RBP ? RULE_SAME : RULE_OTHER, 0);
		break;
	case CFA_VAL_OFFSET:
		reg = cfi_uleb(c);
		cfi_uleb(c);
		set_rule(m, reg, RULE_OTHER, 0);
		break;
	case CFA_VAL_OFFSET_SF:
		reg = cfi_uleb(c);
		cfi_sleb(c);
		set_rule(m, reg, RULE_OTHER, 0);
		break;
	case CFA_EXPRESSION:
		reg = cfi_uleb(c);
		v = cfi_uleb(c);
		if (c->bad || v > cfi_left(c))
			return STEP_BAD;
		/* stack realignment saves rbp at rbp + M: a row holds that */
		if (reg == DW_X86_64_RBP && !rbp_expression(c->p, v, 0, &off))
			set_rule(m, reg, RULE_AT_RBP, off);
		else
			set_rule(m, reg, RULE_OTHER, 0);
		cfi_skip(c, v);
		break;
	case CFA_VAL_EXPRESSION:
		reg = cfi_uleb(c);
		cfi_skip(c, cfi_uleb(c));
		set_rule(m, reg, RULE_OTHER, 0);
		break;
	case CFA_REMEMBER_STATE:
		if (m->depth == STATE_STACK)
			return STEP_BAD;
		m->stack[m->depth++] = m->st;
		break;
	case CFA_RESTORE_STATE:
		if (!m->depth)
			return STEP_BAD;
		m->st = m->stack[--m->depth];
		break;
	case CFA_DEF_CFA:
		m->st.reg = cfi_uleb(c);
		if (as_signed(cfi_uleb(c), &m->st.off))
			return STEP_BAD;
		m->st.how = CFA_BY_REG;
		break;
	case CFA_DEF_CFA_SF:
		m->st.reg = cfi_uleb(c);
		if (factored(m, cfi_sleb(c), &m->st.off))
			return STEP_BAD;
		m->st.how = CFA_BY_REG;
		break;
	case CFA_DEF_CFA_REGISTER:
		m->st.reg = cfi_uleb(c);
		m->st.how = CFA_BY_REG;
		break;
	case CFA_DEF_CFA_OFFSET: /* readelf's reading: the register (or expression) stays */
		if (as_signed(cfi_uleb(c), &m->st.off))
			return STEP_BAD;
		break;
	case CFA_DEF_CFA_OFFSET_SF:
		if (factored(m, cfi_sleb(c), &m->st.off))
			return STEP_BAD;
		break;
	case CFA_DEF_CFA_EXPRESSION: {
		__u64 len = cfi_uleb(c);
		int k;

		if (c->bad || len > cfi_left(c))
			return STEP_BAD;
		k = plt_expression(c->p, len);
		m->st.how = k < 0 ? CFA_BY_EXPR : CFA_BY_PLT;
		m->st.plt_from = k < 0 ? 0 : (__u8)k;
		if (k < 0 && !rbp_expression(c->p, len, 1, &off)) {
			m->st.how = CFA_BY_RBP_DEREF; /* stack realignment's CFA, saved below rbp */
			m->st.deref_off = off;
		}
		cfi_skip(c, len);
		break;
	}
	case CFA_GNU_ARGS_SIZE:
		cfi_uleb(c); /* the outgoing arguments' size: no rule changes */
		break;
	default:
		return STEP_BAD; /* an opcode not known: its operands' size is not either */
	}
	return c->bad ? STEP_BAD : STEP_ON;
advance:
	if (c->bad || in_cie)
		return STEP_BAD; /* a CIE's initial instructions hold at the FDE's first byte */
	if (__builtin_mul_overflow(delta, m->c->code_align, &delta) ||
	    __builtin_add_overflow(m->loc, delta, &v))
		v = m->f->end;
	return advance(m, v, err) ? STEP_END : STEP_ON;
}

/* Run the instructions [P, END); STEP_END, STEP_BAD, or STEP_ON when they ran out. */
static int run(struct machine *m, const __u8 *p, const __u8 *end, int in_cie, int *err)
{
	struct cfi_cursor c = { p, end, 0 };
	int r = STEP_ON;

	while (cfi_left(&c) && r == STEP_ON && !*err)
		r = step(m, &c, in_cie, err);
	return r;
}

int cfi_rows__fde(const struct eh_section *s, const struct eh_cie *c, const struct eh_fde *f,
		  struct row_buf *out)
{
	struct machine m; /* its state stack is written before it is read: not cleared */
	int r, err = 0;

	m.s = s;
	m.c = c;
	m.f = f;
	m.out = out;
	m.loc = f->pc;
	m.flags = 0;
	m.depth = 0;
	/*
	 * An entry the section's end cut short: a truncated file, or a length field that is
	 * wrong, when the bytes after its true end are other entries'. Which one cannot be told,
	 * so none of its rows is trusted.
	 */
	if (f->cut) {
		r = row_buf__push(out, (__u32)f->pc, BS_UNW_STOP_BAD, 0, 0);
		return r ? r : CFI_ROWS_BAD;
	}
	memset(&m.st, 0, sizeof(m.st)); /* no CFA rule at all: register 0, a stop */
	m.initial = m.st;
	r = run(&m, c->insns, c->insns_end, 1, &err);
	m.initial = m.st;
	m.depth = 0; /* a CIE's remembered states are not its FDEs' */
	if (r == STEP_ON)
		r = run(&m, f->insns, f->insns_end, 0, &err);
	if (!err && r == STEP_BAD) {
		m.flags |= CFI_ROWS_BAD;
		err = row_buf__push(out, (__u32)m.loc, BS_UNW_STOP_BAD, 0, 0);
	} else if (!err && r == STEP_ON && m.loc < f->end) {
		err = emit(&m);
	}
	return err ? err : m.flags;
}
