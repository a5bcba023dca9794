/* cc.c - the system compiler backend (bcg_options.backend = BCG_BACKEND_CC).
 *
 * The kernel's plain C (the source bcg_emit gives) is compiled by the
 * machine's C compiler with -O3 (and -march=native when asked) into a
 * shared object, loaded with dlopen, and kept in a disk cache so that later
 * processes load it without compiling.  Because dlopen runs code, the cache
 * is built to resist a local attacker who can write to a directory above
 * it and swap directories while bcgen works:
 *
 *   - the cache directory ($XDG_CACHE_HOME/bcgen, else ~/.cache/bcgen) is
 *     opened once, one component at a time with O_NOFOLLOW, each ancestor
 *     checked (root's or ours, not writable by others unless sticky) and
 *     the directory itself checked with fstat on the opened descriptor
 *     (ours, not writable by group or others); everything after that is
 *     relative to that descriptor (openat, renameat, unlinkat, fstatat);
 *   - an object is opened with O_NOFOLLOW, checked with fstat (a regular
 *     file of ours that no one else can write, of a sane size), read
 *     whole through that descriptor and validated: ELF header and segments
 *     for this machine inside the file, and a trailer bcgen appends (key,
 *     length, SHA-256 of the ELF bytes); only then is it loaded with
 *     dlopen of /proc/self/fd/N, that same descriptor.  Anything invalid
 *     (truncated, corrupted, foreign) is recompiled and replaced.  Only
 *     the file's owner, this user, could still truncate it between the
 *     check and the mapping; bcgen never does (it replaces, never rewrites);
 *   - a new object is written under a tmp- name created with O_EXCL,
 *     sealed, fsync'ed, renamed into place and the directory fsync'ed; no
 *     tmp- file outlives a failure, and those of killed processes are
 *     removed once older than CC_STALE_SECONDS;
 *   - objects are named by the SHA-256 of the source, the compiler (path,
 *     size, modification time), the flags and, for -march=native, the CPU's
 *     identity and features (cpuid), so an object never meets another CPU;
 *   - the cache is bounded (BCGEN_CACHE_MAX, default 256 MiB): use touches
 *     an object's times, and the least recently used go when it is over.
 *
 * The compiler is found as an absolute path (BCGEN_CC, then CC, then cc or
 * gcc on the absolute directories of PATH) and runs in a vforked child with
 * stdin /dev/null, stdout and stderr a close-on-exec pipe, no other
 * descriptor, its own process group, PR_SET_PDEATHSIG, and limits: wall
 * clock (BCGEN_CC_TIMEOUT, default 60 s, then the group is killed), address
 * space (BCGEN_CC_MEMORY, default 2 GiB) and CPU time.  Sources over
 * CC_MAX_SOURCE are refused.  Every failure is an error for compile.c,
 * which then compiles the kernel with libtcc and says why in the note.
 *
 * Floating-point results equal libtcc's: -O3 without -ffast-math keeps
 * IEEE semantics, -ffp-contract=off forbids fused multiply-adds, and the
 * math functions are the same C library's.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"

extern char **environ;

/* gcc -O3 time grows faster than the source: 1.58 MB took 27 s and 720 MB,
 * a 1.8 MB unrolled kernel did not finish in 20 minutes (issue 9); tcc
 * compiles those in milliseconds, so larger sources go to tcc. */
#define CC_MAX_SOURCE (512 * 1024)
/* Kernel objects are tens of KB; anything this large is not ours. */
#define CC_MAX_OBJECT (64u << 20)
#define CC_DEFAULT_TIMEOUT_MS 60000
#define CC_MAX_TIMEOUT_MS 600000
#define CC_DEFAULT_MEMORY (2ull << 30)
#define CC_DEFAULT_CACHE_MAX (256ull << 20)
/* tmp- files older than this were left by a killed process: no compile
 * lives longer than CC_MAX_TIMEOUT_MS. */
#define CC_STALE_SECONDS (20 * 60)

/* The trailer after the ELF bytes of every cached object; dlopen maps by
 * program headers and never looks past them. */
#define TRAILER_MAGIC "BCGOBJ01"
/* CC_TRAILER_BYTES (internal.h): magic, key, SHA-256 of the ELF bytes, length */

struct cc_code {
    void *handle;
};

static long compiler_runs;
static const char *fake_cpu_identity; /* cc_set_cpu_identity (tests) */
static pthread_mutex_t runs_lock = PTHREAD_MUTEX_INITIALIZER;

long cc_compiler_runs(void)
{
    pthread_mutex_lock(&runs_lock);
    long n = compiler_runs;
    pthread_mutex_unlock(&runs_lock);
    return n;
}

void cc_set_cpu_identity(const char *identity)
{
    pthread_mutex_lock(&runs_lock);
    fake_cpu_identity = identity;
    pthread_mutex_unlock(&runs_lock);
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
    if (h->used > 0) {
        size_t take = 64 - h->used < n ? 64 - h->used : n;
        memcpy(h->block + h->used, p, take);
        h->used += take;
        p += take;
        n -= take;
        if (h->used < 64)
            return;
        sha256_block(h, h->block);
        h->used = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        sha256_block(h, p);
    memcpy(h->block, p, n);
    h->used = n;
}

static void sha256_text(sha256 *h, const char *s) { sha256_update(h, s, strlen(s) + 1); }

/* The 32-byte digest; H is spent. */
static void sha256_final(sha256 *h, unsigned char digest[32])
{
    uint64_t bits = h->length * 8;
    unsigned char pad[72] = {0x80};
    size_t pad_bytes = (h->used < 56 ? 56 : 120) - h->used;
    for (int i = 0; i < 8; i++)
        pad[pad_bytes + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(h, pad, pad_bytes + 8);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++)
            digest[4 * i + b] = (unsigned char)(h->state[i] >> (24 - 8 * b));
}

static void hex_text(const unsigned char *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = 0;
}

/* ---- settings from the environment ------------------------------------------------------ */

/* "1234", "64K", "256M", "2G" (powers of 1024) */
static bool parse_bytes(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)text[0]))
        return false;
    unsigned long long v = strtoull(text, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'i' && shift) /* KiB, MiB, GiB */
        end++;
    if (*end == 'B' && shift)
        end++;
    if (errno || *end || v > (UINT64_MAX >> shift))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

