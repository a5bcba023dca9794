/* test_accuracy.c - the ulp error of every float function of gen/ops.h
 * (issue 13): each RULE_FLOAT row, in f32 and f64, computed by JIT-compiled
 * kernels twice (straight-line code calling the C library or bcgen's own
 * helpers, and with the vectorised microkernels on long inner runs),
 * against a higher-precision reference: the double C library (or, for
 * bcgen's own functions, their double arithmetic) for f32, the long double
 * C library (own functions written out in long double) for f64.  Arguments:
 * random bit patterns, uniform ones on [-1, 1], [-10, 10], [-100, 100],
 * log-uniform magnitudes over the whole exponent range of either sign, and
 * the edge values (+-0, +-inf, NaN, subnormals, the largest finite values,
 * +-1 and other domain boundaries); pairs of them for functions of two
 * arguments, also pairs close to each other.  Errors are in ulps of the
 * result's type at the reference (logaddexp, logaddexp2: at max(|ref|, 1),
 * see docs/semantics.md); NaN and infinities must match in kind.  Every
 * maximum must stay within the bound of the table below, which is the
 * table of docs/semantics.md ("Accuracy of the float functions"); a row
 * of ops.h without a bound here fails. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include <cmocka.h>

#define PI_L 3.141592653589793238462643383279502884L
#define LN2_L 0.693147180559945309417232121458176568L

static long double expit_l(long double x)
{
    if (x < 0) {
        long double e = expl(x);
        return e / (1 + e);
    }
    return 1 / (1 + expl(-x));
}

static long double logaddexp_l(long double x, long double y)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == y)
        return x + LN2_L;
    long double m = x > y ? x : y;
    return m + log1pl(expl(-fabsl(x - y)));
}

static long double logaddexp2_l(long double x, long double y)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == y)
        return x + 1;
    long double m = x > y ? x : y;
    return m + log1pl(exp2l(-fabsl(x - y))) / LN2_L;
}

static long double deg2rad_l(long double x) { return x * (PI_L / 180); }
static long double rad2deg_l(long double x) { return x * (180 / PI_L); }

/* The f64 reference and the stated bounds (ulps): f32 and f64 for the
 * straight-line code, f32 with the vectorised microkernels (f64 always
 * uses the straight-line functions).  SCALED: ulps of max(|ref|, 1). */
typedef struct accuracy_row {
    const char *name;
    long double (*f1)(long double);
    long double (*f2)(long double, long double);
    double bound_f32, bound_f64, bound_vector_f32;
    bool scaled;
} accuracy_row;

static const accuracy_row rows[] = {
    {"sqrt", sqrtl, NULL, 0.5, 0.5, 0.5, false},
    {"exp", expl, NULL, 1, 1, 2, false},
    {"log", logl, NULL, 1, 1, 2, false},
    {"sin", sinl, NULL, 1, 1, 2.5, false},
    {"cos", cosl, NULL, 1, 1, 2.5, false},
    {"tanh", tanhl, NULL, 2, 2, 2, false},
    {"floor", floorl, NULL, 0, 0, 0, false},
    {"ceil", ceill, NULL, 0, 0, 0, false},
    {"log1p", log1pl, NULL, 2, 2, 2, false},
    {"expm1", expm1l, NULL, 2, 2, 2, false},
    {"log2", log2l, NULL, 2, 2, 2, false},
    {"log10", log10l, NULL, 2, 2, 2, false},
    {"exp2", exp2l, NULL, 2, 2, 2, false},
    {"cbrt", cbrtl, NULL, 2, 4, 2, false},
    {"tan", tanl, NULL, 3, 2, 3, false},
    {"arcsin", asinl, NULL, 2, 2, 2, false},
    {"arccos", acosl, NULL, 2, 2, 2, false},
    {"arctan", atanl, NULL, 3, 2, 3, false},
    {"sinh", sinhl, NULL, 2, 2, 2, false},
    {"cosh", coshl, NULL, 2, 2, 2, false},
    {"arcsinh", asinhl, NULL, 2, 2, 2, false},
    {"arccosh", acoshl, NULL, 2, 2, 2, false},
    {"arctanh", atanhl, NULL, 2, 2, 2, false},
    {"erf", erfl, NULL, 3, 2, 3, false},
    {"erfc", erfcl, NULL, 4, 4, 4, false},
    {"trunc", truncl, NULL, 0, 0, 0, false},
    {"rint", rintl, NULL, 0, 0, 0, false},
    {"arctan2", NULL, atan2l, 2, 2, 2, false},
    {"hypot", NULL, hypotl, 1, 1, 1, false},
    {"copysign", NULL, copysignl, 0, 0, 0, false},
    {"nextafter", NULL, NULL, 0, 0, 0, false}, /* exact: compared with nextafter{f} */
    {"fmod", NULL, fmodl, 0, 0, 0, false},
    {"fmin", NULL, fminl, 0, 0, 0, false},
    {"fmax", NULL, fmaxl, 0, 0, 0, false},
    {"deg2rad", deg2rad_l, NULL, 1, 1, 1, false},
    {"rad2deg", rad2deg_l, NULL, 1.5, 1, 1.5, false}, /* NumPy's f32 180/pi */
    {"expit", expit_l, NULL, 3, 3, 3, false},
    {"logaddexp", NULL, logaddexp_l, 3, 3, 3, true},
    {"logaddexp2", NULL, logaddexp2_l, 3, 3, 3, true},
};

