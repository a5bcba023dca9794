/* cc.c - the system compiler backend (bcg_options.backend = BCG_BACKEND_CC).
 *
 * The kernel's plain C (the same source bcg_emit gives) is compiled by the
 * machine's `cc` with -O3 (and -march=native when asked) into a shared
 * object, loaded with dlopen, and kept on disk so that later processes and
 * contexts load it without running the compiler:
 *
 *   $XDG_CACHE_HOME/bcgen/<sha256>.so   (or ~/.cache/bcgen when XDG_CACHE_HOME
 *                                        is unset or not an absolute path)
 *
 * The name is the SHA-256 of the source, the compiler (its resolved path,
 * size and modification time) and the flags, so a changed kernel, compiler
 * or flag set never loads a stale object.  Safety: dlopen runs code, so a
 * file is loaded only from a directory owned by this user and writable by
 * no one else (created 0700; a directory that fails this check is not
 * used), and only if the file itself is a regular file owned by this user
 * and not writable by group or others; anything else is recompiled and
 * replaced.  The compiler runs through posix_spawn without a shell, on a
 * temporary source file in the cache directory, and its object is renamed
 * into place, so a reader never sees a half-written file.  Every failure
 * is an error for compile.c, which then compiles the kernel with libtcc and
 * says so in the kernel's note.
 *
 * Floating-point results equal libtcc's: -O3 without -ffast-math keeps
 * IEEE semantics, -ffp-contract=off forbids fused multiply-adds, and the
 * math functions are the same C library's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

struct cc_code {
    void *handle;
};

static long compiler_runs;
static pthread_mutex_t runs_lock = PTHREAD_MUTEX_INITIALIZER;

long cc_compiler_runs(void)
{
    pthread_mutex_lock(&runs_lock);
    long n = compiler_runs;
    pthread_mutex_unlock(&runs_lock);
    return n;
}

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------------------- */

typedef struct sha256 {
    uint32_t state[8];
    uint64_t length;
    unsigned char block[64];
    size_t used;
} sha256;

