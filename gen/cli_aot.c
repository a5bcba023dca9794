/* cli_aot.c - `bcgen aot`: writes one .c/.h pair holding one or more
 * kernels for firmware builds (gen/aot.c does the work), and with --size
 * compiles the .c with the target's compiler to report its code size. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aot.h"
#include "cli.h"

extern char **environ;

static const char help[] =
    "usage: bcgen aot -k NAME=EXPR -i OPERAND... [-k NAME=EXPR -i ...] -o FILE.c [options]\n"
    "       bcgen aot --spec KERNELS.bcg -o FILE.c [--header FILE.h] [--misra-report FILE]\n"
    "                 [--size]\n"
    "       bcgen aot EXPR -i OPERAND... --name NAME -o FILE.c [options]\n"
    "       bcgen aot -i OPERAND... --name NAME -o FILE.c [options] -- EXPR\n"
    "\n"
    "Writes FILE.c and FILE.h (or --header), a pair that is the whole dependency\n"
    "of the kernels: no bcgen header or library, only <stdint.h>, <stddef.h>\n"
    "and, when a math function is used, <math.h>.  Each kernel is a function\n"
    "    void NAME(T *out, const T0 *operand0, const T1 *operand1, ...);\n"
    "with the parameters named after the operands (the in-place operand, with\n"
    "--inplace, is the non-const output and there is no `out`).  The header\n"
    "#defines NAME_OPERAND_SHAPE, _ELEMENTS, _BYTES (and NAME_OUT_*) and says how\n"
    "the pair was made, so it can be regenerated.  Kernel and operand names must\n"
    "not be names C or its standard headers already mean (round, EOF, I, ...).\n"
    "\n"
    "kernels:\n"
    "  --spec FILE             the kernels, operands and options from a spec file\n"
    "                          (docs/spec.md: 'bcgen-spec 1', then 'kernel NAME =\n"
    "                          EXPR', 'input NAME = DTYPE[SHAPE]', ... one a line,\n"
    "                          # comments); errors name FILE:LINE:COLUMN; the header\n"
    "                          records the command with base names only, so the\n"
    "                          same spec gives the same bytes on any machine\n"
    "  -k NAME=EXPR            a kernel: the function NAME computing EXPR\n"
    "  -i NAME=DTYPE[SHAPE]    an operand of the last kernel; @[S0,S1,...] strides\n"
    "                          (a lone EXPR's operands may also come before it)\n"
    "  --                      ends the options: the lone EXPR follows (one that\n"
    "                          starts with '-': -- '-a'); -k NAME=EXPR takes any EXPR\n"
    "  --inplace NAME, --axis K, --strict-rank   as for `bcgen explain`, for the\n"
    "                          last kernel (--axis and --strict-rank before the\n"
    "                          first -k: for every kernel)\n"
    "  --out-strides S, --out-dtype D, --reduce OP --out-shape SHAPE|--to NAME\n"
    "                          the last kernel's output: a strided view, a cast on\n"
    "                          store, a reduction (as for `bcgen run`); the\n"
    "                          header's NAME_OUT_* macros describe it\n"
    "\n"
    "code (for every kernel of the pair):\n"
    "  --unroll NAME=MODE      MODE (as below) for kernel NAME only\n"
    "  --unroll full|none|N    full: straight-line code, one statement per\n"
    "                          element (up to 65536); none: plain loops; N: loops,\n"
    "                          the innermost unrolled N times.  Default: outputs of\n"
    "                          at most 4 elements straight-line, larger ones loops\n"
    "                          unrolled 4 times (measured on a Cortex-M4: beyond 4\n"
    "                          elements full unrolling costs 1.2-4.3x the bytes\n"
    "                          for at most 1.3x fewer instructions)\n"
    "  --math float|double     f32 float functions (sqrt, exp, log, ...; all but\n"
    "                          floor, ceil, trunc and rint) and **: float (default) calls\n"
    "                          sqrtf, expf, ..., powf (no double arithmetic); double\n"
    "                          computes them in double and rounds once, as the\n"
    "                          JIT does (more accurate, slow without a double FPU);\n"
    "                          floor, ceil, abs, // and % are exact either way\n"
    "\n"
    "the pair:\n"
    "  -o FILE.c               the source to write (required; file names in\n"
    "                          printable ASCII, without quotes, backslashes,\n"
    "                          /* // */ or trigraphs such as ?\?-)\n"
    "  --header FILE.h         the header (default: FILE.c with .h; not FILE.c\n"
    "                          itself); FILE.c includes it by its file name\n"
    "  --restrict              restrict-qualify every pointer: the caller\n"
    "                          promises that no two buffers overlap\n"
    "  --index-bits 32|64      positions are ptrdiff_t; 32 (default): a kernel\n"
    "                          whose offsets do not fit 31 bits is an error now,\n"
    "                          not an overflow on a 32-bit target\n"
    "  --misra-report FILE     also write FILE, the pair's MISRA C:2012 deviation\n"
    "                          record (Markdown): each advisory rule the pair\n"
    "                          departs from, how many places, and why (it meets\n"
    "                          the mandatory and required rules cppcheck checks)\n"
    "  --size                  compile FILE.c at -Os and -O2 (arm-none-eabi-gcc\n"
    "                          -mcpu=cortex-m4 -mthumb, or the host's cc) and print\n"
    "                          each kernel's bytes at both, the helpers' and the text\n"
    "\n"
    "example:\n"
    "  bcgen aot -k 'scale=x * gain + bias' -i x=f32[64] -i gain=f32[] -i bias=f32[] \\\n"
    "            -k 'relu=maximum(v, 0)' -i v=i16[8,8] -o kernels.c --restrict\n";

