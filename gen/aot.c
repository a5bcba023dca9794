/* aot.c - ahead-of-time output for firmware: several kernels as one .c/.h
 * pair that is the whole dependency (no bcgen header or library).
 *
 *   each kernel: compile_pipeline (COMPILE_AOT, c->aot set): the front end,
 *                check_kernel (names, positions), then only the typed
 *                function, the helpers it needs or-ed into aot
 *   the pair:    templates/aot.c.tmpl  includes, typedefs, helpers once, kernels
 *                templates/aot.h.tmpl  the manual: command, sizes, prototypes
 *
 * The bodies come from the JIT's emitter unchanged; only the outer shape
 * differs.  Positions and loop counters are ptrdiff_t, and on 32-bit
 * targets that is 32 bits, so every position a kernel can reach is checked
 * here, at generation time, against the index width asked for; with 64 the
 * .c carries a compile-time check of PTRDIFF_MAX instead.
 *
 * Every identifier the pair defines (kernels, their parameters, the size
 * macros, the include guard, BCGEN_RESTRICT) goes through one table here,
 * so that two of them never get the same name: the macros upper-case
 * kernel and operand names, so `-k f=... -i x=...` makes F_X_RANK, which a
 * kernel or operand could also be called.  Only the parameters of
 * different kernels may share a name.  Names C or a standard header
 * already means are emit_aot_name_problem's (cnames.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "aot.h"

/* How far any position of the plan can get from element [0, ..., 0]: a
 * position ends one full stride beyond the last element it touches. */
static uint64_t largest_position(const plan *p)
{
    uint64_t largest = 0;
    for (int k = 0; k < p->operand_count; k++) {
        uint64_t reach = 0;
        for (int l = 0; l < p->loop_count; l++) {
            int64_t stride = p->stride[k][l];
            uint64_t magnitude = stride < 0 ? 0 - (uint64_t)stride : (uint64_t)stride;
            uint64_t extent = (uint64_t)p->extent[l];
            if (magnitude != 0 && extent > UINT64_MAX / magnitude)
                return UINT64_MAX;
            if (reach > UINT64_MAX - extent * magnitude)
                return UINT64_MAX;
            reach += extent * magnitude;
        }
        if (reach > largest)
            largest = reach;
    }
    return largest;
}

/* Elements between an operand's lowest and highest element, both included:
 * what its buffer must hold (the elements, when it is contiguous). */
static int64_t operand_span(const compile_operand *op)
{
    return op->empty ? 0 : op->high - op->low + 1;
}

static void format_shape(char *buf, size_t cap, const shape *s, const int64_t *values)
{
    size_t used = (size_t)snprintf(buf, cap, "{");
    for (int d = 0; d < s->rank && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? ", " : "",
                                 (long long)values[d]);
    if (used < cap)
        snprintf(buf + used, cap - used, "}");
}

/* "FN_A" from "fn" and "a": the macro prefix of an operand. */
static void macro_prefix(char *buf, size_t cap, const char *function, const char *operand)
{
    snprintf(buf, cap, "%s_%s", function, operand);
    for (char *c = buf; *c; c++)
        *c = (char)toupper((unsigned char)*c);
}

/* Text for a C comment: printable ASCII, no comment end, and neither //
 * nor / * (MISRA C rule 3.1): a backslash goes between the two characters
 * (floor division a // b reads a /\/ b). */
static const char *comment_text(arena *a, const char *text)
{
    size_t n = strlen(text);
    char *copy = arena_alloc(a, 2 * n + 1);
    if (!copy)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        copy[j++] = c >= 0x20 && c < 0x7f ? c : '?';
        if ((c == '*' && text[i + 1] == '/') ||
            (c == '/' && (text[i + 1] == '/' || text[i + 1] == '*')))
            copy[j++] = '\\';
    }
    copy[j] = 0;
    return copy;
}

/* What kind of identifier a defined name is: only parameters of different
 * kernels may share a name (each is local to its function). */
typedef enum name_kind { NAME_KERNEL, NAME_PARAMETER, NAME_MACRO, NAME_OTHER } name_kind;

typedef struct defined_name {
    const char *name;       /* NULL: a free slot */
    const char *what;       /* "the kernel f", "operand x of kernel f", ... */
    name_kind kind;
    int kernel;
} defined_name;

typedef struct file_state {
    arena *arena;
    bcg_error *err;
    tmpl_scope *source_scope, *header_scope;
    defined_name *names;    /* open addressing; capacity a power of two */
    size_t name_capacity;
    uint64_t largest_position;
} file_state;

static uint32_t hash_text(uint32_t hash, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        hash = (hash ^ *c) * 16777619u; /* FNV-1a */
    return hash;
}

/* Adds NAME (described by WHAT, which is copied) to the file's identifiers;
 * a usage error naming both when another identifier has that name. */
static bcg_status define_name(file_state *f, const char *name, name_kind kind, int kernel,
                              const char *what)
{
    size_t mask = f->name_capacity - 1;
    size_t at = hash_text(2166136261u, name) & mask;
    for (; f->names[at].name; at = (at + 1) & mask) {
        const defined_name *other = &f->names[at];
        if (strcmp(other->name, name) != 0)
            continue;
        if (kind == NAME_PARAMETER && other->kind == NAME_PARAMETER && other->kernel != kernel)
            return BCG_OK;
        return fail(f->err, BCG_ERR_USAGE, "%s and %s would both be named %s in the generated C%s; "
                    "rename one",
                    other->what, what, name,
                    kind == NAME_MACRO || other->kind == NAME_MACRO
                        ? " (the macros upper-case kernel and operand names)"
                        : "");
    }
    const char *copy = arena_strndup(f->arena, name, strlen(name));
    const char *what_copy = arena_strndup(f->arena, what, strlen(what));
    if (!copy || !what_copy)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    f->names[at] = (defined_name){copy, what_copy, kind, kernel};
    return BCG_OK;
}

