/* cli_spec.c - the spec file of `bcgen aot --spec FILE` (docs/spec.md):
 * the kernels of a pair, their operands and options, one directive a line,
 * read into the command line those directives stand for, each word with
 * the line and column it came from, so that every later error (a bad
 * dtype, a broadcast error, a name clash) can name FILE:LINE:COLUMN.
 *
 *   # comment                     bcgen-spec 1        (first directive)
 *   kernel NAME = EXPR            -k NAME=EXPR
 *   input NAME = DTYPE[SHAPE]     -i NAME=DTYPE[SHAPE]
 *   unroll MODE                   --unroll MODE, or --unroll NAME=MODE in a kernel
 *   inplace, axis, strict-rank, out-strides, out-dtype, reduce, out-shape, to
 *                                 the option of the same name (a kernel's)
 *   math, restrict, index-bits    the pair's options (before the first kernel)
 *
 * The parser only splits and places words; the values are checked by
 * cli_aot.c's option parser, the one the command line goes through, so a
 * spec means exactly what its command line would. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Where a directive may stand: before the first kernel (the pair's),
 * inside a kernel, or either (before: for every kernel). */
typedef enum spec_scope { SCOPE_PAIR, SCOPE_KERNEL, SCOPE_EITHER } spec_scope;

typedef enum spec_form {
    FORM_FLAG,       /* no argument */
    FORM_VALUE,      /* one argument: the rest of the line */
    FORM_NAMED,      /* NAME = TEXT */
} spec_form;

static const struct directive {
    const char *word;
    const char *option;
    spec_form form;
    spec_scope scope;
} directives[] = {
    {"kernel", "-k", FORM_NAMED, SCOPE_EITHER},
    {"input", "-i", FORM_NAMED, SCOPE_KERNEL},
    {"inplace", "--inplace", FORM_VALUE, SCOPE_KERNEL},
    {"axis", "--axis", FORM_VALUE, SCOPE_EITHER},
    {"strict-rank", "--strict-rank", FORM_FLAG, SCOPE_EITHER},
    {"out-strides", "--out-strides", FORM_VALUE, SCOPE_KERNEL},
    {"out-dtype", "--out-dtype", FORM_VALUE, SCOPE_KERNEL},
    {"reduce", "--reduce", FORM_VALUE, SCOPE_KERNEL},
    {"out-shape", "--out-shape", FORM_VALUE, SCOPE_KERNEL},
    {"to", "--to", FORM_VALUE, SCOPE_KERNEL},
    {"unroll", "--unroll", FORM_VALUE, SCOPE_EITHER},
    {"math", "--math", FORM_VALUE, SCOPE_PAIR},
    {"restrict", "--restrict", FORM_FLAG, SCOPE_PAIR},
    {"index-bits", "--index-bits", FORM_VALUE, SCOPE_PAIR},
};

#define SPEC_VERSION 1
#define SPEC_VERSION_WORD "bcgen-spec"

typedef struct spec_parser {
    const char *file;
    cli_spec *spec;
    char *error;
    size_t error_cap;
    int capacity;
} spec_parser;

static bool failed_at(spec_parser *p, int line, int column, const char *fmt, const char *arg)
{
    int n = snprintf(p->error, p->error_cap, "%s:%d:%d: ", p->file, line, column);
    if (n >= 0 && (size_t)n < p->error_cap)
        snprintf(p->error + n, p->error_cap - (size_t)n, fmt, arg);
    return false;
}

