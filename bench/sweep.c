/* sweep.c - `make bench-sweep`: the yardstick of issue 11.  Draws seeded
 * random cases (expression, dtypes, shapes, broadcast pattern, layouts),
 * compiles each twice in one process, with bcgen's default JIT (libtcc plus
 * the runtime microkernels) and with the cc backend (gcc -O3 -march=native),
 * times both interleaved, checks that they agree, and reports the
 * distribution of ratio = cc time / JIT time (1.0 parity, > 1 JIT faster).
 *
 *   sweep [--quick] [--cases N] [--seed S] [--json PATH] [--verbose] [--no-vex] [--stream -1|0|1]
 *   sweep --compile-only [--cases N] [--seed S] [--verbose]
 *   sweep --small [--cases N] [--seed S] [--json PATH] [--verbose]
 *   sweep --only EXPR OPERANDS [--cases N] [--json PATH] [--no-vex] [--stream -1|0|1]
 *   sweep --check-only [--cases N] [--seed S] [--verbose]
 *
 * --compile-only draws the same cases (default 200) and only compiles them
 * with the JIT, nothing is run: the compile time of distinct kernels (a
 * cache miss each: median, p95, worst), the first cache hit right after
 * the compile (caches cold from the compile) and a warm hit (the mean of a
 * batch of hits), and the emitted C's size.  Seconds, not minutes.
 *
 * --small draws outputs of 16 to 1024 elements only (default 100 cases)
 * and judges each by the small-kernel target: a call (bcg_run, its
 * checks included) at most 3x the cc kernel's and at most 30 ns + 0.5 ns
 * per element.
 *
 * --only times one case, given as the sweep prints it (OPERANDS such as
 * "a=f32[7,10]@[10,-1] b=i8[10]", strides in elements), N times (default
 * 5) in one process, each line a ratio: for a case from a sweep's worst
 * ten, or a change's before and after.  No JSON unless --json.
 *
 * --check-only draws and runs the cases and compares the JIT's output with
 * cc's (the agreement below) without timing them: a hunt for wrong results
 * over the sweep's shapes and layouts, a hundred cases in seconds rather
 * than minutes.  Only the disagreement and approximation lines and counts
 * mean anything in its summary.
 *
 * --no-vex: the JIT's tiles call a microkernel per operation
 * (bcg_options.disable_vector_code) instead of the fused AVX2 function.
 *
 * --stream sets the JIT's bcg_options.stream_stores (default -1,
 * BCG_STREAM_AUTO; 0 never, 1 always), to time a case with and without
 * streaming stores in the sweep's own way.
 *
 * Environment: SWEEP_SEED (default 1), SWEEP_CASES (default 300; --quick
 * 30), SWEEP_JSON (default bench/sweep.json).
 *
 * Timing: both kernels run once (warm-up, page faults, and the outputs that
 * are compared), then samples alternate JIT, cc, JIT, cc, ...; a sample is
 * a batch of calls lasting about 0.25 ms (one call for kernels longer than
 * that) and each side's time is the median per-call time of its samples,
 * taken until each side has at least 7 samples, 2 ms and 1000 calls.
 *
 * Agreement: outputs are compared bitwise (NaN equals NaN whatever its
 * payload).  In an expression that uses exp a difference may be
 * the JIT's vectorised exp (f32 within 1 ulp, f64 within 1 ulp of the
 * correctly rounded result, docs/semantics.md) magnified by what follows
 * it: b / a + exp(c) with b / a close to -exp(c) turned 1 ulp of exp into
 * 64 ulp of the sum (sweep seed 96 case 74).  Such a case is compiled once
 * more with microkernel_run 0 (no microkernels, no vector code: the C
 * library's functions, as cc's kernel calls them) and that kernel's output
 * compared bit for bit with cc's: equal, the case counts as an
 * "approximation" (its worst ulp, in the result dtype's ulps, reported);
 * different, as a disagreement, like any difference in an expression
 * without those functions.  A wrong result of the microkernels or the
 * vector code in such an expression is therefore an approximation too
 * (test_vex's exp trees compare the fused code with the microkernels bit
 * for bit; fuzz_jit_diff checks such kernels within 2 ulp where the
 * function is the root, for memory safety only where it is below it).
 *
 * Cases whose calls both take under 2 us are "small": the ratio of two
 * overheads says little, so they are left out of the distribution and
 * judged by an absolute target instead: the JIT's call is at most
 * SMALL_TARGET_US slower than the cc kernel's.
 *
 * Only the public API (runtime/bcgen.h) is used.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bcgen.h"

#define MAX_OPS 3
#define MAX_R 5
#define EXPR_MAX 1024
#define MIN_ELEMENTS 16.0
#define MAX_ELEMENTS 16777216.0
#define SMALL_US 2.0
#define SMALL_TARGET_US 0.25
#define SAMPLE_SECONDS 0.25e-3
#define MIN_SAMPLES 7
#define MAX_SAMPLES 401
#define MIN_TOTAL_SECONDS 2e-3
#define MIN_CALLS 1000

/* ------------------------------------------------------------------ random */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static double rnd_unit(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static int rnd_int(int n) { return (int)(rnd() % (uint64_t)n); }
static bool chance(double p) { return rnd_unit() < p; }

/* ------------------------------------------------------------------- cases */

static const bcg_dtype sweep_dtypes[] = {BCG_F32, BCG_F64, BCG_I8, BCG_I16, BCG_I32, BCG_U8};
#define SWEEP_DTYPES 6

static bool is_float(bcg_dtype d) { return d == BCG_F32 || d == BCG_F64; }

typedef struct operand {
    char name[2];
    bcg_dtype dtype;
    int rank;
    int64_t shape[MAX_R];
    int64_t strides[MAX_R];
    bool contiguous;
    char layout[48];     /* contiguous, gaps, negative, transposed (combinable) */
    int64_t span;        /* elements in the buffer */
    int64_t offset;      /* element [0,...,0] within it */
    void *buffer;
} operand;

typedef struct sweep_case {
    int index;
    char expr[EXPR_MAX];
    int count;
    operand ops[MAX_OPS];
    int out_rank;
    int64_t out_shape[MAX_R];
    /* uses a function the JIT may compute by a polynomial (exp; with
     * --only, any of exp, log and the other vectorised ones), whose result
     * may differ from cc's in the last bits (sqrt is exact, not one) */
    bool approximated;
} sweep_case;

typedef struct result {
    int index;
    char expr[EXPR_MAX];
    char operands[256];
    int64_t elements;
    char dtype[8];
    double jit_s, cc_s, ratio;
    bool small;
} result;

/* An expression under construction: its text and whether it is a float. */
typedef struct item {
    char text[EXPR_MAX];
    bool fl;
} item;

static void item_set(item *it, bool fl, const char *fmt, const char *a, const char *b,
                     const char *c, const char *d)
{
    char buf[4 * EXPR_MAX];
    snprintf(buf, sizeof buf, fmt, a, b, c, d);
    snprintf(it->text, sizeof it->text, "%s", buf);
    it->fl = fl;
}

static const char *literal(bool fl)
{
    static const char *floats[] = {"0.5", "2.0", "1e-5", "0.1", "1.5", "3.0"};
    static const char *ints[] = {"1", "2", "3", "7", "0", "5"};
    return fl ? floats[rnd_int(6)] : ints[rnd_int(6)];
}

static const char *cmp_op(void)
{
    static const char *ops[] = {">", "<", ">=", "<=", "==", "!="};
    return chance(0.5) ? ">" : ops[rnd_int(6)];
}

/* A unary wrap of IT: sqrt, exp, abs or a cast. */
static void wrap_unary(item *it, bool *approximated)
{
    int r = rnd_int(10);
    char inner[EXPR_MAX];
    snprintf(inner, sizeof inner, "%s", it->text);
    if (r < 2 || r == 2) {
        const char *fn = r < 2 ? "exp" : "sqrt";
        if (!it->fl) {
            const char *cast = chance(0.7) ? "f32" : "f64";
            if (r == 2)
                item_set(it, true, "sqrt(%s(abs(%s)))", cast, inner, "", "");
            else
                item_set(it, true, "exp(%s(%s))", cast, inner, "", "");
        } else if (r == 2 && chance(0.6)) {
            item_set(it, true, "sqrt(abs(%s))", inner, "", "", "");
        } else {
            item_set(it, true, "%s(%s)", fn, inner, "", "");
        }
        *approximated = *approximated || r < 2;
    } else if (r < 5) {
        item_set(it, it->fl, "abs(%s)", inner, "", "", "");
    } else {
        bcg_dtype d = sweep_dtypes[rnd_int(SWEEP_DTYPES)];
        item_set(it, is_float(d), "%s(%s)", bcg_dtype_name(d), inner, "", "");
    }
}

static bool uses_name(const char *expr, char name)
{
    for (const char *s = expr; *s; s++)
        if (*s == name && (s == expr || !((s[-1] >= 'a' && s[-1] <= 'z') || (s[-1] >= '0' && s[-1] <= '9'))) &&
            !((s[1] >= 'a' && s[1] <= 'z') || (s[1] >= '0' && s[1] <= '9') || s[1] == '('))
            return true;
    return false;
}

static void draw_expression(sweep_case *c)
{
    item pool[8];
    int n = 0;
    c->approximated = false;
    for (int i = 0; i < c->count; i++) {
        snprintf(pool[n].text, sizeof pool[n].text, "%s", c->ops[i].name);
        pool[n].fl = is_float(c->ops[i].dtype);
        if (chance(0.2))
            wrap_unary(&pool[n], &c->approximated);
        n++;
    }
    /* a repeated operand or a literal now and then */
    if (chance(0.35)) {
        int i = rnd_int(c->count);
        snprintf(pool[n].text, sizeof pool[n].text, "%s", c->ops[i].name);
        pool[n].fl = is_float(c->ops[i].dtype);
        n++;
    }
    if (n == 1 || chance(0.3)) {
        snprintf(pool[n].text, sizeof pool[n].text, "%s", literal(pool[0].fl && chance(0.7)));
        pool[n].fl = strchr(pool[n].text, '.') || strchr(pool[n].text, 'e');
        n++;
    }
    while (n > 1) {
        int i = rnd_int(n), j = rnd_int(n - 1);
        if (j >= i)
            j++;
        item x = pool[i], y = pool[j], z;
        /* drop i and j, keep the rest in order */
        int m = 0;
        for (int k = 0; k < n; k++)
            if (k != i && k != j)
                pool[m++] = pool[k];
        n = m;
        /* two literals would fold; never let both sides be literals */
        int r = rnd_int(20);
        bool fl = x.fl || y.fl;
        if (r < 4)
            item_set(&z, fl, "%s + %s", x.text, y.text, "", "");
        else if (r < 6)
            item_set(&z, fl, "%s - %s", x.text, y.text, "", "");
        else if (r < 10)
            item_set(&z, fl, "(%s) * (%s)", x.text, y.text, "", "");
        else if (r < 12) {
            /* true division; integers would give f64: make one side a float */
            if (!fl)
                item_set(&z, true, "f32(%s) / (%s)", x.text, y.text, "", "");
            else
                item_set(&z, true, "(%s) / (%s)", x.text, y.text, "", "");
        } else if (r < 14)
            item_set(&z, fl, "minimum(%s, %s)", x.text, y.text, "", "");
        else if (r < 16)
            item_set(&z, fl, "maximum(%s, %s)", x.text, y.text, "", "");
        else if (r < 19) {
            /* where(p > q, x, y): p is x or y, q a literal or the other */
            char cond[2 * EXPR_MAX + 16];
            const char *p = chance(0.5) ? x.text : y.text;
            bool pfl = p == x.text ? x.fl : y.fl;
            if (chance(0.6))
                snprintf(cond, sizeof cond, "%s %s %s", p, cmp_op(), literal(pfl));
            else
                snprintf(cond, sizeof cond, "%s %s %s", x.text, cmp_op(), y.text);
            item_set(&z, fl, "where(%s, %s, %s)", cond, x.text, y.text, "");
        } else {
            /* a comparison cast to a number, times the other side */
            const char *cast = chance(0.5) ? "u8" : (fl ? "f32" : "i16");
            char cmp[2 * EXPR_MAX + 16];
            snprintf(cmp, sizeof cmp, "%s(%s %s %s)", cast, x.text, cmp_op(), y.text);
            item_set(&z, fl || !strcmp(cast, "f32"), "%s * (%s)", cmp, chance(0.5) ? x.text : y.text, "", "");
        }
        if (chance(0.25))
            wrap_unary(&z, &c->approximated);
        pool[n++] = z;
    }
    snprintf(c->expr, sizeof c->expr, "%s", pool[0].text);
    /* every operand must be read (else it takes no part in the broadcast) */
    for (int i = 0; i < c->count; i++)
        if (!uses_name(c->expr, c->ops[i].name[0])) {
            char buf[EXPR_MAX];
            snprintf(buf, sizeof buf, "(%s) + %s", c->expr, c->ops[i].name);
            snprintf(c->expr, sizeof c->expr, "%s", buf);
        }
}

/* The largest output drawn: 16M, or 1024 with --small. */
static double max_elements = MAX_ELEMENTS;

/* The output shape: rank 1-5, elements log-uniform in [16, max_elements]. */
static void draw_shape(sweep_case *c)
{
    c->out_rank = 1 + rnd_int(MAX_R);
    double total = exp(log(MIN_ELEMENTS) + rnd_unit() * (log(max_elements) - log(MIN_ELEMENTS)));
    double w[MAX_R], sum = 0;
    for (int d = 0; d < c->out_rank; d++)
        sum += w[d] = 0.05 + rnd_unit();
    double left = log(total);
    for (int d = 0; d < c->out_rank; d++) {
        double share = d == c->out_rank - 1 ? left : log(total) * w[d] / sum;
        int64_t size = (int64_t)llround(exp(share));
        if (size < 1)
            size = 1;
        if (d < c->out_rank - 1 && chance(0.1))
            size = 2 + rnd_int(3); /* a small dimension now and then */
        c->out_shape[d] = size;
        left -= log((double)size);
        if (left < 0)
            left = 0;
    }
    /* keep within [16, 16M] */
    for (;;) {
        double n = 1;
        for (int d = 0; d < c->out_rank; d++)
            n *= (double)c->out_shape[d];
        if (n > max_elements) {
            int d = 0;
            for (int k = 1; k < c->out_rank; k++)
                if (c->out_shape[k] > c->out_shape[d])
                    d = k;
            c->out_shape[d] = (c->out_shape[d] + 1) / 2;
        } else if (n < MIN_ELEMENTS) {
            c->out_shape[c->out_rank - 1] *= 2;
        } else {
            break;
        }
    }
}

/* The operands: which dimensions they broadcast over (size 1 or missing
 * leading dimensions) and their memory layout. */
static void draw_operands(sweep_case *c)
{
    c->count = 1 + rnd_int(MAX_OPS);
    bool same = chance(0.7);
    bcg_dtype base = sweep_dtypes[rnd_int(SWEEP_DTYPES)];
    for (int i = 0; i < c->count; i++) {
        operand *o = &c->ops[i];
        memset(o, 0, sizeof *o);
        o->name[0] = (char)('a' + i);
        o->dtype = same ? base : sweep_dtypes[rnd_int(SWEEP_DTYPES)];
        o->rank = i == 0 ? c->out_rank : c->out_rank - (chance(0.35) ? rnd_int(c->out_rank) : 0);
        if (i > 0 && chance(0.1))
            o->rank = c->out_rank; /* keep */
    }
    /* each output dimension held at full size by at least one operand */
    for (int d = 0; d < c->out_rank; d++) {
        int holders[MAX_OPS], h = 0;
        for (int i = 0; i < c->count; i++)
            if (c->ops[i].rank >= c->out_rank - d)
                holders[h++] = i;
        int owner = holders[rnd_int(h)];
        for (int i = 0; i < c->count; i++) {
            operand *o = &c->ops[i];
            int od = d - (c->out_rank - o->rank);
            if (od < 0)
                continue;
            o->shape[od] = i == owner || chance(0.55) ? c->out_shape[d] : 1;
        }
    }
    for (int i = 0; i < c->count; i++) {
        operand *o = &c->ops[i];
        int kind = rnd_int(10); /* 0-3 contiguous, 4-5 gaps, 6-7 negative, 8-9 transposed */
        int perm[MAX_R];
        for (int d = 0; d < o->rank; d++)
            perm[d] = d;
        bool transposed = kind >= 8 && o->rank >= 2, gaps = kind == 4 || kind == 5 || (kind >= 8 && chance(0.2)),
             negative = kind == 6 || kind == 7 || (kind >= 8 && chance(0.2));
        if (transposed) {
            /* physical order: a random permutation that is not the identity */
            for (int tries = 0; tries < 8; tries++) {
                for (int d = o->rank - 1; d > 0; d--) {
                    int k = rnd_int(d + 1), t = perm[d];
                    perm[d] = perm[k];
                    perm[k] = t;
                }
                bool identity = true;
                for (int d = 0; d < o->rank; d++)
                    identity &= perm[d] == d;
                if (!identity)
                    break;
            }
        }
        /* perm[0] is the outermost dimension in memory, perm[rank-1] the innermost */
        int64_t step = 1;
        for (int k = o->rank - 1; k >= 0; k--) {
            int d = perm[k];
            int64_t g = 1, pad = 0;
            if (gaps && k == o->rank - 1 && o->shape[d] > 1)
                g = 2 + rnd_int(2);                 /* inner stride 2 or 3 */
            else if (gaps && o->shape[d] > 1 && chance(0.5))
                pad = 1 + rnd_int(7);               /* padded rows */
            o->strides[d] = step * g;
            step = step * g * o->shape[d] + pad * step;
            if (step < 1)
                step = 1;
        }
        o->span = step;
        o->offset = 0;
        if (negative) {
            bool any = false;
            for (int d = 0; d < o->rank; d++)
                if (o->shape[d] > 1 && (chance(0.5) || (d == o->rank - 1 && !any))) {
                    o->offset += (o->shape[d] - 1) * o->strides[d];
                    o->strides[d] = -o->strides[d];
                    any = true;
                }
            negative = any;
        }
        bool plain = !gaps && !negative && !transposed;
        o->contiguous = plain;
        snprintf(o->layout, sizeof o->layout, "%s%s%s%s", plain ? "contiguous" : "",
                 transposed ? "transposed " : "", gaps ? "gaps " : "", negative ? "negative " : "");
        size_t n = strlen(o->layout);
        if (n && o->layout[n - 1] == ' ')
            o->layout[n - 1] = 0;
    }
}

static void describe_operands(const sweep_case *c, char *out, size_t size)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < c->count && used < size; i++) {
        const operand *o = &c->ops[i];
        used += (size_t)snprintf(out + used, size - used, "%s%s=%s[", i ? " " : "", o->name,
                                 bcg_dtype_name(o->dtype));
        for (int d = 0; d < o->rank && used < size; d++)
            used += (size_t)snprintf(out + used, size - used, "%s%lld", d ? "," : "", (long long)o->shape[d]);
        if (used < size)
            used += (size_t)snprintf(out + used, size - used, "]");
        if (!o->contiguous && used < size) {
            used += (size_t)snprintf(out + used, size - used, "@[");
            for (int d = 0; d < o->rank && used < size; d++)
                used += (size_t)snprintf(out + used, size - used, "%s%lld", d ? "," : "",
                                         (long long)o->strides[d]);
            if (used < size)
                used += (size_t)snprintf(out + used, size - used, "]");
        }
    }
}

