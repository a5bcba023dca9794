/* hand.c - the "hand" column of `make bench`: for every case of
 * bench/cases.txt, the loop a programmer would write for exactly that case
 * (shapes as constants, plain C loops, transposed reads blocked), compiled
 * with gcc -O3 -march=native -ffp-contract=off as an object of its own (no
 * fused multiply-adds, so the results are bcgen's: the driver checks), and
 * the non-temporal bandwidth bound: read the case's input bytes and write
 * its output bytes with streaming stores, the least memory traffic any
 * kernel of the case can cause.
 *
 * Inputs point at each operand's element [0,...,0], as for bcg_run (a
 * negative stride reads backwards from there).
 */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hand.h"

#define F(i) ((const float *)in[i])

static void add_row_4096(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 4096; i++)
        for (int j = 0; j < 4096; j++)
            o[i * 4096 + j] = a[i * 4096 + j] + b[j];
}

static void outer_4096(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 4096; i++) {
        float x = a[i];
        for (int j = 0; j < 4096; j++)
            o[(size_t)i * 4096 + j] = x + b[j];
    }
}

static void mul_4d(void *out, const void *const *in)
{
    /* a (64,1,64,64) * b (1,64,1,64) -> (64,64,64,64) */
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++)
            for (int k = 0; k < 64; k++) {
                float *row = o + (((size_t)i * 64 + j) * 64 + k) * 64;
                const float *ar = a + ((size_t)i * 64 + k) * 64, *br = b + (size_t)j * 64;
                for (int l = 0; l < 64; l++)
                    row[l] = ar[l] * br[l];
            }
}

static void add_row_1000(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 1000; i++)
        for (int j = 0; j < 1000; j++)
            o[i * 1000 + j] = a[i * 1000 + j] + b[j];
}

/* a (N,N) read transposed (strides [1,N]) plus b (N,): 32x32 blocks */
#define TB 32
static void transposed(void *out, const void *const *in)
{
    enum { N = 2048 };
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int ib = 0; ib < N; ib += TB)
        for (int jb = 0; jb < N; jb += TB)
            for (int i = ib; i < ib + TB; i++)
                for (int j = jb; j < jb + TB; j++)
                    o[(size_t)i * N + j] = a[(size_t)j * N + i] + b[j];
}

static void add_i32(void *out, const void *const *in)
{
    int32_t *o = out;
    const int32_t *a = in[0], *b = in[1];
    for (int i = 0; i < 4096; i++)
        for (int j = 0; j < 4096; j++)
            o[i * 4096 + j] = (int32_t)((uint32_t)a[i * 4096 + j] + (uint32_t)b[j]);
}

static void add_i8(void *out, const void *const *in)
{
    int8_t *o = out;
    const int8_t *a = in[0], *b = in[1];
    for (int i = 0; i < 4096; i++)
        for (int j = 0; j < 4096; j++)
            o[i * 4096 + j] = (int8_t)((uint8_t)a[i * 4096 + j] + (uint8_t)b[j]);
}

static void fma3(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1), *c = F(2);
    for (int i = 0; i < 4096; i++) {
        float ci = c[i];
        for (int j = 0; j < 4096; j++)
            o[i * 4096 + j] = a[i * 4096 + j] * b[j] + ci;
    }
}

static void exp_add(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 4096; i++)
        for (int j = 0; j < 4096; j++)
            o[i * 4096 + j] = expf(a[i * 4096 + j]) + b[j];
}

static void leaky_relu(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0);
    for (size_t i = 0; i < (size_t)4096 * 4096; i++)
        o[i] = a[i] > 0 ? a[i] : 0.1f * a[i];
}

static void small_3x4(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            o[i * 4 + j] = a[i * 4 + j] + b[j];
}

static void small_8x8(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            o[i * 8 + j] = a[i * 8 + j] * b[i];
}

/* clip((x - m) * s, -1, 1) over NCHW (16,64,128,128), m and s per channel */
static void clip_norm(void *out, const void *const *in)
{
    float *o = out;
    const float *x = F(0), *m = F(1), *s = F(2);
    for (int n = 0; n < 16; n++)
        for (int c = 0; c < 64; c++) {
            size_t base = ((size_t)n * 64 + c) * 128 * 128;
            float mc = m[c], sc = s[c];
            for (int k = 0; k < 128 * 128; k++) {
                float v = (x[base + k] - mc) * sc;
                v = v > -1.0f ? v : -1.0f;
                o[base + k] = v < 1.0f ? v : 1.0f;
            }
        }
}

