/* vex.c - fused AVX2 machine code for the tree of one tile.
 *
 * libtcc writes scalar code, so a tiled kernel (lower.c, "microkernel
 * tiles") gets vector speed by calling one gcc-compiled microkernel per
 * operation per tile: a tree of k operations makes k passes over the tile,
 * each loading and storing every element.  This file writes, for a tree of
 * the supported operations, ONE function that loads each operand once per
 * vector, computes the whole tree in ymm registers and stores the root:
 *
 *     void f(long n, void *out, const void *const *in)    (SysV x86-64)
 *
 * in[j] is leaf j's first element (kernel_ir.vex->leaf_node[j] says which
 * operand or hoisted local), read contiguously, as one value (broadcast)
 * or in place with a stride of -1 or +-2 (strided_load); literals live in
 * a constant pool after the code.  The loop runs over n in vectors of 8
 * f32 or 4 f64 lanes; the last n % lanes elements are loaded and stored
 * under a mask (vmaskmov) or copied into zeroed stack slots, computed by a
 * second copy of the body and copied out, so no lane outside the arrays is
 * ever read or written.  The rows form (vex_layout.outer) adds a 4th
 * argument, long rows, and runs that many runs of n, moving every pointer
 * by its outer stride; a streaming root (vex_layout.stream) peels to the
 * output's 32-byte boundary and stores with vmovntps.  Results are those of the reference evaluator bit
 * for bit: no FMA, NumPy's minimum/maximum (see emit_extreme), comparisons
 * with the ordered/unordered predicate C uses.
 *
 * The encoder below knows exactly the instructions used: a table of VEX
 * forms (prefix bits, map, opcode) and a handful of GPR forms, with one
 * ModRM/SIB writer.  tests/unit/test_vex.c disassembles generated functions
 * with objdump and compares, and checks results against eval.c.
 *
 * Scope: f32 and f64 trees of + - * / unary -, abs, sqrt, square,
 * reciprocal, minimum, maximum, comparisons, !, &&, ||, logical_xor and
 * where, over operands of the tree's dtype (bool ones as conditions; i8,
 * u8, i16, u16, i32 and, in f64 trees, f32 ones converted on loading, as
 * are casts of them), hoisted locals and literals, at least two
 * operations (one is its microkernel's, as fast).  Constants sit in the
 * registers the tree leaves free.  Anything else: vex_build says no and the
 * tile keeps its microkernel calls.  Bytes depend only on the kernel IR.
 */
#include <string.h>

#include "kir.h"
#include "vex.h"

/* ---- the encoder ------------------------------------------------------------------ */

#define CODE_MAX 8192
#define POOL_MAX 32 /* 32-byte constants */
#define LABEL_MAX 8
#define FIXUP_MAX 256

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };
#define RIP (-2)
#define NONE (-1)

typedef struct memory {
    int base;     /* a GPR, or RIP: constant `pool` */
    int index;    /* a GPR or NONE */
    int scale;    /* 1, 2, 4, 8 */
    int32_t disp;
    int pool;
} memory;

typedef struct fixup {
    int at;        /* where the rel32 goes */
    int end;       /* the address it is relative to */
    int target;    /* label, or pool slot */
    bool pool;
} fixup;

typedef struct builder {
    unsigned char code[CODE_MAX];
    int length;
    bool overflow;
    unsigned char pool[POOL_MAX][32];
    int pool_count;
    int label[LABEL_MAX];
    fixup fixups[FIXUP_MAX];
    int fixup_count;
    int pending_rip; /* the disp32 of the instruction being written, or -1 */
    int pending_pool;
} builder;

static void byte(builder *b, int v)
{
    if (b->length < CODE_MAX)
        b->code[b->length++] = (unsigned char)v;
    else
        b->overflow = true;
}

static void word32(builder *b, int32_t v)
{
    for (int i = 0; i < 4; i++)
        byte(b, (int)(((uint32_t)v >> (8 * i)) & 0xff));
}

static void add_fixup(builder *b, int at, int target, bool pool)
{
    if (b->fixup_count >= FIXUP_MAX) {
        b->overflow = true;
        return;
    }
    b->fixups[b->fixup_count++] = (fixup){at, 0, target, pool};
}

/* The instruction ends here: a RIP-relative operand is relative to it. */
static void end_instruction(builder *b)
{
    if (b->pending_rip >= 0) {
        add_fixup(b, b->pending_rip, b->pending_pool, true);
        if (b->fixup_count > 0)
            b->fixups[b->fixup_count - 1].end = b->length;
        b->pending_rip = -1;
    }
}

/* ModRM (+ SIB + displacement) for register field REG and memory M. */
static void modrm_memory(builder *b, int reg, memory m)
{
    if (m.base == RIP) {
        byte(b, ((reg & 7) << 3) | 5);
        b->pending_rip = b->length;
        b->pending_pool = m.pool;
        word32(b, 0);
        return;
    }
    bool sib = m.index != NONE || (m.base & 7) == RSP;
    int mod = m.disp == 0 && (m.base & 7) != RBP ? 0 : m.disp >= -128 && m.disp <= 127 ? 1 : 2;
    byte(b, (mod << 6) | ((reg & 7) << 3) | (sib ? 4 : (m.base & 7)));
    if (sib) {
        int scale = m.scale == 8 ? 3 : m.scale == 4 ? 2 : m.scale == 2 ? 1 : 0;
        byte(b, (scale << 6) | ((m.index == NONE ? RSP : m.index) & 7) << 3 | (m.base & 7));
    }
    if (mod == 1)
        byte(b, m.disp & 0xff);
    else if (mod == 2)
        word32(b, m.disp);
}

static void modrm_register(builder *b, int reg, int rm)
{
    byte(b, 0xc0 | ((reg & 7) << 3) | (rm & 7));
}

/* ---- VEX instructions: one row each.  pp: 0 none, 1 66, 2 F3, 3 F2;
 * map: 1 0F, 2 0F38, 3 0F3A.  The packed-single rows get pp 1 (66) for
 * their packed-double form (vex_fp). */
typedef enum vex_id {
    V_MOVU_LOAD, V_MOVU_STORE, V_ADD, V_MUL, V_SUB, V_MIN, V_DIV, V_MAX, V_SQRT, V_AND,
    V_ANDN, V_OR, V_XOR, V_CMP, V_BLENDVPS, V_BLENDVPD, V_BROADCASTSS, V_BROADCASTSD,
    V_PMOVZXBD, V_PMOVZXBQ, V_PCMPEQB, V_PCMPEQD, V_PCMPEQQ, V_PBROADCASTB,
    V_PMOVSXBD, V_PMOVSXWD, V_PMOVZXWD, V_PBROADCASTW, V_PBROADCASTD, V_CVTDQ2PS,
    V_CVTDQ2PD, V_CVTPS2PD,
    /* the leaves' strided loads and the streaming store (addressing) */
    V_PERMD, V_PERMQ, V_PSHUFB, V_SHUFP, V_MOVNT, V_MOVQ_LOAD, V_MOVD_LOAD,
    V_MASKMOVPS_LOAD, V_MASKMOVPD_LOAD, V_MASKMOVPS_STORE, V_MASKMOVPD_STORE, V_PCMPGTD,
    V_COUNT
} vex_id;

