/* test_cache.c - a context's kernel cache (gen/cache.c): constant-time
 * lookup, what a kernel costs, the capacity and its least-recently-used
 * eviction, releasing and freeing kernels, and kernels that stay valid
 * while a run or a caller holds them (issue 9, finding 7).  Runs under
 * ThreadSanitizer too (tests/safety/test_tsan.py). */
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#include <cmocka.h>

/* Compiles "a + b + I" over a (ROWS, 8) and b (8,) of f32: distinct keys. */
static bcg_kernel *compile_numbered(bcg_context *ctx, int i)
{
    char expr[48];
    snprintf(expr, sizeof expr, "a + b + %d", i);
    int64_t a_shape[] = {2, 8}, b_shape[] = {8};
    bcg_operand ops[] = {{"a", BCG_F32, 2, a_shape, NULL}, {"b", BCG_F32, 1, b_shape, NULL}};
    bcg_kernel *k = NULL;
    bcg_error err;
    if (bcg_compile(ctx, expr, ops, 2, NULL, &k, &err) != BCG_OK)
        fail_msg("%s: %s", expr, err.message);
    return k;
}

/* Runs a kernel of compile_numbered and checks element 0 and 15. */
static void check_numbered(const bcg_kernel *k, int i)
{
    float a[16], b[8], out[16];
    for (int j = 0; j < 16; j++)
        a[j] = (float)j;
    for (int j = 0; j < 8; j++)
        b[j] = 100.0f * (float)j;
    const void *in[] = {a, b};
    bcg_error err;
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    assert_true(out[0] == (float)i);
    assert_true(out[15] == 15.0f + 700.0f + (float)i);
}

static bcg_cache_stats stats_of(bcg_context *ctx)
{
    bcg_cache_stats s;
    bcg_context_stats(ctx, &s);
    return s;
}

static void test_hit_compares_one_key_whatever_the_count(void **state)
{
    (void)state;
    enum { KERNELS = 5000 };
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *first = compile_numbered(ctx, 0);
    for (int i = 1; i < KERNELS; i++)
        compile_numbered(ctx, i);
    long compiles = compile_tcc_count(ctx);
    long compares = cache_key_compares(ctx);
    /* the oldest, the newest and one in the middle: one key compared each
     * (the list this replaced walked all 5000 for the oldest) */
    assert_ptr_equal(compile_numbered(ctx, 0), first);
    compile_numbered(ctx, KERNELS - 1);
    compile_numbered(ctx, KERNELS / 2);
    assert_int_equal(compile_tcc_count(ctx), compiles);
    assert_true(cache_key_compares(ctx) - compares <= 3 + 1);
    assert_int_equal(stats_of(ctx).kernels, KERNELS);
    check_numbered(first, 0);
    bcg_context_free(ctx);
}

/* Issue 9: a small kernel costs at most 8 KB: heap (measured with glibc's
 * mallinfo2) plus its code pages. */
static void test_small_kernel_costs_under_8_kb(void **state)
{
    (void)state;
    enum { KERNELS = 2000 };
    bcg_context *ctx = bcg_context_new();
    compile_numbered(ctx, -1); /* first-use allocations (libtcc, pools) */
    malloc_trim(0);
    struct mallinfo2 before = mallinfo2();
    bcg_cache_stats s0 = stats_of(ctx);
    for (int i = 0; i < KERNELS; i++)
        compile_numbered(ctx, i);
    struct mallinfo2 after = mallinfo2();
    bcg_cache_stats s1 = stats_of(ctx);
    double heap = ((double)after.uordblks - (double)before.uordblks) / KERNELS;
    double accounted = (double)(s1.bytes - s0.bytes) / KERNELS;
    print_message("# per kernel: %.0f bytes of heap, %.0f bytes accounted (code pages "
                  "included)\n", heap, accounted);
    /* the accounting includes the code pages, which are not heap */
    assert_true(accounted < 8192);
    assert_true(heap < accounted);
    assert_true(accounted > 4096); /* a code page at least: the accounting is real */
    bcg_context_free(ctx);
}

static void test_capacity_in_kernels_evicts_least_recently_used(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    bcg_error err;
    assert_int_equal(bcg_context_set_capacity(ctx, 3, 0, &err), BCG_OK);
    bcg_kernel *a = compile_numbered(ctx, 1);
    bcg_kernel_release(compile_numbered(ctx, 2));
    bcg_kernel_release(compile_numbered(ctx, 3));
    bcg_kernel_release(a);
    assert_ptr_equal(compile_numbered(ctx, 1), a); /* a is now the most recently used */
    bcg_kernel_release(a);
    compile_numbered(ctx, 4);                      /* evicts 2, the least recently used */
    bcg_cache_stats s = stats_of(ctx);
    assert_int_equal(s.kernels, 3);
    assert_int_equal(s.evictions, 1);
    assert_int_equal(s.live_kernels, 3);           /* 2 was released: freed */
    long compiles = compile_tcc_count(ctx);
    assert_ptr_equal(compile_numbered(ctx, 1), a); /* still cached */
    compile_numbered(ctx, 3);
    assert_int_equal(compile_tcc_count(ctx), compiles);
    compile_numbered(ctx, 2);                      /* was evicted: compiled again */
    assert_int_equal(compile_tcc_count(ctx), compiles + 1);
    bcg_context_free(ctx);
}

