/* cli_explain.c - `bcgen explain`: everything bcgen decides about an
 * expression, for a person (or, with --json, for a tool): the aligned
 * shapes, which broadcast rule applied in each dimension, the result, the
 * typed tree, the iteration plan and the form of the code the JIT gets. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kir.h"

/* Steps of the kernel IR explain shows before "... N more steps". */
#define EXPLAIN_MAX_STEPS 80

static const char help[] =
    "usage: bcgen explain EXPR -i NAME=DTYPE[SHAPE][@[STRIDES]] ... [options]\n"
    "\n"
    "Shows how bcgen broadcasts, types and plans EXPR: the operands' shapes\n"
    "right-aligned, one line per dimension from the right saying which rule\n"
    "applied (equal, stretched from 1, missing and padded), the result shape and\n"
    "dtype, the typed expression tree and the iteration plan (loops after\n"
    "dropping size-1 dimensions and merging contiguous ones).\n"
    "\n"
    "options:\n"
    "  -i NAME=DTYPE[SHAPE]   an operand; @[S0,S1,...] gives strides in elements\n"
    "  --inplace NAME         the result is written into operand NAME\n"
    "  --out-strides S        the output is a view with strides S in elements\n"
    "                         ([S0,S1,...], one per result dimension, any sign;\n"
    "                         the kernel's out points at its element [0,...,0])\n"
    "  --out-dtype D          cast the result to D on store (NumPy's out= with\n"
    "                         casting='same_kind': within a kind, bool to any,\n"
    "                         uint to int, integers to floats)\n"
    "  --reduce OP            reduce the result with sum, prod, min, max, mean,\n"
    "                         any or all to --out-shape SHAPE (which must\n"
    "                         broadcast to the result: its size-1 and missing\n"
    "                         dimensions are reduced) or to --to NAME's shape\n"
    "  --axis K               Paddle's axis for two operands (-1: right alignment)\n"
    "  --no-fuse              a program of statements: a kernel per statement, not\n"
    "                         one fused kernel\n"
    "  --no-vex               tiles call a microkernel per operation, not the\n"
    "                         tree's fused AVX2 function (bcg_vex)\n"
    "  --stream auto|on|off   the JIT form with streaming stores as bcg_compile\n"
    "                         would choose them (auto: kernels touching the\n"
    "                         last-level cache's size), or forced on or off\n"
    "  --strict-rank          reject rank-0 operands\n"
    "  --warn-legacy          warn when shapes differ but hold as many elements and\n"
    "                         the old pointwise rule would differ (bcgen shape --help)\n"
    "  --json                 one JSON object on stdout instead of text\n"
    "  --                     ends the options: every later argument is the EXPR\n"
    "                         (one starting with '-' goes here: -- '-a')\n"
    "\n"
    "On a broadcast error the operands are shown right-aligned on stderr with the\n"
    "failing dimension marked (^), then the error; exit status 1.\n"
    "\n"
    "example:\n"
    "  bcgen explain 'a * b + c' -i a=f32[5,3,4,1] -i b=f32[3,1,1] -i c=f32[]\n";

/* Where original dimension 0 of operand i sits in the result. */
static int offset_of(const compile *c, int i)
{
    int rank = c->operands[i].shape.rank, result_rank = c->broadcast->result.rank;
    if (c->options.axis != BCG_AXIS_NONE && c->options.axis >= 0 && c->operand_count == 2 &&
        rank < result_rank)
        return c->options.axis;
    return result_rank - rank;
}

static bool present(const compile *c, int i, int d)
{
    int offset = offset_of(c, i);
    return d >= offset && d < offset + c->operands[i].shape.rank;
}

static const char *rule_of(const compile *c, int d)
{
    int64_t size = c->broadcast->result.dims[d];
    bool stretched = false, padded = false;
    for (int i = 0; i < c->operand_count; i++) {
        if (!c->used[i])
            continue;
        if (!present(c, i, d))
            padded = true;
        else if (c->broadcast->aligned[i].dims[d] != size)
            stretched = true;
    }
    if (stretched && padded)
        return "stretched from 1, missing and padded";
    if (stretched)
        return "stretched from 1";
    if (padded)
        return "missing and padded";
    return "equal";
}