typedef struct cli_kernel {
    const char *name;       /* points into argv, or the copy in name_text */
    char name_text[BCG_MAX_NAME + 1];
    const char *expr;
    int operand_count;
    cli_operand operands[BCG_MAX_OPERANDS];
    bcg_options options;
    bool math_double;
    const char *inplace_name;
    cli_output out;         /* --out-strides, --out-dtype, --reduce ... after its -k */
    bcg_options unroll;     /* --unroll NAME=MODE: only the unroll fields are read */
    bool unroll_given;
    int arg_index;          /* the argv index of its -k value (for a spec file's places) */
    int inplace_arg;        /* ... and of its --inplace value */
    /* a program of statements (-k NAME='y = ...; s = ...'): its output
     * options keyed by statement (--reduce s=sum), heap arrays of
     * BCG_MAX_OUTPUTS made on the first one */
    int keyed_count;
    cli_output *keyed;
    char (*keyed_names)[BCG_MAX_NAME + 1];
    bcg_output *keyed_outputs;
    const char **keyed_output_names;
} cli_kernel;

#define MAX_KERNELS 256

/* CMD is "aot", or "aot: FILE:LINE:COLUMN" for a word of a spec file. */
static int usage_error_at(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "bcgen %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see bcgen aot --help)\n");
    return 2;
}

static int usage_error(const char *fmt, const char *arg)
{
    return usage_error_at("aot", fmt, arg);
}

static bool parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!s[0] || *end || errno || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* --unroll TEXT into OPTIONS, as `bcgen emit` reads it. */
static bool parse_unroll(const char *text, bcg_options *options)
{
    int factor;
    if (strcmp(text, "full") == 0) {
        options->unroll_limit = 65536;
    } else if (strcmp(text, "none") == 0) {
        options->unroll_limit = 0;
        options->unroll_factor = 1;
    } else if (parse_int(text, 1, 64, &factor)) {
        /* an explicit factor asks for loops, whatever the output's size */
        options->unroll_factor = factor;
        options->unroll_limit = 0;
    } else {
        return false;
    }
    return true;
}

/* ARG as a shell word: as is when it is plain, else in single quotes.  The
 * command is quoted in the pair's comments, where MISRA C rule 3.1 forbids
 * the sequences // and / * (and C ends a comment at * /): those are split
 * into two quoted strings, which the shell joins again ('a /''/ b'). */
static void put_shell_word(strbuf *sb, const char *arg)
{
    bool plain = arg[0] != 0 && !strstr(arg, "//") && !strstr(arg, "/*") && !strstr(arg, "*/");
    for (const char *c = arg; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=,:+@%",
                    *c))
            plain = false;
    if (plain) {
        sb_puts(sb, arg);
        return;
    }
    sb_putc(sb, '\'');
    for (const char *c = arg; *c; c++) {
        if (*c == '\'')
            sb_puts(sb, "'\\''");
        else
            sb_putc(sb, *c);
        if ((c[0] == '/' && (c[1] == '/' || c[1] == '*')) || (c[0] == '*' && c[1] == '/'))
            sb_puts(sb, "''");
    }
    sb_putc(sb, '\'');
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A file being written: TEMP in PATH's directory until it is renamed. */
typedef struct pending_file {
    const char *path;
    char temp[4096];
    bool made;
} pending_file;

/* Writes TEXT into a new temporary file beside F->path and syncs it; on
 * failure says on stderr which file and why, and leaves nothing. */
static bool write_pending(pending_file *f, const char *text)
{
    int n = snprintf(f->temp, sizeof f->temp, "%s.tmp-XXXXXX", f->path);
    if (n < 0 || (size_t)n >= sizeof f->temp) {
        fprintf(stderr, "bcgen aot: cannot write %s: the path is too long\n", f->path);
        return false;
    }
    int fd = mkstemp(f->temp);
    if (fd < 0) {
        fprintf(stderr, "bcgen aot: cannot write %s: %s\n", f->path, strerror(errno));
        return false;
    }
    f->made = true;
    size_t length = strlen(text), done = 0;
    while (done < length) {
        ssize_t w = write(fd, text + done, length - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, "bcgen aot: cannot write %s: %s\n", f->path,
                    w < 0 ? strerror(errno) : "nothing was written");
            close(fd);
            return false;
        }
        done += (size_t)w;
    }
    /* mkstemp makes the file 0600; the pair is ordinary source */
    if (fchmod(fd, 0644) != 0 || fsync(fd) != 0 || close(fd) != 0) {
        fprintf(stderr, "bcgen aot: cannot write %s: %s\n", f->path, strerror(errno));
        return false;
    }
    return true;
}

/* Writes the pair whole or not at all: both files are written beside their
 * names first, and renamed into place only when both are complete. */
static bool write_pair(const char *source_path, const char *source, const char *header_path,
                       const char *header, const char *record_path, const char *record)
{
    pending_file files[3] = {{source_path, "", false}, {header_path, "", false},
                             {record_path, "", false}};
    int count = record_path ? 3 : 2;
    bool ok = write_pending(&files[0], source) && write_pending(&files[1], header) &&
              (count == 2 || write_pending(&files[2], record));
    for (int i = 0; ok && i < count; i++)
        if (rename(files[i].temp, files[i].path) != 0) {
            fprintf(stderr, "bcgen aot: cannot write %s: %s\n", files[i].path,
                    strerror(errno));
            ok = false;
        } else {
            files[i].made = false;
        }
    for (int i = 0; i < count; i++)
        if (files[i].made)
            unlink(files[i].temp);
    return ok;
}

/* ---- file names --------------------------------------------------------------- */

/* Why PATH cannot name a file of the pair, or NULL.  Both paths are quoted
 * into the pair's comments (the command that made it) and the header's
 * name into the .c's #include "...": a comment opener or closer would end
 * or nest a comment (and C99 leaves // and /x in an #include undefined),
 * and a trigraph (??= ??/ ??' ??( ??) ??! ??< ??> ??-) is replaced under
 * -std=c99 even inside comments and strings. */