static void test_bounded_context_keeps_memory_flat(void **state)
{
    (void)state;
    enum { CAPACITY = 100, KERNELS = 3000 };
    bcg_context *ctx = bcg_context_new();
    bcg_error err;
    assert_int_equal(bcg_context_set_capacity(ctx, CAPACITY, 0, &err), BCG_OK);
    long live_at_1000 = 0;
    for (int i = 0; i < KERNELS; i++) {
        bcg_kernel *k = compile_numbered(ctx, i);
        check_numbered(k, i);
        bcg_kernel_release(k);
        if (i == 1000)
            live_at_1000 = mem_live();
    }
    bcg_cache_stats s = stats_of(ctx);
    assert_int_equal(s.kernels, CAPACITY);
    assert_int_equal(s.live_kernels, CAPACITY);
    assert_int_equal(s.evictions, KERNELS - CAPACITY);
    /* heap blocks do not grow with the kernels compiled (a few for the
     * table's growth are allowed) */
    assert_true(mem_live() <= live_at_1000 + 8);
    /* lowering the capacity evicts at once */
    assert_int_equal(bcg_context_set_capacity(ctx, 10, 0, &err), BCG_OK);
    assert_int_equal(stats_of(ctx).kernels, 10);
    bcg_context_free(ctx);
}

static void test_capacity_in_bytes(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    bcg_kernel_release(compile_numbered(ctx, 0));
    size_t one = stats_of(ctx).bytes;
    assert_true(one > 0);
    bcg_error err;
    assert_int_equal(bcg_context_set_capacity(ctx, 0, 3 * one + one / 2, &err), BCG_OK);
    for (int i = 1; i < 20; i++)
        bcg_kernel_release(compile_numbered(ctx, i));
    bcg_cache_stats s = stats_of(ctx);
    assert_true(s.kernels >= 2 && s.kernels <= 3);
    assert_true(s.bytes <= 3 * one + one / 2);
    assert_int_equal(bcg_context_set_capacity(NULL, 1, 1, &err), BCG_ERR_USAGE);
    bcg_context_free(ctx);
}

static void test_held_kernel_outlives_its_eviction(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    bcg_error err;
    assert_int_equal(bcg_context_set_capacity(ctx, 1, 0, &err), BCG_OK);
    bcg_kernel *held = compile_numbered(ctx, 7);
    for (int i = 0; i < 50; i++)
        bcg_kernel_release(compile_numbered(ctx, 100 + i)); /* evicts 7 */
    bcg_cache_stats s = stats_of(ctx);
    assert_int_equal(s.kernels, 1);
    assert_int_equal(s.live_kernels, 2); /* the cached one and the held one */
    check_numbered(held, 7);
    assert_non_null(strstr(bcg_kernel_source(held), "bcg_kernel"));
    bcg_kernel_release(held);
    assert_int_equal(stats_of(ctx).live_kernels, 1);
    bcg_context_free(ctx);
}

static void test_free_drops_from_cache(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    long blocks = mem_live();
    bcg_kernel *k = compile_numbered(ctx, 5);
    bcg_kernel *again = compile_numbered(ctx, 5); /* two references */
    assert_ptr_equal(k, again);
    bcg_kernel_release(again);
    long compiles = compile_tcc_count(ctx);
    bcg_kernel_free(k);
    assert_int_equal(stats_of(ctx).kernels, 0);
    assert_int_equal(stats_of(ctx).live_kernels, 0);
    assert_int_equal(mem_live(), blocks);
    bcg_kernel_free(NULL);
    bcg_kernel_release(NULL);
    k = compile_numbered(ctx, 5);
    assert_int_equal(compile_tcc_count(ctx), compiles + 1);
    check_numbered(k, 5);
    bcg_context_free(ctx);
}

/* The source is generated again on demand, identical every time, and
 * equal for a kernel kept and one rebuilt from its key. */
static void test_source_on_demand(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = compile_numbered(ctx, 3);
    const char *source = bcg_kernel_source(k);
    assert_non_null(source);
    assert_ptr_equal(bcg_kernel_source(k), source);
    assert_non_null(strstr(source, "out = ((in0 + in1) + 3.0)"));
    bcg_context *other = bcg_context_new();
    bcg_kernel *same = compile_numbered(other, 3);
    assert_string_equal(bcg_kernel_source(same), source);
    bcg_context_free(other);
    bcg_context_free(ctx);
}

/* ---- threads -------------------------------------------------------------------- */