static void print_text(const compile *c)
{
    const shape *result = &c->broadcast->result;
    char buf[2048];
    strbuf sb;
    sb_init(&sb);
    int width = 4;
    for (int i = 0; i < c->operand_count; i++)
        if ((int)strlen(c->operands[i].name) > width)
            width = (int)strlen(c->operands[i].name);

    expr_names names = {c->operand_count, NULL};
    const char **name_list = malloc(sizeof *name_list * (size_t)c->operand_count);
    if (!name_list)
        return;
    for (int i = 0; i < c->operand_count; i++)
        name_list[i] = c->operands[i].name;
    names.names = name_list;

    printf("expression: ");
    expr_format(&sb, c->out_cast ? c->root->args[0] : c->root, &names); /* as written */
    printf("%s\n\n", sb.data ? sb.data : "");
    sb_free(&sb);

    printf("operands, right-aligned%s:\n",
           c->options.axis != BCG_AXIS_NONE ? " (or by --axis)" : "");
    for (int i = 0; i < c->operand_count; i++) {
        const compile_operand *o = &c->operands[i];
        printf("  %-*s %-4s ", width, o->name, bcg_dtype_name(o->dtype));
        int offset = offset_of(c, i);
        for (int d = 0; d < result->rank; d++) {
            if (!c->used[i])
                printf("%8s", "");
            else if (present(c, i, d))
                printf("%8lld", (long long)o->shape.dims[d - offset]);
            else
                printf("%8s", "-");
        }
        shape_format(&o->shape, buf, sizeof buf);
        printf("   shape %s", buf);
        if (o->strides_given) {
            printf(" strides [");
            for (int d = 0; d < o->shape.rank; d++)
                printf("%s%lld", d ? "," : "", (long long)o->strides[d]);
            printf("]");
        }
        if (!c->used[i])
            printf("   (not read by the expression: no part in the broadcast)");
        printf("\n");
    }
    printf("  %-*s %-4s ", width, "=", "");
    for (int d = 0; d < result->rank; d++)
        printf("%8lld", (long long)result->dims[d]);
    printf("\n\nbroadcast, dimension by dimension from the right:\n");
    for (int d = result->rank - 1; d >= 0; d--) {
        int64_t size = result->dims[d];
        printf("  dim %d -> %lld (%s):", d, (long long)size, rule_of(c, d));
        bool first = true;
        for (int i = 0; i < c->operand_count; i++) {
            const char *name = c->operands[i].name;
            int64_t n = c->broadcast->aligned[i].dims[d];
            if (!c->used[i])
                continue;
            printf("%s", first ? "" : ",");
            first = false;
            if (!present(c, i, d))
                printf(" %s missing, padded with 1", name);
            else if (n != size)
                printf(" %s 1 stretched", name);
            else
                printf(" %s %lld", name, (long long)n);
        }
        printf("\n");
    }
    if (result->rank == 0)
        printf("  (every operand is a scalar: the result is a scalar)\n");
    if (c->broadcast->warning[0])
        printf("warning: %s\n", c->broadcast->warning);

    shape_format(result, buf, sizeof buf);
    printf("\nresult: %s %s, %lld elements%s\n", buf, bcg_dtype_name(c->root->dtype),
           (long long)c->plan->elements,
           c->options.inplace >= 0 ? ", written in place" : "");
    if (c->options.inplace >= 0)
        printf("  in place into %s\n", c->operands[c->options.inplace].name);
    bool view = c->options.output && c->options.output->strides && c->view_strides;
    if (view) {
        printf("  output: a view with strides [");
        for (int d = 0; d < c->out_shape.rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)c->view_strides[d]);
        printf("] (elements)\n");
    }
    if (c->reduce) {
        char target[BCG_MAX_RANK * 24 + 8];
        shape_format(&c->out_shape, target, sizeof target);
        printf("\nreduction: %s to %s %s, %lld elements into each output element\n",
               reduce_name(c->reduce), target, bcg_dtype_name(c->reduced_dtype),
               (long long)c->reduce_count);
        int lead = result->rank - c->out_shape.rank;
        for (int d = result->rank - 1; d >= 0; d--) {
            if (c->reduced[d])
                printf("  dim %d -> reduced: result %lld, output %s\n", d,
                       (long long)result->dims[d], d < lead ? "missing" : "1");
            else
                printf("  dim %d -> kept: %lld\n", d, (long long)result->dims[d]);
        }
    }
    if (c->out_cast)
        printf("  output dtype: %s, cast on store from %s (same-kind)\n",
               bcg_dtype_name(c->out_dtype), bcg_dtype_name(c->root->args[0]->dtype));

    printf("\ntyped expression:\n");
    sb_init(&sb);
    expr_dump(&sb, c->root, &names);
    if (sb.data) {
        for (char *line = strtok(sb.data, "\n"); line; line = strtok(NULL, "\n"))
            printf("  %s\n", line);
    }
    sb_free(&sb);

    printf("\nplan:\n");
    const char **plan_names = malloc(sizeof *plan_names * (size_t)(c->operand_count + 1));
    if (plan_names) {
        plan_names[0] = "out";
        for (int i = 0; i < c->operand_count; i++)
            plan_names[i + 1] = c->operands[i].name;
        sb_init(&sb);
        plan_dump(&sb, c->plan, plan_names);
        if (sb.data) {
            for (char *line = strtok(sb.data, "\n"); line; line = strtok(NULL, "\n"))
                printf("  %s\n", line);
        }
        sb_free(&sb);
        free(plan_names);
    }
    /* what bcg_compile's emitter decides for these shapes (the JIT form) */
    form_describe(&c->form, buf, sizeof buf);
    printf("\ncode (JIT): %s\n", buf);
    /* the kernel IR those choices came to (kir.h) */
    if (c->ir) {
        printf("\nkernel IR (JIT form; ");
        for (int i = 0; i < c->operand_count; i++)
            printf("%sin%d = %s", i ? ", " : "", i, c->operands[i].name);
        printf(c->operand_count ? ", out = the result):\n" : "out = the result):\n");
        sb_init(&sb);
        kir_dump(&sb, c->ir, EXPLAIN_MAX_STEPS);
        if (sb.data) {
            for (char *line = strtok(sb.data, "\n"); line; line = strtok(NULL, "\n"))
                printf("  %s\n", line);
        }
        sb_free(&sb);
    }
    free(name_list);
}