static const char *file_name_problem(const char *path, char *buf, size_t cap)
{
    static const char *const openers[] = {"/*", "//", "*/"};
    for (size_t i = 0; i < sizeof openers / sizeof openers[0]; i++)
        if (strstr(path, openers[i])) {
            snprintf(buf, cap,
                     "the name holds '%s', which would open or close a comment in the "
                     "generated files (they quote the command that made them)",
                     openers[i]);
            return buf;
        }
    for (const char *c = path; (c = strstr(c, "??")) != NULL; c++)
        if (c[2] && strchr("=/'()!<>-", c[2])) {
            snprintf(buf, cap,
                     "the name holds the trigraph '??%c', which C99 compilers replace even "
                     "in comments and #include names",
                     c[2]);
            return buf;
        }
    return NULL;
}

/* PATH without "." components, repeated slashes or a trailing slash
 * (lexically: ".." stays). */
static char *normal_path(const char *path)
{
    char *out = malloc(strlen(path) + 2);
    if (!out)
        return NULL;
    size_t j = 0;
    const char *c = path;
    if (*c == '/')
        out[j++] = *c++;
    while (*c) {
        const char *end = strchr(c, '/');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        if (len > 0 && !(len == 1 && c[0] == '.')) {
            if (j > 0 && out[j - 1] != '/')
                out[j++] = '/';
            memcpy(out + j, c, len);
            j += len;
        }
        c += len;
        while (*c == '/')
            c++;
    }
    out[j] = 0;
    return out;
}

/* PATH with its directory resolved (symbolic links, ..) and its last
 * component kept; the lexical normal form when the directory does not
 * exist.  NULL: out of memory. */
static char *resolved_path(const char *path)
{
    char *normal = normal_path(path);
    if (!normal)
        return NULL;
    char *slash = strrchr(normal, '/');
    const char *base = slash ? slash + 1 : normal;
    char *real;
    if (!slash) {
        real = realpath(".", NULL);
    } else if (slash == normal) {
        real = realpath("/", NULL);
    } else {
        *slash = 0;
        real = realpath(normal, NULL);
        *slash = '/';
    }
    char *out = real ? malloc(strlen(real) + strlen(base) + 2) : NULL;
    if (out)
        sprintf(out, "%s%s%s", real, strcmp(real, "/") == 0 ? "" : "/", base);
    free(real);
    if (!out)
        return normal;
    free(normal);
    return out;
}

/* true when A and B name one file: the same existing file (links
 * included), or the same path once resolved. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ra = resolved_path(a), *rb = resolved_path(b);
    bool same = ra && rb ? strcmp(ra, rb) == 0 : strcmp(a, b) == 0;
    free(ra);
    free(rb);
    return same;
}

/* A usage error (2) for -o or --header names the pair cannot use, else -1. */
static int check_file_names(const char *output_path, const char *header_path)
{
    const char *flags[2] = {"-o", "--header"}, *paths[2] = {output_path, header_path};
    char why[200];
    for (int i = 0; i < 2; i++) {
        if (!paths[i] || !file_name_problem(paths[i], why, sizeof why))
            continue;
        fprintf(stderr, "bcgen aot: %s '%s': %s; rename it\n(see bcgen aot --help)\n",
                flags[i], paths[i], why);
        return 2;
    }
    if (header_path && same_file(output_path, header_path)) {
        fprintf(stderr,
                "bcgen aot: --header '%s' is the same file as -o '%s': the header would "
                "overwrite the source; give it a name of its own (default: FILE.c with .h)\n"
                "(see bcgen aot --help)\n",
                header_path, output_path);
        return 2;
    }
    return -1;
}

/* ---- --size --------------------------------------------------------------------- */

/* Runs ARGV with stdout (and stderr) into the file CAPTURE; the exit status,
 * or -1 when it could not be started. */
static int run_program(char *const argv[], const char *capture)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, capture, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid;
    int status = -1;
    if (posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ) == 0) {
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
            status = -1;
        else
            status = WEXITSTATUS(status);
    }
    posix_spawn_file_actions_destroy(&actions);
    return status;
}

static bool on_path(const char *program)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char buf[4096];
    for (const char *at = path; *at;) {
        const char *end = strchr(at, ':');
        size_t n = end ? (size_t)(end - at) : strlen(at);
        if (snprintf(buf, sizeof buf, "%.*s/%s", (int)n, at, program) < (int)sizeof buf &&
            access(buf, X_OK) == 0)
            return true;
        if (!end)
            break;
        at = end + 1;
    }
    return false;
}

/* Bytes of each function in OBJECT (`nm -S`): kernels (global) into
 * KERNEL_BYTES by name, static helpers summed into *HELPER_BYTES, and
 * *TEXT from `size`.  false when a tool failed. */
typedef struct size_row {
    char name[256];
    unsigned long bytes[2];   /* -Os, -O2 */
} size_row;

static bool measure_object(const char *nm_tool, const char *size_tool, const char *object,
                           const char *log, size_row *rows, int *row_count, int max_rows,
                           int level, unsigned long *helper_bytes, unsigned long *text)
{
    char *size_argv[] = {(char *)size_tool, (char *)object, NULL};
    char *nm_argv[] = {(char *)nm_tool, "-S", "--size-sort", (char *)object, NULL};
    char line[512];
    FILE *f;
    bool ok = false;
    if (run_program(size_argv, log) == 0 && (f = fopen(log, "r"))) {
        /* "   text    data     bss     dec     hex filename", then the numbers */
        while (fgets(line, sizeof line, f))
            if (sscanf(line, " %lu", &text[level]) == 1)
                ok = true;
        fclose(f);
    }
    if (!ok || run_program(nm_argv, log) != 0 || !(f = fopen(log, "r")))
        return false;
    /* "00000000 0000007c T scale": the functions and their bytes */
    while (fgets(line, sizeof line, f)) {
        char address[64], size[64], kind[8], name[256];
        if (sscanf(line, "%63s %63s %7s %255s", address, size, kind, name) != 4 ||
            (kind[0] != 'T' && kind[0] != 't'))
            continue;
        unsigned long bytes = strtoul(size, NULL, 16);
        if (kind[0] == 't') {
            helper_bytes[level] += bytes;
            continue;
        }
        int r = 0;
        while (r < *row_count && strcmp(rows[r].name, name) != 0)
            r++;
        if (r == *row_count) {
            if (r == max_rows)
                continue;
            snprintf(rows[r].name, sizeof rows[r].name, "%s", name);
            rows[r].bytes[0] = rows[r].bytes[1] = 0;
            (*row_count)++;
        }
        rows[r].bytes[level] = bytes;
    }
    fclose(f);
    return true;
}

