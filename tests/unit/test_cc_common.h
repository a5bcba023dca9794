/* test_cc_common.h - what the cc backend's tests share: a fresh
 * XDG_CACHE_HOME per test program, a kernel compiled with the cc backend in
 * a fresh context (as a new process would) and checked against the values
 * the test computes itself, and the cache directory's listing.  Each test
 * program includes it once, after internal.h and cmocka.h. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache_home[128]; /* XDG_CACHE_HOME: a mkdtemp directory */
static char cache_dir[160];  /* cache_home/bcgen */
static bool have_cc;

__attribute__((unused))
static bool cc_on_path(void)
{
    const char *path = getenv("PATH");
    char candidate[4200];
    while (path && *path) {
        const char *colon = strchr(path, ':');
        int n = colon ? (int)(colon - path) : (int)strlen(path);
        snprintf(candidate, sizeof candidate, "%.*s/cc", n, path);
        if (n > 0 && path[0] == '/' && access(candidate, X_OK) == 0)
            return true;
        path += n + (colon ? 1 : 0);
    }
    return false;
}

/* Makes a fresh cache home and clears the settings the tests change. */
__attribute__((unused))
static int cc_common_setup(const char *name)
{
    snprintf(cache_home, sizeof cache_home, "/tmp/bcgen-%s-XXXXXX", name);
    if (!mkdtemp(cache_home))
        return -1;
    snprintf(cache_dir, sizeof cache_dir, "%s/bcgen", cache_home);
    setenv("XDG_CACHE_HOME", cache_home, 1);
    unsetenv("BCGEN_CC");
    unsetenv("CC"); /* make exports it (CC=clang for the sanitizer trees) */
    unsetenv("BCGEN_CC_TIMEOUT");
    unsetenv("BCGEN_CC_MEMORY");
    unsetenv("BCGEN_CACHE_MAX");
    have_cc = cc_on_path();
    if (!have_cc)
        printf("# SKIP: no C compiler `cc` on PATH: the cc backend is NOT tested\n");
    return 0;
}

__attribute__((unused))
static int cc_common_teardown(void)
{
    char command[300];
    /* chmod first: a test may leave a directory without write permission */
    snprintf(command, sizeof command, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'",
             cache_home, cache_home);
    return system(command) == 0 ? 0 : -1;
}

/* Compiles "a * 3 + b" over i32[N] with the cc backend (-march=native with
 * NATIVE) in a fresh context, runs it, checks every element and copies
 * the kernel's note (empty when the cc backend compiled it) to NOTE. */
__attribute__((unused))
static void check_kernel(int64_t n, bool native, char *note, size_t cap)
{
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    int64_t shape[] = {n};
    bcg_operand ops[] = {{"a", BCG_I32, 1, shape, NULL}, {"b", BCG_I32, 1, shape, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    options.backend = BCG_BACKEND_CC;
    options.native = native;
    bcg_kernel *k;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a * 3 + b", ops, 2, &options, &k, &err), BCG_OK);
    int32_t *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *out = malloc((size_t)n * 4);
    assert_true(a && b && out);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (int32_t)(i * 7 - 100);
        b[i] = (int32_t)(1000 - i);
        out[i] = -1;
    }
    const void *in[] = {a, b};
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    for (int64_t i = 0; i < n; i++)
        assert_int_equal(out[i], a[i] * 3 + b[i]);
    snprintf(note, cap, "%s", bcg_kernel_note(k));
    free(a);
    free(b);
    free(out);
    bcg_context_free(ctx);
}

/* The names of bcgen's objects in the cache directory ("<hex>.so"). */
__attribute__((unused))
static int object_names(char names[][80], int cap)
{
    DIR *d = opendir(cache_dir);
    int count = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n == 67 && strcmp(e->d_name + 64, ".so") == 0 && count < cap)
            snprintf(names[count++], 80, "%s", e->d_name);
    }
    closedir(d);
    return count;
}

/* How many tmp- files the cache directory holds. */
__attribute__((unused))
static int temporary_files(void)
{
    DIR *d = opendir(cache_dir);
    int count = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        count += strncmp(e->d_name, "tmp-", 4) == 0;
    closedir(d);
    return count;
}

__attribute__((unused))
static void object_path(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%.70s", cache_dir, name);
}

/* The 32-byte key an object's name spells in hex. */
__attribute__((unused))
static void name_key(const char *name, unsigned char key[32])
{
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(name + 2 * i, "%2x", &v);
        key[i] = (unsigned char)v;
    }
}

/* Writes an object for NAME made of the ELF file ELF_PATH and a valid
 * trailer (what someone who knows the format could write). */
__attribute__((unused))
static void forge_object(const char *elf_path, const char *directory, const char *name)
{
    FILE *f = fopen(elf_path, "rb");
    assert_non_null(f);
    static unsigned char bytes[1 << 22];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    unsigned char key[32], trailer[CC_TRAILER_BYTES];
    name_key(name, key);
    cc_object_trailer(bytes, n, key, trailer);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fwrite(trailer, 1, sizeof trailer, f), sizeof trailer);
    fclose(f);
    assert_int_equal(chmod(path, 0600), 0);
}

/* Runs COMMAND through the shell; fails the test if it fails. */
__attribute__((unused))
static void shell(const char *command)
{
    int status = system(command);
    if (status != 0)
        fail_msg("`%s` failed (%d)", command, status);
}
