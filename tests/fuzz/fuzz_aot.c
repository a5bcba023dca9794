/* fuzz_aot.c - the ahead-of-time generator (gen/aot.c, `bcgen aot`): the
 * input chooses up to three kernels (operands with dtypes, shapes and
 * strides; in place, unrolling, --math double), --restrict, the index
 * width, and every text the user gives: kernel names, expressions, operand
 * names, the recorded command and both file names.  Compiling each .c/.h
 * pair would be too slow for a fuzzer, so a pair that is generated must
 * instead keep the invariants that make it safe to compile:
 *
 *   - both files are printable ASCII lines, every comment is closed, and
 *     outside comments there is no string or character literal except
 *     `#include "HEADER"` (the sanitised header name) and `extern "C"`;
 *   - braces, brackets and parentheses balance, and so do #if / #endif;
 *   - no user text outside identifiers: every identifier in the code is
 *     a word of the built-in templates, a name the generator makes (bcg_*,
 *     BCGEN_*, in0_pos, i1, literal2, libm functions), a kernel or operand
 *     name given, or a size macro made from them;
 *   - each kernel is declared in the header and defined in the source with
 *     the same parameters: `out` first unless the kernel is in place, then
 *     the operands in order, only the output not const, each a name
 *     emit_aot_name_problem accepts, restrict exactly with --restrict;
 *
 * and a failure must be a status with a message and no output.  Nothing
 * may crash or leak (mem_live, and LeakSanitizer).
 *
 * Input layout:
 *   byte 0     bits 0-1 kernel count - 1 (mod 3), 2 --restrict, 3 64-bit index
 *   per kernel 1 byte: bits 0-1 operand count - 1 (mod 3), 2-3 in place into
 *              operand (value - 1), 4-5 unrolling (default, full up to 64
 *              elements, none, factor 2), 6 --math double, 7 long sizes;
 *              then 3 bytes per operand: dtype; rank (bits 0-1) and a 2-bit
 *              size code per dimension (0..3, or long: 1, 5, 1000, 2^20);
 *              strides, a 2-bit code per dimension (the C-contiguous stride
 *              times 1, -1, 0, 2; a 0 byte is C-contiguous)
 *   the rest   text fields separated by '\n': per kernel its name, its
 *              expression and its operand names, then the command, the
 *              source's and the header's names.  An empty or missing field
 *              takes a default (k0, "a + 1", a b c, "bcgen aot", k.c, k.h). */
#include "aot.h"
#include "internal.h"

#include <ctype.h>
#include <stdio.h>

#include "fuzz.h"

#define MAX_KERNELS 3
#define MAX_FIELDS (MAX_KERNELS * 5 + 3)

/* ---- the vocabulary: identifiers the generator may write -------------------------- */

#define MAX_WORDS 2048
static char *words[MAX_WORDS];
static int word_count;

static void add_word(const char *s, size_t n)
{
    for (int i = 0; i < word_count; i++)
        if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0)
            return;
    FUZZ_CHECK(word_count < MAX_WORDS);
    words[word_count++] = fuzz_string((const uint8_t *)s, n);
}

/* Every identifier of TEXT's C code: template directives ({{...}}) and
 * comments (template and C) are left out, so their English is not allowed. */
static void add_template_words(const char *text)
{
    const char *at = text;
    while (*at) {
        if (at[0] == '{' && at[1] == '{') {
            const char *end = strstr(at, "}}");
            at = end ? end + 2 : at + strlen(at);
        } else if (at[0] == '/' && at[1] == '*') {
            const char *end = strstr(at + 2, "*/");
            at = end ? end + 2 : at + strlen(at);
        } else if (isalpha((unsigned char)*at) || *at == '_') {
            const char *start = at;
            while (isalnum((unsigned char)*at) || *at == '_')
                at++;
            add_word(start, (size_t)(at - start));
        } else {
            at++;
        }
    }
}