/* Compiles SOURCE_PATH (finding its header in HEADER_DIR) at -Os and at -O2
 * for a Cortex-M4 and prints each kernel's bytes at both levels, the
 * static helpers' and the totals (`size`'s text), in the kernels' order. */
static int report_size(const char *source_path, const char *header_dir,
                       const cli_kernel *kernels, int kernel_count)
{
    bool cross = on_path("arm-none-eabi-gcc");
    const char *cc = cross ? "arm-none-eabi-gcc" : "cc";
    const char *size_tool = cross ? "arm-none-eabi-size" : "size";
    const char *nm_tool = cross ? "arm-none-eabi-nm" : "nm";
    char dir[] = "/tmp/bcgen-size-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bcgen aot: --size: cannot make a temporary directory\n");
        return 1;
    }
    char object[64], log[64], include[4200];
    snprintf(object, sizeof object, "%s/kernels.o", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    snprintf(include, sizeof include, "-I%s", header_dir);
    static const char *const levels[2] = {"-Os", "-O2"};
    size_row *rows = calloc(MAX_KERNELS, sizeof *rows);
    int row_count = 0, status = rows ? 0 : 1;
    unsigned long helper_bytes[2] = {0, 0}, text[2] = {0, 0};
    /* the kernels' order, not nm's */
    for (int j = 0; rows && j < kernel_count; j++) {
        snprintf(rows[j].name, sizeof rows[j].name, "%s", kernels[j].name);
        row_count++;
    }
    for (int level = 0; level < 2 && status == 0; level++) {
        char *compile_cross[] = {(char *)cc, "-mcpu=cortex-m4", "-mthumb", "-ffreestanding",
                                 "-std=c99", (char *)levels[level], include, "-c",
                                 (char *)source_path, "-o", object, NULL};
        char *compile_host[] = {(char *)cc, "-std=c99", (char *)levels[level], include, "-c",
                                (char *)source_path, "-o", object, NULL};
        if (run_program(cross ? compile_cross : compile_host, log) != 0) {
            fprintf(stderr, "bcgen aot: --size: %s %s could not compile %s (see %s)\n", cc,
                    levels[level], source_path, log);
            free(rows);
            return 1;
        }
        if (!measure_object(nm_tool, size_tool, object, log, rows, &row_count, MAX_KERNELS,
                            level, helper_bytes, text)) {
            fprintf(stderr, "bcgen aot: --size: %s or %s failed\n", size_tool, nm_tool);
            status = 1;
        }
    }
    if (status == 0) {
        printf("size of %s compiled with %s, bytes of code\n", source_path,
               cross ? "arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -ffreestanding -std=c99"
                     : "cc -std=c99 (host; arm-none-eabi-gcc was not found)");
        printf("  %-32s %8s %8s\n", "kernel", "-Os", "-O2");
        for (int r = 0; r < row_count; r++)
            printf("  %-32s %8lu %8lu\n", rows[r].name, rows[r].bytes[0], rows[r].bytes[1]);
        if (helper_bytes[0] || helper_bytes[1])
            printf("  %-32s %8lu %8lu\n", "(static helpers)", helper_bytes[0], helper_bytes[1]);
        printf("  %-32s %8lu %8lu\n", "text (size)", text[0], text[1]);
    }
    free(rows);
    unlink(object);
    unlink(log);
    rmdir(dir);
    return status;
}

/* ---- the command ------------------------------------------------------------------ */

typedef struct cli_state {
    cli_kernel *kernels;
    int kernel_count;
    bcg_options defaults;
    bcg_options unroll;          /* only the unroll fields are read */
    bool math_double;
    const char *output_path, *header_path, *single_name, *single_expr;
    const char *misra_report;   /* --misra-report FILE, or NULL */
    bool restrict_pointers, size;
    int index_bits;
    /* --unroll NAME=MODE, resolved once every kernel is known */
    int named_unroll_count;
    const char *named_unroll[MAX_KERNELS];
    int named_unroll_arg[MAX_KERNELS];
    /* with --spec: the file, and the place of every argv word (0: the command line) */
    const char *spec_file;
    const int *arg_line, *arg_column, *arg_expr_column;
    char place[4200];
} cli_state;

/* The command name for messages about argv[I]: "aot: FILE:LINE:COLUMN"
 * when the word came from a spec file, else "aot".  COLUMN_OFFSET (0 or
 * more) moves the column within the word (an expression's error column). */
static const char *place_at(cli_state *st, int i, int column_offset)
{
    if (!st->spec_file || i < 0 || !st->arg_line || st->arg_line[i] <= 0)
        return "aot";
    snprintf(st->place, sizeof st->place, "aot: %s:%d:%d", st->spec_file, st->arg_line[i],
             st->arg_column[i] + column_offset);
    return st->place;
}

static const char *place(cli_state *st, int i)
{
    return place_at(st, i, 0);
}