static void print_dims(const int64_t *dims, int rank)
{
    putchar('[');
    for (int d = 0; d < rank; d++)
        printf("%s%lld", d ? ", " : "", (long long)dims[d]);
    putchar(']');
}

static void print_json(const compile *c)
{
    const shape *result = &c->broadcast->result;
    const char **names = malloc(sizeof *names * (size_t)(c->operand_count + 1));
    if (!names)
        return;
    names[0] = "out";
    for (int i = 0; i < c->operand_count; i++)
        names[i + 1] = c->operands[i].name;
    expr_names table = {c->operand_count, names + 1};

    printf("{\"expression\": ");
    strbuf sb;
    sb_init(&sb);
    expr_format(&sb, c->out_cast ? c->root->args[0] : c->root, &table); /* as written */
    cli_json_string(stdout, sb.data ? sb.data : "");
    sb_free(&sb);
    printf(", \"operands\": [");
    for (int i = 0; i < c->operand_count; i++) {
        const compile_operand *o = &c->operands[i];
        printf("%s{\"name\": ", i ? ", " : "");
        cli_json_string(stdout, o->name);
        printf(", \"dtype\": \"%s\", \"shape\": ", bcg_dtype_name(o->dtype));
        print_dims(o->shape.dims, o->shape.rank);
        printf(", \"strides\": ");
        print_dims(o->strides, o->shape.rank);
        printf(", \"aligned\": ");
        print_dims(c->broadcast->aligned[i].dims, c->broadcast->aligned[i].rank);
        printf(", \"read\": %s}", c->used[i] ? "true" : "false");
    }
    printf("], \"dimensions\": [");
    for (int d = result->rank - 1; d >= 0; d--)
        printf("%s{\"dim\": %d, \"size\": %lld, \"rule\": \"%s\"}", d == result->rank - 1 ? "" : ", ",
               d, (long long)result->dims[d], rule_of(c, d));
    printf("], \"shape\": ");
    print_dims(result->dims, result->rank);
    if (c->reduce) {
        printf(", \"reduce\": {\"op\": \"%s\", \"dtype\": \"%s\", \"count\": %lld, "
               "\"shape\": ", reduce_name(c->reduce), bcg_dtype_name(c->reduced_dtype),
               (long long)c->reduce_count);
        print_dims(c->out_shape.dims, c->out_shape.rank);
        printf(", \"reduced\": [");
        for (int d = 0, first = 1; d < result->rank; d++)
            if (c->reduced[d]) {
                printf("%s%d", first ? "" : ", ", d);
                first = 0;
            }
        printf("]}");
    }
    printf(", \"output\": {\"dtype\": \"%s\", \"cast_from\": ", bcg_dtype_name(c->out_dtype));
    if (c->out_cast)
        printf("\"%s\"", bcg_dtype_name(c->root->args[0]->dtype));
    else
        printf("null");
    printf(", \"strides\": ");
    if (c->options.output && c->options.output->strides && c->view_strides) {
        putchar('[');
        for (int d = 0; d < c->out_shape.rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)c->view_strides[d]);
        putchar(']');
    } else {
        printf("null");
    }
    putchar('}');
    printf(", \"dtype\": \"%s\", \"elements\": %lld", bcg_dtype_name(c->root->dtype),
           (long long)c->plan->elements);
    if (c->options.inplace >= 0) {
        printf(", \"inplace\": ");
        cli_json_string(stdout, c->operands[c->options.inplace].name);
    }
    if (c->broadcast->warning[0]) {
        printf(", \"warnings\": [");
        cli_json_string(stdout, c->broadcast->warning);
        printf("]");
    }
    printf(", \"tree\": ");
    sb_init(&sb);
    expr_dump(&sb, c->root, &table);
    cli_json_string(stdout, sb.data ? sb.data : "");
    sb_free(&sb);
    const plan *p = c->plan;
    printf(", \"plan\": {\"loops\": [");
    for (int l = 0; l < p->loop_count; l++) {
        printf("%s{\"extent\": %lld, \"strides\": ", l ? ", " : "", (long long)p->extent[l]);
        putchar('[');
        for (int k = 0; k < p->operand_count; k++)
            printf("%s%lld", k ? ", " : "", (long long)p->stride[k][l]);
        printf("]}");
    }
    printf("], \"operands\": [");
    for (int k = 0; k < p->operand_count; k++) {
        printf("%s", k ? ", " : "");
        cli_json_string(stdout, names[k]);
    }
    printf("], \"text\": ");
    sb_init(&sb);
    plan_dump(&sb, p, names);
    cli_json_string(stdout, sb.data ? sb.data : "");
    sb_free(&sb);
    char text[512];
    form_describe(&c->form, text, sizeof text);
    printf("}, \"form\": {\"kind\": \"%s\", \"stream\": %s, \"text\": ",
           form_kind_name(c->form.kind), c->form.stream ? "true" : "false");
    cli_json_string(stdout, text);
    printf("}");
    if (c->ir) {
        sb_init(&sb);
        kir_dump_json(&sb, c->ir, EXPLAIN_MAX_STEPS);
        printf(", \"ir\": %s", sb.data ? sb.data : "null");
        sb_free(&sb);
    }
    printf("}\n");
    free(names);
}