static const accuracy_row *row_named(const char *name)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* ---- arguments ------------------------------------------------------------- */

static uint64_t state = 0x9E3779B97F4A7C15ULL;

static uint64_t next_random(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(next_random() >> 11) * 0x1p-53;
}

/* Argument I of a run of N: edges first, then the distributions in turn. */
static double argument(int i, bool single)
{
    static const double edges[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, INFINITY,
                                   -INFINITY, NAN, 1e-300, -1e-300, 1e-40, -1e-40, 1e-45,
                                   3.4028234663852886e38, -3.4028234663852886e38, 1e300,
                                   -1e300, 88.7, -87.3, -103.9, 127.9, -149.5, 709.7,
                                   -745.1, 1023.9, 1.5707963267948966, 3.141592653589793,
                                   0.6931471805599453, -0.6931471805599453, 4.9e-324,
                                   1.7976931348623157e308, 0.9999999, 1.0000001, 20.0,
                                   -20.0, 40.0, 90.0, 180.0, 1e10, -1e10};
    int edge_count = (int)(sizeof edges / sizeof edges[0]);
    if (i < edge_count)
        return single ? (double)(float)edges[i] : edges[i];
    int max_exponent = single ? 128 : 1024, min_exponent = single ? -149 : -1074;
    switch (i % 6) {
    case 0: { /* random bits; NaNs quiet (a signaling NaN has no reference:
               * widening it to long double quiets it, fmin(x, sNaN) is NaN) */
        if (single) {
            uint32_t bits = (uint32_t)next_random();
            if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu))
                bits |= 0x00400000u;
            float f;
            memcpy(&f, &bits, 4);
            return f;
        }
        uint64_t bits = next_random();
        if ((bits & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL &&
            (bits & 0x000fffffffffffffULL))
            bits |= 0x0008000000000000ULL;
        double d;
        memcpy(&d, &bits, 8);
        return d;
    }
    case 1: return uniform(-1, 1);
    case 2: return uniform(-10, 10);
    case 3: return uniform(-100, 100);
    default: { /* log-uniform magnitude, either sign */
        double m = ldexp(uniform(1, 2), (int)uniform(min_exponent, max_exponent - 1));
        return (next_random() & 1) ? -m : m;
    }
    }
}

/* ---- error measure ------------------------------------------------------------- */

/* GOT's error in ulps of the SINGLE or double type at REF (at max(|REF|,
 * 1) when SCALED); INFINITY where the kinds differ. */
static double ulp_error(long double got, long double ref, bool single, bool scaled)
{
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0 : INFINITY;
    long double largest = single ? FLT_MAX : DBL_MAX;
    if (isinf(got)) /* the reference may round to it */
        return signbit(got) == signbit(ref) && fabsl(ref) >= largest ? 0 : INFINITY;
    if (isinf(ref))
        return INFINITY;
    long double scale = fabsl(ref);
    if (scaled && scale < 1)
        scale = 1;
    int digits = single ? 24 : 53, lowest = single ? -149 : -1074;
    int exponent = scale == 0 ? lowest : ilogbl(scale) - (digits - 1);
    if (exponent < lowest)
        exponent = lowest;
    return (double)(fabsl(got - ref) / ldexpl(1.0L, exponent));
}

/* ---- running ----------------------------------------------------------------------- */

#define COUNT 60000

typedef struct measured {
    double worst;
    double at_x, at_y, got, ref;
} measured;