static int finish_kernel(cli_state *st, cli_kernel *k)
{
    if (!k)
        return -1;
    const char *cmd = place(st, k->arg_index);
    if (!k->expr)
        return usage_error_at(cmd, "%s", "a kernel has no expression");
    if (k->operand_count == 0)
        return usage_error_at(cmd, "kernel %s has no operands: add -i NAME=DTYPE[SHAPE] after "
                                   "its -k (in a spec file: input NAME = DTYPE[SHAPE])",
                              k->name ? k->name : "");
    int finished = cli_output_finish(cmd, &k->out, k->operands, k->operand_count, &k->options);
    if (finished >= 0)
        return finished;
    for (int j = 0; j < k->keyed_count; j++) {
        bcg_options one;
        bcg_options_init(&one);
        if ((finished = cli_output_finish(cmd, &k->keyed[j], k->operands, k->operand_count,
                                          &one)) >= 0)
            return finished;
        k->keyed_outputs[j] = *one.output;
        k->keyed_output_names[j] = k->keyed_names[j];
    }
    if (k->keyed_count) {
        k->options.outputs = k->keyed_outputs;
        k->options.output_count = k->keyed_count;
        k->options.output_names = k->keyed_output_names;
    }
    if (k->inplace_name) {
        for (int i = 0; i < k->operand_count; i++)
            if (strcmp(k->operands[i].name, k->inplace_name) == 0)
                k->options.inplace = i;
        if (k->options.inplace < 0)
            return usage_error_at(place(st, k->inplace_arg),
                                  "--inplace names '%s', which is not an operand of its "
                                       "kernel", k->inplace_name);
    }
    return -1;
}

/* An output option of a program kernel: VALUE is STATEMENT=VALUE; -1 to
 * go on, else the exit status. */
static int keyed_option(const char *cmd, cli_kernel *k, const char *arg, const char *value)
{
    const char *eq = strchr(value, '=');
    size_t n = eq ? (size_t)(eq - value) : 0;
    if (!eq || !name_is_valid(value, n))
        return usage_error_at(cmd, "kernel %s is a program of statements: key its output "
                              "options by statement, as OPTION NAME=VALUE", k->name ? k->name : "");
    if (!k->keyed) {
        k->keyed = calloc(BCG_MAX_OUTPUTS, sizeof *k->keyed);
        k->keyed_names = calloc(BCG_MAX_OUTPUTS, sizeof *k->keyed_names);
        k->keyed_outputs = calloc(BCG_MAX_OUTPUTS, sizeof *k->keyed_outputs);
        k->keyed_output_names = calloc(BCG_MAX_OUTPUTS, sizeof *k->keyed_output_names);
        if (!k->keyed || !k->keyed_names || !k->keyed_outputs || !k->keyed_output_names) {
            fprintf(stderr, "bcgen aot: out of memory\n");
            return 1;
        }
    }
    int at = 0;
    while (at < k->keyed_count &&
           !(strlen(k->keyed_names[at]) == n && memcmp(k->keyed_names[at], value, n) == 0))
        at++;
    if (at == k->keyed_count) {
        if (at == BCG_MAX_OUTPUTS)
            return usage_error_at(cmd, "more than %s keyed outputs", "64");
        memcpy(k->keyed_names[at], value, n);
        k->keyed_names[at][n] = 0;
        cli_output_init(&k->keyed[at]);
        k->keyed_count++;
    }
    return cli_output_option(cmd, arg, eq + 1, &k->keyed[at]) == 2 ? 2 : -1;
}

static void free_keyed(cli_kernel *k)
{
    free(k->keyed);
    free(k->keyed_names);
    free(k->keyed_outputs);
    free(k->keyed_output_names);
}

static cli_kernel *new_kernel(cli_state *st)
{
    if (st->kernel_count == MAX_KERNELS)
        return NULL;
    cli_kernel *k = &st->kernels[st->kernel_count++];
    memset(k, 0, sizeof *k);
    k->options = st->defaults;
    cli_output_init(&k->out);
    return k;
}

