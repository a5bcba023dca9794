/* test_cc.c - the cc backend (gen/cc.c): kernels compiled by the system's
 * cc into cached shared objects give the reference evaluator's results bit
 * for bit; a second context loads them from the disk cache without running
 * the compiler; a cached object that others could have written is never
 * loaded; and a failing compiler falls back to libtcc with a note.  The
 * cache lives in a fresh temporary XDG_CACHE_HOME.  Without a `cc` on PATH
 * every test is skipped, loudly. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static char cache_home[64];
static bool have_cc;

static bool compiler_on_path(void)
{
    const char *path = getenv("PATH");
    char candidate[4096];
    while (path && *path) {
        const char *colon = strchr(path, ':');
        int n = colon ? (int)(colon - path) : (int)strlen(path);
        snprintf(candidate, sizeof candidate, "%.*s/cc", n, path);
        if (access(candidate, X_OK) == 0)
            return true;
        path += n + (colon ? 1 : 0);
    }
    return false;
}

typedef struct cc_case {
    const char *expr;
    int operand_count;
    bcg_operand ops[3];
} cc_case;

static int64_t s_rows[] = {37, 41}, s_row[] = {41}, s_col[] = {37, 1};
static int64_t s_big[] = {300, 130}, s_big_t[] = {1, 300}, s_big_row[] = {130};

static const cc_case cases[] = {
    {"a * b + c", 3, {{"a", BCG_F32, 2, s_rows, NULL}, {"b", BCG_F32, 1, s_row, NULL},
                      {"c", BCG_F32, 2, s_col, NULL}}},
    {"a + b * 3", 2, {{"a", BCG_I8, 2, s_rows, NULL}, {"b", BCG_I8, 1, s_row, NULL}}},
    {"exp(a) - sqrt(abs(b))", 2, {{"a", BCG_F64, 2, s_rows, NULL}, {"b", BCG_F64, 1, s_row, NULL}}},
    {"where(a > b, a, b / 2)", 2, {{"a", BCG_F32, 2, s_rows, NULL}, {"b", BCG_F32, 1, s_row, NULL}}},
    /* the blocked loop pair for a transposed input */
    {"a - b", 2, {{"a", BCG_F32, 2, s_big, s_big_t}, {"b", BCG_F32, 1, s_big_row, NULL}}},
};
#define CASE_COUNT (int)(sizeof cases / sizeof cases[0])

static void fill(unsigned char *data, size_t bytes, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < bytes; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[i] = (unsigned char)(x >> 7);
    }
}

/* Compiles case C in CTX with the cc backend, runs it, and checks the output
 * against the reference evaluator byte for byte.  Returns the kernel. */
static const bcg_kernel *check_case(bcg_context *ctx, const cc_case *c)
{
    bcg_options options;
    bcg_options_init(&options);
    options.backend = BCG_BACKEND_CC;
    bcg_error err;
    bcg_kernel *k;
    assert_int_equal(bcg_compile(ctx, c->expr, c->ops, c->operand_count, &options, &k, &err),
                     BCG_OK);
    const void *in[3];
    void *buffers[3];
    for (int i = 0; i < c->operand_count; i++) {
        size_t elements = 1;
        for (int d = 0; d < c->ops[i].rank; d++)
            elements *= (size_t)c->ops[i].shape[d];
        size_t bytes = elements * bcg_dtype_size(c->ops[i].dtype);
        buffers[i] = malloc(bytes);
        assert_non_null(buffers[i]);
        fill(buffers[i], bytes, (unsigned)i + 3);
        if (c->ops[i].dtype == BCG_F32 || c->ops[i].dtype == BCG_F64) /* finite values */
            for (size_t e = 0; e < elements; e++) {
                if (c->ops[i].dtype == BCG_F32)
                    ((float *)buffers[i])[e] = (float)((int)(e * 7919 % 2001) - 1000) / 300.0f;
                else
                    ((double *)buffers[i])[e] = (double)((int)(e * 7919 % 2001) - 1000) / 300.0;
            }
        in[i] = buffers[i];
    }
    size_t out_bytes = (size_t)bcg_kernel_elements(k) * bcg_dtype_size(bcg_kernel_dtype(k));
    void *out = malloc(out_bytes), *expected = malloc(out_bytes);
    assert_non_null(out);
    assert_non_null(expected);
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);

    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = a;
    front->err = &err;
    assert_int_equal(compile_front(front, c->expr, c->ops, c->operand_count, &options), BCG_OK);
    assert_int_equal(eval_run(front, expected, in, &err), BCG_OK);
    assert_memory_equal(out, expected, out_bytes);
    arena_free(a);
    for (int i = 0; i < c->operand_count; i++)
        free(buffers[i]);
    free(out);
    free(expected);
    return k;
}