static const struct {
    unsigned char pp, map, opcode;
    bool fp;        /* ps/pd pair: pp chosen by the lane dtype */
    bool w;         /* VEX.W1 */
} vex_rows[V_COUNT] = {
    [V_MOVU_LOAD] = {0, 1, 0x10, true}, [V_MOVU_STORE] = {0, 1, 0x11, true},
    [V_ADD] = {0, 1, 0x58, true},  [V_MUL] = {0, 1, 0x59, true},
    [V_SUB] = {0, 1, 0x5c, true},  [V_MIN] = {0, 1, 0x5d, true},
    [V_DIV] = {0, 1, 0x5e, true},  [V_MAX] = {0, 1, 0x5f, true},
    [V_SQRT] = {0, 1, 0x51, true}, [V_AND] = {0, 1, 0x54, true},
    [V_ANDN] = {0, 1, 0x55, true}, [V_OR] = {0, 1, 0x56, true},
    [V_XOR] = {0, 1, 0x57, true},  [V_CMP] = {0, 1, 0xc2, true},
    [V_BLENDVPS] = {1, 3, 0x4a, false}, [V_BLENDVPD] = {1, 3, 0x4b, false},
    [V_BROADCASTSS] = {1, 2, 0x18, false}, [V_BROADCASTSD] = {1, 2, 0x19, false},
    [V_PMOVZXBD] = {1, 2, 0x31, false}, [V_PMOVZXBQ] = {1, 2, 0x32, false},
    [V_PCMPEQB] = {1, 1, 0x74, false}, [V_PCMPEQD] = {1, 1, 0x76, false},
    [V_PCMPEQQ] = {1, 2, 0x29, false}, [V_PBROADCASTB] = {1, 2, 0x78, false},
    [V_PMOVSXBD] = {1, 2, 0x21, false}, [V_PMOVSXWD] = {1, 2, 0x23, false},
    [V_PMOVZXWD] = {1, 2, 0x33, false}, [V_PBROADCASTW] = {1, 2, 0x79, false},
    [V_PBROADCASTD] = {1, 2, 0x58, false}, [V_CVTDQ2PS] = {0, 1, 0x5b, false},
    [V_CVTDQ2PD] = {2, 1, 0xe6, false}, [V_CVTPS2PD] = {0, 1, 0x5a, false},
    [V_PERMD] = {1, 2, 0x36, false}, [V_PERMQ] = {1, 3, 0x00, false, true},
    [V_PSHUFB] = {1, 2, 0x00, false}, [V_SHUFP] = {0, 1, 0xc6, true},
    [V_MOVNT] = {0, 1, 0x2b, true},
    [V_MOVQ_LOAD] = {2, 1, 0x7e, false}, [V_MOVD_LOAD] = {1, 1, 0x6e, false},
    [V_MASKMOVPS_LOAD] = {1, 2, 0x2c, false}, [V_MASKMOVPD_LOAD] = {1, 2, 0x2d, false},
    [V_MASKMOVPS_STORE] = {1, 2, 0x2e, false}, [V_MASKMOVPD_STORE] = {1, 2, 0x2f, false},
    [V_PCMPGTD] = {1, 1, 0x66, false},
};

/* An operand: ymm register REG (mem false) or memory M. */
typedef struct rm_operand {
    bool mem;
    int reg;
    memory m;
} rm_operand;

static rm_operand in_register(int reg) { return (rm_operand){false, reg, {0, NONE, 1, 0, 0}}; }
static rm_operand in_memory(memory m) { return (rm_operand){true, 0, m}; }

/* ID with ModRM.reg = REG, VEX.vvvv = SRC (0 when unused), r/m = RM, 256
 * bits when WIDE; DOUBLE picks the pd form of an fp row; IMM >= 0 is a
 * trailing byte (a predicate, or is4's register << 4). */
static void vex(builder *b, vex_id id, bool wide, bool dbl, int reg, int src, rm_operand rm,
                int imm)
{
    int pp = vex_rows[id].fp ? (dbl ? 1 : 0) : vex_rows[id].pp, map = vex_rows[id].map;
    int r = reg >> 3 & 1, x = rm.mem && rm.m.index != NONE ? rm.m.index >> 3 & 1 : 0;
    int bb = rm.mem ? (rm.m.base >= 0 ? rm.m.base >> 3 & 1 : 0) : rm.reg >> 3 & 1;
    int last = vex_rows[id].w << 7 | (~src & 15) << 3 | (wide ? 4 : 0) | pp;
    if (!x && !bb && map == 1 && !vex_rows[id].w) {
        byte(b, 0xc5);
        byte(b, (!r) << 7 | last);
    } else {
        byte(b, 0xc4);
        byte(b, (!r) << 7 | (!x) << 6 | (!bb) << 5 | map);
        byte(b, last);
    }
    byte(b, vex_rows[id].opcode);
    if (rm.mem)
        modrm_memory(b, reg, rm.m);
    else
        modrm_register(b, reg, rm.reg);
    if (imm >= 0)
        byte(b, imm);
    end_instruction(b);
}

/* ---- GPR instructions (64-bit operands) ---- */

static void rex(builder *b, int reg, int index, int base)
{
    byte(b, 0x48 | (reg >> 3 & 1) << 2 | (index >= 0 ? index >> 3 & 1 : 0) << 1 |
                 (base >= 0 ? base >> 3 & 1 : 0));
}

/* OPCODE reg, [m] (mov 8B, lea 8D) */
static void gpr_memory(builder *b, int opcode, int reg, memory m)
{
    rex(b, reg, m.index, m.base);
    byte(b, opcode);
    modrm_memory(b, reg, m);
    end_instruction(b);
}

/* OPCODE rm, reg (mov 89, sub 29, cmp 39, test 85) */
static void gpr_pair(builder *b, int opcode, int rm, int reg)
{
    rex(b, reg, NONE, rm);
    byte(b, opcode);
    modrm_register(b, reg, rm);
}

/* group-1 immediate: EXT 0 add, 4 and, 5 sub, 7 cmp */
static void gpr_immediate(builder *b, int ext, int rm, int32_t v)
{
    rex(b, 0, NONE, rm);
    bool small = v >= -128 && v <= 127;
    byte(b, small ? 0x83 : 0x81);
    modrm_register(b, ext, rm);
    if (small)
        byte(b, v & 0xff);
    else
        word32(b, v);
}

static void push_pop(builder *b, int reg, bool pop)
{
    if (reg >= 8)
        byte(b, 0x41);
    byte(b, (pop ? 0x58 : 0x50) + (reg & 7));
}

/* jcc (CC: 0x2 jb, 0x3 jae, 0x4 je) or jmp (CC < 0) to LABEL, rel32 */
static void jump(builder *b, int cc, int label)
{
    if (cc < 0) {
        byte(b, 0xe9);
    } else {
        byte(b, 0x0f);
        byte(b, 0x80 + cc);
    }
    add_fixup(b, b->length, label, false);
    if (b->fixup_count > 0)
        b->fixups[b->fixup_count - 1].end = b->length + 4;
    word32(b, 0);
}

/* imul DST, SRC, V */
static void gpr_multiply(builder *b, int dst, int src, int32_t v)
{
    rex(b, dst, NONE, src);
    byte(b, 0x69);
    modrm_register(b, dst, src);
    word32(b, v);
}

/* group-2 shift by COUNT: EXT 4 shl, 5 shr */
static void gpr_shift(builder *b, int ext, int rm, int count)
{
    rex(b, 0, NONE, rm);
    byte(b, 0xc1);
    modrm_register(b, ext, rm);
    byte(b, count);
}

static void gpr_negate(builder *b, int rm)
{
    rex(b, 0, NONE, rm);
    byte(b, 0xf7);
    modrm_register(b, 3, rm);
}

/* test RM, V */
static void gpr_test_immediate(builder *b, int rm, int32_t v)
{
    rex(b, 0, NONE, rm);
    byte(b, 0xf7);
    modrm_register(b, 0, rm);
    word32(b, v);
}

/* cmova DST, SRC */
static void gpr_move_above(builder *b, int dst, int src)
{
    rex(b, dst, NONE, src);
    byte(b, 0x0f);
    byte(b, 0x47);
    modrm_register(b, dst, src);
}

/* jcc (CC as in jump) or jmp back to TARGET, an offset already written */
static void jump_back(builder *b, int cc, int target)
{
    if (cc < 0) {
        byte(b, 0xe9);
    } else {
        byte(b, 0x0f);
        byte(b, 0x80 + cc);
    }
    word32(b, target - (b->length + 4));
}

static memory at(int base, int index, int scale, int32_t disp)
{
    return (memory){base, index, scale, disp, 0};
}

/* ---- the tree ------------------------------------------------------------------------ */

typedef struct leaf {
    int operand;      /* plan operand k, or -1: a local */
    const char *local;
    bool broadcast;   /* one value (stride 0) */
    int64_t stride;   /* elements along the run: 1, or read in place (strided_load) */
    int64_t outer;    /* elements from run to run (the rows form) */
    bcg_dtype dtype;
    int reg;          /* the GPR holding its pointer */
    int slot;         /* the tail's stack slot (contiguous leaves) */
} leaf;