/* Adds the macro NAME of kernel KERNEL (whose OWNER it describes: "kernel
 * f, operand x") to the header. */
static bcg_status add_macro(file_state *f, tmpl_scope *kernel, int kernel_index,
                            const char *owner, const char *name, const char *value)
{
    /* no name of the standard headers ends in _RANK, _SHAPE, _STRIDES,
     * _ELEMENTS or _BYTES, so only the pair's own names can clash; C99's
     * reserved macro prefixes (E, SIG_, FP_, ...) are left alone here:
     * they would forbid kernels named `ema` or `fp` for macro names no
     * header uses (EMA_OUT_RANK) */
    char what[3 * BCG_MAX_NAME + 64];
    snprintf(what, sizeof what, "the macro %s (%s)", name, owner);
    bcg_status s = define_name(f, name, NAME_MACRO, kernel_index, what);
    if (s)
        return s;
    const char *value_copy = arena_strndup(f->arena, value, strlen(value));
    if (!value_copy)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    tmpl_scope *item = tmpl_list_add(kernel, "macros");
    tmpl_set_str(item, "name", name);
    tmpl_set_str(item, "value", value_copy);
    return BCG_OK;
}

/* The macros and comment line of one tensor: NAME_TYPE, _RANK, _SHAPE,
 * _STRIDES (when STRIDES is given), _ELEMENTS, _BYTES (SPAN elements: the
 * memory from its lowest to its highest element), _OFFSET (OFFSET: where
 * element [0, ..., 0] sits in that memory, in elements; not 0 only with
 * negative strides) and _ALIGN (the element size: enough alignment on
 * every target).  OWNER says whose macros they are ("kernel f, operand
 * x"), LAYOUT how its elements lie in memory. */
static bcg_status describe_tensor(file_state *f, tmpl_scope *kernel, int kernel_index,
                                  const char *owner, const char *prefix, const char *label,
                                  bcg_dtype dtype, const shape *s, const int64_t *strides,
                                  int64_t span, int64_t offset, const char *layout)
{
    char name[2 * BCG_MAX_NAME + 32], value[BCG_MAX_RANK * 24 + 8];
    int64_t elements = 0;
    shape_elements(s, &elements);
    bcg_status st;
    snprintf(name, sizeof name, "%s_TYPE", prefix);
    if ((st = add_macro(f, kernel, kernel_index, owner, name, emit_stdint_ctype(dtype))))
        return st;
    snprintf(name, sizeof name, "%s_RANK", prefix);
    snprintf(value, sizeof value, "%d", s->rank);
    if ((st = add_macro(f, kernel, kernel_index, owner, name, value)))
        return st;
    if (s->rank > 0) {
        snprintf(name, sizeof name, "%s_SHAPE", prefix);
        format_shape(value, sizeof value, s, s->dims);
        if ((st = add_macro(f, kernel, kernel_index, owner, name, value)))
            return st;
    }
    if (strides) {
        snprintf(name, sizeof name, "%s_STRIDES", prefix);
        format_shape(value, sizeof value, s, strides);
        if ((st = add_macro(f, kernel, kernel_index, owner, name, value)))
            return st;
    }
    snprintf(name, sizeof name, "%s_ELEMENTS", prefix);
    snprintf(value, sizeof value, "%lld", (long long)elements);
    if ((st = add_macro(f, kernel, kernel_index, owner, name, value)))
        return st;
    snprintf(name, sizeof name, "%s_BYTES", prefix);
    snprintf(value, sizeof value, "%lld", (long long)(span * (int64_t)bcg_dtype_size(dtype)));
    if ((st = add_macro(f, kernel, kernel_index, owner, name, value)))
        return st;
    snprintf(name, sizeof name, "%s_OFFSET", prefix);
    snprintf(value, sizeof value, "%lld", (long long)offset);
    if ((st = add_macro(f, kernel, kernel_index, owner, name, value)))
        return st;
    snprintf(name, sizeof name, "%s_ALIGN", prefix);
    snprintf(value, sizeof value, "%d", (int)bcg_dtype_size(dtype));
    if ((st = add_macro(f, kernel, kernel_index, owner, name, value)))
        return st;

    char dims[BCG_MAX_RANK * 24 + 8];
    shape_format(s, dims, sizeof dims);
    const char *line = arena_printf(f->arena, "%-6s %s %s, %s", label, emit_stdint_ctype(dtype),
                                    dims, layout);
    if (!line)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    tmpl_set_str(tmpl_list_add(kernel, "lines"), "text", line);
    return BCG_OK;
}

/* What add_kernel checks between the front end and emitting. */
typedef struct kernel_check {
    file_state *f;
    const aot_request *r;
    int index;
    bcg_error *local;
    bool reported; /* the error is in f->err already (a name clash) */
} kernel_check;

/* The parameters are names (compile_front checked that they are
 * identifiers) that clash with nothing in the file, and every position the
 * kernel forms fits the target's ptrdiff_t. */
