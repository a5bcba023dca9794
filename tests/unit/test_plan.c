/* test_plan.c - the iteration planner: hand-checked plans (extents, strides,
 * loop order, coalescing), the text dump, allocation failure, and a seeded
 * brute-force property test that every plan visits each result element
 * exactly once with the offsets the original shapes and strides give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* internal.h first: cmocka.h defines a fail() macro that would otherwise
 * mangle util.c's fail() declaration. */
#include "internal.h"

#include <cmocka.h>

/* ---- helpers -------------------------------------------------------------- */

enum { MAX_TEST_INPUTS = 8 };

/* One test input: its original shape and strides, aligned to a result. */
typedef struct test_input {
    shape original;
    shape aligned;
    int64_t strides[BCG_MAX_RANK];
    bool has_strides;
} test_input;

/* A whole case: result shape, output strides, inputs; owns the arena. */
typedef struct test_case {
    arena *arena;
    shape result;
    int64_t output_strides[BCG_MAX_RANK];
    bool has_output_strides;
    int input_count;
    test_input inputs[MAX_TEST_INPUTS];
    plan_input plan_inputs[MAX_TEST_INPUTS];
    plan *plan;
} test_case;

static void set_shape(shape *s, int rank, const int64_t *dims)
{
    s->rank = rank;
    for (int d = 0; d < rank; d++)
        s->dims[d] = dims[d];
}

static void case_init(test_case *c, int rank, const int64_t *dims)
{
    memset(c, 0, sizeof *c);
    c->arena = arena_new();
    assert_non_null(c->arena);
    set_shape(&c->result, rank, dims);
}

static void case_output_strides(test_case *c, const int64_t *strides)
{
    c->has_output_strides = true;
    for (int d = 0; d < c->result.rank; d++)
        c->output_strides[d] = strides[d];
}

/* Adds an input whose original dimension 0 sits at result dimension
 * AXIS_OFFSET (-1: right-aligned).  STRIDES may be NULL (contiguous). */
static void case_input(test_case *c, int rank, const int64_t *dims,
                       const int64_t *strides, int axis_offset)
{
    assert_true(c->input_count < MAX_TEST_INPUTS);
    test_input *in = &c->inputs[c->input_count];
    plan_input *pin = &c->plan_inputs[c->input_count];
    c->input_count++;
    if (axis_offset < 0)
        axis_offset = c->result.rank - rank;
    set_shape(&in->original, rank, dims);
    in->aligned.rank = c->result.rank;
    for (int d = 0; d < c->result.rank; d++) {
        int j = d - axis_offset;
        in->aligned.dims[d] = j >= 0 && j < rank ? dims[j] : 1;
    }
    in->has_strides = strides != NULL;
    for (int j = 0; strides && j < rank; j++)
        in->strides[j] = strides[j];
    pin->aligned = &in->aligned;
    pin->strides = strides ? in->strides : NULL;
    pin->original_rank = rank;
    pin->original = &in->original;
    pin->axis_offset = axis_offset;
}

static void case_build(test_case *c)
{
    bcg_error err;
    error_clear(&err);
    bcg_status status = plan_build(c->arena, &c->result,
                                   c->has_output_strides ? c->output_strides : NULL,
                                   c->input_count, c->plan_inputs, &c->plan, &err);
    assert_int_equal(status, BCG_OK);
    assert_int_equal(err.status, BCG_OK);
    assert_non_null(c->plan);
    assert_int_equal(c->plan->operand_count, c->input_count + 1);
}

static void case_free(test_case *c)
{
    arena_free(c->arena);
}

/* Checks the loop extents and, row after row, each operand's strides. */
static void assert_loops(const plan *p, int loop_count, const int64_t *extents,
                         const int64_t *strides /* operand_count rows */)
{
    assert_int_equal(p->loop_count, loop_count);
    for (int l = 0; l < loop_count; l++)
        assert_int_equal(p->extent[l], extents[l]);
    for (int k = 0; k < p->operand_count; k++)
        for (int l = 0; l < loop_count; l++)
            assert_int_equal(p->stride[k][l], strides[k * loop_count + l]);
}

static void assert_covers(const plan *p, int l, int first, int count)
{
    assert_int_equal(p->dim_first[l], first);
    assert_int_equal(p->dim_count[l], count);
}