static int parse(cli_state *st, int argc, char **argv)
{
    cli_kernel *k = NULL; /* the kernel options apply to; NULL: the defaults */
    cli_kernel *single = NULL;
    /* the first -i before any kernel: an operand of a lone EXPR given after
     * it (after --, when it starts with '-'), else an error */
    const char *early_operand = NULL;
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes_value = true;
        /* messages about a value name the value's place, else the option's */
        const char *cmd = place(st, value ? i + 1 : i);
        if (options_done || arg[0] != '-' || arg[1] == 0) {
            if (st->single_expr || (st->kernel_count > 0 && !(single && !single->expr)))
                return usage_error_at(cmd, options_done
                                       ? "unexpected argument '%s' (after -- only one EXPR; "
                                         "options go before --)"
                                       : "unexpected argument '%s' (give one EXPR with --name, "
                                         "or kernels with -k NAME=EXPR)",
                                   arg);
            st->single_expr = arg;
            if (!single)
                k = single = new_kernel(st);
            single->expr = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        if (cli_is_help(arg)) {
            fputs(help, stdout);
            return 0;
        }
        if (!value && strcmp(arg, "--strict-rank") != 0 && strcmp(arg, "--restrict") != 0 &&
            strcmp(arg, "--size") != 0)
            return usage_error_at(cmd, "%s needs a value", arg);
        bcg_options *options = k ? &k->options : &st->defaults;
        cli_output ignored;
        cli_output_init(&ignored);
        if (k && k->expr && program_is_statements(k->expr) &&
            (strcmp(arg, "--out-strides") == 0 || strcmp(arg, "--out-dtype") == 0 ||
             strcmp(arg, "--reduce") == 0 || strcmp(arg, "--out-shape") == 0 ||
             strcmp(arg, "--to") == 0)) {
            int keyed = keyed_option(cmd, k, arg, value);
            if (keyed >= 0)
                return keyed;
            i++;
            continue;
        }
        int output = cli_output_option(cmd, arg, value, k ? &k->out : &ignored);
        if (output == 2)
            return 2;
        if (output == 1 && !k)
            return usage_error_at(cmd, "%s comes before any kernel (it belongs after a -k)", arg);
        if (output == 1) {
            i++;
            continue;
        }
        if (strcmp(arg, "-k") == 0 || strcmp(arg, "--kernel") == 0) {
            if (single && !single->expr)
                return usage_error_at(cmd, "-i %s comes before any kernel (-k NAME=EXPR or EXPR)",
                                   early_operand);
            if (single)
                return usage_error_at(cmd, "%s", "-k and a lone EXPR cannot be mixed");
            const char *eq = strchr(value, '=');
            size_t n = eq ? (size_t)(eq - value) : 0;
            if (!eq || !name_is_valid(value, n))
                return usage_error_at(cmd, "-k takes NAME=EXPR with NAME a C identifier, not '%s'",
                                   value);
            if (!(k = new_kernel(st)))
                return usage_error_at(cmd, "more than %s kernels", "256");
            memcpy(k->name_text, value, n);
            k->name_text[n] = 0;
            k->name = k->name_text;
            k->expr = eq + 1;
            k->arg_index = i + 1;
        } else if (strcmp(arg, "-i") == 0 || strcmp(arg, "--input") == 0) {
            if (!k && st->kernel_count == 0) {
                k = single = new_kernel(st);
                early_operand = value;
            }
            if (k->operand_count == BCG_MAX_OPERANDS)
                return usage_error_at(cmd, "more than %s operands in one kernel", "64");
            bcg_error err;
            error_clear(&err);
            if (cli_parse_operand(value, false, &k->operands[k->operand_count], &err))
                return cli_report(cmd, NULL, &err);
            k->operand_count++;
        } else if (strcmp(arg, "--inplace") == 0) {
            if (!k)
                return usage_error_at(cmd, "--inplace %s comes before any kernel", value);
            k->inplace_name = value;
            k->inplace_arg = i + 1;
        } else if (strcmp(arg, "--axis") == 0) {
            if (!parse_int(value, -BCG_MAX_RANK, BCG_MAX_RANK, &options->axis))
                return usage_error_at(cmd, "--axis needs an integer from -64 to 64, not '%s'", value);
        } else if (strcmp(arg, "--strict-rank") == 0) {
            options->strict_rank = 1;
            takes_value = false;
        } else if (strcmp(arg, "--unroll") == 0) {
            /* --unroll MODE for every kernel, --unroll NAME=MODE for one */
            const char *eq = strchr(value, '=');
            bcg_options check;
            bcg_options_init(&check);
            check.unroll_limit = AOT_DEFAULT_UNROLL_LIMIT;
            if (!parse_unroll(eq ? eq + 1 : value, eq ? &check : &st->unroll))
                return usage_error_at(cmd, "--unroll takes full, none or a factor from 1 to 64 "
                                           "(or NAME=MODE for kernel NAME), not '%s'", value);
            if (eq) {
                if (!name_is_valid(value, (size_t)(eq - value)))
                    return usage_error_at(cmd, "--unroll NAME=MODE needs NAME a kernel's name, "
                                               "not '%s'", value);
                if (st->named_unroll_count == MAX_KERNELS)
                    return usage_error_at(cmd, "more than %s --unroll NAME=MODE", "256");
                st->named_unroll[st->named_unroll_count] = value;
                st->named_unroll_arg[st->named_unroll_count++] = i + 1;
            }
        } else if (strcmp(arg, "--math") == 0) {
            bool is_double = strcmp(value, "double") == 0;
            if (!is_double && strcmp(value, "float") != 0)
                return usage_error_at(cmd, "--math takes float or double, not '%s'", value);
            st->math_double = is_double;
        } else if (strcmp(arg, "--name") == 0) {
            st->single_name = value;
        } else if (strcmp(arg, "-o") == 0) {
            st->output_path = value;
        } else if (strcmp(arg, "--header") == 0) {
            st->header_path = value;
        } else if (strcmp(arg, "--misra-report") == 0) {
            st->misra_report = value;
        } else if (strcmp(arg, "--restrict") == 0) {
            st->restrict_pointers = true;
            takes_value = false;
        } else if (strcmp(arg, "--size") == 0) {
            st->size = true;
            takes_value = false;
        } else if (strcmp(arg, "--index-bits") == 0) {
            if (!parse_int(value, 32, 64, &st->index_bits) ||
                (st->index_bits != 32 && st->index_bits != 64))
                return usage_error_at(cmd, "--index-bits takes 32 or 64, not '%s'", value);
        } else {
            return usage_error_at(cmd, "unknown option '%s'", arg);
        }
        if (takes_value)
            i++;
    }
    if (single && !single->expr)
        return usage_error("-i %s comes before any kernel (-k NAME=EXPR or EXPR)",
                           early_operand);
    if (single) {
        if (!st->single_name)
            return usage_error("%s", "a lone EXPR needs --name NAME for its function");
        single->name = st->single_name;
    } else if (st->single_name) {
        return usage_error("%s", "--name is for a lone EXPR; -k NAME=EXPR names its kernel");
    }
    if (st->kernel_count == 0)
        return usage_error("%s", "no kernel given: add -k NAME=EXPR -i NAME=DTYPE[SHAPE] ...");
    if (!st->output_path)
        return usage_error("%s", "no output: add -o FILE.c");
    int names_status = check_file_names(st->output_path, st->header_path);
    if (names_status >= 0)
        return names_status;
    if (st->misra_report) {
        /* quoted in the pair's comments like the pair's own names */
        char why[200];
        if (file_name_problem(st->misra_report, why, sizeof why)) {
            fprintf(stderr, "bcgen aot: --misra-report '%s': %s; rename it\n"
                            "(see bcgen aot --help)\n", st->misra_report, why);
            return 2;
        }
        if (same_file(st->misra_report, st->output_path) ||
            (st->header_path && same_file(st->misra_report, st->header_path)))
            return usage_error("--misra-report '%s' is a file of the pair; give the record "
                               "a name of its own (kernels.misra.md)", st->misra_report);
    }
    for (int u = 0; u < st->named_unroll_count; u++) {
        const char *text = st->named_unroll[u], *eq = strchr(text, '=');
        cli_kernel *named = NULL;
        for (int j = 0; j < st->kernel_count; j++)
            if (strlen(st->kernels[j].name) == (size_t)(eq - text) &&
                strncmp(st->kernels[j].name, text, (size_t)(eq - text)) == 0)
                named = &st->kernels[j];
        if (!named)
            return usage_error_at(place(st, st->named_unroll_arg[u]),
                                  "--unroll %s names no kernel of the pair", text);
        bcg_options_init(&named->unroll);
        named->unroll.unroll_limit = AOT_DEFAULT_UNROLL_LIMIT;
        parse_unroll(eq + 1, &named->unroll);
        named->unroll_given = true;
    }
    for (int j = 0; j < st->kernel_count; j++) {
        cli_kernel *k = &st->kernels[j];
        const bcg_options *unroll = k->unroll_given ? &k->unroll : &st->unroll;
        k->options.unroll_limit = unroll->unroll_limit;
        k->options.unroll_factor = unroll->unroll_factor;
        k->math_double = st->math_double;
        int status = finish_kernel(st, k);
        if (status >= 0)
            return status;
    }
    return -1;
}