/* Case C from an expression and operands written as describe_operands
 * writes them ("a=f32[7,10]@[10,-1] b=i8[10]"), for --only: strides are
 * elements, negative ones start the operand at its far end.  False, with
 * a message on stderr, on a malformed description. */
static bool parse_case(sweep_case *c, const char *expr, const char *text)
{
    memset(c, 0, sizeof *c);
    snprintf(c->expr, sizeof c->expr, "%s", expr);
    static const char *const approximated[] = {"exp", "log", "sin", "cos", "tan", "erf", "sigmoid"};
    for (size_t i = 0; i < sizeof approximated / sizeof *approximated; i++)
        c->approximated = c->approximated || strstr(expr, approximated[i]);
    const char *s = text;
    while (*s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        if (c->count == MAX_OPS) {
            fprintf(stderr, "sweep: --only: more than %d operands in \"%s\"\n", MAX_OPS, text);
            return false;
        }
        operand *o = &c->ops[c->count];
        char dt[8] = "";
        int n = 0;
        if (sscanf(s, "%1[a-z]=%7[a-z0-9][%n", o->name, dt, &n) != 2 || !n ||
            bcg_dtype_parse(dt, &o->dtype) != BCG_OK) {
            fprintf(stderr, "sweep: --only: operand %d of \"%s\": expected NAME=DTYPE[SHAPE]\n", c->count + 1, text);
            return false;
        }
        s += n;
        for (o->rank = 0; *s != ']'; o->rank++) {
            char *end;
            if (o->rank == MAX_R || (o->shape[o->rank] = strtoll(s, &end, 10)) < 1 || end == s) {
                fprintf(stderr, "sweep: --only: operand %s: a bad shape (extents >= 1, rank <= %d)\n", o->name, MAX_R);
                return false;
            }
            s = *end == ',' ? end + 1 : end;
        }
        s++;
        int64_t step = 1;
        for (int d = o->rank - 1; d >= 0; d--) {
            o->strides[d] = step;
            step *= o->shape[d];
        }
        o->contiguous = true;
        if (*s == '@') {
            if (s[1] != '[') {
                fprintf(stderr, "sweep: --only: operand %s: expected @[STRIDES]\n", o->name);
                return false;
            }
            s += 2;
            for (int d = 0; d < o->rank; d++) {
                char *end;
                o->strides[d] = strtoll(s, &end, 10);
                if (end == s) {
                    fprintf(stderr, "sweep: --only: operand %s: %d strides for rank %d\n", o->name, d, o->rank);
                    return false;
                }
                s = *end == ',' ? end + 1 : end;
            }
            if (*s++ != ']') {
                fprintf(stderr, "sweep: --only: operand %s: more strides than its rank %d\n", o->name, o->rank);
                return false;
            }
            o->contiguous = false;
        }
        int64_t low = 0, high = 0;
        for (int d = 0; d < o->rank; d++) {
            int64_t reach = (o->shape[d] - 1) * o->strides[d];
            if (reach < 0)
                low += reach;
            else
                high += reach;
        }
        o->offset = -low;
        o->span = high - low + 1;
        if (o->rank > c->out_rank) {
            for (int d = 0; d < o->rank; d++)
                c->out_shape[d] = d < o->rank - c->out_rank ? o->shape[d] : c->out_shape[d - (o->rank - c->out_rank)];
            c->out_rank = o->rank;
        }
        for (int d = 0; d < o->rank; d++) {
            int64_t *e = &c->out_shape[c->out_rank - o->rank + d];
            if (*e < o->shape[d])
                *e = o->shape[d];
        }
        c->count++;
    }
    if (!c->count) {
        fprintf(stderr, "sweep: --only: no operands in \"%s\"\n", text);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ buffers */

static void *allocate(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    return p;
}

/* Floats uniform in [-2, 2); integers over their whole range. */
static void fill(operand *o, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t size = bcg_dtype_size(o->dtype);
    char *p = o->buffer;
    for (int64_t i = 0; i < o->span; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if (o->dtype == BCG_F32) {
            float v = (float)((double)(s >> 40) * (4.0 / 16777216.0) - 2.0);
            memcpy(p + (size_t)i * size, &v, sizeof v);
        } else if (o->dtype == BCG_F64) {
            double v = (double)(s >> 11) * (4.0 / 9007199254740992.0) - 2.0;
            memcpy(p + (size_t)i * size, &v, sizeof v);
        } else {
            memcpy(p + (size_t)i * size, &s, size);
        }
    }
}

/* ------------------------------------------------------------------- timing */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* This thread's CPU time: what a compile costs without the time a loaded
 * machine keeps it waiting for a core. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct side {
    const bcg_kernel *k;
    void *out;
    long batch;
    double samples[MAX_SAMPLES];
    int n;
    double total;
    long calls;
} side;

static bool sample(side *s, const void *const *inputs)
{
    bcg_error err;
    double t0 = now();
    for (long i = 0; i < s->batch; i++)
        if (bcg_run(s->k, s->out, inputs, &err) != BCG_OK)
            return false;
    double t = now() - t0;
    s->samples[s->n++] = t / (double)s->batch;
    s->total += t;
    s->calls += s->batch;
    return true;
}

static bool enough(const side *s)
{
    return s->n >= MIN_SAMPLES && s->total >= MIN_TOTAL_SECONDS && s->calls >= MIN_CALLS;
}

/* ------------------------------------------------------------------ compare */

static int64_t float_key(double v, bool f32)
{
    if (f32) {
        float f = (float)v;
        int32_t i;
        memcpy(&i, &f, 4);
        return i < 0 ? (int64_t)INT32_MIN - i : i;
    }
    int64_t i;
    memcpy(&i, &v, 8);
    return i < 0 ? INT64_MIN - i : i;
}

/* Elements that differ (beyond TOLERANCE ulp for floats); *worst_ulp the
 * largest float distance seen, *first the first such element. */
static int64_t compare(const void *x, const void *y, int64_t n, bcg_dtype d, int64_t tolerance,
                       double *worst_ulp, int64_t *first)
{
    int64_t bad = 0;
    *worst_ulp = 0;
    *first = -1;
    if (!is_float(d)) {
        size_t size = bcg_dtype_size(d);
        if (memcmp(x, y, (size_t)n * size) == 0)
            return 0;
        for (int64_t i = 0; i < n; i++)
            if (memcmp((const char *)x + i * size, (const char *)y + i * size, size)) {
                if (*first < 0)
                    *first = i;
                bad++;
            }
        return bad;
    }
    bool f32 = d == BCG_F32;
    for (int64_t i = 0; i < n; i++) {
        double a = f32 ? ((const float *)x)[i] : ((const double *)x)[i];
        double b = f32 ? ((const float *)y)[i] : ((const double *)y)[i];
        if (isnan(a) && isnan(b))
            continue;
        if (f32 ? ((const uint32_t *)x)[i] == ((const uint32_t *)y)[i]
                : ((const uint64_t *)x)[i] == ((const uint64_t *)y)[i])
            continue;
        double ulp = (isnan(a) || isnan(b)) ? 1e30 : fabs((double)(float_key(a, f32) - float_key(b, f32)));
        /* an f64 result of an f32 function (exp(f32(a)) + abs(b), b i32): the
         * function's ulps are f32 ulps, 2^29 times as many in f64 */
        if (!f32 && tolerance > 0 && ulp > (double)tolerance && !isnan(a) && !isnan(b))
            ulp = fmin(ulp, fabs((double)(float_key((float)a, true) - float_key((float)b, true))));
        if (ulp > *worst_ulp)
            *worst_ulp = ulp;
        if (ulp > (double)tolerance) {
            if (*first < 0)
                *first = i;
            bad++;
        }
    }
    return bad;
}

/* Whether the kernel of EXPR compiled like the JIT's (OPT) but with
 * microkernel_run 0 gives CC_OUT bit for bit on INPUTS: 1 yes, 0 no, -1
 * it could not be compiled or run (counted as a disagreement). */
static int plain_agrees(bcg_context *ctx, const bcg_options *opt, const char *expr, const bcg_operand *ops,
                        int count, const void *const *inputs, const void *cc_out, int64_t n, bcg_dtype d)
{
    bcg_options plain = *opt;
    plain.microkernel_run = 0;
    bcg_kernel *k = NULL;
    bcg_error err;
    size_t bytes = (size_t)n * bcg_dtype_size(d);
    void *out = malloc(bytes ? bytes : 1);
    int verdict = -1;
    if (out && bcg_compile(ctx, expr, ops, count, &plain, &k, &err) == BCG_OK && !bcg_kernel_note(k)[0]) {
        memset(out, 0x3C, bytes);
        if (bcg_run(k, out, inputs, &err) == BCG_OK) {
            double worst;
            int64_t first;
            verdict = compare(out, cc_out, n, d, 0, &worst, &first) == 0;
        }
    }
    bcg_kernel_free(k);
    free(out);
    return verdict;
}

/* --------------------------------------------------------------------- json */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void json_result(FILE *f, const result *r)
{
    fprintf(f, "{\"case\": %d, \"expr\": ", r->index);
    json_string(f, r->expr);
    fprintf(f, ", \"operands\": ");
    json_string(f, r->operands);
    fprintf(f, ", \"elements\": %lld, \"dtype\": \"%s\", \"jit_s\": %.6g, \"cc_s\": %.6g, \"ratio\": %.4f}",
            (long long)r->elements, r->dtype, r->jit_s, r->cc_s, r->ratio);
}

static int cmp_ratio(const void *a, const void *b)
{
    double x = ((const result *)a)->ratio, y = ((const result *)b)->ratio;
    return x < y ? -1 : x > y;
}

static const char *fmt_time(double s, char *buf)
{
    if (s < 1e-6)
        sprintf(buf, "%.0f ns", s * 1e9);
    else if (s < 1e-3)
        sprintf(buf, "%.2f us", s * 1e6);
    else
        sprintf(buf, "%.2f ms", s * 1e3);
    return buf;
}

/* ------------------------------------------------------------ compile only */

typedef struct compile_time {
    double compile_s, compile_cpu_s, first_hit_s, warm_hit_s;
    size_t source_bytes;
    int index;
    char expr[EXPR_MAX];
} compile_time;

static int cmp_compile(const void *a, const void *b)
{
    double x = ((const compile_time *)a)->compile_s, y = ((const compile_time *)b)->compile_s;
    return x < y ? -1 : x > y;
}

#define WARM_HITS 200

/* The quantile Q of the N sorted values V (nearest rank below). */
static double quantile(const double *v, int n, double q)
{
    return n ? v[(int)floor(q * (n - 1))] : 0;
}

static int compile_only(int cases, bool verbose)
{
    bcg_context *ctx = bcg_context_new();
    bcg_options opt;
    bcg_options_init(&opt);
    compile_time *t = calloc((size_t)cases + 1, sizeof *t);
    double *first = calloc((size_t)cases + 1, sizeof *first), *warm = calloc((size_t)cases + 1, sizeof *warm);
    double *cpu = calloc((size_t)cases + 1, sizeof *cpu);
    if (!ctx || !t || !first || !warm || !cpu)
        return 1;
    int n = 0, rejected = 0;
    sweep_case c;
    double start = now();
    for (int ci = 0; ci < cases; ci++) {
        memset(&c, 0, sizeof c);
        c.index = ci;
        draw_shape(&c);
        draw_operands(&c);
        draw_expression(&c);
        bcg_operand ops[MAX_OPS];
        for (int i = 0; i < c.count; i++)
            ops[i] = (bcg_operand){c.ops[i].name, c.ops[i].dtype, c.ops[i].rank, c.ops[i].shape,
                                   c.ops[i].contiguous ? NULL : c.ops[i].strides};
        bcg_kernel *k = NULL, *again = NULL;
        bcg_error err;
        double c0 = cpu_now(), t0 = now();
        bcg_status s = bcg_compile(ctx, c.expr, ops, c.count, &opt, &k, &err);
        double compile_s = now() - t0, compile_cpu_s = cpu_now() - c0;
        if (s != BCG_OK || bcg_kernel_note(k)[0]) {
            rejected++;
            if (verbose)
                fprintf(stderr, "case %d rejected: %s: %s\n", ci, c.expr, k ? bcg_kernel_note(k) : err.message);
            bcg_kernel_free(k);
            continue;
        }
        t0 = now();
        s = bcg_compile(ctx, c.expr, ops, c.count, &opt, &again, &err);
        double first_s = now() - t0;
        bcg_kernel_release(again);
        t0 = now();
        for (int i = 0; i < WARM_HITS && s == BCG_OK; i++) {
            s = bcg_compile(ctx, c.expr, ops, c.count, &opt, &again, &err);
            bcg_kernel_release(again);
        }
        double warm_s = (now() - t0) / WARM_HITS;
        compile_time *r = &t[n++];
        r->index = ci;
        r->compile_s = compile_s;
        r->compile_cpu_s = compile_cpu_s;
        cpu[n - 1] = compile_cpu_s;
        r->first_hit_s = first_s;
        r->warm_hit_s = warm_s;
        const char *source = bcg_kernel_source(k);
        r->source_bytes = source ? strlen(source) : 0;
        snprintf(r->expr, sizeof r->expr, "%s", c.expr);
        if (verbose)
            fprintf(stderr, "%4d compile %.3f ms, hit %.3f us (warm %.3f us), %zu bytes of C: %s\n", ci,
                    compile_s * 1e3, first_s * 1e6, warm_s * 1e6, r->source_bytes, c.expr);
        bcg_kernel_free(k);
    }
    double elapsed = now() - start;
    size_t bytes_total = 0, bytes_max = 0;
    for (int i = 0; i < n; i++) {
        first[i] = t[i].first_hit_s;
        warm[i] = t[i].warm_hit_s;
        bytes_total += t[i].source_bytes;
        if (t[i].source_bytes > bytes_max)
            bytes_max = t[i].source_bytes;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_compile);
    qsort(first, (size_t)n, sizeof *first, cmp_double);
    qsort(warm, (size_t)n, sizeof *warm, cmp_double);
    qsort(cpu, (size_t)n, sizeof *cpu, cmp_double);
    printf("bcgen sweep --compile-only: %d cases drawn, %d compiled, %d rejected, %.1f s\n", cases, n, rejected,
           elapsed);
    printf("JIT compile of %d distinct kernels: median %.3f ms, p95 %.3f ms, worst %.3f ms "
           "(target: median <= 0.5 ms, p95 <= 2 ms)\n",
           n, n ? t[n / 2].compile_s * 1e3 : 0, n ? t[(int)floor(0.95 * (n - 1))].compile_s * 1e3 : 0,
           n ? t[n - 1].compile_s * 1e3 : 0);
    printf("  the same in thread CPU time (without waits for a busy machine's cores): median %.3f ms, "
           "p95 %.3f ms, worst %.3f ms\n",
           quantile(cpu, n, 0.5) * 1e3, quantile(cpu, n, 0.95) * 1e3, n ? cpu[n - 1] * 1e3 : 0);
    printf("cache hit: first after the compile median %.3f us, p95 %.3f us; warm median %.3f us, "
           "p95 %.3f us (target <= 1 us)\n",
           quantile(first, n, 0.5) * 1e6, quantile(first, n, 0.95) * 1e6, quantile(warm, n, 0.5) * 1e6,
           quantile(warm, n, 0.95) * 1e6);
    printf("emitted C: mean %.0f bytes, largest %zu bytes\n", n ? (double)bytes_total / n : 0, bytes_max);
    printf("slowest five:\n");
    for (int i = n - 1; i >= 0 && i >= n - 5; i--)
        printf("  %.3f ms  %6zu bytes  case %d: %s\n", t[i].compile_s * 1e3, t[i].source_bytes, t[i].index,
               t[i].expr);
    free(t);
    free(first);
    free(warm);
    free(cpu);
    bcg_context_free(ctx);
    return 0;
}

/* --------------------------------------------------------------------- main */

typedef struct mismatch {
    int index;
    char expr[EXPR_MAX];
    char operands[256];
    char dtype[8];
    int64_t count, first;
    double worst_ulp;
} mismatch;

int main(int argc, char **argv)
{
    const char *env;
    uint64_t seed = (env = getenv("SWEEP_SEED")) && *env ? strtoull(env, NULL, 10) : 1;
    int cases = (env = getenv("SWEEP_CASES")) && *env ? atoi(env) : -1;
    const char *json_path = (env = getenv("SWEEP_JSON")) && *env ? env : "bench/sweep.json";
    bool quick = false, verbose = false, only_compile = false, small_only = false;
    bool no_vex = false, check_only = false;
    int stream_stores = BCG_STREAM_AUTO;
    const char *only_expr = NULL, *only_operands = NULL;
    bool json_given = (env = getenv("SWEEP_JSON")) && *env;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--compile-only"))
            only_compile = true;
        else if (!strcmp(argv[i], "--small"))
            small_only = true;
        else if (!strcmp(argv[i], "--no-vex"))
            no_vex = true;
        else if (!strcmp(argv[i], "--check-only"))
            check_only = true;
        else if (!strcmp(argv[i], "--stream") && i + 1 < argc)
            stream_stores = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v"))
            verbose = true;
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc)
            cases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json_path = argv[++i];
            json_given = true;
        }
        else if (!strcmp(argv[i], "--only") && i + 2 < argc) {
            only_expr = argv[++i];
            only_operands = argv[++i];
        } else {
            fprintf(stderr, "usage: sweep [--quick | --compile-only | --small | --check-only] [--cases N] [--seed S] [--json PATH] [--verbose] [--no-vex] [--stream -1|0|1]\n"
                            "       sweep --only EXPR OPERANDS [--cases N] [--json PATH] [--no-vex] [--stream -1|0|1]\n");
            return 2;
        }
    }
    if (only_expr) {
        sweep_case probe;
        if (!parse_case(&probe, only_expr, only_operands))
            return 2;
        if (cases < 0)
            cases = 5;
        verbose = true;
        if (!json_given)
            json_path = "/dev/null";
    }
    if (cases < 0)
        cases = only_compile ? 200 : quick ? 30 : small_only ? 100 : 300;
    if (small_only)
        max_elements = 1024;
    rng_state = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    if (!rng_state)
        rng_state = 1;
    if (only_compile)
        return compile_only(cases, verbose);

    bcg_context *jit_ctx = bcg_context_new(), *cc_ctx = bcg_context_new();
    bcg_options jit_opt, cc_opt;
    bcg_options_init(&jit_opt);
    bcg_options_init(&cc_opt);
    cc_opt.backend = BCG_BACKEND_CC;
    cc_opt.native = 1;
    jit_opt.disable_vector_code = no_vex;
    jit_opt.stream_stores = stream_stores;

    result *results = calloc((size_t)cases + 1, sizeof *results);
    /* first compiles (distinct keys: a cache miss each) and cache hits, seconds */
    double *compiles_s = calloc((size_t)cases + 1, sizeof *compiles_s);
    double *hits_s = calloc((size_t)cases + 1, sizeof *hits_s);
    double *compiles_cpu_s = calloc((size_t)cases + 1, sizeof *compiles_cpu_s);
    int compiles = 0;
    mismatch *mismatches = calloc((size_t)cases + 1, sizeof *mismatches);
    mismatch *approximations = calloc((size_t)cases + 1, sizeof *approximations);
    int done = 0, rejected_jit = 0, rejected_cc = 0, failed_runs = 0, nmis = 0, napprox = 0;
    char first_reject[2][600] = {"", ""};
    double start = now();
    sweep_case c;
    for (int ci = 0; ci < cases; ci++) {
        memset(&c, 0, sizeof c);
        c.index = ci;
        if (only_expr) {
            parse_case(&c, only_expr, only_operands);
            c.index = ci;
        } else {
            draw_shape(&c);
            draw_operands(&c);
            draw_expression(&c);
        }
        char desc[256];
        describe_operands(&c, desc, sizeof desc);

        bcg_operand ops[MAX_OPS];
        for (int i = 0; i < c.count; i++)
            ops[i] = (bcg_operand){c.ops[i].name, c.ops[i].dtype, c.ops[i].rank, c.ops[i].shape,
                                   c.ops[i].contiguous ? NULL : c.ops[i].strides};
        bcg_kernel *kj = NULL, *kc = NULL;
        bcg_error err;
        double compile_start = now(), compile_cpu_start = cpu_now();
        bcg_status compiled = bcg_compile(jit_ctx, c.expr, ops, c.count, &jit_opt, &kj, &err);
        double compile_s = now() - compile_start, compile_cpu_s = cpu_now() - compile_cpu_start;
        if (compiled == BCG_OK) {
            /* the same key again: a cache hit (a held kernel, released at once) */
            bcg_kernel *again = NULL;
            double hit_start = now();
            if (bcg_compile(jit_ctx, c.expr, ops, c.count, &jit_opt, &again, &err) == BCG_OK) {
                hits_s[compiles] = now() - hit_start;
                compiles_cpu_s[compiles] = compile_cpu_s;
                compiles_s[compiles++] = compile_s;
            }
            bcg_kernel_release(again);
        }
        if (compiled != BCG_OK || bcg_kernel_note(kj)[0]) {
            if (!first_reject[0][0])
                snprintf(first_reject[0], sizeof first_reject[0], "%s | %s: %s", c.expr, desc,
                         kj ? bcg_kernel_note(kj) : err.message);
            if (verbose)
                fprintf(stderr, "case %d rejected by the JIT: %s | %s: %s\n", ci, c.expr, desc,
                        kj ? bcg_kernel_note(kj) : err.message);
            rejected_jit++;
            bcg_kernel_free(kj);
            continue;
        }
        if (bcg_compile(cc_ctx, c.expr, ops, c.count, &cc_opt, &kc, &err) != BCG_OK ||
            bcg_kernel_note(kc)[0]) {
            if (!first_reject[1][0])
                snprintf(first_reject[1], sizeof first_reject[1], "%s | %s: %s", c.expr, desc,
                         kc ? bcg_kernel_note(kc) : err.message);
            if (verbose)
                fprintf(stderr, "case %d rejected by cc: %s | %s: %s\n", ci, c.expr, desc,
                        kc ? bcg_kernel_note(kc) : err.message);
            rejected_cc++;
            bcg_kernel_free(kj);
            bcg_kernel_free(kc);
            continue;
        }
        int64_t n = bcg_kernel_elements(kj);
        bcg_dtype od = bcg_kernel_dtype(kj);
        size_t out_bytes = (size_t)n * bcg_dtype_size(od);
        const void *inputs[MAX_OPS];
        bool ok = true;
        for (int i = 0; i < c.count; i++) {
            operand *o = &c.ops[i];
            o->buffer = allocate((size_t)o->span * bcg_dtype_size(o->dtype));
            if (!o->buffer) {
                ok = false;
                break;
            }
            fill(o, seed * 1000003u + (uint64_t)ci * 7 + (uint64_t)i + 1);
            inputs[i] = (char *)o->buffer + o->offset * (int64_t)bcg_dtype_size(o->dtype);
        }
        side sj = {.k = kj, .out = ok ? allocate(out_bytes) : NULL};
        side sc = {.k = kc, .out = ok ? allocate(out_bytes) : NULL};
        if (!ok || !sj.out || !sc.out) {
            fprintf(stderr, "sweep: case %d: out of memory\n", ci);
            failed_runs++;
            goto next;
        }
        memset(sj.out, 0xA5, out_bytes);
        memset(sc.out, 0x5A, out_bytes);
        /* first calls: the outputs compared; their times size the batches */
        double t0 = now();
        bcg_status s1 = bcg_run(kj, sj.out, inputs, &err);
        double tj = now() - t0;
        t0 = now();
        bcg_status s2 = bcg_run(kc, sc.out, inputs, &err);
        double tc = now() - t0;
        if (s1 != BCG_OK || s2 != BCG_OK) {
            fprintf(stderr, "sweep: case %d: run failed: %s\n", ci, err.message);
            failed_runs++;
            goto next;
        }
        {
            double worst_ulp;
            int64_t first;
            /* an expression with an approximated function (the JIT's f32
             * exp, f64 exp) is compared bit for bit too, and any difference
             * is judged by the kernel without microkernels (below) */
            int64_t bad = compare(sj.out, sc.out, n, od, 0, &worst_ulp, &first);
            const char *kind = bad ? "disagreement" : NULL;
            if (bad && c.approximated) {
                int verdict = plain_agrees(jit_ctx, &jit_opt, c.expr, ops, c.count, inputs, sc.out, n, od);
                if (verdict > 0)
                    kind = "approximation";
                else if (verdict < 0)
                    kind = "disagreement (the kernel without microkernels failed)";
            }
            if (kind) {
                bool approx = !strcmp(kind, "approximation");
                mismatch *m = approx ? &approximations[napprox++] : &mismatches[nmis++];
                m->index = ci;
                snprintf(m->expr, sizeof m->expr, "%s", c.expr);
                snprintf(m->operands, sizeof m->operands, "%s", desc);
                snprintf(m->dtype, sizeof m->dtype, "%s", bcg_dtype_name(od));
                m->count = bad;
                m->first = first;
                m->worst_ulp = worst_ulp;
                fprintf(stderr, "sweep: case %d: JIT and cc differ in %lld of %lld elements (first %lld, worst %.3g ulp), %s: %s | %s\n",
                        ci, (long long)bad, (long long)n, (long long)first, worst_ulp,
                        approx ? "an approximation (bit for bit cc's without microkernels)" : kind, c.expr, desc);
            }
        }
        if (check_only)
            goto next;
        /* a second warm call, then batches sized to SAMPLE_SECONDS */
        t0 = now();
        bcg_run(kj, sj.out, inputs, &err);
        tj = fmin(tj, now() - t0);
        t0 = now();
        bcg_run(kc, sc.out, inputs, &err);
        tc = fmin(tc, now() - t0);
        sj.batch = tj > 0 ? (long)ceil(SAMPLE_SECONDS / tj) : 1000;
        sc.batch = tc > 0 ? (long)ceil(SAMPLE_SECONDS / tc) : 1000;
        if (sj.batch < 1)
            sj.batch = 1;
        if (sc.batch < 1)
            sc.batch = 1;
        while ((!enough(&sj) || !enough(&sc)) && sj.n < MAX_SAMPLES && sc.n < MAX_SAMPLES) {
            if (!sample(&sj, inputs) || !sample(&sc, inputs)) {
                ok = false;
                break;
            }
        }
        if (!ok) {
            fprintf(stderr, "sweep: case %d: a timed run failed\n", ci);
            failed_runs++;
            goto next;
        }
        {
            result *r = &results[done++];
            r->index = ci;
            snprintf(r->expr, sizeof r->expr, "%s", c.expr);
            snprintf(r->operands, sizeof r->operands, "%s", desc);
            snprintf(r->dtype, sizeof r->dtype, "%s", bcg_dtype_name(od));
            r->elements = n;
            r->jit_s = median(sj.samples, sj.n);
            r->cc_s = median(sc.samples, sc.n);
            r->ratio = r->cc_s / r->jit_s;
            r->small = r->jit_s < SMALL_US * 1e-6 && r->cc_s < SMALL_US * 1e-6;
            if (verbose) {
                char b1[32], b2[32];
                fprintf(stderr, "%4d %-9lld %-4s jit %-10s cc %-10s ratio %.3f  %s | %s\n", ci, (long long)n,
                        r->dtype, fmt_time(r->jit_s, b1), fmt_time(r->cc_s, b2), r->ratio, c.expr, desc);
            }
        }
    next:
        free(sj.out);
        free(sc.out);
        for (int i = 0; i < c.count; i++) {
            free(c.ops[i].buffer);
            c.ops[i].buffer = NULL;
        }
        bcg_kernel_free(kj);
        bcg_kernel_free(kc);
        if (!verbose && (ci + 1) % 25 == 0)
            fprintf(stderr, "sweep: %d/%d cases, %.0f s\n", ci + 1, cases, now() - start);
    }
    double elapsed = now() - start;

    /* the distribution over cases that are not small */
    result *big = calloc((size_t)done + 1, sizeof *big), *small = calloc((size_t)done + 1, sizeof *small);
    int nbig = 0, nsmall = 0, small_met = 0;
    double log_sum = 0, log_all = 0, small_worst_excess = 0;
    for (int i = 0; i < done; i++) {
        log_all += log(results[i].ratio);
        if (results[i].small) {
            small[nsmall++] = results[i];
            double excess = (results[i].jit_s - results[i].cc_s) * 1e6;
            small_met += excess <= SMALL_TARGET_US;
            if (excess > small_worst_excess)
                small_worst_excess = excess;
        } else {
            big[nbig++] = results[i];
            log_sum += log(results[i].ratio);
        }
    }
    qsort(big, (size_t)nbig, sizeof *big, cmp_ratio);
    qsort(small, (size_t)nsmall, sizeof *small, cmp_ratio);
    double geomean = nbig ? exp(log_sum / nbig) : 0, geomean_all = done ? exp(log_all / done) : 0;
    double p10 = nbig ? big[(int)floor(0.1 * (nbig - 1))].ratio : 0;
    double p50 = nbig ? big[(int)floor(0.5 * (nbig - 1))].ratio : 0;
    double worst = nbig ? big[0].ratio : 0, best = nbig ? big[nbig - 1].ratio : 0;
    int under_1 = 0, under_09 = 0;
    for (int i = 0; i < nbig; i++) {
        under_1 += big[i].ratio < 1.0;
        under_09 += big[i].ratio < 0.9;
    }

    double approx_worst = 0;
    for (int i = 0; i < napprox; i++)
        approx_worst = fmax(approx_worst, approximations[i].worst_ulp);
    printf("bcgen sweep: seed %llu, %d cases drawn, %d timed (%d small), %d rejected by the JIT, "
           "%d by cc, %d failed runs, %d disagreements, %d approximations (worst %.3g ulp), %.0f s\n",
           (unsigned long long)seed, cases, done, nsmall, rejected_jit, rejected_cc, failed_runs, nmis, napprox,
           approx_worst, elapsed);
    if (first_reject[0][0])
        printf("  first JIT rejection: %s\n", first_reject[0]);
    if (first_reject[1][0])
        printf("  first cc rejection: %s\n", first_reject[1]);
    printf("ratio = cc (gcc -O3 -march=native) time / JIT time; > 1: the JIT is faster\n");
    printf("  over %d cases >= %.0f us: geomean %.3f, p10 %.3f, median %.3f, worst %.3f, best %.3f; "
           "%d under 1.0, %d under 0.9\n",
           nbig, SMALL_US, geomean, p10, p50, worst, best, under_1, under_09);
    printf("  geomean over all %d timed cases: %.3f\n", done, geomean_all);
    printf("worst ten:\n");
    for (int i = 0; i < nbig && i < 10; i++) {
        char b1[32], b2[32];
        printf("  %.3f  jit %-10s cc %-10s %9lld %-4s %s | %s\n", big[i].ratio, fmt_time(big[i].jit_s, b1),
               fmt_time(big[i].cc_s, b2), (long long)big[i].elements, big[i].dtype, big[i].expr, big[i].operands);
    }
    printf("small cases (both calls under %.0f us; target: JIT at most %.2f us slower than cc): %d of %d met, "
           "worst excess %.3f us\n",
           SMALL_US, SMALL_TARGET_US, small_met, nsmall, small_worst_excess);
    {
        /* issue 11's small-output target, over every output of at most 1024 elements */
        int outputs = 0, within_3x = 0, within_budget = 0, both = 0;
        for (int i = 0; i < done; i++) {
            if (results[i].elements > 1024)
                continue;
            outputs++;
            bool ratio_ok = results[i].jit_s <= 3 * results[i].cc_s;
            bool budget_ok = results[i].jit_s <= 30e-9 + 0.5e-9 * (double)results[i].elements;
            within_3x += ratio_ok;
            within_budget += budget_ok;
            both += ratio_ok && budget_ok;
        }
        printf("outputs of at most 1024 elements (target: a call <= 3x cc's and <= 30 ns + 0.5 ns an element): "
               "%d of %d met both, %d within 3x, %d within the budget\n",
               both, outputs, within_3x, within_budget);
    }
    for (int i = 0; i < nsmall; i++) {
        char b1[32], b2[32];
        printf("  %.3f  jit %-10s cc %-10s %9lld %-4s %s | %s\n", small[i].ratio, fmt_time(small[i].jit_s, b1),
               fmt_time(small[i].cc_s, b2), (long long)small[i].elements, small[i].dtype, small[i].expr,
               small[i].operands);
    }
    /* compile times: distinct kernels, a cache miss each (the issue's
     * target: median <= 0.5 ms, p95 <= 2 ms; a hit <= 1 us) */
    qsort(compiles_s, (size_t)compiles, sizeof *compiles_s, cmp_double);
    qsort(hits_s, (size_t)compiles, sizeof *hits_s, cmp_double);
    double compile_median = compiles ? compiles_s[compiles / 2] : 0;
    double compile_p95 = compiles ? compiles_s[(int)floor(0.95 * (compiles - 1))] : 0;
    double compile_max = compiles ? compiles_s[compiles - 1] : 0;
    double hit_median = compiles ? hits_s[compiles / 2] : 0;
    printf("JIT compile of %d distinct kernels: median %.3f ms, p95 %.3f ms, worst %.3f ms; "
           "cache hit median %.3f us\n",
           compiles, compile_median * 1e3, compile_p95 * 1e3, compile_max * 1e3, hit_median * 1e6);
    qsort(compiles_cpu_s, (size_t)compiles, sizeof *compiles_cpu_s, cmp_double);
    printf("  the compiles in thread CPU time (without waits for a busy machine's cores): median %.3f ms, "
           "p95 %.3f ms\n",
           quantile(compiles_cpu_s, compiles, 0.5) * 1e3, quantile(compiles_cpu_s, compiles, 0.95) * 1e3);
    for (int i = 0; i < nmis; i++)
        printf("disagreement: case %d (%s): %lld elements differ, worst %.3g ulp: %s | %s\n", mismatches[i].index,
               mismatches[i].dtype, (long long)mismatches[i].count, mismatches[i].worst_ulp, mismatches[i].expr,
               mismatches[i].operands);
    for (int i = 0; i < napprox; i++)
        printf("approximation: case %d (%s): %lld elements differ, worst %.3g ulp (bit for bit without "
               "microkernels): %s | %s\n",
               approximations[i].index, approximations[i].dtype, (long long)approximations[i].count,
               approximations[i].worst_ulp, approximations[i].expr, approximations[i].operands);

    FILE *f = fopen(json_path, "w");
    if (!f) {
        perror(json_path);
        return 1;
    }
    fprintf(f, "{\n  \"seed\": %llu, \"cases\": %d, \"timed\": %d, \"small\": %d, \"rejected_jit\": %d,"
               " \"rejected_cc\": %d, \"failed_runs\": %d, \"disagreements\": %d, \"approximations\": %d,"
               " \"approximation_worst_ulp\": %.4g, \"seconds\": %.1f,\n",
            (unsigned long long)seed, cases, done, nsmall, rejected_jit, rejected_cc, failed_runs, nmis, napprox,
            approx_worst, elapsed);
    fprintf(f, "  \"ratio\": \"cc_s / jit_s\", \"geomean\": %.4f, \"p10\": %.4f, \"median\": %.4f, \"worst\": %.4f,"
               " \"best\": %.4f, \"under_1\": %d, \"under_0_9\": %d, \"geomean_all\": %.4f,\n",
            geomean, p10, p50, worst, best, under_1, under_09, geomean_all);
    fprintf(f, "  \"compiles\": %d, \"compile_median_ms\": %.4f, \"compile_p95_ms\": %.4f,"
               " \"compile_worst_ms\": %.4f, \"cache_hit_median_us\": %.4f,"
               " \"compile_cpu_median_ms\": %.4f, \"compile_cpu_p95_ms\": %.4f,\n",
            compiles, compile_median * 1e3, compile_p95 * 1e3, compile_max * 1e3, hit_median * 1e6,
            quantile(compiles_cpu_s, compiles, 0.5) * 1e3, quantile(compiles_cpu_s, compiles, 0.95) * 1e3);
    fprintf(f, "  \"worst_ten\": [\n");
    for (int i = 0; i < nbig && i < 10; i++) {
        fprintf(f, "    ");
        json_result(f, &big[i]);
        fprintf(f, "%s\n", i + 1 < nbig && i + 1 < 10 ? "," : "");
    }
    fprintf(f, "  ],\n  \"small_target_us\": %.3f, \"small_met\": %d, \"small_worst_excess_us\": %.4f,\n"
               "  \"small_cases\": [\n",
            SMALL_TARGET_US, small_met, small_worst_excess);
    for (int i = 0; i < nsmall; i++) {
        fprintf(f, "    ");
        json_result(f, &small[i]);
        fprintf(f, "%s\n", i + 1 < nsmall ? "," : "");
    }
    const char *lists[2] = {"disagreement_cases", "approximation_cases"};
    const mismatch *lists_of[2] = {mismatches, approximations};
    int lists_count[2] = {nmis, napprox};
    for (int l = 0; l < 2; l++) {
        fprintf(f, "  ],\n  \"%s\": [\n", lists[l]);
        for (int i = 0; i < lists_count[l]; i++) {
            const mismatch *m = &lists_of[l][i];
            fprintf(f, "    {\"case\": %d, \"expr\": ", m->index);
            json_string(f, m->expr);
            fprintf(f, ", \"operands\": ");
            json_string(f, m->operands);
            fprintf(f, ", \"dtype\": \"%s\", \"elements_differing\": %lld, \"first\": %lld, \"worst_ulp\": %.4g}%s\n",
                    m->dtype, (long long)m->count, (long long)m->first, m->worst_ulp,
                    i + 1 < lists_count[l] ? "," : "");
        }
    }
    fprintf(f, "  ],\n  \"all\": [\n");
    for (int i = 0; i < done; i++) {
        fprintf(f, "    ");
        json_result(f, &results[i]);
        fprintf(f, "%s\n", i + 1 < done ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
    printf("wrote %s\n", json_path);

    free(big);
    free(small);
    free(results);
    free(mismatches);
    free(approximations);
    free(compiles_s);
    free(compiles_cpu_s);
    free(hits_s);
    bcg_context_free(jit_ctx);
    bcg_context_free(cc_ctx);
    return 0;
}
