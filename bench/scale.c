/* scale.c - `make bench-scale`: one context compiling a very large number of
 * distinct small kernels, as a server that JITs for months does (issue 9,
 * finding 7).  Not a test: it takes minutes and prints numbers.
 *
 *   scale [KERNELS] [CAPACITY]        defaults 1000000 and 10000
 *
 * Part 1, bounded: KERNELS distinct kernels (a + b + I over small f32
 * shapes) compiled, run once and released in a context bounded to CAPACITY
 * kernels.  At every tenth it prints the resident memory (VmRSS), the
 * cache's own accounting and the mean compile time, so a flat column is the
 * proof of bounded memory.
 *
 * Part 2, unbounded lookups: a context holding every kernel of part 1's
 * first min(KERNELS, 1000000) keys (no capacity), then cache hits on the
 * oldest, a middle and the newest key, median of 2001 timed hits each: a
 * hit must not depend on the number of kernels (the list it replaced took
 * 317 us at 10,000 kernels).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bcgen.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* Kernel I: distinct expression text and shapes, like a server's stream. */
static bcg_status compile_numbered(bcg_context *ctx, long i, bcg_kernel **k)
{
    char expr[64];
    snprintf(expr, sizeof expr, "a + b + %ld", i);
    int64_t a_shape[] = {1 + i % 3, 8 + (i / 3) % 5}, b_shape[] = {a_shape[1]};
    bcg_operand ops[] = {{"a", BCG_F32, 2, a_shape, NULL}, {"b", BCG_F32, 1, b_shape, NULL}};
    bcg_error err;
    bcg_status s = bcg_compile(ctx, expr, ops, 2, NULL, k, &err);
    if (s)
        fprintf(stderr, "scale: %s: %s\n", expr, err.message);
    return s;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_hit_us(bcg_context *ctx, long i)
{
    enum { SAMPLES = 2001 };
    static double t[SAMPLES];
    bcg_kernel *k;
    for (int s = 0; s < SAMPLES; s++) {
        double t0 = now();
        compile_numbered(ctx, i, &k);
        t[s] = now() - t0;
        bcg_kernel_release(k);
    }
    qsort(t, SAMPLES, sizeof t[0], compare_doubles);
    return t[SAMPLES / 2] * 1e6;
}

int main(int argc, char **argv)
{
    long kernels = argc > 1 ? atol(argv[1]) : 1000000;
    long capacity = argc > 2 ? atol(argv[2]) : 10000;
    if (kernels < 10 || capacity < 1) {
        fprintf(stderr, "usage: scale [KERNELS >= 10] [CAPACITY >= 1]\n");
        return 2;
    }
    float a[3 * 12], b[12], out[3 * 12];
    for (int j = 0; j < 36; j++)
        a[j] = (float)j;
    for (int j = 0; j < 12; j++)
        b[j] = 1.0f;
    const void *in[] = {a, b};

    printf("# part 1: %ld distinct kernels, capacity %ld, each compiled, run, released\n",
           kernels, capacity);
    printf("%10s %10s %12s %12s %14s\n", "kernels", "rss_MiB", "cached", "cached_KiB",
           "compile_us");
    bcg_context *ctx = bcg_context_new();
    bcg_error err;
    bcg_context_set_capacity(ctx, (size_t)capacity, 0, &err);
    double t0 = now();
    long step = kernels / 10;
    for (long i = 0; i < kernels; i++) {
        bcg_kernel *k;
        if (compile_numbered(ctx, i, &k))
            return 1;
        if (bcg_run(k, out, in, &err))
            return 1;
        bcg_kernel_release(k);
        if ((i + 1) % step == 0) {
            bcg_cache_stats s;
            bcg_context_stats(ctx, &s);
            printf("%10ld %10.1f %12zu %12.1f %14.1f\n", i + 1, (double)rss_kib() / 1024,
                   s.kernels, (double)s.bytes / 1024, (now() - t0) / (double)step * 1e6);
            fflush(stdout);
            t0 = now();
        }
    }
    bcg_context_free(ctx);

    long held = kernels < 1000000 ? kernels : 1000000;
    printf("# part 2: %ld kernels in one unbounded context, then cache hits\n", held);
    ctx = bcg_context_new();
    for (long i = 0; i < held; i++) {
        bcg_kernel *k;
        if (compile_numbered(ctx, i, &k))
            return 1;
        bcg_kernel_release(k);
    }
    bcg_cache_stats s;
    bcg_context_stats(ctx, &s);
    printf("cached %zu kernels, %.1f MiB accounted (%.0f bytes each), rss %.1f MiB\n",
           s.kernels, (double)s.bytes / 1048576, (double)s.bytes / (double)s.kernels,
           (double)rss_kib() / 1024);
    printf("hit, median of 2001: oldest %.3f us, middle %.3f us, newest %.3f us\n",
           median_hit_us(ctx, 0), median_hit_us(ctx, held / 2), median_hit_us(ctx, held - 1));
    bcg_context_free(ctx);
    return 0;
}
