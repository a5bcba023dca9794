/* microkernels.c - the per-element work of long inner runs, compiled by gcc
 * with optimisation and vectorisation, called by tcc-compiled kernels.
 *
 * tcc compiles the specialised outer structure of a kernel in well under a
 * millisecond but does not vectorise; gen/emit.c therefore hands each long
 * contiguous inner run (in tiles, see emit.c) to these functions, one call
 * per operation per tile, and gen/jit.c gives tcc their addresses.  Every
 * function exists in an AVX2 clone and a baseline x86-64 clone, the binary
 * operations, unary operations and casts also in an AVX-512 one (see
 * CLONES_WIDE) (target_clones): the loader picks one by the CPU at run time.
 *
 * The call ABI is kept plain so that tcc's SysV calls need nothing special:
 *
 *   binary   void bcg_mk_OP_T(T *out, const T *a, long sa, const T *b, long sb, long n)
 *   compare  void bcg_mk_OP_T(u8 *out, const T *a, long sa, const T *b, long sb, long n)
 *   where    void bcg_mk_where_T(T *out, const u8 *c, long sc, const T *a, long sa,
 *                                const T *b, long sb, long n)
 *   unary    void bcg_mk_OP_T(T *out, const T *a, long sa, long n)
 *   test     void bcg_mk_OP_T(u8 *out, const T *a, long sa, long n)
 *            (isnan, isinf, isfinite, signbit; see "every other row")
 *   streaming stores (see "streaming stores"): bcg_mk_OP_T_nt, with the
 *            arguments of the binary, compare or where function
 *   rows     void bcg_mk_OP_T_rows(OUT_T *out, long ro, const T *a, long sa,
 *                                  long ra, const T *b, long sb, long rb,
 *                                  long n, long rows, long stream)
 *            (binary and compare: see BINARY_NT)
 *   fence    void bcg_mk_fence(void)
 *   sums     void bcg_mk_sum16_f32(double *acc, const float *x, long sx, long n)
 *            void bcg_mk_sum16_f64(double *acc, double *comp, const double *x,
 *                                  long sx, long n)
 *            void bcg_mk_accadd_f32(double *acc, const float *x, long sx, long n)
 *            void bcg_mk_accadd_f64(double *acc, double *comp, const double *x,
 *                                   long sx, long n)
 *            void bcg_mk_accadd_rows_f32(double *acc, const float *x, long sx,
 *                                        long rx, long rows, long n)
 *            void bcg_mk_accadd_rows_f64(double *acc, double *comp,
 *                                        const double *x, long sx, long rx,
 *                                        long rows, long n)
 *            void bcg_mk_OP_accadd_rows_T(double *acc, [double *comp,]
 *                                         const T *a, long sa, long ra,
 *                                         const T *b, long sb, long rb,
 *                                         long rows, long n)
 *            void bcg_mk_sum16_rows_f32(double *sums, const float *x, long rx,
 *                                       long sx, long n, long rows)
 *            (see "reductions")
 *   casts    void bcg_mk_cast_F_T(T *out, const F *a, long sa, long n)
 *            (see "conversions")
 *   2-D      void bcg_mk_gather_rows_BITS(void *dst, const void *src, long rows,
 *                                         long run, long ro, long si)
 *            void bcg_mk_scatter_rows_BITS(void *dst, long ro, long si,
 *                                          const void *src, long rows, long run)
 *            (see "2-D tiles")
 *
 * `out` is contiguous; each input has a stride in elements: 1 (contiguous),
 * 0 (one value for the whole run) or anything else (strided).  Each
 * function branches once on the strides to a loop gcc vectorises.  `out`
 * may be exactly one of the inputs (in-place kernels, or a temporary
 * reused), never a partial overlap.
 *
 * Results are those of docs/semantics.md, bit for bit the straight-line
 * code's: integer arithmetic wraps (computed in the unsigned type),
 * minimum/maximum propagate NaN and return B when equal, comparisons give 0
 * or 1, `where` takes any non-zero condition byte as true.  IEEE + - * /,
 * sqrt, floor and ceil are correctly rounded whether vectorised or not; the
 * other functions (exp, log, sin, cos, tanh) call the C library per element,
 * so they return exactly what libm returns to the straight-line code, except
 * the vectorised polynomials (the f32 functions below, f64 exp and log), which
 * are within their stated ulp bounds.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAM 1
#endif
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "runtime.h"

/* CLONES_WIDE adds an AVX-512 clone (x86-64-v4: the vectors the cc
 * backend's -march=native gets on such a CPU).  Measured in one process
 * against the AVX2 clones (bench/sweep --quick, three runs each): `2 + a`
 * over 4180 i16 went 120 -> 59 ns, float divisions, casts and
 * minimum/maximum 1.3-1.5x faster; but comparisons, where() and the
 * gathers lost up to 2x on short tiles and strided runs (nested i16 selects
 * 0.15 -> 0.07 of the cc backend), so those keep AVX2. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#define CLONES_WIDE __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define CLONES
#define CLONES_WIDE
#endif

/* ---- the loop shapes ------------------------------------------------------ */

/* One 64-byte line from BUF (anywhere) to OUT (64-byte aligned) with
 * non-temporal stores; see "streaming stores" below. */
static inline void stream_line(void *out, const void *buf)
{
#ifdef HAVE_STREAM
    const __m128i *s = buf;
    __m128i *d = out;
    _mm_stream_si128(d, _mm_loadu_si128(s));
    _mm_stream_si128(d + 1, _mm_loadu_si128(s + 1));
    _mm_stream_si128(d + 2, _mm_loadu_si128(s + 2));
    _mm_stream_si128(d + 3, _mm_loadu_si128(s + 3));
#else
    memcpy(out, buf, 64);
#endif
}

/* Elements of OUT before its first 64-byte boundary (all N when OUT is
 * not even aligned to its element, which then never streams). */
static inline long stream_head(const void *out, size_t size, long n)
{
    uintptr_t p = (uintptr_t)out;
    long head = (long)(((uintptr_t)0 - p) & 63) / (long)size;
    return p % size != 0 || head > n ? n : head;
}

/* The _nt variant of a binary microkernel: the same values, computed
 * STREAM_BLOCK bytes at a time into a block gcc keeps in registers and
 * written with streaming stores; the head before the first 64-byte
 * boundary and the tail go through the plain function.  (A 64-byte block
 * was only partly vectorised by gcc 12, with store-forwarding stalls; 256
 * bytes vectorise whole.)  And the _rows form, for short runs: ROWS runs
 * of N elements, run r at out + r * ro, a + r * ra and b + r * rb, each
 * written by the plain function or (STREAM) the _nt one, so that a kernel
 * whose inner runs are short makes one call for its two innermost loops
 * instead of one per run (gen/emit.c, "rows of short runs"). */
#define STREAM_BLOCK 256
/* _rows with a periodic operand: runs of at most PERIODIC_MAX elements,
 * laid out in a tile of PERIODIC_TILE (a whole number of periods). */
#define PERIODIC_MAX 256
#define PERIODIC_TILE 1024
/* The tile is laid out on every call, so a call covers a few tiles at
 * least (mul_4d's calls, 64 runs of 64, laid out 1024 elements with a
 * division each for 4096 results: 15 ms against the 64 plain calls' 3). */
#define PERIODIC_MIN_ELEMENTS (4 * PERIODIC_TILE)

/* The periodic tile's length: a whole number of periods N that is also a
 * whole number of streaming blocks (BLOCK elements of the output), so that
 * every call but the last of a streaming _rows starts and ends on a block
 * and none writes a head or tail with plain stores (image_gain's runs of 3:
 * 1023-element calls, each with a plain head and tail); else the most
 * periods the tile holds. */
static long periodic_span(long n, long block)
{
    long a = n, b = block;
    while (b) {
        long r = a % b;
        a = b;
        b = r;
    }
    long common = n / a * block; /* lcm(n, block) */
    if (common <= PERIODIC_TILE)
        return (PERIODIC_TILE / common) * common;
    return (PERIODIC_TILE / n) * n;
}
#define STREAM_LOOP(OUT_T, LOAD_X, LOAD_Y, EXPR)                                  \
    for (; i + (long)(STREAM_BLOCK / sizeof(OUT_T)) <= n;                         \
         i += (long)(STREAM_BLOCK / sizeof(OUT_T))) {                             \
        _Alignas(64) OUT_T block[STREAM_BLOCK / sizeof(OUT_T)];                   \
        for (long k = 0; k < (long)(STREAM_BLOCK / sizeof(OUT_T)); k++) {         \
            LOAD_X;                                                               \
            LOAD_Y;                                                               \
            block[k] = (OUT_T)(EXPR);                                             \
        }                                                                         \
        for (int line = 0; line < STREAM_BLOCK / 64; line++)                      \
            stream_line((unsigned char *)(out + i) + 64 * line,                   \
                        (const unsigned char *)block + 64 * line);                \
    }

#define BINARY_NT(NAME, T, OUT_T, EXPR)                                                        \
    CLONES void bcg_mk_##NAME##_nt(OUT_T *out, const T *a, long sa, const T *b, long sb,       \
                                   long n)                                                     \
    {                                                                                          \
        long i = stream_head(out, sizeof(OUT_T), n);                                           \
        if (i > 0)                                                                             \
            bcg_mk_##NAME(out, a, sa, b, sb, i);                                               \
        if (sa == 1 && sb == 1) {                                                              \
            STREAM_LOOP(OUT_T, T x = a[i + k], T y = b[i + k], EXPR)                           \
        } else if (sa == 1 && sb == 0) {                                                       \
            const T y0 = b[0];                                                                 \
            STREAM_LOOP(OUT_T, T x = a[i + k], T y = y0, EXPR)                                 \
        } else if (sa == 0 && sb == 1) {                                                       \
            const T x0 = a[0];                                                                 \
            STREAM_LOOP(OUT_T, T x = x0, T y = b[i + k], EXPR)                                 \
        } /* other strides: plain stores (the reads, not the writes, limit them) */            \
        if (i < n)                                                                             \
            bcg_mk_##NAME(out + i, a + i * sa, sa, b + i * sb, sb, n - i);                     \
    }                                                                                          \
    void bcg_mk_##NAME##_rows(OUT_T *out, long ro, const T *a, long sa, long ra, const T *b,   \
                              long sb, long rb, long n, long rows, long stream)                \
    {                                                                                          \
        const bool inline_shape = (sa == 1 && (sb == 0 || sb == 1)) || (sa == 0 && sb == 1);   \
        /* runs that are whole streaming blocks on 64-byte boundaries: one loop     */      \
        if (stream && inline_shape && n > 0 && stream_head(out, sizeof(OUT_T), n) == 0 &&     \
            (ro * (long)sizeof(OUT_T)) % 64 == 0 && (n * (long)sizeof(OUT_T)) % STREAM_BLOCK == 0) { \
            rows_stream_##NAME(out, ro, a, sa, ra, b, sb, rb, n, rows);                        \
            return;                                                                            \
        }                                                                                      \
        /* short runs over a contiguous output and operand, the other operand        */      \
        /* repeating with period n (an image times a per-channel gain): the repeats  */      \
        /* are laid out once in a tile, and the runs go as long contiguous calls     */      \
        if (n > 0 && n <= PERIODIC_MAX && ro == n && rows * n >= PERIODIC_MIN_ELEMENTS) {      \
            bool a_repeats = ra == 0 && sb == 1 && rb == n;                                    \
            bool b_repeats = rb == 0 && sa == 1 && ra == n;                                    \
            if (a_repeats || b_repeats) {                                                      \
                T tile[PERIODIC_TILE];                                                         \
                const long span = periodic_span(n, STREAM_BLOCK / (long)sizeof(OUT_T));        \
                const T *pattern = a_repeats ? a : b;                                          \
                const long step = a_repeats ? sa : sb;                                         \
                for (long j = 0; j < n; j++) /* one period, then doubled */                    \
                    tile[j] = pattern[j * step];                                               \
                for (long j = n; j < span; j += j < span - j ? j : span - j)                   \
                    memcpy(tile + j, tile, (size_t)(j < span - j ? j : span - j) * sizeof(T)); \
                const long total = rows * n;                                                   \
                for (long at = 0; at < total; at += span) {                                    \
                    long count = total - at < span ? total - at : span;                        \
                    const T *x = a_repeats ? tile : a + at, *y = a_repeats ? b + at : tile;    \
                    if (stream)                                                                \
                        bcg_mk_##NAME##_nt(out + at, x, 1, y, 1, count);                       \
                    else                                                                       \
                        bcg_mk_##NAME(out + at, x, 1, y, 1, count);                            \
                }                                                                              \
                return;                                                                        \
            }                                                                                  \
        }                                                                                      \
        if (!stream && inline_shape) {                                                         \
            rows_inline_##NAME(out, ro, a, sa, ra, b, sb, rb, n, rows);                        \
            return;                                                                            \
        }                                                                                      \
        for (long r = 0; r < rows; r++) {                                                      \
            if (stream)                                                                        \
                bcg_mk_##NAME##_nt(out + r * ro, a + r * ra, sa, b + r * rb, sb, n);           \
            else                                                                               \
                bcg_mk_##NAME(out + r * ro, a + r * ra, sa, b + r * rb, sb, n);                \
        }                                                                                      \
    }

/* The _nt variant of `where`, as BINARY_NT: the condition is read as bytes. */
#define WHERE_NT(SUFFIX, T)                                                                   \
    CLONES void bcg_mk_where_##SUFFIX##_nt(T *out, const uint8_t *c, long sc, const T *a,     \
                                           long sa, const T *b, long sb, long n)              \
    {                                                                                         \
        long i = stream_head(out, sizeof(T), n);                                              \
        if (i > 0)                                                                            \
            bcg_mk_where_##SUFFIX(out, c, sc, a, sa, b, sb, i);                               \
        if (sc == 1 && sa == 1 && sb == 1) {                                                  \
            STREAM_LOOP(T, T x = a[i + k], T y = b[i + k], c[i + k] != 0 ? x : y)             \
        } else if (sc == 1 && sa == 1 && sb == 0) {                                           \
            const T y0 = b[0];                                                                \
            STREAM_LOOP(T, T x = a[i + k], T y = y0, c[i + k] != 0 ? x : y)                   \
        } else if (sc == 1 && sa == 0 && sb == 1) {                                           \
            const T x0 = a[0];                                                                \
            STREAM_LOOP(T, T x = x0, T y = b[i + k], c[i + k] != 0 ? x : y)                   \
        } /* other strides: plain stores */                                                   \
        if (i < n)                                                                            \
            bcg_mk_where_##SUFFIX(out + i, c + i * sc, sc, a + i * sa, sa, b + i * sb, sb,    \
                                  n - i);                                                     \
    }

/* Elements I to I + M of a run of stride S from SRC into the contiguous
 * block DST: strided operands (a reversed view's -1, a column's long
 * stride, a broadcast's 0 among strided others) are first laid out in a
 * block on the stack, so that the operation itself is the loop gcc
 * vectorises and branch-free (a select written over strided loads kept a
 * branch per element: where() over a reversed i16 run took 8.5 ns an
 * element against 0.08 contiguous).  A reversed run is copied by a loop
 * gcc vectorises with permutes. */
#define GATHER_BLOCK 256
#define GATHER_BYTES 2048 /* a block of the binary and unary kernels' gathers */
/* The loops live in one function per element size, which GATHER calls once
 * a block: expanded inside every binary, unary and where kernel they were
 * most of the build's time (with the AVX-512 clones, 9 minutes of gcc
 * against 3.5), and a call a block costs nothing measurable. */
#define GATHER_SIZE(BITS)                                                                   \
    typedef uint##BITS##_t __attribute__((may_alias)) gather_u##BITS;                       \
    __attribute__((noinline)) CLONES static void gather_##BITS(void *dst_, const void *src_, \
                                                              long s, long m)              \
    {                                                                                       \
        gather_u##BITS *dst = dst_;                                                         \
        const gather_u##BITS *src = src_;                                                   \
        if (s == -1) {                                                                      \
            for (long g = 0; g < m; g++)                                                    \
                dst[g] = src[-g];                                                           \
        } else if (s == 0) {                                                                \
            for (long g = 0; g < m; g++)                                                    \
                dst[g] = src[0];                                                            \
        } else if (s == 2) {                                                                \
            for (long g = 0; g < m; g++)                                                    \
                dst[g] = src[2 * g];                                                        \
        } else if (s == 3) {                                                                \
            for (long g = 0; g < m; g++)                                                    \
                dst[g] = src[3 * g];                                                        \
        } else if (s == 4) {                                                                \
            for (long g = 0; g < m; g++)                                                    \
                dst[g] = src[4 * g];                                                        \
        } else {                                                                            \
            for (long g = 0; g < m; g++)                                                    \
                dst[g] = src[g * s];                                                        \
        }                                                                                   \
    }
GATHER_SIZE(8)
GATHER_SIZE(16)
GATHER_SIZE(32)
GATHER_SIZE(64)
#define GATHER(T, DST, SRC, S, I, M)                                              \
    do {                                                                          \
        const T *gather_from = (SRC) + (I) * (S);                                 \
        if ((S) == 1)                                                             \
            memcpy((DST), gather_from, (size_t)(M) * sizeof(T));                  \
        else if (sizeof(T) == 1)                                                  \
            gather_8((DST), gather_from, (S), (M));                               \
        else if (sizeof(T) == 2)                                                  \
            gather_16((DST), gather_from, (S), (M));                              \
        else if (sizeof(T) == 4)                                                  \
            gather_32((DST), gather_from, (S), (M));                              \
        else                                                                      \
            gather_64((DST), gather_from, (S), (M));                              \
    } while (0)

/* A contiguous run of N elements, OUT[i] = EXPR (LOAD declaring EXPR's
 * operands at index i), of an operation gcc vectorises.  With 8- and
 * 16-bit elements (TAIL 1, T and OUT_T both at most 2 bytes) and N past
 * RUN_BLOCK bytes but not a multiple of them, the last RUN_BLOCK bytes of
 * the run are computed first into a block (whole vectors: the count is a
 * constant), the run up to its last whole block by the vectorised loop,
 * and the block stored last over the run's end.  gcc's own remainder was
 * a 32-byte vector and then up to 31 elements one at a time: most of the
 * time of u8 a * b over 64 runs of 125 (sweep seed 82, 0.48 of the cc
 * backend, whose run length is a constant; the scalar tail of
 * rows_inline_mul_u8's x86-64-v4 clone took half of the samples).  The
 * block is computed from the inputs before any store, so the output may be
 * an input itself (in place, the same pointer: the only overlap bcg_run
 * accepts) and the elements written twice get the same value twice.
 * Operations that do not vectorise (division) keep the plain loop (TAIL
 * 0): a block of 32 or 64 scalar elements would cost more than the tail.
 * Runs of a quarter to two RUN_BLOCKs go as two overlapping blocks, no
 * loop (RUN_HALVES). */
#define RUN_BLOCK 64
#define RUN(TAIL, T, OUT_T, OUT, N, LOAD, EXPR)                                 \
    do {                                                                        \
        enum { RUN_W = RUN_BLOCK / sizeof(OUT_T) };                             \
        const long run_n = (N);                                                 \
        const bool run_small = (TAIL) && sizeof(T) <= 2 && sizeof(OUT_T) <= 2;  \
        if (run_small && run_n >= RUN_W && run_n < 2 * RUN_W) {                 \
            RUN_HALVES(OUT_T, OUT, run_n, RUN_W, LOAD, EXPR);                   \
            break;                                                              \
        }                                                                       \
        if (run_small && run_n >= RUN_W / 2 && run_n < RUN_W) {                 \
            RUN_HALVES(OUT_T, OUT, run_n, RUN_W / 2, LOAD, EXPR);               \
            break;                                                              \
        }                                                                       \
        if (run_small && run_n >= RUN_W / 4 && run_n < RUN_W / 2) {             \
            RUN_HALVES(OUT_T, OUT, run_n, RUN_W / 4, LOAD, EXPR);               \
            break;                                                              \
        }                                                                       \
        const bool run_tail = run_small && run_n > RUN_W && run_n % RUN_W != 0; \
        long run_m = run_n;                                                     \
        _Alignas(64) OUT_T run_last[RUN_W];                                     \
        if (run_tail) {                                                         \
            for (long run_k = 0; run_k < RUN_W; run_k++) {                      \
                const long i = run_n - RUN_W + run_k;                           \
                LOAD;                                                           \
                run_last[run_k] = (OUT_T)(EXPR);                                \
            }                                                                   \
            run_m = run_n - run_n % RUN_W;                                      \
        }                                                                       \
        for (long i = 0; i < run_m; i++) {                                      \
            LOAD;                                                               \
            (OUT)[i] = (OUT_T)(EXPR);                                           \
        }                                                                       \
        if (run_tail)                                                           \
            memcpy((OUT) + run_n - RUN_W, run_last, sizeof run_last);           \
    } while (0)

/* RUN's runs of H to 2H - 1 elements (H RUN_BLOCK bytes, a half or a
 * quarter of them): the first H and the last H elements, two blocks of whole
 * vectors that overlap, both computed before either is stored (in place:
 * see RUN).  gcc's loop did all of such a run in its scalar remainder
 * (the x86-64-v4 clone's vectors are RUN_BLOCK bytes): u8 a - 3 over
 * 3125 rows of 48 whose rows lie apart, one _rows call, cc / JIT same
 * process 0.09 (16 us, three quarters of the samples in the remainder's
 * byte loop; see the commit). */
#define RUN_HALVES(OUT_T, OUT, N, H, LOAD, EXPR)                                \
    do {                                                                        \
        _Alignas(64) OUT_T run_first[H], run_second[H];                         \
        for (long run_k = 0; run_k < (H); run_k++) {                            \
            const long i = run_k;                                               \
            LOAD;                                                               \
            run_first[run_k] = (OUT_T)(EXPR);                                   \
        }                                                                       \
        for (long run_k = 0; run_k < (H); run_k++) {                            \
            const long i = (N) - (H) + run_k;                                   \
            LOAD;                                                               \
            run_second[run_k] = (OUT_T)(EXPR);                                  \
        }                                                                       \
        memcpy((OUT), run_first, sizeof run_first);                             \
        memcpy((OUT) + (N) - (H), run_second, sizeof run_second);               \
    } while (0)

