/* test_threads_run.c - bcg_run_threads against the reference evaluator.
 *
 * Each case compiles an expression, runs it with 1 to 4 threads and
 * compares every output byte with eval_run on the same plan (NaNs of any
 * sign or payload are equal, and f32 exp within a tolerance, as in
 * test_microkernels) and with bcg_run's result on one thread, bit for bit.  The layouts cover
 * outer extents that do not divide by the thread count (pieces of unequal
 * length, fewer pieces than threads), a single merged loop, broadcasting
 * along the split loop, strided, transposed and negatively strided inputs,
 * pointers that are only element-aligned, and in-place kernels.  The
 * threaded-run counter proves the pool was used where it must be, and that
 * small work stays on the calling thread.  `make test-tsan` runs this file
 * under ThreadSanitizer (two callers share one kernel at once below). */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compare.h"

static uint64_t random_state = 0x9E3779B97F4A7C15ull;

static uint64_t random_next(void) { return xorshift64(&random_state); }

static void fill(void *buffer, bcg_dtype t, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = random_next();
        if (t == BCG_F32 || t == BCG_F64) {
            double v = (r & 15) == 0 ? NAN : ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
            if (t == BCG_F32)
                ((float *)buffer)[i] = (float)v;
            else
                ((double *)buffer)[i] = v;
        } else {
            memcpy((char *)buffer + (size_t)i * bcg_dtype_size(t), &r, bcg_dtype_size(t));
        }
    }
}

/* A case: up to three operands, each with a shape and optional strides. */
typedef struct case_operand {
    int rank;
    int64_t shape[3];
    int64_t strides[3];
    bool strided;
} case_operand;

typedef struct thread_case {
    const char *what;
    const char *expr;
    bcg_dtype dtype;
    int operand_count;
    case_operand operands[3];
    bool inplace;           /* the output is operand 0 */
    bool must_thread;       /* with 2+ threads the pool must be used */
} thread_case;

#define C2(r, a, b) {r, {a, b}, {0}, false}
#define C3(a, b, c) {3, {a, b, c}, {0}, false}
#define C1(a) {1, {a}, {0}, false}

static const thread_case cases[] = {
    {"rows, odd outer extent", "a + b", BCG_F32, 2, {C2(2, 7, 20011), C1(20011)}, false, true},
    {"one merged loop", "a * b - a", BCG_F64, 2, {C1(100003), C1(100003)}, false, true},
    {"exp over rows", "exp(a) + b", BCG_F32, 2, {C2(2, 9, 10007), C1(10007)}, false, true},
    {"broadcast along the split loop", "a - b", BCG_I32, 2, {C2(2, 1, 70001), C2(2, 3, 1)}, false,
     true},
    {"three operands, 3-d", "where(a > b, a * c, b)", BCG_F32, 3,
     {C3(5, 3, 9001), C3(1, 3, 9001), C3(5, 1, 1)}, false, true},
    {"short runs, one rows call per outer trip", "a * b", BCG_F32, 2,
     {C3(50, 1, 64), C3(1, 30, 64)}, false, true},
    {"i8 wrapping", "a * b + a", BCG_I8, 2, {C2(2, 11, 7001), C1(7001)}, false, true},
    {"transposed input", "a + b", BCG_F32, 2,
     {{2, {300, 301}, {1, 300}, true}, C1(301)}, false, true},
    {"negative strides", "a - b", BCG_F64, 2,
     {{2, {17, 5003}, {-5003, -1}, true}, {1, {5003}, {-2}, true}}, false, true},
    {"in place", "a * b + 1", BCG_F32, 2, {C2(2, 6, 30011), C1(30011)}, true, true},
    {"in place, one loop", "a + b", BCG_I64, 2, {C1(65537), C1(65537)}, true, true},
    {"small work stays on the caller", "a + b", BCG_F32, 2, {C2(2, 3, 4), C1(4)}, false, false},
    {"just under two threads' work", "a + b", BCG_F32, 2, {C2(2, 8, 8191), C1(8191)}, false, false},
};

