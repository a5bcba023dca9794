/* test_threads.c - one context shared by several threads (issue 6), built
 * and run under ThreadSanitizer too (make safety-tsan, tests/safety/
 * test_tsan.py): threads compile distinct and identical keys at once (the
 * cache and libtcc's mutex), run one shared kernel at once, emit and
 * broadcast shapes, and hit errors - each checking its results.  TSan
 * reports any data race in the library; this test checks the answers. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define THREADS 4
#define ROUNDS 12

static bcg_context *shared;
static bcg_kernel *common_kernel;

typedef struct job {
    int id;
    int failures;
    char first_failure[600];
} job;

static void note(job *j, const char *what, const bcg_error *err)
{
    if (j->failures++ == 0)
        snprintf(j->first_failure, sizeof j->first_failure, "%s: %s", what,
                 err ? err->message : "");
}

static void *worker(void *arg)
{
    job *j = arg;
    for (int round = 0; round < ROUNDS; round++) {
        bcg_error err;
        /* A key of this thread and round (libtcc runs for each), and one
         * that every thread compiles (the cache races). */
        int64_t n = 2 + (j->id * ROUNDS + round) % 9, sa[] = {n, 3}, sb[] = {3};
        bcg_operand ops[2] = {{"a", BCG_I64, 2, sa, NULL}, {"b", BCG_I64, 1, sb, NULL}};
        char expr[64];
        snprintf(expr, sizeof expr, "a * %d - b", j->id * 100 + round);
        bcg_kernel *k;
        if (bcg_compile(shared, expr, ops, 2, NULL, &k, &err) != BCG_OK) {
            note(j, "compile", &err);
            continue;
        }
        int64_t a[30], b[3], out[30];
        for (int i = 0; i < 30; i++)
            a[i] = i + j->id;
        for (int i = 0; i < 3; i++)
            b[i] = i * 7;
        const void *in[] = {a, b};
        if (bcg_run(k, out, in, &err) != BCG_OK)
            note(j, "run", &err);
        for (int i = 0; i < n * 3; i++)
            if (out[i] != a[i] * (j->id * 100 + round) - b[i % 3])
                note(j, "wrong result", NULL);

        /* The shared kernel, run by every thread into its own output. */
        float x[8], y[8];
        for (int i = 0; i < 8; i++)
            x[i] = (float)(i * j->id);
        const void *in1[] = {x};
        if (bcg_run(common_kernel, y, in1, &err) != BCG_OK)
            note(j, "shared run", &err);
        for (int i = 0; i < 8; i++)
            if (y[i] != x[i] * 0.5f + 1.0f)
                note(j, "shared result", NULL);

        /* The same key from every thread at once. */
        int64_t s8[] = {8};
        bcg_operand op1 = {"x", BCG_F32, 1, s8, NULL};
        if (bcg_compile(shared, "x * 0.5 + 1", &op1, 1, NULL, &k, &err) != BCG_OK ||
            k != common_kernel)
            note(j, "cached compile", &err);

        /* Errors and the other entry points. */
        if (bcg_compile(shared, "x +", &op1, 1, NULL, &k, &err) != BCG_ERR_PARSE ||
            err.column != 4)
            note(j, "parse error", &err);
        char *source = NULL;
        if (bcg_emit(expr, ops, 2, NULL, "threaded", &source, &err) != BCG_OK ||
            !strstr(source, "threaded"))
            note(j, "emit", &err);
        bcg_free(source);
        const int64_t *shapes[] = {sa, sb};
        int ranks[] = {2, 1}, rank;
        int64_t result[BCG_MAX_RANK];
        if (bcg_broadcast_shapes(2, shapes, ranks, NULL, NULL, result, &rank, NULL, 0, &err) ||
            rank != 2 || result[0] != n || result[1] != 3)
            note(j, "broadcast", &err);
    }
    return NULL;
}

static void test_threads_share_one_context(void **state)
{
    (void)state;
    shared = bcg_context_new();
    assert_non_null(shared);
    int64_t s8[] = {8};
    bcg_operand op1 = {"x", BCG_F32, 1, s8, NULL};
    bcg_error err;
    assert_int_equal(bcg_compile(shared, "x * 0.5 + 1", &op1, 1, NULL, &common_kernel, &err),
                     BCG_OK);
    long before = compile_tcc_count(shared);
    pthread_t threads[THREADS];
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].id = i + 1;
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &jobs[i]), 0);
    }
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        if (jobs[i].failures)
            print_message("# thread %d: %d failures, first %s\n", jobs[i].id, jobs[i].failures,
                          jobs[i].first_failure);
        failures += jobs[i].failures;
    }
    assert_int_equal(failures, 0);
    /* Each distinct key ran libtcc exactly once. */
    assert_int_equal(compile_tcc_count(shared) - before, THREADS * ROUNDS);
    bcg_context_free(shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_share_one_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