static bcg_status env_bytes(const char *name, uint64_t fallback, uint64_t *out, bcg_error *err)
{
    const char *text = getenv(name);
    *out = fallback;
    if (!text || !*text)
        return BCG_OK;
    if (!parse_bytes(text, out))
        return fail(err, BCG_ERR_USAGE,
                    "%s='%.40s' is not a size (a number of bytes, or with K, M or G)", name, text);
    return BCG_OK;
}

typedef struct cc_limits {
    long timeout_ms;      /* wall clock */
    uint64_t memory;      /* RLIMIT_AS of the compiler; 0 leaves it as it is */
    uint64_t cache_bytes; /* the disk cache's size limit */
} cc_limits;

static bcg_status read_limits(cc_limits *limits, bcg_error *err)
{
    limits->timeout_ms = CC_DEFAULT_TIMEOUT_MS;
    const char *text = getenv("BCGEN_CC_TIMEOUT");
    if (text && *text) {
        char *end;
        errno = 0;
        double seconds = strtod(text, &end);
        if (errno || *end || end == text || !(seconds > 0) ||
            seconds * 1000 > CC_MAX_TIMEOUT_MS)
            return fail(err, BCG_ERR_USAGE,
                        "BCGEN_CC_TIMEOUT='%.40s' is not a number of seconds above 0 and at "
                        "most %d",
                        text, CC_MAX_TIMEOUT_MS / 1000);
        limits->timeout_ms = (long)(seconds * 1000 + 0.5);
        if (limits->timeout_ms < 1)
            limits->timeout_ms = 1;
    }
    bcg_status s = env_bytes("BCGEN_CC_MEMORY", CC_DEFAULT_MEMORY, &limits->memory, err);
    if (!s)
        s = env_bytes("BCGEN_CACHE_MAX", CC_DEFAULT_CACHE_MAX, &limits->cache_bytes, err);
    return s;
}

/* ---- the cache directory ---------------------------------------------------------------- */

/* An ancestor of the cache may be root's or ours, and writable by others
 * only if sticky (as /tmp is): then no one else can swap what is below. */
static bcg_status check_ancestor(int fd, const char *path, bcg_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return fail(err, BCG_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return fail(err, BCG_ERR_IO, "%s is not a directory", path);
    if (st.st_uid != 0 && st.st_uid != geteuid())
        return fail(err, BCG_ERR_IO,
                    "%s, above the cache directory, belongs to user %u, not to this user or "
                    "root; the cache is not used",
                    path, (unsigned)st.st_uid);
    if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
        return fail(err, BCG_ERR_IO,
                    "%s, above the cache directory, is writable by %s (mode %03o) and not "
                    "sticky; the cache is not used",
                    path, (st.st_mode & 002) ? "others" : "its group",
                    (unsigned)(st.st_mode & 0777));
    return BCG_OK;
}

/* Opens the absolute directory PATH component by component with
 * O_NOFOLLOW, so no lookup goes through a link or directory that someone
 * else could change: each directory is checked (check_ancestor) before
 * the next component is looked up in it.  Symbolic links are followed
 * only when root or we own them.  CREATE makes missing components 0700;
 * without it a missing component sets *MISSING and *FD = -1.  *FD is a
 * close-on-exec descriptor of the directory. */
static bcg_status open_trusted_path(const char *path, bool create, int *fd, bool *missing,
                                    bcg_error *err)
{
    enum { MAX_DEPTH = 128, MAX_LINKS = 32 };
    char rest[2 * PATH_MAX], shown[PATH_MAX]; /* what is left to walk; where we are */
    int stack[MAX_DEPTH], depth = 0, links = 0;
    bcg_status s = BCG_OK;
    *fd = -1;
    *missing = false;
    if (strlen(path) >= sizeof rest / 2)
        return fail(err, BCG_ERR_IO, "the cache path %.100s... is too long", path);
    strcpy(rest, path);
    strcpy(shown, "/");
    stack[0] = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (stack[0] < 0)
        return fail(err, BCG_ERR_IO, "cannot open /: %s", strerror(errno));
    if ((s = check_ancestor(stack[0], "/", err)))
        goto done;
    char *cursor = rest;
    while (*cursor) {
        while (*cursor == '/')
            cursor++;
        if (!*cursor)
            break;
        char *end = strchr(cursor, '/');
        size_t n = end ? (size_t)(end - cursor) : strlen(cursor);
        char name[NAME_MAX + 1];
        if (n > NAME_MAX) {
            s = fail(err, BCG_ERR_IO, "a component of %s is longer than %d bytes", path,
                     NAME_MAX);
            goto done;
        }
        memcpy(name, cursor, n);
        name[n] = 0;
        cursor += n;
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0) {
            if (depth > 0) {
                close(stack[depth--]);
                char *slash = strrchr(shown, '/');
                if (slash)
                    slash[slash == shown ? 1 : 0] = 0;
            }
            continue;
        }
        int parent = stack[depth];
        int next = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(parent, name, 0700) != 0 && errno != EEXIST) {
                s = fail(err, BCG_ERR_IO, "cannot create %s%s%s: %s", shown,
                         depth ? "/" : "", name, strerror(errno));
                goto done;
            }
            next = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        size_t shown_len = strlen(shown);
        snprintf(shown + shown_len, sizeof shown - shown_len, "%s%s", depth ? "/" : "", name);
        if (next < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            struct stat link;
            char target[PATH_MAX];
            ssize_t length;
            if (fstatat(parent, name, &link, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(link.st_mode)) {
                s = fail(err, BCG_ERR_IO, "%s is not a directory", shown);
                goto done;
            }
            if (link.st_uid != 0 && link.st_uid != geteuid()) {
                s = fail(err, BCG_ERR_IO,
                         "%s is a symbolic link of user %u, not of this user or root; the "
                         "cache is not used",
                         shown, (unsigned)link.st_uid);
                goto done;
            }
            length = readlinkat(parent, name, target, sizeof target - 1);
            if (length <= 0 || ++links > MAX_LINKS ||
                (size_t)length + strlen(cursor) + 2 > sizeof rest) {
                s = fail(err, BCG_ERR_IO, "cannot follow the symbolic link %s", shown);
                goto done;
            }
            target[length] = 0;
            /* the link's target replaces its name in what is left to walk */
            memmove(rest + length + 1, cursor, strlen(cursor) + 1);
            memcpy(rest, target, (size_t)length);
            rest[length] = '/';
            cursor = rest;
            shown[shown_len] = 0;
            if (target[0] == '/') {
                while (depth > 0)
                    close(stack[depth--]);
                strcpy(shown, "/");
            }
            continue;
        }
        if (next < 0 && errno == ENOENT && !create) {
            *missing = true;
            goto done;
        }
        if (next < 0) {
            s = fail(err, BCG_ERR_IO, "cannot open %s: %s", shown, strerror(errno));
            goto done;
        }
        if (depth + 1 == MAX_DEPTH) {
            close(next);
            s = fail(err, BCG_ERR_IO, "%s is too deep", path);
            goto done;
        }
        stack[++depth] = next;
        if ((s = check_ancestor(next, shown, err)))
            goto done;
    }
    *fd = stack[depth--];
done:
    while (depth >= 0)
        close(stack[depth--]);
    return s;
}

