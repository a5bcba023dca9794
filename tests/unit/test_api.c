/* test_api.c - the public C API: compile, query, run, cache, threads,
 * run-time pointer checks, and the errors for bad operand descriptions. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static bcg_context *ctx;

static int setup(void **state)
{
    (void)state;
    ctx = bcg_context_new();
    return ctx ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    bcg_context_free(ctx);
    return 0;
}

static bcg_kernel *compile2(const char *expr, bcg_dtype t, int ra, const int64_t *sa, int rb,
                            const int64_t *sb, bcg_error *err)
{
    bcg_operand ops[2] = {{"a", t, ra, sa, NULL}, {"b", t, rb, sb, NULL}};
    bcg_kernel *k = NULL;
    bcg_compile(ctx, expr, ops, 2, NULL, &k, err);
    return k;
}

static void test_seed_example(void **state)
{
    (void)state;
    int64_t sa[] = {5, 3, 4, 1}, sb[] = {3, 1, 1};
    bcg_error err;
    bcg_kernel *k = compile2("a * b + 1", BCG_F32, 4, sa, 3, sb, &err);
    assert_non_null(k);
    assert_int_equal(bcg_kernel_rank(k), 4);
    const int64_t *s = bcg_kernel_shape(k);
    assert_int_equal(s[0], 5);
    assert_int_equal(s[1], 3);
    assert_int_equal(s[2], 4);
    assert_int_equal(s[3], 1);
    assert_int_equal(bcg_kernel_dtype(k), BCG_F32);
    assert_int_equal(bcg_kernel_elements(k), 60);
    assert_string_equal(bcg_kernel_note(k), "");
    float a[60], b[3], out[60];
    for (int i = 0; i < 60; i++)
        a[i] = (float)i;
    for (int i = 0; i < 3; i++)
        b[i] = (float)(i + 1);
    const void *in[] = {a, b};
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    for (int i = 0; i < 60; i++) {
        int j = (i / 4) % 3; /* index along the dimension of size 3 */
        assert_true(out[i] == a[i] * b[j] + 1.0f);
    }
}

static void test_cache_hit_skips_tcc(void **state)
{
    (void)state;
    int64_t sa[] = {7, 9}, sb[] = {9};
    bcg_error err;
    bcg_kernel *k1 = compile2("a - b", BCG_I32, 2, sa, 1, sb, &err);
    assert_non_null(k1);
    long before = compile_tcc_count(ctx);
    bcg_kernel *k2 = compile2("a - b", BCG_I32, 2, sa, 1, sb, &err);
    assert_ptr_equal(k1, k2);
    assert_int_equal(compile_tcc_count(ctx), before);
    /* A different key compiles again. */
    bcg_kernel *k3 = compile2("a - b", BCG_I64, 2, sa, 1, sb, &err);
    assert_non_null(k3);
    assert_ptr_not_equal(k1, k3);
    assert_int_equal(compile_tcc_count(ctx), before + 1);
    int64_t strides[] = {1, 7};
    bcg_operand ops[2] = {{"a", BCG_I32, 2, sa, strides}, {"b", BCG_I32, 1, sb, NULL}};
    bcg_kernel *k4 = NULL;
    assert_int_equal(bcg_compile(ctx, "a - b", ops, 2, NULL, &k4, &err), BCG_OK);
    assert_ptr_not_equal(k4, k1);
}