static void minmax_norm(void *out, const void *const *in)
{
    float *o = out;
    const float *x = F(0), *s = F(1), *m = F(2);
    for (int i = 0; i < 4096; i++)
        for (int j = 0; j < 4096; j++) {
            float v = x[i * 4096 + j] * s[j] + m[j];
            v = v > 0.0f ? v : 0.0f;
            o[i * 4096 + j] = v < 6.0f ? v : 6.0f;
        }
}

static void where_u8(void *out, const void *const *in)
{
    uint8_t *o = out;
    const uint8_t *a = in[0];
    for (size_t i = 0; i < (size_t)4096 * 4096; i++)
        o[i] = a[i] > 100 ? a[i] : 0;
}

static void image_gain(void *out, const void *const *in)
{
    float *o = out;
    const float *img = F(0), *g = F(1);
    float g0 = g[0], g1 = g[1], g2 = g[2];
    for (size_t p = 0; p < (size_t)1080 * 1920; p++) {
        o[3 * p] = img[3 * p] * g0;
        o[3 * p + 1] = img[3 * p + 1] * g1;
        o[3 * p + 2] = img[3 * p + 2] * g2;
    }
}

static void small_16(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            o[i * 4 + j] = a[i * 4 + j] + b[j];
}

static void small_32(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            o[i * 8 + j] = a[i * 8 + j] * b[i];
}

static void layer_norm(void *out, const void *const *in)
{
    float *o = out;
    const float *x = F(0), *m = F(1), *v = F(2);
    for (int i = 0; i < 4096; i++) {
        float mi = m[i], r = sqrtf(v[i] + 1e-5f);
        for (int j = 0; j < 1024; j++)
            o[i * 1024 + j] = (x[i * 1024 + j] - mi) / r;
    }
}

static void transposed_b(void *out, const void *const *in)
{
    enum { N = 2048 };
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int ib = 0; ib < N; ib += TB)
        for (int jb = 0; jb < N; jb += TB)
            for (int i = ib; i < ib + TB; i++)
                for (int j = jb; j < jb + TB; j++)
                    o[(size_t)i * N + j] = a[(size_t)i * N + j] + b[(size_t)j * N + i];
}

static void neg_inner(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 4096; i++) {
        const float *row = a + (size_t)i * 4096; /* element [i,0]; [i,j] is row[-j] */
        for (int j = 0; j < 4096; j++)
            o[(size_t)i * 4096 + j] = row[-j] + b[j];
    }
}

/* ---- output views and reductions (issue 12) ----
 * The float sums add in one float accumulator per output element, as a
 * programmer writes them (gcc -O3 does not vectorise a float sum along the
 * summed loop without -ffast-math; sum_cols and grad_b sum along the outer
 * loop, so their inner loop vectorises).  The driver compares reductions
 * with a relative tolerance. */

/* a (4096,4096) summed over its last axis -> (4096,1) */
static void sum_rows(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0);
    for (int i = 0; i < 4096; i++) {
        float s = 0;
        for (int j = 0; j < 4096; j++)
            s += a[(size_t)i * 4096 + j];
        o[i] = s;
    }
}

/* a (4096,4096) summed over its first axis -> (1,4096) */
static void sum_cols(void *out, const void *const *in)
{
    float *o = out;
    const float *a = F(0);
    for (int j = 0; j < 4096; j++)
        o[j] = 0;
    for (int i = 0; i < 4096; i++)
        for (int j = 0; j < 4096; j++)
            o[j] += a[(size_t)i * 4096 + j];
}

/* g * a, both (4096,4096), summed to b's shape (4096,): the gradient of b */
static void grad_b(void *out, const void *const *in)
{
    float *o = out;
    const float *g = F(0), *a = F(1);
    for (int j = 0; j < 4096; j++)
        o[j] = 0;
    for (int i = 0; i < 4096; i++)
        for (int j = 0; j < 4096; j++)
            o[j] += g[(size_t)i * 4096 + j] * a[(size_t)i * 4096 + j];
}

/* a (N,N) + b (N,) written into a transposed view (strides [1,N]): result
 * [i,j] goes to o[j*N + i]; 32x32 blocks, i innermost (contiguous stores,
 * strided loads: a strided store would first read each line it writes) */