static void load_vocabulary(void)
{
    if (word_count)
        return;
    static const char *const templates[] = {"aot.c.tmpl", "aot.h.tmpl", "kernel.c.tmpl",
                                            "ops.c.tmpl"};
    for (size_t i = 0; i < sizeof templates / sizeof *templates; i++) {
        const char *text = tmpl_builtin(templates[i]);
        FUZZ_CHECK(text != NULL);
        add_template_words(text);
    }
    /* the C that emit.c writes around the templates */
    static const char *const c_words[] = {"out", "out_pos", "ptrdiff_t", "long", "int", "unsigned", "const",
                                          "restrict", "void", "for", "if", "else", "return",
                                          "float", "double", "static", "sizeof", "char",
                                          "true", "false"}; /* bool literals (MISRA printer) */
    for (size_t i = 0; i < sizeof c_words / sizeof *c_words; i++)
        add_word(c_words[i], strlen(c_words[i]));
    /* the C library's functions: the ones emit.c's operators write beside
     * their own, and every row's of the operator table (trunc, rint, ...:
     * a hand list without them failed on truncf, the generator's own) */
    static const char *const math[] = {"sqrt", "exp", "log", "sin", "cos", "tanh",
                                       "floor", "ceil", "fabs", "fmod", "pow", "copysign"};
    char name[32];
    for (size_t i = 0; i < sizeof math / sizeof *math; i++) {
        add_word(math[i], strlen(math[i]));
        snprintf(name, sizeof name, "%sf", math[i]);
        add_word(name, strlen(name));
    }
    for (int op = 0; op < OP_COUNT; op++) {
        const char *m = op_table[op].math;
        if (!m)
            continue;
        add_word(m, strlen(m));
        snprintf(name, sizeof name, "%sf", m);
        add_word(name, strlen(name));
    }
}

static bool in_vocabulary(const char *s, size_t n)
{
    for (int i = 0; i < word_count; i++)
        if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0)
            return true;
    return false;
}

/* Names emit.c numbers: i0, i0_block, i0_count, in0, in0_pos, in0_value,
 * literal0, shared0, tile0, tile_literal0. */
static bool is_numbered_local(const char *s, size_t n)
{
    static const char *const stems[] = {"tile_literal", "literal", "shared", "tile", "in", "i",
                                        "element"}; /* (element<n>: a fused program's) */
    for (size_t k = 0; k < sizeof stems / sizeof *stems; k++) {
        size_t stem = strlen(stems[k]);
        if (n <= stem || memcmp(s, stems[k], stem) != 0 || !isdigit((unsigned char)s[stem]))
            continue;
        size_t at = stem;
        while (at < n && isdigit((unsigned char)s[at]))
            at++;
        if (at == n)
            return true;
        static const char *const suffixes[] = {"_pos", "_value", "_block", "_count"};
        for (size_t j = 0; j < sizeof suffixes / sizeof *suffixes; j++)
            if (n - at == strlen(suffixes[j]) && memcmp(s + at, suffixes[j], n - at) == 0)
                return true;
    }
    return false;
}

/* ---- one request --------------------------------------------------------------------- */

/* The functions of the pair: each kernel of the request, or for a kernel
 * whose expression is a program of statements, its statements' kernels
 * NAME_<statement> and the wrapper NAME, whose parameters are the outputs
 * (named as the statements) and then the operands. */
#define MAX_NAMED (MAX_KERNELS * (BCG_MAX_OUTPUTS + 1))
typedef struct request_names {
    int kernel_count;
    const char *kernel[MAX_NAMED];
    int operand_count[MAX_NAMED];
    const char *operand[MAX_NAMED][3];
    const bcg_operand *ops[MAX_NAMED];
    int inplace[MAX_NAMED];
    int output_count[MAX_NAMED];          /* > 0: a program's wrapper */
    const char *outputs[MAX_NAMED][BCG_MAX_OUTPUTS];
} request_names;

static bool equal_upper(const char *upper, size_t n, const char *name)
{
    size_t length = strlen(name);
    if (length != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (upper[i] != toupper((unsigned char)name[i]))
            return false;
    return true;
}

/* KERNEL_OPERAND_RANK and the other size macros of the header. */
static bool is_size_macro(const request_names *r, const char *s, size_t n)
{
    static const char *const kinds[] = {"_RANK", "_SHAPE", "_STRIDES", "_ELEMENTS", "_BYTES",
                                        "_TYPE", "_OFFSET", "_ALIGN"};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        size_t kind = strlen(kinds[k]);
        if (n <= kind || memcmp(s + n - kind, kinds[k], kind) != 0)
            continue;
        size_t prefix = n - kind;
        for (int i = 0; i < r->kernel_count; i++) {
            size_t name = strlen(r->kernel[i]);
            if (prefix <= name + 1 || s[name] != '_' || !equal_upper(s, name, r->kernel[i]))
                continue;
            const char *rest = s + name + 1;
            size_t rest_length = prefix - name - 1;
            if (equal_upper(rest, rest_length, "out"))
                return true;
            for (int j = 0; j < r->operand_count[i]; j++)
                if (equal_upper(rest, rest_length, r->operand[i][j]))
                    return true;
        }
    }
    return false;
}