static const int pointer_registers[] = {R8, R9, RBX, RBP, R12, R13, R14, R15, RDX};
#define LEAF_MAX ((int)(sizeof pointer_registers / sizeof pointer_registers[0]))

typedef struct generator {
    const kernel_ir *ir;
    const vex_layout *layout; /* per plan operand: its stride along the run */
    bcg_dtype lane;           /* BCG_F32 or BCG_F64 */
    bool dbl;
    int width;                /* bytes per lane: 4 or 8 */
    builder *b;
    leaf leaves[LEAF_MAX];
    int leaf_count;
    int leaf_node[LEAF_MAX];
    bool tail;                /* writing the tail's body: contiguous leaves in slots */
    bool streaming;           /* the loop's root store is vmovntps (aligned) */
    bool masked;              /* the tail loads and stores with vmaskmov (write_partial) */
    int mask_slot;            /* the stack slot holding the tail's mask */
    int reversed_mask_slot;   /* and its reverse, for reversed leaves (or -1) */
    unsigned free;            /* ymm registers free (bit r) */
    unsigned reserved;        /* ymm registers holding constants */
    int peak;                 /* the most registers the body holds at once */
    int constant_register[POOL_MAX]; /* > 0: pool slot i is in this register */
    bool failed;
} generator;

/* A computed value: ymm REG; a mask when MASK (all ones where true, or
 * where false when INVERTED). */
typedef struct value {
    int reg;
    bool mask, inverted;
} value;

static int take_register(generator *g)
{
    for (int r = 0; r < 16; r++)
        if (g->free >> r & 1) {
            g->free &= ~(1u << r);
            int used = 16 - __builtin_popcount(g->free | g->reserved);
            if (used > g->peak)
                g->peak = used;
            return r;
        }
    g->failed = true;
    return 0;
}

static void give_register(generator *g, int r) { g->free |= 1u << r; }

static bool is_float_lane(bcg_dtype t) { return t == BCG_F32 || t == BCG_F64; }

/* Whether value ID is read as a leaf (an operand or a hoisted local). */
static bool is_leaf(const kernel_ir *ir, int id)
{
    return ir->value[id].local || ir->nodes[id]->op == OP_OPERAND;
}

/* Whether a leaf of dtype T converts into LANE on loading: small
 * integers (exact) and i32 (vcvtdq2ps rounds to nearest as C's (float)
 * does), and f32 into f64 (exact). */
static bool leaf_converts(bcg_dtype t, bcg_dtype lane)
{
    return t == BCG_I8 || t == BCG_U8 || t == BCG_I16 || t == BCG_U16 || t == BCG_I32 ||
           (t == BCG_F32 && lane == BCG_F64);
}

/* Whether node ID computes a value (VALUE) or a mask (!VALUE) the
 * generator can write; register needs are not checked here. */
static bool supported(const generator *g, int id, bool value);

static bool supported_value(const generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (ir->value[id].folded >= 0)
        return false;
    if (n->op == OP_LITERAL) /* (integers exact in a double: one rounding) */
        return dtype_kind_of(n->dtype) == KIND_FLOAT ||
               (dtype_kind_of(n->dtype) == KIND_INT && n->value.i >= -(1LL << 53) &&
                n->value.i <= (1LL << 53)) ||
               (dtype_kind_of(n->dtype) == KIND_UINT && n->value.u <= (1ULL << 53));
    if (is_leaf(ir, id)) /* of the lane dtype, or one converted exactly as C does */
        return n->dtype == g->lane || leaf_converts(n->dtype, g->lane);
    if (n->op == OP_CAST) { /* of a leaf, to the lane dtype; or an integer to f32 in f64 lanes */
        const expr_node *child = ir->nodes[kir_child(ir, id, 0)];
        bool via_single = n->dtype == BCG_F32 && g->lane == BCG_F64 &&
                          dtype_kind_of(child->dtype) != KIND_FLOAT;
        return (n->dtype == g->lane || via_single) && is_leaf(ir, kir_child(ir, id, 0)) &&
               supported_value(g, kir_child(ir, id, 0));
    }
    if (n->dtype != g->lane)
        return false;
    switch (n->op) {
    case OP_NEG: case OP_POS: case OP_ABS: case OP_SQRT: case OP_SQUARE: case OP_RECIPROCAL:
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MINIMUM: case OP_MAXIMUM:
        if (kir_tile_dtype(ir, id) != g->lane)
            return false;
        for (int k = 0; k < n->arg_count; k++)
            if (!supported(g, kir_child(ir, id, k), true))
                return false;
        return true;
    case OP_WHERE:
        return supported(g, kir_child(ir, id, 0), false) &&
               supported(g, kir_child(ir, id, 1), true) &&
               supported(g, kir_child(ir, id, 2), true);
    default:
        return false;
    }
}

static bool supported_mask(const generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (ir->value[id].folded >= 0)
        return false;
    if (n->op == OP_LITERAL) /* a constant mask */
        return true;
    if (n->dtype == g->lane)
        return supported_value(g, id); /* != 0 */
    if (n->dtype != BCG_BOOL)
        return false;
    if (n->op == OP_OPERAND)
        return true;
    switch (n->op) {
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        return kir_tile_dtype(ir, id) == g->lane && supported(g, kir_child(ir, id, 0), true) &&
               supported(g, kir_child(ir, id, 1), true);
    case OP_NOT: case OP_AND: case OP_OR: case OP_LOGICAL_XOR:
        for (int k = 0; k < n->arg_count; k++)
            if (!supported(g, kir_child(ir, id, k), false))
                return false;
        return true;
    default:
        return false;
    }
}

static bool supported(const generator *g, int id, bool value)
{
    return value ? supported_value(g, id) : supported_mask(g, id);
}

/* The operations the function computes for value ID, a leaf's conversion
 * into the lane dtype LANE included (a cast kernel's pass otherwise). */
static int operation_count(const kernel_ir *ir, int id, bcg_dtype lane)
{
    const expr_node *n = ir->nodes[id];
    if (n->op == OP_LITERAL)
        return 0;
    if (is_leaf(ir, id))
        return n->dtype != lane && n->dtype != BCG_BOOL;
    int count = 1;
    for (int k = 0; k < n->arg_count; k++)
        count += operation_count(ir, kir_child(ir, id, k), lane);
    return count;
}

/* The registers node ID needs (Sethi-Ullman), to order its children. */
static int need(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    if (is_leaf(ir, id) || n->op == OP_LITERAL)
        return 1;
    int most = 1, k_need[3];
    for (int k = 0; k < n->arg_count; k++)
        k_need[k] = need(ir, kir_child(ir, id, k));
    /* children in falling need: the i-th takes i registers held */
    for (int i = 0; i < n->arg_count; i++) {
        int held = 0;
        for (int j = 0; j < n->arg_count; j++)
            held += k_need[j] > k_need[i] || (k_need[j] == k_need[i] && j < i);
        if (k_need[i] + held > most)
            most = k_need[i] + held;
    }
    if ((n->op == OP_MINIMUM || n->op == OP_MAXIMUM) && most < 3)
        most = 3;
    return most;
}

/* The pool slot of the 32 bytes of V repeated (SIZE bytes each). */
static int constant(generator *g, const void *v, int size)
{
    unsigned char bytes[32];
    for (int i = 0; i < 32; i += size)
        memcpy(bytes + i, v, (size_t)size);
    builder *b = g->b;
    for (int i = 0; i < b->pool_count; i++)
        if (memcmp(b->pool[i], bytes, 32) == 0)
            return i;
    if (b->pool_count >= POOL_MAX) {
        g->failed = true;
        return 0;
    }
    memcpy(b->pool[b->pool_count], bytes, 32);
    return b->pool_count++;
}

static memory pool_memory(int slot) { return (memory){RIP, NONE, 1, 0, slot}; }

/* Pool constant SLOT as an operand: the register it was loaded into
 * before the loop when there was room (write_function), else memory. */