typedef struct thread_job {
    int id;
    int failures;
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *job = arg;
    for (int round = 0; round < 40; round++) {
        int64_t n = 3 + (job->id + round) % 5;
        int64_t sa[] = {n, 4}, sb[] = {4};
        bcg_operand ops[2] = {{"a", BCG_I32, 2, sa, NULL}, {"b", BCG_I32, 1, sb, NULL}};
        bcg_kernel *k = NULL;
        bcg_error err;
        const char *expr = round % 2 ? "a * b + 3" : "a - b * 2";
        if (bcg_compile(ctx, expr, ops, 2, NULL, &k, &err) != BCG_OK) {
            job->failures++;
            continue;
        }
        int32_t a[32], b[4], out[32];
        for (int i = 0; i < 32; i++)
            a[i] = i * 7 - job->id;
        for (int i = 0; i < 4; i++)
            b[i] = i - 2;
        const void *in[] = {a, b};
        if (bcg_run(k, out, in, &err) != BCG_OK) {
            job->failures++;
            continue;
        }
        for (int i = 0; i < n * 4; i++) {
            int32_t want = round % 2 ? a[i] * b[i % 4] + 3 : a[i] - b[i % 4] * 2;
            if (out[i] != want)
                job->failures++;
        }
    }
    return NULL;
}

static void test_four_threads_one_context(void **state)
{
    (void)state;
    pthread_t threads[4];
    thread_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i].id = i;
        jobs[i].failures = 0;
        assert_int_equal(pthread_create(&threads[i], NULL, thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(jobs[i].failures, 0);
    }
}

static void test_run_rejects_bad_pointers(void **state)
{
    (void)state;
    int64_t sa[] = {4, 4}, sb[] = {4};
    bcg_error err;
    bcg_kernel *k = compile2("a + b", BCG_F64, 2, sa, 1, sb, &err);
    assert_non_null(k);
    double a[16] = {0}, b[4] = {0}, out[17];
    const void *in[] = {a, b};
    const void *in_null[] = {a, NULL};
    assert_int_equal(bcg_run(k, out, in_null, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "operand b is NULL"));
    assert_int_equal(err.operand, 1);
    assert_int_equal(bcg_run(k, NULL, in, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "output pointer is NULL"));
    assert_int_equal(bcg_run(k, (char *)out + 1, in, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "not aligned"));
    const void *in_misaligned[] = {(const char *)a + 4, b};
    assert_int_equal(bcg_run(k, out, in_misaligned, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "operand a"));
    /* Partial overlap: the output starts one element into a. */
    double big[17] = {0};
    const void *in_overlap[] = {big, b};
    assert_int_equal(bcg_run(k, big + 1, in_overlap, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "overlaps operand a"));
    /* The output overlapping the broadcast operand b is never allowed. */
    const void *in_b_alias[] = {a, big};
    assert_int_equal(bcg_run(k, big, in_b_alias, &err), BCG_ERR_RUN);
    /* Exact alias of a same-shaped operand is in-place and fine. */
    for (int i = 0; i < 16; i++)
        big[i] = i;
    for (int i = 0; i < 4; i++)
        b[i] = 100 * i;
    const void *in_alias[] = {big, b};
    assert_int_equal(bcg_run(k, big, in_alias, &err), BCG_OK);
    for (int i = 0; i < 16; i++)
        assert_true(big[i] == i + 100 * (i % 4));
}

/* bcg_run_unchecked: bcg_run's results without its checks, in place too. */
static void test_run_unchecked(void **state)
{
    (void)state;
    int64_t sa[2] = {3, 4}, sb[1] = {4};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    float a[12], b[4], checked[12], unchecked[12];
    for (int i = 0; i < 12; i++)
        a[i] = (float)i * 0.5f;
    for (int i = 0; i < 4; i++)
        b[i] = (float)i - 1.5f;
    const void *in[2] = {a, b};
    bcg_error err;
    bcg_kernel *k = NULL;
    assert_int_equal(bcg_compile(ctx, "a * b + 1", ops, 2, NULL, &k, &err), BCG_OK);
    assert_int_equal(bcg_run(k, checked, in, &err), BCG_OK);
    assert_int_equal(bcg_run_unchecked(k, unchecked, in), BCG_OK);
    assert_memory_equal(checked, unchecked, sizeof checked);
    assert_int_equal(bcg_run_unchecked(NULL, unchecked, in), BCG_ERR_USAGE);
    bcg_options options;
    bcg_options_init(&options);
    options.inplace = 0;
    bcg_kernel *inplace = NULL;
    assert_int_equal(bcg_compile(ctx, "a + b", ops, 2, &options, &inplace, &err), BCG_OK);
    assert_int_equal(bcg_run_unchecked(inplace, NULL, in), BCG_OK); /* NULL: a's own */
    for (int i = 0; i < 12; i++)
        assert_true(a[i] == (float)i * 0.5f + b[i % 4]);
    bcg_kernel_release(k);
    bcg_kernel_release(inplace);
}