/* The cache directory's path as text ("<base>/bcgen") and, with FD, the
 * directory opened and checked (see the file header).  Without CREATE a
 * missing directory gives *FD = -1 and BCG_OK. */
static bcg_status open_cache_directory(char *shown, size_t cap, bool create, int *fd,
                                       bcg_error *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char base[PATH_MAX];
    int n;
    *fd = -1;
    if (xdg && xdg[0] == '/')
        n = snprintf(base, sizeof base, "%s", xdg);
    else if (home && home[0] == '/')
        n = snprintf(base, sizeof base, "%s/.cache", home);
    else
        return fail(err, BCG_ERR_IO, "neither XDG_CACHE_HOME nor HOME is an absolute path");
    int shown_length = n < 0 ? -1 : snprintf(shown, cap, "%s/bcgen", base);
    if (n < 0 || (size_t)n >= sizeof base || shown_length < 0 || (size_t)shown_length >= cap)
        return fail(err, BCG_ERR_IO, "the cache path %.100s... is too long", base);

    int base_fd;
    bool missing;
    bcg_status s = open_trusted_path(base, create, &base_fd, &missing, err);
    if (s || missing)
        return s;
    if (create && mkdirat(base_fd, "bcgen", 0700) != 0 && errno != EEXIST) {
        s = fail(err, BCG_ERR_IO, "cannot create the cache directory %s: %s", shown,
                 strerror(errno));
        close(base_fd);
        return s;
    }
    int dir = openat(base_fd, "bcgen", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int open_errno = errno;
    close(base_fd);
    if (dir < 0) {
        if (open_errno == ENOENT && !create)
            return BCG_OK;
        if (open_errno == ELOOP || open_errno == ENOTDIR)
            return fail(err, BCG_ERR_IO,
                        "the cache directory %s is a symbolic link or not a directory; not "
                        "used",
                        shown);
        return fail(err, BCG_ERR_IO, "cannot open the cache directory %s: %s", shown,
                    strerror(open_errno));
    }
    struct stat st;
    if (fstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 022)) {
        s = fail(err, BCG_ERR_IO,
                 "the cache directory %s is not a directory of this user closed to others "
                 "(owner %u, mode %03o); not used",
                 shown, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
        close(dir);
        return s;
    }
    *fd = dir;
    return BCG_OK;
}

/* "<64 hex digits>.so": the only names bcgen's objects have. */
static bool is_object_name(const char *name)
{
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)name[i]) || isupper((unsigned char)name[i]))
            return false;
    return strcmp(name + 64, ".so") == 0;
}

static bool is_temporary_name(const char *name) { return strncmp(name, "tmp-", 4) == 0; }

typedef struct cache_entry {
    char name[68];
    struct timespec used; /* mtime: touched on every use */
    uint64_t bytes;
} cache_entry;

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const cache_entry *)a)->used;
    const struct timespec *y = &((const cache_entry *)b)->used;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

typedef enum { SCAN_COUNT, SCAN_TRIM, SCAN_CLEAR } scan_mode;

typedef struct scan_result {
    long entries, temporary, removed;
    uint64_t bytes, removed_bytes;
} scan_result;

/* Walks the cache directory DIR.  SCAN_COUNT counts objects and tmp-
 * files; SCAN_TRIM removes stale tmp- files and then the least recently
 * used objects until they total at most LIMIT bytes (never KEEP, the one
 * just added); SCAN_CLEAR removes every object and tmp- file.  Files that
 * are not bcgen's are left alone. */
static bcg_status scan_cache(int dir, scan_mode mode, uint64_t limit, const char *keep,
                             scan_result *out, bcg_error *err)
{
    memset(out, 0, sizeof *out);
    int copy = fcntl(dir, F_DUPFD_CLOEXEC, 0);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    if (!d) {
        if (copy >= 0)
            close(copy);
        return fail(err, BCG_ERR_IO, "cannot list the cache directory: %s", strerror(errno));
    }
    cache_entry *entries = NULL;
    size_t count = 0, cap = 0;
    bcg_status s = BCG_OK;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st;
        bool object = is_object_name(e->d_name), temporary = is_temporary_name(e->d_name);
        if ((!object && !temporary) || fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (temporary) {
            bool stale = now - st.st_mtime > CC_STALE_SECONDS || st.st_mtime > now + 60;
            if ((mode == SCAN_CLEAR || (mode == SCAN_TRIM && stale)) &&
                unlinkat(dir, e->d_name, 0) == 0)
                out->removed++;
            else
                out->temporary++;
            continue;
        }
        if (mode == SCAN_CLEAR) {
            if (unlinkat(dir, e->d_name, 0) == 0) {
                out->removed++;
                out->removed_bytes += (uint64_t)st.st_size;
            }
            continue;
        }
        out->entries++;
        out->bytes += (uint64_t)st.st_size;
        if (mode != SCAN_TRIM)
            continue;
        if (count == cap) {
            size_t grown = cap ? 2 * cap : 64;
            cache_entry *bigger = mem_realloc(entries, grown * sizeof *entries);
            if (!bigger) {
                s = fail(err, BCG_ERR_NOMEM, "out of memory listing the cache");
                break;
            }
            entries = bigger;
            cap = grown;
        }
        cache_entry *entry = &entries[count++];
        memcpy(entry->name, e->d_name, 68); /* is_object_name: 67 bytes and a NUL */
        entry->used = st.st_mtim;
        entry->bytes = (uint64_t)st.st_size;
    }
    closedir(d);
    if (!s && mode == SCAN_TRIM && out->bytes > limit) {
        qsort(entries, count, sizeof *entries, older_first);
        for (size_t i = 0; i < count && out->bytes > limit; i++) {
            if (keep && strcmp(entries[i].name, keep) == 0)
                continue;
            /* ENOENT: another process evicted it first */
            if (unlinkat(dir, entries[i].name, 0) == 0 || errno == ENOENT) {
                out->bytes -= entries[i].bytes;
                out->entries--;
                out->removed++;
                out->removed_bytes += entries[i].bytes;
            }
        }
    }
    mem_free(entries);
    return s;
}