/* out[i] = EXPR(x, y) over the four stride cases of two inputs; TAIL: see RUN. */
#define BINARY(NAME, T, OUT_T, EXPR) BINARY_CLONES(NAME, T, OUT_T, EXPR, CLONES_WIDE, 0)
#define BINARY_CLONES(NAME, T, OUT_T, EXPR, CL, TAIL)                                       \
    CL void bcg_mk_##NAME(OUT_T *out, const T *a, long sa, const T *b, long sb, long n)     \
    {                                                                                       \
        if (sa == 1 && sb == 1) {                                                           \
            RUN(TAIL, T, OUT_T, out, n, T x = a[i]; T y = b[i], EXPR);                      \
        } else if (sa == 1 && sb == 0) {                                                    \
            const T y = b[0];                                                               \
            RUN(TAIL, T, OUT_T, out, n, T x = a[i], EXPR);                                  \
        } else if (sa == 0 && sb == 1) {                                                    \
            const T x = a[0];                                                               \
            RUN(TAIL, T, OUT_T, out, n, T y = b[i], EXPR);                                  \
        } else {                                                                            \
            enum { B = GATHER_BYTES / sizeof(T) };                                          \
            for (long i = 0; i < n; i += B) {                                               \
                const long m = n - i < B ? n - i : B;                                       \
                T xs[B], ys[B];                                                             \
                if (sb == 0) {                                                              \
                    const T y = b[0];                                                       \
                    GATHER(T, xs, a, sa, i, m);                                             \
                    for (long k = 0; k < m; k++) {                                          \
                        T x = xs[k];                                                        \
                        out[i + k] = (OUT_T)(EXPR);                                         \
                    }                                                                       \
                } else if (sa == 0) {                                                       \
                    const T x = a[0];                                                       \
                    GATHER(T, ys, b, sb, i, m);                                             \
                    for (long k = 0; k < m; k++) {                                          \
                        T y = ys[k];                                                        \
                        out[i + k] = (OUT_T)(EXPR);                                         \
                    }                                                                       \
                } else {                                                                    \
                    const T *xp = a + i, *yp = b + i;                                       \
                    if (sa != 1) {                                                          \
                        GATHER(T, xs, a, sa, i, m);                                         \
                        xp = xs;                                                            \
                    }                                                                       \
                    if (sb != 1) {                                                          \
                        GATHER(T, ys, b, sb, i, m);                                         \
                        yp = ys;                                                            \
                    }                                                                       \
                    for (long k = 0; k < m; k++) {                                          \
                        T x = xp[k], y = yp[k];                                             \
                        out[i + k] = (OUT_T)(EXPR);                                         \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }

#define UNARY(NAME, T, EXPR)                                              \
    CLONES_WIDE void bcg_mk_##NAME(T *out, const T *a, long sa, long n)   \
    {                                                                     \
        if (sa == 1) {                                                    \
            for (long i = 0; i < n; i++) {                                \
                T x = a[i];                                               \
                out[i] = (T)(EXPR);                                       \
            }                                                             \
        } else {                                                          \
            enum { B = GATHER_BYTES / sizeof(T) };                        \
            for (long i = 0; i < n; i += B) {                             \
                const long m = n - i < B ? n - i : B;                     \
                T xs[B];                                                  \
                GATHER(T, xs, a, sa, i, m);                               \
                for (long k = 0; k < m; k++) {                            \
                    T x = xs[k];                                          \
                    out[i + k] = (T)(EXPR);                               \
                }                                                         \
            }                                                             \
        }                                                                 \
    }

/* The condition is read as bytes; the common case is a contiguous
 * comparison result with both values contiguous or one a scalar.  Both
 * values are loaded before the select, so the select is a blend gcc
 * vectorises: written `c ? a[i] : y`, the load of a[i] is conditional and
 * gcc 12 kept a branch per element, which mispredicts on random data
 * (where(a > 100, a, 7) over u8[4096,4096]: 67 ms, 4 ns an element). */
#define WHERE(SUFFIX, T)                                                                      \
    CLONES void bcg_mk_where_##SUFFIX(T *out, const uint8_t *c, long sc, const T *a, long sa, \
                                      const T *b, long sb, long n)                            \
    {                                                                                         \
        if (sc == 1 && sa == 1 && sb == 1) {                                                  \
            RUN(1, T, T, out, n, const T x = a[i]; const T y = b[i], c[i] != 0 ? x : y);      \
        } else if (sc == 1 && sa == 1 && sb == 0) {                                           \
            const T y = b[0];                                                                 \
            RUN(1, T, T, out, n, const T x = a[i], c[i] != 0 ? x : y);                        \
        } else if (sc == 1 && sa == 0 && sb == 1) {                                           \
            const T x = a[0];                                                                 \
            RUN(1, T, T, out, n, const T y = b[i], c[i] != 0 ? x : y);                        \
        } else if (sc == 1 && sa == 0 && sb == 0) {                                           \
            const T x = a[0], y = b[0];                                                       \
            RUN(1, T, T, out, n, (void)0, c[i] != 0 ? x : y);                                 \
        } else {                                                                              \
            for (long i = 0; i < n; i += GATHER_BLOCK) {                                      \
                const long m = n - i < GATHER_BLOCK ? n - i : GATHER_BLOCK;                   \
                T xs[GATHER_BLOCK], ys[GATHER_BLOCK];                                         \
                uint8_t cs[GATHER_BLOCK];                                                     \
                GATHER(uint8_t, cs, c, sc, i, m);                                             \
                GATHER(T, xs, a, sa, i, m);                                                   \
                GATHER(T, ys, b, sb, i, m);                                                   \
                for (long k = 0; k < m; k++) {                                                \
                    const T x = xs[k], y = ys[k];                                             \
                    out[i + k] = cs[k] != 0 ? x : y;                                          \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }

/* ---- f32 exp, log, sin, cos, tanh as vectorisable polynomials ----------------
 *
 * libm's expf and friends are calls gcc cannot vectorise (about 6 ns an
 * element here, against NumPy's SIMD exp).  Inside an "easy" range each
 * function below is straight-line float and integer arithmetic that gcc
 * turns into AVX2 code: Cody-Waite range reduction and the minimax
 * polynomials of Cephes (S. Moshier's single-precision library).  Outside
 * it (NaN, infinities, overflow, results or arguments that are subnormal,
 * sin/cos of large arguments) the element is recomputed by the C library,
 * so every special case is exactly libm's.  The code is compiled with
 * -std=c11 -ffp-contract=off (no contraction into fused multiply-adds,
 * though the x86-64-v4 clone has FMA), so every clone gives the same bits.
 *
 * Accuracy, measured against the double-precision C library rounded to
 * float over dense sweeps (tests/unit/test_microkernels.c checks the bounds
 * in make test; docs/semantics.md states them): see TRANSCENDENTAL_MAX_ULP
 * in internal.h. */

static inline uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* x in [-87, 88]: results stay normal and finite (one comparison, which
 * gcc vectorises where it does not vectorise two). */
static inline bool exp_easy(float x) { return fabsf(x - 0.5f) <= 87.5f; }

/* e^r for a reduced argument |r| <= ln 2 / 2 (Cephes' expf polynomial). */
static inline float exp_reduced(float r)
{
    float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * z + r + 1.0f;
}

static inline float exp_polynomial(float x)
{
    /* Clamped (NaN to the low end) so the conversion below is defined for
     * every input; elements outside the easy range are recomputed anyway. */
    x = x >= -88.0f ? x : -88.0f;
    x = x <= 89.0f ? x : 89.0f;
    /* n = round(x / ln 2) by the 1.5 * 2^23 trick (round to nearest even) */
    float n = x * 1.44269504088896341f + 12582912.0f;
    n -= 12582912.0f;
    float r = x - n * 0.693359375f;      /* ln 2 in two parts: the first is exact in n * */
    r = r - n * -2.12194440e-4f;
    float p = exp_reduced(r);
    int32_t e = (int32_t)n;
    return p * float_of((uint32_t)(e + 127) << 23);
}

/* Normal, positive and finite: the bits lie in [0x00800000, 0x7f7fffff]. */
static inline bool log_easy(float x) { return bits_of(x) - 0x00800000u < 0x7f000000u; }

static inline float log_polynomial(float x)
{
    uint32_t u = bits_of(x);
    int32_t e = (int32_t)(u >> 23) - 126;             /* x = m * 2^e, m in [0.5, 1) */
    float m = float_of((u & 0x007fffffu) | 0x3f000000u);
    int32_t small = m < 0.707106781186547524f;        /* then use 2m in [1, sqrt 2) */
    e -= small;
    m = small ? (m + m) - 1.0f : m - 1.0f;           /* both exact (Sterbenz) */
    float fe = (float)e;
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    y += -2.12194440e-4f * fe;
    y += -0.5f * z;
    float r = m + y;
    return r + 0.693359375f * fe;
}

/* |x| up to where the three-part reduction by pi/4 stays exact enough. */
#define SINCOS_EASY_LIMIT 512.0f
static inline bool sincos_easy(float x) { return fabsf(x) <= SINCOS_EASY_LIMIT; }

/* sin (COSINE 0) or cos (1) of x: reduce |x| by multiples of pi/4 to r in
 * [-pi/4, pi/4], then the octant picks the polynomial and the sign. */
static inline float sincos_polynomial(float x, int32_t cosine)
{
    float ax = fabsf(x);
    ax = ax <= SINCOS_EASY_LIMIT ? ax : 0.0f; /* NaN too: keeps the conversion defined */
    /* The reduction in double, pi/4 in two parts (the first with 31
     * significant bits, so j * its value is exact): near a zero of sin or
     * cos the result is far smaller than x, and Cephes' float reduction
     * loses hundreds of ulp there (measured: 478 at x = 505.796). */
    double d = (double)ax;
    int32_t j = (int32_t)(d * 1.27323954473516268615); /* 4 / pi */
    j = (j + 1) & ~1;
    double y = (double)j;
    float r = (float)((d - y * 0x1.921fb544p-1) - y * 0x1.0b4611a626331p-35);
    float z = r * r;
    float s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    float c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z +
               4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
    int32_t use_cosine = ((j & 2) != 0) ^ cosine;
    uint32_t negative = cosine ? (uint32_t)(((j + 2) & 4) != 0)
                               : (uint32_t)((j & 4) != 0) ^ (bits_of(x) >> 31);
    float q = use_cosine ? c : s;
    return float_of(bits_of(q) ^ (negative << 31));
}

static inline float sin_polynomial(float x) { return sincos_polynomial(x, 0); }
static inline float cos_polynomial(float x) { return sincos_polynomial(x, 1); }

/* exp(2|x|) stays easy. */
static inline bool tanh_easy(float x) { return fabsf(x) <= 43.0f; }

static inline float tanh_polynomial(float x)
{
    float ax = fabsf(x);
    float z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                    1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float s = exp_polynomial(ax + ax);
    float big = 1.0f - 2.0f / (s + 1.0f);
    big = float_of(bits_of(big) | (bits_of(x) & 0x80000000u));
    small = float_of(bits_of(small) | (bits_of(x) & 0x80000000u)); /* tanh(-0) = -0 */
    return ax < 0.625f ? small : big;
}

/* ---- issue 13: log1p, expm1, log2, log10, exp2, expit, tan, arctan, erf ----
 *
 * Built from the same pieces (Cephes' polynomials, the reductions above);
 * each "easy" range is where the polynomial is used, everything else (NaN,
 * infinities, overflow, subnormal results) goes to the scalar function, so
 * special values are exactly the straight-line code's.  Bounds: the
 * "vectorised" column of docs/semantics.md's accuracy table, checked by
 * tests/unit/test_accuracy.c. */

/* log(1 + x): log of u = 1 + x, corrected by the rounding of the sum
 * ((x - (u - 1)) / u, the first-order term), so small x keep their digits. */
static inline bool log1p_easy(float x) { return x > -1.0f && log_easy(1.0f + x); }

static inline float log1p_polynomial(float x)
{
    float u = 1.0f + x;
    u = log_easy(u) ? u : 1.0f; /* keeps the bit tricks defined; recomputed anyway */
    float y = log_polynomial(u) + (x - (u - 1.0f)) / u;
    return x == 0.0f ? x : y; /* (log1p(-0) = -0: the sum gave +0) */
}

/* log2 and log10: the natural log times the constant (one more rounding). */
static inline float log2_polynomial(float x) { return log_polynomial(x) * 1.44269504088896341f; }
static inline float log10_polynomial(float x) { return log_polynomial(x) * 0.434294481903251828f; }

/* 2^x: n = rint(x), r = x - n exact in [-0.5, 0.5], 2^r = e^(r ln 2). */
/* x in [-126, 127]: 2^n stays a normal float and the result finite */
static inline bool exp2_easy(float x) { return fabsf(x - 0.5f) <= 126.5f; }

static inline float exp2_polynomial(float x)
{
    x = x >= -127.0f ? x : -127.0f; /* NaN too: the conversion below stays defined */
    x = x <= 127.0f ? x : 127.0f;
    float n = (x + 12582912.0f) - 12582912.0f; /* rint by the 1.5 * 2^23 trick */
    float r = (x - n) * 0.693147180559945309f;
    float p = exp_reduced(r);
    return p * float_of((uint32_t)((int32_t)n + 127) << 23);
}

/* e^x - 1 = 2^n (e^r - 1) + (2^n - 1), x = n ln 2 + r, |r| <= ln 2 / 2: the
 * Taylor polynomial of e^r - 1 keeps small results exact; 2^n - 1 is exact. */
static inline bool expm1_easy(float x) { return fabsf(x) <= 87.0f; }

static inline float expm1_polynomial(float x)
{
    x = x >= -87.0f ? x : -87.0f;
    x = x <= 87.0f ? x : 87.0f;
    float n = x * 1.44269504088896341f + 12582912.0f;
    n -= 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float q = 2.7557319224e-6f;
    q = q * r + 2.4801587302e-5f;
    q = q * r + 1.9841269841e-4f;
    q = q * r + 1.3888888889e-3f;
    q = q * r + 8.3333333333e-3f;
    q = q * r + 4.1666666667e-2f;
    q = q * r + 1.6666666667e-1f;
    q = q * r + 0.5f;
    q = q * (r * r) + r;
    float scale = float_of((uint32_t)((int32_t)n + 127) << 23);
    float y = scale * q + (scale - 1.0f);
    return x == 0.0f ? x : y; /* (expm1(-0) = -0: the sum gave +0) */
}

/* The logistic sigmoid: e = e^-|x|, then e / (1 + e) for x < 0 and
 * 1 / (1 + e) otherwise (as the scalar helper, e^-|x| never overflows). */
static inline bool expit_easy(float x) { return fabsf(x) <= 87.0f; }

static inline float expit_polynomial(float x)
{
    float e = exp_polynomial(-fabsf(x));
    float d = 1.0f + e;
    return x < 0 ? e / d : 1.0f / d;
}

/* The scalar expit, as the kernels' helper and eval.c compute it. */
static inline float expit_scalar(float x)
{
    if (x < 0) {
        float e = expf(x);
        return e / (1 + e);
    }
    return 1 / (1 + expf(-x));
}

/* tan: the reduction of sin and cos (in double), Cephes' tanf polynomial on
 * [-pi/4, pi/4], -1/tan(r) in the odd quarter periods, x's sign. */
static inline float tan_polynomial(float x)
{
    float ax = fabsf(x);
    ax = ax <= SINCOS_EASY_LIMIT ? ax : 0.0f;
    double d = (double)ax;
    int32_t j = (int32_t)(d * 1.27323954473516268615);
    j = (j + 1) & ~1;
    double y = (double)j;
    float r = (float)((d - y * 0x1.921fb544p-1) - y * 0x1.0b4611a626331p-35);
    float z = r * r;
    float t = (((((9.38540185543e-3f * z + 3.11992232697e-3f) * z + 2.44301354525e-2f) * z +
                 5.34112807005e-2f) * z + 1.33387994085e-1f) * z + 3.33331568548e-1f) * z * r + r;
    t = (j & 2) ? -1.0f / t : t;
    return float_of(bits_of(t) ^ (bits_of(x) & 0x80000000u));
}

/* arctan: Cephes' atanf, |x| reduced to [0, tan(pi/8)] by pi/4 or pi/2. */
static inline bool arctan_easy(float x) { return x == x; }

static inline float arctan_polynomial(float x)
{
    float ax = fabsf(x);
    bool big = ax > 2.414213562373095f, middle = ax > 0.4142135623730950f;
    float base = big ? 1.5707963267948966f : middle ? 0.7853981633974483f : 0.0f;
    float u = big ? -1.0f / ax : middle ? (ax - 1.0f) / (ax + 1.0f) : ax;
    float z = u * u;
    float a = ((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z -
              3.33329491539e-1f;
    float r = base + (a * z * u + u);
    return float_of(bits_of(r) | (bits_of(x) & 0x80000000u));
}

/* erf: Cephes' erff polynomial for |x| < 1, +-1 from |x| >= 4 (erfc(4) is
 * below half an ulp of 1); between them the C library. */
static inline bool erf_easy(float x) { float ax = fabsf(x); return ax < 1.0f || ax >= 4.0f; }

static inline float erf_polynomial(float x)
{
    float z = x * x;
    float small = x * ((((((7.853861353153693e-5f * z - 8.010193625184903e-4f) * z +
                           5.188327685732524e-3f) * z - 2.685381193529856e-2f) * z +
                         1.128358514861418e-1f) * z - 3.761262582423300e-1f) * z +
                       1.128379165726710e+0f);
    float one = float_of(0x3f800000u | (bits_of(x) & 0x80000000u));
    return fabsf(x) < 1.0f ? small : one;
}

/* A block at a time: the polynomial over the whole block (vectorised, into
 * a stack buffer, so `out` may be the input itself), an or-reduction of
 * "not easy", and only when some element was not easy a scalar pass that
 * recomputes those with the C library. */
#define POLYNOMIAL_BLOCK 256
#define POLYNOMIAL(NAME, EASY, FUNCTION, LIBM)                                        \
    CLONES void bcg_mk_##NAME(float *out, const float *a, long sa, long n)            \
    {                                                                                 \
        float gathered[POLYNOMIAL_BLOCK], result[POLYNOMIAL_BLOCK];                   \
        for (long start = 0; start < n; start += POLYNOMIAL_BLOCK) {                  \
            long count = n - start < POLYNOMIAL_BLOCK ? n - start : POLYNOMIAL_BLOCK; \
            const float *x = a + start;                                               \
            if (sa != 1) {                                                            \
                for (long j = 0; j < count; j++)                                      \
                    gathered[j] = a[(start + j) * sa];                                \
                x = gathered;                                                         \
            }                                                                         \
            int32_t hard = 0;                                                         \
            for (long j = 0; j < count; j++) {                                        \
                result[j] = FUNCTION(x[j]);                                           \
                hard |= !EASY(x[j]);                                                  \
            }                                                                         \
            if (hard)                                                                 \
                for (long j = 0; j < count; j++)                                      \
                    if (!EASY(x[j]))                                                  \
                        result[j] = LIBM(x[j]);                                       \
            memcpy(out + start, result, (size_t)count * sizeof *out);                 \
        }                                                                             \
    }

/* ---- f64 exp, vectorised ------------------------------------------------------
 *
 * Written from the math (no other library's code): x = k ln 2 + r with
 * k = round(x / ln 2), found by adding 1.5 * 2^52 (which leaves k in the low
 * bits of the sum, and those bits give 2^k's exponent field directly, so no
 * double -> int64 conversion, which AVX2 lacks); ln 2 in two parts, the
 * first with 33 significant bits so k * C1 and x - k * C1 are exact; r's
 * own rounding dr carried to first order (e^(r + dr) = e^r (1 + dr)).
 * e^r = 1 + r + r^2 P(r), P the Taylor polynomial to r^14 (the first term
 * left out is below 2^-63 for |r| <= ln 2 / 2), 1 + r kept as a sum of two
 * doubles until the last addition.  Scaling by 2^k is one exact
 * multiplication: the easy range x in [-708, 709] keeps k in [-1021, 1023]
 * and the result normal and finite.  Every other argument (NaN, +-inf,
 * overflow, subnormal or zero results) gets the C library's result
 * (exp_hard_f64: settled where it needs no computing).  Compiled
 * without contraction (-ffp-contract=off), so each clone gives the same
 * bits.  Measured over a million arguments against long double expl
 * (tests/unit/test_microkernels.c, test_exp_f64_accuracy): at most 0.61
 * ulp (0.62 over 5.5 million; glibc's exp is within 1). */

static inline uint64_t bits_of_f64(double f)
{
    uint64_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline double double_of(uint64_t u)
{
    double f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline bool exp_easy_f64(double x) { return fabs(x - 0.5) <= 708.5; }

static inline double exp_polynomial_f64(double x)
{
    /* clamped (NaN to the low end): the hard lanes are recomputed anyway */
    x = x >= -709.0 ? x : -709.0;
    x = x <= 710.0 ? x : 710.0;
    /* |x| < 2^-60 as +0 (the result is 1 either way) by a mask, so gcc
     * does not fold the polynomial of 0 into a final select and compute it
     * on x, with subnormal products (exp of 1e-280: 8.8 ns an element) */
    x = double_of(bits_of_f64(x) & (0 - (uint64_t)(fabs(x) >= 0x1p-60)));
    double shifted = x * 1.4426950408889634 + 6755399441055744.0;
    double k = shifted - 6755399441055744.0;
    double hi = x - k * 0x1.62e42fefp-1;
    double lo = k * -0x1.473de6af278edp-34;
    double r = hi + lo;
    double dr = (hi - r) + lo;
    double p = 1.0 / 87178291200.0;
    p = p * r + 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    double one_r = 1.0 + r;
    double tail = ((1.0 - one_r) + r) + (p * (r * r) + (dr + dr * r));
    double scale = double_of((bits_of_f64(shifted) + 1023) << 52);
    return (one_r + tail) * scale;
}

/* exp's hard arguments: those whose result needs no computing settled as
 * the fused code's exp_rare_f64 settles them (below -745.5, -inf too, +0,
 * e^x being under half the least subnormal; above 709.8, +inf too, +inf;
 * NaN itself), the others by the C library (measured: a - exp(f64(a))
 * over 800 large i32, where every exp overflows, 15.8 ns an element by
 * libm's overflow path). */
static inline double exp_hard_f64(double x)
{
    return x < -745.5 ? 0.0 : x > 709.8 ? (double)INFINITY : x != x ? x : exp(x);
}

/* f64 log, the same way: x = m 2^e with m in [sqrt(1/2), sqrt 2) (the
 * exponent as a double by the 2^52 trick), f = m - 1 (exact), and
 * log(1 + f) = 2 atanh(s), s = f / (2 + f), written f - hf + s (hf + R)
 * with hf = f^2 / 2 and R(s^2) = 2 s^2 / 3 + 2 s^4 / 5 + ... to s^20 (the
 * first term left out is below 2^-60 of the result); e ln 2 with ln 2 in
 * two parts (e * C1 exact), e C1 + f as a sum of two doubles before the
 * small terms are added.  Easy: normal, positive and finite (the C
 * library's log for 0, subnormals, negatives, infinities and NaN).
 * Measured over a million arguments against long double logl
 * (test_log_f64_accuracy): at most 0.79 ulp (0.86 over 4.9 million), near
 * x = sqrt(1/2), where -ln 2 + log(m) cancels. */
static inline bool log_easy_f64(double x)
{
    return bits_of_f64(x) - 0x0010000000000000ull < 0x7fe0000000000000ull;
}

static inline double log_polynomial_f64(double x)
{
    uint64_t u = bits_of_f64(x);
    double m = double_of((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    double e = double_of(0x4330000000000000ull | (u >> 52)) - 4503599627371519.0; /* 2^52 + 1023 */
    bool above = m > 1.4142135623730951;
    m = above ? m * 0.5 : m;
    e = above ? e + 1.0 : e;
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double r = 2.0 / 21.0;
    r = r * z + 2.0 / 19.0;
    r = r * z + 2.0 / 17.0;
    r = r * z + 2.0 / 15.0;
    r = r * z + 2.0 / 13.0;
    r = r * z + 2.0 / 11.0;
    r = r * z + 2.0 / 9.0;
    r = r * z + 2.0 / 7.0;
    r = r * z + 2.0 / 5.0;
    r = r * z + 2.0 / 3.0;
    r = r * z;
    double hf = 0.5 * f * f;
    double lo = (s * (hf + r) + e * 0x1.ef35793c7673p-45) - hf;
    double a = e * 0x1.62e42fefa38p-1;
    double sum = a + f;
    double error = (a - sum) + f;
    return sum + (error + lo);
}

/* POLYNOMIAL for double: a block at a time, the hard elements recomputed
 * by the C library. */
#define POLYNOMIAL_F64_CLONES(NAME, EASY, FUNCTION, LIBM, WHICH)                      \
    WHICH static void NAME(double *out, const double *a, long sa, long n)             \
    {                                                                                 \
        double gathered[POLYNOMIAL_BLOCK], result[POLYNOMIAL_BLOCK];                  \
        for (long start = 0; start < n; start += POLYNOMIAL_BLOCK) {                  \
            long count = n - start < POLYNOMIAL_BLOCK ? n - start : POLYNOMIAL_BLOCK; \
            const double *x = a + start;                                              \
            if (sa != 1) {                                                            \
                for (long j = 0; j < count; j++)                                      \
                    gathered[j] = a[(start + j) * sa];                                \
                x = gathered;                                                         \
            }                                                                         \
            int64_t hard = 0;                                                         \
            for (long j = 0; j < count; j++) {                                        \
                result[j] = FUNCTION(x[j]);                                           \
                hard |= !EASY(x[j]);                                                  \
            }                                                                         \
            if (hard)                                                                 \
                for (long j = 0; j < count; j++)                                      \
                    if (!EASY(x[j]))                                                  \
                        result[j] = LIBM(x[j]);                                       \
            memcpy(out + start, result, (size_t)count * sizeof *out);                 \
        }                                                                             \
    }

/* The AVX-512 clone (8 lanes) from 16 elements on: under 16, its scalar
 * remainder of up to 7 made 15 elements slower than the AVX2 clone's
 * (measured, exp: 82 against 76 ns; b - exp(a), 30 f64 elements of 15
 * values, a small kernel's call: 68 -> 95-107 ns). */
#define POLYNOMIAL_F64(NAME, EASY, FUNCTION, LIBM)                                    \
    POLYNOMIAL_F64_CLONES(NAME##_narrow, EASY, FUNCTION, LIBM, CLONES)                \
    POLYNOMIAL_F64_CLONES(NAME##_wide, EASY, FUNCTION, LIBM, CLONES_WIDE)             \
    void bcg_mk_##NAME(double *out, const double *a, long sa, long n)                 \
    {                                                                                 \
        if (n < 16)                                                                   \
            NAME##_narrow(out, a, sa, n);                                             \
        else                                                                          \
            NAME##_wide(out, a, sa, n);                                               \
    }

/* ---- the operations per dtype --------------------------------------------------- */

/* The _rows function's runs that are contiguous or one value each, as
 * loops of their own in one call (the operation's clones): a call of the
 * operation's microkernel per run cost about 5 ns a run, the whole of
 * minimum(b, a) over 11 runs of 67 i32 with b one value a run (sweep seed
 * 21: see the commit).  Each element is what the microkernel writes. */
#define ROWS_INLINE(NAME, T, OUT_T, EXPR, CL)                                                \
    static CL void rows_inline_##NAME(OUT_T *out, long ro, const T *a, long sa, long ra,     \
                                      const T *b, long sb, long rb, long n, long rows)       \
    {                                                                                        \
        for (long r = 0; r < rows; r++) {                                                    \
            OUT_T *o = out + r * ro;                                                         \
            const T *ar = a + r * ra, *br = b + r * rb;                                      \
            if (sa == 1 && sb == 1) {                                                        \
                RUN(1, T, OUT_T, o, n, T x = ar[i]; T y = br[i], EXPR);                      \
            } else if (sa == 1) {                                                            \
                const T y = br[0];                                                           \
                RUN(1, T, OUT_T, o, n, T x = ar[i], EXPR);                                   \
            } else {                                                                         \
                const T x = ar[0];                                                           \
                RUN(1, T, OUT_T, o, n, T y = br[i], EXPR);                                   \
            }                                                                                \
        }                                                                                    \
    }

/* The same runs written with streaming stores, for a _rows call whose runs
 * each start on a 64-byte boundary and are whole streaming blocks (the
 * caller checks): each run as bcg_mk_NAME_nt writes it, in one call.  Why:
 * mul_4d's calls (64 runs of 64 f32 from a (64, 64) block and a repeated
 * run of 64) went through the periodic tile, laying out 1024 elements per
 * call, and per-run _nt calls cost about 2 ns a run: 2.1 ms a kernel (CPU
 * time, loaded machine) against 1.6 for these loops and 1.55 for a
 * hand-written loop of 32-byte streaming stores. */
#define ROWS_STREAM(NAME, T, OUT_T, EXPR, CL)                                                \
    static CL void rows_stream_##NAME(OUT_T *out_rows, long ro, const T *a_rows, long sa,    \
                                      long ra, const T *b_rows, long sb, long rb, long n,    \
                                      long rows)                                             \
    {                                                                                        \
        for (long r = 0; r < rows; r++) {                                                    \
            OUT_T *out = out_rows + r * ro;                                                  \
            const T *a = a_rows + r * ra, *b = b_rows + r * rb;                              \
            long i = 0;                                                                      \
            if (sa == 1 && sb == 1) {                                                        \
                STREAM_LOOP(OUT_T, T x = a[i + k], T y = b[i + k], EXPR)                     \
            } else if (sa == 1) {                                                            \
                const T y0 = b[0];                                                           \
                STREAM_LOOP(OUT_T, T x = a[i + k], T y = y0, EXPR)                           \
            } else {                                                                         \
                const T x0 = a[0];                                                           \
                STREAM_LOOP(OUT_T, T x = x0, T y = b[i + k], EXPR)                           \
            }                                                                                \
        }                                                                                    \
    }

/* Each binary operation with its streaming variant. */
#define BINARY2(NAME, T, OUT_T, EXPR)                   \
    BINARY_CLONES(NAME, T, OUT_T, EXPR, CLONES_WIDE, 1) \
    ROWS_INLINE(NAME, T, OUT_T, EXPR, CLONES_WIDE)      \
    ROWS_STREAM(NAME, T, OUT_T, EXPR, CLONES)           \
    BINARY_NT(NAME, T, OUT_T, EXPR)
/* comparisons keep the AVX2 clone (see CLONES_WIDE) */
#define COMPARE2(NAME, T, EXPR)                      \
    BINARY_CLONES(NAME, T, uint8_t, EXPR, CLONES, 1) \
    ROWS_INLINE(NAME, T, uint8_t, EXPR, CLONES)      \
    ROWS_STREAM(NAME, T, uint8_t, EXPR, CLONES)      \
    BINARY_NT(NAME, T, uint8_t, EXPR)

/* The integer types: + - * minimum maximum, the six comparisons, where,
 * negation.  U is the unsigned type the arithmetic wraps in. */
#define COMMON(SUFFIX, T, U)                                                        \
    BINARY2(add_##SUFFIX, T, T, (U)x + (U)y)                                        \
    BINARY2(sub_##SUFFIX, T, T, (U)x - (U)y)                                        \
    BINARY2(mul_##SUFFIX, T, T, (U)x * (U)y)                                        \
    BINARY2(minimum_##SUFFIX, T, T, x < y ? x : y)                                  \
    BINARY2(maximum_##SUFFIX, T, T, x > y ? x : y)                                  \
    COMPARE2(eq_##SUFFIX, T, x == y)                                        \
    COMPARE2(ne_##SUFFIX, T, x != y)                                        \
    COMPARE2(lt_##SUFFIX, T, x < y)                                         \
    COMPARE2(le_##SUFFIX, T, x <= y)                                        \
    COMPARE2(gt_##SUFFIX, T, x > y)                                         \
    COMPARE2(ge_##SUFFIX, T, x >= y)                                        \
    WHERE(SUFFIX, T)                                                                \
    WHERE_NT(SUFFIX, T)                                                             \
    UNARY(neg_##SUFFIX, T, (U)0 - (U)x)

#define INTEGER(SUFFIX, T, U)                 \
    COMMON(SUFFIX, T, U)                      \
    BINARY2(bitand_##SUFFIX, T, T, x & y)     \
    BINARY2(bitor_##SUFFIX, T, T, x | y)      \
    BINARY2(bitxor_##SUFFIX, T, T, x ^ y)

/* Negation of a float is a sign flip (-x), not 0 - x (which gives +0 for +0). */
#define FLOAT(SUFFIX, T, F)                          \
    BINARY2(add_##SUFFIX, T, T, x + y)               \
    BINARY2(sub_##SUFFIX, T, T, x - y)               \
    BINARY2(mul_##SUFFIX, T, T, x * y)               \
    BINARY2(div_##SUFFIX, T, T, x / y)               \
    BINARY2(minimum_##SUFFIX, T, T, (x < y || x != x) ? x : y) \
    BINARY2(maximum_##SUFFIX, T, T, (x > y || x != x) ? x : y) \
    COMPARE2(eq_##SUFFIX, T, x == y)         \
    COMPARE2(ne_##SUFFIX, T, x != y)         \
    COMPARE2(lt_##SUFFIX, T, x < y)          \
    COMPARE2(le_##SUFFIX, T, x <= y)         \
    COMPARE2(gt_##SUFFIX, T, x > y)          \
    COMPARE2(ge_##SUFFIX, T, x >= y)         \
    WHERE(SUFFIX, T)                                 \
    WHERE_NT(SUFFIX, T)                              \
    UNARY(neg_##SUFFIX, T, -x)                       \
    UNARY(abs_##SUFFIX, T, fabs##F(x))               \
    UNARY(sqrt_##SUFFIX, T, sqrt##F(x))              \
    UNARY(floor_##SUFFIX, T, floor##F(x))            \
    UNARY(ceil_##SUFFIX, T, ceil##F(x))              \
    TRANSCENDENTAL_##SUFFIX

/* f64 exp and log: the polynomials above, vectorised (the AVX-512 clone
 * too, 8 lanes, from 16 elements: the same bits, no FMA with -ffp-contract=off, checked
 * over 4M arguments, random bit patterns among them, against the AVX2
 * clone; measured in one process, exp over [-20, 20]: 30 elements 83 ->
 * 66 ns, 63 177 -> 123 ns, 180 to 4096 2.6-3.0 -> 1.4-1.5 ns an element;
 * log over (0, 1000]: 30 elements 60 -> 49 ns, 600 1.9 -> 1.06 ns an
 * element); sin, cos, tanh: the C library per element. */
#define TRANSCENDENTAL_f64                                      \
    POLYNOMIAL_F64(exp_f64, exp_easy_f64, exp_polynomial_f64, exp_hard_f64) \
    POLYNOMIAL_F64(log_f64, log_easy_f64, log_polynomial_f64, log) \
    UNARY(sin_f64, double, sin(x))      \
    UNARY(cos_f64, double, cos(x))      \
    UNARY(tanh_f64, double, tanh(x))

/* f32 exp, log, sin, cos, tanh: the polynomials below, vectorised. */
#define TRANSCENDENTAL_f32                                      \
    POLYNOMIAL(exp_f32, exp_easy, exp_polynomial, expf)         \
    POLYNOMIAL(log_f32, log_easy, log_polynomial, logf)         \
    POLYNOMIAL(sin_f32, sincos_easy, sin_polynomial, sinf)      \
    POLYNOMIAL(cos_f32, sincos_easy, cos_polynomial, cosf)      \
    POLYNOMIAL(tanh_f32, tanh_easy, tanh_polynomial, tanhf)

/* f32 only: the functions of issue 13 (f64 has no tile family for them). */
POLYNOMIAL(log1p_f32, log1p_easy, log1p_polynomial, log1pf)
POLYNOMIAL(expm1_f32, expm1_easy, expm1_polynomial, expm1f)
POLYNOMIAL(log2_f32, log_easy, log2_polynomial, log2f)
POLYNOMIAL(log10_f32, log_easy, log10_polynomial, log10f)
POLYNOMIAL(exp2_f32, exp2_easy, exp2_polynomial, exp2f)
POLYNOMIAL(expit_f32, expit_easy, expit_polynomial, expit_scalar)
POLYNOMIAL(tan_f32, sincos_easy, tan_polynomial, tanf)
POLYNOMIAL(arctan_f32, arctan_easy, arctan_polynomial, atanf)
POLYNOMIAL(erf_f32, erf_easy, erf_polynomial, erff)

/* The integer types wrap in unsigned int at least (C promotes narrower
 * operands to int, where a product could overflow). */
/* add_sat and sub_sat (docs/semantics.md, "Saturating arithmetic"): the
 * 8- and 16-bit types through int, clamped, which the vectoriser turns into
 * saturating vector instructions (vpaddsw ...); the 32- and 64-bit ones
 * by the overflow builtins, saturating toward y's sign. */
#define SATURATING_NARROW(SUFFIX, T, MIN, MAX)                                           \
    BINARY2(add_sat_##SUFFIX, T, T,                                                      \
            (int)x + y < (MIN) ? (MIN) : (int)x + y > (MAX) ? (MAX) : (int)x + y)         \
    BINARY2(sub_sat_##SUFFIX, T, T,                                                      \
            (int)x - y < (MIN) ? (MIN) : (int)x - y > (MAX) ? (MAX) : (int)x - y)
#define SATURATING_WIDE(SUFFIX, T, MIN, MAX)                                             \
    static inline T add_sat_one_##SUFFIX(T x, T y)                                       \
    {                                                                                    \
        T r;                                                                             \
        return __builtin_add_overflow(x, y, &r) ? (y > 0 ? (MAX) : (MIN)) : r;          \
    }                                                                                    \
    static inline T sub_sat_one_##SUFFIX(T x, T y)                                       \
    {                                                                                    \
        T r;                                                                             \
        return __builtin_sub_overflow(x, y, &r) ? (y > 0 ? (MIN) : (MAX)) : r;          \
    }                                                                                    \
    BINARY2(add_sat_##SUFFIX, T, T, add_sat_one_##SUFFIX(x, y))                          \
    BINARY2(sub_sat_##SUFFIX, T, T, sub_sat_one_##SUFFIX(x, y))
SATURATING_NARROW(i8, int8_t, INT8_MIN, INT8_MAX)
SATURATING_NARROW(i16, int16_t, INT16_MIN, INT16_MAX)
SATURATING_NARROW(u8, uint8_t, 0, UINT8_MAX)
SATURATING_NARROW(u16, uint16_t, 0, UINT16_MAX)
SATURATING_WIDE(i32, int32_t, INT32_MIN, INT32_MAX)
SATURATING_WIDE(i64, int64_t, INT64_MIN, INT64_MAX)
SATURATING_WIDE(u32, uint32_t, 0, UINT32_MAX)
SATURATING_WIDE(u64, uint64_t, 0, UINT64_MAX)

INTEGER(i8, int8_t, unsigned int)
INTEGER(i16, int16_t, unsigned int)
INTEGER(i32, int32_t, uint32_t)
INTEGER(i64, int64_t, uint64_t)
INTEGER(u8, uint8_t, unsigned int)
INTEGER(u16, uint16_t, unsigned int)
INTEGER(u32, uint32_t, uint32_t)
INTEGER(u64, uint64_t, uint64_t)
FLOAT(f32, float, f)
FLOAT(f64, double, )

/* Integer abs: the minimum wraps to itself, as in NumPy (the straight-line
 * code's bcg_abs_T helper); an unsigned value is its own abs. */
UNARY(abs_i8, int8_t, x < 0 ? (int8_t)(0U - (unsigned int)x) : x)
UNARY(abs_i16, int16_t, x < 0 ? (int16_t)(0U - (unsigned int)x) : x)
UNARY(abs_i32, int32_t, x < 0 ? (int32_t)(0U - (uint32_t)x) : x)
UNARY(abs_i64, int64_t, x < 0 ? (int64_t)(0ULL - (uint64_t)x) : x)
UNARY(abs_u8, uint8_t, x)
UNARY(abs_u16, uint16_t, x)
UNARY(abs_u32, uint32_t, x)
UNARY(abs_u64, uint64_t, x)

/* ---- conversions -------------------------------------------------------------------
 *
 * bcg_mk_cast_F_T(T *out, const F *a, long sa, long n) converts a tile from
 * dtype F to dtype T (explicit casts, the implicit conversions of mixed
 * dtypes, a cast on store), exactly as the straight-line code's conversions
 * (gen/cexpr.c, convert_open; docs/semantics.md, "Casts"): a bool is a byte
 * read as != 0 and written as 0 or 1; a float to an integer truncates toward
 * zero, NaN gives 0 and values beyond the range saturate (compared in the
 * float's own type: the bounds are powers of two, exact in both); every other
 * conversion is C's (integers wrap, integers to floats and f64 to f32 round to
 * nearest).  Every pair of bool, the integers, f32 and f64 exists, the same
 * dtype twice included (a copy; bool's normalises to 0 and 1). */
#define CAST_B_B(TT, LO, HI, MIN, MAX, FT) (uint8_t)(x != 0)
#define CAST_B_I(TT, LO, HI, MIN, MAX, FT) (TT)(x != 0)
#define CAST_B_F(TT, LO, HI, MIN, MAX, FT) (TT)(x != 0)
#define CAST_I_B(TT, LO, HI, MIN, MAX, FT) (uint8_t)(x != 0)
#define CAST_I_I(TT, LO, HI, MIN, MAX, FT) (TT)x
#define CAST_I_F(TT, LO, HI, MIN, MAX, FT) (TT)x
#define CAST_F_B(TT, LO, HI, MIN, MAX, FT) (uint8_t)(x != 0)
#define CAST_F_F(TT, LO, HI, MIN, MAX, FT) (TT)x
#define CAST_F_I(TT, LO, HI, MIN, MAX, FT) \
    (x != x ? (TT)0 : x >= (FT)(HI) ? (TT)(MAX) : x <= (FT)(LO) ? (TT)(MIN) : (TT)x)

/* Whether the SIZE bytes at VALUE are all the same byte: a fill of it is
 * C's memset, whose aligned wide stores beat gcc's vectorised loop of
 * unaligned ones (where(7 < 1, u8(a), 7) folded to a fill of 633420
 * bytes: 3.6 us against the cc backend's 2.5-3.1 us, which gcc turned
 * into a memset). */
static inline bool fill_bytes(const void *value, size_t size)
{
    const unsigned char *p = value;
    for (size_t i = 1; i < size; i++)
        if (p[i] != p[0])
            return false;
    return true;
}

#define CAST(FS, FT, FK, TS, TT, TK, LO, HI, MIN, MAX)                                  \
    CLONES_WIDE void bcg_mk_cast_##FS##_##TS(TT *out, const FT *a, long sa, long n)    \
    {                                                                                  \
        if (sa == 1) {                                                                 \
            for (long i = 0; i < n; i++) {                                             \
                const FT x = a[i];                                                     \
                out[i] = CAST_##FK##_##TK(TT, LO, HI, MIN, MAX, FT);                   \
            }                                                                          \
        } else if (sa == 0) { /* a fill: `a * 0` folded, a broadcast value */          \
            const FT x = a[0];                                                         \
            const TT value = CAST_##FK##_##TK(TT, LO, HI, MIN, MAX, FT);               \
            if (fill_bytes(&value, sizeof value)) /* (fill_bytes: why memset) */       \
                memset(out, *(const unsigned char *)&value, (size_t)n * sizeof value); \
            else                                                                       \
                for (long i = 0; i < n; i++)                                           \
                    out[i] = value;                                                    \
        } else if (sa == -1) { /* a reversed view */                                   \
            for (long i = 0; i < n; i++) {                                             \
                const FT x = a[-i];                                                    \
                out[i] = CAST_##FK##_##TK(TT, LO, HI, MIN, MAX, FT);                   \
            }                                                                          \
        } else { /* strided: gathered a block at a time */                            \
            for (long i = 0; i < n; i += GATHER_BLOCK) {                               \
                const long m = n - i < GATHER_BLOCK ? n - i : GATHER_BLOCK;            \
                FT xs[GATHER_BLOCK];                                                   \
                GATHER(FT, xs, a, sa, i, m);                                           \
                for (long k = 0; k < m; k++) {                                         \
                    const FT x = xs[k];                                                \
                    out[i + k] = CAST_##FK##_##TK(TT, LO, HI, MIN, MAX, FT);           \
                }                                                                      \
            }                                                                          \
        }                                                                              \
    }

/* The dtypes with cast kernels, as sources: X(suffix, C type, kind).  (Not
 * bool: stdbool.h's bool is a macro, which an argument passed on to another
 * macro expands, into bcg_mk_cast__Bool_i8 ...; see CAST_FROM_BOOL.) */
#define CAST_SOURCES(X)                                                                  \
    X(i8, int8_t, I) X(i16, int16_t, I) X(i32, int32_t, I)                               \
    X(i64, int64_t, I) X(u8, uint8_t, I) X(u16, uint16_t, I) X(u32, uint32_t, I)         \
    X(u64, uint64_t, I) X(f32, float, F) X(f64, double, F)
/* ... and as targets, with the float bounds beyond which a float saturates
 * and the saturated values: X(source..., suffix, C type, kind, bounds). */
#define CAST_TARGETS(X, FS, FT, FK)                                                      \
    X(FS, FT, FK, bool, uint8_t, B, 0, 0, 0, 0)                                          \
    X(FS, FT, FK, i8, int8_t, I, -128.0, 128.0, INT8_MIN, INT8_MAX)                      \
    X(FS, FT, FK, i16, int16_t, I, -32768.0, 32768.0, INT16_MIN, INT16_MAX)              \
    X(FS, FT, FK, i32, int32_t, I, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX)    \
    X(FS, FT, FK, i64, int64_t, I, -9223372036854775808.0, 9223372036854775808.0,        \
      INT64_MIN, INT64_MAX)                                                              \
    X(FS, FT, FK, u8, uint8_t, I, -1.0, 256.0, 0, UINT8_MAX)                             \
    X(FS, FT, FK, u16, uint16_t, I, -1.0, 65536.0, 0, UINT16_MAX)                        \
    X(FS, FT, FK, u32, uint32_t, I, -1.0, 4294967296.0, 0, UINT32_MAX)                   \
    X(FS, FT, FK, u64, uint64_t, I, -1.0, 18446744073709551616.0, 0, UINT64_MAX)         \
    X(FS, FT, FK, f32, float, F, 0, 0, 0, 0)                                             \
    X(FS, FT, FK, f64, double, F, 0, 0, 0, 0)
#define CASTS_FROM(FS, FT, FK) CAST_TARGETS(CAST, FS, FT, FK)
CAST_SOURCES(CASTS_FROM)
/* The casts from bool, each named here: CAST pastes its `bool` argument
 * without expanding it. */
#define CAST_FROM_BOOL(TS, TT, TK) CAST(bool, uint8_t, B, TS, TT, TK, 0, 0, 0, 0)
CAST(bool, uint8_t, B, bool, uint8_t, B, 0, 0, 0, 0)
CAST_FROM_BOOL(i8, int8_t, I)
CAST_FROM_BOOL(i16, int16_t, I)
CAST_FROM_BOOL(i32, int32_t, I)
CAST_FROM_BOOL(i64, int64_t, I)
CAST_FROM_BOOL(u8, uint8_t, I)
CAST_FROM_BOOL(u16, uint16_t, I)
CAST_FROM_BOOL(u32, uint32_t, I)
CAST_FROM_BOOL(u64, uint64_t, I)
CAST_FROM_BOOL(f32, float, F)
CAST_FROM_BOOL(f64, double, F)

/* ---- f16 and bf16 ------------------------------------------------------------------
 *
 * The 16-bit floats compute in float and round each result (NumPy's float16
 * rule, docs/semantics.md), so their microkernels go a block of HALF_BLOCK
 * elements at a time: widen the inputs into float arrays on the stack,
 * compute there with the loop gcc vectorises, narrow into the output.  The
 * conversions are the vectorised part: F16C's vcvtph2ps and vcvtps2ph (8
 * values an instruction) when the CPU has them, checked at run time
 * (__builtin_cpu_supports); otherwise runtime/half.h's bit manipulation,
 * which gives the same bits (to nearest even, subnormals, NaNs made quiet
 * with the top of their payload; test_microkernels checks every pattern).
 * bf16's conversions are shifts and adds that gcc vectorises itself.  The
 * ABI is the binary and unary one above with T the 16-bit bits (uint16_t);
 * there are no _nt and _rows variants (the lowering checks by name). */

#define HALF_BLOCK 1024

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_F16C 1
#define HAVE_AVX2_PATHS 1 /* hand-written AVX2 loops where gcc's are slow (see there) */
#include <cpuid.h>
#include <stdatomic.h>
/* F16C and AVX with the YMM state enabled by the OS (CPUID.1:ECX bits 29,
 * 28, 27; XCR0 bits 1-2), asked once: CPUID traps to the hypervisor in a
 * VM.  (clang 14's __builtin_cpu_supports does not know "f16c".) */
/* Whether the OS saves the YMM state (XCR0 bits 1-2); only after CPUID.1
 * said OSXSAVE (ECX bit 27), without which xgetbv faults. */
static bool ymm_state_saved(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u;
}

/* PROBE's answer, asked once and kept in *KNOWN (0 not asked yet, 1 no, 2 yes). */
static bool cpu_feature_once(atomic_int *known, bool (*probe)(void))
{
    int state = atomic_load_explicit(known, memory_order_relaxed);
    if (state == 0) {
        state = probe() ? 2 : 1;
        atomic_store_explicit(known, state, memory_order_relaxed);
    }
    return state == 2;
}

static bool probe_f16c(void)
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (7u << 27)) == (7u << 27) &&
           ymm_state_saved();
}

static bool cpu_has_f16c(void)
{
    static atomic_int known;
    return cpu_feature_once(&known, probe_f16c);
}

__attribute__((target("avx,f16c"))) static void widen_f16c(float *out, const uint16_t *in, long n)
{
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
    for (; i < n; i++)
        out[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(in[i])));
}

__attribute__((target("avx,f16c"))) static void narrow_f16c(uint16_t *out, const float *in, long n)
{
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        out[i] = (uint16_t)_mm_cvtsi128_si32(
            _mm_cvtps_ph(_mm_set_ss(in[i]), _MM_FROUND_TO_NEAREST_INT));
}
#endif

/* N values of A (stride SA: 1, 0 or any) as floats into OUT. */
static void widen_f16(float *out, const uint16_t *a, long sa, long n)
{
#ifdef HAVE_F16C
    if (sa == 1 && cpu_has_f16c()) {
        widen_f16c(out, a, n);
        return;
    }
#endif
    if (sa == 0) {
        float x = half_to_float(a[0]);
        for (long i = 0; i < n; i++)
            out[i] = x;
        return;
    }
    for (long i = 0; i < n; i++)
        out[i] = half_to_float(a[i * sa]);
}

static void narrow_f16(uint16_t *out, const float *in, long n)
{
#ifdef HAVE_F16C
    if (cpu_has_f16c()) {
        narrow_f16c(out, in, n);
        return;
    }
#endif
    for (long i = 0; i < n; i++)
        out[i] = half_from_float(in[i]);
}

static void widen_bf16(float *out, const uint16_t *a, long sa, long n)
{
    if (sa == 1) {
        for (long i = 0; i < n; i++)
            out[i] = bfloat_to_float(a[i]);
        return;
    }
    for (long i = 0; i < n; i++)
        out[i] = bfloat_to_float(a[i * sa]);
}

static void narrow_bf16(uint16_t *out, const float *in, long n)
{
    for (long i = 0; i < n; i++)
        out[i] = bfloat_from_float(in[i]);
}

/* f16 + - * / with F16C over contiguous or broadcast inputs: 8 elements
 * widened, computed and narrowed in registers (no block on the stack). */
#ifdef HAVE_F16C
#define F16C_BINARY(NAME, VOP)                                                               \
    __attribute__((target("avx,f16c"))) static void NAME##_f16c(                            \
        uint16_t *out, const uint16_t *a, long sa, const uint16_t *b, long sb, long n,      \
        bool stream)                                                                         \
    {                                                                                        \
        const __m256 x0 = _mm256_set1_ps(half_to_float(a[0]));                               \
        const __m256 y0 = _mm256_set1_ps(half_to_float(b[0]));                               \
        long i = 0;                                                                          \
        if (stream && ((uintptr_t)out & 1) == 0) {                                           \
            /* streaming stores (see "streaming stores") from the first   */                \
            /* 16-byte boundary on; the head goes through the tail code   */                \
            long head = (long)((((uintptr_t)0 - (uintptr_t)out) & 15) / 2);                  \
            if (head > n)                                                                    \
                head = n;                                                                    \
            if (head > 0)                                                                    \
                NAME##_f16c(out, a, sa, b, sb, head, false);                                 \
            for (i = head; i + 8 <= n; i += 8) {                                             \
                __m256 x = sa ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i)))   \
                              : x0;                                                          \
                __m256 y = sb ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i)))   \
                              : y0;                                                          \
                _mm_stream_si128((__m128i *)(out + i),                                       \
                                 _mm256_cvtps_ph(VOP(x, y), _MM_FROUND_TO_NEAREST_INT));     \
            }                                                                                \
        }                                                                                    \
        for (; i + 8 <= n; i += 8) {                                                         \
            __m256 x = sa ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i))) : x0; \
            __m256 y = sb ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i))) : y0; \
            _mm_storeu_si128((__m128i *)(out + i),                                           \
                             _mm256_cvtps_ph(VOP(x, y), _MM_FROUND_TO_NEAREST_INT));         \
        }                                                                                    \
        if (i < n) {                                                                         \
            uint16_t xs[8] = {0}, ys[8] = {0}, rs[8];                                        \
            for (long k = 0; k < n - i; k++) {                                               \
                xs[k] = a[(i + k) * sa];                                                     \
                ys[k] = b[(i + k) * sb];                                                     \
            }                                                                                \
            __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)xs));                \
            __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)ys));                \
            _mm_storeu_si128((__m128i *)rs,                                                  \
                             _mm256_cvtps_ph(VOP(x, y), _MM_FROUND_TO_NEAREST_INT));         \
            memcpy(out + i, rs, (size_t)(n - i) * sizeof *out);                              \
        }                                                                                    \
    }
F16C_BINARY(add, _mm256_add_ps)
F16C_BINARY(sub, _mm256_sub_ps)
F16C_BINARY(mul, _mm256_mul_ps)
F16C_BINARY(div, _mm256_div_ps)
#define F16C_FAST(NAME, S)                                                                   \
    if (S##_is_f16 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1) && cpu_has_f16c()) {     \
        NAME##_f16c(out, a, sa, b, sb, n, false);                                            \
        return;                                                                              \
    }
#define HAS_F16C_add 1
#define HAS_F16C_sub 1
#define HAS_F16C_mul 1
#define HAS_F16C_div 1
#endif
enum { f16_is_f16 = 1, bf16_is_f16 = 0 };

#define HALF_BINARY(NAME, S, EXPR) HALF_BINARY_WITH(NAME, S, EXPR, )
#define HALF_BINARY_FAST(NAME, S, EXPR) HALF_BINARY_WITH(NAME, S, EXPR, HALF_FAST(NAME, S))
#ifdef HAVE_F16C
#define HALF_FAST(NAME, S) F16C_FAST(NAME, S)
#else
#define HALF_FAST(NAME, S)
#endif

#define HALF_BINARY_WITH(NAME, S, EXPR, FAST)                                               \
    CLONES void bcg_mk_##NAME##_##S(uint16_t *out, const uint16_t *a, long sa,             \
                                    const uint16_t *b, long sb, long n)                    \
    {                                                                                       \
        FAST                                                                                \
        float xs[HALF_BLOCK], ys[HALF_BLOCK], rs[HALF_BLOCK];                               \
        for (long start = 0; start < n; start += HALF_BLOCK) {                              \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                   \
            widen_##S(xs, a + start * sa, sa, count);                                       \
            widen_##S(ys, b + start * sb, sb, count);                                       \
            for (long k = 0; k < count; k++) {                                              \
                const float x = xs[k], y = ys[k];                                           \
                rs[k] = EXPR;                                                               \
            }                                                                               \
            narrow_##S(out + start, rs, count);                                             \
        }                                                                                   \
    }

#define HALF_UNARY(NAME, S, EXPR)                                                            \
    CLONES void bcg_mk_##NAME##_##S(uint16_t *out, const uint16_t *a, long sa, long n)      \
    {                                                                                        \
        float xs[HALF_BLOCK], rs[HALF_BLOCK];                                                \
        for (long start = 0; start < n; start += HALF_BLOCK) {                               \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                    \
            widen_##S(xs, a + start * sa, sa, count);                                        \
            for (long k = 0; k < count; k++) {                                               \
                const float x = xs[k];                                                       \
                rs[k] = EXPR;                                                                \
            }                                                                                \
            narrow_##S(out + start, rs, count);                                              \
        }                                                                                    \
    }

/* The _nt variant (streaming stores) of an f16 + - * /: F16C's loop with
 * _mm_stream_si128 over contiguous or broadcast inputs, else the plain
 * function.  bf16 has none (the lowering checks by name). */
#ifdef HAVE_F16C
#define HALF_NT(NAME)                                                                        \
    void bcg_mk_##NAME##_f16_nt(uint16_t *out, const uint16_t *a, long sa, const uint16_t *b, \
                                long sb, long n)                                              \
    {                                                                                         \
        if ((sa == 0 || sa == 1) && (sb == 0 || sb == 1) && cpu_has_f16c())                  \
            NAME##_f16c(out, a, sa, b, sb, n, true);                                          \
        else                                                                                  \
            bcg_mk_##NAME##_f16(out, a, sa, b, sb, n);                                        \
    }
#else
#define HALF_NT(NAME)                                                                        \
    void bcg_mk_##NAME##_f16_nt(uint16_t *out, const uint16_t *a, long sa, const uint16_t *b, \
                                long sb, long n)                                              \
    {                                                                                         \
        bcg_mk_##NAME##_f16(out, a, sa, b, sb, n);                                            \
    }
#endif

#define HALF(S)                                                   \
    HALF_BINARY_FAST(add, S, x + y)                               \
    HALF_BINARY_FAST(sub, S, x - y)                               \
    HALF_BINARY_FAST(mul, S, x * y)                               \
    HALF_BINARY_FAST(div, S, x / y)                               \
    HALF_BINARY(minimum, S, (x < y || x != x) ? x : y)            \
    HALF_BINARY(maximum, S, (x > y || x != x) ? x : y)            \
    HALF_UNARY(sqrt, S, sqrtf(x))

HALF(f16)
HALF(bf16)
HALF_NT(add)
HALF_NT(sub)
HALF_NT(mul)
HALF_NT(div)

/* ---- every other row of the operator table (issue 11) -------------------------------
 *
 * A tree falls back to tcc's per-element code as soon as one of its
 * operations has no microkernel for its dtype, so every row of gen/ops.h has
 * one for every dtype its typing allows (tests/unit/test_ops.c checks the
 * whole table; `bcgen functions --tiles` prints it).  Each computes exactly
 * the straight-line code's value (templates/ops.c.tmpl's helpers, gen/cexpr.c,
 * gen/eval.c): the cheap ones vectorised (bit operations, shifts, the float
 * tests, copysign, sign, square, the logical operations on bool ...), the
 * functions without a vectorised form the C library per element, inside a
 * gcc-compiled loop, so that the rest of the tree stays tiled.  Binary
 * operations that vectorise have _nt and _rows variants (BINARY2); the rest
 * the plain function only (the lowering checks by name). */

/* out[i] = EXPR(x) into another output type: the float tests (u8 0 or 1). */
#define UNARY_TO(NAME, T, OUT_T, EXPR)                                    \
    CLONES void bcg_mk_##NAME(OUT_T *out, const T *a, long sa, long n)    \
    {                                                                     \
        if (sa == 1) {                                                    \
            for (long i = 0; i < n; i++) {                                \
                T x = a[i];                                               \
                out[i] = (OUT_T)(EXPR);                                   \
            }                                                             \
        } else {                                                          \
            for (long i = 0; i < n; i += GATHER_BLOCK) {                  \
                const long m = n - i < GATHER_BLOCK ? n - i : GATHER_BLOCK; \
                T xs[GATHER_BLOCK];                                       \
                GATHER(T, xs, a, sa, i, m);                               \
                for (long k = 0; k < m; k++) {                            \
                    T x = xs[k];                                          \
                    out[i + k] = (OUT_T)(EXPR);                           \
                }                                                         \
            }                                                             \
        }                                                                 \
    }

/* A binary function vectorised where its operands are EASY (FAST, a select
 * gcc if-converts) and the C library's SLOW elsewhere: a block at a time,
 * the operands gathered (so OUT may be one of them), the fast values for
 * the whole block, then only when some pair was not easy a scalar pass over
 * those (fmin and fmax: NaNs and equal operands, where glibc's choice of
 * NaN and of the zero's sign is its own). */
#define BINARY_CHECKED(NAME, T, FAST, EASY, SLOW)                                  \
    CLONES void bcg_mk_##NAME(T *out, const T *a, long sa, const T *b, long sb, long n) \
    {                                                                              \
        for (long i = 0; i < n; i += GATHER_BLOCK) {                               \
            const long m = n - i < GATHER_BLOCK ? n - i : GATHER_BLOCK;            \
            T xs[GATHER_BLOCK], ys[GATHER_BLOCK];                                  \
            GATHER(T, xs, a, sa, i, m);                                            \
            GATHER(T, ys, b, sb, i, m);                                            \
            int32_t hard = 0;                                                      \
            for (long k = 0; k < m; k++) {                                         \
                const T x = xs[k], y = ys[k];                                      \
                out[i + k] = FAST;                                                 \
                hard |= !(EASY);                                                   \
            }                                                                      \
            if (hard)                                                              \
                for (long k = 0; k < m; k++) {                                     \
                    const T x = xs[k], y = ys[k];                                  \
                    if (!(EASY))                                                   \
                        out[i + k] = SLOW(x, y);                                   \
                }                                                                  \
        }                                                                          \
    }

/* -- integers: ops.c.tmpl's helpers, one per dtype (U: the unsigned type the
 * arithmetic wraps in; BITS: the width) -- */
#define INTEGER_SIGNED_HELPERS(S, T, U, BITS)                                     \
    static inline T floordiv_one_##S(T a, T b)                                    \
    {                                                                             \
        if (b == 0)                                                               \
            return 0;                                                             \
        if (b == -1) /* the minimum / -1 wraps to itself: -a */                   \
            return (T)(0U - (U)a);                                                \
        T q = (T)(a / b);                                                         \
        if (a % b != 0 && ((a % b < 0) != (b < 0)))                               \
            q = (T)(q - 1);                                                       \
        return q;                                                                 \
    }                                                                             \
    static inline T mod_one_##S(T a, T b)                                         \
    {                                                                             \
        if (b == 0 || b == -1)                                                    \
            return 0;                                                             \
        T r = (T)(a % b);                                                         \
        if (r != 0 && ((r < 0) != (b < 0)))                                       \
            r = (T)(r + b);                                                       \
        return r;                                                                 \
    }                                                                             \
    static inline T pow_one_##S(T a, T b)                                         \
    {                                                                             \
        if (b < 0) /* the truncated real result */                                \
            return (T)(a == 1 ? 1 : a == -1 ? (b % 2 != 0 ? -1 : 1) : 0);         \
        U result = 1, base = (U)a, e = (U)b;                                      \
        while (e != 0) {                                                          \
            if (e & 1U)                                                           \
                result *= base;                                                   \
            base *= base;                                                         \
            e >>= 1;                                                              \
        }                                                                         \
        return (T)result;                                                         \
    }                                                                             \
    static inline T shl_one_##S(T a, T b)                                         \
    {                                                                             \
        /* the count masked so that both sides of the select are defined */       \
        T shifted = (T)((U)a << ((unsigned)b & (BITS - 1)));                      \
        return b < 0 || b >= BITS ? 0 : shifted;                                  \
    }                                                                             \
    static inline T shr_one_##S(T a, T b)                                         \
    {                                                                             \
        /* gcc's >> of a negative value is arithmetic (documented) */             \
        T shifted = (T)(a >> ((unsigned)b & (BITS - 1)));                         \
        return b < 0 || b >= BITS ? (T)(a < 0 ? -1 : 0) : shifted;                \
    }                                                                             \
    static inline T reciprocal_one_##S(T x)                                       \
    {                                                                             \
        /* 1 / 0 is the minimum for 32 and 64 bits (NumPy on x86-64), else 0 */   \
        T zero = BITS >= 32 ? (T)((U)1 << (BITS - 1)) : 0;                        \
        return x == 1 || x == -1 ? x : x == 0 ? zero : 0;                         \
    }

#define INTEGER_UNSIGNED_HELPERS(S, T, U, BITS)                                   \
    static inline T floordiv_one_##S(T a, T b) { return b == 0 ? 0 : (T)(a / b); } \
    static inline T mod_one_##S(T a, T b) { return b == 0 ? 0 : (T)(a % b); }     \
    static inline T pow_one_##S(T a, T b)                                         \
    {                                                                             \
        U result = 1, base = (U)a, e = (U)b;                                      \
        while (e != 0) {                                                          \
            if (e & 1U)                                                           \
                result *= base;                                                   \
            base *= base;                                                         \
            e >>= 1;                                                              \
        }                                                                         \
        return (T)result;                                                         \
    }                                                                             \
    static inline T shl_one_##S(T a, T b)                                         \
    {                                                                             \
        T shifted = (T)((U)a << ((unsigned)b & (BITS - 1)));                      \
        return b >= BITS ? 0 : shifted;                                           \
    }                                                                             \
    static inline T shr_one_##S(T a, T b)                                         \
    {                                                                             \
        T shifted = (T)(a >> ((unsigned)b & (BITS - 1)));                         \
        return b >= BITS ? 0 : shifted;                                           \
    }                                                                             \
    static inline T reciprocal_one_##S(T x) { return (T)(x == 1); }

/* The rows every integer type has beyond INTEGER's; SIGN_EXPR: sign(x). */
#define INTEGER_MORE(S, T, U, SIGN_EXPR)                           \
    UNARY(pos_##S, T, x)                                           \
    UNARY(bitnot_##S, T, ~(U)x)                                    \
    UNARY(sign_##S, T, SIGN_EXPR)                                  \
    UNARY(square_##S, T, (U)x * (U)x)                              \
    UNARY(reciprocal_##S, T, reciprocal_one_##S(x))                \
    UNARY(round_##S, T, x)                                         \
    BINARY2(shl_##S, T, T, shl_one_##S(x, y))                      \
    BINARY2(shr_##S, T, T, shr_one_##S(x, y))                      \
    BINARY(floordiv_##S, T, T, floordiv_one_##S(x, y))             \
    BINARY(mod_##S, T, T, mod_one_##S(x, y))                       \
    POW_INT(S, T, U)

/* Integer ** by squaring, a block at a time so that gcc vectorises it: every
 * element of the block squares as often as the block's largest exponent
 * needs (a ** 2: twice), multiplying in its base where its bit is set; a
 * negative exponent (signed types) takes pow_one's truncated result.
 * Wrapping as pow_one (the same products in U).  Measured, i32 a ** 2 + b
 * over 1M elements: 1.24 ms with pow_one per element. */
#define POW_INT(S, T, U)                                                                   \
    CLONES void bcg_mk_pow_##S(T *out, const T *a, long sa, const T *b, long sb, long n)  \
    {                                                                                      \
        for (long i = 0; i < n; i += GATHER_BLOCK) {                                       \
            const long m = n - i < GATHER_BLOCK ? n - i : GATHER_BLOCK;                    \
            T xs[GATHER_BLOCK], ys[GATHER_BLOCK];                                          \
            U result[GATHER_BLOCK], base[GATHER_BLOCK], e[GATHER_BLOCK];                   \
            GATHER(T, xs, a, sa, i, m);                                                    \
            GATHER(T, ys, b, sb, i, m);                                                    \
            U largest = 0;                                                                 \
            for (long k = 0; k < m; k++) {                                                 \
                result[k] = 1;                                                             \
                base[k] = (U)xs[k];                                                        \
                e[k] = ys[k] < 1 ? 0 : (U)ys[k]; /* (a negative one: below) */             \
                largest |= e[k];                                                           \
            }                                                                              \
            for (; largest != 0; largest >>= 1)                                            \
                for (long k = 0; k < m; k++) {                                             \
                    result[k] *= (e[k] & 1) ? base[k] : 1;                                 \
                    base[k] *= base[k];                                                    \
                    e[k] >>= 1;                                                            \
                }                                                                          \
            for (long k = 0; k < m; k++)                                                   \
                out[i + k] = ys[k] < 1 && ys[k] != 0 /* < 0 */                             \
                                 ? pow_one_##S(xs[k], ys[k]) : (T)result[k];               \
        }                                                                                  \
    }

INTEGER_SIGNED_HELPERS(i8, int8_t, unsigned int, 8)
INTEGER_SIGNED_HELPERS(i16, int16_t, unsigned int, 16)
INTEGER_SIGNED_HELPERS(i32, int32_t, uint32_t, 32)
INTEGER_SIGNED_HELPERS(i64, int64_t, uint64_t, 64)
INTEGER_UNSIGNED_HELPERS(u8, uint8_t, unsigned int, 8)
INTEGER_UNSIGNED_HELPERS(u16, uint16_t, unsigned int, 16)
INTEGER_UNSIGNED_HELPERS(u32, uint32_t, uint32_t, 32)
INTEGER_UNSIGNED_HELPERS(u64, uint64_t, uint64_t, 64)
INTEGER_MORE(i8, int8_t, unsigned int, (x > 0) - (x < 0))
INTEGER_MORE(i16, int16_t, unsigned int, (x > 0) - (x < 0))
INTEGER_MORE(i32, int32_t, uint32_t, (x > 0) - (x < 0))
INTEGER_MORE(i64, int64_t, uint64_t, (x > 0) - (x < 0))
INTEGER_MORE(u8, uint8_t, unsigned int, x > 0)
INTEGER_MORE(u16, uint16_t, unsigned int, x > 0)
INTEGER_MORE(u32, uint32_t, uint32_t, x > 0)
INTEGER_MORE(u64, uint64_t, uint64_t, x > 0)

/* mul_q7, mul_q15, mul_q31: floor(x * y / 2^F) (an arithmetic shift of the
 * exact product, gcc's >> of a negative value), only MIN * MIN past MAX. */
#define MUL_Q(F, S, T, MAX)                                                        \
    BINARY2(mul_q##F##_##S, T, T,                                                  \
            ((int64_t)x * y) >> F > (MAX) ? (MAX) : (T)(((int64_t)x * y) >> F))
MUL_Q(7, i8, int8_t, INT8_MAX)
MUL_Q(15, i16, int16_t, INT16_MAX)
MUL_Q(31, i32, int32_t, INT32_MAX)

/* -- f32 and f64 (F: the libm suffix, "f" or "") -- */
#define FLOAT_HELPERS(S, T, F, BITS_T, SIGN, LN2, LOG2E, DEG2RAD, RAD2DEG)              \
    static inline T floordiv_one_##S(T a, T b) /* NumPy's npy_divmod, quotient */       \
    {                                                                                   \
        if (b == 0)                                                                     \
            return a / b;                                                               \
        T mod = fmod##F(a, b);                                                          \
        T div = (a - mod) / b;                                                          \
        if (mod != 0 && ((b < 0) != (mod < 0)))                                         \
            div -= 1;                                                                   \
        if (div == 0)                                                                   \
            return copysign##F(0, a / b);                                               \
        T floordiv = floor##F(div);                                                     \
        if (div - floordiv > (T)0.5)                                                    \
            floordiv += 1;                                                              \
        return floordiv;                                                                \
    }                                                                                   \
    static inline T mod_one_##S(T a, T b) /* remainder: the divisor's sign */           \
    {                                                                                   \
        T mod = fmod##F(a, b);                                                          \
        if (b == 0)                                                                     \
            return mod;                                                                 \
        if (mod != 0) {                                                                 \
            if ((b < 0) != (mod < 0))                                                   \
                mod += b;                                                               \
        } else {                                                                        \
            mod = copysign##F(0, b);                                                    \
        }                                                                               \
        return mod;                                                                     \
    }                                                                                   \
    static inline T logaddexp_one_##S(T x, T y) /* npy_logaddexp */                     \
    {                                                                                   \
        if (x == y)                                                                     \
            return x + LN2;                                                             \
        T d = x - y;                                                                    \
        if (d > 0)                                                                      \
            return x + log1p##F(exp##F(-d));                                            \
        if (d <= 0)                                                                     \
            return y + log1p##F(exp##F(d));                                             \
        return d;                                                                       \
    }                                                                                   \
    static inline T logaddexp2_one_##S(T x, T y) /* npy_logaddexp2 */                   \
    {                                                                                   \
        if (x == y)                                                                     \
            return x + 1;                                                               \
        T d = x - y;                                                                    \
        if (d > 0)                                                                      \
            return x + LOG2E * log1p##F(exp2##F(-d));                                   \
        if (d <= 0)                                                                     \
            return y + LOG2E * log1p##F(exp2##F(d));                                    \
        return d;                                                                       \
    }                                                                                   \
    static inline T expit_one_##S(T x)                                                  \
    {                                                                                   \
        if (x < 0) {                                                                    \
            T e = exp##F(x);                                                            \
            return e / (1 + e);                                                         \
        }                                                                               \
        return 1 / (1 + exp##F(-x));                                                    \
    }                                                                                   \
    static inline T sign_one_##S(T x)                                                   \
    {                                                                                   \
        return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x;                       \
    }                                                                                   \
    static inline BITS_T float_bits_##S(T x)                                            \
    {                                                                                   \
        BITS_T u;                                                                       \
        memcpy(&u, &x, sizeof u);                                                       \
        return u;                                                                       \
    }                                                                                   \
    static inline T float_from_##S(BITS_T u)                                            \
    {                                                                                   \
        T x;                                                                            \
        memcpy(&x, &u, sizeof x);                                                       \
        return x;                                                                       \
    }                                                                                   \
    static inline T copysign_one_##S(T x, T y) /* IEEE copySign: the bits */            \
    {                                                                                   \
        return float_from_##S((float_bits_##S(x) & ~(BITS_T)SIGN) |                     \
                              (float_bits_##S(y) & (BITS_T)SIGN));                      \
    }                                                                                   \
    /* a NaN quiet (gen/ops.c quiet_f32/f64: fmin, fmax and hypot see any NaN */      \
    /* as a quiet one on every path, which glibc's do not) */                           \
    static inline T quiet_##S(T x)                                                      \
    {                                                                                   \
        return x != x ? float_from_##S(float_bits_##S(x) | (BITS_T)(SIGN >> QUIET_SHIFT_##S)) \
                      : x;                                                              \
    }                                                                                   \
    /* fmin and fmax called in the C library, as the straight-line code and   */       \
    /* eval.c call them: gcc's inline expansion returns the other zero of two  */       \
    /* (-0.0, +0.0); the pointer is volatile so that gcc cannot expand it */            \
    static T (*volatile const fmin_pointer_##S)(T, T) = fmin##F;                        \
    static T (*volatile const fmax_pointer_##S)(T, T) = fmax##F;                        \
    static inline T fmin_libm_##S(T x, T y)                                             \
    {                                                                                   \
        return fmin_pointer_##S(quiet_##S(x), quiet_##S(y));                            \
    }                                                                                   \
    static inline T fmax_libm_##S(T x, T y)                                             \
    {                                                                                   \
        return fmax_pointer_##S(quiet_##S(x), quiet_##S(y));                            \
    }                                                                                   \
    static inline T hypot_libm_##S(T x, T y) { return hypot##F(quiet_##S(x), quiet_##S(y)); } \
    static inline T deg2rad_one_##S(T x) { return x * DEG2RAD; }                        \
    static inline T rad2deg_one_##S(T x) { return x * RAD2DEG; }

#define QUIET_SHIFT_f32 9  /* the quiet bit: the sign bit shifted right */
#define QUIET_SHIFT_f64 12
FLOAT_HELPERS(f32, float, f, uint32_t, 0x80000000u, 0.693147182f, 1.44269502f,
              0.0174532924f, 57.2957764f)
FLOAT_HELPERS(f64, double, , uint64_t, 0x8000000000000000ull, 0.6931471805599453,
              1.4426950408889634, 0.017453292519943295, 57.29577951308232)

/* pow: f64's pow; f32 through double pow, rounded once (docs/semantics.md). */
#define POW_f32(x, y) (float)pow((double)(x), (double)(y))
#define POW_f64(x, y) pow(x, y)

#define FLOAT_MORE(S, T, F)                                                            \
    UNARY(pos_##S, T, x)                                                               \
    UNARY(sign_##S, T, sign_one_##S(x))                                                \
    UNARY(square_##S, T, x * x)                                                        \
    UNARY(reciprocal_##S, T, (T)1 / x)                                                 \
    UNARY(round_##S, T, rint##F(x))                                                    \
    UNARY(rint_##S, T, rint##F(x))                                                     \
    UNARY(trunc_##S, T, trunc##F(x))                                                   \
    UNARY(deg2rad_##S, T, deg2rad_one_##S(x))                                          \
    UNARY(rad2deg_##S, T, rad2deg_one_##S(x))                                          \
    UNARY(cbrt_##S, T, cbrt##F(x))                                                     \
    UNARY(arcsin_##S, T, asin##F(x))                                                   \
    UNARY(arccos_##S, T, acos##F(x))                                                   \
    UNARY(sinh_##S, T, sinh##F(x))                                                     \
    UNARY(cosh_##S, T, cosh##F(x))                                                     \
    UNARY(arcsinh_##S, T, asinh##F(x))                                                 \
    UNARY(arccosh_##S, T, acosh##F(x))                                                 \
    UNARY(arctanh_##S, T, atanh##F(x))                                                 \
    UNARY(erfc_##S, T, erfc##F(x))                                                     \
    UNARY_TO(isnan_##S, T, uint8_t, x != x)                                            \
    UNARY_TO(isinf_##S, T, uint8_t, (x == x) & (x - x != 0))                           \
    UNARY_TO(isfinite_##S, T, uint8_t, x - x == 0)                                     \
    UNARY_TO(signbit_##S, T, uint8_t, float_bits_##S(x) >> (8 * sizeof(T) - 1))        \
    BINARY2(copysign_##S, T, T, copysign_one_##S(x, y))                                \
    BINARY_CHECKED(fmin_##S, T, x < y ? x : y, x == x && y == y && x != y,             \
                   fmin_libm_##S)                                                      \
    BINARY_CHECKED(fmax_##S, T, x > y ? x : y, x == x && y == y && x != y,             \
                   fmax_libm_##S)                                                      \
    BINARY(floordiv_##S, T, T, floordiv_one_##S(x, y))                                 \
    BINARY(mod_##S, T, T, mod_one_##S(x, y))                                           \
    BINARY(pow_##S, T, T, POW_##S(x, y))                                               \
    BINARY(arctan2_##S, T, T, atan2##F(x, y))                                          \
    BINARY(hypot_##S, T, T, hypot_libm_##S(x, y))                                      \
    BINARY(nextafter_##S, T, T, nextafter##F(x, y))                                    \
    BINARY(fmod_##S, T, T, fmod##F(x, y))                                              \
    BINARY(logaddexp_##S, T, T, logaddexp_one_##S(x, y))                               \
    BINARY(logaddexp2_##S, T, T, logaddexp2_one_##S(x, y))

FLOAT_MORE(f32, float, f)
FLOAT_MORE(f64, double, )

/* f64's issue-13 functions (f32 has the polynomials): the C library. */
UNARY(log1p_f64, double, log1p(x))
UNARY(expm1_f64, double, expm1(x))
UNARY(log2_f64, double, log2(x))
UNARY(log10_f64, double, log10(x))
UNARY(exp2_f64, double, exp2(x))
UNARY(expit_f64, double, expit_one_f64(x))
UNARY(tan_f64, double, tan(x))
UNARY(arctan_f64, double, atan(x))
UNARY(erf_f64, double, erf(x))

/* -- bool: bytes, any non-zero one true; results 0 or 1 (the straight-line
 * code loads a bool as `!= 0` and computes on 0 and 1) -- */
#define BOOL_BINARY(NAME, EXPR) BINARY2(NAME##_bool, uint8_t, uint8_t, EXPR)
#define BX (x != 0)
#define BY (y != 0)
BOOL_BINARY(and, BX & BY)
BOOL_BINARY(or, BX | BY)
BOOL_BINARY(logical_xor, BX ^ BY)
BOOL_BINARY(bitand, BX & BY)
BOOL_BINARY(bitor, BX | BY)
BOOL_BINARY(bitxor, BX ^ BY)
BOOL_BINARY(add, BX | BY)
BOOL_BINARY(sub, BX ^ BY)
BOOL_BINARY(mul, BX & BY)
BOOL_BINARY(minimum, BX & BY)
BOOL_BINARY(maximum, BX | BY)
BOOL_BINARY(eq, BX == BY)
BOOL_BINARY(ne, BX != BY)
BOOL_BINARY(lt, BX < BY)
BOOL_BINARY(le, BX <= BY)
BOOL_BINARY(gt, BX > BY)
BOOL_BINARY(ge, BX >= BY)
UNARY(not_bool, uint8_t, x == 0)
UNARY(bitnot_bool, uint8_t, x == 0)
UNARY(pos_bool, uint8_t, x != 0)
UNARY(abs_bool, uint8_t, x != 0)
UNARY(neg_bool, uint8_t, x != 0)
#undef BX
#undef BY

/* where on bool values: the chosen byte as 0 or 1. */
CLONES void bcg_mk_where_bool(uint8_t *out, const uint8_t *c, long sc, const uint8_t *a, long sa,
                              const uint8_t *b, long sb, long n)
{
    bcg_mk_where_u8(out, c, sc, a, sa, b, sb, n);
    for (long i = 0; i < n; i++)
        out[i] = out[i] != 0;
}

/* -- f16 and bf16: in float, each result rounded (HALF_UNARY, HALF_BINARY) --
 * as the straight-line code computes them (gen/cexpr.c, put_computed) */
#define HALF_COMPARE(NAME, S, EXPR)                                                          \
    CLONES void bcg_mk_##NAME##_##S(uint8_t *out, const uint16_t *a, long sa,               \
                                    const uint16_t *b, long sb, long n)                     \
    {                                                                                        \
        float xs[HALF_BLOCK], ys[HALF_BLOCK];                                                \
        for (long start = 0; start < n; start += HALF_BLOCK) {                               \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                    \
            widen_##S(xs, a + start * sa, sa, count);                                        \
            widen_##S(ys, b + start * sb, sb, count);                                        \
            for (long k = 0; k < count; k++) {                                               \
                const float x = xs[k], y = ys[k];                                            \
                out[start + k] = (uint8_t)(EXPR);                                            \
            }                                                                                \
        }                                                                                    \
    }
#define HALF_TEST(NAME, S, EXPR)                                                             \
    CLONES void bcg_mk_##NAME##_##S(uint8_t *out, const uint16_t *a, long sa, long n)       \
    {                                                                                        \
        float xs[HALF_BLOCK];                                                                \
        for (long start = 0; start < n; start += HALF_BLOCK) {                               \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                    \
            widen_##S(xs, a + start * sa, sa, count);                                        \
            for (long k = 0; k < count; k++) {                                               \
                const float x = xs[k];                                                       \
                out[start + k] = (uint8_t)(EXPR);                                            \
            }                                                                                \
        }                                                                                    \
    }

/* where on 16-bit floats: the chosen bits, a NaN made quiet as the load and
 * store of the straight-line code make it (QUIET: the quiet bit; INF: the
 * bits of infinity). */
#define HALF_WHERE(S, QUIET, INF)                                                             \
    CLONES void bcg_mk_where_##S(uint16_t *out, const uint8_t *c, long sc, const uint16_t *a, \
                                 long sa, const uint16_t *b, long sb, long n)                 \
    {                                                                                         \
        bcg_mk_where_u16(out, c, sc, a, sa, b, sb, n);                                        \
        for (long i = 0; i < n; i++) {                                                        \
            uint16_t r = out[i];                                                              \
            out[i] = (uint16_t)((r & 0x7fffu) > (INF) ? r | (QUIET) : r);                     \
        }                                                                                     \
    }

#define HALF_MORE(S)                                                                  \
    HALF_UNARY(neg, S, -x)                                                            \
    HALF_UNARY(pos, S, x)                                                             \
    HALF_UNARY(abs, S, fabsf(x))                                                      \
    HALF_UNARY(floor, S, floorf(x))                                                   \
    HALF_UNARY(ceil, S, ceilf(x))                                                     \
    HALF_UNARY(trunc, S, truncf(x))                                                   \
    HALF_UNARY(rint, S, rintf(x))                                                     \
    HALF_UNARY(round, S, rintf(x))                                                    \
    HALF_UNARY(sign, S, sign_one_f32(x))                                              \
    HALF_UNARY(square, S, x * x)                                                      \
    HALF_UNARY(reciprocal, S, 1.0f / x)                                               \
    HALF_UNARY(deg2rad, S, deg2rad_one_f32(x))                                        \
    HALF_UNARY(rad2deg, S, rad2deg_one_f32(x))                                        \
    HALF_UNARY(exp, S, expf(x))                                                       \
    HALF_UNARY(log, S, logf(x))                                                       \
    HALF_UNARY(sin, S, sinf(x))                                                       \
    HALF_UNARY(cos, S, cosf(x))                                                       \
    HALF_UNARY(tanh, S, tanhf(x))                                                     \
    HALF_UNARY(log1p, S, log1pf(x))                                                   \
    HALF_UNARY(expm1, S, expm1f(x))                                                   \
    HALF_UNARY(log2, S, log2f(x))                                                     \
    HALF_UNARY(log10, S, log10f(x))                                                   \
    HALF_UNARY(exp2, S, exp2f(x))                                                     \
    HALF_UNARY(cbrt, S, cbrtf(x))                                                     \
    HALF_UNARY(tan, S, tanf(x))                                                       \
    HALF_UNARY(arcsin, S, asinf(x))                                                   \
    HALF_UNARY(arccos, S, acosf(x))                                                   \
    HALF_UNARY(arctan, S, atanf(x))                                                   \
    HALF_UNARY(sinh, S, sinhf(x))                                                     \
    HALF_UNARY(cosh, S, coshf(x))                                                     \
    HALF_UNARY(arcsinh, S, asinhf(x))                                                 \
    HALF_UNARY(arccosh, S, acoshf(x))                                                 \
    HALF_UNARY(arctanh, S, atanhf(x))                                                 \
    HALF_UNARY(erf, S, erff(x))                                                       \
    HALF_UNARY(erfc, S, erfcf(x))                                                     \
    HALF_UNARY(expit, S, expit_one_f32(x))                                            \
    HALF_BINARY(floordiv, S, floordiv_one_f32(x, y))                                  \
    HALF_BINARY(mod, S, mod_one_f32(x, y))                                            \
    HALF_BINARY(pow, S, POW_f32(x, y))                                                \
    HALF_BINARY(arctan2, S, atan2f(x, y))                                             \
    HALF_BINARY(hypot, S, hypot_libm_f32(x, y))                                       \
    HALF_BINARY(copysign, S, copysign_one_f32(x, y))                                  \
    HALF_BINARY(nextafter, S, nextafterf(x, y))                                       \
    HALF_BINARY(fmod, S, fmodf(x, y))                                                 \
    HALF_BINARY(fmin, S, fmin_libm_f32(x, y))                                         \
    HALF_BINARY(fmax, S, fmax_libm_f32(x, y))                                         \
    HALF_BINARY(logaddexp, S, logaddexp_one_f32(x, y))                                \
    HALF_BINARY(logaddexp2, S, logaddexp2_one_f32(x, y))                              \
    HALF_COMPARE(eq, S, x == y)                                                       \
    HALF_COMPARE(ne, S, x != y)                                                       \
    HALF_COMPARE(lt, S, x < y)                                                        \
    HALF_COMPARE(le, S, x <= y)                                                       \
    HALF_COMPARE(gt, S, x > y)                                                        \
    HALF_COMPARE(ge, S, x >= y)                                                       \
    HALF_TEST(isnan, S, x != x)                                                       \
    HALF_TEST(isinf, S, (x == x) & (x - x != 0))                                      \
    HALF_TEST(isfinite, S, x - x == 0)                                                \
    HALF_TEST(signbit, S, bits_of(x) >> 31)

HALF_MORE(f16)
HALF_MORE(bf16)
HALF_WHERE(f16, 0x200u, 0x7c00u)
HALF_WHERE(bf16, 0x40u, 0x7f80u)

/* Conversions of the 16-bit floats (the straight-line code's: a load is
 * exact, a NaN made quiet; a store rounds to nearest even): to and from
 * bool, to f32 and f64, from f32, and to themselves (a copy through float,
 * so a NaN is made quiet as the straight-line copy makes it).  ONE: 1.0's
 * bits. */
#define HALF_CASTS(S, ONE)                                                                 \
    CLONES void bcg_mk_cast_##S##_bool(uint8_t *out, const uint16_t *a, long sa, long n)   \
    {                                                                                      \
        for (long i = 0; i < n; i++)                                                       \
            out[i] = (a[i * sa] & 0x7fffu) != 0;                                           \
    }                                                                                      \
    CLONES void bcg_mk_cast_bool_##S(uint16_t *out, const uint8_t *a, long sa, long n)     \
    {                                                                                      \
        for (long i = 0; i < n; i++)                                                       \
            out[i] = a[i * sa] != 0 ? (ONE) : 0;                                           \
    }                                                                                      \
    CLONES void bcg_mk_cast_##S##_f32(float *out, const uint16_t *a, long sa, long n)      \
    {                                                                                      \
        widen_##S(out, a, sa, n);                                                          \
    }                                                                                      \
    CLONES void bcg_mk_cast_##S##_f64(double *out, const uint16_t *a, long sa, long n)     \
    {                                                                                      \
        float xs[HALF_BLOCK];                                                              \
        for (long start = 0; start < n; start += HALF_BLOCK) {                             \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                  \
            widen_##S(xs, a + start * sa, sa, count);                                      \
            for (long k = 0; k < count; k++)                                               \
                out[start + k] = (double)xs[k];                                            \
        }                                                                                  \
    }                                                                                      \
    CLONES void bcg_mk_cast_f32_##S(uint16_t *out, const float *a, long sa, long n)        \
    {                                                                                      \
        float xs[HALF_BLOCK];                                                              \
        for (long start = 0; start < n; start += HALF_BLOCK) {                             \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                  \
            for (long k = 0; k < count; k++)                                               \
                xs[k] = a[(start + k) * sa];                                               \
            narrow_##S(out + start, xs, count);                                            \
        }                                                                                  \
    }                                                                                      \
    HALF_UNARY(cast_##S, S, x)

HALF_CASTS(f16, 0x3c00u)
HALF_CASTS(bf16, 0x3f80u)

/* Between the 16-bit floats and the integers: to an integer as from float
 * (truncated, NaN 0, saturated: CAST_F_I), from one through float (NumPy's
 * casts to float16: exact up to 2^24, rounded once more above). */
#define HALF_INT_CASTS(S, TS, TT, LO, HI, MIN, MAX)                                        \
    CLONES void bcg_mk_cast_##S##_##TS(TT *out, const uint16_t *a, long sa, long n)        \
    {                                                                                      \
        float xs[HALF_BLOCK];                                                              \
        for (long start = 0; start < n; start += HALF_BLOCK) {                             \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                  \
            widen_##S(xs, a + start * sa, sa, count);                                      \
            for (long k = 0; k < count; k++) {                                             \
                const float x = xs[k];                                                     \
                out[start + k] = CAST_F_I(TT, LO, HI, MIN, MAX, float);                    \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    CLONES void bcg_mk_cast_##TS##_##S(uint16_t *out, const TT *a, long sa, long n)        \
    {                                                                                      \
        float xs[HALF_BLOCK];                                                              \
        for (long start = 0; start < n; start += HALF_BLOCK) {                             \
            long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;                  \
            for (long k = 0; k < count; k++)                                               \
                xs[k] = (float)a[(start + k) * sa];                                        \
            narrow_##S(out + start, xs, count);                                            \
        }                                                                                  \
    }
#define HALF_INT_CASTS_ALL(S)                                                              \
    HALF_INT_CASTS(S, i8, int8_t, -128.0, 128.0, INT8_MIN, INT8_MAX)                       \
    HALF_INT_CASTS(S, i16, int16_t, -32768.0, 32768.0, INT16_MIN, INT16_MAX)               \
    HALF_INT_CASTS(S, i32, int32_t, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX)     \
    HALF_INT_CASTS(S, i64, int64_t, -9223372036854775808.0, 9223372036854775808.0,         \
                   INT64_MIN, INT64_MAX)                                                   \
    HALF_INT_CASTS(S, u8, uint8_t, -1.0, 256.0, 0, UINT8_MAX)                              \
    HALF_INT_CASTS(S, u16, uint16_t, -1.0, 65536.0, 0, UINT16_MAX)                         \
    HALF_INT_CASTS(S, u32, uint32_t, -1.0, 4294967296.0, 0, UINT32_MAX)                    \
    HALF_INT_CASTS(S, u64, uint64_t, -1.0, 18446744073709551616.0, 0, UINT64_MAX)
HALF_INT_CASTS_ALL(f16)
HALF_INT_CASTS_ALL(bf16)

/* f16 to bf16 and back: exact into float, rounded once. */
CLONES void bcg_mk_cast_f16_bf16(uint16_t *out, const uint16_t *a, long sa, long n)
{
    float xs[HALF_BLOCK];
    for (long start = 0; start < n; start += HALF_BLOCK) {
        long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;
        widen_f16(xs, a + start * sa, sa, count);
        narrow_bf16(out + start, xs, count);
    }
}

CLONES void bcg_mk_cast_bf16_f16(uint16_t *out, const uint16_t *a, long sa, long n)
{
    float xs[HALF_BLOCK];
    for (long start = 0; start < n; start += HALF_BLOCK) {
        long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;
        widen_bf16(xs, a + start * sa, sa, count);
        narrow_f16(out + start, xs, count);
    }
}

/* f64 to f16 rounds once (NumPy's npy_double_to_half); to bf16 through
 * float, as the straight-line code converts. */
CLONES void bcg_mk_cast_f64_f16(uint16_t *out, const double *a, long sa, long n)
{
    for (long i = 0; i < n; i++)
        out[i] = half_from_double(a[i * sa]);
}

CLONES void bcg_mk_cast_f64_bf16(uint16_t *out, const double *a, long sa, long n)
{
    float xs[HALF_BLOCK];
    for (long start = 0; start < n; start += HALF_BLOCK) {
        long count = n - start < HALF_BLOCK ? n - start : HALF_BLOCK;
        for (long k = 0; k < count; k++)
            xs[k] = (float)a[(start + k) * sa];
        narrow_bf16(out + start, xs, count);
    }
}

/* The symbol table's entries of this section. */
#define MORE_INTEGER_ENTRIES(S)                                                            \
    ENTRY(pos_##S) ENTRY(bitnot_##S) ENTRY(sign_##S) ENTRY(square_##S)                     \
    ENTRY(reciprocal_##S) ENTRY(round_##S) ENTRY2(shl_##S) ENTRY2(shr_##S)                 \
    ENTRY(floordiv_##S) ENTRY(mod_##S) ENTRY(pow_##S)
#define MORE_FLOAT_ENTRIES(S)                                                              \
    ENTRY(pos_##S) ENTRY(sign_##S) ENTRY(square_##S) ENTRY(reciprocal_##S) ENTRY(round_##S) \
    ENTRY(rint_##S) ENTRY(trunc_##S) ENTRY(deg2rad_##S) ENTRY(rad2deg_##S) ENTRY(cbrt_##S) \
    ENTRY(arcsin_##S) ENTRY(arccos_##S) ENTRY(sinh_##S) ENTRY(cosh_##S) ENTRY(arcsinh_##S) \
    ENTRY(arccosh_##S) ENTRY(arctanh_##S) ENTRY(erfc_##S) ENTRY(isnan_##S)                 \
    ENTRY(isinf_##S) ENTRY(isfinite_##S) ENTRY(signbit_##S) ENTRY2(copysign_##S)           \
    ENTRY(fmin_##S) ENTRY(fmax_##S) ENTRY(floordiv_##S) ENTRY(mod_##S) ENTRY(pow_##S)      \
    ENTRY(arctan2_##S) ENTRY(hypot_##S) ENTRY(nextafter_##S) ENTRY(fmod_##S)               \
    ENTRY(logaddexp_##S) ENTRY(logaddexp2_##S)
#define MORE_HALF_ENTRIES(S)                                                               \
    ENTRY(neg_##S) ENTRY(pos_##S) ENTRY(abs_##S) ENTRY(floor_##S) ENTRY(ceil_##S)          \
    ENTRY(trunc_##S) ENTRY(rint_##S) ENTRY(round_##S) ENTRY(sign_##S) ENTRY(square_##S)    \
    ENTRY(reciprocal_##S) ENTRY(deg2rad_##S) ENTRY(rad2deg_##S) ENTRY(exp_##S)             \
    ENTRY(log_##S) ENTRY(sin_##S) ENTRY(cos_##S) ENTRY(tanh_##S) ENTRY(log1p_##S)          \
    ENTRY(expm1_##S) ENTRY(log2_##S) ENTRY(log10_##S) ENTRY(exp2_##S) ENTRY(cbrt_##S)      \
    ENTRY(tan_##S) ENTRY(arcsin_##S) ENTRY(arccos_##S) ENTRY(arctan_##S) ENTRY(sinh_##S)   \
    ENTRY(cosh_##S) ENTRY(arcsinh_##S) ENTRY(arccosh_##S) ENTRY(arctanh_##S) ENTRY(erf_##S) \
    ENTRY(erfc_##S) ENTRY(expit_##S) ENTRY(floordiv_##S) ENTRY(mod_##S) ENTRY(pow_##S)     \
    ENTRY(arctan2_##S) ENTRY(hypot_##S) ENTRY(copysign_##S) ENTRY(nextafter_##S)           \
    ENTRY(fmod_##S) ENTRY(fmin_##S) ENTRY(fmax_##S) ENTRY(logaddexp_##S)                   \
    ENTRY(logaddexp2_##S) ENTRY(eq_##S) ENTRY(ne_##S) ENTRY(lt_##S) ENTRY(le_##S)          \
    ENTRY(gt_##S) ENTRY(ge_##S) ENTRY(isnan_##S) ENTRY(isinf_##S) ENTRY(isfinite_##S)      \
    ENTRY(signbit_##S) ENTRY(where_##S) ENTRY(cast_##S##_bool) ENTRY(cast_bool_##S)        \
    ENTRY(cast_##S##_f32) ENTRY(cast_##S##_f64) ENTRY(cast_f32_##S) ENTRY(cast_##S##_##S)      \
    ENTRY(cast_f64_##S) ENTRY(cast_##S##_i8) ENTRY(cast_##S##_i16) ENTRY(cast_##S##_i32)    \
    ENTRY(cast_##S##_i64) ENTRY(cast_##S##_u8) ENTRY(cast_##S##_u16) ENTRY(cast_##S##_u32)  \
    ENTRY(cast_##S##_u64) ENTRY(cast_i8_##S) ENTRY(cast_i16_##S) ENTRY(cast_i32_##S)        \
    ENTRY(cast_i64_##S) ENTRY(cast_u8_##S) ENTRY(cast_u16_##S) ENTRY(cast_u32_##S)          \
    ENTRY(cast_u64_##S)
#define MORE_BOOL_ENTRIES                                                                  \
    ENTRY2(and_bool) ENTRY2(or_bool) ENTRY2(logical_xor_bool) ENTRY2(bitand_bool)          \
    ENTRY2(bitor_bool) ENTRY2(bitxor_bool) ENTRY2(add_bool) ENTRY2(sub_bool)               \
    ENTRY2(mul_bool) ENTRY2(minimum_bool) ENTRY2(maximum_bool) ENTRY2(eq_bool)             \
    ENTRY2(ne_bool) ENTRY2(lt_bool) ENTRY2(le_bool) ENTRY2(gt_bool) ENTRY2(ge_bool)        \
    ENTRY(not_bool) ENTRY(bitnot_bool) ENTRY(pos_bool) ENTRY(abs_bool) ENTRY(neg_bool)     \
    ENTRY(where_bool)
#define MORE_ENTRIES                                                                       \
    MORE_INTEGER_ENTRIES(i8) MORE_INTEGER_ENTRIES(i16) MORE_INTEGER_ENTRIES(i32)           \
    MORE_INTEGER_ENTRIES(i64) MORE_INTEGER_ENTRIES(u8) MORE_INTEGER_ENTRIES(u16)           \
    MORE_INTEGER_ENTRIES(u32) MORE_INTEGER_ENTRIES(u64)                                    \
    ENTRY2(mul_q7_i8) ENTRY2(mul_q15_i16) ENTRY2(mul_q31_i32)                              \
    MORE_FLOAT_ENTRIES(f32) MORE_FLOAT_ENTRIES(f64)                                        \
    ENTRY(log1p_f64) ENTRY(expm1_f64) ENTRY(log2_f64) ENTRY(log10_f64) ENTRY(exp2_f64)     \
    ENTRY(expit_f64) ENTRY(tan_f64) ENTRY(arctan_f64) ENTRY(erf_f64)                       \
    MORE_BOOL_ENTRIES MORE_HALF_ENTRIES(f16) MORE_HALF_ENTRIES(bf16) ENTRY(cast_f16_bf16)       \
    ENTRY(cast_bf16_f16)

/* ---- streaming stores ----------------------------------------------------------------
 *
 * Kernels that touch a lot of memory (bcg_options.stream_stores) call the
 * root operation's _nt variant (BINARY_NT, WHERE_NT above): it computes STREAM_BLOCK
 * bytes of results in registers (gcc keeps the block there) and writes them
 * with non-temporal stores, which go to memory through the write-combining
 * buffers without first reading the destination lines into the cache (the
 * "write-allocate" read a plain store causes: writing N bytes moves 2N, and
 * evicts the inputs).  The values are those of the plain function, bit for
 * bit; the unaligned head and the tail are written by it.  Non-temporal
 * stores are weakly ordered, so a kernel that used them ends with
 * bcg_mk_fence (sfence): its writes are visible to other threads before it
 * returns, as a plain kernel's are.  SSE2 (every x86-64) streams 16 bytes a
 * store; elsewhere both are plain stores. */
void bcg_mk_fence(void)
{
#ifdef HAVE_STREAM
    _mm_sfence();
#endif
}

/* A fused program's output tile (gen/lower.c, "roots"): N bytes from A to
 * OUT, the same bytes as memcpy, with streaming stores from OUT's first
 * 64-byte boundary (the head and the tail by memcpy); the kernel ends with
 * bcg_mk_fence as for the _nt functions. */
void bcg_mk_copy_nt(void *out, const void *a, long n)
{
    unsigned char *d = out;
    const unsigned char *s = a;
    long i = (long)(((uintptr_t)0 - (uintptr_t)d) & 63);
    if (i > n)
        i = n;
    memcpy(d, s, (size_t)i);
    for (; i + 64 <= n; i += 64)
        stream_line(d + i, s + i);
    memcpy(d + i, s + i, (size_t)(n - i));
}

/* ---- 2-D tiles: gathers and scatters ---------------------------------------------
 *
 * A kernel whose innermost run is short (a run of 3: an image times a
 * per-channel gain) runs its tree over tiles of whole rows of the two
 * innermost loops (gen/lower.c, "2-D tiles"): ROWS runs of RUN elements,
 * run r of an operand at src + r * ro, element j of it at + j * si.  An
 * operand that is not contiguous over those rows * run elements is first
 * laid out in a contiguous tile by a gather, once per tile however many
 * calls read it; a root whose output is not contiguous over the tile is
 * computed into a tile and scattered.  The functions go by element size
 * (BITS 8, 16, 32, 64: the bits are copied, whatever the dtype):
 *
 *   void bcg_mk_gather_rows_BITS(void *dst, const void *src, long rows,
 *                                long run, long ro, long si)
 *        dst[r * run + j] = src[r * ro + j * si]
 *   void bcg_mk_scatter_rows_BITS(void *dst, long ro, long si,
 *                                 const void *src, long rows, long run)
 *        dst[r * ro + j * si] = src[r * run + j]
 *
 * Each run length up to ROWS_UNROLLED is its own loop with the run a
 * constant (gcc unrolls it, or vectorises a row at a time), and the inner
 * strides 1 (a row), 0 (a per-row value) and -1 (a reversed row) have
 * their own loops; one row of a long run (the 1-D tiles' gather, rows 1)
 * goes through the general loop, which gcc vectorises for strides 1 and 0.
 * A gather's rows of stride 1 longer than ROWS_UNROLLED are copied by
 * copy_row: gcc's loop over a run it does not know did the run's last
 * elements short of its 64-byte vector one at a time (u8 rows of 48: all
 * of them), and a memcpy call a row cost more than the loop on i32 rows of
 * 48 (maximum(a, a) rows reversed: cc / JIT 0.91 with the loop, 0.76
 * with memcpy).  Rows
 * of stride 2 to 4 that long go through the 1-D gather's loops for those
 * strides (gather_BITS), which gcc vectorises with permutes, where the
 * general loop here moved an element at a time (minimum(f32(a), 0.5), a
 * f32 stride 3 along rows of 42, sweep seed 95 case 26: the gather took
 * as long as the cc backend's whole kernel; see the commit). */
#define ROWS_UNROLLED 16

/* N bytes (16 or more) from SRC to DST, apart: whole blocks of 32 bytes
 * (16 under 32), the last one overlapping the one before where N is not a
 * multiple of the block (no byte-at-a-time remainder).  The blocks are
 * vector types: gcc wrote memcpy(.., 32) as two 16-byte moves even in the
 * AVX2 clone. */
typedef unsigned char row_block32 __attribute__((vector_size(32), aligned(1), may_alias));
typedef unsigned char row_block16 __attribute__((vector_size(16), aligned(1), may_alias));
static inline void copy_row(unsigned char *dst, const unsigned char *src, size_t n)
{
    if (n >= 32) {
        size_t i = 0;
        for (; i + 32 <= n; i += 32)
            *(row_block32 *)(dst + i) = *(const row_block32 *)(src + i);
        if (i < n)
            *(row_block32 *)(dst + n - 32) = *(const row_block32 *)(src + n - 32);
    } else if (n >= 16) {
        *(row_block16 *)dst = *(const row_block16 *)src;
        *(row_block16 *)(dst + n - 16) = *(const row_block16 *)(src + n - 16);
    } else {
        memcpy(dst, src, n);
    }
}

#define GATHER_ROWS_BODY(T, RUN)                                                     \
    do {                                                                             \
        if (si == 1 && ro == (RUN)) {                                                \
            memcpy(dst, src, (size_t)(rows * (RUN)) * sizeof(T));                    \
        } else if (si == 1 && (RUN) > ROWS_UNROLLED) {                               \
            for (long r = 0; r < rows; r++)                                          \
                copy_row((unsigned char *)(dst + r * (RUN)),                         \
                         (const unsigned char *)(src + r * ro),                      \
                         (size_t)(RUN) * sizeof(T));                                 \
        } else if (si == 1) {                                                        \
            for (long r = 0; r < rows; r++)                                          \
                for (long j = 0; j < (RUN); j++)                                     \
                    dst[r * (RUN) + j] = src[r * ro + j];                            \
        } else if (si == 0) {                                                        \
            for (long r = 0; r < rows; r++) {                                        \
                const T v = src[r * ro];                                             \
                for (long j = 0; j < (RUN); j++)                                     \
                    dst[r * (RUN) + j] = v;                                          \
            }                                                                        \
        } else if (si == -1) {                                                       \
            for (long r = 0; r < rows; r++)                                          \
                for (long j = 0; j < (RUN); j++)                                     \
                    dst[r * (RUN) + j] = src[r * ro - j];                            \
        } else {                                                                     \
            for (long r = 0; r < rows; r++)                                          \
                for (long j = 0; j < (RUN); j++)                                     \
                    dst[r * (RUN) + j] = src[r * ro + j * si];                       \
        }                                                                            \
    } while (0)

#define SCATTER_ROWS_BODY(T, RUN)                                                    \
    do {                                                                             \
        if (si == 1 && ro == (RUN)) {                                                \
            memcpy(dst, src, (size_t)(rows * (RUN)) * sizeof(T));                    \
        } else if (si == 1) {                                                        \
            for (long r = 0; r < rows; r++)                                          \
                for (long j = 0; j < (RUN); j++)                                     \
                    dst[r * ro + j] = src[r * (RUN) + j];                            \
        } else if (si == -1) {                                                       \
            for (long r = 0; r < rows; r++)                                          \
                for (long j = 0; j < (RUN); j++)                                     \
                    dst[r * ro - j] = src[r * (RUN) + j];                            \
        } else {                                                                     \
            for (long r = 0; r < rows; r++)                                          \
                for (long j = 0; j < (RUN); j++)                                     \
                    dst[r * ro + j * si] = src[r * (RUN) + j];                       \
        }                                                                            \
    } while (0)

/* The body for RUN as a constant when it is one of 1..ROWS_UNROLLED. */
#define ROWS_BY_RUN(BODY, T)                                                         \
    switch (run) {                                                                   \
    case 1: BODY(T, 1); break;                                                       \
    case 2: BODY(T, 2); break;                                                       \
    case 3: BODY(T, 3); break;                                                       \
    case 4: BODY(T, 4); break;                                                       \
    case 5: BODY(T, 5); break;                                                       \
    case 6: BODY(T, 6); break;                                                       \
    case 7: BODY(T, 7); break;                                                       \
    case 8: BODY(T, 8); break;                                                       \
    case 9: BODY(T, 9); break;                                                       \
    case 10: BODY(T, 10); break;                                                     \
    case 11: BODY(T, 11); break;                                                     \
    case 12: BODY(T, 12); break;                                                     \
    case 13: BODY(T, 13); break;                                                     \
    case 14: BODY(T, 14); break;                                                     \
    case 15: BODY(T, 15); break;                                                     \
    case 16: BODY(T, 16); break;                                                     \
    default: BODY(T, run); break;                                                    \
    }

/* A transposed operand (ro 1: the rows are neighbours in memory, each
 * element of a run on another line): the general loop reads a row of the
 * tile at a time, so every line of a tile's columns is touched ROWS times
 * and, with a power-of-two stride mapping them all to one L1 set, fetched
 * from L2 each time (transposed (2048,2048) f32 + a (2048,2048): 11x the
 * time of the blocked copy).  Strips of TRANSPOSE_STRIP columns, all the
 * tile's rows of each: a strip's lines are read while in L1, whole when the
 * tile has a line's worth of rows (gen/lower.c, "transposed input").
 * 32 and 64-bit elements go through SSE2 registers in 4 x 4 and 2 x 2
 * blocks; the bits are copied either way. */
#define TRANSPOSE_STRIP 8
/* Each column's next tile: the lines ROWS elements on, which the next
 * tile of the same columns reads (lower.c runs a strip of columns' tiles
 * one after another, a stream per column, more than the hardware
 * prefetchers follow).  Measured (a transposed 2048 x 2048 f32 + a row,
 * 16 rows by 256 columns a tile, interleaved): 1.07x a contiguous add's
 * time against 0.76x without.  Prefetches do not fault; the address is
 * formed as an integer, never as a pointer past the array. */
#define PREFETCH_NEXT_TILE(T, SRC, COLUMN)                                                   \
    __builtin_prefetch((const void *)((uintptr_t)(SRC) +                                     \
                                      (uintptr_t)((COLUMN) * si + rows) * sizeof(T)))
#define GATHER_TRANSPOSED_STRIPS(T, FIRST)                                                   \
    for (long j0 = (FIRST); j0 < run; j0 += TRANSPOSE_STRIP) {                               \
        const long m = run - j0 < TRANSPOSE_STRIP ? run - j0 : TRANSPOSE_STRIP;              \
        for (long j = j0; j < j0 + m; j++)                                                   \
            PREFETCH_NEXT_TILE(T, src, j);                                                   \
        for (long r = 0; r < rows; r++)                                                      \
            for (long j = j0; j < j0 + m; j++)                                               \
                dst[r * run + j] = src[r + j * si];                                          \
    }

/* 8 and 16-bit elements in 16 x 16 and 8 x 8 blocks through SSE2
 * registers (x_k: rows r.. of column j + k, as the 32-bit path): each
 * round of unpacks of x_k with x_{k + N/2} turns the bits (register,
 * position) of an element's index one place to the left, so log2 N rounds
 * swap them, a transpose.  Where the columns' elements are single bytes
 * loaded one at a time, as the strips do, the gather took as long as gcc's
 * whole loop nest (5 - a, u8 (93, 150) transposed: see the commit). */
#ifdef HAVE_STREAM
#define TRANSPOSE_ROUNDS(N, UNPACK_LO, UNPACK_HI, ROUNDS)                                    \
    for (int round = 0; round < (ROUNDS); round++) {                                         \
        __m128i y[N];                                                                        \
        for (int k = 0; k < (N) / 2; k++) {                                                  \
            y[2 * k] = UNPACK_LO(x[k], x[k + (N) / 2]);                                     \
            y[2 * k + 1] = UNPACK_HI(x[k], x[k + (N) / 2]);                                 \
        }                                                                                    \
        memcpy(x, y, sizeof x);                                                              \
    }
#define GATHER_TRANSPOSED_BLOCKS(T, N, UNPACK_LO, UNPACK_HI, ROUNDS)                         \
    for (; first + (N) <= run; first += (N)) {                                               \
        long r = 0;                                                                          \
        for (long j = first; j < first + (N); j++)                                           \
            PREFETCH_NEXT_TILE(T, src, j);                                                   \
        for (; r + (N) <= rows || (r < rows && (rows - r) * 4 >= (N) &&                      \
                                   transposed_block_inside(rows, run, si, r, first, (N)));   \
             r += (N)) {                                                                     \
            const T *s = src + r + first * si;                                               \
            __m128i x[N];                                                                    \
            for (int k = 0; k < (N); k++)                                                    \
                x[k] = _mm_loadu_si128((const __m128i *)(s + k * si));                      \
            TRANSPOSE_ROUNDS(N, UNPACK_LO, UNPACK_HI, ROUNDS)                                \
            T *d = dst + r * run + first;                                                    \
            const long kept = rows - r < (N) ? rows - r : (N);                               \
            for (int k = 0; k < kept; k++)                                                   \
                _mm_storeu_si128((__m128i *)(d + k * run), x[k]);                            \
        }                                                                                    \
        for (; r < rows; r++)                                                                \
            for (long j = first; j < first + (N); j++)                                       \
                dst[r * run + j] = src[r + j * si];                                          \
    }

/* Whether a register block of N columns from FIRST and N rows from R,
 * fewer than N of them left (a transposed input whose contiguous dimension
 * is short: u8 (12, 8473) strides (1, 12)), loads only bytes between the
 * first and the last element the gather reads, the operand's own memory:
 * its lanes past the last row are then loaded, transposed and not stored
 * (rows 12 of u8: 16 x 16 blocks, 0.55 -> see the commit, against single
 * bytes in strips). */
static inline bool transposed_block_inside(long rows, long run, long si, long r, long first,
                                           long n)
{
    long last = r + n - 1 + (first + (si > 0 ? n - 1 : 0)) * si; /* the farthest lane */
    return last <= (si > 0 ? (run - 1) * si : 0) + rows - 1;
}
#endif

/* The transposed gather's blocks through AVX2 registers where the CPU has
 * them: 4 x 4 64-bit, 8 x 8 32-bit, and 16-bit as two 8 x 8 blocks at once
 * (the rounds of unpacks work within each 128-bit half: one half rows r..,
 * the other rows r + 8..).  They take the tile's rows in whole blocks
 * (ROWS a multiple of the block) and all its columns, the last few
 * element by element; the SSE2 path does the rows left over.  NEXT is the
 * tile's rows, where the next tile starts (PREFETCH_NEXT_TILE).  Measured
 * (f64 (1703, 3676) transposed, maximum(b, a)'s tiles of 8 rows by 768
 * columns and a call per row, in one process): 2 x 2 SSE2 blocks 7.6-11.7
 * ms, 4 x 4 AVX2 5.7 ms, the cc backend's blocked loops 6.2-6.5 ms. */
#ifdef HAVE_AVX2_PATHS
static bool cpu_has_avx2(void);

#define PREFETCH_NEXT_ROWS(T, SRC, COLUMN, NEXT)                                             \
    __builtin_prefetch((const void *)((uintptr_t)(SRC) +                                     \
                                      (uintptr_t)((COLUMN) * si + (NEXT)) * sizeof(T)))
#define GATHER_COLUMNS_LEFT(FIRST)                                                           \
    for (long r = 0; r < rows; r++)                                                          \
        for (long j = (FIRST); j < run; j++)                                                 \
            dst[r * run + j] = src[r + j * si];

__attribute__((target("avx2"))) static void gather_transposed_64_avx2(uint64_t *dst,
                                                                     const uint64_t *src,
                                                                     long rows, long run,
                                                                     long si, long next)
{
    long first = 0;
    for (; first + 4 <= run; first += 4) {
        for (long j = first; j < first + 4; j++)
            PREFETCH_NEXT_ROWS(uint64_t, src, j, next);
        for (long r = 0; r < rows; r += 4) {
            const double *s = (const double *)(src + r + first * si);
            __m256d x0 = _mm256_loadu_pd(s), x1 = _mm256_loadu_pd(s + si);
            __m256d x2 = _mm256_loadu_pd(s + 2 * si), x3 = _mm256_loadu_pd(s + 3 * si);
            __m256d t0 = _mm256_unpacklo_pd(x0, x1), t1 = _mm256_unpackhi_pd(x0, x1);
            __m256d t2 = _mm256_unpacklo_pd(x2, x3), t3 = _mm256_unpackhi_pd(x2, x3);
            double *d = (double *)(dst + r * run + first);
            _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_storeu_pd(d + run, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_storeu_pd(d + 2 * run, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_storeu_pd(d + 3 * run, _mm256_permute2f128_pd(t1, t3, 0x31));
        }
    }
    GATHER_COLUMNS_LEFT(first)
}

__attribute__((target("avx2"))) static void gather_transposed_32_avx2(uint32_t *dst,
                                                                     const uint32_t *src,
                                                                     long rows, long run,
                                                                     long si, long next)
{
    long first = 0;
    for (; first + 8 <= run; first += 8) {
        for (long j = first; j < first + 8; j++)
            PREFETCH_NEXT_ROWS(uint32_t, src, j, next);
        for (long r = 0; r < rows; r += 8) {
            /* x_k: rows r..r+7 of column first+k; row r+i is x_0..x_7's [i] */
            const float *s = (const float *)(src + r + first * si);
            __m256 x[8], t[8], u[8];
            for (int k = 0; k < 8; k++)
                x[k] = _mm256_loadu_ps(s + k * si);
            for (int k = 0; k < 8; k += 2) {
                t[k] = _mm256_unpacklo_ps(x[k], x[k + 1]);
                t[k + 1] = _mm256_unpackhi_ps(x[k], x[k + 1]);
            }
            for (int k = 0; k < 8; k += 4) { /* u[k + i]: rows i and i + 4 of 4 columns */
                u[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
                u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xee);
                u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
                u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xee);
            }
            float *d = (float *)(dst + r * run + first);
            for (int i = 0; i < 4; i++) {
                _mm256_storeu_ps(d + i * run, _mm256_permute2f128_ps(u[i], u[4 + i], 0x20));
                _mm256_storeu_ps(d + (4 + i) * run,
                                 _mm256_permute2f128_ps(u[i], u[4 + i], 0x31));
            }
        }
    }
    GATHER_COLUMNS_LEFT(first)
}

__attribute__((target("avx2"))) static void gather_transposed_16_avx2(uint16_t *dst,
                                                                     const uint16_t *src,
                                                                     long rows, long run,
                                                                     long si, long next)
{
    long first = 0;
    for (; first + 8 <= run; first += 8) {
        for (long j = first; j < first + 8; j++)
            PREFETCH_NEXT_ROWS(uint16_t, src, j, next);
        for (long r = 0; r < rows; r += 16) {
            /* x_k: rows r..r+15 of column first+k, halves r.. and r+8.. */
            const uint16_t *s = src + r + first * si;
            __m256i x[8];
            for (int k = 0; k < 8; k++)
                x[k] = _mm256_loadu_si256((const __m256i *)(s + k * si));
            for (int round = 0; round < 3; round++) {
                __m256i y[8];
                for (int k = 0; k < 4; k++) {
                    y[2 * k] = _mm256_unpacklo_epi16(x[k], x[k + 4]);
                    y[2 * k + 1] = _mm256_unpackhi_epi16(x[k], x[k + 4]);
                }
                memcpy(x, y, sizeof x);
            }
            uint16_t *d = dst + r * run + first;
            for (int k = 0; k < 8; k++) {
                _mm_storeu_si128((__m128i *)(d + k * run), _mm256_castsi256_si128(x[k]));
                _mm_storeu_si128((__m128i *)(d + (8 + k) * run),
                                 _mm256_extracti128_si256(x[k], 1));
            }
        }
    }
    GATHER_COLUMNS_LEFT(first)
}

/* The rows of a tile the AVX2 blocks of BLOCK rows take (0: none). */
static long transposed_avx2_rows(long rows, long block)
{
    return rows >= block && cpu_has_avx2() ? rows / block * block : 0;
}
#endif

static void gather_transposed_8(uint8_t *dst, const uint8_t *src, long rows, long run, long si)
{
    long first = 0;
#ifdef HAVE_STREAM
    GATHER_TRANSPOSED_BLOCKS(uint8_t, 16, _mm_unpacklo_epi8, _mm_unpackhi_epi8, 4)
#endif
    GATHER_TRANSPOSED_STRIPS(uint8_t, first)
}

static void gather_transposed_16(uint16_t *dst, const uint16_t *src, long rows, long run,
                                 long si)
{
#ifdef HAVE_AVX2_PATHS
    long whole = transposed_avx2_rows(rows, 16);
    if (whole > 0) {
        gather_transposed_16_avx2(dst, src, whole, run, si, rows);
        if (whole == rows)
            return;
        dst += whole * run;
        src += whole;
        rows -= whole;
    }
#endif
    long first = 0;
#ifdef HAVE_STREAM
    GATHER_TRANSPOSED_BLOCKS(uint16_t, 8, _mm_unpacklo_epi16, _mm_unpackhi_epi16, 3)
#endif
    GATHER_TRANSPOSED_STRIPS(uint16_t, first)
}

static void gather_transposed_32(uint32_t *dst, const uint32_t *src, long rows, long run,
                                 long si)
{
#ifdef HAVE_AVX2_PATHS
    long whole = transposed_avx2_rows(rows, 8);
    if (whole > 0) {
        gather_transposed_32_avx2(dst, src, whole, run, si, rows);
        if (whole == rows)
            return;
        dst += whole * run;
        src += whole;
        rows -= whole;
    }
#endif
    long first = 0;
#ifdef HAVE_STREAM
    /* x_k: rows r..r+3 of column j+k; row r+i of the tile is x_0..x_3's [i] */
    for (; first + 4 <= run; first += 4) {
        long r = 0;
        for (long j = first; j < first + 4; j++)
            PREFETCH_NEXT_TILE(uint32_t, src, j);
        for (; r + 4 <= rows ||
               (r + 2 <= rows && transposed_block_inside(rows, run, si, r, first, 4));
             r += 4) {
            const uint32_t *s = src + r + first * si;
            __m128i x0 = _mm_loadu_si128((const __m128i *)s);
            __m128i x1 = _mm_loadu_si128((const __m128i *)(s + si));
            __m128i x2 = _mm_loadu_si128((const __m128i *)(s + 2 * si));
            __m128i x3 = _mm_loadu_si128((const __m128i *)(s + 3 * si));
            __m128i t0 = _mm_unpacklo_epi32(x0, x1), t1 = _mm_unpacklo_epi32(x2, x3);
            __m128i t2 = _mm_unpackhi_epi32(x0, x1), t3 = _mm_unpackhi_epi32(x2, x3);
            uint32_t *d = dst + r * run + first;
            _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(t0, t1));
            _mm_storeu_si128((__m128i *)(d + run), _mm_unpackhi_epi64(t0, t1));
            if (r + 2 < rows) /* (a last block of 2 or 3 rows: see transposed_block_inside) */
                _mm_storeu_si128((__m128i *)(d + 2 * run), _mm_unpacklo_epi64(t2, t3));
            if (r + 3 < rows)
                _mm_storeu_si128((__m128i *)(d + 3 * run), _mm_unpackhi_epi64(t2, t3));
        }
        for (; r < rows; r++)
            for (long j = first; j < first + 4; j++)
                dst[r * run + j] = src[r + j * si];
    }
#endif
    GATHER_TRANSPOSED_STRIPS(uint32_t, first)
}

static void gather_transposed_64(uint64_t *dst, const uint64_t *src, long rows, long run,
                                 long si)
{
#ifdef HAVE_AVX2_PATHS
    long whole = transposed_avx2_rows(rows, 4);
    if (whole > 0) {
        gather_transposed_64_avx2(dst, src, whole, run, si, rows);
        if (whole == rows)
            return;
        dst += whole * run;
        src += whole;
        rows -= whole;
    }
#endif
    long first = 0;
#ifdef HAVE_STREAM
    for (; first + 2 <= run; first += 2) {
        long r = 0;
        PREFETCH_NEXT_TILE(uint64_t, src, first);
        PREFETCH_NEXT_TILE(uint64_t, src, first + 1);
        for (; r + 2 <= rows; r += 2) {
            const uint64_t *s = src + r + first * si;
            __m128i x0 = _mm_loadu_si128((const __m128i *)s);
            __m128i x1 = _mm_loadu_si128((const __m128i *)(s + si));
            uint64_t *d = dst + r * run + first;
            _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(x0, x1));
            _mm_storeu_si128((__m128i *)(d + run), _mm_unpackhi_epi64(x0, x1));
        }
        for (; r < rows; r++)
            for (long j = first; j < first + 2; j++)
                dst[r * run + j] = src[r + j * si];
    }
#endif
    GATHER_TRANSPOSED_STRIPS(uint64_t, first)
}

/* A spaced transposed operand (ro a few elements, not 1: a of i8 (3428,
 * 834) strides (-3, -10284), several rows to a line): as the transposed
 * path, strips of TRANSPOSE_STRIP columns with all the tile's rows of each,
 * so that a line of a column is read while in L1 for every row it holds,
 * where the general loop walks a whole row of lines per row. */
#define GATHER_SPACED_MAX 8
#define GATHER_SPACED(BITS, T)                                                               \
    static void gather_spaced_##BITS(T *dst, const T *src, long rows, long run, long ro,      \
                                     long si)                                                \
    {                                                                                        \
        for (long j0 = 0; j0 < run; j0 += TRANSPOSE_STRIP) {                                 \
            const long m = run - j0 < TRANSPOSE_STRIP ? run - j0 : TRANSPOSE_STRIP;          \
            for (long j = j0; j < j0 + m; j++)                                               \
                __builtin_prefetch((const void *)((uintptr_t)src +                           \
                                                  (uintptr_t)(j * si + rows * ro) *          \
                                                      sizeof(T)));                           \
            for (long r = 0; r < rows; r++)                                                  \
                for (long j = j0; j < j0 + m; j++)                                           \
                    dst[r * run + j] = src[r * ro + j * si];                                 \
        }                                                                                    \
    }
GATHER_SPACED(8, uint8_t)
GATHER_SPACED(16, uint16_t)
GATHER_SPACED(32, uint32_t)
GATHER_SPACED(64, uint64_t)

/* Whether a gather of ROWS rows, RO apart, of runs of stride SI takes the
 * spaced path: rows a few elements apart, columns further. */
static bool gather_spaced_wanted(long rows, long ro, long si)
{
    long aro = ro < 0 ? -ro : ro, asi = si < 0 ? -si : si;
    return rows > 1 && aro > 1 && aro <= GATHER_SPACED_MAX && asi > aro * rows;
}

#define GATHER_SCATTER_ROWS(BITS, T)                                                      \
    CLONES void bcg_mk_gather_rows_##BITS(void *dst_, const void *src_, long rows,        \
                                          long run, long ro, long si)                     \
    {                                                                                     \
        T *dst = dst_;                                                                    \
        const T *src = src_;                                                              \
        if (ro == 1 && rows > 1 && (si > 1 || si < -1)) {                                 \
            gather_transposed_##BITS(dst, src, rows, run, si);                            \
            return;                                                                       \
        }                                                                                 \
        if (gather_spaced_wanted(rows, ro, si)) {                                         \
            gather_spaced_##BITS(dst, src, rows, run, ro, si);                            \
            return;                                                                       \
        }                                                                                 \
        if (run > ROWS_UNROLLED && si >= 2 && si <= 4) { /* (see GATHER_ROWS_BODY) */     \
            for (long r = 0; r < rows; r++)                                               \
                gather_##BITS(dst + r * run, src + r * ro, si, run);                      \
            return;                                                                       \
        }                                                                                 \
        ROWS_BY_RUN(GATHER_ROWS_BODY, T)                                                  \
    }                                                                                     \
    CLONES void bcg_mk_scatter_rows_##BITS(void *dst_, long ro, long si, const void *src_, \
                                           long rows, long run)                           \
    {                                                                                     \
        T *dst = dst_;                                                                    \
        const T *src = src_;                                                              \
        ROWS_BY_RUN(SCATTER_ROWS_BODY, T)                                                 \
    }

GATHER_SCATTER_ROWS(8, uint8_t)
GATHER_SCATTER_ROWS(16, uint16_t)
GATHER_SCATTER_ROWS(32, uint32_t)
GATHER_SCATTER_ROWS(64, uint64_t)

/* ---- reductions ---------------------------------------------------------------------
 *
 * A float sum's accumulators, in the order gen/eval.c defines (internal.h,
 * reduce_lanes): the _sum16 functions add element j of a run into partial
 * sum j % 16 (ACC holds 16, COMP their 16 Neumaier compensations for f64),
 * so a run that starts at a multiple of 16 adds exactly as the scalar code
 * does, lane by lane, in order; the _accadd functions add element j into
 * accumulator j (one output element each: a reduction over an outer loop,
 * several output elements a call).  f32 values are summed in double, f64
 * with Neumaier's compensation, each step bit for bit the scalar code's. */

#define SUM_LANES 16

/* (gcc keeps the 16 sums of the contiguous loop in four AVX2 registers and
 * converts from memory: a hand-written AVX2 loop measured slower) */
static inline void sum16_f32(double *acc, const float *x, long sx, long n)
{
    double lane[SUM_LANES];
    memcpy(lane, acc, sizeof lane);
    long i = 0;
    if (sx == 1) {
        for (; i + SUM_LANES <= n; i += SUM_LANES)
            for (int k = 0; k < SUM_LANES; k++)
                lane[k] += (double)x[i + k];
    }
    for (; i < n; i++)
        lane[i % SUM_LANES] += (double)x[i * sx];
    memcpy(acc, lane, sizeof lane);
}

CLONES void bcg_mk_sum16_f32(double *acc, const float *x, long sx, long n)
{
    sum16_f32(acc, x, sx, n);
}

/* The finished sums of ROWS runs of N (run r at x + r * rx, its element j
 * at j * sx further; the arguments in the order a kernel's tile writes
 * them) into sums[r]: each run's 16 partial sums from 0, as
 * bcg_mk_sum16_f32 adds them, then combined pairwise, ((p0 + p1) + (p2 +
 * p3)) + ..., as templates/ops.c.tmpl's bcg_lanes_sum combines them (the
 * same order in every path).  For a sum along the contiguous last axis: a
 * kernel calls this once for a tile of rows instead of setting up, calling
 * and combining per row in its own (tcc-compiled) code. */
CLONES void bcg_mk_sum16_rows_f32(double *sums, const float *x, long rx, long sx, long n,
                                  long rows)
{
    for (long r = 0; r < rows; r++) {
        double lane[SUM_LANES] = {0.0}, q[SUM_LANES / 2];
        sum16_f32(lane, x + r * rx, sx, n);
        for (int i = 0; i < SUM_LANES / 2; i++)
            q[i] = lane[2 * i] + lane[2 * i + 1];
        for (int width = SUM_LANES / 2; width > 1; width /= 2)
            for (int i = 0; i < width / 2; i++)
                q[i] = q[2 * i] + q[2 * i + 1];
        sums[r] = q[0];
    }
}

/* Neumaier's step, branch-free so that gcc vectorises it (the same values
 * as the branchy form: both sides are computed, one is kept). */
#define NEUMAIER(S, C, X)                                                         do {                                                                              const double t_ = (S) + (X);                                                  const double big_ = (S) - t_ + (X), small_ = (X) - t_ + (S);                  (C) += fabs(S) >= fabs(X) ? big_ : small_;                                    (S) = t_;                                                                 } while (0)

#ifdef HAVE_AVX2_PATHS
static bool cpu_has_avx2(void);

/* Neumaier's step on four lanes: the NEUMAIER macro's operations in its
 * order (|S| >= |X| ordered, so a NaN takes the second form, as the
 * macro's ?: does). */
__attribute__((target("avx2"))) static inline void neumaier4(__m256d *s, __m256d *c, __m256d x,
                                                            __m256d magnitude)
{
    __m256d t = _mm256_add_pd(*s, x);
    __m256d big = _mm256_add_pd(_mm256_sub_pd(*s, t), x);
    __m256d small = _mm256_add_pd(_mm256_sub_pd(x, t), *s);
    __m256d s_wins = _mm256_cmp_pd(_mm256_and_pd(*s, magnitude), _mm256_and_pd(x, magnitude),
                                   _CMP_GE_OQ);
    *c = _mm256_add_pd(*c, _mm256_blendv_pd(small, big, s_wins));
    *s = t;
}

/* bcg_mk_sum16_f64's contiguous blocks of 16 with the 16 sums and their
 * compensations in eight registers (gcc kept the generic loop's arrays in
 * memory: 3x as long, measured on 1024-element tiles in L1).  Returns the
 * elements done, a multiple of 16. */
__attribute__((target("avx2"))) static long sum16_f64_avx2(double *acc, double *comp,
                                                           const double *x, long n)
{
    const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d s0 = _mm256_loadu_pd(acc), s1 = _mm256_loadu_pd(acc + 4);
    __m256d s2 = _mm256_loadu_pd(acc + 8), s3 = _mm256_loadu_pd(acc + 12);
    __m256d c0 = _mm256_loadu_pd(comp), c1 = _mm256_loadu_pd(comp + 4);
    __m256d c2 = _mm256_loadu_pd(comp + 8), c3 = _mm256_loadu_pd(comp + 12);
    long i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES) {
        neumaier4(&s0, &c0, _mm256_loadu_pd(x + i), magnitude);
        neumaier4(&s1, &c1, _mm256_loadu_pd(x + i + 4), magnitude);
        neumaier4(&s2, &c2, _mm256_loadu_pd(x + i + 8), magnitude);
        neumaier4(&s3, &c3, _mm256_loadu_pd(x + i + 12), magnitude);
    }
    _mm256_storeu_pd(acc, s0);
    _mm256_storeu_pd(acc + 4, s1);
    _mm256_storeu_pd(acc + 8, s2);
    _mm256_storeu_pd(acc + 12, s3);
    _mm256_storeu_pd(comp, c0);
    _mm256_storeu_pd(comp + 4, c1);
    _mm256_storeu_pd(comp + 8, c2);
    _mm256_storeu_pd(comp + 12, c3);
    return i;
}
#endif

CLONES void bcg_mk_sum16_f64(double *acc, double *comp, const double *x, long sx, long n)
{
#ifdef HAVE_AVX2_PATHS
    if (sx == 1 && n >= SUM_LANES && cpu_has_avx2()) {
        long done = sum16_f64_avx2(acc, comp, x, n);
        for (long i = done; i < n; i++)
            NEUMAIER(acc[i % SUM_LANES], comp[i % SUM_LANES], x[i]);
        return;
    }
#endif
    double lane[SUM_LANES], c[SUM_LANES];
    memcpy(lane, acc, sizeof lane);
    memcpy(c, comp, sizeof c);
    long i = 0;
    if (sx == 1) {
        for (; i + SUM_LANES <= n; i += SUM_LANES)
            for (int k = 0; k < SUM_LANES; k++)
                NEUMAIER(lane[k], c[k], x[i + k]);
    }
    for (; i < n; i++)
        NEUMAIER(lane[i % SUM_LANES], c[i % SUM_LANES], x[i * sx]);
    memcpy(acc, lane, sizeof lane);
    memcpy(comp, c, sizeof c);
}

CLONES void bcg_mk_accadd_f32(double *acc, const float *x, long sx, long n)
{
    if (sx == 1) {
        for (long i = 0; i < n; i++)
            acc[i] += (double)x[i];
    } else {
        for (long i = 0; i < n; i++)
            acc[i] += (double)x[i * sx];
    }
}

CLONES void bcg_mk_accadd_f64(double *acc, double *comp, const double *x, long sx, long n)
{
    if (sx == 1) {
        for (long i = 0; i < n; i++)
            NEUMAIER(acc[i], comp[i], x[i]);
    } else {
        for (long i = 0; i < n; i++)
            NEUMAIER(acc[i], comp[i], x[i * sx]);
    }
}

/* The _accadd functions over ROWS runs, run r at x + r * rx, in order:
 * each accumulator takes run 0's element, then run 1's, ... (its own
 * order, unchanged), but ACCADD_ROWS runs go through a block of
 * accumulators held in registers before it goes back to memory: a
 * memory round trip per ACCADD_ROWS elements, while the runs are read as
 * that many sequential streams. */
#define ACCADD_BLOCK 16
#define ACCADD_ROWS 8

#ifdef HAVE_AVX2_PATHS
/* AVX2 and the OS's YMM state (CPUID.7:EBX bit 5, CPUID.1:ECX bits 27-28,
 * XCR0 bits 1-2), asked once. */
static bool probe_avx2(void)
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (3u << 27)) == (3u << 27) &&
           __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & (1u << 5)) &&
           ymm_state_saved();
}

static bool cpu_has_avx2(void)
{
    static atomic_int known;
    return cpu_feature_once(&known, probe_avx2);
}

/* bcg_mk_accadd_rows_f32's contiguous blocks with AVX2 intrinsics: the
 * same additions in the same order (accumulator j takes run 0's element j,
 * then run 1's, ...), but 16 accumulators in four registers, each run's
 * floats widened 4 at a time, and a prefetch ACCADD_PREFETCH floats ahead
 * in every run.  Measured on f32[4096,4096] summed over the rows: as fast
 * as a plain read of the matrix, where gcc's vectorisation of the generic
 * loop below (a stack array of accumulators) took 1.3x as long. */
#define ACCADD_PREFETCH 256
__attribute__((target("avx2"))) static void accadd_rows_f32_avx2(double *acc, const float *x,
                                                                 long rx, long rows, long n)
{
    for (long r = 0; r + ACCADD_ROWS <= rows; r += ACCADD_ROWS) {
        const float *base = x + r * rx;
        for (long j = 0; j + ACCADD_BLOCK <= n; j += ACCADD_BLOCK) {
            __m256d a0 = _mm256_loadu_pd(acc + j), a1 = _mm256_loadu_pd(acc + j + 4);
            __m256d a2 = _mm256_loadu_pd(acc + j + 8), a3 = _mm256_loadu_pd(acc + j + 12);
            for (int q = 0; q < ACCADD_ROWS; q++) {
                const float *p = base + q * rx + j;
                _mm_prefetch((const char *)(p + ACCADD_PREFETCH), _MM_HINT_T0);
                a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(p)));
                a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(p + 4)));
                a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(p + 8)));
                a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(p + 12)));
            }
            _mm256_storeu_pd(acc + j, a0);
            _mm256_storeu_pd(acc + j + 4, a1);
            _mm256_storeu_pd(acc + j + 8, a2);
            _mm256_storeu_pd(acc + j + 12, a3);
        }
    }
}
#endif

CLONES void bcg_mk_accadd_rows_f32(double *acc, const float *x, long sx, long rx, long rows,
                                   long n)
{
    long r = 0;
#ifdef HAVE_AVX2_PATHS
    if (sx == 1 && rows >= ACCADD_ROWS && n >= ACCADD_BLOCK && cpu_has_avx2()) {
        long blocks = n - n % ACCADD_BLOCK, whole = rows - rows % ACCADD_ROWS;
        accadd_rows_f32_avx2(acc, x, rx, whole, blocks);
        /* the columns after the last block, for the same runs, then the
         * remaining runs as below: each accumulator keeps its order */
        for (long j = blocks; j < n; j++)
            for (long q = 0; q < whole; q++)
                acc[j] += (double)x[q * rx + j];
        r = whole; /* the generic blocks below have no whole group left */
    }
#endif
    if (sx == 1) {
        for (; r + ACCADD_ROWS <= rows; r += ACCADD_ROWS) {
            const float *base = x + r * rx;
            long j = 0;
            for (; j + ACCADD_BLOCK <= n; j += ACCADD_BLOCK) {
                double a[ACCADD_BLOCK];
                memcpy(a, acc + j, sizeof a);
                for (int q = 0; q < ACCADD_ROWS; q++)
                    for (int k = 0; k < ACCADD_BLOCK; k++)
                        a[k] += (double)base[q * rx + j + k];
                memcpy(acc + j, a, sizeof a);
            }
            for (; j < n; j++)
                for (int q = 0; q < ACCADD_ROWS; q++)
                    acc[j] += (double)base[q * rx + j];
        }
    }
    for (; r < rows; r++)
        bcg_mk_accadd_f32(acc, x + r * rx, sx, n);
}

CLONES void bcg_mk_accadd_rows_f64(double *acc, double *comp, const double *x, long sx,
                                   long rx, long rows, long n)
{
    long r = 0;
    if (sx == 1) {
        for (; r + ACCADD_ROWS <= rows; r += ACCADD_ROWS) {
            const double *base = x + r * rx;
            long j = 0;
            for (; j + ACCADD_BLOCK / 2 <= n; j += ACCADD_BLOCK / 2) {
                double a[ACCADD_BLOCK / 2], c[ACCADD_BLOCK / 2];
                memcpy(a, acc + j, sizeof a);
                memcpy(c, comp + j, sizeof c);
                for (int q = 0; q < ACCADD_ROWS; q++)
                    for (int k = 0; k < ACCADD_BLOCK / 2; k++)
                        NEUMAIER(a[k], c[k], base[q * rx + j + k]);
                memcpy(acc + j, a, sizeof a);
                memcpy(comp + j, c, sizeof c);
            }
            for (; j < n; j++)
                for (int q = 0; q < ACCADD_ROWS; q++)
                    NEUMAIER(acc[j], comp[j], base[q * rx + j]);
        }
    }
    for (; r < rows; r++)
        bcg_mk_accadd_f64(acc, comp, x + r * rx, sx, n);
}

/* A block reduction whose root is a binary operation of two operands (the
 * gradient of a broadcast, sum(g * a) over the rows):
 *
 *   void bcg_mk_OP_accadd_rows_T(double *acc, [double *comp,] const T *a,
 *                                long sa, long ra, const T *b, long sb,
 *                                long rb, long rows, long n)
 *
 * adds a OP b into the accumulators as bcg_mk_accadd_rows_T adds a tile of
 * it (accumulator j takes run 0's a[j] OP b[j], then run 1's, ...; run r of
 * A at a + r * ra, its element j at j * sa further), computing each value
 * in the same pass instead of in a tile first.  The value is rounded to T
 * before it is added, as the tile held it, so the bits are the tile
 * path's.  Why: with a 4096-wide tile, the tile (16 KB) and the double
 * accumulators (32 KB) did not fit L1 together, and every row's pass read
 * them back from L2 (grad_b in `make bench`).  OP is one of the float
 * binary operations of "the operations per dtype" with the same EXPR;
 * VOP its AVX2 form on 8 floats or 4 doubles (minimum/maximum: x when
 * x < y (x > y) or x is NaN, else y, as EXPR). */
#ifdef HAVE_AVX2_PATHS
#define VOP_F32(NAME, BODY)                                                                \
    __attribute__((target("avx2"))) static inline __m256 vop_##NAME##_f32(__m256 x, __m256 y) \
    {                                                                                      \
        return BODY;                                                                       \
    }
VOP_F32(add, _mm256_add_ps(x, y))
VOP_F32(sub, _mm256_sub_ps(x, y))
VOP_F32(mul, _mm256_mul_ps(x, y))
VOP_F32(div, _mm256_div_ps(x, y))
VOP_F32(minimum, _mm256_blendv_ps(y, x, _mm256_or_ps(_mm256_cmp_ps(x, y, _CMP_LT_OQ),
                                                     _mm256_cmp_ps(x, x, _CMP_UNORD_Q))))
VOP_F32(maximum, _mm256_blendv_ps(y, x, _mm256_or_ps(_mm256_cmp_ps(x, y, _CMP_GT_OQ),
                                                     _mm256_cmp_ps(x, x, _CMP_UNORD_Q))))

/* Runs ROWS by blocks of ACCADD_BLOCK columns (N a multiple of it),
 * contiguous runs: accadd_rows_f32_avx2 with the values computed by VOP,
 * but one run a pass, the accumulators (8 bytes a column) going back to
 * memory after every run, and the two runs prefetched ACCADD_OP_PREFETCH
 * floats ahead with prefetchnta.  Measured on grad_b's loop (f32[4096,4096]
 * twice, CPU time, min of 60, interleaved, AMD EPYC): a plain read of the
 * two matrices row by row 0.92x the hand loop, the same read 4 rows a pass
 * (8 streams) 1.36x and 8 rows 1.5x, whatever the prefetch or the bytes
 * read from a stream before the next: so one run a pass.  Its 32 KB of
 * double accumulators must then stay in L1 while the runs stream through:
 * prefetcht0 256 floats ahead 1.41x the hand loop, no prefetch 1.50x,
 * prefetchnta 512 / 768 / 1024 / 1536 / 2048 floats ahead 1.19x / 1.10x /
 * 1.10x / 1.25x / 1.27x (the old 4 runs a pass with prefetcht0 256:
 * 1.34-1.59x).  Column tiles (2048 or 1024 columns over all rows, the
 * accumulators 16 or 8 KB) took 1.5-1.9x: a run's 4-8 KB pieces read as
 * new streams. */
#define ACCADD_OP_PREFETCH 1024
#define ACCADD_OP_ROWS_F32_AVX2(OP)                                                        \
    __attribute__((target("avx2"))) static void OP##_accadd_rows_f32_avx2(                 \
        double *acc, const float *a, long ra, const float *b, long rb, long rows, long n)  \
    {                                                                                      \
        for (long r = 0; r < rows; r++) {                                                  \
            const float *arow = a + r * ra, *brow = b + r * rb;                            \
            for (long j = 0; j + ACCADD_BLOCK <= n; j += ACCADD_BLOCK) {                   \
                const float *x = arow + j, *y = brow + j;                                  \
                _mm_prefetch((const char *)(x + ACCADD_OP_PREFETCH), _MM_HINT_NTA);        \
                _mm_prefetch((const char *)(y + ACCADD_OP_PREFETCH), _MM_HINT_NTA);        \
                __m256 v0 = vop_##OP##_f32(_mm256_loadu_ps(x), _mm256_loadu_ps(y));        \
                __m256 v1 = vop_##OP##_f32(_mm256_loadu_ps(x + 8), _mm256_loadu_ps(y + 8)); \
                __m256d a0 = _mm256_loadu_pd(acc + j), a1 = _mm256_loadu_pd(acc + j + 4); \
                __m256d a2 = _mm256_loadu_pd(acc + j + 8);                                 \
                __m256d a3 = _mm256_loadu_pd(acc + j + 12);                                \
                a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(v0)));       \
                a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1)));     \
                a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm256_castps256_ps128(v1)));       \
                a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1)));     \
                _mm256_storeu_pd(acc + j, a0);                                             \
                _mm256_storeu_pd(acc + j + 4, a1);                                         \
                _mm256_storeu_pd(acc + j + 8, a2);                                         \
                _mm256_storeu_pd(acc + j + 12, a3);                                        \
            }                                                                              \
        }                                                                                  \
    }
/* the blocks of every run in AVX2; then the columns after the last block
 * for the same runs (each accumulator keeps its order) */
#define ACCADD_OP_ROWS_F32_FAST(OP, EXPR)                                                  \
    if (sa == 1 && sb == 1 && n >= ACCADD_BLOCK && cpu_has_avx2()) {                       \
        long blocks = n - n % ACCADD_BLOCK;                                                \
        OP##_accadd_rows_f32_avx2(acc, a, ra, b, rb, rows, blocks);                        \
        for (long j = blocks; j < n; j++)                                                  \
            for (long q = 0; q < rows; q++) {                                              \
                float x = a[q * ra + j], y = b[q * rb + j];                                \
                acc[j] += (double)(float)(EXPR);                                           \
            }                                                                              \
        r = rows;                                                                          \
    }
#else
#define ACCADD_OP_ROWS_F32_AVX2(OP)
#define ACCADD_OP_ROWS_F32_FAST(OP, EXPR)
#endif

#define ACCADD_OP_ROWS(OP, EXPR)                                                           \
    ACCADD_OP_ROWS_F32_AVX2(OP)                                                            \
    CLONES void bcg_mk_##OP##_accadd_rows_f32(double *acc, const float *a, long sa,        \
                                              long ra, const float *b, long sb, long rb,   \
                                              long rows, long n)                           \
    {                                                                                      \
        long r = 0;                                                                        \
        ACCADD_OP_ROWS_F32_FAST(OP, EXPR)                                                  \
        for (; r < rows; r++) {                                                            \
            const float *ar = a + r * ra, *br = b + r * rb;                                \
            if (sa == 1 && sb == 1) {                                                      \
                for (long j = 0; j < n; j++) {                                             \
                    float x = ar[j], y = br[j];                                            \
                    acc[j] += (double)(float)(EXPR);                                       \
                }                                                                          \
            } else {                                                                       \
                for (long j = 0; j < n; j++) {                                             \
                    float x = ar[j * sa], y = br[j * sb];                                  \
                    acc[j] += (double)(float)(EXPR);                                       \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    CLONES void bcg_mk_##OP##_accadd_rows_f64(double *acc, double *comp, const double *a,  \
                                              long sa, long ra, const double *b, long sb,  \
                                              long rb, long rows, long n)                  \
    {                                                                                      \
        for (long r = 0; r < rows; r++) {                                                  \
            const double *ar = a + r * ra, *br = b + r * rb;                               \
            if (sa == 1 && sb == 1) {                                                      \
                for (long j = 0; j < n; j++) {                                             \
                    double x = ar[j], y = br[j];                                           \
                    const double v = EXPR;                                                 \
                    NEUMAIER(acc[j], comp[j], v);                                          \
                }                                                                          \
            } else {                                                                       \
                for (long j = 0; j < n; j++) {                                             \
                    double x = ar[j * sa], y = br[j * sb];                                 \
                    const double v = EXPR;                                                 \
                    NEUMAIER(acc[j], comp[j], v);                                          \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    }

ACCADD_OP_ROWS(add, x + y)
ACCADD_OP_ROWS(sub, x - y)
ACCADD_OP_ROWS(mul, x * y)
ACCADD_OP_ROWS(div, x / y)
ACCADD_OP_ROWS(minimum, (x < y || x != x) ? x : y)
ACCADD_OP_ROWS(maximum, (x > y || x != x) ? x : y)

/* ---- the symbol table jit.c hands to tcc ------------------------------------------ */

#define ENTRY(NAME) {"bcg_mk_" #NAME, (const void *)bcg_mk_##NAME},
#define ENTRY2(NAME) ENTRY(NAME) ENTRY(NAME##_nt) ENTRY(NAME##_rows)
#define COMMON_ENTRIES(S)                                                                  \
    ENTRY2(add_##S) ENTRY2(sub_##S) ENTRY2(mul_##S) ENTRY2(minimum_##S)                    \
    ENTRY2(maximum_##S) ENTRY2(eq_##S) ENTRY2(ne_##S) ENTRY2(lt_##S) ENTRY2(le_##S)        \
    ENTRY2(gt_##S) ENTRY2(ge_##S) ENTRY(where_##S) ENTRY(where_##S##_nt) ENTRY(neg_##S)
#define INTEGER_ENTRIES(S)                                                          \
    COMMON_ENTRIES(S) ENTRY2(bitand_##S) ENTRY2(bitor_##S) ENTRY2(bitxor_##S)       \
    ENTRY2(add_sat_##S) ENTRY2(sub_sat_##S)
#define FLOAT_ENTRIES(S)                                                                  \
    COMMON_ENTRIES(S) ENTRY2(div_##S) ENTRY(abs_##S) ENTRY(sqrt_##S) ENTRY(floor_##S)      \
    ENTRY(ceil_##S) ENTRY(exp_##S) ENTRY(log_##S) ENTRY(sin_##S) ENTRY(cos_##S)           \
    ENTRY(tanh_##S)

#define HALF_ENTRIES(S)                                                                  \
    ENTRY(add_##S) ENTRY(sub_##S) ENTRY(mul_##S) ENTRY(div_##S) ENTRY(minimum_##S)        \
    ENTRY(maximum_##S) ENTRY(sqrt_##S)
#define HALF_NT_ENTRIES ENTRY(add_f16_nt) ENTRY(sub_f16_nt) ENTRY(mul_f16_nt) ENTRY(div_f16_nt)

#define ACCADD_OP_ENTRIES(OP) ENTRY(OP##_accadd_rows_f32) ENTRY(OP##_accadd_rows_f64)
#define CAST_ENTRY(FS, FT, FK, TS, TT, TK, LO, HI, MIN, MAX) ENTRY(cast_##FS##_##TS)
#define CAST_ENTRIES_FROM(FS, FT, FK) CAST_TARGETS(CAST_ENTRY, FS, FT, FK)

const microkernel_symbol microkernel_symbols[] = {
    INTEGER_ENTRIES(i8) INTEGER_ENTRIES(i16) INTEGER_ENTRIES(i32) INTEGER_ENTRIES(i64)
    INTEGER_ENTRIES(u8) INTEGER_ENTRIES(u16) INTEGER_ENTRIES(u32) INTEGER_ENTRIES(u64)
    FLOAT_ENTRIES(f32) FLOAT_ENTRIES(f64)
    ENTRY(log1p_f32) ENTRY(expm1_f32) ENTRY(log2_f32) ENTRY(log10_f32) ENTRY(exp2_f32)
    ENTRY(expit_f32) ENTRY(tan_f32) ENTRY(arctan_f32) ENTRY(erf_f32)
    ENTRY(fence) ENTRY(copy_nt) ENTRY(sum16_f32) ENTRY(sum16_rows_f32) ENTRY(sum16_f64) ENTRY(accadd_f32) ENTRY(accadd_f64)
    ENTRY(accadd_rows_f32) ENTRY(accadd_rows_f64)
    ACCADD_OP_ENTRIES(add) ACCADD_OP_ENTRIES(sub) ACCADD_OP_ENTRIES(mul) ACCADD_OP_ENTRIES(div)
    ACCADD_OP_ENTRIES(minimum) ACCADD_OP_ENTRIES(maximum)
    HALF_ENTRIES(f16) HALF_ENTRIES(bf16) HALF_NT_ENTRIES
    ENTRY(abs_i8) ENTRY(abs_i16) ENTRY(abs_i32) ENTRY(abs_i64)
    ENTRY(abs_u8) ENTRY(abs_u16) ENTRY(abs_u32) ENTRY(abs_u64)
    CAST_SOURCES(CAST_ENTRIES_FROM)
    ENTRY(cast_bool_bool) ENTRY(cast_bool_i8) ENTRY(cast_bool_i16) ENTRY(cast_bool_i32)
    ENTRY(cast_bool_i64) ENTRY(cast_bool_u8) ENTRY(cast_bool_u16) ENTRY(cast_bool_u32)
    ENTRY(cast_bool_u64) ENTRY(cast_bool_f32) ENTRY(cast_bool_f64)
    ENTRY(gather_rows_8) ENTRY(gather_rows_16) ENTRY(gather_rows_32) ENTRY(gather_rows_64)
    ENTRY(scatter_rows_8) ENTRY(scatter_rows_16) ENTRY(scatter_rows_32) ENTRY(scatter_rows_64)
    MORE_ENTRIES
};
const int microkernel_symbol_count =
    (int)(sizeof microkernel_symbols / sizeof microkernel_symbols[0]);

/* Lowering asks for names a dozen times a kernel: a linear strcmp over the
 * table was a tenth of a small kernel's compile (measured), so the names
 * are hashed once into SLOTS (open addressing; index + 1, 0 empty). */
#define EXISTS_SLOTS 4096
_Static_assert(2 * sizeof microkernel_symbols / sizeof microkernel_symbols[0] <= EXISTS_SLOTS,
               "microkernel_exists: grow EXISTS_SLOTS");
static unsigned short exists_slots[EXISTS_SLOTS];
static pthread_once_t exists_once = PTHREAD_ONCE_INIT;

static unsigned exists_hash(const char *name)
{
    uint32_t h = 2166136261u;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    return h & (EXISTS_SLOTS - 1);
}

static void exists_init(void)
{
    for (int i = 0; i < microkernel_symbol_count; i++) {
        unsigned at = exists_hash(microkernel_symbols[i].name);
        while (exists_slots[at])
            at = (at + 1) & (EXISTS_SLOTS - 1);
        exists_slots[at] = (unsigned short)(i + 1);
    }
}

bool microkernel_exists(const char *name)
{
    pthread_once(&exists_once, exists_init);
    for (unsigned at = exists_hash(name); exists_slots[at]; at = (at + 1) & (EXISTS_SLOTS - 1))
        if (strcmp(microkernel_symbols[exists_slots[at] - 1].name, name) == 0)
            return true;
    return false;
}