static void assert_dump(const plan *p, const char *const *names, const char *expected)
{
    strbuf sb;
    sb_init(&sb);
    plan_dump(&sb, p, names);
    char *text = sb_finish(&sb);
    assert_non_null(text);
    assert_string_equal(text, expected);
    mem_free(text);
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- the examples ------------------------------------------------------- */

/* (5,3,4,1) + (3,1,1): b steps only along dimension 1, so nothing merges
 * across it; the size-1 dimension is dropped. */
static void test_bias_broadcast_keeps_three_loops(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 4, DIMS(5, 3, 4, 1));
    case_input(&c, 4, DIMS(5, 3, 4, 1), NULL, -1);
    case_input(&c, 3, DIMS(3, 1, 1), NULL, -1);
    case_build(&c);
    assert_int_equal(c.plan->elements, 60);
    assert_false(c.plan->empty);
    assert_loops(c.plan, 3, DIMS(5, 3, 4),
                 DIMS(12, 4, 1, /* a */ 12, 4, 1, /* b */ 0, 1, 0));
    assert_int_equal(c.plan->order[0], 0);
    assert_int_equal(c.plan->order[1], 1);
    assert_int_equal(c.plan->order[2], 2);
    assert_int_equal(c.plan->order[3], -1);
    case_free(&c);
}

static void test_same_shapes_merge_into_one_loop(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 4, DIMS(5, 3, 4, 1));
    case_input(&c, 4, DIMS(5, 3, 4, 1), NULL, -1);
    case_input(&c, 4, DIMS(5, 3, 4, 1), NULL, -1);
    case_build(&c);
    assert_loops(c.plan, 1, DIMS(60), DIMS(1, 1, 1));
    assert_covers(c.plan, 0, 0, 3);
    case_free(&c);
}

static void test_row_vector_gives_two_loops(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(4096, 4096));
    case_input(&c, 2, DIMS(4096, 4096), NULL, -1);
    case_input(&c, 1, DIMS(4096), NULL, -1);
    case_build(&c);
    assert_int_equal(c.plan->elements, 4096 * 4096);
    assert_loops(c.plan, 2, DIMS(4096, 4096),
                 DIMS(4096, 1, 4096, 1, 0, 1));
    case_free(&c);
}

/* A column vector (4096,1) broadcast along the rows: stride 1 outside, 0 inside. */
static void test_column_vector_gives_two_loops(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(4096, 8));
    case_input(&c, 2, DIMS(4096, 1), NULL, -1);
    case_build(&c);
    assert_loops(c.plan, 2, DIMS(4096, 8), DIMS(8, 1, 1, 0));
    case_free(&c);
}

static void test_scalar_operand_has_zero_strides(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), NULL, -1);
    case_input(&c, 0, NULL, NULL, -1);
    case_build(&c);
    /* 0 == 0 * 4: a broadcast operand never blocks a merge */
    assert_loops(c.plan, 1, DIMS(12), DIMS(1, 1, 0));
    case_free(&c);
}

static void test_scalars_only_make_no_loop(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 0, NULL);
    case_input(&c, 0, NULL, NULL, -1);
    case_input(&c, 0, NULL, NULL, -1);
    case_build(&c);
    assert_int_equal(c.plan->loop_count, 0);
    assert_int_equal(c.plan->elements, 1);
    assert_false(c.plan->empty);
    assert_int_equal(c.plan->order[0], -1);
    case_free(&c);
}

static void test_all_ones_result_makes_no_loop(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 3, DIMS(1, 1, 1));
    case_input(&c, 3, DIMS(1, 1, 1), DIMS(7, -3, 5), -1);
    case_build(&c);
    assert_int_equal(c.plan->loop_count, 0);
    assert_int_equal(c.plan->elements, 1);
    case_free(&c);
}

static void test_transposed_input_keeps_its_strides(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), DIMS(1, 3), -1);
    case_input(&c, 2, DIMS(3, 4), NULL, -1);
    case_build(&c);
    /* the contiguous output keeps C order; a is read with stride 3 inside */
    assert_loops(c.plan, 2, DIMS(3, 4), DIMS(4, 1, 1, 3, 4, 1));
    case_free(&c);
}

static void test_reversed_last_dimension_does_not_merge(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), DIMS(4, -1), -1);
    case_build(&c);
    /* 4 != -1 * 4: merging would read the row forwards */
    assert_loops(c.plan, 2, DIMS(3, 4), DIMS(4, 1, 4, -1));
    case_free(&c);
}

static void test_reversed_first_dimension_does_not_merge(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), DIMS(-4, 1), -1);
    case_build(&c);
    assert_loops(c.plan, 2, DIMS(3, 4), DIMS(4, 1, -4, 1));
    case_free(&c);
}

/* a[::-1, ::-1] of a contiguous array is one backwards run. */
static void test_fully_reversed_input_merges_backwards(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), DIMS(-4, -1), -1);
    case_build(&c);
    assert_loops(c.plan, 1, DIMS(12), DIMS(1, -1));
    case_free(&c);
}

