/* test_cc.c - the cc backend (gen/cc.c): kernels compiled by the system's
 * cc into cached shared objects give the reference evaluator's results bit
 * for bit; a second context loads them from the disk cache without running
 * the compiler; a cached object that others could have written, that is
 * truncated (0, 64, 4096 bytes, half: once a SIGBUS in dlopen), has a
 * changed byte or is ELF for another machine is never loaded but
 * recompiled and replaced; -march=native objects follow the CPU identity;
 * the cache stays under BCGEN_CACHE_MAX by evicting the least recently
 * used; stale tmp- files go and failures leave none; a failing compiler
 * falls back to libtcc with a note.  The cache lives in a fresh temporary
 * XDG_CACHE_HOME.  Without a `cc` on PATH every test is skipped, loudly.
 * The attacks on the cache are in test_cc_attack.c, the compiler process
 * in test_cc_spawn.c. */
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

#include <sys/time.h>

#include "test_cc_common.h"

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
    char dir[256];
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
    char dir[256];
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
    char bin[256], fake[300];
    snprintf(bin, sizeof bin, "%s/bin", cache_home);
    assert_int_equal(mkdir(bin, 0700), 0);
    snprintf(fake, sizeof fake, "%s/cc", bin);
    FILE *f = fopen(fake, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho 'fake cc: refusing' >&2\nexit 1\n", f);
    fclose(f);
    assert_int_equal(chmod(fake, 0700), 0);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin");
    char path[4500];
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
    assert_int_equal(temporary_files(), 0);
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

static void test_sha256(void **state)
{
    (void)state;
    /* FIPS 180-4's examples: one block, two blocks; and a million bytes */
    static const struct {
        const char *text;
        const char *digest;
    } vectors[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    };
    unsigned char key[32] = {0}, trailer[CC_TRAILER_BYTES];
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        cc_object_trailer(vectors[v].text, strlen(vectors[v].text), key, trailer);
        char hex[65];
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", trailer[40 + i]);
        assert_string_equal(hex, vectors[v].digest);
        assert_memory_equal(trailer, "BCGOBJ01", 8);
        assert_int_equal(trailer[72], strlen(vectors[v].text));
    }
    static char million[1000000];
    memset(million, 'a', sizeof million);
    cc_object_trailer(million, sizeof million, key, trailer);
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", trailer[40 + i]);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Removes every object, so a test starts from an empty cache. */
static void empty_cache(void)
{
    char names[64][80], path[300];
    int count = object_names(names, 64);
    for (int i = 0; i < count; i++) {
        object_path(names[i], path, sizeof path);
        assert_int_equal(unlink(path), 0);
    }
}

static off_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

/* Compiles kernel N into an empty cache; its object's path and size. */
static off_t only_object(int64_t n, char *path, size_t cap)
{
    char note[600], names[4][80];
    empty_cache();
    check_kernel(n, false, note, sizeof note);
    assert_string_equal(note, "");
    assert_int_equal(object_names(names, 4), 1);
    object_path(names[0], path, cap);
    return file_size(path);
}

/* Kernel N must be compiled again (the object at PATH is not loaded), run
 * right, and leave a whole object of SIZE bytes at PATH. */
static void recompiled(int64_t n, const char *path, off_t size, const char *what)
{
    char note[600];
    long runs = cc_compiler_runs();
    check_kernel(n, false, note, sizeof note);
    if (strcmp(note, "") != 0 || cc_compiler_runs() != runs + 1)
        fail_msg("%s: note '%s', %ld compiler runs", what, note, cc_compiler_runs() - runs);
    assert_int_equal(file_size(path), size);
    assert_int_equal(temporary_files(), 0);
    /* and the replacement is loaded as it is */
    check_kernel(n, false, note, sizeof note);
    assert_int_equal(cc_compiler_runs(), runs + 1);
}

static void test_truncated_objects_are_replaced(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char path[300];
    off_t size = only_object(301, path, sizeof path);
    assert_true(size > 8192);
    /* dlopen of the 4096-byte and half-size files died with SIGBUS */
    const off_t sizes[] = {0, 64, 4096, size / 2, size - 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        assert_int_equal(truncate(path, sizes[i]), 0);
        char what[64];
        snprintf(what, sizeof what, "truncated to %lld bytes", (long long)sizes[i]);
        recompiled(301, path, size, what);
    }
    /* and longer than it was */
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs("junk", f);
    fclose(f);
    recompiled(301, path, size, "extended");
}

/* Adds 1 to the byte at OFFSET of PATH. */
static void change_byte(const char *path, off_t offset)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseeko(f, offset, SEEK_SET), 0);
    int c = fgetc(f);
    assert_true(c != EOF);
    assert_int_equal(fseeko(f, offset, SEEK_SET), 0);
    fputc((c + 1) & 255, f);
    fclose(f);
}