static bool is_user_name(const request_names *r, const char *s, size_t n)
{
    for (int i = 0; i < r->kernel_count; i++) {
        if (strlen(r->kernel[i]) == n && memcmp(r->kernel[i], s, n) == 0)
            return true;
        for (int j = 0; j < r->output_count[i]; j++)
            if (strlen(r->outputs[i][j]) == n && memcmp(r->outputs[i][j], s, n) == 0)
                return true;
        for (int j = 0; j < r->operand_count[i]; j++)
            if (strlen(r->operand[i][j]) == n && memcmp(r->operand[i][j], s, n) == 0)
                return true;
    }
    return false;
}

/* A program's fused function NAME_fused, its size macros NAME_FUSED_..._KIND
 * (of its output, operands and other outputs) and the other reductions'
 * accumulators acc<j> (with _c, _i, _l, _t, _x). */
static bool is_fused_name(const request_names *r, const char *s, size_t n)
{
    size_t at = 3;
    if (n > 3 && memcmp(s, "acc", 3) == 0 && isdigit((unsigned char)s[3])) {
        while (at < n && isdigit((unsigned char)s[at]))
            at++;
        return at == n || (n - at == 2 && s[at] == '_' && strchr("cilxt", s[at + 1]));
    }
    for (int i = 0; i < r->kernel_count; i++) {
        size_t name = strlen(r->kernel[i]);
        if (n < name + 6)
            continue;
        if (n == name + 6 && memcmp(s, r->kernel[i], name) == 0 &&
            memcmp(s + name, "_fused", 6) == 0)
            return true;
        /* NAME_FUSED_<operand or output>_<kind> (not checked further) */
        if (n > name + 7 && equal_upper(s, name, r->kernel[i]) &&
            memcmp(s + name, "_FUSED_", 7) == 0)
            return true;
    }
    return false;
}

static bool identifier_allowed(const request_names *r, const char *s, size_t n)
{
    if ((n > 4 && memcmp(s, "bcg_", 4) == 0) || (n > 6 && memcmp(s, "BCGEN_", 6) == 0))
        return true;
    return in_vocabulary(s, n) || is_numbered_local(s, n) || is_user_name(r, s, n) ||
           is_size_macro(r, s, n) || is_fused_name(r, s, n);
}

/* The checks on the code of one file (see the top).  INCLUDE_NAME: the
 * header name the source may include, NULL for the header. */