/* ---- validating and loading objects ------------------------------------------------------ */

#if defined(__x86_64__)
#define HOST_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_ELF_MACHINE EM_AARCH64
#elif defined(__i386__)
#define HOST_ELF_MACHINE EM_386
#elif defined(__riscv)
#define HOST_ELF_MACHINE EM_RISCV
#elif defined(__arm__)
#define HOST_ELF_MACHINE EM_ARM
#elif defined(__powerpc64__)
#define HOST_ELF_MACHINE EM_PPC64
#endif

#if UINTPTR_MAX > 0xffffffffu
typedef Elf64_Ehdr elf_header;
typedef Elf64_Phdr elf_segment;
#define HOST_ELF_CLASS ELFCLASS64
#else
typedef Elf32_Ehdr elf_header;
typedef Elf32_Phdr elf_segment;
#define HOST_ELF_CLASS ELFCLASS32
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELF_DATA ELFDATA2LSB
#else
#define HOST_ELF_DATA ELFDATA2MSB
#endif

/* Why the SIZE bytes at P are not a shared object for this machine whose
 * headers and loaded segments all lie inside them (so mapping it cannot
 * fault past the end of the file), or NULL. */
static const char *elf_problem(const unsigned char *p, size_t size)
{
    elf_header h;
    if (size < sizeof h)
        return "shorter than an ELF header";
    memcpy(&h, p, sizeof h);
    if (memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
        return "not ELF";
    if (h.e_ident[EI_CLASS] != HOST_ELF_CLASS || h.e_ident[EI_DATA] != HOST_ELF_DATA ||
        h.e_ident[EI_VERSION] != EV_CURRENT)
        return "ELF of another word size or byte order";
    if (h.e_type != ET_DYN)
        return "not a shared object";
#ifdef HOST_ELF_MACHINE
    if (h.e_machine != HOST_ELF_MACHINE)
        return "ELF for another machine";
#endif
    if (h.e_phentsize != sizeof(elf_segment) || h.e_phnum == 0 || h.e_phoff > size ||
        (size - h.e_phoff) / sizeof(elf_segment) < h.e_phnum)
        return "program headers outside the file";
    if (h.e_shnum > 0 && (h.e_shoff > size || (size - h.e_shoff) / h.e_shentsize < h.e_shnum))
        return "section headers outside the file";
    for (unsigned i = 0; i < h.e_phnum; i++) {
        elf_segment seg;
        memcpy(&seg, p + h.e_phoff + i * sizeof seg, sizeof seg);
        if (seg.p_type == PT_LOAD && (seg.p_offset > size || seg.p_filesz > size - seg.p_offset))
            return "a loaded segment outside the file";
    }
    return NULL;
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void cc_object_trailer(const void *elf, size_t size, const unsigned char key[32],
                       unsigned char trailer[CC_TRAILER_BYTES])
{
    sha256 h;
    sha256_init(&h);
    sha256_update(&h, elf, size);
    memcpy(trailer, TRAILER_MAGIC, 8);
    memcpy(trailer + 8, key, 32);
    sha256_final(&h, trailer + 40);
    put_u64(trailer + 72, size);
}

/* Reads the whole file FD (which fstat says is SIZE bytes) into a new
 * buffer; NULL when it cannot or the file is not SIZE bytes now. */
static unsigned char *read_whole(int fd, size_t size)
{
    unsigned char *p = mem_alloc(size ? size : 1);
    size_t done = 0;
    while (p && done < size) {
        ssize_t got = pread(fd, p + done, size - done, (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (size_t)got;
    }
    if (p && done != size) {
        mem_free(p);
        return NULL;
    }
    return p;
}

/* Whether the object open at FD may be loaded as the object for KEY: a
 * regular file of ours no one else can write, whose bytes read through FD
 * carry a valid trailer for KEY (length and SHA-256 of the ELF bytes)
 * and an ELF image for this machine.  WHY says what was wrong. */
static bool object_is_valid(int fd, const unsigned char key[32], char *why, size_t why_cap)
{
    struct stat st;
    unsigned char trailer[CC_TRAILER_BYTES];
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, why_cap, "not a regular file");
        return false;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        snprintf(why, why_cap, "owned by user %u with mode %03o", (unsigned)st.st_uid,
                 (unsigned)(st.st_mode & 0777));
        return false;
    }
    if (st.st_size < (off_t)(sizeof(elf_header) + CC_TRAILER_BYTES) ||
        st.st_size > (off_t)CC_MAX_OBJECT) {
        snprintf(why, why_cap, "%lld bytes", (long long)st.st_size);
        return false;
    }
    size_t size = (size_t)st.st_size, elf_size = size - CC_TRAILER_BYTES;
    unsigned char *bytes = read_whole(fd, size);
    if (!bytes) {
        snprintf(why, why_cap, "cannot be read whole");
        return false;
    }
    cc_object_trailer(bytes, elf_size, key, trailer);
    const char *problem = NULL;
    if (memcmp(bytes + elf_size, TRAILER_MAGIC, 8) != 0)
        problem = "no bcgen trailer";
    else if (memcmp(bytes + elf_size + 8, key, 32) != 0)
        problem = "the trailer is for another key";
    else if (get_u64(bytes + elf_size + 72) != elf_size)
        problem = "truncated or extended";
    else if (memcmp(bytes + elf_size + 40, trailer + 40, 32) != 0)
        problem = "wrong checksum";
    else
        problem = elf_problem(bytes, elf_size);
    mem_free(bytes);
    if (problem)
        snprintf(why, why_cap, "%s", problem);
    return problem == NULL;
}

/* A fresh name for the verified descriptor FD.  glibc's dlopen first looks
 * for an already loaded object of the same name and returns it without
 * opening anything, so "/proc/self/fd/N" would return the object loaded
 * earlier through descriptor N (now closed and reused).  The serial number
 * is spelled in the path with "/." for a one and "//" for a zero, which the
 * kernel resolves to /proc/self/fd/N whatever they are: no two loads in a
 * process share a name, and no descriptor is kept open. */
static void descriptor_path(int fd, char *path, size_t cap)
{
    static atomic_ulong serial;
    unsigned long n = atomic_fetch_add(&serial, 1) + 1;
    size_t used = (size_t)snprintf(path, cap, "/proc/self/fd");
    int top = 63;
    while (top > 0 && !((n >> top) & 1))
        top--;
    for (int bit = top; bit >= 0 && used + 3 < cap; bit--) {
        memcpy(path + used, ((n >> bit) & 1) ? "/." : "//", 2);
        used += 2;
    }
    snprintf(path + used, cap - used, "/%d", fd);
}

/* dlopen of the verified descriptor FD, and FUNCTION_NAME in it. */
static bcg_status load_object(int fd, const char *shown, const char *function_name,
                              cc_code **code_out, kernel_fn *fn_out, bcg_error *err)
{
    char path[200];
    descriptor_path(fd, path, sizeof path);
    cc_code *code = mem_alloc(sizeof *code);
    if (!code)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    code->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!code->handle) {
        const char *why = dlerror();
        mem_free(code);
        return fail(err, BCG_ERR_JIT, "cannot load %s: %s", shown, why ? why : "?");
    }
    void *symbol = dlsym(code->handle, function_name);
    if (!symbol) {
        dlclose(code->handle);
        mem_free(code);
        return fail(err, BCG_ERR_JIT, "%s has no function %s", shown, function_name);
    }
    *code_out = code;
    memcpy(fn_out, &symbol, sizeof symbol); /* object pointer to function pointer */
    return BCG_OK;
}

/* ---- the key: source, compiler, flags, CPU ---------------------------------------------- */

/* What -march=native compiles for: the CPU's vendor, family, model and
 * feature bits, and the register state the OS enables (an AVX-512 CPU
 * whose OS does not save zmm registers cannot run AVX-512 code). */
static void hash_cpu_identity(sha256 *h)
{
    pthread_mutex_lock(&runs_lock);
    const char *fake = fake_cpu_identity;
    pthread_mutex_unlock(&runs_lock);
    if (fake) {
        sha256_text(h, fake);
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    unsigned r[4] = {0}, max_leaf = 0;
    __cpuid(0, max_leaf, r[1], r[2], r[3]);
    sha256_update(h, r + 1, 12); /* vendor string */
    /* leaf 1: family/model/stepping in eax, features in ecx and edx; ebx
     * holds the APIC id, which differs between cores */
    __cpuid(1, r[0], r[1], r[2], r[3]);
    unsigned leaf1[3] = {r[0], r[2], r[3]};
    sha256_update(h, leaf1, sizeof leaf1);
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, r[0], r[1], r[2], r[3]);
        sha256_update(h, r + 1, 12);
        __cpuid_count(7, 1, r[0], r[1], r[2], r[3]);
        sha256_update(h, r, 4);
    }
    unsigned max_extended = __get_cpuid_max(0x80000000, NULL);
    if (max_extended >= 0x80000001) {
        __cpuid(0x80000001, r[0], r[1], r[2], r[3]);
        sha256_update(h, r + 2, 8);
    }
    if (leaf1[1] & (1u << 27)) { /* OSXSAVE: xgetbv is allowed */
        unsigned low, high;
        __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
        unsigned xcr0[2] = {low, high};
        sha256_update(h, xcr0, sizeof xcr0);
    }
#else
#ifdef __linux__
    unsigned long caps[2] = {getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
    sha256_update(h, caps, sizeof caps);
    const char *platform = (const char *)getauxval(AT_PLATFORM);
    if (platform)
        sha256_text(h, platform);
#endif
    /* the first processor's description, without what changes by the second */
    FILE *f = fopen("/proc/cpuinfo", "re");
    char line[1024];
    while (f && fgets(line, sizeof line, f) && line[0] != '\n')
        if (strncmp(line, "processor", 9) != 0 && strncmp(line, "cpu MHz", 7) != 0 &&
            strncasecmp(line, "bogomips", 8) != 0)
            sha256_text(h, line);
    if (f)
        fclose(f);
#endif
}

#if defined(__x86_64__)
#define HOST_MACHINE "x86_64"
#elif defined(__aarch64__)
#define HOST_MACHINE "aarch64"
#else
#define HOST_MACHINE "other"
#endif

/* ---- the compiler ------------------------------------------------------------------------ */

/* Whether PATH names an executable regular file. */
static bool executable(const char *path, struct stat *st)
{
    return stat(path, st) == 0 && S_ISREG(st->st_mode) && access(path, X_OK) == 0;
}

/* NAME (no slash) looked up in the absolute directories of PATH: a
 * relative entry (".", "bin", or an empty one, which means ".") would run
 * whatever the current directory holds. */
static bool search_path(const char *name, char *out, size_t cap, struct stat *st)
{
    const char *search = getenv("PATH");
    if (!search || !*search)
        search = "/usr/local/bin:/usr/bin:/bin";
    while (*search) {
        const char *colon = strchr(search, ':');
        size_t n = colon ? (size_t)(colon - search) : strlen(search);
        if (n > 0 && search[0] == '/' && n + strlen(name) + 2 <= cap) {
            snprintf(out, cap, "%.*s/%s", (int)n, search, name);
            if (executable(out, st))
                return true;
        }
        search += n + (colon ? 1 : 0);
    }
    return false;
}

/* The compiler: $BCGEN_CC, else $CC, else cc or gcc on PATH.  A setting
 * is an absolute path or a name looked up on PATH; no arguments. */
static bcg_status find_compiler(char *path, size_t cap, struct stat *st, bcg_error *err)
{
    static const char *const variables[] = {"BCGEN_CC", "CC"};
    for (int i = 0; i < 2; i++) {
        const char *value = getenv(variables[i]);
        if (!value || !*value)
            continue;
        if (strchr(value, '/')) {
            if (value[0] != '/')
                return fail(err, BCG_ERR_IO,
                            "%s=%.200s is a relative path; give an absolute path or a name to "
                            "look up on PATH",
                            variables[i], value);
            if (strlen(value) >= cap || !executable(value, st))
                return fail(err, BCG_ERR_IO, "%s=%.200s is not an executable file",
                            variables[i], value);
            strcpy(path, value);
            return BCG_OK;
        }
        if (!search_path(value, path, cap, st))
            return fail(err, BCG_ERR_IO,
                        "%s=%.200s is not an executable in an absolute directory of PATH "
                        "(arguments are not supported there)",
                        variables[i], value);
        return BCG_OK;
    }
    if (search_path("cc", path, cap, st) || search_path("gcc", path, cap, st))
        return BCG_OK;
    return fail(err, BCG_ERR_IO,
                "no C compiler: BCGEN_CC and CC are unset and neither cc nor gcc is in an "
                "absolute directory of PATH");
}

/* The child between vfork and exec: only async-signal-safe system calls
 * that change the child itself (it shares the parent's memory), since
 * another thread of the parent may hold any lock.  All signals are blocked
 * on entry (run_compiler). */
static void exec_compiler(int dir, int output, char *const argv[], char *const envp[],
                          const struct rlimit *memory, const struct rlimit *cpu, pid_t parent)
{
    static const char message[] = "bcgen: cannot execute the compiler, errno ";
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before prctl */
        _exit(127);
#else
    (void)parent;
#endif
    /* ignored signals and the signal mask survive exec: give the compiler
     * the defaults */
    struct sigaction default_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) /* the C library's own refuse: harmless */
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &default_action, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (memory)
        setrlimit(RLIMIT_AS, memory);
    setrlimit(RLIMIT_CPU, cpu);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    int status = 126;
    if (fchdir(dir) == 0) {
        /* above 2 first, so the dup2s below cannot overwrite a source */
        int out = fcntl(output, F_DUPFD_CLOEXEC, 3);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int in = null >= 0 ? fcntl(null, F_DUPFD_CLOEXEC, 3) : -1;
        if (out >= 0 && in >= 0 && dup2(in, 0) == 0 && dup2(out, 1) == 1 && dup2(out, 2) == 2) {
#ifdef SYS_close_range
            if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
            {
                struct rlimit files;
                long top = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < (1u << 20)
                               ? (long)files.rlim_cur
                               : 1 << 20;
                for (long fd = 3; fd < top; fd++)
                    close((int)fd);
            }
            execve(argv[0], argv, envp);
            status = 127;
        }
    }
    char digits[12];
    int n = 0, e = errno;
    do
        digits[sizeof digits - 1 - n++] = (char)('0' + e % 10);
    while ((e /= 10) && n < 10);
    ssize_t ignored = write(2, message, sizeof message - 1);
    ignored = write(2, digits + sizeof digits - n, (size_t)n);
    ignored = write(2, "\n", 1);
    (void)ignored;
    _exit(status);
}

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Reads what the non-blocking pipe *OUTPUT holds into MESSAGE (newlines
 * as spaces, the rest dropped once CAP is reached); closes it at its end. */