static rm_operand constant_operand(generator *g, int slot)
{
    if (slot < POOL_MAX && g->constant_register[slot] > 0)
        return in_register(g->constant_register[slot]);
    return in_memory(pool_memory(slot));
}

/* A lane constant: X as the lane dtype. */
static int lane_constant(generator *g, double x)
{
    if (g->dbl)
        return constant(g, &x, 8);
    float f = (float)x;
    return constant(g, &f, 4);
}

static int bits_constant(generator *g, uint64_t bits)
{
    if (g->dbl)
        return constant(g, &bits, 8);
    uint32_t b32 = (uint32_t)bits;
    return constant(g, &b32, 4);
}

/* A literal's value as the lane dtype converts it (as eval.c's convert). */
static double literal_value(const expr_node *n)
{
    switch (dtype_kind_of(n->dtype)) {
    case KIND_FLOAT: return n->value.f;
    case KIND_UINT: return (double)n->value.u;
    default: return (double)n->value.i;
    }
}

static int leaf_index(generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    int operand = ir->value[id].local ? -1 : n->operand + 1;
    for (int i = 0; i < g->leaf_count; i++)
        if (operand >= 0 ? g->leaves[i].operand == operand
                         : g->leaves[i].operand < 0 &&
                               strcmp(g->leaves[i].local, ir->value[id].local) == 0)
            return i;
    if (g->leaf_count >= LEAF_MAX) {
        g->failed = true;
        return 0;
    }
    int i = g->leaf_count++;
    int64_t stride = operand < 0 ? 0 : g->layout->stride[operand];
    int64_t outer = operand < 0 || !g->layout->outer ? 0 : g->layout->outer[operand];
    g->leaves[i] = (leaf){operand, ir->value[id].local, stride == 0, stride, outer, n->dtype,
                          pointer_registers[i], -1};
    g->leaf_node[i] = id;
    return i;
}

/* Leaf I's current vector: [pointer + i * size] in the loop, its slot in
 * the tail; one value when broadcast. */
static memory leaf_memory(const generator *g, int i)
{
    const leaf *l = &g->leaves[i];
    if (l->broadcast)
        return at(l->reg, NONE, 1, 0);
    if (g->tail && !g->masked)
        return at(RSP, NONE, 1, 32 * l->slot);
    return at(l->reg, RAX, (int)bcg_dtype_size(l->dtype), 0);
}

/* ID (vmaskmovps/pd) between register R and M under the tail's mask (its
 * reverse when REVERSED). */
static void masked_move(generator *g, vex_id id, int r, memory m, bool reversed)
{
    int t = take_register(g);
    int slot = reversed ? g->reversed_mask_slot : g->mask_slot;
    vex(g->b, V_MOVU_LOAD, true, false, t, 0, in_memory(at(RSP, NONE, 1, 32 * slot)), -1);
    vex(g->b, id, true, false, r, t, in_memory(m), -1);
    give_register(g, t);
}

static int constant(generator *g, const void *v, int size);
static rm_operand constant_operand(generator *g, int slot);

/* The tail's lanes of reversed leaf I (of the lanes' dtype) into R: the
 * vector ending at lane 0's element loaded under the reversed mask (the
 * lanes past the tail, below the operand, not accessed), then reversed. */
static void masked_reversed_load(generator *g, int r, int i)
{
    builder *b = g->b;
    const leaf *l = &g->leaves[i];
    int lanes = 32 / g->width;
    gpr_multiply(b, RDI, RAX, -g->width);
    gpr_pair(b, 0x01, RDI, l->reg);
    masked_move(g, g->dbl ? V_MASKMOVPD_LOAD : V_MASKMOVPS_LOAD, r,
                at(RDI, NONE, 1, -(lanes - 1) * g->width), true);
    if (g->dbl) {
        vex(b, V_PERMQ, true, false, r, 0, in_register(r), 0x1b);
    } else {
        int32_t index[8] = {7, 6, 5, 4, 3, 2, 1, 0};
        int slot = constant(g, index, 32);
        rm_operand idx = constant_operand(g, slot);
        int t = -1;
        if (idx.mem) { /* (vpermd takes its index in a register) */
            t = take_register(g);
            vex(b, V_MOVU_LOAD, true, false, t, 0, idx, -1);
            idx = in_register(t);
        }
        vex(b, V_PERMD, true, false, r, idx.reg, in_register(r), -1);
        if (t >= 0)
            give_register(g, t);
    }
}

static value compute(generator *g, int id, bool want_value);

/* Whether leaf L is read in place with a stride other than 0 and 1. */
static bool leaf_strided(const leaf *l) { return !l->broadcast && l->stride != 1; }

/* Pool constant SLOT in a ymm register: its own, or *TEMP (taken) loaded. */
static int constant_in_register(generator *g, int slot, int *temp)
{
    *temp = -1;
    if (slot < POOL_MAX && g->constant_register[slot] > 0)
        return g->constant_register[slot];
    *temp = take_register(g);
    vex(g->b, V_MOVU_LOAD, true, false, *temp, 0, in_memory(pool_memory(slot)), -1);
    return *temp;
}

/* Register R = the loop's current lanes of strided leaf I, in order, in
 * its low lanes * size bytes.  rdi = lane 0's element (rax * stride
 * elements from the leaf's pointer).  A stride of -1 loads the bytes
 * ending there and reverses them (vpermq, vpermd, or vpshufb by element
 * size); one of 2 (-2) loads the 32 bytes from the first (last) lane's
 * element and the 32 ending at the last (first) lane's, picks the even
 * elements (vshufps, vshufpd) and puts them in order (vpermq, vpermd).
 * Every byte read lies between two elements the vector reads.  (Other
 * strides: gathered into a tile first; vpgatherdd in place measured
 * 1.3-1.4x slower than that on this AMD EPYC, strides 2, 3 and 5.) */
static void strided_load(generator *g, int r, int i)
{
    builder *b = g->b;
    const leaf *l = &g->leaves[i];
    int size = (int)bcg_dtype_size(l->dtype), lanes = 32 / g->width, bytes = lanes * size;
    int temp = -1;
    gpr_multiply(b, RDI, RAX, (int32_t)(l->stride * size));
    gpr_pair(b, 0x01, RDI, l->reg); /* add rdi, pointer */
    if (l->stride == -1) {
        memory m = at(RDI, NONE, 1, -(lanes - 1) * size);
        if (bytes == 32 && size == 8) {
            vex(b, V_PERMQ, true, false, r, 0, in_memory(m), 0x1b);
        } else if (bytes == 32) {
            int32_t index[8] = {7, 6, 5, 4, 3, 2, 1, 0};
            int idx = constant_in_register(g, constant(g, index, 32), &temp);
            vex(b, V_PERMD, true, false, r, idx, in_memory(m), -1);
        } else { /* 16, 8 or 4 bytes into an xmm, reversed by element */
            unsigned char pattern[32];
            for (int k = 0; k < 32; k++)
                pattern[k] = k < bytes ? (unsigned char)((lanes - 1 - k / size) * size + k % size)
                                       : 0x80;
            vex(b, bytes == 16 ? V_MOVU_LOAD : bytes == 8 ? V_MOVQ_LOAD : V_MOVD_LOAD, false,
                false, r, 0, in_memory(m), -1);
            vex(b, V_PSHUFB, false, false, r, r, constant_operand(g, constant(g, pattern, 32)),
                -1);
        }
    } else { /* 2 or -2, 32 bytes of 4- or 8-byte elements (vex_reads_stride) */
        int32_t low = l->stride < 0 ? -(lanes - 1) * 2 * size : 0;
        bool dbl = size == 8;
        vex(b, V_MOVU_LOAD, true, dbl, r, 0, in_memory(at(RDI, NONE, 1, low)), -1);
        vex(b, V_SHUFP, true, dbl, r, r, in_memory(at(RDI, NONE, 1, low + 32 - size)),
            dbl ? 0x0a : 0xd8);
        if (dbl) {
            vex(b, V_PERMQ, true, false, r, 0, in_register(r), l->stride < 0 ? 0x27 : 0xd8);
        } else if (l->stride > 0) {
            vex(b, V_PERMQ, true, false, r, 0, in_register(r), 0xd8);
        } else {
            int32_t index[8] = {7, 6, 3, 2, 5, 4, 1, 0};
            int idx = constant_in_register(g, constant(g, index, 32), &temp);
            vex(b, V_PERMD, true, false, r, idx, in_register(r), -1);
        }
    }
    if (temp >= 0)
        give_register(g, temp);
}