static void test_changed_bytes_are_detected(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char path[300];
    off_t size = only_object(302, path, sizeof path);
    /* in the code, in the ELF header, in the trailer's checksum, key, magic */
    const off_t offsets[] = {size / 2, 0, 18, size - 20, size - 60, size - 80};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        change_byte(path, offsets[i]);
        char what[64];
        snprintf(what, sizeof what, "byte %lld of %lld changed", (long long)offsets[i],
                 (long long)size);
        recompiled(302, path, size, what);
    }
}

static void test_foreign_elf_with_valid_trailer(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char path[300], copy[320], names[4][80];
    off_t size = only_object(303, path, sizeof path);
    assert_int_equal(object_names(names, 4), 1);
    /* the ELF bytes with e_machine changed, sealed with a valid trailer:
     * only the ELF check can refuse it */
    snprintf(copy, sizeof copy, "%s/elf", cache_home);
    char command[1600];
    snprintf(command, sizeof command, "head -c %lld '%s' > '%s'",
             (long long)(size - CC_TRAILER_BYTES), path, copy);
    shell(command);
    change_byte(copy, 18); /* e_machine */
    forge_object(copy, cache_dir, names[0]);
    recompiled(303, path, size, "ELF for another machine");
    /* a regular file of ours is required: a symbolic link to a valid
     * object elsewhere is replaced */
    snprintf(command, sizeof command,
             "cp '%s' '%s/valid.so' && rm '%s' && ln -s '%s/valid.so' '%s'", path, cache_home,
             path, cache_home, path);
    shell(command);
    recompiled(303, path, size, "symbolic link");
    unlink(copy);
}

static void test_native_objects_follow_the_cpu(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char note[600], names[8][80];
    empty_cache();
    long runs = cc_compiler_runs();
    check_kernel(304, true, note, sizeof note);
    assert_string_equal(note, "");
    check_kernel(304, true, note, sizeof note); /* loaded */
    assert_int_equal(cc_compiler_runs(), runs + 1);
    /* the same cache seen from another CPU: a new object, not this one */
    cc_set_cpu_identity("GenuineIntel family 6 model 60 (Haswell), no AVX-512");
    check_kernel(304, true, note, sizeof note);
    assert_string_equal(note, "");
    assert_int_equal(cc_compiler_runs(), runs + 2);
    assert_int_equal(object_names(names, 8), 2);
    check_kernel(304, true, note, sizeof note);
    assert_int_equal(cc_compiler_runs(), runs + 2);
    /* an object built without -march=native is the same for every CPU */
    check_kernel(304, false, note, sizeof note);
    cc_set_cpu_identity(NULL);
    check_kernel(304, false, note, sizeof note);
    check_kernel(304, true, note, sizeof note);
    assert_int_equal(cc_compiler_runs(), runs + 3);
    assert_int_equal(object_names(names, 8), 3);
}

static off_t cache_bytes(int *count)
{
    char names[64][80], path[300];
    off_t total = 0;
    *count = object_names(names, 64);
    for (int i = 0; i < *count; i++) {
        object_path(names[i], path, sizeof path);
        total += file_size(path);
    }
    return total;
}