static bcg_status check_kernel(compile *c, void *arg)
{
    kernel_check *check = arg;
    file_state *f = check->f;
    const aot_request *r = check->r;
    const aot_kernel *k = &r->kernels[check->index];
    int index = check->index;
    bcg_error *err = check->local;
    char what[2 * BCG_MAX_NAME + 64];
    bcg_status s = BCG_OK;
    /* the parameters, now that compile_front has checked that they are names */
    for (int i = 0; i < c->operand_count && !s; i++) {
        snprintf(what, sizeof what, "operand %s of kernel %s", c->operands[i].name, k->name);
        if ((s = define_name(f, c->operands[i].name, NAME_PARAMETER, index, what))) {
            check->reported = true;
            return s;
        }
    }
    uint64_t limit = r->index_bits == 64 ? (uint64_t)INT64_MAX : (uint64_t)INT32_MAX;
    if (!s && !c->plan->empty) {
        uint64_t largest = largest_position(c->plan);
        if (largest > limit)
            s = fail(err, BCG_ERR_LIMIT,
                     "positions reach %llu elements, beyond a %d-bit ptrdiff_t (%llu); %s",
                     (unsigned long long)largest, r->index_bits, (unsigned long long)limit,
                     r->index_bits == 64 ? "the kernel is too large"
                                         : "use --index-bits 64 for a target with a 64-bit "
                                           "ptrdiff_t");
        else if (largest > f->largest_position)
            f->largest_position = largest;
    }
    return s;
}

static bcg_status add_kernel(file_state *f, const aot_request *r, int index, emit_aot *aot)
{
    const aot_kernel *k = &r->kernels[index];
    if (!k->name)
        return fail(f->err, BCG_ERR_USAGE, "kernel %d has no name", index + 1);
    char what[2 * BCG_MAX_NAME + 64];
    snprintf(what, sizeof what, "the kernel %s", k->name);
    bcg_status s = define_name(f, k->name, NAME_KERNEL, index, what);
    if (s)
        return s;
    const char *problem = emit_aot_name_problem(k->name, false);
    if (problem)
        return fail(f->err, BCG_ERR_USAGE, "'%s' is %s; pick another kernel name", k->name,
                    problem);

    bcg_error local;
    error_clear(&local);
    compile *c = arena_alloc(f->arena, sizeof *c);
    if (!c)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    c->arena = f->arena;
    c->err = &local;
    c->function_name = k->name;
    c->aot = aot;
    aot->math_double = k->math_double;
    kernel_check check = {f, r, index, &local, false};
    compile_request request = {.text = k->expression, .operands = k->operands,
                               .operand_count = k->operand_count, .options = &k->options,
                               .goal = COMPILE_AOT, .check = check_kernel, .check_arg = &check};
    if (k->fusion) { /* a program's fused kernel: its roots and operands */
        compile_request fused;
        if (program_fuse_setup(f->arena, k->fuse_program, k->fusion, c, &fused))
            return fail(f->err, BCG_ERR_NOMEM, "out of memory");
        request.text = fused.text;
        request.operands = fused.operands;
        request.operand_count = fused.operand_count;
        request.options = fused.options;
    }
    s = compile_pipeline(c, &request);
    if (s && check.reported)
        return s;
    if (s)
        return fail_at(f->err, s, local.column, local.operand, local.dimension, "kernel %s: %s",
                       k->name ? k->name : "(unnamed)", local.message);

    tmpl_scope *code = tmpl_list_add(f->source_scope, "kernels");
    size_t length = strlen(c->source);
    while (length > 0 && c->source[length - 1] == '\n')
        c->source[--length] = 0;
    tmpl_set_str(code, "source", c->source);

    tmpl_scope *doc = tmpl_list_add(f->header_scope, "kernels");
    tmpl_list_declare(doc, "macros");
    tmpl_list_declare(doc, "lines");
    tmpl_set_str(doc, "name", k->name);
    tmpl_set_str(doc, "result",
                 c->options.inplace >= 0 ? c->operands[c->options.inplace].name : "out");
    /* already spelled with BCGEN_RESTRICT, which C++ knows too (emit.c) */
    tmpl_set_str(doc, "parameters", aot->parameters);
    const char *names[BCG_MAX_OPERANDS];
    for (int i = 0; i < c->operand_count; i++)
        names[i] = c->operands[i].name;
    expr_names table = {c->operand_count, names};
    strbuf text;
    sb_init(&text);
    expr_format(&text, c->out_cast ? c->root->args[0] : c->root, &table); /* as written */
    const char *expression = text.failed ? NULL : comment_text(f->arena, text.data ? text.data : "");
    sb_free(&text);
    if (!expression)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    tmpl_set_str(doc, "expression", expression);

    /* the macros and lines of the result, then of each operand */
    char prefix[2 * BCG_MAX_NAME + 8], owner[2 * BCG_MAX_NAME + 32];
    int inplace = c->options.inplace;
    const compile_operand *target = inplace >= 0 ? &c->operands[inplace] : NULL;
    const char *layout = "C-contiguous";
    if (target)
        layout = arena_printf(f->arena, "no separate buffer: written over %s's elements%s",
                              target->name,
                              target->strides_given
                                  ? ", with its strides (see _OUT_STRIDES; _OUT_BYTES spans them)"
                                  : " (C-contiguous)");
    int64_t out_elements = 1; /* the output's: a reduction's target, or the result */
    for (int d = 0; d < c->out_shape.rank; d++)
        out_elements *= c->out_shape.dims[d];
    /* an output view: its strides and span, like a strided operand's */
    compile_operand view;
    if (c->view_strides && c->options.output && c->options.output->strides) {
        memset(&view, 0, sizeof view);
        view.name = "out";
        view.dtype = c->out_dtype;
        view.shape = c->out_shape;
        memcpy(view.strides, c->view_strides, sizeof(int64_t) * (size_t)view.shape.rank);
        view.strides_given = true;
        view.low = view.high = 0;
        for (int d = 0; d < view.shape.rank; d++) {
            if (view.shape.dims[d] == 0)
                view.empty = true;
            int64_t reach = view.strides[d] * (view.shape.dims[d] > 0 ? view.shape.dims[d] - 1 : 0);
            *(reach < 0 ? &view.low : &view.high) += reach;
        }
        target = &view;
        layout = "a view with strides (see _OUT_STRIDES; _OUT_BYTES spans it; out points "
                 "at its element [0,...,0])";
    }
    if (!layout)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    macro_prefix(prefix, sizeof prefix, k->name, "out");
    snprintf(owner, sizeof owner, "kernel %s, its result", k->name);
    /* in place, the result is the target's memory: its strides and span */
    s = describe_tensor(f, doc, index, owner, prefix, "out",
                        c->out_dtype, &c->out_shape,
                        target && target->strides_given ? target->strides : NULL,
                        target ? operand_span(target) : out_elements,
                        target && !target->empty ? -target->low : 0, layout);
    for (int i = 0; i < c->operand_count && !s; i++) {
        const compile_operand *op = &c->operands[i];
        macro_prefix(prefix, sizeof prefix, k->name, op->name);
        snprintf(owner, sizeof owner, "kernel %s, operand %s", k->name, op->name);
        const char *strided = op->strides_given
                                  ? (op->low < 0 ? "strided (see _STRIDES; _BYTES spans it, "
                                                   "element [0,...,0] is _OFFSET elements in)"
                                                 : "strided (see _STRIDES; _BYTES spans it)")
                                  : "C-contiguous";
        if (emit_aot_by_value(c, i))
            strided = "by value";
        layout = i == inplace ? arena_printf(f->arena, "%s (in place: also the output)", strided)
                              : strided;
        if (!layout)
            return fail(f->err, BCG_ERR_NOMEM, "out of memory");
        s = describe_tensor(f, doc, index, owner, prefix, op->name, op->dtype, &op->shape,
                            op->strides_given ? op->strides : NULL, operand_span(op),
                            op->empty ? 0 : -op->low, layout);
    }
    return s;
}