/* Strided leaf I of another dtype than the lanes' (converted, or bool):
 * its lanes stored into its stack slot, which the load then reads. */
static memory stage_leaf(generator *g, int i)
{
    int t = take_register(g);
    strided_load(g, t, i);
    memory slot = at(RSP, NONE, 1, 32 * g->leaves[i].slot);
    vex(g->b, V_MOVU_STORE, true, false, t, 0, in_memory(slot), -1);
    give_register(g, t);
    return slot;
}

bool vex_reads_stride(bcg_dtype dtype, bcg_dtype lane, int64_t stride)
{
    size_t size = bcg_dtype_size(dtype);
    return stride == 0 || stride == 1 || stride == -1 ||
           ((stride == 2 || stride == -2) && (size == 4 || size == 8) &&
            size == bcg_dtype_size(lane));
}

/* Register R = leaf I (at M) converted into the lane dtype; VIA_SINGLE:
 * an integer rounded to f32 first (f64(f32(i32)) rounds once, in f32). */
static void load_converted(generator *g, int r, int i, memory m, bool via_single)
{
    builder *b = g->b;
    bcg_dtype t = g->leaves[i].dtype;
    bool broadcast = g->leaves[i].broadcast, dbl = g->dbl;
    if (t == BCG_F32) { /* into f64 lanes: 4 floats */
        if (broadcast) {
            vex(b, V_BROADCASTSS, false, false, r, 0, in_memory(m), -1);
            vex(b, V_CVTPS2PD, true, false, r, 0, in_register(r), -1);
        } else {
            vex(b, V_CVTPS2PD, true, false, r, 0, in_memory(m), -1);
        }
        return;
    }
    /* integers: dwords first (8 in a ymm for f32 lanes, 4 in an xmm for f64) */
    if (t == BCG_I32 && !broadcast && !via_single) {
        vex(b, dbl ? V_CVTDQ2PD : V_CVTDQ2PS, true, false, r, 0, in_memory(m), -1);
        return;
    }
    if (t == BCG_I32 && !broadcast) { /* 4 dwords into floats, then doubles */
        vex(b, V_CVTDQ2PS, false, false, r, 0, in_memory(m), -1);
        vex(b, V_CVTPS2PD, true, false, r, 0, in_register(r), -1);
        return;
    }
    if (t == BCG_I32) {
        vex(b, V_PBROADCASTD, !dbl, false, r, 0, in_memory(m), -1);
    } else {
        bool bytes = t == BCG_I8 || t == BCG_U8;
        vex_id widen = t == BCG_I8 ? V_PMOVSXBD : t == BCG_U8 ? V_PMOVZXBD
                       : t == BCG_I16 ? V_PMOVSXWD : V_PMOVZXWD;
        if (broadcast) {
            vex(b, bytes ? V_PBROADCASTB : V_PBROADCASTW, false, false, r, 0, in_memory(m), -1);
            vex(b, widen, !dbl, false, r, 0, in_register(r), -1);
        } else {
            vex(b, widen, !dbl, false, r, 0, in_memory(m), -1);
        }
    }
    if (via_single && t == BCG_I32) {
        vex(b, V_CVTDQ2PS, false, false, r, 0, in_register(r), -1);
        vex(b, V_CVTPS2PD, true, false, r, 0, in_register(r), -1);
        return;
    }
    vex(b, dbl ? V_CVTDQ2PD : V_CVTDQ2PS, true, false, r, 0, in_register(r), -1);
}

/* V as a mask of the lanes where it is not zero (NaN is true). */
static value nonzero(generator *g, value v)
{
    if (v.mask)
        return v;
    int zero = lane_constant(g, 0.0);
    vex(g->b, V_CMP, true, g->dbl, v.reg, v.reg, constant_operand(g, (zero)), 4 /* NEQ_UQ */);
    return (value){v.reg, true, false};
}

/* M with the polarity WANT_INVERTED. */
static value polarity(generator *g, value m, bool want_inverted)
{
    if (m.inverted != want_inverted) {
        int ones = bits_constant(g, ~0ull);
        vex(g->b, V_XOR, true, g->dbl, m.reg, m.reg, constant_operand(g, (ones)), -1);
        m.inverted = want_inverted;
    }
    return m;
}

/* Computes the children of ID into OUT[k], the neediest first. */
static void children(generator *g, int id, value *out, const bool *want_value)
{
    const kernel_ir *ir = g->ir;
    int count = ir->nodes[id]->arg_count, needs[3], order[3];
    for (int k = 0; k < count; k++) {
        needs[k] = need(ir, kir_child(ir, id, k));
        order[k] = k;
    }
    for (int i = 1; i < count; i++)
        for (int j = i; j > 0 && needs[order[j]] > needs[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < count; i++)
        out[order[i]] = compute(g, kir_child(ir, id, order[i]), want_value[order[i]]);
}

/* np.minimum/np.maximum as eval.c's extreme: A if A is NaN, else B if B is
 * NaN, else the strictly smaller (larger), B when equal.  vminps(a, b) is
 * a < b ? a : b and gives b when either is NaN; a NaN a is blended back. */
static value emit_extreme(generator *g, bool minimum, value a, value bv)
{
    builder *b = g->b;
    vex(b, minimum ? V_MIN : V_MAX, true, g->dbl, bv.reg, a.reg, in_register(bv.reg), -1);
    int t = take_register(g);
    vex(b, V_CMP, true, g->dbl, t, a.reg, in_register(a.reg), 3 /* UNORD_Q */);
    vex(b, g->dbl ? V_BLENDVPD : V_BLENDVPS, true, false, a.reg, bv.reg, in_register(a.reg),
        t << 4);
    give_register(g, t);
    give_register(g, bv.reg);
    return a;
}

/* Leaf ID (an operand or a hoisted local) loaded, converted, as a value or a
 * mask; VIA_SINGLE: an integer converted to f32 first (load_converted). */
static value compute_leaf(generator *g, int id, bool want_value, bool via_single)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    builder *b = g->b;
    bool dbl = g->dbl;
    {
        int i = leaf_index(g, id);
        int r = take_register(g);
        memory m = leaf_memory(g, i);
        bool loaded = false; /* strided, of the lane dtype: into r in place */
        if (leaf_strided(&g->leaves[i]) && !g->tail) {
            if (n->dtype == g->lane) {
                strided_load(g, r, i);
                loaded = true;
            } else {
                m = stage_leaf(g, i);
            }
        } else if (leaf_strided(&g->leaves[i]) && g->masked) { /* reversed, the lanes' */
            masked_reversed_load(g, r, i);
            loaded = true;
        }
        if (n->dtype == BCG_BOOL) { /* bytes: a mask of the lanes that are 0 */
            int zero = constant(g, &(uint64_t){0}, 8);
            if (g->leaves[i].broadcast) {
                vex(b, V_PBROADCASTB, true, false, r, 0, in_memory(m), -1);
                vex(b, V_PCMPEQB, true, false, r, r, constant_operand(g, (zero)), -1);
            } else {
                vex(b, dbl ? V_PMOVZXBQ : V_PMOVZXBD, true, false, r, 0, in_memory(m), -1);
                vex(b, dbl ? V_PCMPEQQ : V_PCMPEQD, true, false, r, r,
                    constant_operand(g, (zero)), -1);
            }
            return (value){r, true, true};
        }
        if (n->dtype != g->lane)
            load_converted(g, r, i, m, via_single);
        else if (loaded)
            ;
        else if (g->tail && g->masked && !g->leaves[i].broadcast)
            masked_move(g, dbl ? V_MASKMOVPD_LOAD : V_MASKMOVPS_LOAD, r, m, false);
        else if (g->leaves[i].broadcast)
            vex(b, dbl ? V_BROADCASTSD : V_BROADCASTSS, true, false, r, 0, in_memory(m), -1);
        else
            vex(b, V_MOVU_LOAD, true, dbl, r, 0, in_memory(m), -1);
        value v = {r, false, false};
        return want_value ? v : nonzero(g, v);
    }
}