/* np.broadcast_to(row, (3,4)) passed as a (3,4) view with strides (0,1). */
static void test_expanded_view_keeps_zero_stride(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), DIMS(0, 1), -1);
    case_input(&c, 2, DIMS(3, 4), DIMS(0, 0), -1);
    case_build(&c);
    assert_loops(c.plan, 2, DIMS(3, 4), DIMS(4, 1, 0, 1, 0, 0));
    case_free(&c);
}

static void test_fully_expanded_view_merges(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), DIMS(0, 0), -1);
    case_build(&c);
    assert_loops(c.plan, 1, DIMS(12), DIMS(1, 0));
    case_free(&c);
}

/* Strides given for a size-1 dimension are ignored: it is broadcast. */
static void test_size_one_dimension_stride_is_ignored(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(1, 4), DIMS(99, 2), -1);
    case_build(&c);
    assert_loops(c.plan, 2, DIMS(3, 4), DIMS(4, 1, 0, 2));
    case_free(&c);
}

/* In place into a Fortran-ordered operand: the output's order wins. */
static void test_inplace_fortran_output_reorders(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_output_strides(&c, DIMS(1, 3));
    case_input(&c, 2, DIMS(3, 4), DIMS(1, 3), -1);
    case_input(&c, 2, DIMS(3, 4), NULL, -1);
    case_build(&c);
    assert_int_equal(c.plan->order[0], 1);
    assert_int_equal(c.plan->order[1], 0);
    assert_loops(c.plan, 2, DIMS(4, 3), DIMS(3, 1, 3, 1, 1, 4));
    assert_covers(c.plan, 0, 0, 1);
    assert_covers(c.plan, 1, 1, 1);
    case_free(&c);
}

static void test_inplace_fortran_everywhere_merges(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_output_strides(&c, DIMS(1, 3));
    case_input(&c, 2, DIMS(3, 4), DIMS(1, 3), -1);
    case_build(&c);
    assert_loops(c.plan, 1, DIMS(12), DIMS(1, 1));
    assert_covers(c.plan, 0, 0, 2);
    assert_dump(c.plan, (const char *const[]){"a", "a"},
                "loop 0: extent 12 (dims 1,0 merged)  strides a 1, a 1\n"
                "elements 12, loops 1\n");
    case_free(&c);
}

/* In place into a padded row-major operand (rows 8 apart): no merge. */
static void test_inplace_padded_output_does_not_merge(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_output_strides(&c, DIMS(8, 1));
    case_input(&c, 2, DIMS(3, 4), DIMS(8, 1), -1);
    case_input(&c, 1, DIMS(4), NULL, -1);
    case_build(&c);
    assert_loops(c.plan, 2, DIMS(3, 4), DIMS(8, 1, 8, 1, 0, 1));
    case_free(&c);
}

/* In place into a reversed operand: the output's magnitude decides order. */
static void test_inplace_negative_output_strides(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 3, DIMS(2, 3, 4));
    case_output_strides(&c, DIMS(-1, 8, -2));
    case_input(&c, 3, DIMS(2, 3, 4), DIMS(-1, 8, -2), -1);
    case_build(&c);
    /* |8| > |-2| > |-1|: dims 1, 2, 0; -2 == -1 * 2 merges dims 2 and 0 */
    assert_int_equal(c.plan->order[0], 1);
    assert_int_equal(c.plan->order[1], 2);
    assert_int_equal(c.plan->order[2], 0);
    assert_loops(c.plan, 2, DIMS(3, 8), DIMS(8, -1, 8, -1));
    case_free(&c);
}

/* When the output's strides tie, input 0 decides, then the index. */
static void test_output_tie_is_broken_by_inputs(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_output_strides(&c, DIMS(5, -5));
    case_input(&c, 2, DIMS(3, 4), DIMS(1, 3), -1);
    case_build(&c);
    assert_int_equal(c.plan->order[0], 1);
    assert_int_equal(c.plan->order[1], 0);
    case_free(&c);

    case_init(&c, 2, DIMS(3, 4));
    case_output_strides(&c, DIMS(5, 5));
    case_input(&c, 2, DIMS(3, 4), DIMS(2, 2), -1);
    case_input(&c, 2, DIMS(3, 4), DIMS(6, 7), -1);
    case_build(&c);
    assert_int_equal(c.plan->order[0], 1);
    assert_int_equal(c.plan->order[1], 0);
    case_free(&c);

    case_init(&c, 2, DIMS(3, 4));
    case_output_strides(&c, DIMS(5, 5));
    case_input(&c, 2, DIMS(3, 4), DIMS(2, 2), -1);
    case_build(&c);
    assert_int_equal(c.plan->order[0], 0);
    assert_int_equal(c.plan->order[1], 1);
    case_free(&c);
}