/* The include guard: the header's base name upper-cased, other bytes as
 * '_', and a 64-bit FNV-1a hash of HEADER_TEXT, the header rendered with
 * neither guard nor command: two headers of one name with other kernels,
 * shapes or dtypes (motor/kernels.h, sensor/kernels.h, or two builds of
 * one project) get different guards, while the same kernels give the same
 * guard on any machine and from any directory. */
static const char *guard_name(arena *a, const char *header_name, const char *header_text)
{
    const char *base = strrchr(header_name, '/');
    base = base ? base + 1 : header_name;
    uint64_t hash = 14695981039346656037u;
    for (const unsigned char *c = (const unsigned char *)header_text; *c; c++)
        hash = (hash ^ *c) * 1099511628211u;
    char *guard = arena_printf(a, "BCGEN_AOT_%s_%016llX", base, (unsigned long long)hash);
    if (!guard)
        return NULL;
    for (char *c = guard; *c; c++)
        *c = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
    return guard;
}

/* "MAJOR.MINOR.PATCH" as MAJOR * 10000 + MINOR * 100 + PATCH. */
static int64_t version_number(const char *version)
{
    int64_t number = 0;
    for (int part = 0; part < 3; part++) {
        int64_t value = 0;
        while (*version >= '0' && *version <= '9')
            value = value * 10 + (*version++ - '0');
        number = number * 100 + value;
        if (*version == '.')
            version++;
    }
    return number;
}

/* The .c #includes the header by its name and both comments quote the
 * names: only printable ASCII, no character a quoted #include cannot hold,
 * nothing that opens or closes a comment, no trigraph (??= ??/ ...). */
static bool file_name_is_plain(const char *name)
{
    if (!name[0] || strstr(name, "/*") || strstr(name, "//") || strstr(name, "*/"))
        return false;
    for (const char *c = name; *c; c++) {
        if (*c < 0x20 || *c > 0x7e || *c == '"' || *c == '\\')
            return false;
        if (c[0] == '?' && c[1] == '?' && c[2] && strchr("=/'()!<>-", c[2]))
            return false;
    }
    return true;
}

static bcg_status render_file(const char *template_name, const tmpl_scope *scope, char **out,
                              bcg_error *err)
{
    const char *text = tmpl_builtin(template_name);
    if (!text)
        return fail(err, BCG_ERR_USAGE, "the template %s is not built into the library",
                    template_name);
    strbuf sb;
    sb_init(&sb);
    bcg_status s = tmpl_render(&sb, template_name, text, scope, err);
    if (!s && sb.failed)
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (s) {
        sb_free(&sb);
        return s;
    }
    *out = sb_finish(&sb);
    return *out ? BCG_OK : fail(err, BCG_ERR_NOMEM, "out of memory");
}

/* A kernel whose expression is a program of statements (program.c) becomes
 * one kernel per statement, NAME_<statement>, and a wrapper NAME taking
 * every output (named as its statement) and then the operands, calling
 * them in statement order; or, when the program fuses (program.c,
 * "fusion"), NAME_fused computing every output in one pass, which the
 * wrapper calls instead (the statements' kernels stay, with the macros
 * that size each output). */
