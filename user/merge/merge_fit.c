// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merge, the alignment (merge.h). Times are doubles in ns relative to the reference's start
 * (T0): spans of days keep sub-ns precision there, where absolute CLOCK_MONOTONIC values
 * would not.
 *
 * Coarse: the file's wall clock at its start (and its rate, from the start and end pairs when
 * the footer has one) says where its monotonic times fall on the reference's: x = A + B * (t -
 * mono0). Hosts' wall clocks agree to NTP's precision (milliseconds) or PTP's.
 *
 * Fine: the k-th collective of a communicator ends at the same instant on every rank. Its end
 * on the job's clock is taken as the median of its ends over the files (a rank that returns
 * late does not move it), and each file gets the correction a + b * (x - tm) that best fits
 * its ends to those, by least squares on the points within 3 robust deviations (MAD) of the
 * fit (at least 2 us), three rounds; b (drift) only when the file's points span 250 ms and the
 * slope is significant (3 standard errors), else the offset alone. Consensus and fits
 * alternate until they stop moving; then every correction is taken relative to the
 * reference's, whose clock the merged file keeps.
 *
 * Sequences: a member whose communicator's creation its recording did not see counts its
 * collectives from the first one it saw; it is matched to its group's anchor (the first
 * member of the group, the reference's when it has one) by time: the shift that makes their
 * ends agree best (median distance) around the one their coarse times suggest.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "merge.h"
#include "records.h"
#include "hmap.h"

#define FIT_ROUNDS     3
#define FIT_ITERS      20
#define FIT_FLOOR_NS   2000.0
#define FIT_TRIM       3.0   /* robust deviations (MAD) kept around the fit */
#define FIT_BATCHES    16    /* most runs of consecutive residuals batch_se averages */
#define FIT_DRIFT_SPAN 2.5e8 /* ns of points a drift is fitted over, at least */
#define SHIFT_WINDOW   64
#define WALL_RATE_MAX  1e-3 /* a wall clock stepped (or slewed this much) says nothing */
#define WALL_RATE_SPAN 1000000000ull

struct fpt {
	double x; /* coarse time of its end, ns from T0 */
	double y; /* the consensus less x: what its file's correction should be */
	__u32 file, key;
	__u32 use; /* its key has points of two files or more */
	__u32 inlier;
};

struct fit {
	struct merge_input *in;
	__u32 n, ref;
	double *A, *B; /* coarse: x = A + B * (t - mono0) */
	double *a, *b, *tm;
	struct fpt *p;
	size_t np;
	__u32 nkeys;
	__u32 *kfirst, *kcount; /* points sorted by key: each key's run */
	__u32 **byfile, *nbyfile;
	double *tmp;
};

static double coarse_x(const struct fit *f, __u32 i, __u64 t)
{
	return f->A[i] + f->B[i] * (double)(__s64)(t - f->in[i].meta.start.mono_ns);
}

/* The rate of the file's wall clock against its monotonic one, when its pairs tell it. */
static double wall_rate(struct merge_input *in)
{
	const struct trace_clocks *s = &in->meta.start, *e = &in->end;
	double r;

	if (!in->has_end || e->mono_ns < s->mono_ns + WALL_RATE_SPAN)
		return 1.0;
	r = (double)(__s64)(e->realtime_ns - s->realtime_ns) /
	    (double)(__s64)(e->mono_ns - s->mono_ns);
	if (fabs(r - 1.0) > WALL_RATE_MAX)
		return 1.0; /* a step of the wall clock while recording */
	in->flags |= BS_RANK_WALL_RATE;
	return r;
}

static void coarse(struct fit *f)
{
	const struct trace_clocks *rs = &f->in[f->ref].meta.start;
	double rref = wall_rate(&f->in[f->ref]);

	for (__u32 i = 0; i < f->n; i++) {
		const struct trace_clocks *s = &f->in[i].meta.start;
		double r = i == f->ref ? rref : wall_rate(&f->in[i]);

		f->A[i] = (double)(__s64)(s->realtime_ns - rs->realtime_ns) / rref;
		f->B[i] = r / rref;
	}
}