/* ---- --spec FILE ------------------------------------------------------------------ */

#define SPEC_MAX_BYTES (1 << 20)

/* Reads PATH whole (at most SPEC_MAX_BYTES) into *TEXT, NUL-terminated;
 * false after saying on stderr which file and why. */
static bool read_spec(const char *path, char **text, size_t *length)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bcgen aot: --spec %s: cannot read it: %s\n", path, strerror(errno));
        return false;
    }
    char *buffer = malloc(SPEC_MAX_BYTES + 1);
    size_t n = buffer ? fread(buffer, 1, SPEC_MAX_BYTES + 1, f) : 0;
    bool error = !buffer || ferror(f);
    fclose(f);
    if (error || n > SPEC_MAX_BYTES) {
        fprintf(stderr, "bcgen aot: --spec %s: %s\n", path,
                !buffer ? "out of memory"
                : n > SPEC_MAX_BYTES ? "the file is larger than 1 MiB"
                                     : "cannot read it");
        free(buffer);
        return false;
    }
    buffer[n] = 0;
    if (memchr(buffer, 0, n)) {
        fprintf(stderr, "bcgen aot: --spec %s: the file holds a NUL byte (a spec file is text)\n",
                path);
        free(buffer);
        return false;
    }
    *text = buffer;
    *length = n;
    return true;
}

/* The command line with --spec FILE replaced by the words FILE stands for:
 * argv[0], the spec's words, then the other arguments, which may only be
 * -o, --header and --size (the kernels and their options are the file's).
 * Fills MERGED (argc words) and the place arrays; -1 to go on, else the
 * exit status. */
typedef struct merged_args {
    int argc;
    char **argv;
    int *line, *column, *expr_column;
    const char *spec_path, *output_path, *header_path, *misra_report;
    cli_spec spec;
} merged_args;

static int merge_spec(int argc, char **argv, merged_args *m)
{
    memset(m, 0, sizeof *m);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--spec") == 0 || strcmp(arg, "-o") == 0 ||
            strcmp(arg, "--header") == 0 || strcmp(arg, "--misra-report") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", arg);
            const char **slot = arg[2] == 's' ? &m->spec_path
                                : arg[2] == 'm' ? &m->misra_report
                                : arg[1] == 'o' ? &m->output_path : &m->header_path;
            if (*slot)
                return usage_error("%s is given twice", arg);
            *slot = argv[++i];
        } else if (strcmp(arg, "--size") != 0) {
            return usage_error("with --spec, the kernels and their options are in the spec "
                               "file: the command line takes only -o, --header, --misra-report and --size, "
                               "not '%s'", arg);
        }
    }
    char *text, why[200];
    size_t length;
    if (m->spec_path && file_name_problem(base_name(m->spec_path), why, sizeof why)) {
        fprintf(stderr, "bcgen aot: --spec '%s': %s; rename it\n(see bcgen aot --help)\n",
                m->spec_path, why);
        return 2;
    }
    if (!m->spec_path)
        return usage_error("%s", "--spec needs a value");
    if (!read_spec(m->spec_path, &text, &length))
        return 2;
    char error[600];
    bool ok = cli_spec_parse(m->spec_path, text, length, &m->spec, error, sizeof error);
    free(text);
    if (!ok) {
        fprintf(stderr, "bcgen aot: %s\n(see docs/spec.md, or bcgen aot --help)\n", error);
        return 2;
    }
    size_t words = (size_t)argc + (size_t)m->spec.argc + 1;
    m->argv = calloc(words, sizeof *m->argv);
    m->line = calloc(words, sizeof *m->line);
    m->column = calloc(words, sizeof *m->column);
    m->expr_column = calloc(words, sizeof *m->expr_column);
    if (!m->argv || !m->line || !m->column || !m->expr_column) {
        fprintf(stderr, "bcgen aot: out of memory\n");
        return 1;
    }
    m->argv[m->argc++] = argv[0];
    for (int i = 0; i < m->spec.argc; i++) {
        m->line[m->argc] = m->spec.line[i];
        m->column[m->argc] = m->spec.column[i];
        m->expr_column[m->argc] = m->spec.expr_column[i];
        m->argv[m->argc++] = m->spec.argv[i];
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--spec") == 0) {
            i++;
            continue;
        }
        m->argv[m->argc++] = argv[i];
    }
    return -1;
}

static void free_merged(merged_args *m)
{
    cli_spec_free(&m->spec);
    free(m->argv);
    free(m->line);
    free(m->column);
    free(m->expr_column);
}

/* With --spec the header records a command that holds no directory: the
 * same spec gives the same bytes wherever it and the build tree are. */
static void spec_command(strbuf *command, const merged_args *m, const char *header_path)
{
    sb_puts(command, "bcgen aot --spec ");
    put_shell_word(command, base_name(m->spec_path));
    sb_puts(command, " -o ");
    put_shell_word(command, base_name(m->output_path));
    if (m->header_path) {
        sb_puts(command, " --header ");
        put_shell_word(command, base_name(header_path));
    }
    if (m->misra_report) {
        sb_puts(command, " --misra-report ");
        put_shell_word(command, base_name(m->misra_report));
    }
}