static void drain(int *output, char *message, size_t cap, size_t *used)
{
    while (*output >= 0) {
        char chunk[512];
        ssize_t got = read(*output, chunk, sizeof chunk);
        if (got > 0) {
            for (ssize_t i = 0; i < got && *used + 1 < cap; i++)
                message[(*used)++] = chunk[i] == '\n' ? ' ' : chunk[i];
            message[*used] = 0;
        } else if (got < 0 && errno == EINTR) {
            continue;
        } else {
            if (got == 0 || errno != EAGAIN) {
                close(*output);
                *output = -1;
            }
            return;
        }
    }
}

/* Runs ARGV (argv[0] an absolute path) in the cache directory DIR under
 * LIMITS (see the file header for the child's set-up) and waits for it;
 * the start of its output goes to MESSAGE.  Whatever happens, the
 * compiler's process group is killed before this returns. */
static bcg_status run_compiler(int dir, char *const argv[], const cc_limits *limits,
                               char *message, size_t cap, bcg_error *err)
{
    int pipe_ends[2];
    message[0] = 0;
    if (pipe2(pipe_ends, O_CLOEXEC) != 0)
        return fail(err, BCG_ERR_IO, "cannot make a pipe for the compiler: %s", strerror(errno));
    /* everything the child needs is computed before the fork */
    struct rlimit memory, cpu, current;
    bool limit_memory = limits->memory > 0;
    memory.rlim_cur = memory.rlim_max = (rlim_t)limits->memory;
    if (getrlimit(RLIMIT_AS, &current) == 0 && current.rlim_max != RLIM_INFINITY &&
        current.rlim_max < memory.rlim_max)
        memory.rlim_cur = memory.rlim_max = current.rlim_max;
    /* CPU time bounds the compiler's own children, which PR_SET_PDEATHSIG
     * does not reach if the host dies */
    cpu.rlim_cur = (rlim_t)(limits->timeout_ms / 1000 + 2);
    cpu.rlim_max = cpu.rlim_cur + 5;
    if (getrlimit(RLIMIT_CPU, &current) == 0 && current.rlim_max != RLIM_INFINITY &&
        current.rlim_max < cpu.rlim_max)
        cpu = current;
    pid_t parent = getpid();
    char **envp = environ;
    long deadline = now_ms() + limits->timeout_ms;
    /* vfork, not fork: fork write-protects every page of the caller for
     * copy-on-write, so each page the caller wrote afterwards took a fault;
     * measured, a JIT compile right after a cc compile went from 0.24 to
     * 3.0 ms (libtcc's scratch pages), and fork's page-table copy grows
     * with the caller's memory.  The child shares our memory until execve:
     * it only makes system calls on its own stack frame, and every signal
     * stays blocked until it has set every handler to the default, so no
     * handler of ours runs in it. */
    sigset_t all, mask;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &mask);
    pid_t pid = vfork();
    if (pid == 0)
        exec_compiler(dir, pipe_ends[1], argv, envp, limit_memory ? &memory : NULL, &cpu,
                      parent);
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    close(pipe_ends[1]);
    if (pid < 0) {
        close(pipe_ends[0]);
        return fail(err, BCG_ERR_IO, "cannot start %s: %s", argv[0], strerror(fork_errno));
    }
    setpgid(pid, pid); /* as the child does: whichever runs first */
    int output = pipe_ends[0];
    fcntl(output, F_SETFL, fcntl(output, F_GETFL) | O_NONBLOCK);
    int pidfd = -1;
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* close-on-exec; -1 on old kernels */
#endif
    size_t used = 0;
    bool exited = false, timed_out = false, lost = false;
    while (!exited) {
        long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd watch[2];
        int watched = 0;
        if (output >= 0)
            watch[watched++] = (struct pollfd){output, POLLIN, 0};
        if (pidfd >= 0)
            watch[watched++] = (struct pollfd){pidfd, POLLIN, 0};
        /* without a pidfd the child's exit is noticed by polling */
        if (poll(watch, (nfds_t)watched, pidfd >= 0 || left < 10 ? (int)left : 10) < 0 &&
            errno != EINTR)
            break;
        drain(&output, message, cap, &used);
        siginfo_t info;
        memset(&info, 0, sizeof info);
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
            lost = errno != EINTR;
            if (lost)
                break;
        } else if (info.si_pid == pid) {
            exited = true;
        }
    }
    drain(&output, message, cap, &used); /* what it wrote just before exiting */
    /* the leader is a zombie or alive, so its pid (the group's id) is not
     * reused yet: the group is still ours to kill */
    kill(-pid, SIGKILL);
    int status = 0;
    while (!lost && waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            lost = true;
            break;
        }
    if (output >= 0)
        close(output);
    if (pidfd >= 0)
        close(pidfd);
    pthread_mutex_lock(&runs_lock);
    compiler_runs++;
    pthread_mutex_unlock(&runs_lock);
    if (timed_out)
        return fail(err, BCG_ERR_LIMIT,
                    "%s ran past the time limit of %.1f s (BCGEN_CC_TIMEOUT) and was killed",
                    argv[0], limits->timeout_ms / 1000.0);
    if (lost)
        return fail(err, BCG_ERR_IO,
                    "lost the exit status of %s (does the application ignore SIGCHLD or reap "
                    "every child?)",
                    argv[0]);
    if (WIFSIGNALED(status))
        return fail(err, BCG_ERR_JIT,
                    "%s was killed by signal %d (the memory limit is %llu MiB, "
                    "BCGEN_CC_MEMORY): %.200s",
                    argv[0], WTERMSIG(status), (unsigned long long)(limits->memory >> 20),
                    message[0] ? message : "no message");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        /* a compiler pass that hit the address-space limit dies by a signal
         * or reports memory exhausted: say which limit it was */
        bool memory =
            limits->memory > 0 && (strstr(message, "signal") || strstr(message, "memory"));
        return fail(err, BCG_ERR_JIT, "%s failed%s: %.300s", argv[0],
                    memory ? " (under the BCGEN_CC_MEMORY limit)" : "",
                    message[0] ? message : "no message");
    }
    return BCG_OK;
}