static void check_file(const char *text, const request_names *r, const char *include_name)
{
    int depth[3] = {0, 0, 0}; /* () [] {} */
    int conditionals = 0;
    bool line_start = true;
    for (const char *at = text; *at;) {
        unsigned char c = (unsigned char)*at;
        FUZZ_CHECK(c == '\n' || (c >= 0x20 && c < 0x7f));
        if (at[0] == '/' && at[1] == '*') {
            const char *end = strstr(at + 2, "*/");
            FUZZ_CHECK(end != NULL);
            for (const char *p = at; p < end; p++)
                FUZZ_CHECK(*p == '\n' || (*p >= 0x20 && *p < 0x7f));
            at = end + 2;
            continue;
        }
        FUZZ_CHECK(!(at[0] == '/' && at[1] == '/'));
        if (line_start && c == '#') {
            const char *directive = at + 1;
            while (*directive == ' ')
                directive++;
            if (strncmp(directive, "include \"", 9) == 0) {
                /* the one string literal of the source: the header's name */
                FUZZ_CHECK(include_name != NULL);
                const char *name = directive + 9, *end = strchr(name, '"');
                FUZZ_CHECK(end != NULL && (size_t)(end - name) == strlen(include_name) &&
                           memcmp(name, include_name, strlen(include_name)) == 0);
                FUZZ_CHECK(end[1] == '\n');
                at = end + 2;
                line_start = true;
                continue;
            }
            /* the fixed lines that keep the results IEEE (templates/aot.c.tmpl):
             * their strings are bcgen's own text, never the user's */
            static const char *const fixed_lines[] = {
                "error \"bcgen kernels assume IEEE arithmetic: build this file without "
                "-ffast-math\"\n",
                "pragma GCC optimize (\"fp-contract=off\")\n",
            };
            bool fixed = false;
            for (size_t k = 0; k < sizeof fixed_lines / sizeof fixed_lines[0] && !fixed; k++)
                if (strncmp(directive, fixed_lines[k], strlen(fixed_lines[k])) == 0) {
                    at = directive + strlen(fixed_lines[k]);
                    fixed = true;
                }
            /* the header's version macro: bcgen's version, never user text */
            static const char version_line[] = "define BCGEN_VERSION \"" BCG_VERSION "\"\n";
            if (!fixed && include_name == NULL &&
                strncmp(directive, version_line, strlen(version_line)) == 0) {
                at = directive + strlen(version_line);
                fixed = true;
            }
            if (fixed) {
                line_start = true;
                continue;
            }
            if (strncmp(directive, "include <", 9) == 0) {
                const char *end = strchr(directive, '>');
                FUZZ_CHECK(end != NULL && end[1] == '\n');
                at = end + 2;
                line_start = true;
                continue;
            }
            if (strncmp(directive, "if", 2) == 0)
                conditionals++;
            else if (strncmp(directive, "endif", 5) == 0)
                conditionals--;
            FUZZ_CHECK(conditionals >= 0);
        }
        if (c == '"') {
            FUZZ_CHECK(strncmp(at, "\"C\" {", 5) == 0); /* extern "C" */
            at += 3;
            line_start = false;
            continue;
        }
        FUZZ_CHECK(c != '\'' && c != '\\' && c != '`' && c != '$' && c != '@');
        if (isalpha(c) || c == '_') {
            const char *start = at;
            while (isalnum((unsigned char)*at) || *at == '_')
                at++;
            if (!identifier_allowed(r, start, (size_t)(at - start))) {
                fprintf(stderr, "fuzz_aot: identifier '%.*s' is not the generator's\n",
                        (int)(at - start), start);
                FUZZ_CHECK(false);
            }
            line_start = false;
            continue;
        }
        if (isdigit(c)) { /* a number, with its suffixes and hex digits */
            while (isalnum((unsigned char)*at) || *at == '.' ||
                   ((*at == '+' || *at == '-') && (at[-1] == 'e' || at[-1] == 'E' ||
                                                   at[-1] == 'p' || at[-1] == 'P')))
                at++;
            line_start = false;
            continue;
        }
        static const char opening[] = "([{", closing[] = ")]}";
        const char *open = strchr(opening, c), *close = strchr(closing, c);
        if (c && open)
            depth[open - opening]++;
        if (c && close)
            FUZZ_CHECK(--depth[close - closing] >= 0);
        if (c == '\n')
            line_start = true;
        else if (c != ' ')
            line_start = false;
        at++;
    }
    FUZZ_CHECK(depth[0] == 0 && depth[1] == 0 && depth[2] == 0 && conditionals == 0);
}

/* The parameter list of kernel I as the header declares it or the source
 * defines it (both with BCGEN_RESTRICT, which C++ knows too): checks every
 * parameter. */
