/* compare.h - comparing a kernel's output with the reference evaluator's,
 * shared by the unit tests of the paths that may differ from it in the last
 * bits (test_microkernels.c, test_threads_run.c), and their random numbers.
 * Include after internal.h and <math.h>, <float.h>, <string.h>. */
#ifndef BCGEN_TEST_COMPARE_H
#define BCGEN_TEST_COMPARE_H

/* xorshift64: the tests' reproducible pseudo-random stream, from *STATE. */
static inline uint64_t xorshift64(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A test's random stream from BASE: BASE itself, or, with BCGEN_TEST_SEED=N
 * (N != 0) in the environment, another stream per N, so that the
 * randomized tests can be run over other cases than `make test`'s (scaled
 * runs hunting for wrong results: BCGEN_TEST_SEED=7 BCGEN_VEX_CASES=30000
 * build/tests/test_vex).  A test's share assertions hold for its own
 * stream; another one may miss them by a little. */
static inline uint64_t seeded_stream(uint64_t base)
{
    const char *text = getenv("BCGEN_TEST_SEED");
    uint64_t seed = text ? strtoull(text, NULL, 10) : 0;
    if (!seed)
        return base;
    uint64_t x = base ^ (seed * 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull;
    return (x ^ (x >> 29)) | 1; /* xorshift64 needs a non-zero state */
}

/* f32 exp/log/sin/cos/tanh are polynomials in the microkernels and libm in
 * the reference (see test_microkernels): within 4 ulp of max(|want|, 64).
 */
static inline bool within_tolerance(float got, float want)
{
    if (isinf(got) || isinf(want))
        return got == want;
    float scale = fabsf(want) > 64.0f ? fabsf(want) : 64.0f;
    return fabsf(got - want) <= 4.0f * scale * FLT_EPSILON;
}

/* f64 exp and log are polynomials in the microkernels (exp in the vector
 * code too; within 1 ulp; libm in the reference): the same tolerance in
 * double. */
static inline bool within_tolerance_f64(double got, double want)
{
    if (isinf(got) || isinf(want))
        return got == want;
    double scale = fabs(want) > 64.0 ? fabs(want) : 64.0;
    return fabs(got - want) <= 4.0 * scale * DBL_EPSILON;
}

/* TOLERANT: f32 results within within_tolerance; TOLERANT_F64: f64 ones
 * within within_tolerance_f64 (only where the expression has an f64 exp or log). */
static inline int64_t first_difference_in(const char *got, const char *want, bcg_dtype t,
                                          int64_t count, bool tolerant, bool tolerant_f64)
{
    size_t size = bcg_dtype_size(t);
    for (int64_t i = 0; i < count; i++) {
        const char *g = got + (size_t)i * size, *w = want + (size_t)i * size;
        if (memcmp(g, w, size) == 0)
            continue;
        if (t == BCG_F32) {
            float x, y;
            memcpy(&x, g, sizeof x);
            memcpy(&y, w, sizeof y);
            if ((isnan(x) && isnan(y)) || (tolerant && within_tolerance(x, y)))
                continue;
        } else if (t == BCG_F64) {
            double x, y;
            memcpy(&x, g, sizeof x);
            memcpy(&y, w, sizeof y);
            if ((isnan(x) && isnan(y)) || (tolerant_f64 && within_tolerance_f64(x, y)))
                continue;
        } else if (t == BCG_F16 || t == BCG_BF16) { /* NaN: every exponent bit, a mantissa */
            uint16_t x, y, inf = t == BCG_F16 ? 0x7c00 : 0x7f80;
            memcpy(&x, g, sizeof x);
            memcpy(&y, w, sizeof y);
            if ((x & 0x7fff) > inf && (y & 0x7fff) > inf)
                continue;
        }
        return i;
    }
    return -1;
}

/* An f32 result stored widened in f64 (in place into an f64 operand: the
 * expression's dtype, converted on store, docs/semantics.md): each element
 * f32 exactly, and within within_tolerance of the reference's in f32 (an
 * f32 exp 1 ulp off is 2^29 ulp of f64: first_difference_in's f64
 * tolerance is not the bound of an exp computed in f32). */
static inline int64_t first_difference_widened(const char *got, const char *want, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        double x, y;
        memcpy(&x, got + (size_t)i * 8, sizeof x);
        memcpy(&y, want + (size_t)i * 8, sizeof y);
        if (memcmp(&x, &y, sizeof x) == 0 || (isnan(x) && isnan(y)))
            continue;
        float fx = (float)x, fy = (float)y;
        if ((double)fx == x && (double)fy == y && within_tolerance(fx, fy))
            continue;
        return i;
    }
    return -1;
}

static inline int64_t first_difference(const char *got, const char *want, bcg_dtype t, int64_t count,
                                bool tolerant)
{
    return first_difference_in(got, want, t, count, tolerant, false);
}

#endif