typedef struct aot_program {
    const char *name;          /* the wrapper's */
    const char *text;          /* the program as written */
    int first, count;          /* its statements' kernels in the expanded list */
    const char **statements;   /* their names */
    bool fused;                /* NAME_fused follows them */
    int order[BCG_MAX_OUTPUTS];/* the fused kernel's roots: its output, then its last
                                  operands (program_fusion.order) */
} aot_program;

static bcg_status aot_generate_kernels(const aot_request *r, const aot_program *programs,
                                       int program_count, char **source, char **header,
                                       bcg_error *err);

static bcg_status expand_programs(arena *a, const aot_request *r, aot_request *out,
                                  aot_program **programs, int *program_count, bcg_error *err)
{
    int total = 0, groups = 0;
    program *parsed = arena_alloc(a, sizeof *parsed * (size_t)r->kernel_count);
    if (!parsed)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < r->kernel_count; i++) {
        const aot_kernel *k = &r->kernels[i];
        if (!k->expression || !program_is_statements(k->expression)) {
            total++;
            continue;
        }
        if (k->options.inplace >= 0)
            return fail(err, BCG_ERR_USAGE, "kernel %s: a program of statements cannot write "
                        "in place (--inplace): its wrapper takes one output buffer per "
                        "statement", k->name ? k->name : "?");
        bcg_status s = program_resolve(a, k->expression, k->operands, k->operand_count,
                                       &k->options, &parsed[i], err);
        if (s) {
            if (err) {
                char message[sizeof err->message + 80];
                snprintf(message, sizeof message, "kernel %.63s: %s", k->name ? k->name : "?",
                         err->message);
                memcpy(err->message, message, sizeof err->message - 1);
                err->message[sizeof err->message - 1] = 0;
            }
            return s;
        }
        total += parsed[i].count + 1; /* (and a fused kernel) */
        groups++;
    }
    aot_kernel *kernels = arena_alloc(a, sizeof *kernels * (size_t)total);
    *programs = arena_alloc(a, sizeof **programs * (size_t)(groups ? groups : 1));
    if (!kernels || !*programs)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    int n = 0;
    *program_count = 0;
    for (int i = 0; i < r->kernel_count; i++) {
        const aot_kernel *k = &r->kernels[i];
        if (!k->expression || !program_is_statements(k->expression)) {
            kernels[n++] = *k;
            continue;
        }
        aot_program *g = &(*programs)[(*program_count)++];
        const program *p = &parsed[i];
        g->name = k->name;
        g->text = k->expression;
        g->first = n;
        g->count = p->count;
        g->statements = arena_alloc(a, sizeof *g->statements * (size_t)p->count);
        if (!g->statements || !k->name)
            return fail(err, k->name ? BCG_ERR_NOMEM : BCG_ERR_USAGE,
                        k->name ? "out of memory" : "a kernel has no name");
        for (int j = 0; j < p->count; j++) {
            const program_statement *st = &p->statements[j];
            const char *problem = emit_aot_name_problem(st->name, true);
            if (problem)
                return fail(err, BCG_ERR_USAGE, "kernel %s: statement '%s' is %s; pick another "
                            "name", k->name, st->name, problem);
            g->statements[j] = st->name;
            kernels[n] = *k;
            kernels[n].name = arena_printf(a, "%s_%s", k->name, st->name);
            kernels[n].expression = st->expanded;
            kernels[n].options = st->options;
            if (!kernels[n].name)
                return fail(err, BCG_ERR_NOMEM, "out of memory");
            n++;
        }
        /* a program that fuses: NAME_fused, the other outputs after the
         * operands, named as their statements */
        program_fusion *fusion = arena_alloc(a, sizeof *fusion);
        if (!fusion || program_fuse_check(a, p, k->operands, k->operand_count, k->expression,
                                          fusion))
            return fail(err, BCG_ERR_NOMEM, "out of memory");
        g->fused = fusion->fused;
        if (!fusion->fused)
            continue;
        memcpy(g->order, fusion->order, sizeof g->order);
        kernels[n] = *k;
        kernels[n].name = arena_printf(a, "%s_fused", k->name);
        kernels[n].expression = p->statements[fusion->primary].expanded;
        kernels[n].operands = fusion->operands;
        kernels[n].operand_count = fusion->operand_count;
        kernels[n].options = p->statements[fusion->primary].options;
        kernels[n].fuse_program = p;
        kernels[n].fusion = fusion;
        if (!kernels[n].name)
            return fail(err, BCG_ERR_NOMEM, "out of memory");
        n++;
    }
    *out = *r;
    out->kernels = kernels;
    out->kernel_count = n;
    return BCG_OK;
}

/* The wrapper of program G: its source into the .c's kernel list and its
 * declaration into the header's.  PARAMETERS[k]: kernel k's parameter list. */