int cli_aot(int argc, char **argv)
{
    cli_state st;
    memset(&st, 0, sizeof st);
    bcg_options_init(&st.defaults);
    bcg_options_init(&st.unroll);
    st.unroll.unroll_limit = AOT_DEFAULT_UNROLL_LIMIT;
    st.index_bits = 32;
    st.kernels = malloc(sizeof *st.kernels * MAX_KERNELS);
    aot_kernel *kernels = malloc(sizeof *kernels * MAX_KERNELS);
    bcg_operand (*views)[BCG_MAX_OPERANDS] = malloc(sizeof *views * MAX_KERNELS);
    char *header_path = NULL, *source = NULL, *header = NULL;
    strbuf command, record;
    sb_init(&command);
    sb_init(&record);
    int status = 1;
    merged_args merged;
    memset(&merged, 0, sizeof merged);
    bool with_spec = false;
    if (!st.kernels || !kernels || !views) {
        fprintf(stderr, "bcgen aot: out of memory\n");
        goto done;
    }
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (cli_is_help(argv[i]))
            break;
        if (strcmp(argv[i], "--spec") == 0)
            with_spec = true;
    }
    if (with_spec) {
        if ((status = merge_spec(argc, argv, &merged)) >= 0)
            goto done;
        st.spec_file = merged.spec_path;
        st.arg_line = merged.line;
        st.arg_column = merged.column;
        st.arg_expr_column = merged.expr_column;
        if ((status = parse(&st, merged.argc, merged.argv)) >= 0)
            goto done;
    } else if ((status = parse(&st, argc, argv)) >= 0) {
        goto done;
    }
    status = 1;

    size_t n = strlen(st.output_path);
    if (st.header_path) {
        header_path = strdup(st.header_path);
    } else if ((header_path = malloc(n + 3))) {
        memcpy(header_path, st.output_path, n + 1);
        if (n > 2 && strcmp(header_path + n - 2, ".c") == 0)
            header_path[n - 1] = 'h';
        else
            strcat(header_path, ".h");
    }
    if (with_spec) {
        spec_command(&command, &merged, header_path ? header_path : "");
    } else {
        sb_puts(&command, "bcgen aot");
        for (int i = 1; i < argc; i++) {
            sb_putc(&command, ' ');
            put_shell_word(&command, argv[i]);
        }
    }
    if (!header_path || command.failed) {
        fprintf(stderr, "bcgen aot: out of memory\n");
        goto done;
    }
    for (int j = 0; j < st.kernel_count; j++) {
        cli_kernel *k = &st.kernels[j];
        cli_operand_views(k->operand_count, k->operands, views[j]);
        kernels[j] = (aot_kernel){
            .name = k->name,
            .expression = k->expr,
            .operands = views[j],
            .operand_count = k->operand_count,
            .options = k->options,
            .math_double = k->math_double,
        };
    }
    aot_request request = {
        .kernel_count = st.kernel_count,
        .kernels = kernels,
        .restrict_pointers = st.restrict_pointers,
        .index_bits = st.index_bits,
        .command = command.data,
        .source_name = base_name(st.output_path),
        .header_name = base_name(header_path),
    };
    bcg_error err;
    error_clear(&err);
    if (aot_generate(&request, &source, &header, &err) != BCG_OK) {
        const char *expr = NULL, *cmd = "aot";
        /* errors about a kernel's name ("'round' is a name from <math.h>",
         * "the kernel x and operand x ... would both be named x") are at
         * its line in a spec file */
        for (int j = 0; j < st.kernel_count && st.spec_file; j++) {
            char quoted[BCG_MAX_NAME + 8], kernel[BCG_MAX_NAME + 16];
            snprintf(quoted, sizeof quoted, "'%s' ", st.kernels[j].name);
            snprintf(kernel, sizeof kernel, "kernel %s ", st.kernels[j].name);
            if (strncmp(err.message, quoted, strlen(quoted)) == 0 || strstr(err.message, kernel))
                cmd = place(&st, st.kernels[j].arg_index);
        }
        for (int j = 0; j < st.kernel_count; j++)
            if (strncmp(err.message, "kernel ", 7) == 0 &&
                strncmp(err.message + 7, st.kernels[j].name, strlen(st.kernels[j].name)) == 0 &&
                err.message[7 + strlen(st.kernels[j].name)] == ':') {
                expr = st.kernels[j].expr;
                /* in a spec file: the kernel's line, at the error's column
                 * within the expression when it has one */
                int at = st.kernels[j].arg_index;
                if (st.spec_file && err.column > 0 && st.arg_expr_column[at] > 0)
                    cmd = place_at(&st, at, st.arg_expr_column[at] - st.arg_column[at] +
                                                err.column - 1);
                else
                    cmd = place(&st, at);
            }
        status = cli_report(cmd, expr, &err);
        goto done;
    }
    if (st.misra_report &&
        !misra_record(&record, base_name(st.output_path), base_name(header_path), source,
                      header)) {
        fprintf(stderr, "bcgen aot: out of memory\n");
        goto done;
    }
    if (!write_pair(st.output_path, source, header_path, header, st.misra_report,
                    st.misra_report ? record.data : NULL))
        goto done;
    status = 0;
    if (st.size) {
        char *dir = strdup(header_path);
        if (!dir) {
            status = 1;
            goto done;
        }
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        status = report_size(st.output_path, slash ? dir : ".", st.kernels, st.kernel_count);
        free(dir);
    }
done:
    free_merged(&merged);
    mem_free(source);
    mem_free(header);
    free(header_path);
    sb_free(&command);
    sb_free(&record);
    free(views);
    free(kernels);
    for (int j = 0; st.kernels && j < st.kernel_count; j++)
        free_keyed(&st.kernels[j]);
    free(st.kernels);
    return status;
}