static void test_inplace_option(void **state)
{
    (void)state;
    int64_t sa[] = {3, 4}, sb[] = {4};
    bcg_operand ops[2] = {{"a", BCG_I16, 2, sa, NULL}, {"b", BCG_I16, 1, sb, NULL}};
    bcg_options o;
    bcg_options_init(&o);
    o.inplace = 0;
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a * b", ops, 2, &o, &k, &err), BCG_OK);
    int16_t a[12], b[4] = {1, 2, 3, 4};
    for (int i = 0; i < 12; i++)
        a[i] = (int16_t)i;
    const void *in[] = {a, b};
    assert_int_equal(bcg_run(k, NULL, in, &err), BCG_OK);
    for (int i = 0; i < 12; i++)
        assert_int_equal(a[i], i * (i % 4 + 1));
    /* an in-place kernel writes only into its target */
    int16_t elsewhere[12];
    assert_int_equal(bcg_run(k, elsewhere, in, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "in place into a"));
    assert_int_equal(bcg_run(k, a, in, &err), BCG_OK);
    /* In place into the broadcast operand changes its shape: an error. */
    o.inplace = 1;
    assert_int_equal(bcg_compile(ctx, "a * b", ops, 2, &o, &k, &err), BCG_ERR_BROADCAST);
    assert_int_equal(err.operand, 1);
    /* In place cannot change the dtype either. */
    o.inplace = 0;
    assert_int_equal(bcg_compile(ctx, "a / b", ops, 2, &o, &k, &err), BCG_ERR_TYPE);
    assert_non_null(strstr(err.message, "dtype"));
}