/* The K-th smallest of V (0-based), V reordered around it (Hoare's selection: O(n)). */
static double select_kth(double *v, size_t n, size_t k)
{
	long lo = 0, hi = (long)n - 1, kk = (long)k;

	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2], t;
		long i = lo, j = hi;

		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		/* [lo, j] <= pivot <= [i, hi], and what lies between equals the pivot */
		if (kk <= j)
			hi = j;
		else if (kk >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

/* The median of V (N > 0), V reordered. */
static double median(double *v, size_t n)
{
	double hi = select_kth(v, n, n / 2), lo = hi;

	if (n % 2 == 0) { /* the even count's lower middle: the largest below n / 2 */
		lo = v[0];
		for (size_t i = 1; i < n / 2; i++)
			lo = v[i] > lo ? v[i] : lo;
	}
	return (lo + hi) / 2;
}

/* Points of member M of file I, head first: (seq, x), sorted by seq. */
struct seqx {
	__u64 seq;
	double x;
};

static int cmp_seqx(const void *a, const void *b)
{
	const struct seqx *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static size_t member_points(const struct fit *f, __u32 i, __u32 m, struct seqx **out)
{
	const struct merge_input *in = &f->in[i];
	struct seqx *v = malloc((in->npts + 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (__u32 j = 0; j < in->npts; j++)
		if (in->pts[j].member == m)
			v[n++] = (struct seqx){ in->pts[j].seq, coarse_x(f, i, in->pts[j].end_ts) };
	qsort(v, n, sizeof(*v), cmp_seqx);
	return n;
}

static const struct seqx *find_seq(const struct seqx *v, size_t n, __u64 seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].seq == seq ? &v[lo] : NULL;
}

/* Median distance of M's points to the anchor's at sequence + SHIFT; HUGE_VAL: too few. */
static double shift_score(const struct seqx *m, size_t nm, const struct seqx *a, size_t na,
			  __s64 shift, double *tmp)
{
	size_t n = 0;

	for (size_t j = 0; j < nm && j < MERGE_HEAD; j++) {
		const struct seqx *o = find_seq(a, na, m[j].seq + (__u64)shift);

		if (o)
			tmp[n++] = fabs(m[j].x - o->x);
	}
	return n >= 3 || (n && n == (nm < MERGE_HEAD ? nm : MERGE_HEAD)) ? median(tmp, n)
									 : HUGE_VAL;
}

/* The shift of member M (file I) against the anchor (file AI, member AM). */
static int match_member(struct fit *f, __u32 i, __u32 m, __u32 ai, __u32 am)
{
	struct seqx *mv, *av;
	size_t nm = member_points(f, i, m, &mv), na = member_points(f, ai, am, &av);
	double best = HUGE_VAL, d, near = HUGE_VAL;
	__s64 s0 = 0, bests = 0;
	int err = !mv || !av ? -ENOMEM : 0;

	for (size_t j = 0; !err && nm && j < na; j++) {
		d = fabs(av[j].x - mv[0].x);
		if (d < near) {
			near = d;
			s0 = (__s64)(av[j].seq - mv[0].seq);
		}
	}
	for (__s64 s = s0 - SHIFT_WINDOW; !err && nm && na && s <= s0 + SHIFT_WINDOW; s++) {
		d = shift_score(mv, nm, av, na, s, f->tmp);
		if (d < best || (d == best && llabs(s - s0) < llabs(bests - s0))) {
			best = d;
			bests = s;
		}
	}
	f->in[i].members[m].shift = bests;
	free(mv);
	free(av);
	return err;
}

/* Every member's shift against its group's anchor (0 where both saw the group's creation). */
static int match_sequences(struct fit *f)
{
	struct hmap *anchor = hmap__new(sizeof(__u64)); /* {group, 0} -> file << 32 | member, + 1 */
	int err = anchor ? 0 : -ENOMEM;

	for (__u32 k = 0; !err && k < f->n; k++) {
		__u32 i = k == 0 ? f->ref : k <= f->ref ? k - 1 : k; /* the reference first */

		for (__u32 m = 0; !err && m < f->in[i].nmembers; m++) {
			struct merge_member *mm = &f->in[i].members[m];
			__u64 *a = hmap__get(anchor, (struct hkey){ mm->group, 0 }, 1);
			__u32 ai, am;

			if (!a) {
				err = -ENOMEM;
				break;
			}
			if (!*a) {
				*a = ((__u64)i << 32 | m) + 1;
				continue;
			}
			ai = (__u32)((*a - 1) >> 32);
			am = (__u32)(*a - 1);
			if (mm->inferred || f->in[ai].members[am].inferred)
				err = match_member(f, i, m, ai, am);
		}
	}
	hmap__free(anchor);
	return err;
}

static int cmp_key(const void *a, const void *b)
{
	const struct fpt *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

/* Points of every file, keyed by (group, shifted seq), sorted by key; keys of one file unused. */
static int gather(struct fit *f)
{
	struct hmap *keys = hmap__new(sizeof(__u32));
	size_t total = 0;

	for (__u32 i = 0; i < f->n; i++)
		total += f->in[i].npts;
	f->p = calloc(total + 1, sizeof(*f->p));
	if (!keys || !f->p) {
		hmap__free(keys);
		return -ENOMEM;
	}
	for (__u32 i = 0; i < f->n; i++) {
		const struct merge_input *in = &f->in[i];

		for (__u32 j = 0; j < in->npts; j++) {
			const struct merge_point *pt = &in->pts[j];
			__u64 seq = pt->seq + (__u64)in->members[pt->member].shift;
			__u32 *k = hmap__get(keys, (struct hkey){ pt->group, seq }, 1);

			if (!k) {
				hmap__free(keys);
				return -ENOMEM;
			}
			if (!*k)
				*k = ++f->nkeys;
			f->p[f->np++] = (struct fpt){ coarse_x(f, i, pt->end_ts), 0, i, *k - 1 };
		}
	}
	hmap__free(keys);
	qsort(f->p, f->np, sizeof(*f->p), cmp_key);
	f->kfirst = calloc(f->nkeys + 1, sizeof(*f->kfirst));
	f->kcount = calloc(f->nkeys + 1, sizeof(*f->kcount));
	if (!f->kfirst || !f->kcount)
		return -ENOMEM;
	for (size_t j = 0; j < f->np; j++) {
		if (!f->kcount[f->p[j].key]++)
			f->kfirst[f->p[j].key] = (__u32)j;
	}
	for (__u32 k = 0; k < f->nkeys; k++) {
		struct fpt *v = &f->p[f->kfirst[k]];
		int files = f->kcount[k] && v[0].file != v[f->kcount[k] - 1].file;

		for (__u32 j = 0; j < f->kcount[k]; j++)
			v[j].use = files;
	}
	return 0;
}

static int index_files(struct fit *f)
{
	f->byfile = calloc(f->n, sizeof(*f->byfile));
	f->nbyfile = calloc(f->n, sizeof(*f->nbyfile));
	if (!f->byfile || !f->nbyfile)
		return -ENOMEM;
	for (__u32 i = 0; i < f->n; i++)
		if (!(f->byfile[i] = malloc((f->in[i].npts + 1) * sizeof(__u32))))
			return -ENOMEM;
	for (size_t j = 0; j < f->np; j++)
		if (f->p[j].use)
			f->byfile[f->p[j].file][f->nbyfile[f->p[j].file]++] = (__u32)j;
	return 0;
}

static double corrected(const struct fit *f, const struct fpt *p)
{
	return p->x + f->a[p->file] + f->b[p->file] * (p->x - f->tm[p->file]);
}

/* Each used key's end on the job's clock: the median of its corrected ends; y = that - x. */
static void consensus(struct fit *f)
{
	for (__u32 k = 0; k < f->nkeys; k++) {
		struct fpt *v = &f->p[f->kfirst[k]];
		double e;

		if (!f->kcount[k] || !v[0].use)
			continue;
		for (__u32 j = 0; j < f->kcount[k]; j++)
			f->tmp[j] = corrected(f, &v[j]);
		e = median(f->tmp, f->kcount[k]);
		for (__u32 j = 0; j < f->kcount[k]; j++)
			v[j].y = e - v[j].x;
	}
}

/* Least squares of y on (x - tm) over the inliers: the offset, and the slope when WITH_B. */
static void least_squares(struct fit *f, __u32 i, int with_b)
{
	double sy = 0, su = 0, suu = 0, suy = 0, n = 0, u, det;

	for (__u32 j = 0; j < f->nbyfile[i]; j++) {
		const struct fpt *p = &f->p[f->byfile[i][j]];

		if (!p->inlier)
			continue;
		u = p->x - f->tm[i];
		sy += p->y;
		su += u;
		suu += u * u;
		suy += u * p->y;
		n++;
	}
	if (!n)
		return;
	det = n * suu - su * su;
	if (with_b && det > 0) {
		f->b[i] = (n * suy - su * sy) / det;
		f->a[i] = (sy - f->b[i] * su) / n;
	} else {
		f->b[i] = 0;
		f->a[i] = sy / n;
	}
}

/* Is the slope of file I's inliers 3 standard errors from 0? */
static int slope_significant(struct fit *f, __u32 i)
{
	double ss = 0, suu = 0, n = 0, u, r;

	for (__u32 j = 0; j < f->nbyfile[i]; j++) {
		const struct fpt *p = &f->p[f->byfile[i][j]];

		if (!p->inlier)
			continue;
		u = p->x - f->tm[i];
		r = p->y - f->a[i] - f->b[i] * u;
		ss += r * r;
		suu += u * u;
		n++;
	}
	return n > 8 && suu > 0 && fabs(f->b[i]) > 3 * sqrt(ss / (n - 2) / suu);
}

/* File I's correction, robustly: median start, then least squares on the inliers. */
static void fit_file(struct fit *f, __u32 i)
{
	__u32 n = f->nbyfile[i];
	double lo = HUGE_VAL, hi = -HUGE_VAL, med, mad, thr;
	int drift;

	if (!n)
		return;
	f->tm[i] = 0;
	for (__u32 j = 0; j < n; j++) {
		struct fpt *p = &f->p[f->byfile[i][j]];

		f->tmp[j] = p->y;
		f->tm[i] += p->x / n;
		lo = p->x < lo ? p->x : lo;
		hi = p->x > hi ? p->x : hi;
	}
	f->a[i] = median(f->tmp, n);
	f->b[i] = 0;
	drift = hi - lo >= FIT_DRIFT_SPAN;
	for (int round = 0; round < FIT_ROUNDS; round++) {
		for (__u32 j = 0; j < n; j++) {
			const struct fpt *p = &f->p[f->byfile[i][j]];

			f->tmp[j] = p->y - f->a[i] - f->b[i] * (p->x - f->tm[i]);
		}
		med = median(f->tmp, n);
		for (__u32 j = 0; j < n; j++)
			f->tmp[j] = fabs(f->tmp[j] - med);
		mad = median(f->tmp, n);
		thr = fmax(FIT_TRIM * 1.4826 * mad, FIT_FLOOR_NS);
		for (__u32 j = 0; j < n; j++) {
			struct fpt *p = &f->p[f->byfile[i][j]];

			p->inlier = fabs(p->y - f->a[i] - f->b[i] * (p->x - f->tm[i]) - med) <= thr;
		}
		least_squares(f, i, drift);
		if (drift && !slope_significant(f, i))
			least_squares(f, i, 0);
	}
}

/* A residual at its time. */
struct tres {
	double t, r;
};

static int cmp_tres(const void *a, const void *b)
{
	const struct tres *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

/*
 * The standard error of the mean of residuals V (N of them), from the means of at most
 * FIT_BATCHES runs of consecutive ones in time: a burst of late returns (a core taken away
 * for a while) makes neighbours alike, which the scatter of single residuals would hide.
 */
static double batch_se(struct tres *v, size_t n)
{
	double m[FIT_BATCHES], mean = 0, var = 0;
	size_t nb = n / 8 < FIT_BATCHES ? n / 8 : FIT_BATCHES;

	if (nb < 2)
		return 0;
	qsort(v, n, sizeof(*v), cmp_tres);
	for (size_t b = 0; b < nb; b++) {
		size_t lo = b * n / nb, hi = (b + 1) * n / nb;

		m[b] = 0;
		for (size_t j = lo; j < hi; j++)
			m[b] += v[j].r / (double)(hi - lo);
		mean += m[b] / (double)nb;
	}
	for (size_t b = 0; b < nb; b++)
		var += (m[b] - mean) * (m[b] - mean) / (double)(nb - 1);
	return sqrt(var / (double)nb);
}

/*
 * Residuals of each file's inliers against the final consensus, and the standard error of
 * its offset against the reference's: the larger of the residuals' scatter over their number
 * and the batches' (batch_se).
 */
static int residuals(struct fit *f, double *se, double *se_b)
{
	for (__u32 i = 0; i < f->n; i++) {
		struct merge_input *in = &f->in[i];
		struct tres *v = malloc((f->nbyfile[i] + 1) * sizeof(*v));
		double ss = 0, suu = 0, r, iid;
		size_t n = 0;

		if (!v)
			return -ENOMEM;
		in->used = in->outliers = 0;
		in->max_ns = 0;
		for (__u32 j = 0; j < f->nbyfile[i]; j++) {
			const struct fpt *p = &f->p[f->byfile[i][j]];

			if (!p->inlier) {
				in->outliers++;
				continue;
			}
			r = corrected(f, p) - (p->x + p->y);
			v[n++] = (struct tres){ p->x, r };
			ss += r * r;
			suu += (p->x - f->tm[i]) * (p->x - f->tm[i]);
			in->max_ns = fabs(r) > in->max_ns ? fabs(r) : in->max_ns;
		}
		in->used = (__u32)n;
		in->rms_ns = n ? sqrt(ss / (double)n) : 0;
		iid = n > 1 ? in->rms_ns / sqrt((double)n - 1) : 0;
		se[i] = fmax(iid, batch_se(v, n));
		/* The slope's, when one was fitted, scaled as the batches scaled the offset's. */
		se_b[i] = f->b[i] != 0 && suu > 0 && iid > 0 ? in->rms_ns / sqrt(suu) * se[i] / iid
							     : 0;
		free(v);
	}
	for (__u32 i = 0; i < f->n; i++) {
		f->in[i].offset_err_ns = i == f->ref ? 0 : hypot(se[i], se[f->ref]);
		f->in[i].drift_err_ppb = i == f->ref ? 0 : hypot(se_b[i], se_b[f->ref]) * 1e9;
	}
	return 0;
}

/* The corrections relative to the reference's; each file's map onto the merged clock. */
static void finish(struct fit *f)
{
	const __u32 r = f->ref;
	__u64 t0 = f->in[r].meta.start.mono_ns;

	for (__u32 i = 0; i < f->n; i++) {
		struct merge_input *in = &f->in[i];
		/* g(x) = g0 + g1 * x: this file's correction less the reference's */
		double g1 = f->b[i] - f->b[r];
		double g0 = f->a[i] - f->b[i] * f->tm[i] - f->a[r] + f->b[r] * f->tm[r];
		double at0 = f->A[i] + g0 + g1 * f->A[i];

		in->mono0 = in->meta.start.mono_ns;
		in->merged0 = (__u64)((__s64)t0 + llround(at0));
		in->rate = f->B[i] * (1 + g1) - 1;
		/* Where its points are (the middle of what was measured), else at its start. */
		double at = f->nbyfile && f->nbyfile[i] ? f->tm[i] : f->A[i];

		in->offset_ns = -llround(g0 + g1 * at);
		in->drift_ppb = -g1 * 1e9;
		if (i == r)
			in->flags |= BS_RANK_REFERENCE;
		if (f->nbyfile && f->nbyfile[i])
			in->flags |= BS_RANK_FINE;
		if (f->b[i] != 0)
			in->flags |= BS_RANK_DRIFT;
		for (__u32 m = 0; m < in->nmembers; m++)
			if (in->members[m].inferred)
				in->flags |= BS_RANK_INFERRED;
	}
}

static int fine(struct fit *f)
{
	int err = match_sequences(f);

	if (!err)
		err = gather(f);
	if (!err)
		err = index_files(f);
	for (int it = 0; !err && it < FIT_ITERS; it++) {
		double moved = 0;

		consensus(f);
		for (__u32 i = 0; i < f->n; i++) {
			double a = f->a[i], b = f->b[i];

			fit_file(f, i);
			moved = fmax(moved, fabs(f->a[i] - a) + fabs(f->b[i] - b) * 1e9);
		}
		if (moved < 1.0)
			break;
	}
	if (!err) {
		consensus(f);
		err = residuals(f, f->tmp, f->tmp + f->n);
	}
	return err;
}

static void fit__free(struct fit *f)
{
	free(f->A);
	free(f->B);
	free(f->a);
	free(f->b);
	free(f->tm);
	free(f->p);
	free(f->kfirst);
	free(f->kcount);
	for (__u32 i = 0; f->byfile && i < f->n; i++)
		free(f->byfile[i]);
	free(f->byfile);
	free(f->nbyfile);
	free(f->tmp);
}

int merge_fit(struct merge_input *in, __u32 n, __u32 ref, int wall_only)
{
	struct fit f = { .in = in, .n = n, .ref = ref };
	size_t most = MERGE_POINTS_MAX;
	int err = 0;

	for (__u32 i = 0; i < n; i++)
		most += in[i].npts;
	f.A = calloc(n, sizeof(double));
	f.B = calloc(n, sizeof(double));
	f.a = calloc(n, sizeof(double));
	f.b = calloc(n, sizeof(double));
	f.tm = calloc(n, sizeof(double));
	f.tmp = calloc(most, sizeof(double));
	if (!f.A || !f.B || !f.a || !f.b || !f.tm || !f.tmp)
		err = -ENOMEM;
	if (!err) {
		coarse(&f);
		if (!wall_only)
			err = fine(&f);
	}
	if (!err)
		finish(&f);
	fit__free(&f);
	return err;
}

__u64 merge_input__clock(const struct merge_input *in, __u64 t)
{
	__s64 d;

	if (!t)
		return 0;
	d = (__s64)(t - in->mono0);
	return in->merged0 + (__u64)d + (__u64)llround((double)d * in->rate);
}