static bcg_status add_program(file_state *f, const aot_program *g, int index,
                              const char *const *parameters)
{
    char what[BCG_MAX_NAME + 64];
    snprintf(what, sizeof what, "the program %s", g->name);
    bcg_status s = define_name(f, g->name, NAME_KERNEL, index, what);
    if (s)
        return s;
    const char *problem = emit_aot_name_problem(g->name, false);
    if (problem)
        return fail(f->err, BCG_ERR_USAGE, "'%s' is %s; pick another kernel name", g->name,
                    problem);
    /* each kernel's list is "T *out, <operands>": the outputs named as their
     * statements, then the operands (the same in every statement's kernel) */
    strbuf list, body, names;
    sb_init(&list);
    sb_init(&body);
    sb_init(&names);
    const char *operands = strchr(parameters[g->first], ',');
    for (int j = 0; j < g->count; j++) {
        const char *own = parameters[g->first + j];
        const char *comma = strchr(own, ',');
        size_t first = comma ? (size_t)(comma - own) : strlen(own);
        /* the first parameter ends in "out" */
        sb_printf(&list, "%s%.*s%s", j ? ", " : "", (int)(first - 3), own, g->statements[j]);
        sb_printf(&names, "%s%s", j ? ", " : "", g->statements[j]);
    }
    if (operands)
        sb_puts(&list, operands);
    if (g->fused)
        sb_printf(&body, "/* %s: the program's outputs %s in one pass (%s_fused, the other "
                  "outputs\n * after the operands; %s_<statement>'s macros size each "
                  "output). */\n"
                  "void %s(%s)\n{\n", g->name, names.data ? names.data : "", g->name, g->name,
                  g->name, list.data ? list.data : "");
    else
        sb_printf(&body, "/* %s: the program's outputs %s, each its statement's kernel in "
                  "order\n * (%s_<statement>, whose macros size each output). */\n"
                  "void %s(%s)\n{\n", g->name, names.data ? names.data : "", g->name, g->name,
                  list.data ? list.data : "");
    for (int j = 0; j < (g->fused ? 1 : g->count); j++) {
        if (g->fused)
            sb_printf(&body, "    %s_fused(%s", g->name, g->statements[g->order[0]]);
        else
            sb_printf(&body, "    %s_%s(%s", g->name, g->statements[j], g->statements[j]);
        /* the operand names: the words before each ',' and the last word */
        const char *at = operands;
        while (at) {
            const char *next = strchr(at + 1, ',');
            const char *end = next ? next : at + strlen(at);
            const char *word = end;
            while (word > at && (word[-1] == '_' || (word[-1] >= 'a' && word[-1] <= 'z') ||
                                 (word[-1] >= 'A' && word[-1] <= 'Z') ||
                                 (word[-1] >= '0' && word[-1] <= '9')))
                word--;
            sb_printf(&body, ", %.*s", (int)(end - word), word);
            at = next;
        }
        for (int other = 1; g->fused && other < g->count; other++)
            sb_printf(&body, ", %s", g->statements[g->order[other]]);
        sb_puts(&body, ");\n");
    }
    sb_puts(&body, "}");
    const char *text = comment_text(f->arena, g->text);
    if (list.failed || body.failed || names.failed || !text) {
        sb_free(&list);
        sb_free(&body);
        sb_free(&names);
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    }
    tmpl_scope *code = tmpl_list_add(f->source_scope, "kernels");
    tmpl_set_str(code, "source", arena_strndup(f->arena, body.data, body.len));
    tmpl_scope *doc = tmpl_list_add(f->header_scope, "kernels");
    tmpl_list_declare(doc, "macros");
    tmpl_list_declare(doc, "lines");
    tmpl_set_str(doc, "name", g->name);
    tmpl_set_str(doc, "result", arena_strndup(f->arena, names.data, names.len));
    tmpl_set_str(doc, "expression", text);
    tmpl_scope *line = tmpl_list_add(doc, "lines");
    tmpl_set_str(line, "text",
                 g->fused ? arena_printf(f->arena, "calls %s_fused, every output in one pass; "
                                         "the macros of %s_<statement> size the buffers",
                                         g->name, g->name)
                          : arena_printf(f->arena, "calls %s_<statement> for each output "
                                         "in order; their macros size the buffers", g->name));
    tmpl_set_str(doc, "parameters", arena_strndup(f->arena, list.data, list.len));
    sb_free(&list);
    sb_free(&body);
    sb_free(&names);
    return BCG_OK;
}

bcg_status aot_generate(const aot_request *request, char **source, char **header,
                        bcg_error *err)
{
    const aot_request *r = request;
    aot_request expanded;
    aot_program *programs = NULL;
    int program_count = 0;
    arena *program_arena = NULL;
    if (r && r->kernels)
        for (int i = 0; i < r->kernel_count && !program_arena; i++)
            if (r->kernels[i].expression && program_is_statements(r->kernels[i].expression)) {
                if (!(program_arena = arena_new()))
                    return fail(err, BCG_ERR_NOMEM, "out of memory");
                bcg_status s = expand_programs(program_arena, r, &expanded, &programs,
                                               &program_count, err);
                if (s) {
                    arena_free(program_arena);
                    return s;
                }
                r = &expanded;
            }
    bcg_status status = aot_generate_kernels(r, programs, program_count, source, header, err);
    arena_free(program_arena);
    return status;
}

/* MISRA C:2012 rule 5.8: the name of a function with external linkage (a
 * kernel) names nothing else in the program.  The helpers' parameters,
 * locals and union members have short names (a, b, x, y, mod, bits, ...);
 * where a kernel of the pair has one of them, every use of that identifier
 * in the helpers' code (not in comments or preprocessor lines) becomes
 * bcg_local_<name>.  Kernel
 * names cannot start with bcg_ and are no C keyword, library or helper name,
 * so the renamed text means what it meant; a pair whose kernel names clash
 * with nothing stays byte for byte as it was. */