/* A contiguous output keeps C order whatever the inputs' layouts. */
static void test_contiguous_output_keeps_c_order(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 3, DIMS(2, 3, 4));
    case_input(&c, 3, DIMS(2, 3, 4), DIMS(1, 2, 6), -1);
    case_input(&c, 3, DIMS(2, 3, 4), DIMS(1, 2, 6), -1);
    case_build(&c);
    for (int pos = 0; pos < 3; pos++)
        assert_int_equal(c.plan->order[pos], pos);
    /* the inputs' 1 != 2 * 3 and 2 != 6 * 4 keep all three loops */
    assert_loops(c.plan, 3, DIMS(2, 3, 4),
                 DIMS(12, 4, 1, 1, 2, 6, 1, 2, 6));
    case_free(&c);
}

/* Paddle's axis: (2,3,4,5) + (3,4) at axis 1; b spans dims 1-2 contiguously. */
static void test_paddle_axis_merges_middle(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 4, DIMS(2, 3, 4, 5));
    case_input(&c, 4, DIMS(2, 3, 4, 5), NULL, -1);
    case_input(&c, 2, DIMS(3, 4), NULL, 1);
    case_build(&c);
    assert_loops(c.plan, 3, DIMS(2, 12, 5),
                 DIMS(60, 5, 1, 60, 5, 1, 0, 1, 0));
    assert_covers(c.plan, 0, 0, 1);
    assert_covers(c.plan, 1, 1, 2);
    assert_covers(c.plan, 2, 3, 1);
    assert_dump(c.plan, (const char *const[]){"out", "x", "y"},
                "loop 0: extent 2 (dim 0)             strides out 60, x 60, y 0\n"
                "loop 1: extent 12 (dims 1-2 merged)  strides out 5, x 5, y 1\n"
                "loop 2: extent 5 (dim 3)             strides out 1, x 1, y 0\n"
                "elements 120, loops 3\n");
    case_free(&c);
}

/* Paddle's axis with trailing size-1 dims reaching past the result rank. */
static void test_paddle_axis_past_the_end(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 3, DIMS(2, 3, 4));
    case_input(&c, 3, DIMS(2, 3, 4), NULL, -1);
    /* b = (3,4,1) at axis 1: its last dimension falls past the end */
    c.input_count++;
    test_input *in = &c.inputs[1];
    set_shape(&in->original, 3, DIMS(3, 4, 1));
    set_shape(&in->aligned, 3, DIMS(1, 3, 4));
    in->strides[0] = 8, in->strides[1] = 2, in->strides[2] = 77;
    in->has_strides = true;
    c.plan_inputs[1] = (plan_input){&in->aligned, in->strides, 3, &in->original, 1};
    case_build(&c);
    /* b's 8 == 2 * 4 lets dims 1-2 merge; its stride 77 is never used */
    assert_loops(c.plan, 2, DIMS(2, 12), DIMS(12, 1, 12, 1, 0, 2));
    case_free(&c);

    /* the same with -10 at dim 1: -10 != 2 * 4, so three loops */
    case_init(&c, 3, DIMS(2, 3, 4));
    c.input_count = 1;
    in = &c.inputs[0];
    set_shape(&in->original, 3, DIMS(3, 4, 1));
    set_shape(&in->aligned, 3, DIMS(1, 3, 4));
    in->strides[0] = -10, in->strides[1] = 2, in->strides[2] = 77;
    in->has_strides = true;
    c.plan_inputs[0] = (plan_input){&in->aligned, in->strides, 3, &in->original, 1};
    case_build(&c);
    assert_loops(c.plan, 3, DIMS(2, 3, 4), DIMS(12, 4, 1, 0, -10, 2));
    case_free(&c);
}

/* Size-1 dimensions in the middle are dropped and the rest merge across them. */
static void test_size_one_dimensions_are_dropped(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 5, DIMS(1, 5, 1, 3, 1));
    case_input(&c, 5, DIMS(1, 5, 1, 3, 1), NULL, -1);
    case_build(&c);
    assert_loops(c.plan, 1, DIMS(15), DIMS(1, 1));
    assert_int_equal(c.plan->order[0], 1);
    assert_int_equal(c.plan->order[1], 3);
    assert_int_equal(c.plan->order[2], -1);
    assert_dump(c.plan, NULL,
                "loop 0: extent 15 (dims 1,3 merged)  strides out 1, in0 1\n"
                "elements 15, loops 1\n");
    case_free(&c);
}