static value compute(generator *g, int id, bool want_value)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    builder *b = g->b;
    bool dbl = g->dbl;
    if (g->failed)
        return (value){0, false, false};
    if (n->op == OP_CAST && !is_leaf(ir, id)) /* of a leaf: converted on loading */
        return compute_leaf(g, kir_child(ir, id, 0), want_value, n->dtype != g->lane);
    if (n->op == OP_LITERAL && !want_value) { /* its truth in every lane (NaN is true) */
        double v = literal_value(n);
        int r = take_register(g);
        int slot = bits_constant(g, v != 0 || v != v ? ~0ull : 0);
        vex(b, V_MOVU_LOAD, true, dbl, r, 0, constant_operand(g, (slot)), -1);
        return (value){r, true, false};
    }
    if (n->op == OP_LITERAL) {
        int r = take_register(g);
        vex(b, V_MOVU_LOAD, true, dbl, r, 0, constant_operand(g, (lane_constant(g, literal_value(n)))),
            -1);
        return (value){r, false, false};
    }
    if (is_leaf(ir, id))
        return compute_leaf(g, id, want_value, false);
    value a[3];
    bool values[3] = {true, true, true};
    switch (n->op) {
    case OP_NOT: case OP_AND: case OP_OR: case OP_LOGICAL_XOR: {
        bool masks[3] = {false, false, false};
        children(g, id, a, masks);
        for (int k = 0; k < n->arg_count; k++)
            a[k] = nonzero(g, a[k]);
        if (n->op == OP_NOT) {
            a[0].inverted = !a[0].inverted;
            return a[0];
        }
        if (n->op == OP_LOGICAL_XOR) { /* x != y: polarities cancel */
            bool inv = a[0].inverted != a[1].inverted;
            vex(b, V_XOR, true, dbl, a[0].reg, a[0].reg, in_register(a[1].reg), -1);
            give_register(g, a[1].reg);
            return (value){a[0].reg, true, inv};
        }
        /* x && y == !(!x || !y): with both inverted, OR gives the inverted AND */
        a[1] = polarity(g, a[1], a[0].inverted);
        bool inv = a[0].inverted;
        bool use_or = (n->op == OP_OR) != inv;
        vex(b, use_or ? V_OR : V_AND, true, dbl, a[0].reg, a[0].reg, in_register(a[1].reg), -1);
        give_register(g, a[1].reg);
        return (value){a[0].reg, true, inv};
    }
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
        static const int predicate[] = {[OP_EQ] = 0, [OP_NE] = 4, [OP_LT] = 1, [OP_LE] = 2,
                                        [OP_GT] = 14, [OP_GE] = 13};
        children(g, id, a, values);
        vex(b, V_CMP, true, dbl, a[0].reg, a[0].reg, in_register(a[1].reg), predicate[n->op]);
        give_register(g, a[1].reg);
        return (value){a[0].reg, true, false};
    }
    case OP_WHERE: {
        bool want[3] = {false, true, true};
        children(g, id, a, want);
        value c = nonzero(g, a[0]);
        /* blendv: dst = mask ? src2 : src1 */
        int src1 = c.inverted ? a[1].reg : a[2].reg, src2 = c.inverted ? a[2].reg : a[1].reg;
        vex(b, dbl ? V_BLENDVPD : V_BLENDVPS, true, false, a[1].reg, src1, in_register(src2),
            c.reg << 4);
        give_register(g, c.reg);
        give_register(g, a[2].reg);
        value v = {a[1].reg, false, false};
        return want_value ? v : nonzero(g, v);
    }
    default:
        break;
    }
    children(g, id, a, values);
    value v = a[0];
    switch (n->op) {
    case OP_POS: break;
    case OP_NEG:
        vex(b, V_XOR, true, dbl, v.reg, v.reg,
            constant_operand(g, (bits_constant(g, dbl ? 1ull << 63 : 1ull << 31))), -1);
        break;
    case OP_ABS:
        vex(b, V_AND, true, dbl, v.reg, v.reg,
            constant_operand(g, (bits_constant(g, dbl ? ~(1ull << 63) : 0x7fffffffull))), -1);
        break;
    case OP_SQRT: vex(b, V_SQRT, true, dbl, v.reg, 0, in_register(v.reg), -1); break;
    case OP_SQUARE: vex(b, V_MUL, true, dbl, v.reg, v.reg, in_register(v.reg), -1); break;
    case OP_RECIPROCAL: {
        int r = take_register(g);
        vex(b, V_MOVU_LOAD, true, dbl, r, 0, constant_operand(g, (lane_constant(g, 1.0))), -1);
        vex(b, V_DIV, true, dbl, v.reg, r, in_register(v.reg), -1);
        give_register(g, r);
        break;
    }
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: {
        vex_id op = n->op == OP_ADD ? V_ADD : n->op == OP_SUB ? V_SUB
                    : n->op == OP_MUL ? V_MUL : V_DIV;
        vex(b, op, true, dbl, v.reg, v.reg, in_register(a[1].reg), -1);
        give_register(g, a[1].reg);
        break;
    }
    case OP_MINIMUM: case OP_MAXIMUM:
        v = emit_extreme(g, n->op == OP_MINIMUM, a[0], a[1]);
        break;
    default:
        g->failed = true;
        break;
    }
    return want_value ? v : nonzero(g, v);
}

/* The body: the root computed and stored, into [out + rax * width] in the
 * loop, into the output slot in the tail. */
static void body(generator *g, int out_slot)
{
    g->free = 0xffffu & ~g->reserved;
    value v = compute(g, 0, true);
    if (g->tail && g->masked) {
        masked_move(g, g->dbl ? V_MASKMOVPD_STORE : V_MASKMOVPS_STORE, v.reg,
                    at(R11, RAX, g->width, 0), false);
        return;
    }
    memory m = g->tail ? at(RSP, NONE, 1, 32 * out_slot) : at(R11, RAX, g->width, 0);
    vex(g->b, g->streaming && !g->tail ? V_MOVNT : V_MOVU_STORE, true, g->dbl, v.reg, 0,
        in_memory(m), -1);
}

/* rcx = (r10 - rax) << SHIFT bytes from SOURCE to DESTINATION (rep movsb). */
static void copy_bytes(builder *b, memory destination, memory source, int shift)
{
    gpr_memory(b, 0x8d, RDI, destination);
    gpr_memory(b, 0x8d, RSI, source);
    gpr_pair(b, 0x89, RCX, R10);
    gpr_pair(b, 0x29, RCX, RAX);
    if (shift) { /* shl rcx, shift */
        rex(b, 0, NONE, RCX);
        byte(b, 0xc1);
        modrm_register(b, 4, RCX);
        byte(b, shift);
    }
    byte(b, 0xf3);
    byte(b, 0xa4);
}

static int shift_of(size_t size) { return size == 8 ? 3 : size == 4 ? 2 : size == 2 ? 1 : 0; }

/* rcx = r10 - rax elements of strided leaf L (from rax * stride elements
 * on) into the stack slot at DESTINATION, one at a time: movs, then rsi
 * moved on by the rest of the stride. */
static void copy_strided(builder *b, const leaf *l, memory destination)
{
    int size = (int)bcg_dtype_size(l->dtype);
    gpr_memory(b, 0x8d, RDI, destination);
    gpr_multiply(b, RSI, RAX, (int32_t)(l->stride * size));
    gpr_pair(b, 0x01, RSI, l->reg);           /* add rsi, pointer */
    gpr_pair(b, 0x89, RCX, R10);
    gpr_pair(b, 0x29, RCX, RAX);
    int loop = b->length;
    if (size == 2)
        byte(b, 0x66);
    if (size == 8)
        byte(b, 0x48);
    byte(b, size == 1 ? 0xa4 : 0xa5);         /* movs */
    gpr_immediate(b, 0, RSI, (int32_t)((l->stride - 1) * size));
    gpr_immediate(b, 5, RCX, 1);              /* sub rcx, 1 */
    jump_back(b, 0x5, loop);                  /* jne */
}