/* On a broadcast error: the operands right-aligned (as print_text shows
 * them) on stderr, with the failing dimension marked under its column, so
 * the error that follows can be read off the table:
 *     a    f32         5       2       4       1   shape (5, 2, 4, 1)
 *     b    f32         -       3       1       1   shape (3, 1, 1)
 *                              ^ dimension 1: sizes 2 and 3 do not broadcast */
static void print_conflict(const cli_args *args, const bcg_error *err)
{
    int count = args->operand_count, rank = 0, width = 4;
    for (int i = 0; i < count; i++) {
        if (args->operands[i].shape.rank > rank)
            rank = args->operands[i].shape.rank;
        if ((int)strlen(args->operands[i].name) > width)
            width = (int)strlen(args->operands[i].name);
    }
    int axis = args->options.axis;
    bool by_axis = axis != BCG_AXIS_NONE && axis >= 0 && count == 2;
    int d = err->dimension;
    if (d >= rank)
        return;
    int64_t sizes[BCG_MAX_OPERANDS];
    int size_count = 0;
    char buf[BCG_MAX_RANK * 24 + 8];
    fprintf(stderr, "operands, %s:\n", by_axis ? "aligned by --axis" : "right-aligned");
    for (int i = 0; i < count; i++) {
        const cli_operand *o = &args->operands[i];
        int offset = by_axis && o->shape.rank < rank ? axis : rank - o->shape.rank;
        fprintf(stderr, "  %-*s %-4s ", width, o->name, bcg_dtype_name(o->dtype));
        for (int k = 0; k < rank; k++) {
            bool here = k >= offset && k < offset + o->shape.rank;
            if (here)
                fprintf(stderr, "%8lld", (long long)o->shape.dims[k - offset]);
            else
                fprintf(stderr, "%8s", "-");
            int64_t size = here ? o->shape.dims[k - offset] : 1;
            if (k == d && size != 1) {
                int j = 0;
                while (j < size_count && sizes[j] != size)
                    j++;
                if (j == size_count)
                    sizes[size_count++] = size;
            }
        }
        shape_format(&o->shape, buf, sizeof buf);
        fprintf(stderr, "   shape %s\n", buf);
    }
    fprintf(stderr, "  %*s^ dimension %d", width + 13 + 8 * d, "", d); /* under the last digit */
    if (size_count >= 2) {
        fprintf(stderr, ": sizes");
        for (int j = 0; j < size_count; j++)
            fprintf(stderr, "%s%lld", j == 0 ? " " : j + 1 < size_count ? ", " : " and ",
                    (long long)sizes[j]);
        fprintf(stderr, " do not broadcast\n");
    } else if (err->operand >= 0 && err->operand < count) {
        fprintf(stderr, ": %s cannot change its size in place\n",
                args->operands[err->operand].name);
    } else {
        fprintf(stderr, "\n");
    }
}