static void test_empty_result(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 3, DIMS(3, 0, 4));
    case_input(&c, 3, DIMS(3, 0, 4), NULL, -1);
    case_input(&c, 1, DIMS(4), NULL, -1);
    case_build(&c);
    assert_true(c.plan->empty);
    assert_int_equal(c.plan->elements, 0);
    case_free(&c);

    /* an input of size 1 broadcast against 0 */
    case_init(&c, 1, DIMS(0));
    case_input(&c, 1, DIMS(1), NULL, -1);
    case_build(&c);
    assert_true(c.plan->empty);
    assert_int_equal(c.plan->elements, 0);
    case_free(&c);
}

/* Strides that would overflow when multiplied by an extent never merge. */
static void test_overflowing_stride_product_does_not_merge(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(2, 4));
    case_input(&c, 2, DIMS(2, 4), DIMS(0, INT64_MAX / 2), -1);
    case_build(&c);
    assert_int_equal(c.plan->loop_count, 2);
    assert_int_equal(c.plan->stride[1][1], INT64_MAX / 2);
    case_free(&c);

    /* (INT64_MIN / 4) * 4 is exactly INT64_MIN: no overflow, so it merges */
    case_init(&c, 2, DIMS(2, 4));
    case_input(&c, 2, DIMS(2, 4), DIMS(INT64_MIN, INT64_MIN / 4), -1);
    case_build(&c);
    assert_loops(c.plan, 1, DIMS(8), DIMS(1, INT64_MIN / 4));
    case_free(&c);
}

static void test_build_is_deterministic(void **state)
{
    (void)state;
    test_case c1, c2;
    case_init(&c1, 4, DIMS(2, 3, 4, 5));
    case_output_strides(&c1, DIMS(1, 2, 6, 24));
    case_input(&c1, 4, DIMS(2, 3, 4, 5), DIMS(60, -20, 5, 1), -1);
    case_input(&c1, 2, DIMS(4, 5), DIMS(0, 0), -1);
    case_build(&c1);
    c2 = c1;
    c2.arena = arena_new();
    assert_non_null(c2.arena);
    for (int i = 0; i < c2.input_count; i++) {
        c2.plan_inputs[i].aligned = &c2.inputs[i].aligned;
        c2.plan_inputs[i].original = &c2.inputs[i].original;
        if (c2.plan_inputs[i].strides)
            c2.plan_inputs[i].strides = c2.inputs[i].strides;
    }
    case_build(&c2);
    const plan *p1 = c1.plan, *p2 = c2.plan;
    assert_int_equal(p1->loop_count, p2->loop_count);
    assert_memory_equal(p1->extent, p2->extent, sizeof p1->extent);
    assert_memory_equal(p1->order, p2->order, sizeof p1->order);
    assert_memory_equal(p1->dim_first, p2->dim_first, sizeof p1->dim_first);
    assert_memory_equal(p1->dim_count, p2->dim_count, sizeof p1->dim_count);
    for (int k = 0; k < p1->operand_count; k++)
        assert_memory_equal(p1->stride[k], p2->stride[k], sizeof p1->stride[k]);
    /* the output (Fortran-ordered) decides: dims 3, 2, 1, 0 */
    assert_int_equal(p1->order[0], 3);
    assert_int_equal(p1->order[3], 0);
    case_free(&c1);
    case_free(&c2);
}

/* ---- dump --------------------------------------------------------------- */

static void test_dump_of_bias_example(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 4, DIMS(5, 3, 4, 1));
    case_input(&c, 4, DIMS(5, 3, 4, 1), NULL, -1);
    case_input(&c, 3, DIMS(3, 1, 1), NULL, -1);
    case_build(&c);
    assert_dump(c.plan, (const char *const[]){"out", "a", "b"},
                "loop 0: extent 5 (dim 0)  strides out 12, a 12, b 0\n"
                "loop 1: extent 3 (dim 1)  strides out 4, a 4, b 1\n"
                "loop 2: extent 4 (dim 2)  strides out 1, a 1, b 0\n"
                "elements 60, loops 3\n");
    case_free(&c);
}

static void test_dump_of_scalar_and_empty(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 0, NULL);
    case_input(&c, 0, NULL, NULL, -1);
    case_build(&c);
    assert_dump(c.plan, (const char *const[]){"out", "a"}, "elements 1, loops 0\n");
    case_free(&c);

    case_init(&c, 2, DIMS(0, 3));
    case_input(&c, 2, DIMS(0, 3), NULL, -1);
    case_build(&c);
    assert_dump(c.plan, (const char *const[]){"out", "a"},
                "loop 0: extent 0 (dims 0-1 merged)  strides out 1, a 1\n"
                "elements 0, loops 1, empty\n");
    case_free(&c);
}