typedef struct long_run {
    const bcg_kernel *kernel;
    float *out;
    const float *in;
    int started; /* atomic */
    bcg_status status;
} long_run;

static void *run_once(void *arg)
{
    long_run *r = arg;
    const void *in[] = {r->in};
    __atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
    r->status = bcg_run(r->kernel, r->out, in, NULL);
    return NULL;
}

/* A kernel freed (and another evicted) while a thread runs them: the runs
 * finish on valid code with the right results, and the kernels go after. */
static void test_free_during_a_run(void **state)
{
    (void)state;
    enum { N = 1 << 22 };
    bcg_context *ctx = bcg_context_new();
    bcg_error err;
    assert_int_equal(bcg_context_set_capacity(ctx, 1, 0, &err), BCG_OK);
    float *in = malloc(sizeof *in * N), *out1 = malloc(sizeof *out1 * N),
          *out2 = malloc(sizeof *out2 * N);
    assert_true(in && out1 && out2);
    for (int i = 0; i < N; i++)
        in[i] = (float)(i % 1000);
    int64_t shape[] = {N};
    bcg_operand op = {"x", BCG_F32, 1, shape, NULL};
    long blocks = mem_live();
    bcg_kernel *freed, *evicted;
    assert_int_equal(bcg_compile(ctx, "sqrt(x) * 2 + 1", &op, 1, NULL, &freed, &err), BCG_OK);
    assert_int_equal(bcg_compile(ctx, "sqrt(x) * 3 + 1", &op, 1, NULL, &evicted, &err), BCG_OK);
    long_run r1 = {freed, out1, in, 0, BCG_OK}, r2 = {evicted, out2, in, 0, BCG_OK};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, run_once, &r1), 0);
    assert_int_equal(pthread_create(&t2, NULL, run_once, &r2), 0);
    while (!__atomic_load_n(&r1.started, __ATOMIC_ACQUIRE) ||
           !__atomic_load_n(&r2.started, __ATOMIC_ACQUIRE))
        sched_yield();
    usleep(2000); /* into the runs (4 Mi square roots each) */
    bcg_kernel_free(freed);      /* the caller's reference and the cache's */
    bcg_kernel_release(evicted); /* cached, unheld ... */
    bcg_kernel *k;
    assert_int_equal(bcg_compile(ctx, "x + 1", &op, 1, NULL, &k, &err), BCG_OK); /* ... evicted */
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_int_equal(r1.status, BCG_OK);
    assert_int_equal(r2.status, BCG_OK);
    for (int i = 0; i < N; i += 4099) {
        assert_true(out1[i] == sqrtf(in[i]) * 2.0f + 1.0f);
        assert_true(out2[i] == sqrtf(in[i]) * 3.0f + 1.0f);
    }
    assert_int_equal(stats_of(ctx).live_kernels, 1);
    /* the two retired during their runs were freed when the runs ended */
    bcg_kernel_free(k);
    assert_int_equal(mem_live(), blocks);
    free(in);
    free(out1);
    free(out2);
    bcg_context_free(ctx);
}

typedef struct churn {
    bcg_context *ctx;
    int seed;
    int checked;
} churn;

static void *compile_run_release(void *arg)
{
    churn *c = arg;
    unsigned x = (unsigned)c->seed * 2654435761u + 1;
    for (int i = 0; i < 400; i++) {
        x = x * 1103515245u + 12345u;
        int n = (int)(x >> 16) % 40;
        bcg_kernel *k = compile_numbered(c->ctx, n);
        check_numbered(k, n);
        if (x & 0x100)
            bcg_kernel_free(k);
        else
            bcg_kernel_release(k);
        c->checked++;
    }
    return NULL;
}

/* Threads compiling, running, releasing and freeing over a small capacity. */
static void test_threads_churn_a_small_cache(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    bcg_error err;
    assert_int_equal(bcg_context_set_capacity(ctx, 8, 0, &err), BCG_OK);
    churn c[3] = {{ctx, 1, 0}, {ctx, 2, 0}, {ctx, 3, 0}};
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, compile_run_release, &c[i]), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(c[0].checked + c[1].checked + c[2].checked, 1200);
    bcg_cache_stats s = stats_of(ctx);
    assert_true(s.kernels <= 8);
    assert_int_equal(s.live_kernels, s.kernels);
    bcg_context_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_compares_one_key_whatever_the_count),
        cmocka_unit_test(test_small_kernel_costs_under_8_kb),
        cmocka_unit_test(test_capacity_in_kernels_evicts_least_recently_used),
        cmocka_unit_test(test_bounded_context_keeps_memory_flat),
        cmocka_unit_test(test_capacity_in_bytes),
        cmocka_unit_test(test_held_kernel_outlives_its_eviction),
        cmocka_unit_test(test_free_drops_from_cache),
        cmocka_unit_test(test_source_on_demand),
        cmocka_unit_test(test_free_during_a_run),
        cmocka_unit_test(test_threads_churn_a_small_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