/* Elements [rax, r10) through the stack slots: each leaf's copied in
 * (zeros past them), the body, the output slot's copied out.  FRAME: the
 * slots are already on the stack. */
static void write_partial(generator *g, int slots, int out_slot, bool frame)
{
    builder *b = g->b;
    if (!frame)
        gpr_immediate(b, 5, RSP, 32 * slots); /* sub rsp, slots */
    if (g->masked) { /* the mask of lanes below r10 - rax, in the output's slot */
        int32_t lanes_below[8];
        for (int k = 0; k < 8; k++)
            lanes_below[k] = g->dbl ? k / 2 : k;
        gpr_pair(b, 0x89, RCX, R10);
        gpr_pair(b, 0x29, RCX, RAX);
        vex(b, V_MOVD_LOAD, false, false, 0, 0, in_register(RCX), -1); /* vmovd xmm0, ecx */
        vex(b, V_PBROADCASTD, true, false, 0, 0, in_register(0), -1);
        vex(b, V_PCMPGTD, true, false, 0, 0, constant_operand(g, constant(g, lanes_below, 32)),
            -1);
        vex(b, V_MOVU_STORE, true, false, 0, 0, in_memory(at(RSP, NONE, 1, 32 * out_slot)),
            -1);
        g->mask_slot = out_slot;
        if (g->reversed_mask_slot >= 0) { /* lane k set when lanes - 1 - k is in the tail */
            for (int k = 0; k < 8; k++)
                lanes_below[k] = g->dbl ? 3 - k / 2 : 7 - k;
            vex(b, V_MOVD_LOAD, false, false, 0, 0, in_register(RCX), -1);
            vex(b, V_PBROADCASTD, true, false, 0, 0, in_register(0), -1);
            vex(b, V_PCMPGTD, true, false, 0, 0,
                constant_operand(g, constant(g, lanes_below, 32)), -1);
            vex(b, V_MOVU_STORE, true, false, 0, 0,
                in_memory(at(RSP, NONE, 1, 32 * g->reversed_mask_slot)), -1);
        }
        g->tail = true;
        body(g, out_slot);
        g->tail = false;
        if (!frame)
            gpr_immediate(b, 0, RSP, 32 * slots); /* add rsp, slots */
        return;
    }
    vex(b, V_XOR, false, false, 0, 0, in_register(0), -1); /* vxorps xmm0 */
    for (int s = 0; s < slots; s++)
        vex(b, V_MOVU_STORE, true, false, 0, 0, in_memory(at(RSP, NONE, 1, 32 * s)), -1);
    for (int i = 0; i < g->leaf_count; i++) {
        const leaf *l = &g->leaves[i];
        if (l->broadcast)
            continue;
        size_t size = bcg_dtype_size(l->dtype);
        if (leaf_strided(l))
            copy_strided(b, l, at(RSP, NONE, 1, 32 * l->slot));
        else
            copy_bytes(b, at(RSP, NONE, 1, 32 * l->slot), at(l->reg, RAX, (int)size, 0),
                       shift_of(size));
    }
    g->tail = true;
    body(g, out_slot);
    g->tail = false;
    copy_bytes(b, at(R11, RAX, g->width, 0), at(RSP, NONE, 1, 32 * out_slot),
               shift_of((size_t)g->width));
    if (!frame)
        gpr_immediate(b, 0, RSP, 32 * slots); /* add rsp, slots */
}

enum { LABEL_LOOP, LABEL_TAIL, LABEL_DONE, LABEL_PLAIN, LABEL_ALIGNED, LABEL_END };

/* A streaming root: elements up to the output's first 32-byte boundary
 * (at most n) through the slots, then vectors stored with vmovntps to the
 * last whole vector; an output not aligned to its elements takes the
 * plain loop (LABEL_PLAIN).  The kernel fences after its last call. */
static void write_stream_loop(generator *g, int slots, int out_slot, int n_at)
{
    builder *b = g->b;
    int lanes = 32 / g->width;
    byte(b, 0x31);                            /* xor eax, eax */
    byte(b, 0xc0);
    gpr_test_immediate(b, R11, g->width - 1);
    jump(b, 0x5, LABEL_PLAIN);                /* jne plain */
    gpr_pair(b, 0x89, RCX, R11);              /* rcx = (-out & 31) / width */
    gpr_negate(b, RCX);
    gpr_immediate(b, 4, RCX, 31);
    gpr_shift(b, 5, RCX, shift_of((size_t)g->width));
    gpr_pair(b, 0x39, RCX, R10);              /* cmp rcx, r10 */
    gpr_move_above(b, RCX, R10);              /* cmova rcx, r10 */
    gpr_pair(b, 0x85, RCX, RCX);
    jump(b, 0x4, LABEL_ALIGNED);              /* je aligned */
    gpr_memory(b, 0x89, R10, at(RSP, NONE, 1, n_at)); /* n kept */
    gpr_pair(b, 0x89, R10, RCX);
    write_partial(g, slots, out_slot, true);
    gpr_pair(b, 0x89, RAX, R10);
    gpr_memory(b, 0x8b, R10, at(RSP, NONE, 1, n_at));
    b->label[LABEL_ALIGNED] = b->length;
    gpr_pair(b, 0x89, RCX, R10);              /* rcx = rax + (n - rax) & -lanes */
    gpr_pair(b, 0x29, RCX, RAX);
    gpr_immediate(b, 4, RCX, -lanes);
    gpr_pair(b, 0x01, RCX, RAX);
    gpr_pair(b, 0x39, RAX, RCX);              /* cmp rax, rcx */
    jump(b, 0x3, LABEL_TAIL);                 /* jae tail */
    int loop = b->length;
    g->streaming = true;
    body(g, out_slot);
    g->streaming = false;
    gpr_immediate(b, 0, RAX, lanes);
    gpr_pair(b, 0x39, RAX, RCX);
    jump_back(b, 0x2, loop);                  /* jb loop */
    jump(b, -1, LABEL_TAIL);
    b->label[LABEL_PLAIN] = b->length;
}