/* A program of statements: each output's statement explained in turn,
 * under a line naming it (or, with --json, one object holding the names
 * and each statement's object). */
static int explain_program(const cli_args *args, const bcg_operand *ops)
{
    bcg_error err;
    error_clear(&err);
    arena *a = arena_new();
    program p;
    if (!a) {
        fprintf(stderr, "bcgen explain: out of memory\n");
        return 1;
    }
    if (!program_resolve(a, args->expr, ops, args->operand_count, &args->options, &p, &err)) {
        /* fused: the one kernel; else why not, then each statement's */
        program_fusion f;
        compile *fused = NULL;
        if (program_fuse_check(a, &p, ops, args->operand_count, args->expr, &f))
            fail(&err, BCG_ERR_NOMEM, "out of memory");
        if (err.status == BCG_OK && f.fused) {
            bcg_error fuse_err;
            error_clear(&fuse_err);
            compile_request r;
            fused = program_compile_new(a, &fuse_err);
            if (!fused || program_fuse_setup(a, &p, &f, fused, &r)) {
                fail(&err, BCG_ERR_NOMEM, "out of memory");
            } else {
                r.goal = COMPILE_JIT;
                r.max_source = BCG_MAX_SOURCE;
                if (compile_pipeline(fused, &r)) {
                    snprintf(f.why, sizeof f.why, "the fused kernel does not compile: %.200s",
                             fuse_err.message);
                    fused = NULL;
                } else if (program_fused_slower(fused, f.why, sizeof f.why)) {
                    fused = NULL;
                }
            }
        }
        /* --json: every kernel compiled before the document starts, so an
         * error is the only document */
        compile **each = arena_alloc(a, sizeof *each * (size_t)p.count);
        if (!each)
            fail(&err, BCG_ERR_NOMEM, "out of memory");
        if (err.status == BCG_OK && fused) {
            if (!args->json) {
                printf("Fused program: one kernel computes the %d outputs in one pass\n", p.count);
                for (int j = 0; j < p.count; j++) {
                    const program_statement *st = &p.statements[f.order[j]];
                    if (j == 0)
                        printf("  output %s = %s: the kernel's own output (out)\n", st->name,
                               st->text);
                    else if (f.fronts[f.order[j]]->reduce)
                        printf("  output %s = %s: in%d, its %s accumulated in the same loop "
                               "nest\n", st->name, st->text, args->operand_count + j - 1,
                               reduce_name(f.fronts[f.order[j]]->reduce));
                    else
                        printf("  output %s = %s: in%d, stored in the same loop nest\n",
                               st->name, st->text, args->operand_count + j - 1);
                }
                printf("\n");
                print_text(fused);
            }
        } else if (err.status == BCG_OK && !args->json) {
            printf("Not fused: %s\n\n", f.why);
        }
        for (int i = 0; !fused && err.status == BCG_OK && i < p.count; i++) {
            compile *c = program_compile_new(a, &err);
            if (!c) {
                fail(&err, BCG_ERR_NOMEM, "out of memory");
                break;
            }
            const program_statement *st = &p.statements[i];
            compile_request r = {.text = st->expanded, .operands = ops,
                                 .operand_count = args->operand_count, .options = &st->options,
                                 .goal = COMPILE_JIT, .max_source = BCG_MAX_SOURCE};
            if (compile_pipeline(c, &r)) {
                program_statement_error(&p, i, &err);
                break;
            }
            each[i] = c;
            if (args->json)
                continue;
            printf("%sOutput %s (statement %d of %d): %s = %s\n", i ? "\n" : "", st->name, i + 1,
                   p.count, st->name, st->text);
            if (st->expanded_differs)
                printf("  written out: %s\n", st->expanded);
            printf("  each statement is a kernel of its own, run in order over the same "
                   "operands\n\n");
            print_text(c);
        }
        if (args->json && err.status == BCG_OK) {
            printf("{\"program\": ");
            cli_json_string(stdout, args->expr);
            printf(", \"outputs\": [");
            for (int i = 0; i < p.count; i++) {
                printf("%s", i ? ", " : "");
                cli_json_string(stdout, p.statements[i].name);
            }
            printf("], \"fused\": %s, ", fused ? "true" : "false");
            if (!fused) {
                printf("\"not_fused_because\": ");
                cli_json_string(stdout, f.why);
                printf(", ");
            }
            printf("\"kernels\": [\n");
            for (int i = 0; i < (fused ? 1 : p.count); i++) {
                if (i)
                    printf(",\n");
                print_json(fused ? fused : each[i]);
            }
            printf("]}\n");
        }
    }
    int status = 0;
    if (err.status != BCG_OK) {
        if (args->json) {
            printf("{\"error\": ");
            cli_json_string(stdout, err.message);
            printf("}\n");
        }
        status = cli_report("explain", args->expr, &err);
    }
    arena_free(a);
    return status;
}