static void test_least_recently_used_eviction(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char path[300], note[600], limit[32];
    off_t size = only_object(400, path, sizeof path);
    /* room for three objects (sizes differ by a few bytes) */
    snprintf(limit, sizeof limit, "%lld", (long long)(3 * size + size / 2));
    setenv("BCGEN_CACHE_MAX", limit, 1);
    for (int64_t n = 401; n <= 407; n++) {
        check_kernel(n, false, note, sizeof note);
        assert_string_equal(note, "");
        int count;
        off_t total = cache_bytes(&count);
        assert_true(total <= 3 * size + size / 2);
        assert_true(count <= 3);
        /* kernel 400 is used between the others, so it is never the oldest */
        usleep(20000); /* mtimes come from a clock that ticks every few ms */
        long runs = cc_compiler_runs();
        check_kernel(400, false, note, sizeof note);
        assert_int_equal(cc_compiler_runs(), runs); /* still cached */
        usleep(20000);
    }
    /* 401 was evicted long ago, 406 and 407 are still there */
    long runs = cc_compiler_runs();
    check_kernel(407, false, note, sizeof note);
    check_kernel(406, false, note, sizeof note);
    assert_int_equal(cc_compiler_runs(), runs);
    check_kernel(401, false, note, sizeof note);
    assert_int_equal(cc_compiler_runs(), runs + 1);
    /* a limit below one object keeps only the newest */
    setenv("BCGEN_CACHE_MAX", "1K", 1);
    check_kernel(408, false, note, sizeof note);
    int count;
    cache_bytes(&count);
    assert_int_equal(count, 1);
    /* a bad setting is an error the note names */
    setenv("BCGEN_CACHE_MAX", "lots", 1);
    check_kernel(409, false, note, sizeof note);
    assert_non_null(strstr(note, "BCGEN_CACHE_MAX='lots' is not a size"));
    unsetenv("BCGEN_CACHE_MAX");
}

static void test_stale_temporaries_are_removed(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char stale[300], fresh[300], note[600];
    check_kernel(500, false, note, sizeof note); /* the directory exists */
    snprintf(stale, sizeof stale, "%s/tmp-99999-0123456789abcdef.c", cache_dir);
    snprintf(fresh, sizeof fresh, "%s/tmp-99998-0123456789abcdef.c", cache_dir);
    FILE *f = fopen(stale, "w");
    assert_non_null(f);
    fclose(f);
    f = fopen(fresh, "w");
    assert_non_null(f);
    fclose(f);
    /* left by a process killed an hour ago */
    struct timeval old[2];
    gettimeofday(&old[0], NULL);
    old[0].tv_sec -= 3600;
    old[1] = old[0];
    assert_int_equal(utimes(stale, old), 0);
    check_kernel(501, false, note, sizeof note); /* a compile cleans up */
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(fresh, F_OK), 0); /* may be a compile under way */
    unlink(fresh);
}

static void test_source_size_bound(void **state)
{
    (void)state;
    size_t n = 600 * 1024;
    char *source = malloc(n + 1);
    assert_non_null(source);
    memset(source, ' ', n);
    source[n] = 0;
    cc_code *code;
    kernel_fn fn;
    bcg_error err;
    error_clear(&err);
    long runs = cc_compiler_runs();
    assert_int_equal(cc_compile(source, "bcg_kernel", false, &code, &fn, &err), BCG_ERR_LIMIT);
    assert_non_null(strstr(err.message, "614400 bytes, over the cc backend's limit"));
    assert_int_equal(cc_compiler_runs(), runs);
    free(source);
}

static int setup(void **state)
{
    (void)state;
    return cc_common_setup("test-cc");
}

static int teardown(void **state)
{
    (void)state;
    return cc_common_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_and_disk_cache),
        cmocka_unit_test(test_untrusted_object_is_not_loaded),
        cmocka_unit_test(test_failing_compiler_falls_back),
        cmocka_unit_test(test_bad_backend_options),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_truncated_objects_are_replaced),
        cmocka_unit_test(test_changed_bytes_are_detected),
        cmocka_unit_test(test_foreign_elf_with_valid_trailer),
        cmocka_unit_test(test_native_objects_follow_the_cpu),
        cmocka_unit_test(test_least_recently_used_eviction),
        cmocka_unit_test(test_stale_temporaries_are_removed),
        cmocka_unit_test(test_source_size_bound),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