static bool is_kernel_name(const aot_request *r, const aot_program *programs, int program_count,
                           const char *word, size_t length)
{
    for (int i = 0; i < r->kernel_count + program_count; i++) {
        const char *name = i < r->kernel_count ? r->kernels[i].name
                                               : programs[i - r->kernel_count].name;
        if (name && strlen(name) == length && memcmp(name, word, length) == 0)
            return true;
    }
    return false;
}

static void rename_helper_locals(const aot_request *r, const aot_program *programs,
                                 int program_count, strbuf *helpers)
{
    if (helpers->failed || helpers->len == 0)
        return;
    strbuf renamed;
    sb_init(&renamed);
    bool changed = false;
    const char *p = helpers->data;
    bool line_start = true;
    while (*p) {
        if (line_start) { /* a preprocessor line (#include <arm_acle.h>, #if ...) as it is */
            const char *q = p;
            while (*q == ' ' || *q == '\t')
                q++;
            line_start = false;
            if (*q == '#') {
                while (*q && !(*q == '\n' && q[-1] != '\\'))
                    q++;
                sb_put(&renamed, p, (size_t)(q - p));
                p = q;
                continue;
            }
        }
        if (*p == '\n') {
            line_start = true;
            sb_putc(&renamed, *p++);
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            size_t n = end ? (size_t)(end + 2 - p) : strlen(p);
            sb_put(&renamed, p, n);
            p += n;
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            size_t n = 1;
            while (isalnum((unsigned char)p[n]) || p[n] == '_')
                n++;
            if (is_kernel_name(r, programs, program_count, p, n)) {
                sb_puts(&renamed, "bcg_local_");
                changed = true;
            }
            sb_put(&renamed, p, n);
            p += n;
        } else if (isdigit((unsigned char)*p)) { /* a number with its suffix (1U, 0x1FU) */
            size_t n = 1;
            while (isalnum((unsigned char)p[n]) || p[n] == '.')
                n++;
            sb_put(&renamed, p, n);
            p += n;
        } else {
            sb_putc(&renamed, *p++);
        }
    }
    if (changed || renamed.failed) {
        sb_free(helpers);
        *helpers = renamed;
        if (renamed.failed)
            helpers->failed = true;
    } else {
        sb_free(&renamed);
    }
}