static void check_parameters(const char *list, const request_names *r, int i,
                             const aot_request *request, bool header)
{
    (void)header;
    const char *restrict_word = "BCGEN_RESTRICT ";
    static const char *const types[] = {"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
                                        "uint16_t", "uint32_t", "uint64_t", "float", "double"};
    int inplace = r->inplace[i];
    int outputs = r->output_count[i] ? r->output_count[i] : inplace < 0 ? 1 : 0;
    int parameter_count = r->operand_count[i] + outputs;
    const char *at = list;
    for (int p = 0; p < parameter_count; p++) {
        /* `out` (unless in place; a program's wrapper: each output, named
         * as its statement), then the operands in order */
        int operand = p - outputs;
        const char *expected = operand >= 0 ? r->operand[i][operand]
                               : r->output_count[i] ? r->outputs[i][p] : "out";
        bool is_output = operand < 0 || operand == inplace;
        /* a rank-0 operand that is only read comes by value: "float bias" */
        bool by_value = !is_output && r->ops[i][operand].rank == 0;
        bool is_const = strncmp(at, "const ", 6) == 0;
        FUZZ_CHECK(is_const == (!is_output && !by_value));
        if (is_const)
            at += 6;
        bool typed = false;
        const char *after_type = by_value ? " " : " *";
        for (size_t t = 0; t < sizeof types / sizeof *types && !typed; t++) {
            size_t n = strlen(types[t]);
            if (strncmp(at, types[t], n) == 0 &&
                strncmp(at + n, after_type, strlen(after_type)) == 0) {
                at += n + strlen(after_type);
                typed = true;
            }
        }
        FUZZ_CHECK(typed);
        bool restricted = strncmp(at, restrict_word, strlen(restrict_word)) == 0;
        FUZZ_CHECK(restricted == (request->restrict_pointers && !by_value));
        if (restricted)
            at += strlen(restrict_word);
        size_t n = strlen(expected);
        FUZZ_CHECK(strncmp(at, expected, n) == 0);
        FUZZ_CHECK(operand < 0 || emit_aot_name_problem(expected, true) == NULL);
        at += n;
        FUZZ_CHECK(p + 1 < parameter_count ? strncmp(at, ", ", 2) == 0 : *at == ')');
        at += 2;
    }
}

static void check_pair(const char *source, const char *header, const request_names *r,
                       const aot_request *request)
{
    check_file(source, r, request->header_name);
    check_file(header, r, NULL);
    char pattern[BCG_MAX_NAME + 16];
    for (int i = 0; i < r->kernel_count; i++) {
        FUZZ_CHECK(emit_aot_name_problem(r->kernel[i], false) == NULL);
        snprintf(pattern, sizeof pattern, "\nvoid %s(", r->kernel[i]);
        const char *declared = strstr(header, pattern), *defined = strstr(source, pattern);
        FUZZ_CHECK(declared && defined);
        check_parameters(declared + strlen(pattern), r, i, request, true);
        check_parameters(defined + strlen(pattern), r, i, request, false);
    }
}

/* ---- the harness --------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 2048)
        return 0;
    load_vocabulary();
    int kernel_count = 1 + (data[0] & 3) % MAX_KERNELS;
    size_t at = 1;
    static const int64_t short_sizes[] = {0, 1, 2, 3};
    static const int64_t long_sizes[] = {1, 5, 1000, (int64_t)1 << 20};
    static const int64_t stride_factors[] = {1, -1, 0, 2};
    aot_kernel kernels[MAX_KERNELS];
    bcg_operand ops[MAX_KERNELS][3];
    int64_t shapes[MAX_KERNELS][3][3], strides[MAX_KERNELS][3][3];
    static request_names names, expanded;
    memset(&names, 0, sizeof names);
    names.kernel_count = kernel_count;
    for (int i = 0; i < kernel_count; i++) {
        if (at >= size)
            return 0;
        uint8_t flags = data[at++];
        int count = 1 + (flags & 3) % 3;
        if (at + 3 * (size_t)count > size)
            return 0;
        memset(&kernels[i], 0, sizeof kernels[i]);
        bcg_options_init(&kernels[i].options);
        int inplace = (flags >> 2) & 3;
        kernels[i].options.inplace = inplace >= 1 && inplace <= count ? inplace - 1 : -1;
        switch ((flags >> 4) & 3) {
        case 1: kernels[i].options.unroll_limit = 64; break;
        case 2: kernels[i].options.unroll_limit = 0; kernels[i].options.unroll_factor = 1; break;
        case 3: kernels[i].options.unroll_factor = 2; break;
        default: break;
        }
        kernels[i].math_double = flags & 0x40;
        const int64_t *sizes = flags & 0x80 ? long_sizes : short_sizes;
        for (int j = 0; j < count; j++) {
            uint8_t t = data[at], r = data[at + 1], codes = data[at + 2];
            at += 3;
            int rank = r & 3;
            for (int d = 0; d < rank; d++)
                shapes[i][j][d] = sizes[(r >> (2 + 2 * d)) & 3];
            ops[i][j] = (bcg_operand){NULL, (bcg_dtype)(t % BCG_DTYPE_COUNT), rank, shapes[i][j],
                                      NULL};
            if (codes) {
                int64_t contiguous = 1;
                for (int d = rank - 1; d >= 0; d--) {
                    strides[i][j][d] = contiguous * stride_factors[(codes >> (2 * d)) & 3];
                    contiguous *= shapes[i][j][d] ? shapes[i][j][d] : 1;
                }
                ops[i][j].strides = strides[i][j];
            }
        }
        kernels[i].operands = ops[i];
        kernels[i].operand_count = count;
        names.operand_count[i] = count;
        names.ops[i] = ops[i];
        names.inplace[i] = kernels[i].options.inplace;
    }

    /* the text fields */
    char *text = fuzz_string(data + at, size - at);
    char *fields[MAX_FIELDS] = {0};
    int field_count = 0;
    for (char *p = text; field_count < MAX_FIELDS;) {
        fields[field_count++] = p;
        char *newline = strchr(p, '\n');
        if (!newline)
            break;
        *newline = 0;
        p = newline + 1;
    }
    int field = 0;