/* Appends a word (a copy of LENGTH bytes of TEXT) placed at LINE:COLUMN. */
static bool add_word(spec_parser *p, const char *text, size_t length, int line, int column,
                     int expr_column)
{
    cli_spec *s = p->spec;
    if (s->argc == p->capacity) {
        int capacity = p->capacity ? 2 * p->capacity : 16;
        char **argv = realloc(s->argv, sizeof *argv * ((size_t)capacity + 1));
        if (argv)
            s->argv = argv;
        int *lines = realloc(s->line, sizeof *lines * (size_t)capacity);
        if (lines)
            s->line = lines;
        int *columns = realloc(s->column, sizeof *columns * (size_t)capacity);
        if (columns)
            s->column = columns;
        int *exprs = realloc(s->expr_column, sizeof *exprs * (size_t)capacity);
        if (exprs)
            s->expr_column = exprs;
        if (!argv || !lines || !columns || !exprs)
            return failed_at(p, line, column, "%s", "out of memory");
        p->capacity = capacity;
    }
    char *copy = malloc(length + 1);
    if (!copy)
        return failed_at(p, line, column, "%s", "out of memory");
    memcpy(copy, text, length);
    copy[length] = 0;
    s->argv[s->argc] = copy;
    s->line[s->argc] = line;
    s->column[s->argc] = column;
    s->expr_column[s->argc] = expr_column;
    s->argc++;
    s->argv[s->argc] = NULL;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* One directive: TEXT[0, LENGTH) without its comment and trailing blanks,
 * its first character at column COLUMN.  *KERNEL_NAME is the current
 * kernel's name (NULL before the first), updated by `kernel`. */
static bool parse_directive(spec_parser *p, const char *text, size_t length, int line,
                            int column, bool *versioned, char *kernel_name)
{
    size_t i = 0;
    while (i < length && !is_space(text[i]))
        i++;
    size_t word_length = i;
    while (i < length && is_space(text[i]))
        i++;
    const char *rest = text + i;
    size_t rest_length = length - i;
    int rest_column = column + (int)i;
    char word[32];
    snprintf(word, sizeof word, "%.*s", (int)(word_length < 31 ? word_length : 31), text);

    if (!*versioned) {
        if (word_length != strlen(SPEC_VERSION_WORD) ||
            strncmp(text, SPEC_VERSION_WORD, word_length) != 0)
            return failed_at(p, line, column,
                             "the first directive must be '" SPEC_VERSION_WORD " 1' (the "
                             "format's version), not '%s'", word);
        if (rest_length != 1 || rest[0] != '0' + SPEC_VERSION) {
            char asked[32];
            snprintf(asked, sizeof asked, "%.*s", (int)(rest_length < 31 ? rest_length : 31),
                     rest);
            return failed_at(p, line, rest_column,
                             "this bcgen reads spec version 1; the file asks for '%s'",
                             rest_length ? asked : "(nothing)");
        }
        *versioned = true;
        return true;
    }
    const struct directive *d = NULL;
    for (size_t k = 0; k < sizeof directives / sizeof directives[0]; k++)
        if (strlen(directives[k].word) == word_length &&
            strncmp(directives[k].word, text, word_length) == 0)
            d = &directives[k];
    if (!d) {
        if (word_length == strlen(SPEC_VERSION_WORD) &&
            strncmp(text, SPEC_VERSION_WORD, word_length) == 0)
            return failed_at(p, line, column, "%s", "'" SPEC_VERSION_WORD "' comes once, first");
        return failed_at(p, line, column,
                         "unknown directive '%s' (kernel, input, inplace, axis, strict-rank, "
                         "out-strides, out-dtype, reduce, out-shape, to, unroll, math, "
                         "restrict, index-bits)", word);
    }
    bool in_kernel = kernel_name[0] != 0;
    if (d->scope == SCOPE_KERNEL && !in_kernel)
        return failed_at(p, line, column, "'%s' comes before any kernel (it belongs to a "
                         "kernel: put it after a 'kernel NAME = EXPR' line)", d->word);
    if (d->scope == SCOPE_PAIR && in_kernel)
        return failed_at(p, line, column, "'%s' is an option of the whole pair: put it before "
                         "the first kernel", d->word);
    if (d->form == FORM_FLAG) {
        if (rest_length)
            return failed_at(p, line, rest_column, "'%s' takes no argument", d->word);
        return add_word(p, d->option, strlen(d->option), line, column, 0);
    }
    if (!rest_length)
        return failed_at(p, line, column, "'%s' needs an argument", d->word);
    if (d->form == FORM_VALUE) {
        if (strcmp(d->word, "unroll") == 0 && in_kernel) {
            /* a kernel's own unrolling: --unroll NAME=MODE */
            char value[BCG_MAX_NAME + 64];
            int n = snprintf(value, sizeof value, "%s=%.*s", kernel_name, (int)rest_length, rest);
            if (n < 0 || (size_t)n >= sizeof value)
                return failed_at(p, line, rest_column, "%s", "the unroll mode is too long");
            return add_word(p, d->option, strlen(d->option), line, column, 0) &&
                   add_word(p, value, (size_t)n, line, rest_column, 0);
        }
        return add_word(p, d->option, strlen(d->option), line, column, 0) &&
               add_word(p, rest, rest_length, line, rest_column, 0);
    }
    /* NAME = TEXT */
    size_t name_length = 0;
    while (name_length < rest_length && is_name_char(rest[name_length]))
        name_length++;
    size_t at = name_length;
    while (at < rest_length && is_space(rest[at]))
        at++;
    if (name_length == 0 || !name_is_valid(rest, name_length) || name_length > BCG_MAX_NAME)
        return failed_at(p, line, rest_column, "'%s' takes NAME = ..., with NAME a C identifier "
                         "of at most 64 characters", d->word);
    if (at >= rest_length || rest[at] != '=')
        return failed_at(p, line, rest_column + (int)at, "expected '=' after the name in '%s "
                         "NAME = ...'", d->word);
    at++;
    while (at < rest_length && is_space(rest[at]))
        at++;
    if (at >= rest_length)
        return failed_at(p, line, rest_column + (int)at, "'%s NAME =' needs what follows the "
                         "'='", d->word);
    int value_column = rest_column + (int)at;
    size_t joined_length = name_length + 1 + (rest_length - at);
    char *joined = malloc(joined_length + 1);
    if (!joined)
        return failed_at(p, line, column, "%s", "out of memory");
    memcpy(joined, rest, name_length);
    joined[name_length] = '=';
    memcpy(joined + name_length + 1, rest + at, rest_length - at);
    bool ok = add_word(p, d->option, strlen(d->option), line, column, 0) &&
              add_word(p, joined, joined_length, line, rest_column,
                       strcmp(d->word, "kernel") == 0 ? value_column : 0);
    free(joined);
    if (ok && strcmp(d->word, "kernel") == 0) {
        memcpy(kernel_name, rest, name_length);
        kernel_name[name_length] = 0;
    }
    return ok;
}

bool cli_spec_parse(const char *file, const char *text, size_t length, cli_spec *spec,
                    char *error, size_t error_cap)
{
    memset(spec, 0, sizeof *spec);
    spec_parser p = {file, spec, error, error_cap, 0};
    if (error_cap)
        error[0] = 0;
    bool versioned = false;
    char kernel_name[BCG_MAX_NAME + 1] = "";
    int line = 1;
    size_t start = 0;
    bool ok = true;
    while (ok && start < length) {
        size_t end = start;
        while (end < length && text[end] != '\n')
            end++;
        /* the line's bytes: printable ASCII and tabs up to a comment
         * ('#' to the end of the line), which may hold any byte but NUL */
        size_t stop = end;
        for (size_t i = start; i < end; i++) {
            unsigned char c = (unsigned char)text[i];
            if (c == '\r' && i + 1 == end)
                break;
            if (c == '#') {
                stop = i;
                break;
            }
            if ((c < 0x20 && c != '\t') || c > 0x7e) {
                char shown[8];
                snprintf(shown, sizeof shown, "0x%02x", c);
                ok = failed_at(&p, line, (int)(i - start) + 1,
                               "the byte %s: directives are printable ASCII (only "
                               "comments may hold other bytes)",
                               shown);
                break;
            }
        }
        if (!ok)
            break;
        if (stop == end && stop > start && text[stop - 1] == '\r')
            stop--;
        size_t first = start;
        while (first < stop && is_space(text[first]))
            first++;
        while (stop > first && is_space(text[stop - 1]))
            stop--;
        if (first < stop)
            ok = parse_directive(&p, text + first, stop - first, line, (int)(first - start) + 1,
                                 &versioned, kernel_name);
        start = end + 1;
        line++;
    }
    if (ok && !versioned)
        ok = failed_at(&p, line > 1 ? line - 1 : 1, 1, "%s",
                       "the file holds no directive: it starts with '" SPEC_VERSION_WORD " 1'");
    if (ok && !kernel_name[0])
        ok = failed_at(&p, line > 1 ? line - 1 : 1, 1, "%s",
                       "the file defines no kernel ('kernel NAME = EXPR', then its inputs)");
    if (!ok)
        cli_spec_free(spec);
    return ok;
}

void cli_spec_free(cli_spec *spec)
{
    for (int i = 0; i < spec->argc; i++)
        free(spec->argv[i]);
    free(spec->argv);
    free(spec->line);
    free(spec->column);
    free(spec->expr_column);
    memset(spec, 0, sizeof *spec);
}