static void test_bad_operands(void **state)
{
    (void)state;
    int64_t s[] = {3}, neg[] = {-1};
    bcg_kernel *k;
    bcg_error err;
    bcg_operand bad_name[1] = {{"1a", BCG_F32, 1, s, NULL}};
    assert_int_equal(bcg_compile(ctx, "a", bad_name, 1, NULL, &k, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "not an identifier"));
    bcg_operand inject[1] = {{"a;b", BCG_F32, 1, s, NULL}};
    assert_int_equal(bcg_compile(ctx, "a", inject, 1, NULL, &k, &err), BCG_ERR_USAGE);
    bcg_operand twice[2] = {{"a", BCG_F32, 1, s, NULL}, {"a", BCG_F32, 1, s, NULL}};
    assert_int_equal(bcg_compile(ctx, "a", twice, 2, NULL, &k, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "given twice"));
    bcg_operand negative[1] = {{"a", BCG_F32, 1, neg, NULL}};
    assert_int_equal(bcg_compile(ctx, "a", negative, 1, NULL, &k, &err), BCG_ERR_SHAPE);
    assert_non_null(strstr(err.message, "negative size -1"));
    bcg_operand big_rank[1] = {{"a", BCG_F32, 65, s, NULL}};
    assert_int_equal(bcg_compile(ctx, "a", big_rank, 1, NULL, &k, &err), BCG_ERR_LIMIT);
    assert_non_null(strstr(err.message, "rank 65"));
    bcg_operand bad_type[1] = {{"a", (bcg_dtype)99, 1, s, NULL}};
    assert_int_equal(bcg_compile(ctx, "a", bad_type, 1, NULL, &k, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_compile(ctx, "a", bad_name, 0, NULL, &k, &err), BCG_ERR_USAGE);
    assert_int_equal(bcg_compile(ctx, "a", bad_name, 65, NULL, &k, &err), BCG_ERR_LIMIT);
    assert_int_equal(bcg_compile(NULL, "a", bad_name, 1, NULL, &k, &err), BCG_ERR_USAGE);
    bcg_operand ok[1] = {{"a", BCG_F32, 1, s, NULL}};
    assert_int_equal(bcg_compile(ctx, "a +", ok, 1, NULL, &k, &err), BCG_ERR_PARSE);
    assert_true(err.column > 0);
}

static void test_broadcast_error_through_api(void **state)
{
    (void)state;
    int64_t sa[] = {5, 2, 4, 1}, sb[] = {3, 1, 1};
    bcg_error err;
    bcg_operand ops[2] = {{"a", BCG_F32, 4, sa, NULL}, {"b", BCG_F32, 3, sb, NULL}};
    bcg_kernel *k;
    assert_int_equal(bcg_compile(ctx, "a + b", ops, 2, NULL, &k, &err), BCG_ERR_BROADCAST);
    assert_string_equal(err.message,
                        "cannot broadcast b (3,1,1) against a (5,2,4,1): dimension 1 has size "
                        "3 in b and 2 in a");
    assert_int_equal(err.dimension, 1);
}

static void test_emit_api(void **state)
{
    (void)state;
    int64_t sa[] = {2, 3};
    bcg_operand ops[1] = {{"secret_name", BCG_U8, 2, sa, NULL}};
    char *src = NULL;
    bcg_error err;
    assert_int_equal(bcg_emit("secret_name + 1", ops, 1, NULL, "my_kernel", &src, &err), BCG_OK);
    assert_non_null(strstr(src, "my_kernel"));
    assert_null(strstr(src, "secret_name"));
    assert_null(strstr(src, "#include"));
    bcg_free(src);
    assert_int_equal(bcg_emit("secret_name", ops, 1, NULL, "bad name", &src, &err),
                     BCG_ERR_USAGE);
    assert_null(src);
}

static void test_no_writable_executable_memory(void **state)
{
    (void)state;
    int64_t sa[] = {11};
    bcg_operand ops[1] = {{"a", BCG_F32, 1, sa, NULL}};
    bcg_kernel *k;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "sqrt(a) * 3", ops, 1, NULL, &k, &err), BCG_OK);
    FILE *maps = fopen("/proc/self/maps", "r");
    assert_non_null(maps);
    char line[512];
    int wx = 0;
    while (fgets(line, sizeof line, maps)) {
        char perms[8] = {0};
        if (sscanf(line, "%*s %7s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x')
            wx++;
    }
    fclose(maps);
    assert_int_equal(wx, 0);
}

static void test_empty_and_scalar(void **state)
{
    (void)state;
    int64_t sa[] = {0, 3}, sb[] = {3};
    bcg_error err;
    bcg_kernel *k = compile2("a + b", BCG_I8, 2, sa, 1, sb, &err);
    assert_non_null(k);
    assert_int_equal(bcg_kernel_elements(k), 0);
    const void *in[] = {NULL, NULL};
    assert_int_equal(bcg_run(k, NULL, in, &err), BCG_OK);
    bcg_kernel *s = compile2("a * b", BCG_I64, 0, NULL, 0, NULL, &err);
    assert_non_null(s);
    assert_int_equal(bcg_kernel_rank(s), 0);
    int64_t x = 6, y = 7, out = 0;
    const void *in2[] = {&x, &y};
    assert_int_equal(bcg_run(s, &out, in2, &err), BCG_OK);
    assert_int_equal(out, 42);
}

/* Regression: libtcc does not zero-extend (unsigned short)(signed char). */
static void test_signed_to_narrow_unsigned_casts(void **state)
{
    (void)state;
    int64_t n[] = {5};
    bcg_operand ops[1] = {{"d", BCG_I8, 1, n, NULL}};
    int8_t d[5] = {8, 0, -1, -127, 7};
    const void *in[] = {d};
    const char *exprs[] = {"u16(d) <= 0", "u8(d) <= 0", "u16(d) > 255"};
    const uint8_t want[3][5] = {{0, 1, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 1, 0}};
    for (int e = 0; e < 3; e++) {
        bcg_kernel *k;
        bcg_error err;
        assert_int_equal(bcg_compile(ctx, exprs[e], ops, 1, NULL, &k, &err), BCG_OK);
        uint8_t out[5];
        assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
        for (int i = 0; i < 5; i++)
            assert_int_equal(out[i], want[e][i]);
    }
}

/* Review findings: each was a wrong result or a crash before it was fixed. */
static void test_review_regressions(void **state)
{
    (void)state;
    bcg_kernel *k = NULL;
    bcg_error err;
    /* an in-place target whose elements share memory (stride 0) */
    int64_t s34[] = {3, 4}, zero_rows[] = {0, 1}, interleaved[] = {2, 3};
    bcg_operand self_overlap[1] = {{"a", BCG_I32, 2, s34, zero_rows}};
    bcg_options o;
    bcg_options_init(&o);
    o.inplace = 0;
    assert_int_equal(bcg_compile(ctx, "a * 2", self_overlap, 1, &o, &k, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "overlapping elements"));
    assert_int_equal(err.operand, 0);
    bcg_operand interleave[1] = {{"a", BCG_I32, 2, s34, interleaved}};
    assert_int_equal(bcg_compile(ctx, "a * 2", interleave, 1, &o, &k, &err), BCG_ERR_BROADCAST);
    /* strides whose byte offsets overflow int64 */
    int64_t s4[] = {4}, huge[] = {INT64_C(4611686018427387904)};
    bcg_operand far[1] = {{"a", BCG_I8, 1, s4, huge}};
    assert_int_equal(bcg_compile(ctx, "a + 1", far, 1, NULL, &k, &err), BCG_ERR_LIMIT);
    assert_int_equal(err.dimension, 0);
    char *src = NULL;
    assert_int_equal(bcg_emit("a + 1", far, 1, NULL, NULL, &src, &err), BCG_ERR_LIMIT);
    /* the cache must not answer for operands that would be rejected */
    int64_t s1[] = {1};
    bcg_operand good[2] = {{"a", BCG_F32, 1, s1, NULL}, {"b", BCG_F32, 1, s1, NULL}};
    assert_int_equal(bcg_compile(ctx, "a+b", good, 2, NULL, &k, &err), BCG_OK);
    bcg_operand forged[1] = {{"a:9:1:1,@\nb", BCG_F32, 1, s1, NULL}};
    assert_int_equal(bcg_compile(ctx, "a+b", forged, 1, NULL, &k, &err), BCG_ERR_USAGE);
    /* function names the kernel itself uses, or main */
    bcg_operand one[1] = {{"a", BCG_F32, 1, s4, NULL}};
    const char *bad_names[] = {"main", "in0", "out", "output", "i1", "literal0"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        assert_int_equal(bcg_emit("a", one, 1, NULL, bad_names[i], &src, &err), BCG_ERR_USAGE);
        assert_null(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_example),
        cmocka_unit_test(test_cache_hit_skips_tcc),
        cmocka_unit_test(test_four_threads_one_context),
        cmocka_unit_test(test_run_rejects_bad_pointers),
        cmocka_unit_test(test_inplace_option),
        cmocka_unit_test(test_run_unchecked),
        cmocka_unit_test(test_bad_operands),
        cmocka_unit_test(test_broadcast_error_through_api),
        cmocka_unit_test(test_emit_api),
        cmocka_unit_test(test_no_writable_executable_memory),
        cmocka_unit_test(test_empty_and_scalar),
        cmocka_unit_test(test_signed_to_narrow_unsigned_casts),
        cmocka_unit_test(test_review_regressions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