static void write_function(generator *g)
{
    builder *b = g->b;
    int lanes = 32 / g->width;
    /* a first pass finds the leaves (their registers and slots) */
    memset(b, 0, sizeof *b);
    b->pending_rip = -1;
    g->tail = false;
    body(g, 0);
    if (g->failed || b->overflow)
        return;
    int slots = 0;
    for (int i = 0; i < g->leaf_count; i++)
        if (!g->leaves[i].broadcast)
            g->leaves[i].slot = slots++;
    int out_slot = slots++;
    /* the tail loads and stores under a mask (vmaskmovps) when every leaf
     * read along the run is contiguous in the lanes' dtype; else through
     * the stack slots (measured, rows of 20 f32: the slots' rep movsb cost
     * about 20 ns a tail) */
    g->masked = true;
    g->reversed_mask_slot = -1;
    for (int i = 0; i < g->leaf_count; i++)
        if (!g->leaves[i].broadcast)
            g->masked = g->masked && (g->leaves[i].stride == 1 || g->leaves[i].stride == -1) &&
                        g->leaves[i].dtype == g->lane;
    for (int i = 0; g->masked && i < g->leaf_count; i++)
        if (!g->leaves[i].broadcast && g->leaves[i].stride == -1 && g->reversed_mask_slot < 0)
            g->reversed_mask_slot = slots++; /* (reversed leaves: measured, rows of 300) */
    /* the slots stay on the stack through the loop when a strided leaf is
     * staged there (stage_leaf) or the streaming root keeps n there */
    bool stream = g->layout->stream, rows = g->layout->outer != NULL, frame = stream || rows;
    for (int i = 0; i < g->leaf_count; i++)
        frame = frame || (leaf_strided(&g->leaves[i]) && g->leaves[i].dtype != g->lane);
    int n_at = 32 * slots, rows_at = n_at + 8;
    int frame_bytes = 32 * slots + (stream || rows ? 16 : 0);
    /* the constants in the registers the body leaves free, loaded once
     * before the loop (ymm0 stays the body's: the tail zeroes with it) */
    int constants = b->pool_count;
    unsigned char pool[POOL_MAX][32];
    memcpy(pool, b->pool, sizeof pool);
    if (constants > 0 && g->peak + constants <= 16)
        for (int i = 0; i < constants; i++) {
            g->constant_register[i] = 15 - i;
            g->reserved |= 1u << (15 - i);
        }
    memset(b, 0, sizeof *b);
    b->pending_rip = -1;
    memcpy(b->pool, pool, sizeof pool); /* the same slots, in the same order */
    b->pool_count = constants;

    int saved[LEAF_MAX], saved_count = 0;
    for (int i = 0; i < g->leaf_count; i++) {
        int r = g->leaves[i].reg;
        if (r == RBX || r == RBP || r >= R12)
            saved[saved_count++] = r;
    }
    for (int i = 0; i < saved_count; i++)
        push_pop(b, saved[i], false);
    gpr_pair(b, 0x89, R10, RDI); /* mov r10, rdi: n */
    gpr_pair(b, 0x89, R11, RSI); /* mov r11, rsi: out */
    for (int i = 0; i < g->leaf_count; i++) /* rdx, the array, is the last one */
        gpr_memory(b, 0x8b, g->leaves[i].reg, at(RDX, NONE, 1, 8 * i));
    for (int i = 0; i < constants; i++)
        if (g->constant_register[i] > 0)
            vex(b, V_MOVU_LOAD, true, false, g->constant_register[i], 0,
                in_memory(pool_memory(i)), -1);
    if (frame)
        gpr_immediate(b, 5, RSP, frame_bytes); /* sub rsp, frame */
    int row = 0;
    if (rows) { /* rcx, the row count, kept in the frame */
        gpr_memory(b, 0x89, RCX, at(RSP, NONE, 1, rows_at));
        gpr_pair(b, 0x85, RCX, RCX);
        jump(b, 0x4, LABEL_END);              /* je end */
        row = b->length;
    }
    if (stream)
        write_stream_loop(g, slots, out_slot, n_at);
    gpr_pair(b, 0x89, RCX, R10);              /* mov rcx, r10 */
    gpr_immediate(b, 4, RCX, -lanes);         /* and rcx, -lanes */
    byte(b, 0x31);                            /* xor eax, eax */
    byte(b, 0xc0);
    gpr_pair(b, 0x85, RCX, RCX);              /* test rcx, rcx */
    jump(b, 0x4, LABEL_TAIL);                 /* je tail */
    b->label[LABEL_LOOP] = b->length;
    g->tail = false;
    body(g, out_slot);
    gpr_immediate(b, 0, RAX, lanes);          /* add rax, lanes */
    gpr_pair(b, 0x39, RAX, RCX);              /* cmp rax, rcx */
    jump(b, 0x2, LABEL_LOOP);                 /* jb loop */
    b->label[LABEL_TAIL] = b->length;
    gpr_pair(b, 0x39, RAX, R10);              /* cmp rax, r10 */
    jump(b, 0x3, LABEL_DONE);                 /* jae done */
    write_partial(g, slots, out_slot, frame);
    b->label[LABEL_DONE] = b->length;
    if (rows) { /* the next run: every pointer moved on by its outer stride */
        for (int i = 0; i < g->leaf_count; i++)
            if (g->leaves[i].outer)
                gpr_immediate(b, 0, g->leaves[i].reg,
                              (int32_t)(g->leaves[i].outer *
                                        (int64_t)bcg_dtype_size(g->leaves[i].dtype)));
        if (g->layout->out_outer)
            gpr_immediate(b, 0, R11, (int32_t)(g->layout->out_outer * g->width));
        gpr_memory(b, 0x8b, RCX, at(RSP, NONE, 1, rows_at));
        gpr_immediate(b, 5, RCX, 1);
        gpr_memory(b, 0x89, RCX, at(RSP, NONE, 1, rows_at));
        jump_back(b, 0x5, row);               /* jne row */
    }
    b->label[LABEL_END] = b->length;
    if (frame)
        gpr_immediate(b, 0, RSP, frame_bytes); /* add rsp, frame */
    byte(b, 0xc5);                            /* vzeroupper */
    byte(b, 0xf8);
    byte(b, 0x77);
    for (int i = saved_count - 1; i >= 0; i--)
        push_pop(b, saved[i], true);
    byte(b, 0xc3);                            /* ret */
}

/* The code and its pool, fixups resolved, into A. */
static unsigned char *finish(arena *a, builder *b, size_t *size)
{
    int pool_at = (b->length + 31) / 32 * 32;
    size_t total = (size_t)pool_at + 32 * (size_t)b->pool_count;
    unsigned char *out = arena_alloc(a, total);
    if (!out)
        return NULL;
    memset(out, 0xcc, (size_t)pool_at); /* int3 between the code and the pool */
    memcpy(out, b->code, (size_t)b->length);
    memcpy(out + pool_at, b->pool, 32 * (size_t)b->pool_count);
    for (int i = 0; i < b->fixup_count; i++) {
        const fixup *f = &b->fixups[i];
        int target = f->pool ? pool_at + 32 * f->target : b->label[f->target];
        int32_t rel = target - f->end;
        for (int k = 0; k < 4; k++)
            out[f->at + k] = (unsigned char)((uint32_t)rel >> (8 * k));
    }
    *size = total;
    return out;
}

bool vex_cpu_ok(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static int ok = -1; /* a data race that writes the same value */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return ok == 1;
#else
    return false;
#endif
}

bcg_status vex_build(arena *a, const kernel_ir *ir, const vex_layout *layout, vex_function **out)
{
    *out = NULL;
    bcg_dtype lane = ir->nodes[0]->dtype;
    if (!is_float_lane(lane) || ir->root_count != 1 || ir->reduce || ir->out_dtype != lane)
        return BCG_OK;
    builder *b = arena_alloc(a, sizeof *b);
    generator *g = arena_alloc(a, sizeof *g);
    if (!b || !g)
        return BCG_ERR_NOMEM;
    memset(g, 0, sizeof *g);
    g->ir = ir;
    g->layout = layout;
    g->lane = lane;
    g->dbl = lane == BCG_F64;
    g->width = g->dbl ? 8 : 4;
    g->b = b;
    const expr_node *root = ir->nodes[0];
    /* one operation of contiguous leaves gains nothing from fusion: its
     * microkernel is as fast; one that reads a leaf with a stride other
     * than 0 and 1 in place makes one pass where the microkernel gathers
     * (scalar) */
    bool strided = false;
    for (int k = 1; k <= ir->input_count; k++)
        strided = strided || (ir->input_used[k - 1] && layout->stride[k] != 0 &&
                              layout->stride[k] != 1);
    if (root->op == OP_OPERAND || root->op == OP_LITERAL ||
        operation_count(ir, 0, lane) < (strided ? 1 : 2) || !supported(g, 0, true))
        return BCG_OK;
    /* (the outer strides move the pointers by an add of 32 bits) */
    for (int k = 1; layout->outer && k <= ir->input_count; k++)
        if (layout->outer[k] > (1 << 26) || layout->outer[k] < -(1 << 26))
            return BCG_OK;
    if (layout->out_outer > (1 << 26) || layout->out_outer < -(1 << 26))
        return BCG_OK;
    write_function(g);
    if (g->failed || b->overflow)
        return BCG_OK;
    vex_function *f = arena_alloc(a, sizeof *f);
    if (!f)
        return BCG_ERR_NOMEM;
    memset(f, 0, sizeof *f);
    f->code = finish(a, b, &f->size);
    if (!f->code)
        return BCG_ERR_NOMEM;
    f->leaf_count = g->leaf_count;
    memcpy(f->leaf_node, g->leaf_node, sizeof f->leaf_node);
    for (int i = 0; i < g->leaf_count; i++)
        f->strided = f->strided || leaf_strided(&g->leaves[i]);
    f->stream = layout->stream;
    f->rows = layout->outer != NULL;
    *out = f;
    return BCG_OK;
}