/* Runs one case with THREADS threads.  Returns false after printing why on
 * a mismatch. */
static bool check_case(const thread_case *tc, int threads, int stream_stores)
{
    const char *names[3] = {"a", "b", "c"};
    bcg_operand ops[3];
    void *allocations[3] = {0};
    const void *inputs[3];
    size_t spans[3];
    for (int i = 0; i < tc->operand_count; i++) {
        const case_operand *o = &tc->operands[i];
        ops[i] = (bcg_operand){names[i], tc->dtype, o->rank, o->shape,
                               o->strided ? o->strides : NULL};
        int64_t low = 0, high = 0, step = 1;
        for (int d = o->rank - 1; d >= 0; d--) {
            int64_t stride = o->strided ? o->strides[d] : step;
            step *= o->shape[d];
            int64_t reach = stride * (o->shape[d] - 1);
            if (reach < 0)
                low += reach;
            else
                high += reach;
        }
        size_t size = bcg_dtype_size(tc->dtype);
        int64_t count = high - low + 2;
        spans[i] = (size_t)count * size;
        allocations[i] = malloc(spans[i]);
        assert_non_null(allocations[i]);
        fill(allocations[i], tc->dtype, count);
        /* element-aligned, not vector-aligned: one element in */
        inputs[i] = (char *)allocations[i] + size + (size_t)(-low) * size;
    }
    bcg_options options;
    bcg_options_init(&options);
    options.stream_stores = stream_stores;
    if (tc->inplace)
        options.inplace = 0;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *kernel = NULL;
    bcg_error err;
    if (bcg_compile(ctx, tc->expr, ops, tc->operand_count, &options, &kernel, &err) != BCG_OK) {
        print_error("%s: %s\n", tc->what, err.message);
        return false;
    }
    assert_string_equal(bcg_kernel_note(kernel), "");

    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = a;
    front->err = &err;
    assert_int_equal(compile_front(front, tc->expr, ops, tc->operand_count, &options), BCG_OK);
    front->err = NULL;
    bcg_dtype out_dtype = bcg_kernel_dtype(kernel);
    size_t out_size = bcg_dtype_size(out_dtype);
    int64_t elements = bcg_kernel_elements(kernel);
    char *got, *want, *copy = NULL;
    long runs_before = compile_threaded_run_count(ctx);
    if (tc->inplace) {
        /* the reference writes into a copy of a's buffer, the kernel into a's own */
        copy = malloc(spans[0]);
        assert_non_null(copy);
        memcpy(copy, allocations[0], spans[0]);
        size_t at = (size_t)((const char *)inputs[0] - (const char *)allocations[0]);
        const void *reference_inputs[3] = {copy + at, inputs[1], inputs[2]};
        assert_int_equal(eval_run(front, copy + at, reference_inputs, NULL), BCG_OK);
        assert_int_equal(bcg_run_threads(kernel, NULL, inputs, threads, &err), BCG_OK);
        got = (char *)inputs[0];
        want = copy + at;
    } else {
        got = malloc((size_t)elements * out_size + out_size);
        want = malloc((size_t)elements * out_size);
        assert_non_null(got);
        assert_non_null(want);
        assert_int_equal(eval_run(front, want, inputs, NULL), BCG_OK);
        assert_int_equal(bcg_run_threads(kernel, got + out_size, inputs, threads, &err), BCG_OK);
        memmove(got, got + out_size, (size_t)elements * out_size);
    }
    bool ok = true;
    int64_t at = first_difference(got, want, out_dtype, elements, strstr(tc->expr, "exp(") != NULL);
    if (at >= 0) {
        print_error("%s (%s) with %d threads%s: element %lld differs from the reference\n",
                    tc->what, tc->expr, threads, stream_stores ? ", streaming stores" : "",
                    (long long)at);
        ok = false;
    }
    if (!tc->inplace) { /* and bit for bit bcg_run's result on one thread */
        char *single = malloc((size_t)elements * out_size);
        assert_non_null(single);
        assert_int_equal(bcg_run(kernel, single, inputs, &err), BCG_OK);
        at = first_difference(got, single, out_dtype, elements, false);
        if (at >= 0) {
            print_error("%s (%s) with %d threads%s: element %lld differs from bcg_run's\n",
                        tc->what, tc->expr, threads, stream_stores ? ", streaming stores" : "",
                        (long long)at);
            ok = false;
        }
        free(single);
    }
    long threaded = compile_threaded_run_count(ctx) - runs_before;
    bool want_threaded = tc->must_thread && threads > 1;
    if (threaded != (want_threaded ? 1 : 0)) {
        print_error("%s with %d threads: %ld threaded runs, expected %d\n", tc->what, threads,
                    threaded, want_threaded ? 1 : 0);
        ok = false;
    }
    if (!want_threaded && compile_pool_workers(ctx) != 0) {
        print_error("%s with %d threads: worker threads were started\n", tc->what, threads);
        ok = false;
    }
    if (!tc->inplace) {
        free(got);
        free(want);
    }
    free(copy);
    arena_free(a);
    bcg_context_free(ctx);
    for (int i = 0; i < tc->operand_count; i++)
        free(allocations[i]);
    return ok;
}