/* Missing names fall back to "out" and "in<i>". */
static void test_dump_names_fall_back(void **state)
{
    (void)state;
    test_case c;
    case_init(&c, 2, DIMS(3, 4));
    case_input(&c, 2, DIMS(3, 4), DIMS(1, 3), -1);
    case_input(&c, 1, DIMS(4), NULL, -1);
    case_build(&c);
    assert_dump(c.plan, (const char *const[]){NULL, "a", NULL},
                "loop 0: extent 3 (dim 0)  strides out 4, a 1, in1 0\n"
                "loop 1: extent 4 (dim 1)  strides out 1, a 3, in1 1\n"
                "elements 12, loops 2\n");
    case_free(&c);
}

/* ---- allocation failure ---------------------------------------------------- */

static void test_allocation_failure_reports_nomem(void **state)
{
    (void)state;
    enum { INPUTS = 60 };   /* big enough that the stride rows need own blocks */
    static shape aligned[INPUTS];
    plan_input inputs[INPUTS];
    shape result;
    set_shape(&result, 2, DIMS(3, 4));
    for (int i = 0; i < INPUTS; i++) {
        aligned[i] = result;
        inputs[i] = (plan_input){&aligned[i], NULL, 2, &aligned[i], 0};
    }
    bool succeeded = false;
    for (long n = 1; n < 20 && !succeeded; n++) {
        arena *a = arena_new();
        assert_non_null(a);
        bcg_error err;
        error_clear(&err);
        plan sentinel;
        plan *p = &sentinel;   /* plan_build must reset it on failure */
        mem_fail_after(n);
        bcg_status status = plan_build(a, &result, NULL, INPUTS, inputs, &p, &err);
        mem_fail_after(0);
        if (status == BCG_OK) {
            succeeded = true;
            assert_non_null(p);
            assert_int_equal(p->loop_count, 1);
            assert_true(n > 2);   /* it made at least two allocations */
        } else {
            assert_int_equal(status, BCG_ERR_NOMEM);
            assert_int_equal(err.status, BCG_ERR_NOMEM);
            assert_null(p);
        }
        arena_free(a);
    }
    assert_true(succeeded);
}

/* ---- property test: every element exactly once, with the right offsets ---- */

enum { PROPERTY_CASES = 4000, MAX_RANDOM_INPUTS = 4, TUPLE = MAX_RANDOM_INPUTS + 1 };