static bcg_status aot_generate_kernels(const aot_request *r, const aot_program *programs,
                                       int program_count, char **source, char **header,
                                       bcg_error *err)
{
    if (!r || !source || !header || r->kernel_count < 1 || !r->kernels || !r->source_name ||
        !r->header_name)
        return fail(err, BCG_ERR_USAGE, "aot_generate needs at least one kernel and the names "
                                        "of both files");
    if (r->index_bits != 32 && r->index_bits != 64)
        return fail(err, BCG_ERR_USAGE, "the index width is 32 or 64 bits, not %d",
                    r->index_bits);
    *source = *header = NULL;
    const char *files[2] = {r->source_name, r->header_name};
    for (int i = 0; i < 2; i++)
        if (!file_name_is_plain(files[i])) {
            char shown[256];
            size_t n = 0;
            for (const char *c = files[i]; *c && n + 1 < sizeof shown; c++)
                shown[n++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
            shown[n] = 0;
            return fail(err, BCG_ERR_USAGE,
                        "the %s file name '%s' must be printable ASCII without quotes, "
                        "backslashes, comment openers or trigraphs (the .c #includes the "
                        "header by its name); rename it",
                        i ? "header" : "source", shown);
        }
    for (int i = 0; i < r->kernel_count; i++) {
        if (!r->kernels[i].name)
            return fail(err, BCG_ERR_USAGE, "kernel %d has no name", i + 1);
        for (int j = 0; j < i; j++)
            if (strcmp(r->kernels[i].name, r->kernels[j].name) == 0)
                return fail(err, BCG_ERR_USAGE, "two kernels are named %s", r->kernels[i].name);
    }
    /* a reduction's body declares acc, acc_c, ... (emit.c): a kernel of
     * that name beside one would break MISRA C:2012 rule 5.8 (an external
     * name names nothing else in the program) */
    int reduction = -1;
    for (int i = 0; i < r->kernel_count && reduction < 0; i++)
        if (r->kernels[i].options.output && r->kernels[i].options.output->reduce)
            reduction = i;
    for (int i = 0; i < r->kernel_count + program_count && (reduction >= 0 || program_count); i++) {
        static const char *const accumulators[] = {"acc", "acc_c", "acc_i", "acc_l", "acc_t",
                                                   "acc_x"};
        const char *name = i < r->kernel_count ? r->kernels[i].name
                                               : programs[i - r->kernel_count].name;
        for (size_t k = 0; name && k < sizeof accumulators / sizeof accumulators[0]; k++)
            if (strcmp(name, accumulators[k]) == 0)
                return fail(err, BCG_ERR_USAGE,
                            "kernel %s: '%s' is a local of the reductions in this pair (%s%s), "
                            "and MISRA C:2012 rule 5.8 wants a function's name unique; pick "
                            "another kernel name", name, name,
                            reduction >= 0 ? "kernel " : "its programs",
                            reduction >= 0 ? r->kernels[reduction].name : "");
    }

    file_state f = {.arena = arena_new(), .err = err};
    emit_aot *aot = f.arena ? arena_alloc(f.arena, sizeof *aot) : NULL;
    /* every identifier: the guard, BCGEN_RESTRICT, and per kernel its name,
     * its parameters and up to 8 macros for each operand and the result */
    size_t count = 2;
    for (int i = 0; i < r->kernel_count; i++)
        count += 1 + 9 * ((size_t)(r->kernels[i].operand_count > 0 ? r->kernels[i].operand_count
                                                                    : 0) + 1);
    count += (size_t)program_count;
    f.name_capacity = 16;
    while (f.name_capacity < 2 * count)
        f.name_capacity *= 2;
    f.names = aot ? arena_alloc(f.arena, sizeof *f.names * f.name_capacity) : NULL;
    f.source_scope = f.names ? tmpl_scope_new(f.arena, NULL) : NULL;
    f.header_scope = f.source_scope ? tmpl_scope_new(f.arena, NULL) : NULL;
    if (!f.header_scope) {
        arena_free(f.arena);
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    memset(f.names, 0, sizeof *f.names * f.name_capacity);
    aot->restrict_pointers = r->restrict_pointers;
    tmpl_list_declare(f.source_scope, "kernels");
    tmpl_list_declare(f.header_scope, "kernels");

    bcg_status s = BCG_OK;
    if (r->restrict_pointers)
        s = define_name(&f, "BCGEN_RESTRICT", NAME_OTHER, -1,
                        "the header's macro BCGEN_RESTRICT (--restrict)");
    const char **parameters = program_count
                                  ? arena_alloc(f.arena, sizeof *parameters * (size_t)r->kernel_count)
                                  : NULL;
    if (program_count && !parameters)
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < r->kernel_count && !s; i++) {
        s = add_kernel(&f, r, i, aot);
        if (parameters)
            parameters[i] = aot->parameters;
    }
    for (int g = 0; g < program_count && !s; g++)
        s = add_program(&f, &programs[g], r->kernel_count + g, parameters);

    strbuf helpers, math, names;
    sb_init(&helpers);
    sb_init(&math);
    sb_init(&names);
    if (!s)
        s = emit_helpers(f.arena, &aot->needs, &helpers, err);
    if (!s)
        rename_helper_locals(r, programs, program_count, &helpers);
    emit_math_names(&aot->needs, &math);
    for (int i = 0; i < r->kernel_count; i++)
        sb_printf(&names, "%s%s", i ? ", " : "", r->kernels[i].name);
    for (int g = 0; g < program_count; g++)
        sb_printf(&names, ", %s", programs[g].name);
    const char *command = comment_text(f.arena, r->command ? r->command : "(not recorded)");
    const char *source_name = comment_text(f.arena, r->source_name);
    const char *header_name = comment_text(f.arena, r->header_name);
    if (!s && (helpers.failed || math.failed || names.failed || !command || !source_name ||
               !header_name))
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s) {
        bool uses_math = math.len > 0;
        tmpl_scope *scopes[2] = {f.source_scope, f.header_scope};
        for (int i = 0; i < 2; i++) {
            tmpl_scope *scope = scopes[i];
            tmpl_set_str(scope, "version", BCG_VERSION);
            tmpl_set_int(scope, "version_number", version_number(BCG_VERSION));
            tmpl_set_str(scope, "command", command);
            tmpl_set_str(scope, "source_name", source_name);
            tmpl_set_str(scope, "header_name", header_name);
            tmpl_set_str(scope, "kernel_names", names.data);
            tmpl_set_int(scope, "kernel_count", r->kernel_count + program_count);
            tmpl_set_bool(scope, "uses_math", uses_math);
            tmpl_set_str(scope, "math_names", uses_math ? math.data : "");
            tmpl_set_bool(scope, "restrict_pointers", r->restrict_pointers);
        }
        /* the templates place the blank lines between the parts */
        while (helpers.len > 0 && helpers.data[helpers.len - 1] == '\n')
            helpers.data[--helpers.len] = 0;
        tmpl_set_str(f.source_scope, "helpers", helpers.len ? helpers.data : "");
        /* a position beyond 32 bits is only allowed with --index-bits 64: then
         * the target's compiler checks that its ptrdiff_t holds it */
        tmpl_set_bool(f.source_scope, "check_index", f.largest_position > (uint64_t)INT32_MAX);
        tmpl_set_bool(f.source_scope, "half_types", aot->needs.half_types);
        tmpl_set_int(f.source_scope, "largest_position", (int64_t)f.largest_position);
        s = render_file("aot.c.tmpl", f.source_scope, source, err);
        /* the guard hashes the header without the command (which holds
         * paths) and without itself, so the header is rendered twice */
        char *unguarded = NULL;
        const char *guard = NULL;
        tmpl_set_str(f.header_scope, "guard", "");
        tmpl_set_str(f.header_scope, "command", "");
        if (!s)
            s = render_file("aot.h.tmpl", f.header_scope, &unguarded, err);
        if (!s && !(guard = guard_name(f.arena, r->header_name, unguarded)))
            s = fail(err, BCG_ERR_NOMEM, "out of memory");
        mem_free(unguarded);
        /* kernel and operand names cannot start with BCGEN_, so this
         * cannot clash; checked all the same */
        if (!s)
            s = define_name(&f, guard, NAME_OTHER, -1, "the header's include guard");
        if (!s) {
            tmpl_set_str(f.header_scope, "guard", guard);
            tmpl_set_str(f.header_scope, "command", command);
            s = render_file("aot.h.tmpl", f.header_scope, header, err);
        }
    }
    sb_free(&helpers);
    sb_free(&math);
    sb_free(&names);
    arena_free(f.arena);
    if (s) {
        mem_free(*source);
        mem_free(*header);
        *source = *header = NULL;
    }
    return s;
}