static void test_against_reference(void **state)
{
    (void)state;
    int failures = 0, checked = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int threads = 1; threads <= 4; threads++)
            for (int stream = 0; stream <= 1; stream++) { /* plain, streaming stores */
                checked++;
                if (!check_case(&cases[c], threads, stream))
                    failures++;
            }
    print_message("# %d case runs, %d failed\n", checked, failures);
    assert_int_equal(failures, 0);
}

static void test_bad_thread_counts(void **state)
{
    (void)state;
    int64_t sa[] = {4}, sb[] = {4};
    bcg_operand ops[] = {{"a", BCG_F32, 1, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, out[4];
    const void *in[] = {a, b};
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a + b", ops, 2, NULL, &k, &err), BCG_OK);
    assert_int_equal(bcg_run_threads(k, out, in, 0, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "threads"));
    assert_int_equal(bcg_run_threads(k, out, in, BCG_MAX_THREADS + 1, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_run_threads(NULL, out, in, 2, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_run_threads(k, out, NULL, 2, &err), BCG_ERR_RUN);
    assert_int_equal(bcg_run_threads(k, out, in, BCG_MAX_THREADS, &err), BCG_OK);
    assert_true(out[3] == 5.0f);
    bcg_context_free(ctx);
}

/* Two callers run the same kernel with threads at once: the lazily made
 * pieces and the shared pool must stay consistent (ThreadSanitizer checks
 * the races in make test-tsan). */
typedef struct shared_run {
    const bcg_kernel *kernel;
    const void *const *inputs;
    float *out;
    bcg_status status;
} shared_run;

static void *run_shared(void *arg)
{
    shared_run *r = arg;
    bcg_error err;
    r->status = BCG_OK;
    for (int i = 0; i < 5 && r->status == BCG_OK; i++)
        r->status = bcg_run_threads(r->kernel, r->out, r->inputs, 2 + i % 2, &err);
    return NULL;
}

static void test_concurrent_callers(void **state)
{
    (void)state;
    enum { ROWS = 6, COLUMNS = 20000 };
    int64_t sa[] = {ROWS, COLUMNS}, sb[] = {COLUMNS};
    bcg_operand ops[] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    float *a = malloc(sizeof(float) * ROWS * COLUMNS), *b = malloc(sizeof(float) * COLUMNS);
    float *out[2] = {malloc(sizeof(float) * ROWS * COLUMNS), malloc(sizeof(float) * ROWS * COLUMNS)};
    assert_true(a && b && out[0] && out[1]);
    for (int i = 0; i < ROWS * COLUMNS; i++)
        a[i] = (float)(i % 977);
    for (int j = 0; j < COLUMNS; j++)
        b[j] = (float)j * 0.5f;
    const void *in[] = {a, b};
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a * 2 + b", ops, 2, NULL, &k, &err), BCG_OK);
    shared_run runs[2] = {{k, in, out[0], BCG_OK}, {k, in, out[1], BCG_OK}};
    pthread_t threads[2];
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, run_shared, &runs[t]), 0);
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_join(threads[t], NULL), 0);
    for (int t = 0; t < 2; t++) {
        assert_int_equal(runs[t].status, BCG_OK);
        for (int i = 0; i < ROWS * COLUMNS; i++)
            assert_true(out[t][i] == (float)(i % 977) * 2.0f + (float)(i % COLUMNS) * 0.5f);
    }
    assert_int_equal(compile_threaded_run_count(ctx), 10);
    assert_true(compile_pool_workers(ctx) >= 1);
    bcg_context_free(ctx);
    free(a);
    free(b);
    free(out[0]);
    free(out[1]);
}

/* The pool's pieces: each runs once, and a run asked for THREADS threads
 * uses at most THREADS distinct threads even when an earlier run started
 * more workers (bcg_run_threads cuts each thread's share into several
 * pieces, so the pool must not hand them to every worker it has). */
#define POOL_PIECES 24

typedef struct pool_record {
    pthread_mutex_t lock;
    int runs[POOL_PIECES];
    pthread_t seen[POOL_PIECES];
    int seen_count;
    int wait_for; /* a piece returns once this many threads were seen (5 s at most) */
} pool_record;

static void record_piece(void *arg, int part)
{
    pool_record *r = arg;
    struct timespec nap = {0, 1000000}; /* 1 ms: time for every worker to wake */
    nanosleep(&nap, NULL);
    pthread_mutex_lock(&r->lock);
    r->runs[part]++;
    bool known = false;
    for (int i = 0; i < r->seen_count; i++)
        known |= pthread_equal(r->seen[i], pthread_self()) != 0;
    if (!known)
        r->seen[r->seen_count++] = pthread_self();
    pthread_mutex_unlock(&r->lock);
    /* On a loaded machine a new worker may first run after the caller has
     * taken all 24 ms of pieces: the first run's pieces wait for it, so the
     * test asserts that the worker joins, not how fast it is scheduled. */
    for (int waited = 0; waited < 5000; waited++) {
        pthread_mutex_lock(&r->lock);
        bool enough = r->seen_count >= r->wait_for;
        pthread_mutex_unlock(&r->lock);
        if (enough)
            break;
        nanosleep(&nap, NULL);
    }
}

static void test_pool_thread_limit(void **state)
{
    (void)state;
    pool *p = pool_new();
    assert_non_null(p);
    static const int threads[] = {2, 4, 2, 1, 3, 2};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool_record r;
        memset(&r, 0, sizeof r);
        pthread_mutex_init(&r.lock, NULL);
        r.wait_for = t == 0 ? 2 : 0;
        pool_run(p, threads[t], POOL_PIECES, record_piece, &r);
        for (int i = 0; i < POOL_PIECES; i++)
            assert_int_equal(r.runs[i], 1);
        if (r.seen_count > threads[t])
            print_error("a run asked for %d threads used %d\n", threads[t], r.seen_count);
        assert_true(r.seen_count >= 1 && r.seen_count <= threads[t]);
        /* a worker started by a run joins that run (it once waited for the
         * next: the first bcg_run_threads of a context ran on one thread) */
        if (t == 0 && r.seen_count != 2)
            print_error("the first run on a new pool used %d threads, not 2\n", r.seen_count);
        if (t == 0)
            assert_int_equal(r.seen_count, 2);
        pthread_mutex_destroy(&r.lock);
    }
    assert_int_equal(pool_worker_count(p), 3); /* the second run's, kept */
    pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_thread_limit),
        cmocka_unit_test(test_bad_thread_counts),
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_concurrent_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