static uint64_t next_random(uint64_t *state)
{
    /* splitmix64: small, seedable, good enough to pick shapes */
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int random_below(uint64_t *state, int n)
{
    return (int)(next_random(state) % (uint64_t)n);
}

static int64_t random_stride(uint64_t *state)
{
    return random_below(state, 19) - 9;
}

/* Contiguous strides of DIMS, permuted and with random signs; sometimes
 * padded or zeroed to imitate slices and expanded views. */
static void random_layout(uint64_t *state, const int64_t *dims, int rank,
                          int64_t *strides)
{
    int mode = random_below(state, 4);
    if (mode == 0) {
        for (int d = 0; d < rank; d++)
            strides[d] = random_stride(state);
        return;
    }
    int perm[BCG_MAX_RANK];
    for (int d = 0; d < rank; d++)
        perm[d] = d;
    for (int d = rank - 1; d > 0; d--) {
        int e = random_below(state, d + 1);
        int t = perm[d];
        perm[d] = perm[e];
        perm[e] = t;
    }
    int64_t step = mode == 3 ? 2 : 1;
    for (int i = rank - 1; i >= 0; i--) {
        int d = perm[i];
        strides[d] = random_below(state, 3) == 0 ? -step : step;
        int64_t size = dims[d] ? dims[d] : 1;
        step *= size + (mode == 3 ? random_below(state, 2) : 0);
        if (mode == 2 && random_below(state, 4) == 0)
            strides[d] = 0;
    }
}

static int compare_tuples(const void *x, const void *y)
{
    const int64_t *a = x, *b = y;
    for (int k = 0; k < TUPLE; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

/* The offsets of every result element, straight from the original shapes
 * and strides, with no knowledge of the plan. */
static size_t reference_tuples(const test_case *c, int64_t *tuples)
{
    const shape *r = &c->result;
    int64_t out_strides[BCG_MAX_RANK];
    int64_t step = 1;
    for (int d = r->rank - 1; d >= 0; d--) {
        out_strides[d] = c->has_output_strides ? c->output_strides[d] : step;
        step *= r->dims[d];
    }
    for (int d = 0; d < r->rank; d++)
        if (r->dims[d] == 0)
            return 0;
    int64_t index[BCG_MAX_RANK] = {0};
    size_t count = 0;
    for (;;) {
        int64_t *t = tuples + count++ * TUPLE;
        memset(t, 0, sizeof(int64_t) * TUPLE);
        for (int d = 0; d < r->rank; d++)
            t[0] += index[d] * out_strides[d];
        for (int i = 0; i < c->input_count; i++) {
            const test_input *in = &c->inputs[i];
            const plan_input *pin = &c->plan_inputs[i];
            int64_t contiguous = 1;
            for (int j = in->original.rank - 1; j >= 0; j--) {
                int64_t stride = in->has_strides ? in->strides[j] : contiguous;
                contiguous *= in->original.dims[j];
                int d = pin->axis_offset + j;
                if (in->original.dims[j] != 1)
                    t[i + 1] += index[d] * stride;
            }
        }
        int d = r->rank - 1;
        while (d >= 0 && ++index[d] == r->dims[d])
            index[d--] = 0;
        if (d < 0)
            return count;
    }
}

/* The offsets the plan's loops visit. */
static size_t plan_tuples(const plan *p, int64_t *tuples)
{
    if (p->empty)
        return 0;
    int64_t index[BCG_MAX_RANK] = {0};
    size_t count = 0;
    for (;;) {
        int64_t *t = tuples + count++ * TUPLE;
        memset(t, 0, sizeof(int64_t) * TUPLE);
        for (int k = 0; k < p->operand_count; k++)
            for (int l = 0; l < p->loop_count; l++)
                t[k] += index[l] * p->stride[k][l];
        int l = p->loop_count - 1;
        while (l >= 0 && ++index[l] == p->extent[l])
            index[l--] = 0;
        if (l < 0)
            return count;
    }
}

static void random_case(uint64_t *state, test_case *c)
{
    int rank = random_below(state, 7);
    int64_t dims[BCG_MAX_RANK];
    for (int d = 0; d < rank; d++)
        /* 0 rarely, so that most cases are not empty */
        dims[d] = random_below(state, 16) == 0 ? 0 : 1 + random_below(state, 4);
    case_init(c, rank, dims);
    if (random_below(state, 2)) {
        int64_t strides[BCG_MAX_RANK];
        random_layout(state, dims, rank, strides);
        case_output_strides(c, strides);
    }
    int input_count = 1 + random_below(state, MAX_RANDOM_INPUTS);
    for (int i = 0; i < input_count; i++) {
        bool right_aligned = random_below(state, 3) != 0;
        int original_rank, axis_offset;
        if (right_aligned) {
            original_rank = random_below(state, rank + 1);
            axis_offset = rank - original_rank;
        } else {
            axis_offset = random_below(state, rank + 1);
            original_rank = random_below(state, rank - axis_offset + 3);
        }
        int64_t original[BCG_MAX_RANK], strides[BCG_MAX_RANK];
        for (int j = 0; j < original_rank; j++) {
            int d = axis_offset + j;
            original[j] = d < rank && random_below(state, 3) != 0 ? dims[d] : 1;
        }
        random_layout(state, original, original_rank, strides);
        bool contiguous = random_below(state, 4) == 0;
        case_input(c, original_rank, original, contiguous ? NULL : strides, axis_offset);
    }
}

/* Invariants of a plan beyond its offsets: loops cover the kept dimensions
 * once each, no loop could merge with the next, output steps shrink inward. */
static void check_structure(const test_case *c)
{
    const plan *p = c->plan;
    const shape *r = &c->result;
    int kept = 0;
    bool seen[BCG_MAX_RANK] = {false};
    for (int d = 0; d < r->rank; d++)
        kept += r->dims[d] != 1;
    int position = 0;
    for (int l = 0; l < p->loop_count; l++) {
        assert_int_equal(p->dim_first[l], position);
        assert_true(p->dim_count[l] >= 1);
        int64_t extent = 1;
        for (int i = 0; i < p->dim_count[l]; i++) {
            int d = p->order[position + i];
            assert_true(d >= 0 && d < r->rank && r->dims[d] != 1 && !seen[d]);
            seen[d] = true;
            extent *= r->dims[d];
        }
        assert_int_equal(p->extent[l], extent);
        position += p->dim_count[l];
    }
    assert_int_equal(position, kept);
    if (p->empty)
        return;
    for (int l = 0; l + 1 < p->loop_count; l++) {
        bool all_joint = true;
        for (int k = 0; k < p->operand_count; k++)
            if (p->stride[k][l] != p->stride[k][l + 1] * p->extent[l + 1])
                all_joint = false;
        assert_false(all_joint);
        assert_true(llabs(p->stride[0][l]) >= llabs(p->stride[0][l + 1]));
    }
    if (!c->has_output_strides)
        for (int pos = 1; pos < kept; pos++)
            assert_true(p->order[pos - 1] < p->order[pos]);
}

static void test_random_plans_visit_every_element_once(void **state)
{
    (void)state;
    enum { MAX_ELEMENTS = 4 * 4 * 4 * 4 * 4 * 4 };
    int64_t *expected = malloc(sizeof(int64_t) * TUPLE * MAX_ELEMENTS);
    int64_t *visited = malloc(sizeof(int64_t) * TUPLE * MAX_ELEMENTS);
    assert_non_null(expected);
    assert_non_null(visited);
    uint64_t random = 20240611;
    int merged_somewhere = 0, reordered_somewhere = 0, empty_cases = 0;
    for (int n = 0; n < PROPERTY_CASES; n++) {
        test_case c;
        random_case(&random, &c);
        case_build(&c);
        size_t expected_count = reference_tuples(&c, expected);
        size_t visited_count = plan_tuples(c.plan, visited);
        assert_int_equal(c.plan->elements, (int64_t)expected_count);
        assert_int_equal(c.plan->empty, expected_count == 0);
        assert_int_equal(visited_count, expected_count);
        qsort(expected, expected_count, sizeof(int64_t) * TUPLE, compare_tuples);
        qsort(visited, visited_count, sizeof(int64_t) * TUPLE, compare_tuples);
        if (expected_count)
            assert_memory_equal(visited, expected, sizeof(int64_t) * TUPLE * expected_count);
        check_structure(&c);
        for (int l = 0; l < c.plan->loop_count; l++)
            merged_somewhere += c.plan->dim_count[l] > 1;
        for (int pos = 1; pos < c.result.rank && c.plan->order[pos] >= 0; pos++)
            reordered_somewhere += c.plan->order[pos] < c.plan->order[pos - 1];
        empty_cases += c.plan->empty;
        case_free(&c);
    }
    /* the generator must reach the interesting cases */
    assert_true(merged_somewhere > 100);
    assert_true(reordered_somewhere > 100);
    assert_true(empty_cases > 50);
    free(expected);
    free(visited);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bias_broadcast_keeps_three_loops),
        cmocka_unit_test(test_same_shapes_merge_into_one_loop),
        cmocka_unit_test(test_row_vector_gives_two_loops),
        cmocka_unit_test(test_column_vector_gives_two_loops),
        cmocka_unit_test(test_scalar_operand_has_zero_strides),
        cmocka_unit_test(test_scalars_only_make_no_loop),
        cmocka_unit_test(test_all_ones_result_makes_no_loop),
        cmocka_unit_test(test_transposed_input_keeps_its_strides),
        cmocka_unit_test(test_reversed_last_dimension_does_not_merge),
        cmocka_unit_test(test_reversed_first_dimension_does_not_merge),
        cmocka_unit_test(test_fully_reversed_input_merges_backwards),
        cmocka_unit_test(test_expanded_view_keeps_zero_stride),
        cmocka_unit_test(test_fully_expanded_view_merges),
        cmocka_unit_test(test_size_one_dimension_stride_is_ignored),
        cmocka_unit_test(test_inplace_fortran_output_reorders),
        cmocka_unit_test(test_inplace_fortran_everywhere_merges),
        cmocka_unit_test(test_inplace_padded_output_does_not_merge),
        cmocka_unit_test(test_inplace_negative_output_strides),
        cmocka_unit_test(test_output_tie_is_broken_by_inputs),
        cmocka_unit_test(test_contiguous_output_keeps_c_order),
        cmocka_unit_test(test_paddle_axis_merges_middle),
        cmocka_unit_test(test_paddle_axis_past_the_end),
        cmocka_unit_test(test_size_one_dimensions_are_dropped),
        cmocka_unit_test(test_empty_result),
        cmocka_unit_test(test_overflowing_stride_product_does_not_merge),
        cmocka_unit_test(test_build_is_deterministic),
        cmocka_unit_test(test_dump_of_bias_example),
        cmocka_unit_test(test_dump_of_scalar_and_empty),
        cmocka_unit_test(test_dump_names_fall_back),
        cmocka_unit_test(test_allocation_failure_reports_nomem),
        cmocka_unit_test(test_random_plans_visit_every_element_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