static void transposed_out(void *out, const void *const *in)
{
    enum { N = 2048 };
    float *o = out;
    const float *a = F(0), *b = F(1);
    for (int jb = 0; jb < N; jb += TB)
        for (int ib = 0; ib < N; ib += TB)
            for (int j = jb; j < jb + TB; j++) {
                float bj = b[j];
                for (int i = ib; i < ib + TB; i++)
                    o[(size_t)j * N + i] = a[(size_t)i * N + j] + bj;
            }
}

/* mean of a * a over the rows of a f64 (4096,2048) -> (4096,1) */
static void mean_rows_f64(void *out, const void *const *in)
{
    double *o = out;
    const double *a = in[0];
    for (int i = 0; i < 4096; i++) {
        double s = 0;
        for (int j = 0; j < 2048; j++)
            s += a[(size_t)i * 2048 + j] * a[(size_t)i * 2048 + j];
        o[i] = s / 2048;
    }
}

/* a (2048,2048) + b (2048,) in f32, stored as f64 */
static void cast_out(void *out, const void *const *in)
{
    double *o = out;
    const float *a = F(0), *b = F(1);
    for (int i = 0; i < 2048; i++)
        for (int j = 0; j < 2048; j++)
            o[(size_t)i * 2048 + j] = a[(size_t)i * 2048 + j] + b[j];
}

static const struct {
    const char *name;
    hand_fn fn;
} hands[] = {
    {"add_row_4096", add_row_4096}, {"outer_4096", outer_4096}, {"mul_4d", mul_4d},
    {"add_row_1000", add_row_1000}, {"transposed", transposed}, {"add_i32", add_i32},
    {"add_i8", add_i8},             {"fma3", fma3},             {"exp_add", exp_add},
    {"leaky_relu", leaky_relu},     {"small_3x4", small_3x4},   {"small_8x8", small_8x8},
    {"clip_norm", clip_norm},       {"minmax_norm", minmax_norm}, {"where_u8", where_u8},
    {"image_gain", image_gain},     {"small_16", small_16},     {"small_32", small_32},
    {"layer_norm", layer_norm},     {"transposed_b", transposed_b}, {"neg_inner", neg_inner},
    {"sum_rows", sum_rows},         {"sum_cols", sum_cols},     {"grad_b", grad_b},
    {"transposed_out", transposed_out}, {"mean_rows_f64", mean_rows_f64},
    {"cast_out", cast_out},
};

hand_fn hand_lookup(const char *name)
{
    for (size_t i = 0; i < sizeof hands / sizeof hands[0]; i++)
        if (strcmp(hands[i].name, name) == 0)
            return hands[i].fn;
    return NULL;
}

/* Reads every byte of INPUTS (32-byte loads, folded into a sink so they are
 * not dropped) and writes OUT_BYTES at OUT with streaming stores. */
volatile uint32_t hand_sink;

void hand_nt_bound(const void *const *inputs, const size_t *input_bytes, int count, void *out,
                   size_t out_bytes)
{
    __m256i acc = _mm256_setzero_si256();
    uint32_t tail = 0;
    for (int k = 0; k < count; k++) {
        const char *p = inputs[k];
        size_t n = input_bytes[k], i = 0;
        for (; i + 128 <= n; i += 128) {
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(p + i));
            __m256i x1 = _mm256_loadu_si256((const __m256i *)(p + i + 32));
            __m256i x2 = _mm256_loadu_si256((const __m256i *)(p + i + 64));
            __m256i x3 = _mm256_loadu_si256((const __m256i *)(p + i + 96));
            acc = _mm256_xor_si256(acc, _mm256_or_si256(_mm256_xor_si256(x0, x1), _mm256_xor_si256(x2, x3)));
        }
        for (; i < n; i++)
            tail += (unsigned char)p[i];
    }
    char *o = out;
    size_t i = 0;
    /* head up to 32-byte alignment, then streaming stores, then the tail */
    while (i < out_bytes && ((uintptr_t)(o + i) & 31))
        o[i++] = 0;
    __m256 zero = _mm256_castsi256_ps(acc);
    zero = _mm256_and_ps(zero, _mm256_setzero_ps());
    for (; i + 32 <= out_bytes; i += 32)
        _mm256_stream_ps((float *)(o + i), zero);
    for (; i < out_bytes; i++)
        o[i] = 0;
    _mm_sfence();
    hand_sink = (uint32_t)_mm256_extract_epi32(acc, 0) + tail;
}