/* The cached objects in the cache directory. */
static int cached_objects(char names[][512], int cap)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/bcgen", cache_home);
    DIR *d = opendir(dir);
    int count = 0;
    if (!d)
        return 0;
    for (struct dirent *entry; (entry = readdir(d)) != NULL;) {
        size_t n = strlen(entry->d_name);
        if (n > 3 && strcmp(entry->d_name + n - 3, ".so") == 0 && count < cap)
            snprintf(names[count++], 512, "%s/%s", dir, entry->d_name);
    }
    closedir(d);
    return count;
}

static void test_results_and_disk_cache(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    bcg_context *first = bcg_context_new();
    long runs = cc_compiler_runs();
    for (int i = 0; i < CASE_COUNT; i++) {
        const bcg_kernel *k = check_case(first, &cases[i]);
        assert_string_equal(bcg_kernel_note(k), "");
    }
    assert_int_equal(cc_compiler_runs(), runs + CASE_COUNT);
    char names[16][512];
    assert_int_equal(cached_objects(names, 16), CASE_COUNT);
    struct stat st;
    assert_int_equal(stat(names[0], &st), 0);
    assert_int_equal(st.st_mode & 077, 0);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/bcgen", cache_home);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    /* a second context (as a second process would) loads them from disk */
    bcg_context *second = bcg_context_new();
    for (int i = 0; i < CASE_COUNT; i++)
        check_case(second, &cases[i]);
    assert_int_equal(cc_compiler_runs(), runs + CASE_COUNT);
    bcg_context_free(first);
    bcg_context_free(second);
}

static void test_untrusted_object_is_not_loaded(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    bcg_context *ctx = bcg_context_new();
    check_case(ctx, &cases[0]);
    bcg_context_free(ctx);
    char names[16][512];
    int count = cached_objects(names, 16);
    assert_true(count >= 1);
    /* every cached object writable by the group, as if planted */
    for (int i = 0; i < count; i++)
        assert_int_equal(chmod(names[i], 0775), 0);
    long runs = cc_compiler_runs();
    ctx = bcg_context_new();
    check_case(ctx, &cases[0]);
    assert_int_equal(cc_compiler_runs(), runs + 1); /* compiled again, not loaded */
    bcg_context_free(ctx);
}

static void test_failing_compiler_falls_back(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    /* a `cc` that always fails, first on PATH */
    char bin[128], fake[160];
    snprintf(bin, sizeof bin, "%s/bin", cache_home);
    assert_int_equal(mkdir(bin, 0700), 0);
    snprintf(fake, sizeof fake, "%s/cc", bin);
    FILE *f = fopen(fake, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho 'fake cc: refusing' >&2\nexit 1\n", f);
    fclose(f);
    assert_int_equal(chmod(fake, 0700), 0);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin");
    char path[4300];
    snprintf(path, sizeof path, "%s:%.4096s", bin, old_path);
    setenv("PATH", path, 1);
    bcg_context *ctx = bcg_context_new();
    /* a kernel not compiled before (in no cache) */
    int64_t shape[] = {5, 7};
    bcg_operand ops[1] = {{"x", BCG_F32, 2, shape, NULL}};
    cc_case c = {"x * x - 1", 1, {ops[0]}};
    const bcg_kernel *k = check_case(ctx, &c);
    assert_non_null(strstr(bcg_kernel_note(k), "the cc backend failed"));
    assert_non_null(strstr(bcg_kernel_note(k), "fake cc: refusing"));
    assert_non_null(strstr(bcg_kernel_note(k), "compiled with libtcc"));
    bcg_context_free(ctx);
    setenv("PATH", old_path, 1);
    free(old_path);
}

static void test_bad_backend_options(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    int64_t shape[] = {4};
    bcg_operand ops[1] = {{"a", BCG_F32, 1, shape, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    options.backend = 7;
    bcg_kernel *k;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a", ops, 1, &options, &k, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "backend 7"));
    bcg_options_init(&options);
    options.native = 2;
    assert_int_equal(bcg_compile(ctx, "a", ops, 1, &options, &k, &err), BCG_ERR_USAGE);
    bcg_context_free(ctx);
}

static int setup(void **state)
{
    (void)state;
    snprintf(cache_home, sizeof cache_home, "/tmp/bcgen-test-cc-XXXXXX");
    if (!mkdtemp(cache_home))
        return -1;
    setenv("XDG_CACHE_HOME", cache_home, 1);
    have_cc = compiler_on_path();
    if (!have_cc)
        printf("# SKIP: no C compiler `cc` on PATH: the cc backend is NOT tested\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char command[160];
    /* the temporary cache; the name is ours (mkdtemp) */
    snprintf(command, sizeof command, "rm -rf '%s'", cache_home);
    return system(command) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_and_disk_cache),
        cmocka_unit_test(test_untrusted_object_is_not_loaded),
        cmocka_unit_test(test_failing_compiler_falls_back),
        cmocka_unit_test(test_bad_backend_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