#define NEXT_FIELD(fallback) \
    (field < field_count && fields[field][0] ? fields[field++] : (field++, (fallback)))
    static const char *const kernel_defaults[] = {"k0", "k1", "k2"};
    static const char *const operand_defaults[] = {"a", "b", "c"};
    for (int i = 0; i < kernel_count; i++) {
        kernels[i].name = NEXT_FIELD(kernel_defaults[i]);
        kernels[i].expression = NEXT_FIELD("a + 1");
        names.kernel[i] = kernels[i].name;
        for (int j = 0; j < kernels[i].operand_count; j++) {
            ops[i][j].name = NEXT_FIELD(operand_defaults[j]);
            names.operand[i][j] = ops[i][j].name;
        }
    }
    aot_request request = {.kernel_count = kernel_count, .kernels = kernels,
                           .restrict_pointers = data[0] & 4, .index_bits = data[0] & 8 ? 64 : 32};
    request.command = NEXT_FIELD("bcgen aot");
    request.source_name = NEXT_FIELD("k.c");
    request.header_name = NEXT_FIELD("k.h");
#undef NEXT_FIELD

    long live = mem_live();
    char *source = (char *)1, *header = (char *)1;
    bcg_error err;
    error_clear(&err);
    bcg_status s = aot_generate(&request, &source, &header, &err);
    if (s != BCG_OK) {
        FUZZ_CHECK(err.status == s && err.message[0]);
        FUZZ_CHECK((source == NULL || source == (char *)1) &&
                   (header == NULL || header == (char *)1));
    } else {
        FUZZ_CHECK(source && header);
        /* what the source includes: the header's name, as comments show it */
        char *include_name = malloc(2 * strlen(request.header_name) + 1);
        FUZZ_CHECK(include_name != NULL);
        size_t j = 0;
        for (const char *p = request.header_name; *p; p++) {
            include_name[j++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
            if (p[0] == '*' && p[1] == '/')
                include_name[j++] = '\\';
        }
        include_name[j] = 0;
        aot_request shown = request;
        shown.header_name = include_name;
        /* a program kernel's functions (it generated, so it splits) */
        arena *a = arena_new();
        FUZZ_CHECK(a != NULL);
        memset(&expanded, 0, sizeof expanded);
        for (int i = 0; i < names.kernel_count; i++) {
            program p;
            bool statements = program_is_statements(kernels[i].expression);
            if (statements)
                FUZZ_CHECK(program_split(a, kernels[i].expression, &p, &err) == BCG_OK);
            for (int j = 0; j <= (statements ? p.count : 0); j++) {
                int e = expanded.kernel_count++;
                expanded.kernel[e] = names.kernel[i];
                expanded.operand_count[e] = names.operand_count[i];
                memcpy(expanded.operand[e], names.operand[i], sizeof expanded.operand[e]);
                expanded.ops[e] = names.ops[i];
                expanded.inplace[e] = statements ? -1 : names.inplace[i];
                if (statements && j < p.count) {
                    expanded.kernel[e] = arena_printf(a, "%s_%s", names.kernel[i],
                                                      p.statements[j].name);
                } else if (statements) {
                    expanded.output_count[e] = p.count;
                    for (int k = 0; k < p.count; k++)
                        expanded.outputs[e][k] = p.statements[k].name;
                }
            }
        }
        check_pair(source, header, &expanded, &shown);
        arena_free(a);
        free(include_name);
        mem_free(source);
        mem_free(header);
    }
    FUZZ_CHECK(mem_live() == live);
    free(text);
    return 0;
}