int cli_explain(int argc, char **argv)
{
    cli_args *args = malloc(sizeof *args);
    if (!args) {
        fprintf(stderr, "bcgen explain: out of memory\n");
        return 1;
    }
    int status = cli_parse_args("explain", help, argc, argv, ARG_JSON | ARG_STREAM, false, args);
    if (status >= 0) {
        free(args);
        return status;
    }
    bcg_operand ops[BCG_MAX_OPERANDS];
    cli_operand_views(args->operand_count, args->operands, ops);
    bcg_error err;
    error_clear(&err);
    if (args->program) {
        status = explain_program(args, ops);
        free(args);
        return status;
    }
    compile c = {0};
    c.arena = arena_new();
    c.err = &err;
    if (!c.arena) {
        fail(&err, BCG_ERR_NOMEM, "out of memory");
    } else if (compile_pipeline(&c, &(compile_request){.text = args->expr, .operands = ops,
                                                        .operand_count = args->operand_count,
                                                        .options = &args->options,
                                                        .goal = COMPILE_JIT,
                                                        .max_source = BCG_MAX_SOURCE}) ==
               BCG_OK) {
        if (args->json)
            print_json(&c);
        else
            print_text(&c);
    }
    if (err.status != BCG_OK) {
        if (args->json) {
            printf("{\"error\": ");
            cli_json_string(stdout, err.message);
            if (err.column > 0)
                printf(", \"column\": %d", err.column);
            if (err.operand >= 0 && err.operand < args->operand_count) {
                printf(", \"operand\": ");
                cli_json_string(stdout, args->operands[err.operand].name);
            }
            if (err.dimension >= 0)
                printf(", \"dimension\": %d", err.dimension);
            printf("}\n");
        }
        if (!args->json && err.status == BCG_ERR_BROADCAST && err.dimension >= 0)
            print_conflict(args, &err);
        status = cli_report("explain", args->expr, &err);
    } else {
        status = 0;
        if (c.broadcast->warning[0] && !args->json)
            fprintf(stderr, "bcgen explain: warning: %s\n", c.broadcast->warning);
    }
    arena_free(c.arena);
    free(args);
    return status;
}