/* ---- compiling into the cache ------------------------------------------------------------ */

/* Creates a new file "tmp-<pid>-<random><SUFFIX>" in DIR with O_EXCL;
 * NAME receives its name.  Returns the descriptor or -1. */
static int create_temporary(int dir, const char *suffix, char *name, size_t cap)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char random[8];
        if (getrandom(random, sizeof random, GRND_NONBLOCK) != (ssize_t)sizeof random) {
            uint64_t fallback = (uint64_t)now_ms() * 2654435761u ^ (uint64_t)attempt << 40;
            memcpy(random, &fallback, sizeof random);
        }
        char hex[17];
        hex_text(random, sizeof random, hex);
        snprintf(name, cap, "tmp-%ld-%s%s", (long)getpid(), hex, suffix);
        int fd = openat(dir, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static bool write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Seals the compiler's output TEMPORARY (in DIR) for KEY: checks it,
 * appends the trailer, fsyncs, renames it to OBJECT and fsyncs DIR. */
static bcg_status seal_object(int dir, const char *temporary, const char *object,
                              const unsigned char key[32], const char *shown, bcg_error *err)
{
    int fd = openat(dir, temporary, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_size <= 0 || st.st_size > (off_t)(CC_MAX_OBJECT - CC_TRAILER_BYTES)) {
        if (fd >= 0)
            close(fd);
        return fail(err, BCG_ERR_JIT, "the compiler left no usable object in %s", shown);
    }
    size_t size = (size_t)st.st_size;
    unsigned char *bytes = read_whole(fd, size), trailer[CC_TRAILER_BYTES];
    const char *problem = bytes ? elf_problem(bytes, size) : "it cannot be read";
    if (!problem) {
        cc_object_trailer(bytes, size, key, trailer);
        if (lseek(fd, (off_t)size, SEEK_SET) != (off_t)size ||
            !write_all(fd, trailer, sizeof trailer) || fchmod(fd, 0600) != 0 || fsync(fd) != 0)
            problem = strerror(errno);
    }
    mem_free(bytes);
    close(fd);
    if (problem)
        return fail(err, BCG_ERR_JIT, "the compiler's object for %s is unusable: %s", shown,
                    problem);
    if (renameat(dir, temporary, dir, object) != 0)
        return fail(err, BCG_ERR_IO, "cannot move the compiled kernel into %s: %s", shown,
                    strerror(errno));
    fsync(dir); /* the rename is durable before anyone relies on it */
    return BCG_OK;
}

/* Compiles SOURCE into the object OBJECT of the cache directory DIR. */
static bcg_status compile_object(int dir, const char *compiler, char *const flags[],
                                 size_t flag_count, const cc_limits *limits, const char *source,
                                 const unsigned char key[32], const char *object,
                                 const char *shown, bcg_error *err)
{
    char source_name[64], output_name[64], message[400];
    int fd = create_temporary(dir, ".c", source_name, sizeof source_name);
    if (fd < 0)
        return fail(err, BCG_ERR_IO, "cannot create a temporary file in %s: %s", shown,
                    strerror(errno));
    bool written = write_all(fd, source, strlen(source));
    close(fd);
    /* the output's name is reserved with O_EXCL too; the linker replaces it */
    snprintf(output_name, sizeof output_name, "%.*s.so", (int)strlen(source_name) - 2,
             source_name);
    fd = written ? openat(dir, output_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          0600)
                 : -1;
    if (fd < 0) {
        unlinkat(dir, source_name, 0);
        return fail(err, BCG_ERR_IO, "cannot write a temporary file in %s: %s", shown,
                    strerror(errno));
    }
    close(fd);
    char *argv[24];
    size_t argc = 0;
    argv[argc++] = (char *)compiler;
    for (size_t i = 0; i < flag_count; i++)
        argv[argc++] = flags[i];
    argv[argc++] = "-o";
    argv[argc++] = output_name;
    argv[argc++] = source_name;
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    bcg_status s = run_compiler(dir, argv, limits, message, sizeof message, err);
    unlinkat(dir, source_name, 0);
    if (!s)
        s = seal_object(dir, output_name, object, key, shown, err);
    if (s)
        unlinkat(dir, output_name, 0);
    return s;
}

/* Opens OBJECT in DIR and checks it for KEY; the descriptor, or -1. */
static int open_valid_object(int dir, const char *object, const unsigned char key[32])
{
    char why[120];
    int fd = openat(dir, object, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && !object_is_valid(fd, key, why, sizeof why)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

bcg_status cc_compile(const char *source, const char *function_name, bool native,
                      cc_code **code_out, kernel_fn *fn_out, bcg_error *err)
{
    *code_out = NULL;
    *fn_out = NULL;
    size_t length = strlen(source);
    if (length > CC_MAX_SOURCE)
        return fail(err, BCG_ERR_LIMIT,
                    "the generated C is %zu bytes, over the cc backend's limit of %d bytes "
                    "(the optimising compiler's time grows faster than the source)",
                    length, CC_MAX_SOURCE);
    cc_limits limits;
    char compiler[PATH_MAX], real_compiler[PATH_MAX], shown[PATH_MAX];
    struct stat compiler_stat;
    int dir = -1;
    bcg_status s = read_limits(&limits, err);
    if (!s)
        s = find_compiler(compiler, sizeof compiler, &compiler_stat, err);
    if (!s)
        s = open_cache_directory(shown, sizeof shown, true, &dir, err);
    if (s)
        return s;

    char *flags[] = {"-O3", "-std=c99", "-fPIC", "-shared", "-ffp-contract=off",
                     "-march=native"};
    size_t flag_count = sizeof flags / sizeof flags[0] - (native ? 0 : 1);
    sha256 h;
    sha256_init(&h);
    sha256_text(&h, source);
    sha256_text(&h, realpath(compiler, real_compiler) ? real_compiler : compiler);
    long long identity[3] = {(long long)compiler_stat.st_size, (long long)compiler_stat.st_mtime,
                             (long long)compiler_stat.st_ino};
    sha256_update(&h, identity, sizeof identity);
    for (size_t i = 0; i < flag_count; i++)
        sha256_text(&h, flags[i]);
    sha256_text(&h, HOST_MACHINE);
    if (native)
        hash_cpu_identity(&h);
    unsigned char key[32];
    char object[70], object_shown[PATH_MAX + 80];
    sha256_final(&h, key);
    hex_text(key, sizeof key, object);
    strcat(object, ".so");
    snprintf(object_shown, sizeof object_shown, "%s/%s", shown, object);

    int fd = open_valid_object(dir, object, key);
    if (fd < 0) {
        s = compile_object(dir, compiler, flags, flag_count, &limits, source, key, object,
                           object_shown, err);
        scan_result trimmed;
        bcg_error ignored;
        /* after failures too: stale tmp- files of killed processes go */
        scan_cache(dir, SCAN_TRIM, limits.cache_bytes, s ? NULL : object, &trimmed, &ignored);
        if (!s && (fd = open_valid_object(dir, object, key)) < 0)
            s = fail(err, BCG_ERR_IO, "the object just compiled into %s does not verify",
                     object_shown);
    }
    close(dir);
    if (s)
        return s;
    futimens(fd, NULL); /* used now: least-recently-used eviction goes by mtime */
    s = load_object(fd, object_shown, function_name, code_out, fn_out, err);
    close(fd);
    return s;
}

void cc_free(cc_code *code)
{
    if (!code)
        return;
    dlclose(code->handle);
    mem_free(code);
}

/* ---- the cache as a whole (bcgen cache) -------------------------------------------------- */

bcg_status cc_cache_stats(cc_cache_info *info, bcg_error *err)
{
    memset(info, 0, sizeof *info);
    int dir;
    bcg_status s = env_bytes("BCGEN_CACHE_MAX", CC_DEFAULT_CACHE_MAX, &info->limit, err);
    if (s)
        return s;
    if ((s = open_cache_directory(info->directory, sizeof info->directory, false, &dir, err)))
        return s;
    if (dir < 0)
        return BCG_OK;
    info->exists = true;
    scan_result counted;
    s = scan_cache(dir, SCAN_COUNT, 0, NULL, &counted, err);
    close(dir);
    info->entries = counted.entries;
    info->bytes = counted.bytes;
    info->temporary = counted.temporary;
    return s;
}

bcg_status cc_cache_clear(cc_cache_info *info, bcg_error *err)
{
    memset(info, 0, sizeof *info);
    int dir;
    bcg_status s = open_cache_directory(info->directory, sizeof info->directory, false, &dir, err);
    if (s || dir < 0)
        return s;
    info->exists = true;
    scan_result cleared;
    s = scan_cache(dir, SCAN_CLEAR, 0, NULL, &cleared, err);
    close(dir);
    info->entries = cleared.removed;
    info->bytes = cleared.removed_bytes;
    return s;
}