/* Row OP over COUNT arguments in T, vectorised (microkernels) or not. */
static measured measure(bcg_context *ctx, int op, bcg_dtype t, bool vectorised)
{
    const op_info *info = &op_table[op];
    const accuracy_row *row = row_named(info->call);
    bool single = t == BCG_F32;
    size_t size = single ? 4 : 8;
    char expr[64];
    snprintf(expr, sizeof expr, info->arity == 2 ? "%s(a, b)" : "%s(a)", info->call);
    int64_t shape[] = {COUNT};
    bcg_operand ops[] = {{"a", t, 1, shape, NULL}, {"b", t, 1, shape, NULL}};
    bcg_options o;
    bcg_options_init(&o);
    o.microkernel_run = vectorised ? 64 : 0;
    bcg_kernel *k = NULL;
    bcg_error err;
    if (bcg_compile(ctx, expr, ops, info->arity, &o, &k, &err) != BCG_OK)
        fail_msg("%s over %s: %s", expr, bcg_dtype_name(t), err.message);
    unsigned char *x = malloc(COUNT * size), *y = malloc(COUNT * size), *out = malloc(COUNT * size);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(out);
    for (int i = 0; i < COUNT; i++) {
        double a = argument(i, single);
        /* pairs: independent, or close to each other (cancellation in x - y) */
        double b = i % 3 == 0 ? a * (1 + uniform(-1e-3, 1e-3)) + uniform(-2, 2) * (i % 2)
                              : argument((int)(next_random() % COUNT), single);
        if (single) {
            float fa = (float)a, fb = (float)b;
            memcpy(x + i * size, &fa, 4);
            memcpy(y + i * size, &fb, 4);
        } else {
            memcpy(x + i * size, &a, 8);
            memcpy(y + i * size, &b, 8);
        }
    }
    const void *in[] = {x, y};
    if (bcg_run(k, out, in, &err) != BCG_OK)
        fail_msg("%s over %s: %s", expr, bcg_dtype_name(t), err.message);
    measured m = {0, 0, 0, 0, 0};
    for (int i = 0; i < COUNT; i++) {
        long double a, b, got, ref;
        if (single) {
            float fa, fb, fg;
            memcpy(&fa, x + i * size, 4);
            memcpy(&fb, y + i * size, 4);
            memcpy(&fg, out + i * size, 4);
            a = fa, b = fb, got = fg;
            if (op == OP_NEXTAFTER)
                ref = nextafterf(fa, fb);
            else if (info->own)
                ref = eval_own_function((expr_op)op, false, fa, fb);
            else if (info->math2_f64)
                ref = info->math2_f64(fa, fb);
            else
                ref = info->math_f64(fa);
        } else {
            double da, db, dg;
            memcpy(&da, x + i * size, 8);
            memcpy(&db, y + i * size, 8);
            memcpy(&dg, out + i * size, 8);
            a = da, b = db, got = dg;
            if (op == OP_NEXTAFTER)
                ref = nextafter(da, db);
            else
                ref = row->f2 ? row->f2(a, b) : row->f1(a);
        }
        double e = ulp_error(got, ref, single, row->scaled);
        if (e > m.worst || (isinf(e) && !isinf(m.worst))) {
            m.worst = e;
            m.at_x = (double)a, m.at_y = (double)b, m.got = (double)got, m.ref = (double)ref;
        }
    }
    free(x);
    free(y);
    free(out);
    return m;
}

static void test_every_float_function_within_its_bound(void **unused)
{
    (void)unused;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    int failures = 0, measured_rows = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        const op_info *info = &op_table[op];
        if (info->rule != RULE_FLOAT || !info->call)
            continue;
        const accuracy_row *row = row_named(info->call);
        if (!row) {
            print_error("ops.h row %s: no bound in test_accuracy.c (and docs/semantics.md)\n",
                        info->call);
            failures++;
            continue;
        }
        measured_rows++;
        static const struct { bcg_dtype t; bool vectorised; } paths[] = {
            {BCG_F32, false}, {BCG_F32, true}, {BCG_F64, false}, {BCG_F64, true}};
        for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
            measured m = measure(ctx, op, paths[p].t, paths[p].vectorised);
            double bound = paths[p].t == BCG_F64 ? row->bound_f64
                           : paths[p].vectorised ? row->bound_vector_f32 : row->bound_f32;
            bool ok = m.worst <= bound;
            printf("# %-10s %s %-10s max %6.3f ulp (bound %g)%s", row->name,
                   bcg_dtype_name(paths[p].t), paths[p].vectorised ? "vectorised" : "scalar",
                   m.worst, bound, ok ? "\n" : "");
            if (!ok) {
                printf(" FAILS at (%.17g, %.17g): got %.17g, reference %.17g\n", m.at_x, m.at_y,
                       m.got, m.ref);
                failures++;
            }
        }
    }
    bcg_context_free(ctx);
    printf("# %d float functions measured, %d bounds exceeded\n", measured_rows, failures);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_float_function_within_its_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