static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t rotate(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_init(sha256 *h)
{
    static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(h->state, initial, sizeof initial);
    h->length = 0;
    h->used = 0;
}

static void sha256_block(sha256 *h, const unsigned char *p)
{
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotate(w[i - 15], 7) ^ rotate(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotate(w[i - 2], 17) ^ rotate(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h->state, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t s1 = rotate(v[4], 6) ^ rotate(v[4], 11) ^ rotate(v[4], 25);
        uint32_t choice = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + s1 + choice + round_constants[i] + w[i];
        uint32_t s0 = rotate(v[0], 2) ^ rotate(v[0], 13) ^ rotate(v[0], 22);
        uint32_t majority = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        memmove(v + 1, v, sizeof v[0] * 7);
        v[4] += t1;
        v[0] = t1 + s0 + majority;
    }
    for (int i = 0; i < 8; i++)
        h->state[i] += v[i];
}

static void sha256_update(sha256 *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    h->length += n;
    while (n > 0) {
        size_t take = 64 - h->used < n ? 64 - h->used : n;
        memcpy(h->block + h->used, p, take);
        h->used += take;
        p += take;
        n -= take;
        if (h->used == 64) {
            sha256_block(h, h->block);
            h->used = 0;
        }
    }
}

/* The digest as 64 lowercase hex digits and a NUL. */
static void sha256_hex(sha256 *h, char hex[65])
{
    uint64_t bits = h->length * 8;
    unsigned char pad = 0x80, zero = 0, length[8];
    sha256_update(h, &pad, 1);
    while (h->used != 56)
        sha256_update(h, &zero, 1);
    for (int i = 0; i < 8; i++)
        length[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(h, length, 8);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", (unsigned)h->state[i]);
}

/* ---- the cache directory and the compiler ------------------------------------------------ */

/* Creates PATH as a 0700 directory if it is missing, then checks that it
 * is a directory of this user that no one else may write. */
static bcg_status private_directory(const char *path, bool create, bcg_error *err)
{
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST)
        return fail(err, BCG_ERR_IO, "cannot create the cache directory %s: %s", path,
                    strerror(errno));
    struct stat st;
    if (lstat(path, &st) != 0)
        return fail(err, BCG_ERR_IO, "cannot read the cache directory %s: %s", path,
                    strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
        return fail(err, BCG_ERR_IO,
                    "the cache directory %s is not a directory of this user closed to others "
                    "(owner %u, mode %03o); not used",
                    path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    return BCG_OK;
}

static bcg_status cache_directory(char *dir, size_t cap, bcg_error *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') {
        n = snprintf(dir, cap, "%s/bcgen", xdg);
        if (n < 0 || (size_t)n >= cap)
            return fail(err, BCG_ERR_IO, "XDG_CACHE_HOME is too long");
        if (mkdir(xdg, 0700) != 0 && errno != EEXIST)
            return fail(err, BCG_ERR_IO, "cannot create %s: %s", xdg, strerror(errno));
    } else if (home && home[0] == '/') {
        n = snprintf(dir, cap, "%s/.cache", home);
        if (n < 0 || (size_t)n >= cap)
            return fail(err, BCG_ERR_IO, "HOME is too long");
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return fail(err, BCG_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
        n = snprintf(dir, cap, "%s/.cache/bcgen", home);
        if (n < 0 || (size_t)n >= cap)
            return fail(err, BCG_ERR_IO, "HOME is too long");
    } else {
        return fail(err, BCG_ERR_IO, "neither XDG_CACHE_HOME nor HOME is an absolute path");
    }
    return private_directory(dir, true, err);
}

/* The compiler `cc` as found on PATH: its resolved path and identity. */
static bcg_status find_compiler(char *path, size_t cap, struct stat *st, bcg_error *err)
{
    const char *search = getenv("PATH");
    if (!search || !*search)
        search = "/usr/bin:/bin";
    while (*search) {
        const char *colon = strchr(search, ':');
        size_t n = colon ? (size_t)(colon - search) : strlen(search);
        char candidate[PATH_MAX];
        if (n > 0 && n + 4 < sizeof candidate) {
            memcpy(candidate, search, n);
            memcpy(candidate + n, "/cc", 4);
            char resolved[PATH_MAX];
            if (access(candidate, X_OK) == 0 && realpath(candidate, resolved) &&
                stat(resolved, st) == 0 && S_ISREG(st->st_mode) && strlen(resolved) < cap) {
                strcpy(path, resolved);
                return BCG_OK;
            }
        }
        search += n + (colon ? 1 : 0);
    }
    return fail(err, BCG_ERR_IO, "no C compiler `cc` on PATH");
}

/* Runs ARGV (argv[0] an absolute path) without a shell and waits for it;
 * the first line of its output goes to MESSAGE. */
static bcg_status run_compiler(char *const argv[], char *message, size_t cap, bcg_error *err)
{
    int pipe_ends[2];
    message[0] = 0;
    if (pipe(pipe_ends) != 0)
        return fail(err, BCG_ERR_IO, "cannot make a pipe for the compiler: %s", strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], 2);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[1]);
    pid_t pid;
    int spawned = posix_spawn(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_ends[1]);
    if (spawned != 0) {
        close(pipe_ends[0]);
        return fail(err, BCG_ERR_IO, "cannot run %s: %s", argv[0], strerror(spawned));
    }
    size_t used = 0;
    char chunk[512];
    ssize_t got;
    while ((got = read(pipe_ends[0], chunk, sizeof chunk)) != 0) {
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (ssize_t i = 0; i < got && used + 1 < cap; i++)
            message[used++] = chunk[i] == '\n' ? ' ' : chunk[i];
        message[used] = 0;
    }
    close(pipe_ends[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return fail(err, BCG_ERR_IO, "lost the compiler process: %s", strerror(errno));
    pthread_mutex_lock(&runs_lock);
    compiler_runs++;
    pthread_mutex_unlock(&runs_lock);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail(err, BCG_ERR_JIT, "%s failed: %.300s", argv[0],
                    message[0] ? message : "no message");
    return BCG_OK;
}

/* Whether PATH is a regular file of this user that no one else may write. */
static bool trusted_file(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
           (st.st_mode & 022) == 0;
}

/* Writes SOURCE into a new file made from TEMPLATE (ending in "XXXXXX.c"). */
static bcg_status write_source(char *template, const char *source, bcg_error *err)
{
    int fd = mkstemps(template, 2);
    if (fd < 0)
        return fail(err, BCG_ERR_IO, "cannot create %s: %s", template, strerror(errno));
    size_t n = strlen(source), done = 0;
    while (done < n) {
        ssize_t w = write(fd, source + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(template);
            return fail(err, BCG_ERR_IO, "cannot write %s", template);
        }
        done += (size_t)w;
    }
    if (close(fd) != 0) {
        unlink(template);
        return fail(err, BCG_ERR_IO, "cannot write %s", template);
    }
    return BCG_OK;
}

bcg_status cc_compile(const char *source, const char *function_name, bool native,
                      cc_code **code_out, kernel_fn *fn_out, bcg_error *err)
{
    *code_out = NULL;
    *fn_out = NULL;
    char dir[PATH_MAX - 100], compiler[PATH_MAX];
    struct stat compiler_stat;
    bcg_status s = cache_directory(dir, sizeof dir, err);
    if (!s)
        s = find_compiler(compiler, sizeof compiler, &compiler_stat, err);
    if (s)
        return s;

    char *const flags[] = {"-O3", "-std=c99", "-fPIC", "-shared", "-ffp-contract=off",
                           "-march=native"};
    size_t flag_count = sizeof flags / sizeof flags[0] - (native ? 0 : 1);
    sha256 h;
    sha256_init(&h);
    sha256_update(&h, source, strlen(source) + 1);
    sha256_update(&h, compiler, strlen(compiler) + 1);
    long long identity[2] = {(long long)compiler_stat.st_size,
                             (long long)compiler_stat.st_mtime};
    sha256_update(&h, identity, sizeof identity);
    for (size_t i = 0; i < flag_count; i++)
        sha256_update(&h, flags[i], strlen(flags[i]) + 1);
    char hex[65];
    sha256_hex(&h, hex);
    char object[PATH_MAX];
    snprintf(object, sizeof object, "%s/%s.so", dir, hex);

    if (!trusted_file(object)) {
        char source_path[PATH_MAX], temporary[PATH_MAX], message[400];
        snprintf(source_path, sizeof source_path, "%s/tmp-%.16s-XXXXXX.c", dir, hex);
        if ((s = write_source(source_path, source, err)))
            return s;
        snprintf(temporary, sizeof temporary, "%.*s.so", (int)(strlen(source_path) - 2),
                 source_path);
        char *argv[16];
        size_t argc = 0;
        argv[argc++] = compiler;
        for (size_t i = 0; i < flag_count; i++)
            argv[argc++] = flags[i];
        argv[argc++] = "-o";
        argv[argc++] = temporary;
        argv[argc++] = source_path;
        argv[argc++] = "-lm";
        argv[argc] = NULL;
        s = run_compiler(argv, message, sizeof message, err);
        unlink(source_path);
        if (!s && (chmod(temporary, 0700) != 0 || rename(temporary, object) != 0))
            s = fail(err, BCG_ERR_IO, "cannot move the compiled kernel to %s: %s", object,
                     strerror(errno));
        if (s) {
            unlink(temporary);
            return s;
        }
    }
    cc_code *code = mem_alloc(sizeof *code);
    if (!code)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    code->handle = dlopen(object, RTLD_NOW | RTLD_LOCAL);
    if (!code->handle) {
        const char *why = dlerror();
        mem_free(code);
        return fail(err, BCG_ERR_JIT, "cannot load %s: %s", object, why ? why : "?");
    }
    void *symbol = dlsym(code->handle, function_name);
    if (!symbol) {
        dlclose(code->handle);
        mem_free(code);
        return fail(err, BCG_ERR_JIT, "%s has no function %s", object, function_name);
    }
    *code_out = code;
    memcpy(fn_out, &symbol, sizeof symbol); /* object pointer to function pointer */
    return BCG_OK;
}

void cc_free(cc_code *code)
{
    if (!code)
        return;
    dlclose(code->handle);
    mem_free(code);
}
