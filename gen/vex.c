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
 * or in place with a stride of -1 or +-2 (strided_load) or any other
 * (spaced_load: loads at element boundaries and vpshufb); literals live in
 * a constant pool after the code.  The loop runs over n in vectors of 8
 * f32 or 4 f64 lanes; the last n % lanes elements are loaded and stored
 * under a mask (vmaskmov) or copied into zeroed stack slots, computed by a
 * second copy of the body and copied out, so no lane outside the arrays is
 * ever read or written.  The rows form (vex_layout.outer) adds a 4th
 * argument, long rows, and runs that many runs of n, moving every pointer
 * by its outer stride; a streaming root (vex_layout.stream) peels to the
 * output's 32-byte boundary and stores with vmovntps (the paired loop's
 * body from the 64-byte line on: write_stream_pairs).  Results are those of the reference evaluator bit
 * for bit: no FMA, NumPy's minimum/maximum (see emit_extreme), comparisons
 * with the ordered/unordered predicate C uses.
 *
 * The encoder below knows exactly the instructions used: a table of VEX
 * forms (prefix bits, map, opcode) and a handful of GPR forms, with one
 * ModRM/SIB writer.  tests/unit/test_vex.c disassembles generated functions
 * with objdump and compares, and checks results against eval.c.
 *
 * Scope: f32 and f64 trees of + - * / unary -, abs, sqrt, square,
 * reciprocal, minimum, maximum, f32 exp and log (emit_exp, emit_log: the
 * microkernels' polynomials, hard lanes by a call into the C library), comparisons, !, &&, ||, logical_xor and
 * where, over operands of the tree's dtype (bool ones as conditions; i8,
 * u8, i16, u16, i32 and, in f64 trees, f32 ones converted on loading, as
 * are casts of them), hoisted locals and literals, at least two
 * operations (one is its microkernel's, as fast).  Constants, and leaves
 * read as one value, sit in the registers the tree leaves free (loaded
 * before the loop); a literal or a leaf read contiguously in the lanes'
 * dtype is an operation's r/m operand as it is (binary_in_place: no load
 * of its own); a subtree the tree uses twice (where(x > c, x, c)) is
 * computed once and kept (shared), and so is a leaf converted or read in
 * place with a stride (kept_leaf; a strided one of another dtype is
 * converted in its register, convert_in_register); hoisted locals are
 * held in registers like broadcast operands.  Anything else: vex_build says no and
 * the tile keeps its microkernel calls.
 *
 * The paired loop (write_function, builder.dup): when the body needs at
 * most 8 ymm registers, an iteration computes two vectors, the second
 * copy of every instruction on registers r + 8 and memory one vector on
 * (vex_paired; a strided leaf's rdi: lanes * stride elements on,
 * gpr_multiply; exp's and log's rare lanes tested once for both vectors
 * and written for each, rare_test);
 * at most one vector is left for the single body, then the tail.  On a
 * CPU with AVX-512F (vex_wide) the two copies of a division or square
 * root are one zmm instruction (vinsertf64x4, vdivps zmm, vextractf64x4):
 * Zen 4 divides a zmm in the time of a ymm (measured: 1.5 / abs(a) over
 * 93840 f32, 8.9 us ymm, 4.9 us paired, 4.6 us all zmm).  Bytes depend
 * only on the kernel IR and that CPU flag.  With AVX-512F, BW, DQ and VL
 * (vex_zmm) the paired body is written once in zmm instead (zmm_paired:
 * every instruction at twice its width, comparisons through k1, narrowing
 * by vpmov*), as gcc -O3 -march=native writes such loops on Zen 5; a tree
 * with an instruction it has no doubled form for keeps the ymm pairs.
 *
 * Integer and mixed trees (any tree the f32/f64 path above does not take)
 * are written by the typed_* functions ("integer and mixed trees" below):
 * every value at its own dtype, lanes = 32 bytes over the widest value's
 * size, narrower values in the low part of their register.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kir.h"
#include "vex.h"

/* ---- the encoder ------------------------------------------------------------------ */

#define CODE_MAX 32768 /* (a small kernel's straight-line code: vex_build_small) */
#define POOL_MAX 64 /* 32-byte constants */
#define LABEL_MAX 16
#define FIXUP_MAX 1024

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
    /* the paired loop (write_function): every vex() written twice, the
     * second copy on the next vector: ymm registers in DUP_MAP as r + 8,
     * memory on by DUP_DISP[its base register] bytes (RIP: the same);
     * DUP_WIDE: a division or square root of the two as one zmm operation
     * (AVX-512: as many zmm divisions a cycle as ymm ones); DUP_BAD: an
     * instruction the pairing does not know was asked for */
    bool dup, dup_wide, dup_bad;
    /* the paired loop as one zmm body (zmm_paired): each instruction
     * written once at twice its width, the two vectors one register;
     * ZMM_BAD: one has no such form (vex_build writes the ymm pairs then);
     * HALVES_EQUAL (bit r): a register held through the loop whose two
     * 16-byte halves are equal */
    bool dup_zmm, zmm_bad;
    unsigned halves_equal;
    int opmask;          /* the next EVEX instruction's opmask register (k1: 1), or 0 */
    int k1_of;           /* the register whose lanes k1 holds as bits (zmm_compare), or -1 */
    int k1_size;         /* their size in bytes */
    unsigned dup_map;
    unsigned dup_bases;  /* the GPRs memory may be based on (bit r): the leaves', the output's */
    int32_t dup_disp[16];
    int dup_lanes;       /* the elements of a vector: a strided leaf's rdi (gpr_multiply) */
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
    /* integer and mixed trees (typed_*) */
    V_MOVDQU_LOAD, V_MOVDQU_STORE, V_MOVQ_LOAD, V_MOVQ_STORE, V_MOVD_LOAD, V_MOVD_STORE,
    V_PBROADCASTQ, V_PADDB, V_PADDW, V_PADDD, V_PADDQ, V_PSUBB, V_PSUBW, V_PSUBD, V_PSUBQ,
    V_PMULLW, V_PMULLD, V_PAND, V_POR, V_PXOR, V_PABSB, V_PABSW, V_PABSD,
    V_PMINSB, V_PMINSW, V_PMINSD, V_PMINUB, V_PMINUW, V_PMINUD,
    V_PMAXSB, V_PMAXSW, V_PMAXSD, V_PMAXUB, V_PMAXUW, V_PMAXUD,
    V_PCMPEQW, V_PCMPGTB, V_PCMPGTW, V_PCMPGTD, V_PCMPGTQ, V_PBLENDVB,
    V_PMOVSXBW, V_PMOVSXBQ, V_PMOVSXWQ, V_PMOVSXDQ, V_PMOVZXBW, V_PMOVZXWQ, V_PMOVZXDQ,
    V_PACKSSWB, V_PACKUSWB, V_PACKSSDW, V_PACKUSDW, V_EXTRACTI128, V_SHUFPS,
    V_CVTTPS2DQ, V_CVTTPD2DQ, V_CVTPD2PS, V_PSHIFTW, V_PSHIFTD, V_PSHIFTQ, V_PMULUDQ, V_ROUNDPS, V_ROUNDPD, V_PSLLVQ, V_PSRLVQ,
    /* the leaves' strided loads and the streaming store (addressing) */
    V_PERMD, V_PERMQ, V_PSHUFB, V_SHUFP, V_MOVNT,
    V_MASKMOVPS_LOAD, V_MASKMOVPD_LOAD, V_MASKMOVPS_STORE, V_MASKMOVPD_STORE,
    V_MOVNTDQ, /* (the typed path's streaming root) */
    V_TESTPS,  /* (exp's test for lanes outside its easy range: emit_exp) */
    /* the leaves of other strides (spaced_load, gathered_load) */
    V_PINSRB, V_PINSRW, V_PINSRD, V_PINSRQ, V_INSERTI128, V_PGATHERDD, V_PGATHERDQ,
    V_COUNT
} vex_id;

static const struct {
    unsigned char pp, map, opcode;
    bool fp;        /* ps/pd pair: pp chosen by the lane dtype */
    bool w1;        /* VEX.W = 1 (64-bit elements of the variable shifts) */
} vex_rows[V_COUNT] = {
    [V_MOVU_LOAD] = {0, 1, 0x10, true, false}, [V_MOVU_STORE] = {0, 1, 0x11, true, false},
    [V_ADD] = {0, 1, 0x58, true, false},  [V_MUL] = {0, 1, 0x59, true, false},
    [V_SUB] = {0, 1, 0x5c, true, false},  [V_MIN] = {0, 1, 0x5d, true, false},
    [V_DIV] = {0, 1, 0x5e, true, false},  [V_MAX] = {0, 1, 0x5f, true, false},
    [V_SQRT] = {0, 1, 0x51, true, false}, [V_AND] = {0, 1, 0x54, true, false},
    [V_ANDN] = {0, 1, 0x55, true, false}, [V_OR] = {0, 1, 0x56, true, false},
    [V_XOR] = {0, 1, 0x57, true, false},  [V_CMP] = {0, 1, 0xc2, true, false},
    [V_BLENDVPS] = {1, 3, 0x4a, false, false}, [V_BLENDVPD] = {1, 3, 0x4b, false, false},
    [V_BROADCASTSS] = {1, 2, 0x18, false, false}, [V_BROADCASTSD] = {1, 2, 0x19, false, false},
    [V_PMOVZXBD] = {1, 2, 0x31, false, false}, [V_PMOVZXBQ] = {1, 2, 0x32, false, false},
    [V_PCMPEQB] = {1, 1, 0x74, false, false}, [V_PCMPEQD] = {1, 1, 0x76, false, false},
    [V_PCMPEQQ] = {1, 2, 0x29, false, false}, [V_PBROADCASTB] = {1, 2, 0x78, false, false},
    [V_PMOVSXBD] = {1, 2, 0x21, false, false}, [V_PMOVSXWD] = {1, 2, 0x23, false, false},
    [V_PMOVZXWD] = {1, 2, 0x33, false, false}, [V_PBROADCASTW] = {1, 2, 0x79, false, false},
    [V_PBROADCASTD] = {1, 2, 0x58, false, false}, [V_CVTDQ2PS] = {0, 1, 0x5b, false, false},
    [V_CVTDQ2PD] = {2, 1, 0xe6, false, false}, [V_CVTPS2PD] = {0, 1, 0x5a, false, false},
    [V_MOVDQU_LOAD] = {2, 1, 0x6f, false, false}, [V_MOVDQU_STORE] = {2, 1, 0x7f, false, false},
    [V_MOVQ_LOAD] = {2, 1, 0x7e, false, false}, [V_MOVQ_STORE] = {1, 1, 0xd6, false, false},
    [V_MOVD_LOAD] = {1, 1, 0x6e, false, false}, [V_MOVD_STORE] = {1, 1, 0x7e, false, false},
    [V_PBROADCASTQ] = {1, 2, 0x59, false, false},
    [V_PADDB] = {1, 1, 0xfc, false, false}, [V_PADDW] = {1, 1, 0xfd, false, false},
    [V_PADDD] = {1, 1, 0xfe, false, false}, [V_PADDQ] = {1, 1, 0xd4, false, false},
    [V_PSUBB] = {1, 1, 0xf8, false, false}, [V_PSUBW] = {1, 1, 0xf9, false, false},
    [V_PSUBD] = {1, 1, 0xfa, false, false}, [V_PSUBQ] = {1, 1, 0xfb, false, false},
    [V_PMULLW] = {1, 1, 0xd5, false, false}, [V_PMULLD] = {1, 2, 0x40, false, false},
    [V_PAND] = {1, 1, 0xdb, false, false}, [V_POR] = {1, 1, 0xeb, false, false}, [V_PXOR] = {1, 1, 0xef, false, false},
    [V_PABSB] = {1, 2, 0x1c, false, false}, [V_PABSW] = {1, 2, 0x1d, false, false},
    [V_PABSD] = {1, 2, 0x1e, false, false},
    [V_PMINSB] = {1, 2, 0x38, false, false}, [V_PMINSW] = {1, 1, 0xea, false, false},
    [V_PMINSD] = {1, 2, 0x39, false, false}, [V_PMINUB] = {1, 1, 0xda, false, false},
    [V_PMINUW] = {1, 2, 0x3a, false, false}, [V_PMINUD] = {1, 2, 0x3b, false, false},
    [V_PMAXSB] = {1, 2, 0x3c, false, false}, [V_PMAXSW] = {1, 1, 0xee, false, false},
    [V_PMAXSD] = {1, 2, 0x3d, false, false}, [V_PMAXUB] = {1, 1, 0xde, false, false},
    [V_PMAXUW] = {1, 2, 0x3e, false, false}, [V_PMAXUD] = {1, 2, 0x3f, false, false},
    [V_PCMPEQW] = {1, 1, 0x75, false, false}, [V_PCMPGTB] = {1, 1, 0x64, false, false},
    [V_PCMPGTW] = {1, 1, 0x65, false, false}, [V_PCMPGTD] = {1, 1, 0x66, false, false},
    [V_PCMPGTQ] = {1, 2, 0x37, false, false}, [V_PBLENDVB] = {1, 3, 0x4c, false, false},
    [V_PMOVSXBW] = {1, 2, 0x20, false, false}, [V_PMOVSXBQ] = {1, 2, 0x22, false, false},
    [V_PMOVSXWQ] = {1, 2, 0x24, false, false}, [V_PMOVSXDQ] = {1, 2, 0x25, false, false},
    [V_PMOVZXBW] = {1, 2, 0x30, false, false}, [V_PMOVZXWQ] = {1, 2, 0x34, false, false},
    [V_PMOVZXDQ] = {1, 2, 0x35, false, false},
    [V_PACKSSWB] = {1, 1, 0x63, false, false}, [V_PACKUSWB] = {1, 1, 0x67, false, false},
    [V_PACKSSDW] = {1, 1, 0x6b, false, false}, [V_PACKUSDW] = {1, 2, 0x2b, false, false},
    [V_EXTRACTI128] = {1, 3, 0x39, false, false}, [V_SHUFPS] = {0, 1, 0xc6, false, false},
    [V_CVTTPS2DQ] = {2, 1, 0x5b, false, false}, [V_CVTTPD2DQ] = {1, 1, 0xe6, false, false},
    [V_CVTPD2PS] = {1, 1, 0x5a, false, false},
    [V_PSHIFTW] = {1, 1, 0x71, false, false}, [V_PSHIFTD] = {1, 1, 0x72, false, false},
    [V_PSHIFTQ] = {1, 1, 0x73, false, false}, [V_PMULUDQ] = {1, 1, 0xf4, false, false},
    [V_ROUNDPS] = {1, 3, 0x08, false, false}, [V_ROUNDPD] = {1, 3, 0x09, false, false},
    [V_PSLLVQ] = {1, 2, 0x47, false, true}, [V_PSRLVQ] = {1, 2, 0x45, false, true},
    [V_PERMD] = {1, 2, 0x36, false, false}, [V_PERMQ] = {1, 3, 0x00, false, true},
    [V_PSHUFB] = {1, 2, 0x00, false, false}, [V_SHUFP] = {0, 1, 0xc6, true, false},
    [V_MOVNT] = {0, 1, 0x2b, true, false},
    [V_MASKMOVPS_LOAD] = {1, 2, 0x2c, false, false}, [V_MASKMOVPD_LOAD] = {1, 2, 0x2d, false, false},
    [V_MASKMOVPS_STORE] = {1, 2, 0x2e, false, false}, [V_MASKMOVPD_STORE] = {1, 2, 0x2f, false, false},
    [V_MOVNTDQ] = {1, 1, 0xe7, false, false},
    [V_TESTPS] = {1, 2, 0x0e, false, false},
    [V_PINSRB] = {1, 3, 0x20, false, false}, [V_PINSRW] = {1, 1, 0xc4, false, false},
    [V_PINSRD] = {1, 3, 0x22, false, false}, [V_PINSRQ] = {1, 3, 0x22, false, true},
    [V_INSERTI128] = {1, 3, 0x38, false, false},
    [V_PGATHERDD] = {1, 2, 0x90, false, false}, [V_PGATHERDQ] = {1, 2, 0x90, false, true},
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
static void vex_paired(builder *b, vex_id id, bool wide, bool dbl, int reg, int src,
                       rm_operand rm, int imm);

static void vex(builder *b, vex_id id, bool wide, bool dbl, int reg, int src, rm_operand rm,
                int imm)
{
    if (b->dup) {
        vex_paired(b, id, wide, dbl, reg, src, rm, imm);
        return;
    }
    int pp = vex_rows[id].fp ? (dbl ? 1 : 0) : vex_rows[id].pp, map = vex_rows[id].map;
    int r = reg >> 3 & 1, x = rm.mem && rm.m.index != NONE ? rm.m.index >> 3 & 1 : 0;
    int bb = rm.mem ? (rm.m.base >= 0 ? rm.m.base >> 3 & 1 : 0) : rm.reg >> 3 & 1;
    int last = (vex_rows[id].w1 ? 0x80 : 0) | (~src & 15) << 3 | (wide ? 4 : 0) | pp;
    if (!x && !bb && map == 1 && !vex_rows[id].w1) {
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

/* EVEX.512 (AVX-512F) OPCODE in MAP with prefix PP, W: zmm REG, vvvv
 * SRC (0 unused), r/m RM (a zmm or ymm register, or memory with a 32-bit
 * displacement: no disp8*N compression), IMM >= 0 a trailing byte.  REG,
 * SRC and a register RM may be zmm16-31 (zmm_strided_load's). */
static void evex_form(builder *b, int pp, int map, int opcode, bool w, int reg, int src,
                      rm_operand rm, int imm, bool broadcast, int bits);

static void evex(builder *b, int pp, int map, int opcode, bool w, int reg, int src,
                 rm_operand rm, int imm)
{
    evex_form(b, pp, map, opcode, w, reg, src, rm, imm, false, 512);
}

/* evex; BROADCAST: memory RM is one element (4 bytes, or 8 when W) read
 * into every lane (EVEX.b); BITS 512, or 256 and 128 (AVX-512VL). */
static void evex_form(builder *b, int pp, int map, int opcode, bool w, int reg, int src,
                      rm_operand rm, int imm, bool broadcast, int bits)
{
    int r = reg >> 3 & 1, x = rm.mem ? (rm.m.index != NONE ? rm.m.index >> 3 & 1 : 0)
                                       : rm.reg >> 4 & 1; /* (EVEX.X: zmm16-31) */
    int bb = rm.mem ? (rm.m.base >= 0 ? rm.m.base >> 3 & 1 : 0) : rm.reg >> 3 & 1;
    byte(b, 0x62);
    byte(b, (!r) << 7 | (!x) << 6 | (!bb) << 5 | (reg < 16) << 4 | map); /* R': zmm16-31 */
    byte(b, (w ? 0x80 : 0) | (~src & 15) << 3 | 4 | pp);
    byte(b, (broadcast && rm.mem ? 0x10 : 0) | (bits == 512 ? 2 : bits == 256 ? 1 : 0) << 5 |
                (src < 16) << 3 | b->opmask); /* the length, V' (zmm16-31: 0), the opmask */
    byte(b, opcode);
    if (!rm.mem) {
        modrm_register(b, reg, rm.reg);
    } else if (rm.m.base == RIP || (rm.m.disp == 0 && (rm.m.base & 7) != RBP)) {
        modrm_memory(b, reg, rm.m);
    } else { /* disp32 (mod 2): a disp8 would be scaled by the vector size */
        bool sib = rm.m.index != NONE || (rm.m.base & 7) == RSP;
        byte(b, 2 << 6 | (reg & 7) << 3 | (sib ? 4 : (rm.m.base & 7)));
        if (sib) {
            int scale = rm.m.scale == 8 ? 3 : rm.m.scale == 4 ? 2 : rm.m.scale == 2 ? 1 : 0;
            byte(b, (scale << 6) | ((rm.m.index == NONE ? RSP : rm.m.index) & 7) << 3 |
                        (rm.m.base & 7));
        }
        word32(b, rm.m.disp);
    }
    if (imm >= 0)
        byte(b, imm);
    end_instruction(b);
}

/* vinsertf64x4 zmmR, zmmR, ymmY, 1: ymm Y into R's upper half. */
static void insert_upper(builder *b, int r, int y)
{
    evex(b, 1, 3, 0x1a, true, r, r, in_register(y), 1);
}

/* The paired loop's copy of register R (the next vector's), or R. */
static int paired(const builder *b, int r) { return b->dup_map >> r & 1 ? r + 8 : r; }

/* ID written for both vectors of the paired loop (builder.dup): as it is,
 * then on the second's registers and memory; a division or square root
 * as one zmm operation when DUP_WIDE (the halves joined, the result's
 * upper half extracted).  An instruction the pairing does not know sets
 * dup_bad (write_function writes the plain loop then). */
static bool zmm_paired(builder *b, vex_id id, bool wide, bool dbl, int reg, int src,
                       rm_operand rm, int imm);

static void vex_paired(builder *b, vex_id id, bool wide, bool dbl, int reg, int src,
                       rm_operand rm, int imm)
{
    if (b->dup_zmm && zmm_paired(b, id, wide, dbl, reg, src, rm, imm))
        return;
    bool vvvv; /* whether SRC is an operand */
    switch (id) {
    case V_ADD: case V_MUL: case V_SUB: case V_MIN: case V_DIV: case V_MAX: case V_AND:
    case V_ANDN: case V_OR: case V_XOR: case V_CMP: case V_BLENDVPS: case V_BLENDVPD:
    case V_PCMPEQB: case V_PCMPEQD: case V_PCMPEQQ:
    /* the typed trees' */
    case V_PADDB: case V_PADDW: case V_PADDD: case V_PADDQ: case V_PSUBB: case V_PSUBW:
    case V_PSUBD: case V_PSUBQ: case V_PMULLW: case V_PMULLD: case V_PAND: case V_POR:
    case V_PXOR: case V_PMINSB: case V_PMINSW: case V_PMINSD: case V_PMINUB: case V_PMINUW:
    case V_PMINUD: case V_PMAXSB: case V_PMAXSW: case V_PMAXSD: case V_PMAXUB: case V_PMAXUW:
    case V_PMAXUD: case V_PCMPEQW: case V_PCMPGTB: case V_PCMPGTW: case V_PCMPGTD:
    case V_PCMPGTQ: case V_PBLENDVB: case V_PACKSSWB: case V_PACKUSWB: case V_PACKSSDW:
    case V_PACKUSDW: case V_SHUFPS: case V_PMULUDQ: case V_PSLLVQ: case V_PSRLVQ:
    case V_PERMD: case V_PSHUFB: case V_SHUFP: /* (the strided leaves' loads) */
        vvvv = true;
        break;
    case V_PSHIFTW: case V_PSHIFTD: case V_PSHIFTQ: /* reg: the operation; vvvv the result */
        b->dup = false;
        vex(b, id, wide, dbl, reg, src, rm, imm);
        vex(b, id, wide, dbl, reg, paired(b, src),
            rm.mem ? rm : in_register(paired(b, rm.reg)), imm);
        b->dup = true;
        if (rm.mem)
            b->dup_bad = true;
        return;
    case V_MOVDQU_LOAD: case V_MOVDQU_STORE: case V_MOVQ_LOAD: case V_MOVQ_STORE:
    case V_MOVD_LOAD: case V_MOVD_STORE: case V_PBROADCASTQ: case V_PABSB: case V_PABSW:
    case V_PABSD: case V_PMOVSXBW: case V_PMOVSXBQ: case V_PMOVSXWQ: case V_PMOVSXDQ:
    case V_PMOVZXBW: case V_PMOVZXWQ: case V_PMOVZXDQ: case V_EXTRACTI128: case V_CVTTPS2DQ:
    case V_CVTTPD2DQ: case V_CVTPD2PS: case V_ROUNDPS: case V_ROUNDPD: case V_PERMQ:
        vvvv = false;
        break;
    case V_MOVU_LOAD: case V_MOVU_STORE: case V_SQRT: case V_BROADCASTSS: case V_BROADCASTSD:
    case V_PMOVZXBD: case V_PMOVZXBQ: case V_PBROADCASTB: case V_PMOVSXBD: case V_PMOVSXWD:
    case V_PMOVZXWD: case V_PBROADCASTW: case V_PBROADCASTD: case V_CVTDQ2PS: case V_CVTDQ2PD:
    case V_CVTPS2PD: case V_MOVNT: case V_MOVNTDQ:
        vvvv = false;
        break;
    default:
        b->dup_bad = true;
        return;
    }
    bool is4 = id == V_BLENDVPS || id == V_BLENDVPD || id == V_PBLENDVB;
    rm_operand rm2 = rm;
    if (rm.mem && rm.m.base != RIP) {
        if (rm.m.base < 0 || rm.m.base >= 16 || !(b->dup_bases >> rm.m.base & 1)) {
            b->dup_bad = true; /* (a stack slot, a strided read's rdi: not paired) */
            return;
        }
        rm2.m.disp += b->dup_disp[rm.m.base];
    } else if (!rm.mem) {
        rm2.reg = paired(b, rm.reg);
    }
    b->dup = false;
    if (b->dup_wide && wide && (id == V_DIV || id == V_SQRT) && paired(b, reg) != reg &&
        (!rm.mem || (rm.m.base != RIP && b->dup_disp[rm.m.base] == 32))) {
        /* the two vectors' operands joined into zmm registers (the
         * constants' upper halves were filled before the loop); a
         * contiguous leaf's two vectors are one 64-byte operand */
        if (id == V_DIV && paired(b, src) != src)
            insert_upper(b, src, paired(b, src));
        if (!rm.mem && paired(b, rm.reg) != rm.reg && !(id == V_DIV && rm.reg == src))
            insert_upper(b, rm.reg, paired(b, rm.reg));
        evex(b, dbl ? 1 : 0, 1, id == V_DIV ? 0x5e : 0x51, dbl, reg, id == V_DIV ? src : 0, rm,
             -1);
        evex(b, 1, 3, 0x1b, true, reg, 0, in_register(paired(b, reg)), 1); /* vextractf64x4 */
        b->dup = true;
        return;
    }
    vex(b, id, wide, dbl, reg, src, rm, imm);
    vex(b, id, wide, dbl, paired(b, reg), vvvv ? paired(b, src) : src, rm2,
        is4 ? paired(b, imm >> 4) << 4 : imm);
    b->dup = true;
}

/* The paired loop as one zmm body (builder.dup_zmm, where the CPU has
 * AVX-512F, BW and DQ): the two vectors of register r (r and r + 8 in
 * the ymm pairs) are zmm r, its low half the first; a value narrower than
 * a vector (the typed path's, in the low part of its register) is both
 * vectors' packed, at twice its bytes.  So an instruction is written once
 * at twice its width: a 256-bit one as its EVEX.512 form, a 128-bit one
 * as its VEX.256 form, vmovq and vmovd as the loads and stores of twice
 * their bytes; a memory operand must be both vectors' (the second's
 * bytes right after the first's: dup_disp is the access's size) or one
 * element broadcast (the same for both).  Measured on Zen 5 (gcc -O3
 * -march=native writes zmm code there): minimum(b, a) f64 a[1], i16 b
 * 74593, 7.8 us in ymm pairs, 4.5 in zmm.  Only instructions whose doubled
 * form computes the same bytes: comparisons and blends (AVX-512 writes
 * their masks to k registers), packs, shuffles and permutes (their lanes
 * cross the halves) set zmm_bad, and vex_build writes the ymm pairs
 * instead.  False: ID is not this mode's (the caller writes the pairs). */
enum { ZMM_NO, ZMM_FP, ZMM_W0, ZMM_W1 };

static const struct {
    unsigned char kind;  /* ZMM_NO: no doubled form; ZMM_FP: EVEX.W = the pd form */
    unsigned char ratio; /* the destination's bytes over the memory source's */
    bool broadcast;      /* one element read (vbroadcast, vpbroadcast) */
    bool half_source;    /* a narrowing conversion: its source twice the destination */
} zmm_rows[V_COUNT] = {
    [V_MOVU_LOAD] = {ZMM_FP, 1, 0, 0}, [V_MOVU_STORE] = {ZMM_FP, 1, 0, 0},
    [V_ADD] = {ZMM_FP, 1, 0, 0}, [V_MUL] = {ZMM_FP, 1, 0, 0}, [V_SUB] = {ZMM_FP, 1, 0, 0},
    [V_MIN] = {ZMM_FP, 1, 0, 0}, [V_DIV] = {ZMM_FP, 1, 0, 0}, [V_MAX] = {ZMM_FP, 1, 0, 0},
    [V_SQRT] = {ZMM_FP, 1, 0, 0}, [V_AND] = {ZMM_FP, 1, 0, 0}, [V_ANDN] = {ZMM_FP, 1, 0, 0},
    [V_OR] = {ZMM_FP, 1, 0, 0}, [V_XOR] = {ZMM_FP, 1, 0, 0},
    [V_BROADCASTSS] = {ZMM_W0, 1, 1, 0}, [V_BROADCASTSD] = {ZMM_W1, 1, 1, 0},
    [V_PBROADCASTB] = {ZMM_W0, 1, 1, 0}, [V_PBROADCASTW] = {ZMM_W0, 1, 1, 0},
    [V_PBROADCASTD] = {ZMM_W0, 1, 1, 0}, [V_PBROADCASTQ] = {ZMM_W1, 1, 1, 0},
    [V_PMOVZXBD] = {ZMM_W0, 4, 0, 0}, [V_PMOVZXBQ] = {ZMM_W0, 8, 0, 0},
    [V_PMOVSXBD] = {ZMM_W0, 4, 0, 0}, [V_PMOVSXWD] = {ZMM_W0, 2, 0, 0},
    [V_PMOVZXWD] = {ZMM_W0, 2, 0, 0}, [V_PMOVSXBW] = {ZMM_W0, 2, 0, 0},
    [V_PMOVSXBQ] = {ZMM_W0, 8, 0, 0}, [V_PMOVSXWQ] = {ZMM_W0, 4, 0, 0},
    [V_PMOVSXDQ] = {ZMM_W0, 2, 0, 0}, [V_PMOVZXBW] = {ZMM_W0, 2, 0, 0},
    [V_PMOVZXWQ] = {ZMM_W0, 4, 0, 0}, [V_PMOVZXDQ] = {ZMM_W0, 2, 0, 0},
    [V_CVTDQ2PS] = {ZMM_W0, 1, 0, 0}, [V_CVTDQ2PD] = {ZMM_W0, 2, 0, 0},
    [V_CVTPS2PD] = {ZMM_W0, 2, 0, 0}, [V_CVTPD2PS] = {ZMM_W1, 1, 0, 1},
    [V_CVTTPS2DQ] = {ZMM_W0, 1, 0, 0}, [V_CVTTPD2DQ] = {ZMM_W1, 1, 0, 1},
    [V_MOVDQU_LOAD] = {ZMM_W0, 1, 0, 0}, [V_MOVDQU_STORE] = {ZMM_W0, 1, 0, 0},
    [V_PADDB] = {ZMM_W0, 1, 0, 0}, [V_PADDW] = {ZMM_W0, 1, 0, 0},
    [V_PADDD] = {ZMM_W0, 1, 0, 0}, [V_PADDQ] = {ZMM_W1, 1, 0, 0},
    [V_PSUBB] = {ZMM_W0, 1, 0, 0}, [V_PSUBW] = {ZMM_W0, 1, 0, 0},
    [V_PSUBD] = {ZMM_W0, 1, 0, 0}, [V_PSUBQ] = {ZMM_W1, 1, 0, 0},
    [V_PMULLW] = {ZMM_W0, 1, 0, 0}, [V_PMULLD] = {ZMM_W0, 1, 0, 0},
    [V_PMULUDQ] = {ZMM_W1, 1, 0, 0},
    [V_PAND] = {ZMM_W0, 1, 0, 0}, [V_POR] = {ZMM_W0, 1, 0, 0}, [V_PXOR] = {ZMM_W0, 1, 0, 0},
    [V_PABSB] = {ZMM_W0, 1, 0, 0}, [V_PABSW] = {ZMM_W0, 1, 0, 0}, [V_PABSD] = {ZMM_W0, 1, 0, 0},
    [V_PMINSB] = {ZMM_W0, 1, 0, 0}, [V_PMINSW] = {ZMM_W0, 1, 0, 0},
    [V_PMINSD] = {ZMM_W0, 1, 0, 0}, [V_PMINUB] = {ZMM_W0, 1, 0, 0},
    [V_PMINUW] = {ZMM_W0, 1, 0, 0}, [V_PMINUD] = {ZMM_W0, 1, 0, 0},
    [V_PMAXSB] = {ZMM_W0, 1, 0, 0}, [V_PMAXSW] = {ZMM_W0, 1, 0, 0},
    [V_PMAXSD] = {ZMM_W0, 1, 0, 0}, [V_PMAXUB] = {ZMM_W0, 1, 0, 0},
    [V_PMAXUW] = {ZMM_W0, 1, 0, 0}, [V_PMAXUD] = {ZMM_W0, 1, 0, 0},
    [V_PSHIFTW] = {ZMM_W0, 1, 0, 0}, [V_PSHIFTD] = {ZMM_W0, 1, 0, 0},
    [V_PSHIFTQ] = {ZMM_W1, 1, 0, 0},
    [V_PSLLVQ] = {ZMM_W1, 1, 0, 0}, [V_PSRLVQ] = {ZMM_W1, 1, 0, 0},
    /* (the streaming root's paired loop: 64-byte aligned, write_stream_pairs) */
    [V_MOVNT] = {ZMM_FP, 1, 0, 0}, [V_MOVNTDQ] = {ZMM_W0, 1, 0, 0},
};

/* Whether the 32 constant bytes P repeat every SIZE bytes. */
static bool periodic(const unsigned char *p, int size)
{
    for (int i = size; i < 32; i++)
        if (p[i] != p[i - size])
            return false;
    return true;
}

/* A 256-bit comparison in the zmm body: EVEX compares write a k
 * register (k1, caller-saved), which vpmovm2{b,w,d,q} (AVX-512BW, DQ)
 * turns into the lanes of ones and zeros the ymm code has. */
static void zmm_compare(builder *b, vex_id id, bool dbl, int reg, int src, rm_operand rm,
                        int imm, bool broadcast)
{
    int size = id == V_CMP ? (dbl ? 8 : 4)
               : id == V_PCMPEQB || id == V_PCMPGTB ? 1
               : id == V_PCMPEQW || id == V_PCMPGTW ? 2
               : id == V_PCMPEQD || id == V_PCMPGTD ? 4 : 8;
    int pp = id == V_CMP ? (dbl ? 1 : 0) : vex_rows[id].pp;
    evex_form(b, pp, vex_rows[id].map, vex_rows[id].opcode, size == 8, 1, src, rm, imm,
              broadcast, 512);
    evex_form(b, 2, 2, size <= 2 ? 0x28 : 0x38, size == 2 || size == 8, reg, 0, in_register(1),
              -1, false, 512); /* vpmovm2{b,w,d,q} reg, k1 */
    b->k1_of = reg; /* (the blends of masks of their size, mask_to's other sizes) */
    b->k1_size = size;
}

/* A 256-bit blend in the zmm body: the mask's sign bits into k1
 * (vpmov{b,d,q}2m) and the masked vblendmps, vblendmpd or vpblendmb:
 * RM where the bit is set, SRC elsewhere, as vblendv and vpblendvb. */
/* VEX_ZMM_BLEND_K1 0: the zmm body's byte blend moves its mask into k1
 * again (vpmovb2m) though k1 holds it, as before (measurements); else
 * vpblendm{b,w,d,q} at the width k1 holds (the mask's lanes all ones or
 * zeros: the same bytes). */
int vex_zmm_blend_k1 = -1;

static void zmm_select(builder *b, vex_id id, int reg, int src, rm_operand rm, int mask)
{
    bool bytes = id == V_PBLENDVB, quad = id == V_BLENDVPD;
    if (bytes && b->k1_of == mask && vex_zmm_blend_k1 != 0) {
        int size = b->k1_size;
        b->opmask = 1; /* vpblendm{b,w} 66 /r, vpblendm{d,q} 64 /r (W: w, q) */
        evex_form(b, 1, 2, size <= 2 ? 0x66 : 0x64, size == 2 || size == 8, reg, src, rm, -1,
                  false, 512);
        b->opmask = 0;
        if (reg == mask)
            b->k1_of = -1;
        return;
    }
    if (bytes || b->k1_of != mask || b->k1_size != (quad ? 8 : 4))
        evex_form(b, 2, 2, bytes ? 0x29 : 0x39, quad, 1, 0, in_register(mask), -1, false, 512);
    b->opmask = 1;
    evex_form(b, 1, 2, bytes ? 0x66 : 0x65, quad, reg, src, rm, -1, false, 512);
    b->opmask = 0;
    b->k1_of = bytes || reg == mask ? -1 : mask;
    b->k1_size = quad ? 8 : 4;
}

static bool zmm_paired(builder *b, vex_id id, bool wide, bool dbl, int reg, int src,
                       rm_operand rm, int imm)
{
    bool compare = id == V_CMP || id == V_PCMPEQB || id == V_PCMPEQW || id == V_PCMPEQD ||
                   id == V_PCMPEQQ || id == V_PCMPGTB || id == V_PCMPGTW || id == V_PCMPGTD ||
                   id == V_PCMPGTQ;
    bool blend = id == V_BLENDVPS || id == V_BLENDVPD || id == V_PBLENDVB;
    if (id == V_MOVD_LOAD || id == V_MOVD_STORE || id == V_MOVQ_LOAD || id == V_MOVQ_STORE) {
        int bytes = id == V_MOVD_LOAD || id == V_MOVD_STORE ? 4 : 8;
        bool load = id == V_MOVD_LOAD || id == V_MOVQ_LOAD;
        if (!rm.mem || rm.m.base == RIP || rm.m.base < 0 || !(b->dup_bases >> rm.m.base & 1) ||
            b->dup_disp[rm.m.base] != bytes) {
            b->zmm_bad = true;
            return false;
        }
        if (load && reg == b->k1_of)
            b->k1_of = -1;
        b->dup = false;
        if (bytes == 4)
            vex(b, load ? V_MOVQ_LOAD : V_MOVQ_STORE, false, false, reg, 0, rm, -1);
        else
            vex(b, load ? V_MOVDQU_LOAD : V_MOVDQU_STORE, false, false, reg, 0, rm, -1);
        b->dup = true;
        return true;
    }
    if ((zmm_rows[id].kind == ZMM_NO && !compare && !blend) ||
        (id >= V_PSHIFTW && id <= V_PSHIFTQ && rm.mem) ||
        (imm >= 0 && !(id >= V_PSHIFTW && id <= V_PSHIFTQ) && !compare && !blend)) {
        b->zmm_bad = true;
        return false;
    }
    bool shift = id >= V_PSHIFTW && id <= V_PSHIFTQ; /* (reg: the operation's extension) */
    /* registers held through the loop: their upper halves hold the same
     * 32 bytes (write_function); a 128-bit operation reads 32 of them */
    unsigned held = 0;
    int operand[4] = {shift ? -1 : reg, src, rm.mem ? -1 : rm.reg, blend ? imm >> 4 : -1};
    for (int k = 0; k < 4; k++)
        if (operand[k] >= 0 && !(b->dup_map >> operand[k] & 1))
            held |= 1u << operand[k];
    if (!wide && (held & ~b->halves_equal & ~1u)) { /* (ymm0 is the body's: src 0 unused) */
        b->zmm_bad = true;
        return false;
    }
    int dest = wide ? 32 : 16, ratio = zmm_rows[id].ratio ? zmm_rows[id].ratio : 1;
    int access = zmm_rows[id].half_source ? 2 * dest : dest / ratio;
    bool broadcast = false;
    if (rm.mem && rm.m.base == RIP) {
        const unsigned char *p = b->pool[rm.m.pool];
        bool w1 = zmm_rows[id].kind == ZMM_FP || id == V_CMP ? dbl
                  : zmm_rows[id].kind == ZMM_W1 || id == V_PCMPEQQ || id == V_PCMPGTQ;
        if (zmm_rows[id].broadcast) {
            broadcast = false; /* (a constant's own broadcast: the element read as it is) */
        } else if (!wide) {
            if (!periodic(p, 16)) {
                b->zmm_bad = true;
                return false;
            }
        } else if (id == V_MOVU_LOAD && periodic(p, w1 ? 8 : 4)) {
            /* (vmovups has no element broadcast: EVEX.b on it faults;
             * vbroadcastss or vbroadcastsd of the first element) */
            if (reg == b->k1_of)
                b->k1_of = -1;
            b->dup = false;
            evex_form(b, 1, 2, w1 ? 0x19 : 0x18, w1, reg, 0, rm, -1, false, 512);
            b->dup = true;
            return true;
        } else if (ratio != 1 || zmm_rows[id].half_source ||
                   !(id == V_MOVU_LOAD || (id >= V_ADD && id <= V_XOR && id != V_SQRT) ||
                     id == V_CMP || id == V_PCMPEQD || id == V_PCMPEQQ || id == V_PCMPGTD ||
                     id == V_PCMPGTQ ||
                     id == V_PADDD || id == V_PADDQ || id == V_PSUBD || id == V_PSUBQ ||
                     id == V_PMULLD || id == V_PMULUDQ || id == V_PAND || id == V_POR ||
                     id == V_PXOR || id == V_PMINSD || id == V_PMINUD || id == V_PMAXSD ||
                     id == V_PMAXUD || id == V_PSLLVQ || id == V_PSRLVQ) ||
                   !periodic(p, w1 ? 8 : 4)) {
            b->zmm_bad = true; /* (no element broadcast for it, or not one element) */
            return false;
        } else {
            broadcast = true;
        }
    } else if (rm.mem) {
        if (rm.m.base < 0 || rm.m.base >= 16 || !(b->dup_bases >> rm.m.base & 1) ||
            b->dup_disp[rm.m.base] != (zmm_rows[id].broadcast ? 0 : access)) {
            b->zmm_bad = true; /* (a stack slot, a strided read: not both vectors') */
            return false;
        }
    }
    if (wide && blend && rm.mem && rm.m.base == RIP) {
        b->zmm_bad = true; /* (a 32-byte constant: no element broadcast for the masked blend) */
        return false;
    }
    bool store = id == V_MOVU_STORE || id == V_MOVDQU_STORE;
    if (!store && (shift ? src : reg) == b->k1_of && !(wide && blend))
        b->k1_of = -1; /* (k1 no longer that register's bits; zmm_select says for itself) */
    b->dup = false;
    if (!wide) {
        vex(b, id, true, dbl, reg, src, rm, imm);
    } else if (compare) {
        zmm_compare(b, id, dbl, reg, src, rm, imm, broadcast);
    } else if (blend) {
        zmm_select(b, id, reg, src, rm, imm >> 4);
    } else {
        int pp = vex_rows[id].fp ? (dbl ? 1 : 0) : vex_rows[id].pp;
        bool w = zmm_rows[id].kind == ZMM_FP ? dbl : zmm_rows[id].kind == ZMM_W1;
        evex_form(b, pp, vex_rows[id].map, vex_rows[id].opcode, w, reg, src, rm, imm, broadcast,
                  512);
    }
    b->dup = true;
    return true;
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

/* imul DST, SRC, V.  In the paired loop, rdi = rax * (a strided leaf's
 * stride in bytes) addresses that leaf's vector (strided_load,
 * typed_strided_load) until the next such multiply, both copies' loads
 * written at once: the second vector's lie dup_lanes * V bytes on. */
static void gpr_multiply(builder *b, int dst, int src, int32_t v)
{
    if (b->dup && dst == RDI && src == RAX) {
        b->dup_bases |= 1u << RDI;
        b->dup_disp[RDI] = v * b->dup_lanes;
    }
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
    int64_t outer2;   /* elements from group to group of rows (vex_layout.group) */
    bcg_dtype dtype;
    int reg;          /* the GPR holding its pointer */
    int slot;         /* the tail's stack slot (contiguous leaves) */
} leaf;

static const int pointer_registers[] = {R8, R9, RBX, RBP, R12, R13, R14, R15, RDX};
#define LEAF_MAX ((int)(sizeof pointer_registers / sizeof pointer_registers[0]))

#define FLOAT_HOIST_MAX 4 /* (vex_function.float_hoist_node) */
typedef struct generator {
    const kernel_ir *ir;
    const vex_layout *layout; /* per plan operand: its stride along the run */
    bcg_dtype lane;           /* BCG_F32 or BCG_F64; the root's dtype when typed */
    bool dbl;
    int width;                /* bytes per lane: 4 or 8; the root's size when typed */
    bool typed;               /* an integer or mixed tree (typed_body) */
    int lanes;                /* elements a vector: 32 bytes / the widest value's size */
    builder *b;
    leaf leaves[LEAF_MAX];
    int leaf_count;
    int leaf_node[LEAF_MAX];
    bool tail;                /* writing the tail's body: contiguous leaves in slots */
    bool streaming;           /* the loop's root store is vmovntps (aligned) */
    bool masked;              /* the tail loads and stores with vmaskmov (write_partial) */
    bool overlap;             /* (typed) writing the run's last whole vector into the
                                 output's slot (write_function) */
    int overlap_slot;         /* (typed) its slot, which the tail's zeroing skips, or -1 */
    int *hoist;               /* (typed) per node: its index among the values computed
                                 once a run (write_hoisted), or -1; NULL: none */
    struct value *hoisted;    /* their kinds (mask, inverted, dtype) */
    int hoist_count, hoist_base; /* how many; the stack slot of the first */
    int32_t hoist_frame;      /* bytes below the slots (the small kernel's buffers) */
    bool hoisting;            /* writing them */
    /* (float path) the largest subtrees constant along a run (a value a
     * row: sqrt(v + 1e-5) with v one value a row), computed once at the
     * start of each run into a register of their own (write_float_hoisted)
     * and read from it by the body; the register 0 until write_function
     * gives one (else computed in the body as before) */
    int float_hoist_id[FLOAT_HOIST_MAX], float_hoist_reg[FLOAT_HOIST_MAX];
    int float_hoist_count;
    bool float_hoisting;      /* writing them */
    bool float_hoist_short;   /* registers short for them (write_function) */
    int branches;             /* where()s written as where_branch's branch (vex_function) */
    int branching;            /* inside where_branch's sides (typed_leaf keeps no read) */
    int byte_literals;        /* products written by byte_times_literal (vex_function) */
    int plain_extremes;       /* minimums and maximums without a NaN test (vex_function) */
    int kept[LEAF_MAX];       /* (typed) > 0: strided leaf i's lanes kept in this
                                 register for its later uses in the body */
    int loads[LEAF_MAX];      /* (typed) its uses loaded so far in the body */
    int mask_slot;            /* the stack slot holding the tail's mask */
    int reversed_mask_slot;   /* and its reverse, for reversed leaves (or -1) */
    unsigned free;            /* ymm registers free (bit r) */
    unsigned reserved;        /* ymm registers holding constants */
    int peak;                 /* the most registers the body holds at once */
    int constant_register[POOL_MAX]; /* > 0: pool slot i is in this register */
    int leaf_register[LEAF_MAX];     /* > 0: broadcast leaf i, in the lane dtype, is in
                                        this register (loaded before the loop) */
    bool failed;
    bool single;              /* the single loop only (the pairing failed: builder.dup_bad) */
    bool no_zmm;              /* the paired loop as ymm pairs (zmm_paired failed: zmm_bad) */
    bool rare_paired;         /* rare_test turned the pairing off (rare_end turns it on) */
    /* common subexpressions of the float path (compute, shared): per value
     * shared_class gives, its uses in the tree (NULL: none shared), the
     * uses left in the body being written, and its value once computed */
    int *shared_uses, *shared_left;
    int *shared_class;        /* per value: the first of the same tree (fold_same_tree) */
    struct value *shared_value;
    bool paired;              /* write_function wrote the paired loop */
    bool zmm;                 /* as one zmm body (zmm_paired) */
    bool zmm_index[LEAF_MAX]; /* strided leaf i read by zmm_strided_load, its index
                                 in zmm16 + i (loaded before the loop) */
    int zmm_last_index[LEAF_MAX]; /* >= 0: leaf i (stride +-2) is read by two loads
                                     a whole zmm apart (zmm_index_load), and this pool
                                     slot holds the index of the last pair's loads */
    bool zmm_ahead;           /* writing the zmm body of the loop whose pairs all
                                 have an element after them (write_function) */
    bool pair_wide;           /* the paired loop's builder.dup_wide */
    unsigned pair_registers;  /* its builder.dup_map: the body's registers */
    struct small_vector *small; /* vex_build_small's loads of the vector being written;
                                   NULL: a tile's function */
} generator;

/* A computed value: ymm REG; a mask when MASK (all ones where true, or
 * where false when INVERTED). */
typedef struct value {
    int reg;
    bool mask, inverted;
    bcg_dtype dtype;  /* (typed trees) its dtype; a mask's: I8 .. I64 of its width */
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

/* The register holding float-path value ID computed once a run
 * (generator.float_hoist_id), -1 in write_function's first pass, or 0:
 * none, or writing those values. */
static int float_hoisted_register(const generator *g, int id)
{
    for (int j = 0; j < g->float_hoist_count && !g->float_hoisting; j++)
        if (g->float_hoist_id[j] == id)
            return g->float_hoist_reg[j];
    return 0;
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
    case OP_EXP: case OP_LOG: /* (f32: emit_exp, emit_log; f64 exp: emit_exp_f64) */
        if (g->dbl && n->op != OP_EXP)
            return false;
        /* fall through */
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
    int64_t outer2 = operand < 0 || !g->layout->outer2 ? 0 : g->layout->outer2[operand];
    g->leaves[i] = (leaf){operand, ir->value[id].local, stride == 0, stride, outer, outer2,
                          n->dtype, pointer_registers[i], -1};
    g->leaf_node[i] = id;
    return i;
}

/* Leaf I's current vector: [pointer + i * size] in the loop, its slot in
 * the tail; one value when broadcast. */
static memory small_memory(const generator *g, int i);
static bool small_load(generator *g, int r, int i);

static memory leaf_memory(const generator *g, int i)
{
    const leaf *l = &g->leaves[i];
    if (g->small) /* a small kernel's vector: constant offsets (vex_build_small) */
        return small_memory(g, i);
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

static void even_elements(generator *g, int r, memory m, int size, int bytes, bool reverse);
static int log2_size(int size);

/* Whether a leaf of SIZE-byte elements and STRIDE (|STRIDE| >= 3) is
 * gathered (vpgatherdd, vpgatherdq) rather than read by spaced_load. */
static bool gathers(int size, int64_t stride)
{
    (void)stride;
    return size >= 4 && vex_other_strides == 2;
}

/* The loads spaced_load makes for lanes [FIRST, FIRST + COUNT) of a leaf
 * whose lane k is at byte k * STEP from lane 0's (SIZE bytes each), in
 * address order: load j at byte AT[j] holds M[j] lanes from lane K[j]
 * (upwards for a positive STEP, downwards for a negative one).  A load
 * takes WIDTH bytes; none passes HIGH, the end of the vector's last
 * element.  Returns their number. */
static int spaced_loads(int32_t step, int size, int width, int32_t high, int first, int count,
                        int32_t where[16], int k[16], int m[16])
{
    int n = 0;
    for (int j = 0; j < count; n++) {
        int k0 = step > 0 ? first + j : first + count - 1 - j;
        int32_t c = k0 * step;
        if (c + width > high)
            c = high - width;
        int held = 1;
        while (j + held < count) {
            int next = step > 0 ? k0 + held : k0 - held;
            if (next * step + size > c + width)
                break;
            held++;
        }
        where[n] = c;
        k[n] = k0;
        m[n] = held;
        j += held;
    }
    return n;
}

/* vpshufb's pattern for the bytes of one 16-byte half (lanes from FIRST)
 * that load (START, K0, M) holds, in PATTERN[0..15]; 0x80 (zero) for the
 * others. */
static void spaced_pattern(unsigned char *pattern, int32_t step, int size, int first,
                           int32_t start, int k0, int m)
{
    for (int d = 0; d < 16; d++) {
        int lane = first + d / size, e = step > 0 ? lane - k0 : k0 - lane;
        pattern[d] = e >= 0 && e < m ? (unsigned char)(lane * step - start + d % size) : 0x80;
    }
}

/* Register R = LANES elements of leaf I (SIZE bytes each, any stride of 3
 * or more either way), in order, in its low LANES * SIZE bytes; rdi = lane
 * 0's element.  Each 16-byte half of R is built from loads of 16 (8 when
 * the leaf's span is shorter) bytes at element boundaries, each holding as
 * many of the half's elements as fit (spaced_loads), put in place by
 * vpshufb and joined by vpor; for 32 bytes the two halves' loads go in
 * pairs into one ymm (vinserti128 from memory), one vpshufb each.  When
 * a load would hold one element only, the elements are vmovd/vmovq and
 * vpinsrb/w/d/q from memory instead.  The last load of the span ends at
 * its last byte: every byte read lies between the vector's first and
 * last elements.  (vpgatherdd, vpgatherdq: gathered_load, 3.5-5x slower
 * than this on this AMD EPYC (Zen 5), f32 and f64, strides 3, 5 and -3.) */
static void spaced_load(generator *g, int r, int i, int lanes)
{
    builder *b = g->b;
    const leaf *l = &g->leaves[i];
    int size = (int)bcg_dtype_size(l->dtype), bytes = lanes * size, per_half = 16 / size;
    int32_t step = (int32_t)(l->stride * size); /* (vex_reads_stride: fits) */
    int32_t low = step > 0 ? 0 : (lanes - 1) * step;
    int32_t high = (step > 0 ? (lanes - 1) * step : 0) + size;
    int width = high - low >= 16 ? 16 : 8; /* (|stride| >= 3, lanes >= 4: 10 bytes or more) */
    int32_t where[2][16];
    int k[2][16], m[2][16], n[2] = {0, 0}, halves = bytes > 16 ? 2 : 1;
    for (int h = 0; h < halves; h++)
        n[h] = spaced_loads(step, size, width, high, h * per_half,
                            lanes - h * per_half < per_half ? lanes - h * per_half : per_half,
                            where[h], k[h], m[h]);
    bool single = true, alike = halves == 2 && n[0] == n[1];
    for (int h = 0; h < halves; h++)
        for (int j = 0; j < n[h]; j++) {
            single = single && m[h][j] == 1;
            alike = alike && m[0][j] == m[1][j];
        }
    int t = take_register(g);
    if (!single && alike && width == 16) { /* the halves' loads in pairs */
        for (int j = 0; j < n[0]; j++) {
            int into = j == 0 ? r : t;
            unsigned char pattern[32];
            vex(b, V_MOVDQU_LOAD, false, false, into, 0, in_memory(at(RDI, NONE, 1, where[0][j])),
                -1);
            vex(b, V_INSERTI128, true, false, into, into,
                in_memory(at(RDI, NONE, 1, where[1][j])), 1);
            spaced_pattern(pattern, step, size, 0, where[0][j], k[0][j], m[0][j]);
            spaced_pattern(pattern + 16, step, size, per_half, where[1][j], k[1][j], m[1][j]);
            vex(b, V_PSHUFB, true, false, into, into,
                constant_operand(g, constant(g, pattern, 32)), -1);
            if (j > 0)
                vex(b, V_POR, true, false, r, r, in_register(t), -1);
        }
        give_register(g, t);
        return;
    }
    static const vex_id insert[4] = {V_PINSRB, V_PINSRW, V_PINSRD, V_PINSRQ};
    int upper = halves == 2 ? take_register(g) : -1;
    for (int h = 0; h < halves; h++) {
        int acc = h ? upper : r, first = h * per_half;
        if (single) { /* lane by lane */
            for (int j = 0; j < n[h]; j++) {
                int lane = first + j;
                memory e = at(RDI, NONE, 1, lane * step);
                if (j == 0 && size >= 4) {
                    vex(b, size == 8 ? V_MOVQ_LOAD : V_MOVD_LOAD, false, false, acc, 0,
                        in_memory(e), -1);
                    continue;
                }
                if (j == 0)
                    vex(b, V_PXOR, false, false, acc, acc, in_register(acc), -1);
                vex(b, insert[log2_size(size)], false, false, acc, acc, in_memory(e), j);
            }
            continue;
        }
        for (int j = 0; j < n[h]; j++) {
            if (m[h][j] == 1) {
                if (j == 0)
                    vex(b, V_PXOR, false, false, acc, acc, in_register(acc), -1);
                vex(b, insert[log2_size(size)], false, false, acc, acc,
                    in_memory(at(RDI, NONE, 1, k[h][j] * step)), k[h][j] - first);
                continue;
            }
            int into = j == 0 ? acc : t;
            unsigned char pattern[32];
            vex(b, width == 16 ? V_MOVDQU_LOAD : V_MOVQ_LOAD, false, false, into, 0,
                in_memory(at(RDI, NONE, 1, where[h][j])), -1);
            spaced_pattern(pattern, step, size, first, where[h][j], k[h][j], m[h][j]);
            memcpy(pattern + 16, pattern, 16);
            vex(b, V_PSHUFB, false, false, into, into,
                constant_operand(g, constant(g, pattern, 32)), -1);
            if (j > 0)
                vex(b, V_POR, false, false, acc, acc, in_register(t), -1);
        }
    }
    if (upper >= 0) {
        vex(b, V_INSERTI128, true, false, r, r, in_register(upper), 1);
        give_register(g, upper);
    }
    give_register(g, t);
}

/* Register R = LANES elements of leaf I (4 or 8 bytes each, any stride)
 * by one vpgatherdd or vpgatherdq, the lanes' byte offsets from rdi a
 * constant. */
static void gathered_load(generator *g, int r, int i, int lanes)
{
    builder *b = g->b;
    const leaf *l = &g->leaves[i];
    int size = (int)bcg_dtype_size(l->dtype);
    int32_t offset[8] = {0};
    for (int k = 0; k < lanes; k++)
        offset[k] = (int32_t)(k * l->stride * size);
    int temp, index = constant_in_register(g, constant(g, offset, 32), &temp);
    int mask = take_register(g);
    bool wide = lanes * size == 32;
    vex(b, V_PCMPEQD, wide, false, mask, mask, in_register(mask), -1);
    vex(b, size == 8 ? V_PGATHERDQ : V_PGATHERDD, wide, false, r, mask,
        in_memory(at(RDI, index, 1, 0)), -1);
    give_register(g, mask);
    if (temp >= 0)
        give_register(g, temp);
}

/* Register R = LANES elements of leaf I read in place with a stride of
 * 3 or more either way. */
static void other_stride_load(generator *g, int r, int i, int lanes)
{
    const leaf *l = &g->leaves[i];
    if (gathers((int)bcg_dtype_size(l->dtype), l->stride))
        gathered_load(g, r, i, lanes);
    else
        spaced_load(g, r, i, lanes);
}

/* ---- strided leaves in the zmm body ---- */

/* VEX_ZMM_STRIDED 0: a leaf of stride -1 or +-2 keeps the zmm body from
 * being written (the ymm pairs, as before: measurements); else
 * zmm_strided_load reads it. */
int vex_zmm_strided = -1;

/* VEX_ZMM_AHEAD 0: a leaf of stride +-2 in the zmm body read by two loads
 * one element less than a register apart, in every pair (as before); else
 * a register apart where an element follows the pair (zmm_index_load). */
int vex_zmm_ahead = -1;

/* Whether the CPU has AVX512-VBMI (vpermb, vpermt2b: byte leaves). */
static bool vbmi_ok(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static int ok = -1; /* a data race that writes the same value */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
    }
    return ok == 1;
#else
    return false;
#endif
}

/* The bytes both vectors of leaf I take in the zmm body (twice one
 * vector's), when zmm_strided_load reads it: a stride of -1 or +-2, 8 to
 * 64 bytes (of bytes only with VBMI); else 0. */
static int zmm_strided_bytes(const generator *g, int i)
{
    const leaf *l = &g->leaves[i];
    if (vex_zmm_strided == 0 || !leaf_strided(l) ||
        !(l->stride == -1 || l->stride == 2 || l->stride == -2))
        return 0;
    int size = (int)bcg_dtype_size(l->dtype), bytes = 2 * g->lanes * size;
    if (size < 1 || size > 8 || bytes < 8 || bytes > 64 || (size == 1 && !vbmi_ok()))
        return 0;
    return bytes;
}

/* Before the zmm body's loop: leaf I's permutation index into zmm16 + i
 * (zmm_strided_load), from fresh pool slots (2 for 64 bytes: the pool's
 * slots are consecutive).  Held through every row: a zmm body calls
 * nothing (vex_zmm_ok), and vzeroupper leaves zmm16-31 alone. */
static void zmm_index_load(generator *g, int i)
{
    builder *b = g->b;
    const leaf *l = &g->leaves[i];
    int bytes = zmm_strided_bytes(g, i), size = (int)bcg_dtype_size(l->dtype);
    int slots = (bytes + 31) / 32;
    if (bytes == 0 || b->pool_count + slots > POOL_MAX)
        return;
    int n = bytes / size, slot = b->pool_count, table = (bytes < 16 ? 16 : bytes) / size;
    /* stride +-2 and 16 bytes or more: the loop's two loads a whole
     * register apart (ahead), else one element less (the last pair) */
    bool ahead = l->stride != -1 && bytes >= 16 && vex_zmm_ahead != 0 &&
                 b->pool_count + 2 * slots <= POOL_MAX;
    for (int version = 0; version < (ahead ? 2 : 1); version++) {
        unsigned char index[64];
        for (int k = 0; k < n; k++) {
            /* the element read for lane k, counted from the lowest one read
             * (stride +-2: the second table starts at element n - 1, or, ahead,
             * at element n, with a stride of -2 one element below the lowest) */
            int e = l->stride == -1 ? n - 1 - k : l->stride == 2 ? 2 * k : 2 * (n - 1 - k);
            uint64_t t = (uint64_t)(l->stride == -1 || e < n ? e : table + e - (n - 1));
            if (ahead && version == 0)
                t = (uint64_t)(e + (l->stride < 0));
            memcpy(index + k * size, &t, (size_t)size); /* (little-endian) */
        }
        memset(b->pool[b->pool_count], 0, 32);
        memcpy(b->pool[b->pool_count], index, bytes < 32 ? (size_t)bytes : 32);
        if (bytes == 64)
            memcpy(b->pool[b->pool_count + 1], index + 32, 32);
        b->pool_count += slots;
    }
    evex_form(b, 2, 1, 0x6f, true, 16 + i, 0, in_memory(pool_memory(slot)), -1, false,
              bytes < 16 ? 128 : bytes * 8); /* vmovdqu64 zmm16 + i, index */
    g->zmm_index[i] = true;
    g->zmm_last_index[i] = ahead ? slot + slots : -1;
}

/* In the zmm body: register R = both vectors' lanes of strided leaf I
 * (rdi = lane 0's element), by one AVX-512 permutation across the whole
 * register where the ymm pairs shuffle each half: a stride of -1 as
 * vperm{b,w,d,q} of the bytes ending at lane 0's element; +-2 as
 * vpermt2{b,w,d,q} of two loads, the first at the lowest element read and
 * the second ending at the highest (every byte read lies between two
 * elements the vector reads).  False: not such a leaf here (the callers'
 * shuffles, which keep the ymm pairs). */
static bool zmm_strided_load(generator *g, int r, int i)
{
    builder *b = g->b;
    if (!b->dup || !b->dup_zmm || !g->zmm_index[i] || g->tail || g->small)
        return false;
    const leaf *l = &g->leaves[i];
    int size = (int)bcg_dtype_size(l->dtype), bytes = zmm_strided_bytes(g, i);
    int n = bytes / size, bits = bytes * 8;
    bool w = size == 2 || size == 8;
    gpr_multiply(b, RDI, RAX, (int32_t)(l->stride * size));
    gpr_pair(b, 0x01, RDI, l->reg); /* add rdi, pointer */
    b->dup = false;
    if (bytes == 8) { /* vmovq (no more bytes than the elements'), then in registers */
        memory m = at(RDI, NONE, 1, l->stride == 2 ? 0 : (int32_t)l->stride * (n - 1) * size);
        evex_form(b, 2, 1, 0x7e, true, r, 0, in_memory(m), -1, false, 128); /* vmovq r */
        int second = r;
        if (l->stride != -1) { /* the second table: the 8 bytes ending at the last element */
            second = 31;
            m.disp += bytes - size;
            evex_form(b, 2, 1, 0x7e, true, second, 0, in_memory(m), -1, false, 128);
        }
        evex_form(b, 1, 2, size <= 2 ? 0x7d : 0x7e, w, r, 16 + i, in_register(second), -1,
                  false, 128); /* vpermt2{b,w,d,q} r, index, second */
    } else if (l->stride == -1 && (bytes > 16 || size <= 2)) {
        memory m = at(RDI, NONE, 1, -(n - 1) * size);
        evex_form(b, 1, 2, size <= 2 ? 0x8d : 0x36, w, r, 16 + i, in_memory(m), -1, false,
                  bits); /* vperm{b,w,d,q} r, index, [m] */
    } else if (l->stride == -1) { /* (no 128-bit vpermd, vpermq: the one table twice) */
        memory m = at(RDI, NONE, 1, -(n - 1) * size);
        evex_form(b, 2, 1, 0x6f, true, r, 0, in_memory(m), -1, false, bits); /* vmovdqu64 */
        evex_form(b, 1, 2, 0x7e, w, r, 16 + i, in_memory(m), -1, false, bits); /* vpermt2 */
    } else if (g->zmm_last_index[i] >= 0 && g->zmm_ahead) {
        /* the loads a whole register apart: the second one ended one
         * element short of the first's and split a cache line on every
         * pair (i16(abs(c) + b - a), b and c i16 of stride 2, 44974: 0.74
         * of gcc -O3's time, 1.02 so) */
        memory m = at(RDI, NONE, 1, l->stride < 0 ? -(2 * n - 1) * size : 0);
        evex_form(b, 2, 1, 0x6f, true, r, 0, in_memory(m), -1, false, bits); /* vmovdqu64 */
        m.disp += bytes;
        evex_form(b, 1, 2, size <= 2 ? 0x7d : 0x7e, w, r, 16 + i, in_memory(m), -1, false,
                  bits); /* vpermt2{b,w,d,q} r, index, [m] */
    } else {
        memory m = at(RDI, NONE, 1, l->stride < 0 ? -2 * (n - 1) * size : 0);
        int index = 16 + i;
        if (g->zmm_last_index[i] >= 0) { /* the last pair: its own index */
            index = 31;
            evex_form(b, 2, 1, 0x6f, true, index, 0,
                      in_memory(pool_memory(g->zmm_last_index[i])), -1, false, bits);
        }
        evex_form(b, 2, 1, 0x6f, true, r, 0, in_memory(m), -1, false, bits); /* vmovdqu64 */
        m.disp += bytes - size;
        evex_form(b, 1, 2, size <= 2 ? 0x7d : 0x7e, w, r, index, in_memory(m), -1, false,
                  bits); /* vpermt2{b,w,d,q} r, index, [m] */
    }
    if (r == b->k1_of)
        b->k1_of = -1;
    b->dup = true;
    return true;
}

/* Register R = the loop's current lanes of strided leaf I, in order, in
 * its low lanes * size bytes.  rdi = lane 0's element (rax * stride
 * elements from the leaf's pointer).  A stride of -1 loads the bytes
 * ending there and reverses them (vpermq, vpermd, or vpshufb by element
 * size); one of 2 (-2) loads the 32 bytes from the first (last) lane's
 * element and the 32 ending at the last (first) lane's, picks the even
 * elements (vshufps, vshufpd) and puts them in order (vpermq, vpermd);
 * a converted leaf of stride +-2 is read as the typed path reads it
 * (even_elements).  Every byte read lies between two elements the vector
 * reads.  Strides of 3 or more either way: other_stride_load. */
static void strided_load(generator *g, int r, int i)
{
    builder *b = g->b;
    const leaf *l = &g->leaves[i];
    int size = (int)bcg_dtype_size(l->dtype), lanes = 32 / g->width, bytes = lanes * size;
    int temp = -1;
    if (zmm_strided_load(g, r, i))
        return;
    gpr_multiply(b, RDI, RAX, (int32_t)(l->stride * size));
    gpr_pair(b, 0x01, RDI, l->reg); /* add rdi, pointer */
    if (l->stride < -2 || l->stride > 2) {
        other_stride_load(g, r, i, lanes);
    } else if (l->stride == -1) {
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
    } else if (bytes < 32 || size < 4) { /* 2 or -2, a converted leaf: the typed path's */
        even_elements(g, r, at(RDI, NONE, 1, l->stride < 0 ? -(lanes - 1) * 2 * size : 0), size,
                      bytes, l->stride < 0);
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

/* Both paths read every dtype with any stride in place (typed_strided_load,
 * strided_load; 3 or more either way: other_stride_load), but for
 * VEX_OTHER_STRIDES 0, and strides past 2^20 elements (the lanes' offsets
 * then may not fit 32 bits). */
static bool tree_typed(const kernel_ir *ir);
static bool byte_multiply(const kernel_ir *ir, int id);
static int widest_value(const kernel_ir *ir, int id);

bool vex_reads_stride(const kernel_ir *ir, bcg_dtype dtype, int64_t stride)
{
    if (stride >= -2 && stride <= 2)
        return true;
    /* any other (other_stride_load): the lanes' offsets in 32 bits */
    int64_t size = (int64_t)bcg_dtype_size(dtype);
    if (vex_other_strides == 0 || stride < -(1 << 20) || stride > (1 << 20) || size > 8)
        return false;
    /* bytes of stride 4 under an 8-bit multiplication: the microkernels'
     * strided reads measured faster (a * b, i8 of 8000, same process:
     * 365 against 391 ns; stride 3 in place since byte_product keeps 32
     * lanes: 410 -> 320 ns) */
    if (size == 1 && stride == 4 && ir && tree_typed(ir) && widest_value(ir, 0) == 1 &&
        byte_multiply(ir, 0) && vex_other_strides < 0)
        return false;
    return true;
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

/* Register R's low elements of dtype T (a strided leaf as strided_load
 * leaves it) converted into the lane dtype in place, as load_converted
 * converts them from memory.  VEX_CONVERT_IN_REGISTER 0: such a leaf is
 * staged in its stack slot and converted from there (stage_leaf), as
 * before (measurements). */
int vex_convert_in_register = -1;

static void convert_in_register(generator *g, int r, bcg_dtype t, bool via_single)
{
    builder *b = g->b;
    bool dbl = g->dbl;
    if (t == BCG_F32) {
        vex(b, V_CVTPS2PD, true, false, r, 0, in_register(r), -1);
        return;
    }
    if (t != BCG_I32) {
        vex_id widen = t == BCG_I8 ? V_PMOVSXBD : t == BCG_U8 ? V_PMOVZXBD
                       : t == BCG_I16 ? V_PMOVSXWD : V_PMOVZXWD;
        vex(b, widen, !dbl, false, r, 0, in_register(r), -1);
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
    return (value){v.reg, true, false, BCG_BOOL};
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

/* ORDER = ID's children by falling register need (Sethi-Ullman); returns
 * their count. */
static int need_order(const kernel_ir *ir, int id, int order[3])
{
    int count = ir->nodes[id]->arg_count, needs[3];
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
    return count;
}

/* Computes the children of ID into OUT[k], the neediest first. */
static void children(generator *g, int id, value *out, const bool *want_value)
{
    const kernel_ir *ir = g->ir;
    int order[3], count = need_order(ir, id, order);
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

/* ---- f32 exp in the vector code ----
 *
 * The microkernel's exp_polynomial (runtime/microkernels.c), instruction
 * by instruction in the same order (no FMA: the microkernels are built
 * with -ffp-contract=off), so an element in exp's easy range,
 * |x - 0.5| <= 87.5, gets the tile code's bits; when any lane is not
 * easy (NaN, infinities, overflow, subnormal results) vex_exp_hard
 * recomputes those lanes with the C library, as the microkernel does. */

/* The lanes of X outside exp's easy range into OUT, by expf. */
static void vex_exp_hard(const float *x, float *out)
{
    for (int i = 0; i < 8; i++)
        if (!(fabsf(x[i] - 0.5f) <= 87.5f))
            out[i] = expf(x[i]);
}

static rm_operand float_operand(generator *g, float x)
{
    return constant_operand(g, constant(g, &x, 4));
}

static void patch_here(builder *b, int at);

/* The hard lanes of X recomputed into P by FUNCTION (x, p) when the mask
 * in register MASK has any lane set: every GPR the C code may change and
 * every ymm register saved around the call (rsp aligned to 32 below the
 * pushes, the old rsp kept above the registers' area). */
static void emit_hard_call(generator *g, bool w, int mask, int x, int p,
                           void (*function)(const float *, float *))
{
    builder *b = g->b;
    vex(b, V_TESTPS, w, false, mask, 0, in_register(mask), -1);
    byte(b, 0x0f); /* je over the call (rel32, patched below) */
    byte(b, 0x84);
    int patch = b->length;
    word32(b, 0);
    static const int kept[] = {RAX, RCX, RDX, RSI, RDI, R8, R9, R10, R11};
    int count = (int)(sizeof kept / sizeof kept[0]);
    for (int k = 0; k < count; k++)
        push_pop(b, kept[k], false);
    gpr_pair(b, 0x89, RAX, RSP);                              /* mov rax, rsp */
    gpr_immediate(b, 4, RSP, -32);                            /* and rsp, -32 */
    gpr_immediate(b, 5, RSP, 16 * 32 + 32);                   /* sub rsp, 544 */
    gpr_memory(b, 0x89, RAX, at(RSP, NONE, 1, 16 * 32));      /* mov [rsp + 512], rax */
    for (int r = 0; r < 16; r++)
        vex(b, V_MOVU_STORE, true, false, r, 0, in_memory(at(RSP, NONE, 1, 32 * r)), -1);
    gpr_memory(b, 0x8d, RDI, at(RSP, NONE, 1, 32 * x));       /* lea rdi, x's */
    gpr_memory(b, 0x8d, RSI, at(RSP, NONE, 1, 32 * p));       /* lea rsi, p's */
    uint64_t address = 0; /* (POSIX's representation, as jit.c's) */
    memcpy(&address, &function, sizeof function);
    byte(b, 0x48); /* mov rax, imm64 */
    byte(b, 0xb8);
    for (int k = 0; k < 8; k++)
        byte(b, (int)(address >> (8 * k) & 0xff));
    byte(b, 0xc5); /* vzeroupper */
    byte(b, 0xf8);
    byte(b, 0x77);
    byte(b, 0xff); /* call rax */
    byte(b, 0xd0);
    for (int r = 0; r < 16; r++)
        vex(b, V_MOVU_LOAD, true, false, r, 0, in_memory(at(RSP, NONE, 1, 32 * r)), -1);
    gpr_memory(b, 0x8b, RSP, at(RSP, NONE, 1, 16 * 32));      /* mov rsp, [rsp + 512] */
    for (int k = count - 1; k >= 0; k--)
        push_pop(b, kept[k], true);
    if (!b->overflow)
        patch_here(b, patch);
}

/* The lanes of exp's argument X outside its easy range (mask T) into P
 * (emit_exp; R and N free): one vector's, builder.dup off. */
static void exp_rare(generator *g, bool w, int x, int p, int r, int n, int t)
{
    builder *b = g->b;
    uint32_t magnitude = 0x7fffffffu;
    rm_operand abs_mask = constant_operand(g, constant(g, &magnitude, 4));
    /* those whose expf needs no computing: below -104.5 (-inf too) +0,
     * e^x being under half the least subnormal; NaN a NaN; above 88.75
     * (+inf too) the polynomial's 2^128 already gives +inf, as e^x is above
     * FLT_MAX.  (Any faithful expf agrees; test_exp_trees checks the C
     * library's against these on such data.) */
    vex(b, V_CMP, w, false, r, x, float_operand(g, -104.5f), 1 /* LT_OS */);
    vex(b, V_ANDN, w, false, p, r, in_register(p), -1);
    vex(b, V_CMP, w, false, r, x, in_register(x), 3 /* UNORD_Q */);
    vex(b, V_BLENDVPS, w, false, p, p, in_register(x), r << 4);
    /* the others, x in [-104.5, 88.75] (|x + 7.875| <= 96.625, rounding
     * aside: the edges' results are the same either way), by expf */
    vex(b, V_ADD, w, false, n, x, float_operand(g, 7.875f), -1);
    vex(b, V_AND, w, false, n, n, abs_mask, -1);
    vex(b, V_CMP, w, false, n, n, float_operand(g, 96.625f), 0x12 /* LE_OQ */);
    vex(b, V_AND, w, false, t, t, in_register(n), -1);
    emit_hard_call(g, w, t, x, p, vex_exp_hard);
}

/* The paired loop's rare lanes (emit_exp, emit_log): each vector's code
 * for them is written with builder.dup off (rare_register: the copy's
 * register), behind one test of both vectors' masks. */
static int rare_register(const generator *g, int r, int copy)
{
    return copy ? paired(g->b, r) : r;
}

/* je over the rare lanes' code unless mask T (both vectors' when paired,
 * ORed into FREE, a register of the body the test may overwrite) has a
 * lane set; the rel32's offset for rare_end.  Pairing is off until then. */
static int rare_test(generator *g, bool w, int t, int free)
{
    builder *b = g->b;
    g->rare_paired = b->dup;
    if (b->dup) {
        b->dup = false;
        vex(b, V_OR, w, false, free, t, in_register(paired(b, t)), -1);
        t = free;
    }
    vex(b, V_TESTPS, w, false, t, 0, in_register(t), -1);
    byte(b, 0x0f); /* je over them (rel32, patched by rare_end) */
    byte(b, 0x84);
    int patch = b->length;
    word32(b, 0);
    return patch;
}

/* The end of the rare lanes' code: rare_test's jump lands here.  The C
 * call (emit_hard_call's vzeroupper) zeroed the zmm upper halves of the
 * constants the wide divisions read (write_function): filled again. */
static void rare_end(generator *g, int patch)
{
    builder *b = g->b;
    if (g->rare_paired && b->dup_wide)
        for (int r = 0; r < 16; r++)
            if (g->reserved >> r & 1)
                insert_upper(b, r, r);
    if (!b->overflow)
        patch_here(b, patch);
    b->dup = g->rare_paired;
    g->rare_paired = false;
}

/* e^x of the f32 lanes of register X (all 8 when W, else the low 4) into
 * a new register; X is given back.  In the paired loop both vectors' hard
 * lanes are tested at once (rare_test; measured same-run against the
 * single loop, 300000 f32: exp(a) * b 0.82-0.87x the time, exp(a) + b
 * 0.86-0.88x, exp(f32(a + 0)) i16 0.80-0.91x, log(a) + b 0.92-0.94x);
 * not in small kernels (their unrolled C calls expf). */
static int emit_exp(generator *g, int x, bool w)
{
    builder *b = g->b;
    if (g->small) {
        g->failed = true;
        return x;
    }
    if (b->dup && vex_pairing_rare == 0) {
        b->dup_bad = true;
        return x;
    }
    int t = take_register(g), n = take_register(g);
    uint32_t magnitude = 0x7fffffffu;
    rm_operand abs_mask = constant_operand(g, constant(g, &magnitude, 4));
    vex(b, V_MAX, w, false, t, x, float_operand(g, -88.0f), -1); /* x >= -88 ? x : -88 */
    vex(b, V_MIN, w, false, t, t, float_operand(g, 89.0f), -1);  /* x <= 89 ? x : 89 */
    /* |x| < 2^-30 as 0: the result is 1 either way (n = 0, r = x, and
     * 1 + x rounds to 1), without the products' underflow to subnormals
     * (measured: exp(a) + c, 2.58 ms ->
     * 0.65 ms over 1M elements of about 1e-35: r * r underflowed) */
    vex(b, V_AND, w, false, n, t, abs_mask, -1);
    vex(b, V_CMP, w, false, n, n, float_operand(g, 0x1p-30f), 1 /* LT_OS */);
    vex(b, V_ANDN, w, false, t, n, in_register(t), -1);
    /* the lanes outside the easy range, !(|x - 0.5| <= 87.5), tested on
     * the clamped x (the same lanes: the clamps move only those, and NaN
     * to -88; a subnormal x is not an operand of arithmetic then) */
    int hard = take_register(g);
    vex(b, V_SUB, w, false, hard, t, float_operand(g, 0.5f), -1);
    vex(b, V_AND, w, false, hard, hard, abs_mask, -1);
    vex(b, V_CMP, w, false, hard, hard, float_operand(g, 87.5f), 0x1e /* GT_OQ */);
    vex(b, V_MUL, w, false, n, t, float_operand(g, 1.44269504088896341f), -1);
    vex(b, V_ADD, w, false, n, n, float_operand(g, 12582912.0f), -1);
    vex(b, V_SUB, w, false, n, n, float_operand(g, 12582912.0f), -1);
    int r = take_register(g);
    vex(b, V_MUL, w, false, r, n, float_operand(g, 0.693359375f), -1);
    vex(b, V_SUB, w, false, r, t, in_register(r), -1);
    vex(b, V_MUL, w, false, t, n, float_operand(g, -2.12194440e-4f), -1);
    vex(b, V_SUB, w, false, r, r, in_register(t), -1);
    int z = t; /* exp_reduced */
    vex(b, V_MUL, w, false, z, r, in_register(r), -1);
    int p = take_register(g);
    static const float c[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                              1.6666665459e-1f, 5.0000001201e-1f};
    for (int k = 0; k < 5; k++) { /* p = p * r + c[k], p first 1.9875691500e-4 */
        if (k == 0)
            vex(b, V_MUL, w, false, p, r, float_operand(g, 1.9875691500e-4f), -1);
        else
            vex(b, V_MUL, w, false, p, p, in_register(r), -1);
        vex(b, V_ADD, w, false, p, p, float_operand(g, c[k]), -1);
    }
    vex(b, V_MUL, w, false, p, p, in_register(z), -1);
    vex(b, V_ADD, w, false, p, p, in_register(r), -1);
    vex(b, V_ADD, w, false, p, p, float_operand(g, 1.0f), -1);
    vex(b, V_CVTTPS2DQ, w, false, n, 0, in_register(n), -1);   /* e = (int32_t)n */
    uint32_t bias = 127;
    vex(b, V_PADDD, w, false, n, n, constant_operand(g, constant(g, &bias, 4)), -1);
    vex(b, V_PSHIFTD, w, false, 6 /* sll */, n, in_register(n), 23);
    vex(b, V_MUL, w, false, p, p, in_register(n), -1);
    /* (rare: the code for those lanes is jumped over) */
    vex(b, V_MOVU_LOAD, w, false, t, 0, in_register(hard), -1);
    int patch = rare_test(g, w, t, hard);
    give_register(g, hard);
    for (int copy = 0; copy < (g->rare_paired ? 2 : 1); copy++)
        exp_rare(g, w, rare_register(g, x, copy), rare_register(g, p, copy),
                 rare_register(g, r, copy), rare_register(g, n, copy), rare_register(g, t, copy));
    rare_end(g, patch);
    give_register(g, t);
    give_register(g, n);
    give_register(g, r);
    give_register(g, x);
    return p;
}

/* ---- f64 exp in the vector code ----
 *
 * The microkernel's exp_polynomial_f64 (runtime/microkernels.c) instruction
 * by instruction in the same order, as emit_exp for f32: a lane in the easy
 * range |x - 0.5| <= 708.5 gets the tile code's bits; the others are
 * settled (below -745.5 +0, NaN itself, above 709.8 +inf from the
 * polynomial's 2^1024) or recomputed by the C library's exp. */

static bool exp_outside_f64(double x) { return !(fabs(x - 0.5) <= 708.5); }

/* The lanes of X outside the easy range into OUT, by exp (4 doubles, as
 * emit_hard_call's float pointers give them). */
static void vex_exp_hard_f64(const float *x, float *out)
{
    double xs[4], os[4];
    memcpy(xs, x, sizeof xs);
    memcpy(os, out, sizeof os);
    for (int i = 0; i < 4; i++)
        if (exp_outside_f64(xs[i]))
            os[i] = exp(xs[i]);
    memcpy(out, os, sizeof os);
}

static rm_operand double_operand(generator *g, double x)
{
    return constant_operand(g, constant(g, &x, 8));
}

/* The lanes of exp's argument X outside its easy range (mask T) into P
 * (emit_exp_f64; R and N free): one vector's, builder.dup off. */
static void exp_rare_f64(generator *g, bool w, int x, int p, int r, int n, int t)
{
    builder *b = g->b;
    uint64_t magnitude = ~(1ull << 63);
    rm_operand abs_mask = constant_operand(g, constant(g, &magnitude, 8));
    /* below -745.5 (-inf too) +0, e^x being under half the least
     * subnormal; NaN itself; above 709.8 (+inf too) the polynomial's inf */
    vex(b, V_CMP, w, true, r, x, double_operand(g, -745.5), 1 /* LT_OS */);
    vex(b, V_ANDN, w, true, p, r, in_register(p), -1);
    vex(b, V_CMP, w, true, r, x, in_register(x), 3 /* UNORD_Q */);
    vex(b, V_BLENDVPD, w, false, p, p, in_register(x), r << 4);
    /* the others, x in [-745.5, 709.8] (|x + 17.85| <= 727.65), by exp */
    vex(b, V_ADD, w, true, n, x, double_operand(g, 17.85), -1);
    vex(b, V_AND, w, true, n, n, abs_mask, -1);
    vex(b, V_CMP, w, true, n, n, double_operand(g, 727.65), 0x12 /* LE_OQ */);
    vex(b, V_AND, w, true, t, t, in_register(n), -1);
    emit_hard_call(g, w, t, x, p, vex_exp_hard_f64);
}

/* e^x of the f64 lanes of register X (all 4 when W, else the low 2) into
 * a new register; X is given back.  Not in small kernels (they call the
 * microkernel). */
static int emit_exp_f64(generator *g, int x, bool w)
{
    builder *b = g->b;
    if (g->small) {
        g->failed = true;
        return x;
    }
    if (b->dup && vex_pairing_rare == 0) {
        b->dup_bad = true;
        return x;
    }
    uint64_t magnitude = ~(1ull << 63);
    rm_operand abs_mask = constant_operand(g, constant(g, &magnitude, 8));
    int t = take_register(g), n = take_register(g);
    vex(b, V_MAX, w, true, t, x, double_operand(g, -709.0), -1); /* x >= -709 ? x : -709 */
    vex(b, V_MIN, w, true, t, t, double_operand(g, 710.0), -1);  /* x <= 710 ? x : 710 */
    /* |x| < 2^-60 as 0 (the result is 1 either way; no subnormal products) */
    vex(b, V_AND, w, true, n, t, abs_mask, -1);
    vex(b, V_CMP, w, true, n, n, double_operand(g, 0x1p-60), 1 /* LT_OS */);
    vex(b, V_ANDN, w, true, t, n, in_register(t), -1);
    /* the lanes outside the easy range, on the clamped x (as emit_exp) */
    int hard = take_register(g);
    vex(b, V_SUB, w, true, hard, t, double_operand(g, 0.5), -1);
    vex(b, V_AND, w, true, hard, hard, abs_mask, -1);
    vex(b, V_CMP, w, true, hard, hard, double_operand(g, 708.5), 0x1e /* GT_OQ */);
    /* n = x / ln 2 + 1.5 * 2^52 (k in its low bits), k = n - 1.5 * 2^52 */
    int k = take_register(g), hi = take_register(g), r = take_register(g);
    vex(b, V_MUL, w, true, n, t, double_operand(g, 1.4426950408889634), -1);
    vex(b, V_ADD, w, true, n, n, double_operand(g, 6755399441055744.0), -1);
    vex(b, V_SUB, w, true, k, n, double_operand(g, 6755399441055744.0), -1);
    vex(b, V_MUL, w, true, hi, k, double_operand(g, 0x1.62e42fefp-1), -1);
    vex(b, V_SUB, w, true, hi, t, in_register(hi), -1);                    /* hi */
    vex(b, V_MUL, w, true, k, k, double_operand(g, -0x1.473de6af278edp-34), -1); /* lo */
    vex(b, V_ADD, w, true, r, hi, in_register(k), -1);                     /* r */
    vex(b, V_SUB, w, true, hi, hi, in_register(r), -1);
    vex(b, V_ADD, w, true, hi, hi, in_register(k), -1);                    /* dr */
    vex(b, V_MUL, w, true, k, hi, in_register(r), -1);
    vex(b, V_ADD, w, true, hi, hi, in_register(k), -1);                    /* dr + dr * r */
    int p = k;
    static const double c[] = {
        1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
        1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
        1.0 / 24.0, 1.0 / 6.0, 0.5,
    };
    for (int j = 0; j < 12; j++) { /* p = p * r + c[j], p first 1 / 14! */
        if (j == 0)
            vex(b, V_MUL, w, true, p, r, double_operand(g, 1.0 / 87178291200.0), -1);
        else
            vex(b, V_MUL, w, true, p, p, in_register(r), -1);
        vex(b, V_ADD, w, true, p, p, double_operand(g, c[j]), -1);
    }
    vex(b, V_MUL, w, true, t, r, in_register(r), -1);
    vex(b, V_MUL, w, true, p, p, in_register(t), -1);
    vex(b, V_ADD, w, true, p, p, in_register(hi), -1);      /* p r^2 + (dr + dr r) */
    vex(b, V_ADD, w, true, hi, r, double_operand(g, 1.0), -1); /* one_r = 1 + r */
    vex(b, V_MOVU_LOAD, w, true, t, 0, double_operand(g, 1.0), -1);
    vex(b, V_SUB, w, true, t, t, in_register(hi), -1);
    vex(b, V_ADD, w, true, t, t, in_register(r), -1);
    vex(b, V_ADD, w, true, t, t, in_register(p), -1);       /* tail */
    vex(b, V_ADD, w, true, p, hi, in_register(t), -1);
    give_register(g, hi);
    uint64_t bias = 1023;
    vex(b, V_PADDQ, w, false, n, n, constant_operand(g, constant(g, &bias, 8)), -1);
    vex(b, V_PSHIFTQ, w, false, 6 /* sll */, n, in_register(n), 52);
    vex(b, V_MUL, w, true, p, p, in_register(n), -1);
    /* (rare: the code for those lanes is jumped over) */
    vex(b, V_MOVU_LOAD, w, false, t, 0, in_register(hard), -1);
    int patch = rare_test(g, w, t, hard);
    give_register(g, hard);
    for (int copy = 0; copy < (g->rare_paired ? 2 : 1); copy++)
        exp_rare_f64(g, w, rare_register(g, x, copy), rare_register(g, p, copy),
                     rare_register(g, r, copy), rare_register(g, n, copy),
                     rare_register(g, t, copy));
    rare_end(g, patch);
    give_register(g, t);
    give_register(g, n);
    give_register(g, r);
    give_register(g, x);
    return p;
}

/* f32 log the same way: the microkernel's log_polynomial, lanes outside
 * log_easy (not normal, positive and finite) recomputed by logf. */
static void vex_log_hard(const float *x, float *out)
{
    for (int i = 0; i < 8; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        if (!(u - 0x00800000u < 0x7f000000u))
            out[i] = logf(x[i]);
    }
}

/* The lanes of log's argument X not normal, positive and finite into M
 * (emit_log; T and U free): one vector's, builder.dup off. */
static void log_rare(generator *g, bool w, int x, int m, int t, int u)
{
    builder *b = g->b;
    /* those whose logf needs no computing (any faithful logf's): +-0 -inf,
     * below 0 (-inf too) NaN, +inf +inf, NaN NaN */
    static const struct { float at; int predicate; float result; } settled[] = {
        {0.0f, 0 /* EQ_OQ */, -INFINITY}, {0.0f, 1 /* LT_OS */, NAN},
        {INFINITY, 0 /* EQ_OQ */, INFINITY},
    };
    for (int k = 0; k < 3; k++) {
        vex(b, V_CMP, w, false, t, x, float_operand(g, settled[k].at), settled[k].predicate);
        vex(b, V_BLENDVPS, w, false, m, m, float_operand(g, settled[k].result), t << 4);
    }
    vex(b, V_CMP, w, false, t, x, in_register(x), 3 /* UNORD_Q */);
    vex(b, V_BLENDVPS, w, false, m, m, in_register(x), t << 4);
    /* the others, subnormal x > 0, by logf */
    vex(b, V_CMP, w, false, t, x, float_operand(g, 0.0f), 0x1e /* GT_OQ */);
    vex(b, V_CMP, w, false, u, x, float_operand(g, 0x1p-126f), 0x11 /* LT_OQ */);
    vex(b, V_AND, w, false, t, t, in_register(u), -1);
    emit_hard_call(g, w, t, x, m, vex_log_hard);
}

/* log of the f32 lanes of register X (as emit_exp) into a new register. */
static int emit_log(generator *g, int x, bool w)
{
    builder *b = g->b;
    if (g->small) {
        g->failed = true;
        return x;
    }
    if (b->dup && vex_pairing_rare == 0) {
        b->dup_bad = true;
        return x;
    }
    uint32_t mantissa = 0x007fffffu, half = 0x3f000000u, bias = 126;
    int e = take_register(g), m = take_register(g), s = take_register(g);
    int t = take_register(g), u = take_register(g);
    vex(b, V_PSHIFTD, w, false, 2 /* srl */, e, in_register(x), 23); /* x = m * 2^e */
    vex(b, V_PSUBD, w, false, e, e, constant_operand(g, constant(g, &bias, 4)), -1);
    vex(b, V_AND, w, false, m, x, constant_operand(g, constant(g, &mantissa, 4)), -1);
    vex(b, V_OR, w, false, m, m, constant_operand(g, constant(g, &half, 4)), -1);
    vex(b, V_CMP, w, false, s, m, float_operand(g, 0.707106781186547524f), 1 /* LT_OS */);
    vex(b, V_PADDD, w, false, e, e, in_register(s), -1); /* e -= small */
    vex(b, V_ADD, w, false, t, m, in_register(m), -1);
    vex(b, V_SUB, w, false, t, t, float_operand(g, 1.0f), -1);
    vex(b, V_SUB, w, false, m, m, float_operand(g, 1.0f), -1);
    vex(b, V_BLENDVPS, w, false, m, m, in_register(t), s << 4); /* small ? 2m - 1 : m - 1 */
    vex(b, V_CVTDQ2PS, w, false, e, 0, in_register(e), -1);    /* fe */
    int z = s;
    vex(b, V_MUL, w, false, z, m, in_register(m), -1);
    static const float c[] = {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f,
                              1.4249322787e-1f, -1.6668057665e-1f, 2.0000714765e-1f,
                              -2.4999993993e-1f, 3.3333331174e-1f};
    for (int k = 0; k < 8; k++) { /* y = y * m +- c[k] (a - c is a + -c), y first 7.0376836292e-2 */
        if (k == 0)
            vex(b, V_MUL, w, false, t, m, float_operand(g, 7.0376836292e-2f), -1);
        else
            vex(b, V_MUL, w, false, t, t, in_register(m), -1);
        vex(b, V_ADD, w, false, t, t, float_operand(g, c[k]), -1);
    }
    vex(b, V_MUL, w, false, t, t, in_register(m), -1);         /* y * m * z */
    vex(b, V_MUL, w, false, t, t, in_register(z), -1);
    vex(b, V_MUL, w, false, u, e, float_operand(g, -2.12194440e-4f), -1);
    vex(b, V_ADD, w, false, t, t, in_register(u), -1);
    vex(b, V_MUL, w, false, z, z, float_operand(g, -0.5f), -1);
    vex(b, V_ADD, w, false, t, t, in_register(z), -1);
    vex(b, V_ADD, w, false, m, m, in_register(t), -1);         /* r = m + y */
    vex(b, V_MUL, w, false, e, e, float_operand(g, 0.693359375f), -1);
    vex(b, V_ADD, w, false, m, m, in_register(e), -1);
    /* not normal, positive and finite: !(x >= FLT_MIN) || !(x <= FLT_MAX)
     * (rare: the code for those lanes is jumped over) */
    vex(b, V_CMP, w, false, t, x, float_operand(g, 0x1p-126f), 9 /* NGE_US */);
    vex(b, V_CMP, w, false, u, x, float_operand(g, 0x1.fffffep127f), 6 /* NLE_US */);
    vex(b, V_OR, w, false, t, t, in_register(u), -1);
    int patch = rare_test(g, w, t, u);
    for (int copy = 0; copy < (g->rare_paired ? 2 : 1); copy++)
        log_rare(g, w, rare_register(g, x, copy), rare_register(g, m, copy),
                 rare_register(g, t, copy), rare_register(g, u, copy));
    rare_end(g, patch);
    give_register(g, e);
    give_register(g, s);
    give_register(g, t);
    give_register(g, u);
    give_register(g, x);
    return m;
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
            } else if (n->dtype != BCG_BOOL && vex_convert_in_register != 0) {
                strided_load(g, r, i); /* (no stack slot: the paired loop too) */
                convert_in_register(g, r, n->dtype, via_single);
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
            return (value){r, true, true, BCG_BOOL};
        }
        if (g->leaf_register[i] > 0 && n->dtype != BCG_BOOL && !via_single)
            vex(b, V_MOVU_LOAD, true, false, r, 0, in_register(g->leaf_register[i]), -1);
        else if (n->dtype != g->lane && !loaded)
            load_converted(g, r, i, m, via_single);
        else if (g->small && small_load(g, r, i)) /* permuted, masked, inserted */
            ;
        else if (loaded)
            ;
        else if (g->tail && g->masked && !g->leaves[i].broadcast)
            masked_move(g, dbl ? V_MASKMOVPD_LOAD : V_MASKMOVPS_LOAD, r, m, false);
        else if (g->leaves[i].broadcast)
            vex(b, dbl ? V_BROADCASTSD : V_BROADCASTSS, true, false, r, 0, in_memory(m), -1);
        else
            vex(b, V_MOVU_LOAD, true, dbl, r, 0, in_memory(m), -1);
        value v = {r, false, false, BCG_BOOL};
        return want_value ? v : nonzero(g, v);
    }
}

/* Whether value ID (wanted as a value) can be an instruction's r/m
 * operand as it is, into *RM: a literal (its constant), a broadcast leaf
 * held in a register (write_function), or in the loop a leaf of the lane
 * dtype read contiguously (its vector in memory: the load folded into the
 * operation). */
static bool in_place(generator *g, int id, rm_operand *rm)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (ir->value[id].folded >= 0)
        return false;
    if (n->op == OP_LITERAL) {
        *rm = constant_operand(g, lane_constant(g, literal_value(n)));
        return true;
    }
    int held = float_hoisted_register(g, id);
    if (held > 0) {
        *rm = in_register(held);
        return true;
    }
    if (!is_leaf(ir, id) || n->dtype != g->lane || g->small)
        return false;
    int i = leaf_index(g, id);
    const leaf *l = &g->leaves[i];
    if (g->leaf_register[i] > 0) {
        *rm = in_register(g->leaf_register[i]);
        return true;
    }
    if (l->broadcast || (g->tail && g->masked) || (leaf_strided(l) && !g->tail))
        return false;
    *rm = in_memory(leaf_memory(g, i));
    return true;
}

/* Whether value ID is never NaN: an integer leaf or literal, or a
 * literal that is not NaN, converted. */
static bool never_nan(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    if (ir->value[id].folded >= 0)
        return false;
    if (n->op == OP_LITERAL)
        return dtype_kind_of(n->dtype) != KIND_FLOAT || n->value.f == n->value.f;
    if (n->op == OP_CAST && is_leaf(ir, kir_child(ir, id, 0)))
        return never_nan(ir, kir_child(ir, id, 0));
    return is_leaf(ir, id) && dtype_kind_of(n->dtype) != KIND_FLOAT && n->dtype != BCG_BOOL;
}

/* np.minimum/np.maximum of A and RM (emit_extreme's, RM in place); A
 * never NaN (NEVER_NAN): vminps alone. */
static value extreme_in_place(generator *g, bool minimum, value a, rm_operand rm, bool never_nan)
{
    builder *b = g->b;
    if (never_nan) {
        vex(b, minimum ? V_MIN : V_MAX, true, g->dbl, a.reg, a.reg, rm, -1);
        return a;
    }
    int t = take_register(g);
    vex(b, minimum ? V_MIN : V_MAX, true, g->dbl, t, a.reg, rm, -1);
    int m = take_register(g);
    vex(b, V_CMP, true, g->dbl, m, a.reg, in_register(a.reg), 3 /* UNORD_Q */);
    vex(b, g->dbl ? V_BLENDVPD : V_BLENDVPS, true, false, a.reg, t, in_register(a.reg), m << 4);
    give_register(g, m);
    give_register(g, t);
    return a;
}

/* Binary node ID with a child in place (in_place) as the instruction's
 * r/m operand instead of a register loaded: the second; the first where
 * the operation allows (+ and * commute, a comparison mirrors, - and /
 * take a register as their first operand); *OUT its value, or false:
 * compute both. */
static bool binary_in_place(generator *g, int id, value *out)
{
    static const int predicate[] = {[OP_EQ] = 0, [OP_NE] = 4, [OP_LT] = 1, [OP_LE] = 2,
                                    [OP_GT] = 14, [OP_GE] = 13};
    static const expr_op mirror[] = {[OP_EQ] = OP_EQ, [OP_NE] = OP_NE, [OP_LT] = OP_GT,
                                     [OP_LE] = OP_GE, [OP_GT] = OP_LT, [OP_GE] = OP_LE};
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    expr_op op = n->op;
    bool compare = op >= OP_EQ && op <= OP_GE;
    if (!(op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV || op == OP_MINIMUM ||
          op == OP_MAXIMUM || compare))
        return false;
    if (compare && kir_tile_dtype(ir, id) != g->lane)
        return false;
    int x = kir_child(ir, id, 0), y = kir_child(ir, id, 1);
    rm_operand rx, ry;
    vex_id instruction = op == OP_ADD ? V_ADD : op == OP_SUB ? V_SUB : op == OP_MUL ? V_MUL
                         : op == OP_DIV ? V_DIV : V_CMP;
    builder *b = g->b;
    if (op != OP_MINIMUM && op != OP_MAXIMUM && in_place(g, x, &rx) && !rx.mem &&
        in_place(g, y, &ry)) { /* both in place, x in a register: into a new one */
        int r = take_register(g);
        vex(b, instruction, true, g->dbl, r, rx.reg, ry, compare ? predicate[op] : -1);
        *out = (value){r, compare, false, BCG_BOOL};
        return true;
    }
    if (op != OP_MINIMUM && op != OP_MAXIMUM && op != OP_SUB && op != OP_DIV &&
        in_place(g, x, &rx) && in_place(g, y, &ry) && !ry.mem) { /* y's register first */
        int r = take_register(g);
        vex(b, instruction, true, g->dbl, r, ry.reg, rx, compare ? predicate[mirror[op]] : -1);
        *out = (value){r, compare, false, BCG_BOOL};
        return true;
    }
    if (in_place(g, y, &ry)) {
        value v = compute(g, x, true);
        if (op == OP_MINIMUM || op == OP_MAXIMUM) {
            *out = extreme_in_place(g, op == OP_MINIMUM, v, ry, never_nan(ir, x));
            return true;
        }
        vex(b, instruction, true, g->dbl, v.reg, v.reg, ry, compare ? predicate[op] : -1);
        *out = compare ? (value){v.reg, true, false, BCG_BOOL} : v;
        return true;
    }
    if (op == OP_MINIMUM || op == OP_MAXIMUM || !in_place(g, x, &rx) ||
        ((op == OP_SUB || op == OP_DIV) && rx.mem))
        return false;
    value v = compute(g, y, true);
    if (op == OP_SUB || op == OP_DIV) /* x - v, x / v: x the register operand */
        vex(b, instruction, true, g->dbl, v.reg, rx.reg, in_register(v.reg), -1);
    else
        vex(b, instruction, true, g->dbl, v.reg, v.reg, rx, compare ? predicate[mirror[op]] : -1);
    *out = compare ? (value){v.reg, true, false, BCG_BOOL} : v;
    return true;
}

/* Whether node ID is computed by compute() as an operation (not a leaf
 * loaded, converted on loading, or a literal). */
static bool is_operation(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    return !is_leaf(ir, id) && n->op != OP_LITERAL &&
           !(n->op == OP_CAST && is_leaf(ir, kir_child(ir, id, 0)));
}

/* Whether leaf ID of the float path, read more than once, is worth
 * keeping in a register (shared): one converted on loading (vpmovsx/zx
 * and vcvtdq2ps, or staged when strided) or read in place with a stride
 * other than 0 and 1 (an address, a load and a permute), as a value.  A
 * contiguous leaf of the lanes' dtype is an r/m operand (no load), a
 * broadcast one held in a register already.  VEX_KEEP_LEAVES 0: every
 * use loads it again (as before; measurements). */
int vex_keep_leaves = -1;

static bool kept_leaf(const generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (g->typed || g->small || vex_keep_leaves == 0 || ir->value[id].folded >= 0)
        return false;
    if (n->op == OP_CAST && !ir->value[id].local && n->dtype != BCG_BOOL) /* f64(a): a's */
        id = kir_child(ir, id, 0);
    n = ir->nodes[id];
    if (ir->value[id].local || n->op != OP_OPERAND || n->dtype == BCG_BOOL)
        return false;
    int64_t stride = g->layout->stride[n->operand + 1];
    return stride != 0 && (stride != 1 || n->dtype != g->lane);
}

/* A value the float path may compute once for every use (shared). */
static bool shareable(const generator *g, int id)
{
    return is_operation(g->ir, id) || kept_leaf(g, id);
}

/* Whether node ID is a cast of a bool that the typed path never computes
 * as a node: typed_as (and mask_product) convert the bool's mask straight
 * into the dtype each use needs, so every use of the cast computes its
 * child, and the child is what is shared. */
static bool bool_cast(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    return n->op == OP_CAST && ir->value[id].folded < 0 &&
           ir->nodes[kir_child(ir, id, 0)]->dtype == BCG_BOOL;
}

/* Counts the uses of every value under ID (generator.shared_uses): a
 * value computed again (the same tree) counts its subtree once.  The
 * counts are the computations the generator will do: a value computed
 * more often than counted finds its kept register consumed by an earlier
 * last use (where(i32(e <= !d) < c, i32(e <= !d), i32(!d)) with the cast
 * i32(e <= !d) counted as shared but computed twice through typed_as:
 * !d's third use read a register the second had turned into words). */
static void count_uses(generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    if (g->typed && bool_cast(ir, id)) { /* (transparent: typed_as) */
        count_uses(g, kir_child(ir, id, 0));
        return;
    }
    if (!shareable(g, id))
        return;
    int same = g->shared_class[id];
    if (++g->shared_uses[same] > 1)
        return;
    for (int k = 0; k < ir->nodes[id]->arg_count; k++)
        count_uses(g, kir_child(ir, id, k));
}

static value typed(generator *g, int id);

/* Value ID of class SAME, used more than once in the tree: computed at
 * its first use (as a value, or a mask when bool) and kept in its
 * register, every use but the last given a copy (vmovaps: a renamed
 * register, no execution). */
static value shared(generator *g, int id, int same, bool want_value)
{
    value v;
    if (g->shared_left[same] == g->shared_uses[same]) {
        int uses = g->shared_uses[same];
        g->shared_uses[same] = 0; /* (computed by compute() itself) */
        v = g->typed ? typed(g, id) : compute(g, id, g->ir->nodes[id]->dtype != BCG_BOOL);
        g->shared_uses[same] = uses;
        g->shared_value[same] = v;
    } else {
        v = g->shared_value[same];
    }
    if (--g->shared_left[same] > 0) {
        int r = take_register(g);
        vex(g->b, V_MOVU_LOAD, true, false, r, 0, in_register(v.reg), -1);
        v.reg = r;
    }
    return want_value || v.mask || g->typed ? v : nonzero(g, v);
}

static value compute(generator *g, int id, bool want_value)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    builder *b = g->b;
    bool dbl = g->dbl;
    if (g->failed)
        return (value){0, false, false, BCG_BOOL};
    int held = float_hoisted_register(g, id);
    if (held != 0) { /* computed at the run's start (write_float_hoisted): a copy */
        int r = take_register(g);
        if (held > 0) /* (else write_function's first pass: its registers only) */
            vex(b, V_MOVU_LOAD, true, false, r, 0, in_register(held), -1);
        value v = {r, false, false, BCG_BOOL};
        return want_value ? v : nonzero(g, v);
    }
    if (g->shared_uses && shareable(g, id) && g->shared_uses[g->shared_class[id]] > 1)
        return shared(g, id, g->shared_class[id], want_value);
    if (n->op == OP_CAST && !is_leaf(ir, id)) /* of a leaf: converted on loading */
        return compute_leaf(g, kir_child(ir, id, 0), want_value, n->dtype != g->lane);
    if (n->op == OP_LITERAL && !want_value) { /* its truth in every lane (NaN is true) */
        double v = literal_value(n);
        int r = take_register(g);
        int slot = bits_constant(g, v != 0 || v != v ? ~0ull : 0);
        vex(b, V_MOVU_LOAD, true, dbl, r, 0, constant_operand(g, (slot)), -1);
        return (value){r, true, false, BCG_BOOL};
    }
    if (n->op == OP_LITERAL) {
        int r = take_register(g);
        vex(b, V_MOVU_LOAD, true, dbl, r, 0, constant_operand(g, (lane_constant(g, literal_value(n)))),
            -1);
        return (value){r, false, false, BCG_BOOL};
    }
    if (is_leaf(ir, id))
        return compute_leaf(g, id, want_value, false);
    value folded;
    if (binary_in_place(g, id, &folded))
        return want_value || folded.mask ? folded : nonzero(g, folded);
    rm_operand x;
    if ((n->op == OP_SQRT || n->op == OP_ABS || n->op == OP_NEG) &&
        !is_operation(ir, kir_child(ir, id, 0)) && ir->nodes[kir_child(ir, id, 0)]->op != OP_LITERAL &&
        in_place(g, kir_child(ir, id, 0), &x)) { /* its operand in place: no load of its own */
        int r = take_register(g);
        if (n->op == OP_SQRT) {
            vex(b, V_SQRT, true, dbl, r, 0, x, -1);
        } else {
            uint64_t bits = n->op == OP_ABS ? (dbl ? ~(1ull << 63) : 0x7fffffffull)
                                            : (dbl ? 1ull << 63 : 1ull << 31);
            rm_operand c = constant_operand(g, bits_constant(g, bits));
            if (c.mem) { /* (the constant in memory: the operand loaded) */
                vex(b, V_MOVU_LOAD, true, dbl, r, 0, x, -1);
                vex(b, n->op == OP_ABS ? V_AND : V_XOR, true, dbl, r, r, c, -1);
            } else {
                vex(b, n->op == OP_ABS ? V_AND : V_XOR, true, dbl, r, c.reg, x, -1);
            }
        }
        value v = {r, false, false, BCG_BOOL};
        return want_value ? v : nonzero(g, v);
    }
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
            return (value){a[0].reg, true, inv, BCG_BOOL};
        }
        /* x && y == !(!x || !y): with both inverted, OR gives the inverted AND */
        a[1] = polarity(g, a[1], a[0].inverted);
        bool inv = a[0].inverted;
        bool use_or = (n->op == OP_OR) != inv;
        vex(b, use_or ? V_OR : V_AND, true, dbl, a[0].reg, a[0].reg, in_register(a[1].reg), -1);
        give_register(g, a[1].reg);
        return (value){a[0].reg, true, inv, BCG_BOOL};
    }
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
        static const int predicate[] = {[OP_EQ] = 0, [OP_NE] = 4, [OP_LT] = 1, [OP_LE] = 2,
                                        [OP_GT] = 14, [OP_GE] = 13};
        children(g, id, a, values);
        vex(b, V_CMP, true, dbl, a[0].reg, a[0].reg, in_register(a[1].reg), predicate[n->op]);
        give_register(g, a[1].reg);
        return (value){a[0].reg, true, false, BCG_BOOL};
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
        value v = {a[1].reg, false, false, BCG_BOOL};
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
    case OP_EXP: v.reg = dbl ? emit_exp_f64(g, v.reg, true) : emit_exp(g, v.reg, true); break;
    case OP_LOG: v.reg = emit_log(g, v.reg, true); break;
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
        if (never_nan(ir, kir_child(ir, id, 0))) { /* vminps(a, b) is then NumPy's */
            v = extreme_in_place(g, n->op == OP_MINIMUM, a[0], in_register(a[1].reg), true);
            give_register(g, a[1].reg);
        } else {
            v = emit_extreme(g, n->op == OP_MINIMUM, a[0], a[1]);
        }
        break;
    default:
        g->failed = true;
        break;
    }
    return want_value ? v : nonzero(g, v);
}

/* ---- integer and mixed trees ------------------------------------------------------------
 *
 * A tree with integer values, or floats of two widths, or casts between
 * them, is written value by value at each value's own dtype.  A vector
 * holds LANES elements, 32 bytes over the widest value's size (4 with an
 * f64 or 64-bit integer, 8 with 32-bit values, 16, 32 for bytes only), so
 * a narrower value fills the low part of its register (an xmm, 8 or 4
 * bytes) and is computed with the 128-bit forms.  Every node computes as
 * eval.c's eval_node does: its arguments converted to its operation type
 * (as_type, eval.c's convert: integers wrap, floats truncate and saturate,
 * NaN gives 0), the operation, the result converted to its dtype.  A bool
 * value is a mask (all ones per element, or all zeros, of some width).
 * What is not written (integer division, 64-bit integers into f32, f16)
 * sets failed: the
 * tile keeps its microkernel calls. */

static int size_of(bcg_dtype t) { return (int)bcg_dtype_size(t); }
static int log2_size(int size) { return size == 8 ? 3 : size == 4 ? 2 : size == 2 ? 1 : 0; }
static bool is_integer(bcg_dtype t)
{
    return dtype_kind_of(t) == KIND_INT || dtype_kind_of(t) == KIND_UINT;
}
static bcg_dtype mask_dtype(int size)
{
    return size == 1 ? BCG_I8 : size == 2 ? BCG_I16 : size == 4 ? BCG_I32 : BCG_I64;
}

/* The bytes LANES values of dtype T take in a register. */
static int bytes_of(generator *g, bcg_dtype t)
{
    int bytes = g->lanes * size_of(t);
    if (bytes > 32)
        g->failed = true;
    return bytes;
}

static bool wide_of(generator *g, bcg_dtype t) { return bytes_of(g, t) == 32; }

static void op3(generator *g, vex_id id, bool wide, int dst, int src, int rm)
{
    vex(g->b, id, wide, false, dst, src, in_register(rm), -1);
}

/* dst = src OP pool constant SLOT (256 bits: the upper lanes of a narrower
 * value are never read). */
static void op_constant(generator *g, vex_id id, int dst, int src, int slot)
{
    vex(g->b, id, true, false, dst, src, constant_operand(g, slot), -1);
}

static int zero_constant(generator *g) { return constant(g, &(uint64_t){0}, 8); }
static int ones_constant(generator *g) { return constant(g, &(uint64_t){~0ull}, 8); }

static int float_constant(generator *g, bcg_dtype t, double x)
{
    if (t == BCG_F64)
        return constant(g, &x, 8);
    float f = (float)x;
    return constant(g, &f, 4);
}

/* A new register holding pool constant SLOT. */
static int constant_register(generator *g, int slot)
{
    int r = take_register(g);
    vex(g->b, V_MOVU_LOAD, true, false, r, 0, constant_operand(g, slot), -1);
    return r;
}

/* R's elements halved in size by PACK (packss/packus): BYTES of them
 * become BYTES / 2 in the low half of the xmm. */
static void pack_half(generator *g, vex_id pack, int r, int bytes)
{
    if (bytes < 32) {
        op3(g, pack, false, r, r, r);
        return;
    }
    int t = take_register(g);
    vex(g->b, V_EXTRACTI128, true, false, r, 0, in_register(t), 1);
    op3(g, pack, false, r, r, t);
    give_register(g, t);
}

/* narrow in the zmm body (zmm_paired): R's BYTES (both vectors', twice a
 * vector's) of SIZE-byte integers truncated to TO_SIZE bytes by one
 * vpmov{qd,qw,qb,dw,db,wb} (AVX-512F, BW, VL), which is the wrapping and,
 * for masks, keeps 0 and -1; the ymm pairs' packs cross the halves. */
static void zmm_narrow(generator *g, int r, int size, int to_size, int bytes)
{
    static const unsigned char opcode[4][4] = {{0}, {0x30, 0, 0, 0}, {0x31, 0x33, 0, 0},
                                               {0x32, 0x34, 0x35, 0}};
    builder *b = g->b;
    if (r == b->k1_of)
        b->k1_of = -1;
    b->dup = false;
    evex_form(b, 2, 2, opcode[log2_size(size)][log2_size(to_size)], false, r, 0,
              in_register(r), -1, false, bytes >= 64 ? 512 : bytes == 32 ? 256 : 128);
    b->dup = true;
}

/* R's integers of dtype FROM wrapped to TO_SIZE bytes (their low bytes),
 * or, when MASK, a mask narrowed (0 and -1 saturate to themselves). */
static void narrow(generator *g, int r, bcg_dtype from, int to_size, bool mask)
{
    int size = size_of(from), bytes = bytes_of(g, from);
    if (g->b->dup && g->b->dup_zmm && to_size < size) {
        zmm_narrow(g, r, size, to_size, 2 * bytes);
        return;
    }
    if (size == 8) { /* the low dwords of the qwords */
        if (bytes == 32) {
            int t = take_register(g);
            vex(g->b, V_EXTRACTI128, true, false, r, 0, in_register(t), 1);
            vex(g->b, V_SHUFPS, false, false, r, r, in_register(t), 0x88);
            give_register(g, t);
        } else {
            vex(g->b, V_SHUFPS, false, false, r, r, in_register(r), 0x88);
        }
        size = 4;
        bytes /= 2;
    }
    bool from_dwords = size == 4;
    if (size == 4 && to_size < 4) {
        if (!mask)
            op_constant(g, V_PAND, r, r, constant(g, &(uint32_t){to_size == 2 ? 0xffffu : 0xffu}, 4));
        pack_half(g, mask ? V_PACKSSDW : V_PACKUSDW, r, bytes);
        size = 2;
        bytes /= 2;
    }
    if (size == 2 && to_size == 1) {
        if (!mask && !from_dwords)
            op_constant(g, V_PAND, r, r, constant(g, &(uint16_t){0xff}, 2));
        pack_half(g, mask ? V_PACKSSWB : V_PACKUSWB, r, bytes);
    }
}

/* R's integers of size FROM_SIZE (signed: sign-extended) widened into TO. */
static void widen(generator *g, int r, int from_size, bool is_signed, bcg_dtype to)
{
    static const vex_id sign[3][4] = {{0, V_PMOVSXBW, V_PMOVSXBD, V_PMOVSXBQ},
                                      {0, 0, V_PMOVSXWD, V_PMOVSXWQ},
                                      {0, 0, 0, V_PMOVSXDQ}};
    static const vex_id zero[3][4] = {{0, V_PMOVZXBW, V_PMOVZXBD, V_PMOVZXBQ},
                                      {0, 0, V_PMOVZXWD, V_PMOVZXWQ},
                                      {0, 0, 0, V_PMOVZXDQ}};
    int f = log2_size(from_size), t = log2_size(size_of(to));
    vex(g->b, (is_signed ? sign : zero)[f][t], wide_of(g, to), false, r, 0, in_register(r), -1);
}

/* Mask V with elements of SIZE bytes. */
int vex_zmm_mask_width = -1;

static value mask_to(generator *g, value v, int size)
{
    int from = size_of(v.dtype);
    builder *b = g->b;
    if (from != size && b->dup && b->dup_zmm && b->k1_of == v.reg && b->k1_size == from &&
        vex_zmm_mask_width != 0) {
        /* the zmm body's comparison left its lanes' bits in k1: vpmovm2{b,w,d,q}
         * at the new width (one instruction for the widening or the narrowing) */
        int bytes = 2 * g->lanes * size;
        b->dup = false;
        evex_form(b, 2, 2, size <= 2 ? 0x28 : 0x38, size == 2 || size == 8, v.reg, 0,
                  in_register(1), -1, false, bytes >= 64 ? 512 : bytes == 32 ? 256 : 128);
        b->dup = true;
        b->k1_size = size;
        v.dtype = mask_dtype(size);
        return v;
    }
    if (from < size)
        widen(g, v.reg, from, true, mask_dtype(size));
    else if (from > size)
        narrow(g, v.reg, v.dtype, size, true);
    v.dtype = mask_dtype(size);
    return v;
}

static value flip(generator *g, value v)
{
    op_constant(g, V_PXOR, v.reg, v.reg, ones_constant(g));
    v.inverted = !v.inverted;
    return v;
}

/* V's truth: a mask of the elements that are not zero (NaN is true). */
static value truth(generator *g, value v)
{
    if (v.mask || g->failed)
        return v;
    int size = size_of(v.dtype);
    if (is_float_lane(v.dtype)) {
        vex(g->b, V_CMP, wide_of(g, v.dtype), v.dtype == BCG_F64, v.reg, v.reg,
            constant_operand(g, zero_constant(g)), 4 /* NEQ_UQ */);
        return (value){v.reg, true, false, mask_dtype(size)};
    }
    static const vex_id equal[4] = {V_PCMPEQB, V_PCMPEQW, V_PCMPEQD, V_PCMPEQQ};
    vex(g->b, equal[log2_size(size)], wide_of(g, v.dtype), false, v.reg, v.reg,
        constant_operand(g, zero_constant(g)), -1);
    return (value){v.reg, true, true, mask_dtype(size)};
}

/* Integers (or a 32-bit intermediate) into float dtype TO: exact, or
 * rounded once to nearest as C's conversion. */
static value integer_to_float(generator *g, value v, bcg_dtype to)
{
    int r = v.reg;
    bool dbl = to == BCG_F64;
    if (size_of(v.dtype) <= 2) {
        widen(g, r, size_of(v.dtype), dtype_kind_of(v.dtype) == KIND_INT, BCG_I32);
        v.dtype = BCG_I32;
    }
    if (v.dtype == BCG_I32) {
        vex(g->b, dbl ? V_CVTDQ2PD : V_CVTDQ2PS, wide_of(g, to), false, r, 0, in_register(r), -1);
    } else if (v.dtype == BCG_U32 && dbl) { /* (x - 2^31 as i32) + 2^31, exact */
        op_constant(g, V_PXOR, r, r, constant(g, &(uint32_t){0x80000000u}, 4));
        vex(g->b, V_CVTDQ2PD, wide_of(g, to), false, r, 0, in_register(r), -1);
        vex(g->b, V_ADD, wide_of(g, to), true, r, r,
            constant_operand(g, float_constant(g, to, 2147483648.0)), -1);
    } else if (v.dtype == BCG_U32) { /* high half * 2^16 + low half: one rounding */
        bool w = wide_of(g, to);
        int t = take_register(g);
        vex(g->b, V_PSHIFTD, w, false, 2 /* srl */, t, in_register(r), 16);
        op_constant(g, V_PAND, r, r, constant(g, &(uint32_t){0xffffu}, 4));
        vex(g->b, V_CVTDQ2PS, w, false, r, 0, in_register(r), -1);
        vex(g->b, V_CVTDQ2PS, w, false, t, 0, in_register(t), -1);
        vex(g->b, V_MUL, w, false, t, t, constant_operand(g, float_constant(g, to, 65536.0)), -1);
        vex(g->b, V_ADD, w, false, r, r, in_register(t), -1);
        give_register(g, t);
    } else if (size_of(v.dtype) == 8 && dbl && g->b->dup && g->b->dup_zmm) {
        /* the zmm body (zmm_paired): vcvtqq2pd, vcvtuqq2pd (AVX-512DQ),
         * rounded once as C's (double) */
        builder *b = g->b;
        if (r == b->k1_of)
            b->k1_of = -1;
        b->dup = false;
        evex_form(b, 2, 1, dtype_kind_of(v.dtype) == KIND_UINT ? 0x7a : 0xe6, true, r, 0,
                  in_register(r), -1, false, 512);
        b->dup = true;
    } else if (size_of(v.dtype) == 8 && dbl) {
        /* high dwords * 2^32 + low dwords (unsigned): both parts exact in
         * double, the sum rounded once, as C's (double) of the integer */
        int t = take_register(g), u = take_register(g);
        vex(g->b, V_EXTRACTI128, true, false, r, 0, in_register(t), 1);
        vex(g->b, V_SHUFPS, false, false, u, r, in_register(t), 0xdd);
        vex(g->b, V_SHUFPS, false, false, r, r, in_register(t), 0x88);
        give_register(g, t);
        int sign = constant(g, &(uint32_t){0x80000000u}, 4);
        int offset = float_constant(g, BCG_F64, 2147483648.0);
        bool w = wide_of(g, to);
        if (dtype_kind_of(v.dtype) == KIND_UINT)
            op_constant(g, V_PXOR, u, u, sign);
        vex(g->b, V_CVTDQ2PD, w, false, u, 0, in_register(u), -1);
        if (dtype_kind_of(v.dtype) == KIND_UINT)
            vex(g->b, V_ADD, w, true, u, u, constant_operand(g, offset), -1);
        vex(g->b, V_MUL, w, true, u, u,
            constant_operand(g, float_constant(g, BCG_F64, 4294967296.0)), -1);
        op_constant(g, V_PXOR, r, r, sign);
        vex(g->b, V_CVTDQ2PD, w, false, r, 0, in_register(r), -1);
        vex(g->b, V_ADD, w, true, r, r, constant_operand(g, offset), -1);
        vex(g->b, V_ADD, w, true, r, r, in_register(u), -1);
        give_register(g, u);
    } else {
        g->failed = true;
    }
    return (value){r, false, false, to};
}

/* Floats V into i64 or u64 (TO) as eval.c's float_to_integer (M a
 * register taken): AVX2 has no such conversion, so the double's mantissa
 * is shifted by its exponent (vpsllvq and vpsrlvq give 0 for counts past
 * 63, so one of the two shifts is the truncated magnitude), the sign
 * applied, NaN 0 and the values past the range saturated. */
static value float_to_64(generator *g, value v, bcg_dtype to, int m)
{
    int r = v.reg;
    if (v.dtype == BCG_F32) { /* exact */
        vex(g->b, V_CVTPS2PD, wide_of(g, BCG_F64), false, r, 0, in_register(r), -1);
        v.dtype = BCG_F64;
    }
    bool w = wide_of(g, BCG_F64), is_signed = to == BCG_I64;
    vex(g->b, V_CMP, w, true, m, r, in_register(r), 7 /* ORD_Q */);
    vex(g->b, V_AND, w, true, r, r, in_register(m), -1); /* NaN: +0 */
    if (!is_signed) /* <= 0: 0 */
        vex(g->b, V_MAX, w, true, r, r, constant_operand(g, float_constant(g, BCG_F64, 0.0)), -1);
    int e = take_register(g), mantissa = take_register(g), z = take_register(g);
    vex(g->b, V_PSHIFTQ, w, false, 2 /* srl */, e, in_register(r), 52);
    op_constant(g, V_PAND, e, e, constant(g, &(uint64_t){0x7ff}, 8));
    op_constant(g, V_PSUBQ, e, e, constant(g, &(uint64_t){1075}, 8)); /* the left shift */
    op_constant(g, V_PAND, mantissa, r, constant(g, &(uint64_t){(1ull << 52) - 1}, 8));
    op_constant(g, V_POR, mantissa, mantissa, constant(g, &(uint64_t){1ull << 52}, 8));
    op3(g, V_PXOR, true, z, z, z);
    op3(g, V_PSUBQ, w, z, z, e); /* the right shift */
    op3(g, V_PSRLVQ, w, z, mantissa, z);
    op3(g, V_PSLLVQ, w, mantissa, mantissa, e);
    op3(g, V_POR, true, mantissa, mantissa, z);
    give_register(g, e);
    if (is_signed) { /* (magnitude ^ s) - s, s = x < 0 */
        op3(g, V_PXOR, true, z, z, z);
        op3(g, V_PCMPGTQ, w, z, z, r);
        op3(g, V_PXOR, true, mantissa, mantissa, z);
        op3(g, V_PSUBQ, w, mantissa, mantissa, z);
        vex(g->b, V_CMP, w, true, m, r,
            constant_operand(g, float_constant(g, BCG_F64, 9223372036854775808.0)), 13);
        vex(g->b, V_PBLENDVB, w, false, mantissa, mantissa,
            constant_operand(g, constant(g, &(uint64_t){INT64_MAX}, 8)), m << 4);
        vex(g->b, V_CMP, w, true, m, r,
            constant_operand(g, float_constant(g, BCG_F64, -9223372036854775808.0)), 1 /* LT */);
        vex(g->b, V_PBLENDVB, w, false, mantissa, mantissa,
            constant_operand(g, constant(g, &(uint64_t){1ull << 63}, 8)), m << 4);
    } else {
        vex(g->b, V_CMP, w, true, m, r,
            constant_operand(g, float_constant(g, BCG_F64, 18446744073709551616.0)), 13);
        op3(g, V_POR, true, mantissa, mantissa, m);
    }
    give_register(g, z);
    give_register(g, m);
    give_register(g, r);
    return (value){mantissa, false, false, to};
}

/* Floats V into u32 as eval.c's float_to_integer (M a register taken):
 * NaN and <= 0 give 0, >= 2^32 the maximum; the rest truncated, through
 * i32 by an offset of 2^31 (exact: f64 truncated first, f32 only offset
 * from 2^31 up, where the subtraction is exact). */
static value float_to_u32(generator *g, value v, int m)
{
    int r = v.reg;
    bool dbl = v.dtype == BCG_F64, w = wide_of(g, v.dtype);
    bcg_dtype t = v.dtype;
    int sign = constant(g, &(uint32_t){0x80000000u}, 4);
    vex(g->b, V_CMP, w, dbl, m, r, in_register(r), 7 /* ORD_Q */);
    vex(g->b, V_AND, w, dbl, r, r, in_register(m), -1); /* NaN: +0 */
    vex(g->b, V_MAX, w, dbl, r, r, constant_operand(g, float_constant(g, t, 0.0)), -1);
    if (dbl) {
        vex(g->b, V_ROUNDPD, w, false, r, 0, in_register(r), 3 /* toward zero */);
        vex(g->b, V_MIN, w, true, r, r,
            constant_operand(g, float_constant(g, t, 4294967295.0)), -1);
        vex(g->b, V_SUB, w, true, r, r,
            constant_operand(g, float_constant(g, t, 2147483648.0)), -1);
        vex(g->b, V_CVTTPD2DQ, w, false, r, 0, in_register(r), -1);
        op_constant(g, V_PXOR, r, r, sign);
        give_register(g, m);
        return (value){r, false, false, BCG_U32};
    }
    int big = take_register(g);
    vex(g->b, V_CMP, w, false, m, r, constant_operand(g, float_constant(g, t, 4294967296.0)),
        13 /* GE_OS: saturates */);
    vex(g->b, V_CMP, w, false, big, r, constant_operand(g, float_constant(g, t, 2147483648.0)),
        13);
    int offset = take_register(g);
    vex(g->b, V_AND, w, false, offset, big,
        constant_operand(g, float_constant(g, t, 2147483648.0)), -1);
    vex(g->b, V_SUB, w, false, r, r, in_register(offset), -1);
    vex(g->b, V_CVTTPS2DQ, w, false, r, 0, in_register(r), -1);
    op_constant(g, V_PAND, big, big, sign);
    op3(g, V_PXOR, true, r, r, big);
    op3(g, V_POR, true, r, r, m);
    give_register(g, offset);
    give_register(g, big);
    give_register(g, m);
    return (value){r, false, false, BCG_U32};
}

/* Floats into integer dtype TO as eval.c's float_to_integer: truncated,
 * NaN 0, saturated at TO's limits (through i32, then packs that
 * saturate). */
/* float_to_integer's packs in the zmm body (zmm_paired): R's BYTES
 * (both vectors') of i32 saturated to TO as the packs do, signed by
 * vpmovsdw or vpmovsdb, unsigned (negative to 0) by vpmaxsd with 0 and
 * vpmovusdw or vpmovusdb (AVX-512F, VL). */
static void zmm_saturate(generator *g, int r, bcg_dtype to, int bytes)
{
    builder *b = g->b;
    int bits = bytes >= 64 ? 512 : bytes == 32 ? 256 : 128;
    bool is_signed = to == BCG_I16 || to == BCG_I8, words = to == BCG_I16 || to == BCG_U16;
    int zero = zero_constant(g);
    if (r == b->k1_of)
        b->k1_of = -1;
    b->dup = false;
    if (!is_signed)
        evex_form(b, 1, 2, 0x3d, false, r, r, constant_operand(g, zero), -1, true, bits);
    evex_form(b, 2, 2, is_signed ? (words ? 0x23 : 0x21) : (words ? 0x13 : 0x11), false, r, 0,
              in_register(r), -1, false, bits);
    b->dup = true;
}

static value float_to_integer(generator *g, value v, bcg_dtype to)
{
    int r = v.reg, m = take_register(g);
    bool dbl = v.dtype == BCG_F64, w = wide_of(g, v.dtype);
    if (size_of(to) == 8)
        return float_to_64(g, v, to, m);
    if (to == BCG_U32)
        return float_to_u32(g, v, m);
    vex(g->b, V_CMP, w, dbl, m, r, in_register(r), 7 /* ORD_Q */);
    vex(g->b, V_AND, w, dbl, r, r, in_register(m), -1); /* NaN: +0 */
    if (dbl) { /* clamped in double, where the i32 limits are exact */
        vex(g->b, V_MAX, w, true, r, r,
            constant_operand(g, float_constant(g, BCG_F64, -2147483648.0)), -1);
        vex(g->b, V_MIN, w, true, r, r,
            constant_operand(g, float_constant(g, BCG_F64, 2147483647.0)), -1);
        vex(g->b, V_CVTTPD2DQ, w, false, r, 0, in_register(r), -1);
    } else { /* >= 2^31 converts to 0x80000000: flipped to 0x7fffffff */
        vex(g->b, V_CMP, w, false, m, r,
            constant_operand(g, float_constant(g, BCG_F32, 2147483648.0)), 13 /* GE_OS */);
        vex(g->b, V_CVTTPS2DQ, w, false, r, 0, in_register(r), -1);
        op3(g, V_PXOR, true, r, r, m);
    }
    give_register(g, m);
    int bytes = bytes_of(g, BCG_I32);
    if (g->b->dup && g->b->dup_zmm && to != BCG_I32) {
        zmm_saturate(g, r, to, 2 * bytes);
        return (value){r, false, false, to};
    }
    if (to == BCG_I16 || to == BCG_I8 || to == BCG_U8)
        pack_half(g, to == BCG_U16 ? V_PACKUSDW : V_PACKSSDW, r, bytes);
    else if (to == BCG_U16)
        pack_half(g, V_PACKUSDW, r, bytes);
    if (to == BCG_I8 || to == BCG_U8)
        pack_half(g, to == BCG_I8 ? V_PACKSSWB : V_PACKUSWB, r, bytes / 2);
    return (value){r, false, false, to};
}

/* V converted to dtype TO as eval.c's convert (a bool TO: its truth). */
static value as_type(generator *g, value v, bcg_dtype to)
{
    if (g->failed || (!v.mask && v.dtype == to))
        return v;
    if (to == BCG_BOOL)
        return truth(g, v);
    if (!is_integer(to) && !is_float_lane(to)) {
        g->failed = true;
        return v;
    }
    if (v.mask) { /* 1 or 0: the mask and the bits of one */
        v = mask_to(g, v, size_of(to));
        if (v.inverted)
            v = flip(g, v);
        uint64_t one = 1;
        int slot = is_float_lane(to) ? float_constant(g, to, 1.0) : constant(g, &one, size_of(to));
        op_constant(g, V_PAND, v.reg, v.reg, slot);
        return (value){v.reg, false, false, to};
    }
    bcg_dtype from = v.dtype;
    if (is_float_lane(from) && is_float_lane(to)) {
        vex(g->b, from == BCG_F32 ? V_CVTPS2PD : V_CVTPD2PS, wide_of(g, BCG_F64), false, v.reg, 0,
            in_register(v.reg), -1);
        return (value){v.reg, false, false, to};
    }
    if (is_integer(from) && is_float_lane(to))
        return integer_to_float(g, v, to);
    if (is_float_lane(from) && is_integer(to))
        return float_to_integer(g, v, to);
    if (!is_integer(from)) {
        g->failed = true;
        return v;
    }
    if (size_of(from) < size_of(to))
        widen(g, v.reg, size_of(from), dtype_kind_of(from) == KIND_INT, to);
    else if (size_of(from) > size_of(to))
        narrow(g, v.reg, from, size_of(to), false);
    return (value){v.reg, false, false, to};
}

/* Literal ID's value as dtype TO, converted by eval.c itself (eval_fold
 * of a cast). */
static expr_node converted_literal(const generator *g, int id, bcg_dtype to)
{
    expr_node cast, out;
    memset(&cast, 0, sizeof cast);
    cast.op = OP_CAST;
    cast.dtype = to;
    cast.arg_count = 1;
    const expr_node *args[1] = {g->ir->nodes[id]};
    eval_fold(&cast, args, &out);
    return out;
}

/* Literal ID as numeric dtype TO: its pool slot, the bits xor XOR_BITS. */
static int literal_slot(generator *g, int id, bcg_dtype to, uint64_t xor_bits)
{
    expr_node out = converted_literal(g, id, to);
    if (is_float_lane(to))
        return float_constant(g, to, out.value.f);
    uint64_t bits = dtype_kind_of(to) == KIND_UINT ? out.value.u : (uint64_t)out.value.i;
    bits ^= xor_bits;
    return constant(g, &bits, size_of(to));
}

/* Literal ID as dtype TO in a register (a bool: a mask). */
static value literal_as(generator *g, int id, bcg_dtype to)
{
    if (to == BCG_BOOL) {
        int slot = converted_literal(g, id, to).value.i ? ones_constant(g) : zero_constant(g);
        return (value){constant_register(g, slot), true, false, BCG_I8};
    }
    if (!is_float_lane(to) && !is_integer(to)) {
        g->failed = true;
        return (value){0, false, false, to};
    }
    return (value){constant_register(g, literal_slot(g, id, to, 0)), false, false, to};
}

static value typed_as(generator *g, int id, bcg_dtype to);

/* Which child of binary node N (operation type T) is a literal that its
 * instruction can take as its memory (or constant register) operand: 1,
 * or 0 where the operation commutes or mirrors; -1 for none. */
static int literal_operand(const generator *g, int id, bcg_dtype t)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (n->arg_count != 2 || !(is_integer(t) || is_float_lane(t)))
        return -1;
    bool right = ir->nodes[kir_child(ir, id, 1)]->op == OP_LITERAL;
    bool left = ir->nodes[kir_child(ir, id, 0)]->op == OP_LITERAL;
    if (left == right)
        return -1;
    int size = size_of(t);
    bool integer = is_integer(t);
    switch (n->op) {
    case OP_ADD: case OP_EQ: case OP_NE:
        return right ? 1 : 0;
    case OP_MUL: /* (bytes: byte_times_literal) */
        return integer && size != 1 && size != 2 && size != 4 ? -1 : right ? 1 : 0;
    case OP_BITAND: case OP_BITOR: case OP_BITXOR:
        return integer ? (right ? 1 : 0) : -1;
    case OP_MINIMUM: case OP_MAXIMUM:
        return integer && size <= 4 ? (right ? 1 : 0) : -1;
    case OP_SUB:
        return right ? 1 : -1;
    case OP_DIV:
        return !integer && right ? 1 : -1;
    case OP_GT: case OP_LE: /* x > c */
        return integer ? (right ? 1 : -1) : (right ? 1 : 0);
    case OP_LT: case OP_GE: /* c < x: x > c */
        return integer ? (left ? 0 : -1) : (right ? 1 : 0);
    default:
        return -1;
    }
}

static void byte_product(generator *g, bool w, int x, int y);

/* R's bytes times the byte L, wrapped: a power of two as vpaddb or a shift
 * and a mask, with room to widen (16 lanes or fewer) in 16-bit lanes by
 * the constant's words, else byte_product's words with the constant's
 * halves ready.  Against the product by L in a register (its bytes copied
 * and widened every vector): f32(((a + b) * 2) * c), u8, rows of 1908,
 * 0.62-0.68 of gcc -O3's time (same process), 0.81-0.92 so. */
static void byte_times_literal(generator *g, int r, unsigned L, bool w)
{
    int k = __builtin_ctz(L | 0x100);
    g->byte_literals++;
    if (L == 0) {
        op3(g, V_PXOR, w, r, r, r);
    } else if (L == 1u << k && k == 1) {
        op3(g, V_PADDB, w, r, r, r);
    } else if (L == 1u << k && k > 1) {
        vex(g->b, V_PSHIFTW, w, false, 6 /* sll */, r, in_register(r), k);
        op_constant(g, V_PAND, r, r, constant(g, &(uint8_t){(uint8_t)(0xff << k)}, 1));
    } else if (L == 1u << k) {
        /* (1: nothing) */
    } else if (g->lanes <= 16) {
        widen(g, r, 1, false, BCG_I16);
        vex(g->b, V_PMULLW, wide_of(g, BCG_I16), false, r, r,
            constant_operand(g, constant(g, &(uint16_t){(uint16_t)L}, 2)), -1);
        narrow(g, r, BCG_U16, 1, false);
    } else { /* byte_product with y's words L and L << 8 */
        int t = take_register(g);
        vex(g->b, V_PSHIFTW, w, false, 2 /* srl */, t, in_register(r), 8);
        vex(g->b, V_PMULLW, w, false, t, t,
            constant_operand(g, constant(g, &(uint16_t){(uint16_t)(L << 8)}, 2)), -1);
        vex(g->b, V_PMULLW, w, false, r, r,
            constant_operand(g, constant(g, &(uint16_t){(uint16_t)L}, 2)), -1);
        op_constant(g, V_PAND, r, r, constant(g, &(uint16_t){0x00ff}, 2));
        op3(g, V_POR, w, r, r, t);
        give_register(g, t);
    }
}

/* Binary node ID at operation type T with its literal child K as the
 * instruction's constant operand (literal_operand). */
static value typed_with_literal(generator *g, int id, bcg_dtype t, int k)
{
    static const vex_id add[4] = {V_PADDB, V_PADDW, V_PADDD, V_PADDQ};
    static const vex_id sub[4] = {V_PSUBB, V_PSUBW, V_PSUBD, V_PSUBQ};
    static const vex_id equal[4] = {V_PCMPEQB, V_PCMPEQW, V_PCMPEQD, V_PCMPEQQ};
    static const vex_id greater[4] = {V_PCMPGTB, V_PCMPGTW, V_PCMPGTD, V_PCMPGTQ};
    static const vex_id extreme[2][2][3] = {
        {{V_PMINUB, V_PMINUW, V_PMINUD}, {V_PMAXUB, V_PMAXUW, V_PMAXUD}},
        {{V_PMINSB, V_PMINSW, V_PMINSD}, {V_PMAXSB, V_PMAXSW, V_PMAXSD}}};
    static const int predicate[] = {[OP_EQ] = 0, [OP_NE] = 4, [OP_LT] = 1, [OP_LE] = 2,
                                    [OP_GT] = 14, [OP_GE] = 13};
    static const expr_op mirror[] = {[OP_EQ] = OP_EQ, [OP_NE] = OP_NE, [OP_LT] = OP_GT,
                                     [OP_LE] = OP_GE, [OP_GT] = OP_LT, [OP_GE] = OP_LE};
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    expr_op op = n->op;
    int size = size_of(t), l = log2_size(size);
    bool w = wide_of(g, t), is_signed = dtype_kind_of(t) == KIND_INT;
    bool order = op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE;
    uint64_t sign = is_integer(t) && !is_signed && order ? 1ull << (8 * size - 1) : 0;
    value x = typed_as(g, kir_child(ir, id, 1 - k), t);
    if (g->failed)
        return x;
    if (op == OP_MUL && size == 1) {
        expr_node literal = converted_literal(g, kir_child(ir, id, k), t);
        uint64_t bits = is_signed ? (uint64_t)literal.value.i : literal.value.u;
        byte_times_literal(g, x.reg, (unsigned)(bits & 0xff), w);
        return (value){x.reg, false, false, t};
    }
    rm_operand c = constant_operand(g, literal_slot(g, kir_child(ir, id, k), t, sign));
    int r = x.reg;
    if (is_float_lane(t)) {
        bool dbl = t == BCG_F64;
        if (op >= OP_EQ && op <= OP_GE) { /* ORDER OP: the comparisons */
            vex(g->b, V_CMP, w, dbl, r, r, c, predicate[k == 1 ? op : mirror[op]]);
            return (value){r, true, false, mask_dtype(size)};
        }
        vex_id id2 = op == OP_ADD ? V_ADD : op == OP_SUB ? V_SUB : op == OP_MUL ? V_MUL : V_DIV;
        vex(g->b, id2, w, dbl, r, r, c, -1);
        return (value){r, false, false, t};
    }
    vex_id instruction;
    switch (op) {
    case OP_ADD: instruction = add[l]; break;
    case OP_SUB: instruction = sub[l]; break;
    case OP_MUL: instruction = size == 2 ? V_PMULLW : V_PMULLD; break;
    case OP_BITAND: instruction = V_PAND; break;
    case OP_BITOR: instruction = V_POR; break;
    case OP_BITXOR: instruction = V_PXOR; break;
    case OP_MINIMUM: case OP_MAXIMUM:
        instruction = extreme[is_signed][op == OP_MAXIMUM][l];
        break;
    case OP_EQ: case OP_NE:
        vex(g->b, equal[l], w, false, r, r, c, -1);
        return (value){r, true, op == OP_NE, mask_dtype(size)};
    default: /* x > c; LE and GE its negation */
        if (sign)
            op_constant(g, V_PXOR, r, r, constant(g, &sign, size));
        vex(g->b, greater[l], w, false, r, r, c, -1);
        return (value){r, true, op == OP_LE || op == OP_GE, mask_dtype(size)};
    }
    vex(g->b, instruction, w, false, r, r, c, -1);
    return (value){r, false, false, t};
}

/* BYTES of leaf memory M into R: one element of SIZE bytes repeated when
 * BROADCAST. */
static void load_bytes(generator *g, int r, memory m, bool broadcast, int size, int bytes)
{
    static const vex_id repeat[4] = {V_PBROADCASTB, V_PBROADCASTW, V_PBROADCASTD, V_PBROADCASTQ};
    if (broadcast)
        vex(g->b, repeat[log2_size(size)], bytes == 32, false, r, 0, in_memory(m), -1);
    else if (bytes >= 16)
        vex(g->b, V_MOVDQU_LOAD, bytes == 32, false, r, 0, in_memory(m), -1);
    else
        vex(g->b, bytes == 8 ? V_MOVQ_LOAD : V_MOVD_LOAD, false, false, r, 0, in_memory(m), -1);
}

static void store_bytes(generator *g, int r, memory m, int bytes)
{
    if (bytes >= 16)
        vex(g->b, V_MOVDQU_STORE, bytes == 32, false, r, 0, in_memory(m), -1);
    else
        vex(g->b, bytes == 8 ? V_MOVQ_STORE : V_MOVD_STORE, false, false, r, 0, in_memory(m), -1);
}

/* R's BYTES bytes of elements of SIZE bytes in reverse order: vpermq or
 * vpermd for 32 bytes of 8- or 4-byte elements, else vpshufb (within each
 * 16-byte half, which vpermq then swaps, for 32 bytes). */
static void reverse_elements(generator *g, int r, int size, int bytes)
{
    builder *b = g->b;
    if (bytes == 32 && size == 8) {
        vex(b, V_PERMQ, true, false, r, 0, in_register(r), 0x1b);
        return;
    }
    if (bytes == 32 && size == 4) {
        int32_t index[8] = {7, 6, 5, 4, 3, 2, 1, 0};
        int temp, idx = constant_in_register(g, constant(g, index, 32), &temp);
        vex(b, V_PERMD, true, false, r, idx, in_register(r), -1);
        if (temp >= 0)
            give_register(g, temp);
        return;
    }
    int half = bytes == 32 ? 16 : bytes, count = half / size;
    unsigned char pattern[32];
    for (int k = 0; k < 32; k++) {
        int within = k % 16;
        pattern[k] = bytes == 32 || k < bytes
                         ? (unsigned char)((count - 1 - within / size) * size + within % size)
                         : 0x80;
    }
    vex(b, V_PSHUFB, bytes == 32, false, r, r, constant_operand(g, constant(g, pattern, 32)), -1);
    if (bytes == 32)
        vex(b, V_PERMQ, true, false, r, 0, in_register(r), 0x4e);
}

/* R = the elements of SIZE bytes at element offsets 0, 2, 4, .. from M,
 * BYTES of them in order (a leaf of stride 2): two loads, the first at M
 * and the second ending at the last element, so every byte read lies
 * between the first element and the last.  4- and 8-byte elements: the
 * even ones picked by vshufps/vshufpd; 1 and 2 bytes: the first load's
 * even elements masked, the second's odd ones shifted down, packed
 * (vpackus, exact: they fit); 32 bytes put in order by vpermq; 8 or 4
 * bytes: the two loads side by side, picked by vpshufb.  REVERSE (a
 * stride of -2: M is the last lane's element): the lanes reversed. */
static void even_elements(generator *g, int r, memory m, int size, int bytes, bool reverse)
{
    builder *b = g->b;
    bool wide = bytes == 32;
    memory second = m;
    second.disp += bytes - size;
    if (bytes >= 16 && size >= 4) {
        bool dbl = size == 8;
        vex(b, V_MOVU_LOAD, wide, dbl, r, 0, in_memory(m), -1);
        vex(b, V_SHUFP, wide, dbl, r, r, in_memory(second), dbl ? 0x0a : 0xd8);
        if (wide && dbl) {
            vex(b, V_PERMQ, true, false, r, 0, in_register(r), reverse ? 0x27 : 0xd8);
        } else if (wide && !reverse) {
            vex(b, V_PERMQ, true, false, r, 0, in_register(r), 0xd8);
        } else if (wide) { /* in order and reversed at once */
            int32_t index[8] = {7, 6, 3, 2, 5, 4, 1, 0};
            int temp, idx = constant_in_register(g, constant(g, index, 32), &temp);
            vex(b, V_PERMD, true, false, r, idx, in_register(r), -1);
            if (temp >= 0)
                give_register(g, temp);
        } else if (reverse) {
            reverse_elements(g, r, size, bytes);
        }
        return;
    }
    int t = take_register(g);
    if (bytes >= 16) {
        vex(b, V_MOVDQU_LOAD, wide, false, r, 0, in_memory(m), -1);
        vex(b, V_MOVDQU_LOAD, wide, false, t, 0, in_memory(second), -1);
        if (size == 1) {
            op_constant(g, V_PAND, r, r, constant(g, &(uint16_t){0xff}, 2));
            vex(b, V_PSHIFTW, wide, false, 2 /* srl */, t, in_register(t), 8);
            op3(g, V_PACKUSWB, wide, r, r, t);
        } else {
            op_constant(g, V_PAND, r, r, constant(g, &(uint32_t){0xffff}, 4));
            vex(b, V_PSHIFTD, wide, false, 2 /* srl */, t, in_register(t), 16);
            op3(g, V_PACKUSDW, wide, r, r, t);
        }
        if (wide)
            vex(b, V_PERMQ, true, false, r, 0, in_register(r), 0xd8);
    } else { /* 8 or 4 bytes: the loads at bytes 0 and 8 of an xmm */
        vex_id load = bytes == 8 ? V_MOVQ_LOAD : V_MOVD_LOAD;
        vex(b, load, false, false, r, 0, in_memory(m), -1);
        vex(b, load, false, false, t, 0, in_memory(second), -1);
        vex(b, V_SHUFPS, false, false, r, r, in_register(t), 0x44);
        unsigned char pattern[32];
        for (int k = 0; k < 32; k++) {
            int lane = reverse ? bytes / size - 1 - k / size : k / size;
            int offset = 2 * lane * size + k % size; /* from the first element */
            pattern[k] = k >= bytes ? 0x80
                         : offset < bytes ? (unsigned char)offset
                                          : (unsigned char)(8 + offset - (bytes - size));
        }
        vex(b, V_PSHUFB, false, false, r, r, constant_operand(g, constant(g, pattern, 32)), -1);
        reverse = false;
    }
    give_register(g, t);
    if (reverse)
        reverse_elements(g, r, size, bytes);
}

/* Register R = the loop's current lanes of strided leaf I (any stride
 * vex_reads_stride allows), in order, in its low BYTES: rdi = lane 0's
 * element (rax * stride elements from the leaf's pointer).  A stride of
 * -1 loads the bytes ending there and reverses them; +-2: even_elements;
 * others: other_stride_load. */
static void typed_strided_load(generator *g, int r, int i)
{
    builder *b = g->b;
    const leaf *l = &g->leaves[i];
    int size = size_of(l->dtype), bytes = bytes_of(g, l->dtype), lanes = g->lanes;
    if (zmm_strided_load(g, r, i))
        return;
    gpr_multiply(b, RDI, RAX, (int32_t)(l->stride * size));
    gpr_pair(b, 0x01, RDI, l->reg); /* add rdi, pointer */
    if (l->stride < -2 || l->stride > 2) {
        other_stride_load(g, r, i, lanes);
        return;
    }
    if (l->stride == -1) {
        memory m = at(RDI, NONE, 1, -(lanes - 1) * size);
        if (bytes == 32 && size == 8) {
            vex(b, V_PERMQ, true, false, r, 0, in_memory(m), 0x1b);
        } else {
            load_bytes(g, r, m, false, size, bytes);
            reverse_elements(g, r, size, bytes);
        }
        return;
    }
    int32_t low = l->stride < 0 ? -(lanes - 1) * 2 * size : 0;
    even_elements(g, r, at(RDI, NONE, 1, low), size, bytes, l->stride < 0);
}

/* Register R = leaf I's lanes, loaded. */
static void typed_leaf_load(generator *g, int r, int i)
{
    bcg_dtype t = g->leaves[i].dtype;
    if (leaf_strided(&g->leaves[i]) && !g->tail && !g->small) /* (the tail: its slot) */
        typed_strided_load(g, r, i);
    else
        load_bytes(g, r, leaf_memory(g, i), g->leaves[i].broadcast, size_of(t), bytes_of(g, t));
}

/* The times the typed body reads leaf I: its nodes under ID (a folded
 * node reads none). */
static int leaf_uses(generator *g, int id, int i)
{
    const kernel_ir *ir = g->ir;
    if (ir->value[id].folded >= 0 || ir->nodes[id]->op == OP_LITERAL)
        return 0;
    if (is_leaf(ir, id))
        return g->leaf_node[i] == id ||
               (ir->value[id].local ? g->leaves[i].operand < 0 &&
                                          strcmp(g->leaves[i].local, ir->value[id].local) == 0
                                    : g->leaves[i].operand == ir->nodes[id]->operand + 1);
    int count = 0;
    for (int k = 0; k < ir->nodes[id]->arg_count; k++)
        count += leaf_uses(g, kir_child(ir, id, k), i);
    return count;
}

/* Leaf ID's lanes into a new register.  A strided leaf read again later
 * in the body (where(a > 3, b, a)) is loaded once and kept in a register
 * while enough are free (its shuffles are its cost), else loaded again. */
static value small_typed_leaf(generator *g, int id);

static value typed_leaf(generator *g, int id)
{
    if (g->small) /* a small kernel's lanes (the end of the file) */
        return small_typed_leaf(g, id);
    int i = leaf_index(g, id);
    bcg_dtype t = g->leaves[i].dtype;
    if (!is_integer(t) && !is_float_lane(t) && t != BCG_BOOL) {
        g->failed = true;
        return (value){0, false, false, t};
    }
    int r;
    bool keep = leaf_strided(&g->leaves[i]) && !g->tail && !g->small;
    int uses = keep ? leaf_uses(g, 0, i) : 0;
    g->loads[i]++;
    if (keep && g->kept[i] > 0 && g->loads[i] >= uses) { /* its last use: the register itself */
        r = g->kept[i];
        g->kept[i] = 0;
    } else if (keep && g->kept[i] > 0) {
        r = take_register(g);
        vex(g->b, V_MOVDQU_LOAD, true, false, r, 0, in_register(g->kept[i]), -1);
    } else {
        r = take_register(g);
        typed_leaf_load(g, r, i);
        /* (not kept from inside one side of where_branch: the other
         * side, run instead, would find the register unset) */
        if (keep && !g->branching && g->loads[i] < uses && __builtin_popcount(g->free) >= 5) {
            int k = take_register(g); /* (never 0: r took a lower one) */
            vex(g->b, V_MOVDQU_LOAD, true, false, k, 0, in_register(r), -1);
            g->kept[i] = k;
        }
    }
    if (t != BCG_BOOL)
        return (value){r, false, false, t};
    vex(g->b, V_PCMPEQB, wide_of(g, t), false, r, r, constant_operand(g, zero_constant(g)), -1);
    return (value){r, true, true, BCG_I8}; /* the bytes that are 0 */
}

static value typed(generator *g, int id);

static value typed_as(generator *g, int id, bcg_dtype to)
{
    if (g->failed)
        return (value){0, false, false, to};
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (n->op == OP_LITERAL)
        return literal_as(g, id, to);
    /* a bool cast to a number is 0 or 1 in every numeric dtype: the mask
     * straight into TO (u8(a == b) * c in i16: no bytes and back) */
    if (bool_cast(ir, id)) /* (count_uses counts its child's uses) */
        return typed_as(g, kir_child(ir, id, 0), to);
    return as_type(g, typed(g, id), to);
}

/* The children of ID as dtypes TO[k] (BOOL: their truth), the neediest
 * first. */
static void typed_children(generator *g, int id, value *out, const bcg_dtype *to)
{
    const kernel_ir *ir = g->ir;
    int order[3], count = need_order(ir, id, order);
    for (int i = 0; i < count; i++)
        out[order[i]] = typed_as(g, kir_child(ir, id, order[i]), to[order[i]]);
}

/* NumPy's minimum/maximum of floats of dtype T (emit_extreme). */
static value float_extreme(generator *g, bcg_dtype t, bool minimum, value a, value bv)
{
    bool w = wide_of(g, t), dbl = t == BCG_F64;
    vex(g->b, minimum ? V_MIN : V_MAX, w, dbl, bv.reg, a.reg, in_register(bv.reg), -1);
    int m = take_register(g);
    vex(g->b, V_CMP, w, dbl, m, a.reg, in_register(a.reg), 3 /* UNORD_Q */);
    vex(g->b, dbl ? V_BLENDVPD : V_BLENDVPS, w, false, a.reg, bv.reg, in_register(a.reg), m << 4);
    give_register(g, m);
    give_register(g, bv.reg);
    return a;
}

/* Whether value ID of a typed tree is never NaN where a float operation
 * reads it: an integer value (converted exactly or rounded, never NaN), a
 * literal that is not NaN, or a cast of such a value.  maximum(a + a, b),
 * a i32 and the result f64, then drops the NaN test and blend of
 * float_extreme: in the zmm body 3 of its 11 instructions (vcmpunordpd,
 * vpmovm2q, vblendmpd). */
static bool typed_never_nan(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    if (dtype_kind_of(n->dtype) != KIND_FLOAT)
        return n->dtype != BCG_BOOL;
    if (ir->value[id].folded >= 0)
        return false;
    if (n->op == OP_LITERAL)
        return n->value.f == n->value.f;
    if (n->op == OP_CAST)
        return typed_never_nan(ir, kir_child(ir, id, 0));
    return false;
}

/* A comparison OP of X and Y, integers of dtype T: a mask. */
static value integer_compare(generator *g, expr_op op, bcg_dtype t, value x, value y)
{
    static const vex_id equal[4] = {V_PCMPEQB, V_PCMPEQW, V_PCMPEQD, V_PCMPEQQ};
    static const vex_id greater[4] = {V_PCMPGTB, V_PCMPGTW, V_PCMPGTD, V_PCMPGTQ};
    int size = size_of(t), l = log2_size(size);
    bool w = wide_of(g, t);
    if (op == OP_EQ || op == OP_NE) {
        op3(g, equal[l], w, x.reg, x.reg, y.reg);
    } else {
        if (dtype_kind_of(t) == KIND_UINT) { /* unsigned order = signed order of x ^ sign */
            uint64_t sign = 1ull << (8 * size - 1);
            int slot = constant(g, &sign, size);
            op_constant(g, V_PXOR, x.reg, x.reg, slot);
            op_constant(g, V_PXOR, y.reg, y.reg, slot);
        }
        bool swap = op == OP_LT || op == OP_GE; /* y > x */
        op3(g, greater[l], w, x.reg, swap ? y.reg : x.reg, swap ? x.reg : y.reg);
    }
    give_register(g, y.reg);
    return (value){x.reg, true, op == OP_NE || op == OP_LE || op == OP_GE, mask_dtype(size)};
}

/* FIRST_NEVER_NAN: the first child is never NaN (typed_never_nan), so a
 * minimum or maximum needs no test for a NaN in it. */
static value float_operation(generator *g, const expr_node *n, bcg_dtype t, value *a,
                             bool first_never_nan)
{
    static const int predicate[] = {[OP_EQ] = 0, [OP_NE] = 4, [OP_LT] = 1, [OP_LE] = 2,
                                    [OP_GT] = 14, [OP_GE] = 13};
    bool w = wide_of(g, t), dbl = t == BCG_F64;
    value v = a[0];
    builder *b = g->b;
    switch (n->op) {
    case OP_POS: break;
    case OP_NEG:
        vex(b, V_XOR, w, dbl, v.reg, v.reg,
            constant_operand(g, constant(g, dbl ? (void *)&(uint64_t){1ull << 63}
                                                : (void *)&(uint32_t){1u << 31}, size_of(t))), -1);
        break;
    case OP_ABS:
        vex(b, V_AND, w, dbl, v.reg, v.reg,
            constant_operand(g, constant(g, dbl ? (void *)&(uint64_t){~(1ull << 63)}
                                                : (void *)&(uint32_t){~(1u << 31)}, size_of(t))), -1);
        break;
    case OP_SQRT: vex(b, V_SQRT, w, dbl, v.reg, 0, in_register(v.reg), -1); break;
    case OP_EXP:
        v.reg = dbl ? emit_exp_f64(g, v.reg, w) : emit_exp(g, v.reg, w);
        break;
    case OP_LOG:
        if (dbl)
            g->failed = true;
        else
            v.reg = emit_log(g, v.reg, w);
        break;
    case OP_SQUARE: vex(b, V_MUL, w, dbl, v.reg, v.reg, in_register(v.reg), -1); break;
    case OP_RECIPROCAL: {
        int r = constant_register(g, float_constant(g, t, 1.0));
        vex(b, V_DIV, w, dbl, v.reg, r, in_register(v.reg), -1);
        give_register(g, r);
        break;
    }
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: {
        vex_id op = n->op == OP_ADD ? V_ADD : n->op == OP_SUB ? V_SUB
                    : n->op == OP_MUL ? V_MUL : V_DIV;
        vex(b, op, w, dbl, v.reg, v.reg, in_register(a[1].reg), -1);
        give_register(g, a[1].reg);
        break;
    }
    case OP_MINIMUM: case OP_MAXIMUM:
        if (first_never_nan) { /* vmaxps(a, b) is then NumPy's, b NaN or not */
            vex(b, n->op == OP_MINIMUM ? V_MIN : V_MAX, w, dbl, v.reg, v.reg,
                in_register(a[1].reg), -1);
            give_register(g, a[1].reg);
            g->plain_extremes++;
            break;
        }
        return float_extreme(g, t, n->op == OP_MINIMUM, a[0], a[1]);
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        vex(b, V_CMP, w, dbl, v.reg, v.reg, in_register(a[1].reg), predicate[n->op]);
        give_register(g, a[1].reg);
        return (value){v.reg, true, false, mask_dtype(size_of(t))};
    default:
        g->failed = true;
        break;
    }
    return v;
}

/* X = the bytes of X times those of Y, wrapped, in place in their lanes
 * (no room to widen needed, so an 8-bit tree keeps 32 lanes): vpmullw
 * gives each 16-bit word's low byte; its high byte is the low byte of
 * (x >> 8) * (y & 0xff00), whose low byte is 0.  Six instructions a
 * vector of 32 where widening took ten a vector of 16 (the even/odd
 * product gcc writes too). */
static void byte_product(generator *g, bool w, int x, int y)
{
    int t = take_register(g), u = take_register(g);
    vex(g->b, V_PSHIFTW, w, false, 2 /* srl */, t, in_register(x), 8);
    op_constant(g, V_PAND, u, y, constant(g, &(uint16_t){0xff00}, 2));
    op3(g, V_PMULLW, w, t, t, u);
    op3(g, V_PMULLW, w, x, x, y);
    op_constant(g, V_PAND, x, x, constant(g, &(uint16_t){0x00ff}, 2));
    op3(g, V_POR, w, x, x, t);
    give_register(g, t);
    give_register(g, u);
}

static value integer_operation(generator *g, const expr_node *n, bcg_dtype t, value *a)
{
    static const vex_id add[4] = {V_PADDB, V_PADDW, V_PADDD, V_PADDQ};
    static const vex_id sub[4] = {V_PSUBB, V_PSUBW, V_PSUBD, V_PSUBQ};
    static const vex_id absolute[3] = {V_PABSB, V_PABSW, V_PABSD};
    static const vex_id extreme[2][2][3] = { /* [signed][maximum][size] */
        {{V_PMINUB, V_PMINUW, V_PMINUD}, {V_PMAXUB, V_PMAXUW, V_PMAXUD}},
        {{V_PMINSB, V_PMINSW, V_PMINSD}, {V_PMAXSB, V_PMAXSW, V_PMAXSD}}};
    int size = size_of(t), l = log2_size(size);
    bool w = wide_of(g, t), is_signed = dtype_kind_of(t) == KIND_INT;
    value v = a[0];
    switch (n->op) {
    case OP_POS: return v;
    case OP_ADD: case OP_SUB:
        op3(g, (n->op == OP_ADD ? add : sub)[l], w, v.reg, v.reg, a[1].reg);
        give_register(g, a[1].reg);
        return v;
    case OP_MUL: case OP_SQUARE: {
        int y = n->op == OP_SQUARE ? v.reg : a[1].reg;
        if (size == 2 || size == 4) {
            op3(g, size == 2 ? V_PMULLW : V_PMULLD, w, v.reg, v.reg, y);
        } else if (size == 1 && g->lanes > 16) { /* (an 8-bit tree: no room to widen) */
            byte_product(g, w, v.reg, y);
        } else if (size == 1) { /* in 16-bit lanes (wider values left room), wrapped back */
            widen(g, v.reg, 1, false, BCG_I16);
            if (y != v.reg)
                widen(g, y, 1, false, BCG_I16);
            op3(g, V_PMULLW, wide_of(g, BCG_I16), v.reg, v.reg, y);
            narrow(g, v.reg, BCG_U16, 1, false);
        } else { /* lo*lo + ((hi*lo + lo*hi) << 32), the 32-bit halves by vpmuludq */
            int t = take_register(g), u = take_register(g);
            vex(g->b, V_PSHIFTQ, w, false, 2 /* srl */, t, in_register(v.reg), 32);
            op3(g, V_PMULUDQ, w, t, t, y);
            vex(g->b, V_PSHIFTQ, w, false, 2, u, in_register(y), 32);
            op3(g, V_PMULUDQ, w, u, u, v.reg);
            op3(g, V_PADDQ, w, t, t, u);
            vex(g->b, V_PSHIFTQ, w, false, 6 /* sll */, t, in_register(t), 32);
            op3(g, V_PMULUDQ, w, v.reg, v.reg, y);
            op3(g, V_PADDQ, w, v.reg, v.reg, t);
            give_register(g, t);
            give_register(g, u);
        }
        if (y != v.reg)
            give_register(g, y);
        return v;
    }
    case OP_NEG: {
        int z = take_register(g);
        op3(g, V_PXOR, true, z, z, z);
        op3(g, sub[l], w, z, z, v.reg);
        give_register(g, v.reg);
        return (value){z, false, false, t};
    }
    case OP_ABS: /* vpabs wraps INT_MIN to itself as eval.c does */
        if (is_signed && size <= 4) {
            op3(g, absolute[l], w, v.reg, 0, v.reg);
        } else if (is_signed) { /* (x ^ m) - m, m = x < 0 */
            int m = take_register(g);
            vex(g->b, V_PXOR, true, false, m, m, in_register(m), -1);
            op3(g, V_PCMPGTQ, w, m, m, v.reg);
            op3(g, V_PXOR, true, v.reg, v.reg, m);
            op3(g, V_PSUBQ, w, v.reg, v.reg, m);
            give_register(g, m);
        }
        return v;
    case OP_BITNOT:
        op_constant(g, V_PXOR, v.reg, v.reg, ones_constant(g));
        return v;
    case OP_BITAND: case OP_BITOR: case OP_BITXOR:
        op3(g, n->op == OP_BITAND ? V_PAND : n->op == OP_BITOR ? V_POR : V_PXOR, true, v.reg,
            v.reg, a[1].reg);
        give_register(g, a[1].reg);
        return v;
    case OP_MINIMUM: case OP_MAXIMUM:
        if (size == 8) { /* the strictly smaller (larger), else b: a blend on a > b */
            int m = take_register(g);
            if (!is_signed) { /* the order of x ^ sign */
                int slot = constant(g, &(uint64_t){1ull << 63}, 8);
                op_constant(g, V_PXOR, m, v.reg, slot);
                int y = take_register(g);
                op_constant(g, V_PXOR, y, a[1].reg, slot);
                op3(g, V_PCMPGTQ, w, m, n->op == OP_MINIMUM ? y : m, n->op == OP_MINIMUM ? m : y);
                give_register(g, y);
            } else {
                op3(g, V_PCMPGTQ, w, m, n->op == OP_MINIMUM ? a[1].reg : v.reg,
                    n->op == OP_MINIMUM ? v.reg : a[1].reg);
            }
            /* m: a is the one; blendv dst = m ? a : b */
            vex(g->b, V_PBLENDVB, w, false, v.reg, a[1].reg, in_register(v.reg), m << 4);
            give_register(g, m);
            give_register(g, a[1].reg);
            return v;
        }
        op3(g, extreme[is_signed][n->op == OP_MAXIMUM][l], w, v.reg, v.reg, a[1].reg);
        give_register(g, a[1].reg);
        return v;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        return integer_compare(g, n->op, t, a[0], a[1]);
    default:
        g->failed = true;
        return v;
    }
}

/* x << c, x >> c for a literal count C: in range, one immediate shift;
 * outside it eval.c's rule (0, or the sign repeated). */
static value typed_shift(generator *g, int id, bcg_dtype t)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    int count_id = kir_child(ir, id, 1), size = size_of(t), bits = 8 * size;
    bool is_signed = dtype_kind_of(t) == KIND_INT;
    static const vex_id shift[4] = {0, V_PSHIFTW, V_PSHIFTD, V_PSHIFTQ};
    if (ir->nodes[count_id]->op != OP_LITERAL || !is_integer(t)) {
        g->failed = true;
        return (value){0, false, false, t};
    }
    expr_node count = converted_literal(g, count_id, t);
    bool in_range = is_signed ? count.value.i >= 0 && count.value.i < bits
                              : count.value.u < (uint64_t)bits;
    int amount = in_range ? (int)(is_signed ? count.value.i : (int64_t)count.value.u) : bits - 1;
    value v = typed_as(g, kir_child(ir, id, 0), t);
    if (g->failed)
        return v;
    bool w = wide_of(g, t);
    int l = log2_size(size) > 0 ? log2_size(size) : 1; /* bytes shift as words, masked */
    uint64_t sign = 1ull << (bits - 1);
    if (n->op == OP_SHR && is_signed && (size == 1 || size == 8)) {
        /* no vpsrab/vpsraq: ((x ^ sign) >>> c) - (sign >>> c) */
        int slot = constant(g, &sign, size);
        op_constant(g, V_PXOR, v.reg, v.reg, slot);
        vex(g->b, shift[l], w, false, 2 /* srl */, v.reg, in_register(v.reg), amount);
        if (size == 1)
            op_constant(g, V_PAND, v.reg, v.reg, constant(g, &(uint8_t){0xffu >> amount}, 1));
        uint64_t shifted = sign >> amount;
        op_constant(g, size == 1 ? V_PSUBB : V_PSUBQ, v.reg, v.reg, constant(g, &shifted, size));
    } else if (n->op == OP_SHR && is_signed) {
        vex(g->b, shift[l], w, false, 4 /* sra */, v.reg, in_register(v.reg), amount);
    } else if (!in_range) {
        op3(g, V_PXOR, true, v.reg, v.reg, v.reg);
    } else {
        vex(g->b, shift[l], w, false, n->op == OP_SHL ? 6 : 2, v.reg, in_register(v.reg), amount);
        if (size == 1) { /* the bits shifted across bytes */
            uint8_t keep = n->op == OP_SHL ? (uint8_t)(0xffu << amount) : (uint8_t)(0xffu >> amount);
            op_constant(g, V_PAND, v.reg, v.reg, constant(g, &keep, 1));
        }
    }
    return v;
}

/* Node ID at its own dtype (a mask for a bool). */
/* A product by a bool converted to an integer, u8(c) * x in an integer
 * dtype: x where c, else 0 (eval.c's 0 or 1 times x, wrapping), so x
 * and c's mask (vpand, vandnps where the mask is inverted) in place of
 * the mask's 0/1 conversion and the multiplication (gcc's zeroing
 * masked move).  VEX_MASK_PRODUCT 0: converted and multiplied, as before
 * (measurements). */
int vex_mask_product = -1;

static bool mask_factor(const kernel_ir *ir, int id)
{
    return bool_cast(ir, id) && is_integer(ir->nodes[id]->dtype); /* (count_uses: its child's) */
}

static bool mask_product(generator *g, int id, bcg_dtype t, value *out)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (vex_mask_product == 0 || n->op != OP_MUL || n->arg_count != 2 || !is_integer(t))
        return false;
    int k = mask_factor(ir, kir_child(ir, id, 0)) ? 0 : mask_factor(ir, kir_child(ir, id, 1)) ? 1 : -1;
    if (k < 0)
        return false;
    value m = typed_as(g, kir_child(ir, kir_child(ir, id, k), 0), BCG_BOOL);
    value x = typed_as(g, kir_child(ir, id, 1 - k), t);
    if (g->failed) {
        *out = x;
        return true;
    }
    m = mask_to(g, m, size_of(t));
    if (m.inverted) /* ~m & x */
        vex(g->b, V_ANDN, true, false, x.reg, m.reg, in_register(x.reg), -1);
    else
        op3(g, V_PAND, true, x.reg, x.reg, m.reg);
    give_register(g, m.reg);
    *out = (value){x.reg, false, false, t};
    return true;
}

/* Hoisted value I's stack slots: 64 bytes, its first element in every
 * lane (write_hoisted). */
static int32_t hoisted_disp(const generator *g, int i)
{
    return g->hoist_frame + 32 * (g->hoist_base + 2 * i);
}

/* Register R = hoisted value I.  In the paired loop both vectors' copies
 * read the same slots (vex_paired refuses a stack operand: a slot of the
 * tail or of a staged leaf is one vector's), the zmm body its first 32
 * bytes into both halves (vbroadcasti64x4); so a tree with a value
 * computed once a run keeps the paired loop (measured: i32(i8(where(a >
 * 0, a, c)) + b), a and b one value, 7.2M i8 c, was the single loop).
 * The zmm body read all 64 bytes at first, a load across write_hoisted's
 * two 32-byte stores that store forwarding cannot serve, a stall every
 * run: over short rows that was 3x slower than the single loop (a + 3 * b
 * * c, f64 rows of 11, a and b one value a row, sweep seed 5 case 68:
 * cc/JIT 0.73 single, 0.22 paired), and so it was off.  Read as one
 * store's 32 bytes, same process against the single loop: f64(minimum(c,
 * 0) + f64(b)) - minimum(a, c) over i16, rows of 33 in groups of 4 (sweep
 * seed 41 case 43) 0.30 -> 0.47; a + 3 * b * c, i16 rows of 37, a and b
 * i32 and i16 one value a row, 0.50 -> 0.66.  The ymm pairs stay off by
 * default: the same two cases 0.50 -> 0.37-0.45 and even. */
int vex_pair_hoisted = -1;

static void load_hoisted(generator *g, int r, int i)
{
    builder *b = g->b;
    rm_operand slot = in_memory(at(RSP, NONE, 1, hoisted_disp(g, i)));
    if (!b->dup || vex_pair_hoisted == 0 ||
        (vex_pair_hoisted < 0 && !b->dup_zmm)) { /* (vex_paired: dup_bad, the single loop) */
        vex(b, V_MOVDQU_LOAD, true, false, r, 0, slot, -1);
        return;
    }
    b->dup = false;
    if (b->dup_zmm) {
        if (r == b->k1_of)
            b->k1_of = -1;
        evex_form(b, 1, 2, 0x5b, true, r, 0, slot, -1, false, 512); /* vbroadcasti64x4 */
    } else {
        vex(b, V_MOVDQU_LOAD, true, false, r, 0, slot, -1);
        vex(b, V_MOVDQU_LOAD, true, false, paired(b, r), 0, slot, -1);
    }
    b->dup = true;
}

/* jcc (CC as in jump) or jmp (CC < 0) forward, rel32: its offset, for land */
static int jump_forward(builder *b, int cc)
{
    if (cc < 0) {
        byte(b, 0xe9);
    } else {
        byte(b, 0x0f);
        byte(b, 0x80 + cc);
    }
    word32(b, 0);
    return b->length - 4;
}

/* jump_forward's jump at AT lands here */
static void land(builder *b, int at)
{
    if (b->overflow || at < 0 || at + 4 > b->length)
        return;
    int32_t rel = b->length - (at + 4);
    for (int i = 0; i < 4; i++)
        b->code[at + i] = (unsigned char)((uint32_t)rel >> (8 * i));
}

/* VEX_WHERE_BRANCH 0: a where() whose condition is computed once a run
 * blends both sides every vector, as before (measurements). */
int vex_where_branch = -1;

/* where(c, x, y) of a non-bool dtype whose condition is the same in every
 * lane (a value computed once a run, write_hoisted): one side computed,
 * chosen by a branch on the condition's slot, as gcc -O3 unswitches such
 * loops: the other side's leaves are not read.  Measured same-process
 * against vex_where_branch 0 (a and b one value, c i8, a > 0 everywhere;
 * cc / JIT): where(a > 0, a, c) + b 71514 elements 0.25 -> 0.55, 7.2M
 * 0.47 -> 1.04; i32(i8(where(a > 0, a, c)) + b) 71514 0.17 -> 0.52;
 * where(a < 3, c, b) 71514 0.31 -> 0.54.
 * Not with values kept across uses (shared: one side's register would
 * be another's).  Strided leaves compute rdi at each read; a side keeps
 * none of its reads for later ones (typed_leaf: the other side would find
 * the register unset), a read kept before the where serves both.  Reversed a
 * (where(c > 5, b + a, c), i32 758245, b and c one value, sweep seed 43):
 * cc / JIT 0.43 -> 0.97.  False: the caller blends. */
static bool where_branch(generator *g, int id, value *out)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    int condition = kir_child(ir, id, 0);
    if (vex_where_branch == 0 || !g->hoist || g->hoisting || g->hoist[condition] < 0 ||
        n->dtype == BCG_BOOL || g->shared_uses || g->small)
        return false;
    builder *b = g->b;
    value c = g->hoisted[g->hoist[condition]];
    /* cmp byte [rsp + slot], 0: its first byte (every lane's, a mask's
     * ones or a bool's 0 or 1) is the condition only for a mask or a
     * one-byte value: an f64 3.0 or an i16 256 has a zero first byte
     * (where(f64(b) + a, x, y), a f64 and b bool one value a row, took y
     * for 3.0; fuzz-diff seed 7101).  Wider values blend. */
    if (!c.mask && size_of(c.dtype) != 1)
        return false;
    byte(b, 0x80); /* (no REX: rsp, a byte operand) */
    modrm_memory(b, 7, at(RSP, NONE, 1, hoisted_disp(g, g->hoist[condition])));
    byte(b, 0);
    end_instruction(b);
    unsigned free = g->free;
    b->k1_of = -1; /* (the zmm body's k1: not known on either side) */
    int to_y = jump_forward(b, c.inverted ? 0x5 : 0x4); /* je y (inverted: jne) */
    g->branching++;
    value x = typed_as(g, kir_child(ir, id, 1), n->dtype);
    unsigned after = g->free;
    int to_end = jump_forward(b, -1);
    land(b, to_y);
    g->free = free;
    b->k1_of = -1;
    value y = typed_as(g, kir_child(ir, id, 2), n->dtype);
    g->branching--;
    if (y.reg != x.reg) {
        vex(b, V_MOVDQU_LOAD, true, false, x.reg, 0, in_register(y.reg), -1); /* vmovdqu */
        give_register(g, y.reg);
    }
    land(b, to_end);
    b->k1_of = -1;
    g->free = after & g->free & ~(1u << x.reg);
    g->branches++;
    *out = (value){x.reg, false, false, n->dtype};
    return true;
}

static value typed(generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    value a[3];
    if (g->failed)
        return (value){0, false, false, n->dtype};
    if (g->hoist && g->hoist[id] >= 0 && !g->hoisting) { /* computed once a run */
        value v = g->hoisted[g->hoist[id]];
        v.reg = take_register(g);
        load_hoisted(g, v.reg, g->hoist[id]);
        return v;
    }
    if (g->shared_uses && is_operation(ir, id) && g->shared_uses[g->shared_class[id]] > 1)
        return shared(g, id, g->shared_class[id], true); /* (computed once, kept) */
    if (ir->value[id].folded >= 0) { /* an integer self-comparison: known */
        int slot = ir->value[id].folded ? ones_constant(g) : zero_constant(g);
        return as_type(g, (value){constant_register(g, slot), true, false, BCG_I8}, n->dtype);
    }
    if (n->op == OP_LITERAL)
        return literal_as(g, id, n->dtype);
    if (is_leaf(ir, id))
        return typed_leaf(g, id);
    bcg_dtype t = expr_operation_type(n);
    switch (n->op) {
    case OP_CAST:
        return typed_as(g, kir_child(ir, id, 0), n->dtype);
    case OP_NOT: case OP_AND: case OP_OR: case OP_LOGICAL_XOR: {
        static const bcg_dtype masks[3] = {BCG_BOOL, BCG_BOOL, BCG_BOOL};
        typed_children(g, id, a, masks);
        if (g->failed)
            return a[0];
        if (n->op == OP_NOT) {
            a[0].inverted = !a[0].inverted;
            return as_type(g, a[0], n->dtype);
        }
        a[1] = mask_to(g, a[1], size_of(a[0].dtype));
        bool inv = a[0].inverted != a[1].inverted;
        if (n->op != OP_LOGICAL_XOR) {
            if (a[1].inverted != a[0].inverted)
                a[1] = flip(g, a[1]);
            inv = a[0].inverted; /* x && y == !(!x || !y) */
            bool use_or = (n->op == OP_OR) != inv;
            op3(g, use_or ? V_POR : V_PAND, true, a[0].reg, a[0].reg, a[1].reg);
        } else {
            op3(g, V_PXOR, true, a[0].reg, a[0].reg, a[1].reg);
        }
        give_register(g, a[1].reg);
        return as_type(g, (value){a[0].reg, true, inv, a[0].dtype}, n->dtype);
    }
    case OP_WHERE: {
        value branched;
        if (where_branch(g, id, &branched))
            return branched;
        bcg_dtype to[3] = {BCG_BOOL, n->dtype, n->dtype};
        typed_children(g, id, a, to);
        if (g->failed)
            return a[0];
        int size = size_of(n->dtype);
        if (n->dtype == BCG_BOOL) /* masks of bytes, true where true */
            for (int k = 1; k < 3; k++) {
                a[k] = mask_to(g, a[k], 1);
                if (a[k].inverted)
                    a[k] = flip(g, a[k]);
            }
        value c = mask_to(g, a[0], size);
        /* blendv: dst = mask ? src2 : src1 */
        int src1 = c.inverted ? a[1].reg : a[2].reg, src2 = c.inverted ? a[2].reg : a[1].reg;
        vex(g->b, V_PBLENDVB, wide_of(g, n->dtype), false, a[1].reg, src1, in_register(src2),
            c.reg << 4);
        give_register(g, c.reg);
        give_register(g, a[2].reg);
        if (n->dtype == BCG_BOOL)
            return (value){a[1].reg, true, false, BCG_I8};
        return (value){a[1].reg, false, false, n->dtype};
    }
    case OP_SHL: case OP_SHR:
        return as_type(g, typed_shift(g, id, t), n->dtype);
    default:
        break;
    }
    if (t == BCG_BOOL && n->op == OP_BITNOT) { /* on bool, logical not */
        a[0] = typed_as(g, kir_child(ir, id, 0), BCG_BOOL);
        a[0].inverted = !a[0].inverted;
        return as_type(g, a[0], n->dtype);
    }
    if (t == BCG_BOOL) /* bools as 0 and 1: eval.c's arithmetic, then != 0 */
        t = BCG_U8;
    if (n->arg_count > 2 || !(is_integer(t) || is_float_lane(t))) {
        g->failed = true;
        return (value){0, false, false, t};
    }
    int literal = literal_operand(g, id, t);
    if (literal >= 0)
        return as_type(g, typed_with_literal(g, id, t, literal), n->dtype);
    value product;
    if (mask_product(g, id, t, &product))
        return as_type(g, product, n->dtype);
    bcg_dtype to[3] = {t, t, t};
    typed_children(g, id, a, to);
    if (g->failed)
        return a[0];
    value v = is_float_lane(t) ? float_operation(g, n, t, a,
                                                 typed_never_nan(ir, kir_child(ir, id, 0)))
                               : integer_operation(g, n, t, a);
    if (!v.mask)
        v.dtype = t;
    return as_type(g, v, n->dtype);
}

/* Whether node ID's value is the same in every lane of a run: its leaves
 * read as one value (stride 0, hoisted locals) or literals. */
static bool invariant(const generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (n->op == OP_LITERAL || ir->value[id].folded >= 0)
        return true;
    if (is_leaf(ir, id))
        return ir->value[id].local || g->layout->stride[n->operand + 1] == 0;
    for (int k = 0; k < n->arg_count; k++)
        if (!invariant(g, kir_child(ir, id, k)))
            return false;
    return true;
}

/* Marks the largest operations under ID (not the root) whose value is
 * the same in every lane: a per-row or per-call value (u8(a > b) * a with
 * a one value: its conversion; 2 + c - b over values) is computed once a
 * run, kept in a stack slot, and loaded by the loop (write_hoisted). */
static void mark_hoisted_by(generator *g, int id, bool (*same)(const void *of, int id),
                            const void *of)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (is_leaf(ir, id) || n->op == OP_LITERAL || ir->value[id].folded >= 0)
        return;
    if (id != 0 && same(of, id) && g->hoist_count < 8) {
        g->hoist[id] = g->hoist_count++;
        return;
    }
    for (int k = 0; k < n->arg_count; k++)
        mark_hoisted_by(g, kir_child(ir, id, k), same, of);
}

static bool same_along_run(const void *g, int id) { return invariant(g, id); }

static void mark_hoisted(generator *g, int id) { mark_hoisted_by(g, id, same_along_run, g); }

/* Whether the subtree under ID calls the C library (exp, log: their rare
 * lanes) or holds a value shared with others (count_uses) below its root. */
static bool float_hoist_refused(const generator *g, int id, bool root)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    /* Exp and log: the fused function's vector polynomial of one value a
     * row, against C's call once a run between the 1-D tiles' calls of the
     * function.  Measured (cc / JIT same process, median of 5, a * f(c) -
     * b, c one value a row, 2^17 elements), refused -> hoisted (the rows
     * form or, runs of at most 3 vectors, the flat form: lower.c
     * per_row_functions): f32 log rows of 16 0.64 -> 1.28, 24 0.78 ->
     * 1.49, 32 0.33 -> 0.50, 40 0.36 -> 0.50, 48 0.40 -> 0.52, 64 0.49 ->
     * 0.64, 128 0.75 -> 0.86, 256 0.93 -> 0.92; f32 exp gains only where
     * the flat form takes it, rows of 16 1.04 -> 1.6, 24 1.33 -> 1.89,
     * and the rows form loses to C's expf from 4 vectors on (32 0.53 ->
     * 0.49, 40 0.65 -> 0.57, 48 0.69 -> 0.64, 64 0.80 -> 0.75, 128 even):
     * its one-value polynomial is a latency chain a row.  f64 exp loses
     * (rows of 24 1.13 -> 0.72, 40 0.87 -> 0.60, 128 0.99 -> 0.83; last
     * session: a + exp(c) - b rows of 112 0.60 -> 0.38) and f64 log does
     * not change form: both stay refused. */
    if (n->op == OP_EXP || n->op == OP_LOG) {
        const plan *p = ir->p;
        if (n->dtype != BCG_F32 || !p || p->loop_count < 1)
            return true;
        if (n->op == OP_EXP && p->extent[p->loop_count - 1] >= 4 * 8)
            return true;
    }
    if (!root && g->shared_uses && shareable(g, id) && g->shared_uses[g->shared_class[id]] > 1)
        return true;
    if (is_leaf(ir, id) || n->op == OP_LITERAL || ir->value[id].folded >= 0)
        return false;
    for (int k = 0; k < n->arg_count; k++)
        if (float_hoist_refused(g, kir_child(ir, id, k), false))
            return true;
    return false;
}

/* The float path's values computed once a run (generator.float_hoist_id):
 * the largest operations under ID (not the root) whose value is the same
 * in every lane and of the lanes' dtype, without the C library's calls
 * or values shared below them.  Measured ((x - m) / sqrt(v + 1e-5), f32
 * rows of 128, m and v one value a row: see the commit). */
static void mark_float_hoisted(generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (is_leaf(ir, id) || n->op == OP_LITERAL || ir->value[id].folded >= 0)
        return;
    if (id != 0 && n->dtype == g->lane && invariant(g, id) && !float_hoist_refused(g, id, true)) {
        if (g->float_hoist_count < FLOAT_HOIST_MAX)
            g->float_hoist_id[g->float_hoist_count++] = id;
        return;
    }
    for (int k = 0; k < n->arg_count; k++)
        mark_float_hoisted(g, kir_child(ir, id, k));
}

/* The values marked by mark_float_hoisted, each computed into its
 * register (at the start of each run: its leaves may move from row to
 * row), its upper half copied for the paired loop's wide bodies (UPPER). */
static void write_float_hoisted(generator *g, bool upper)
{
    int *shared_uses = g->shared_uses; /* (none below a hoisted value; its own computed once) */
    g->shared_uses = NULL;
    for (int j = 0; j < g->float_hoist_count && !g->failed; j++) {
        int r = g->float_hoist_reg[j];
        if (r == 0)
            continue;
        g->free = 0xffffu & ~g->reserved;
        g->float_hoisting = true;
        value v = compute(g, g->float_hoist_id[j], true);
        g->float_hoisting = false;
        if (r < 0) /* (write_function's first pass: the registers it takes) */
            continue;
        vex(g->b, V_MOVU_LOAD, true, false, r, 0, in_register(v.reg), -1);
        if (upper)
            insert_upper(g->b, r, r);
    }
    g->shared_uses = shared_uses;
}

/* The marked values computed (at the start of each run) into their slots. */
static void write_hoisted(generator *g)
{
    for (int id = 0; g->hoist && id < g->ir->node_count && !g->failed; id++) {
        if (g->hoist[id] < 0)
            continue;
        g->free = 0xffffu & ~g->reserved;
        g->hoisting = true;
        /* each computed whole: a value shared with another hoisted one or
         * with the body (vex.c shared) kept in a register here is garbage
         * once the registers are all free again (where(e == 0, a, where(e
         * == 0, e, 2)), e one value a row: the inner where blended by e) */
        int *shared_uses = g->shared_uses;
        g->shared_uses = NULL;
        value v = typed(g, id);
        g->shared_uses = shared_uses;
        g->hoisting = false;
        g->hoisted[g->hoist[id]] = v;
        /* its first element in every lane of the ymm (the value is valid in
         * its low part only), stored twice: the 64 bytes load_hoisted's zmm
         * body reads are both vectors' */
        static const vex_id broadcast[4] = {V_PBROADCASTB, V_PBROADCASTW, V_PBROADCASTD,
                                            V_PBROADCASTQ};
        vex(g->b, broadcast[log2_size(size_of(v.dtype))], true, false, v.reg, 0,
            in_register(v.reg), -1);
        for (int half = 0; half < 2; half++)
            vex(g->b, V_MOVDQU_STORE, true, false, v.reg, 0,
                in_memory(at(RSP, NONE, 1, hoisted_disp(g, g->hoist[id]) + 32 * half)), -1);
    }
}

/* The typed body: the root, into [out + rax * size] in the loop, into the
 * output slot in the tail (a bool root as bytes 0 and 1). */
static void typed_body(generator *g, int out_slot)
{
    g->free = 0xffffu & ~g->reserved;
    if (g->shared_uses) /* every shared value's uses to come */
        memcpy(g->shared_left, g->shared_uses, sizeof *g->shared_left * (size_t)g->ir->node_count);
    memset(g->kept, 0, sizeof g->kept);
    memset(g->loads, 0, sizeof g->loads);
    bcg_dtype t = g->ir->nodes[0]->dtype;
    value v = typed(g, 0);
    if (g->failed)
        return;
    if (v.mask) {
        v = mask_to(g, v, 1);
        if (v.inverted)
            v = flip(g, v);
        op_constant(g, V_PAND, v.reg, v.reg, constant(g, &(uint8_t){1}, 1));
    }
    memory m = g->tail || g->overlap ? at(RSP, NONE, 1, 32 * out_slot)
                                     : at(R11, RAX, size_of(t), 0);
    if (g->streaming && !g->tail && !g->overlap) /* (aligned: write_stream_loop) */
        vex(g->b, V_MOVNTDQ, bytes_of(g, t) == 32, false, v.reg, 0, in_memory(m), -1);
    else
        store_bytes(g, v.reg, m, bytes_of(g, t));
}

/* The widest value of the tree under ID, in bytes (an 8-bit product
 * is computed in its bytes' lanes in an 8-bit tree: byte_product; in
 * wider trees the lanes leave room to widen it). */
static int widest_value(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    int most = size_of(n->dtype);
    if (is_leaf(ir, id) || n->op == OP_LITERAL)
        return most;
    int operation = size_of(expr_operation_type(n));
    if (operation > most)
        most = operation;
    for (int k = 0; k < n->arg_count; k++) {
        int w = widest_value(ir, kir_child(ir, id, k));
        if (w > most)
            most = w;
    }
    return most;
}

/* Whether the tree under ID multiplies (or squares) 8-bit values. */
static bool byte_multiply(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    if (is_leaf(ir, id) || n->op == OP_LITERAL)
        return false;
    if ((n->op == OP_MUL || n->op == OP_SQUARE) && size_of(expr_operation_type(n)) == 1)
        return true;
    for (int k = 0; k < n->arg_count; k++)
        if (byte_multiply(ir, kir_child(ir, id, k)))
            return true;
    return false;
}

/* The microkernel passes the typed function replaces: operations and the
 * conversions of leaves. */
static int typed_operation_count(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    if (is_leaf(ir, id) || n->op == OP_LITERAL)
        return 0;
    int count = 1;
    for (int k = 0; k < n->arg_count; k++) {
        int child = kir_child(ir, id, k);
        count += typed_operation_count(ir, child);
        if (is_leaf(ir, child) && kir_tile_converts(ir, id, k))
            count++;
    }
    return count;
}

/* The body: the root computed and stored, into [out + rax * width] in the
 * loop, into the output slot in the tail. */
static void body(generator *g, int out_slot)
{
    if (g->typed) {
        typed_body(g, out_slot);
        return;
    }
    g->free = 0xffffu & ~g->reserved;
    if (g->shared_uses) /* every shared value's uses to come */
        memcpy(g->shared_left, g->shared_uses, sizeof *g->shared_left * (size_t)g->ir->node_count);
    value v = compute(g, 0, true);
    if (g->tail && g->masked) {
        masked_move(g, g->dbl ? V_MASKMOVPD_STORE : V_MASKMOVPS_STORE, v.reg,
                    at(R11, RAX, g->width, 0), false);
        return;
    }
    memory m = g->tail || g->overlap ? at(RSP, NONE, 1, 32 * out_slot)
                                     : at(R11, RAX, g->width, 0);
    vex(g->b, g->streaming && !g->tail && !g->overlap ? V_MOVNT : V_MOVU_STORE, true, g->dbl,
        v.reg, 0, in_memory(m), -1);
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
        if (g->overlap_slot < 0 || s < g->overlap_slot) /* (not the kept values) */
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

enum { LABEL_LOOP, LABEL_TAIL, LABEL_DONE, LABEL_PLAIN, LABEL_ALIGNED, LABEL_END, LABEL_SINGLE,
       LABEL_OVERLAP, LABEL_SLOTS };
enum { LABEL_PAIRS = LABEL_SLOTS + 1, LABEL_REST }; /* (write_stream_pairs) */
enum { LABEL_LAST_PAIR = LABEL_REST + 1 };         /* (write_function, zmm_ahead) */
enum { LABEL_GROUP = LABEL_LAST_PAIR + 1 };        /* (write_function: a group's last row) */

static bool tree_calls(const kernel_ir *ir);

/* The builder set to write the body twice (builder.dup), as the paired
 * loop of write_function: the second vector's registers r + 8 (or the
 * zmm body), memory one vector on. */
static void begin_pairs(generator *g)
{
    builder *b = g->b;
    int lanes = g->lanes;
    b->dup = true;
    b->dup_wide = g->pair_wide;
    b->dup_zmm = g->zmm;
    b->k1_of = -1;
    b->dup_map = g->pair_registers;
    for (int i = 0; i < g->leaf_count; i++) {
        b->dup_bases |= 1u << g->leaves[i].reg;
        if (!g->leaves[i].broadcast)
            b->dup_disp[g->leaves[i].reg] = lanes * (int32_t)bcg_dtype_size(g->leaves[i].dtype);
    }
    b->dup_bases |= 1u << R11;
    b->dup_disp[R11] = lanes * g->width;
    b->dup_lanes = lanes;
}

/* The streaming root's vectors [rax, rcx) (rcx - rax whole vectors, the
 * output aligned to a vector) when the loop is paired: single vectors up
 * to the output's 64-byte boundary, then two vectors an iteration (one
 * zmm store, or two ymm ones, of a whole 64-byte line: vmovntps zmm needs
 * that alignment), then the last single vector; rsi holds the pairs' end.
 * The single streaming loop (ymm, one vector an iteration) wrote half
 * the vectors an instruction of the plain loop's zmm body (u8 -> f32
 * divisions: vdivps ymm against zmm); on a loaded machine the gain
 * measured within the noise for memory-bound trees, so it is written for
 * the instructions, not for a measured speed-up. */
static void write_stream_pairs(generator *g, int out_slot)
{
    builder *b = g->b;
    int lanes = g->lanes;
    int lead = b->length;
    gpr_memory(b, 0x8d, RDI, at(R11, RAX, g->width, 0)); /* lea rdi, out + rax */
    gpr_test_immediate(b, RDI, 63);
    jump(b, 0x4, LABEL_PAIRS);                /* je pairs */
    g->streaming = true;
    body(g, out_slot);
    g->streaming = false;
    gpr_immediate(b, 0, RAX, lanes);
    gpr_pair(b, 0x39, RAX, RCX);
    jump_back(b, 0x2, lead);                  /* jb lead */
    jump(b, -1, LABEL_TAIL);
    b->label[LABEL_PAIRS] = b->length;
    if ((g->pair_wide || g->zmm) && tree_calls(g->ir))
        for (int r = 0; r < 16; r++) /* (the lead's calls' vzeroupper) */
            if (g->reserved >> r & 1)
                insert_upper(b, r, r);
    gpr_pair(b, 0x89, RSI, RCX);              /* rsi = rax + (rcx - rax) & -2 lanes */
    gpr_pair(b, 0x29, RSI, RAX);
    gpr_immediate(b, 4, RSI, -2 * lanes);
    gpr_pair(b, 0x01, RSI, RAX);
    gpr_pair(b, 0x39, RAX, RSI);
    jump(b, 0x3, LABEL_REST);                 /* jae rest */
    int loop = b->length;
    begin_pairs(g);
    g->streaming = true;
    body(g, out_slot);
    g->streaming = false;
    b->dup = false;
    b->dup_zmm = false;
    gpr_immediate(b, 0, RAX, 2 * lanes);
    gpr_pair(b, 0x39, RAX, RSI);
    jump_back(b, 0x2, loop);                  /* jb loop */
    b->label[LABEL_REST] = b->length;
    gpr_pair(b, 0x39, RAX, RCX);
    jump(b, 0x3, LABEL_TAIL);                 /* jae tail */
    g->streaming = true;
    body(g, out_slot);
    g->streaming = false;
    gpr_immediate(b, 0, RAX, lanes);
    jump(b, -1, LABEL_TAIL);
}

/* A streaming root: elements up to the output's first 32-byte boundary
 * (16 for a typed vector of 16 bytes; at most n) through the slots, then
 * vectors stored with vmovntps (vmovntdq) to the last whole vector; an
 * output not aligned to its elements takes the plain loop (LABEL_PLAIN).
 * The kernel fences after its last call. */
static void write_stream_loop(generator *g, int slots, int out_slot, int n_at)
{
    builder *b = g->b;
    int lanes = g->lanes; /* (32 / width but in a typed tree) */
    byte(b, 0x31);                            /* xor eax, eax */
    byte(b, 0xc0);
    gpr_test_immediate(b, R11, g->width - 1);
    jump(b, 0x5, LABEL_PLAIN);                /* jne plain */
    gpr_pair(b, 0x89, RCX, R11);              /* rcx = (-out & 31) / width */
    gpr_negate(b, RCX);
    gpr_immediate(b, 4, RCX, lanes * g->width - 1); /* (16 bytes a typed vector: & 15) */
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
    if (g->paired && vex_stream_pairs != 0) {
        write_stream_pairs(g, out_slot);
        b->label[LABEL_PLAIN] = b->length;
        return;
    }
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

/* The typed path's tail of a run of at least one vector: its last whole
 * vector, elements [n - lanes, n), computed before the loop into the
 * output's slot (from the inputs as they were: in place, the loop
 * overwrites them) and stored after it (STORE), over elements the loop
 * wrote with the same values; a run shorter than a vector takes the
 * slots (LABEL_SLOTS), one of whole vectors has no tail.  Measured: the
 * slots' copies cost about 20 ns a run. */
static void write_overlap(generator *g, int out_slot, bool store)
{
    builder *b = g->b;
    int lanes = g->lanes;
    if (!store) {
        gpr_pair(b, 0x89, RAX, R10);          /* rax = n - lanes */
        gpr_immediate(b, 5, RAX, lanes);
        jump(b, 0x2, LABEL_OVERLAP);          /* jb: n < lanes */
        if (!g->layout->stream) { /* (the peel moves the vectors: a tail anyway) */
            gpr_test_immediate(b, R10, lanes - 1);
            jump(b, 0x4, LABEL_OVERLAP);      /* je: whole vectors */
        }
        g->overlap = true;
        body(g, out_slot);
        g->overlap = false;
        b->label[LABEL_OVERLAP] = b->length;
        return;
    }
    gpr_immediate(b, 7, R10, lanes);          /* cmp r10, lanes */
    jump(b, 0x2, LABEL_SLOTS);                /* jb slots */
    gpr_pair(b, 0x89, RAX, R10);
    gpr_immediate(b, 5, RAX, lanes);
    int bytes = bytes_of(g, g->ir->nodes[0]->dtype);
    load_bytes(g, 0, at(RSP, NONE, 1, 32 * out_slot), false, g->width, bytes);
    store_bytes(g, 0, at(R11, RAX, g->width, 0), bytes);
    jump(b, -1, LABEL_DONE);
    b->label[LABEL_SLOTS] = b->length;
}

static bool vex_wide_ok(void);
static bool vex_zmm_ok(const kernel_ir *ir);

/* Whether IR's code calls the C library in its rare lanes (exp, log:
 * emit_hard_call, whose vzeroupper zeroes the zmm upper halves that the
 * paired loop's wide divisions and the zmm body read of the registers
 * held through the loop). */
static bool tree_calls(const kernel_ir *ir)
{
    for (int id = 0; id < ir->node_count; id++)
        if (ir->nodes[id]->op == OP_EXP || ir->nodes[id]->op == OP_LOG)
            return true;
    return false;
}

/* The leaves under ID numbered in the order the body first reads them
 * when every operand is loaded into a register (the neediest child
 * first), so operands in place (in_place) keep the leaves' order and the
 * emitted C's vex_in array its order. */
static void number_leaves(generator *g, int id)
{
    const kernel_ir *ir = g->ir;
    const expr_node *n = ir->nodes[id];
    if (g->failed || n->op == OP_LITERAL || ir->value[id].folded >= 0)
        return;
    if (is_leaf(ir, id)) {
        leaf_index(g, id);
        return;
    }
    int order[3], count = need_order(ir, id, order);
    for (int i = 0; i < count; i++)
        number_leaves(g, kir_child(ir, id, order[i]));
}

/* Whether the float tree's tail takes its last whole vector again
 * (float_overlap) for leaf L read in place with a stride, where it went
 * through the stack slots, copied element by element (copy_strided):
 * every stride but -1 in the lanes' dtype, which the masked tail reads,
 * unless another leaf keeps the tail from being masked (an f32 tree over
 * a reversed f32 leaf and one of stride 2: sweep seed 1 case 27, see the
 * commit; VEX_OVERLAP_LANE_STRIDED).  The last vector is computed before
 * the loop from the leaves as they were (in place too) and stored after
 * it.  Measured: where(b != 7, b, a), a f64 rows of 155 with stride 2, b
 * i8 one value a row (see the commit). */
static bool strided_overlap(const leaf *l, bcg_dtype lane)
{
    return leaf_strided(l) &&
           (vex_overlap_lane_strided != 0 || !(l->stride == -1 && l->dtype == lane));
}

/* From a group's last row (moved on by OUTER already) to the next group's
 * first, in elements: the rows form over two loops (vex_layout.group). */
static int64_t group_step(int64_t outer, int64_t outer2, int64_t group)
{
    return outer2 - group * outer;
}

static bool group_step_fits(int64_t outer, int64_t outer2, int64_t group)
{
    int64_t limit = (int64_t)1 << 26;
    if (outer2 > limit || outer2 < -limit || group > limit)
        return false;
    int64_t step = group_step(outer, outer2, group); /* (outer within 2^26 too: checked) */
    return step <= limit && step >= -limit;
}

/* Whether leaf L's pointer moves from row to row, or from group to group
 * of rows (the rows form): then it is held for a row, loaded every row. */
static bool leaf_moves(const leaf *l)
{
    return l->outer != 0 || l->outer2 != 0;
}

/* Held broadcast leaf I into its register (write_function), converted
 * into the lanes' dtype; UPPER: its zmm upper half too (the paired
 * loop's zmm divisions or body). */
static void load_held_leaf(generator *g, int i, bool upper)
{
    builder *b = g->b;
    int r = g->leaf_register[i];
    if (g->leaves[i].dtype != g->lane)
        load_converted(g, r, i, at(g->leaves[i].reg, NONE, 1, 0), false);
    else
        vex(b, g->dbl ? V_BROADCASTSD : V_BROADCASTSS, true, false, r, 0,
            in_memory(at(g->leaves[i].reg, NONE, 1, 0)), -1);
    if (upper)
        insert_upper(b, r, r);
}

static void write_function(generator *g)
{
    builder *b = g->b;
    int lanes = g->lanes;
    g->branches = 0;
    g->byte_literals = 0;
    g->plain_extremes = 0;
    /* a first pass finds the leaves (their registers and slots); the
     * values computed once a run as if held (-1), the registers their own
     * computation takes counted apart (hoist_peak) */
    memset(b, 0, sizeof *b);
    b->pending_rip = -1;
    g->tail = false;
    if (g->typed)
        write_hoisted(g);
    for (int j = 0; j < g->float_hoist_count; j++)
        g->float_hoist_reg[j] = -1;
    g->peak = 0;
    write_float_hoisted(g, false);
    int hoist_peak = g->peak;
    g->peak = 0;
    body(g, 0);
    if (g->failed || b->overflow)
        return;
    int loop_peak = g->peak;
    int slots = 0;
    for (int i = 0; i < g->leaf_count; i++)
        if (!g->leaves[i].broadcast)
            g->leaves[i].slot = slots++;
    int out_slot = slots++;
    /* a float tree whose tail would go through the slots (a leaf of
     * another dtype) takes the last whole vector again too, when its
     * leaves are contiguous (measured: where(2 - a > c + b, 2 - a, c + b),
     * f64 rows of 145 over f32 c, the slots' two rep movsb a row: cc / JIT
     * 0.29 -> 0.35) */
    bool float_overlap = !g->typed && !g->layout->stream;
    for (int i = 0; i < g->leaf_count; i++)
        if (!g->leaves[i].broadcast)
            float_overlap = float_overlap && (g->leaves[i].stride == 1 ||
                                              (vex_overlap_strided != 0 &&
                                               strided_overlap(&g->leaves[i], g->lane)));
    if (float_overlap) { /* (not when the masked tail takes it: g->masked below) */
        bool masked = true;
        for (int i = 0; i < g->leaf_count; i++)
            masked = masked && (g->leaves[i].broadcast ||
                                (g->leaves[i].dtype == g->lane &&
                                 (vex_overlap_lane_strided == 0 || g->leaves[i].stride == 1 ||
                                  g->leaves[i].stride == -1)));
        float_overlap = !masked;
    }
    int overlap_slot = g->typed || float_overlap ? slots++ : -1; /* (write_overlap) */
    g->overlap_slot = overlap_slot;
    g->hoist_base = slots;
    slots += g->typed ? 2 * g->hoist_count : 0; /* (64 bytes each: hoisted_disp) */
    /* the tail loads and stores under a mask (vmaskmovps) when every leaf
     * read along the run is contiguous in the lanes' dtype; else through
     * the stack slots (measured, rows of 20 f32: the slots' rep movsb cost
     * about 20 ns a tail) */
    g->masked = !g->typed; /* (the typed path's tail goes through the slots) */
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
    frame = frame || overlap_slot >= 0; /* (the last vector's slot: write_overlap) */
    int64_t group = rows ? g->layout->group : 0;
    int n_at = 32 * slots, rows_at = n_at + 8, group_at = n_at + 16;
    int frame_bytes = 32 * slots + (stream || rows ? 16 : 0) + (group > 0 ? 16 : 0);
    /* the tail's body, written once more here for the registers it needs
     * (its loads under a mask take one more than the loop's) */
    g->mask_slot = out_slot;
    g->peak = 0;
    g->tail = true;
    body(g, out_slot);
    g->tail = false;
    if (g->failed || b->overflow)
        return;
    int tail_peak = g->peak;
    /* the paired loop: two vectors an iteration, the second copy's
     * registers r + 8 (builder.dup), so the body holds at most 8.  Leaves
     * read in place (stride -1, +-2) too, measured same-run against the
     * single loop: f32(b - a) / (b) u8 b reversed 0.79x the time, sqrt(a)
     * * b + 1 f32 a stride -2 0.78x, where(a > b, a, b) + 1 u8 reversed
     * 0.89x; f32(minimum(b, i32(5 * b))) / (a) i16 b reversed 1.04x */
    bool dup = !g->single && loop_peak <= 8 && vex_pairing != 0;
    /* (not with leaves of other strides: spaced_load's loads and shuffles bound the
     * loop; measured paired, rdi on by a vector, against single, a * 3 + b
     * over 8000: i8, i16, f32, u8 of strides 3 to 12 within 10%, f64 of
     * -3 1.7x slower) */
    for (int i = 0; i < g->leaf_count; i++)
        dup = dup && (!leaf_strided(&g->leaves[i]) ||
                      (vex_pairing_strided != 0 && g->leaves[i].stride >= -2 &&
                       g->leaves[i].stride <= 2));
    g->paired = dup;
    unsigned body_registers = (1u << loop_peak) - 1;
    unsigned allowed = dup ? 0xffffu & ~body_registers & ~(body_registers << 8)
                           : 0xffffu & ~body_registers;
    int room = 16 - (tail_peak > loop_peak ? tail_peak : loop_peak);
    if (16 - hoist_peak < room)
        room = 16 - hoist_peak;
    /* the constants, then the broadcast leaves of the lane dtype (or
     * converted into it), in the registers the body leaves free, loaded
     * once before the loop (ymm0 stays the body's: the tail zeroes with
     * it) */
    int constants = b->pool_count;
    unsigned char pool[POOL_MAX][32];
    memcpy(pool, b->pool, sizeof pool);
    int next = 15;
    /* (first the values computed once a run, whose body they spare; the
     * body was written for them all: without a register each, the
     * function is written again without any, vex_build) */
    for (int j = 0; j < g->float_hoist_count; j++) {
        while (next > 0 && !(allowed >> next & 1))
            next--;
        if (next <= 0 || room <= 0) {
            g->failed = g->float_hoist_short = true;
            return;
        }
        g->float_hoist_reg[j] = next;
        g->reserved |= 1u << next;
        next--;
        room--;
    }
    for (int i = 0; i < constants + g->leaf_count && room > 0; i++) {
        if (i >= constants) {
            const leaf *l = &g->leaves[i - constants];
            if (g->typed || !l->broadcast || (leaf_moves(l) && vex_hold_row_values == 0) ||
                (l->operand < 0 && vex_hold_locals == 0) ||
                !(l->dtype == g->lane || leaf_converts(l->dtype, g->lane)))
                continue;
        }
        while (next > 0 && !(allowed >> next & 1))
            next--;
        if (next <= 0)
            break;
        if (i < constants)
            g->constant_register[i] = next;
        else
            g->leaf_register[i - constants] = next;
        g->reserved |= 1u << next;
        next--;
        room--;
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
    for (int i = 0; i < g->leaf_count; i++) /* the broadcast leaves held */
        if (g->leaf_register[i] > 0 && !leaf_moves(&g->leaves[i]))
            load_held_leaf(g, i, false);
    bool wide = dup && vex_wide_ok();
    bool zmm = dup && !g->no_zmm && vex_zmm_ok(g->ir);
    g->zmm = zmm;
    g->pair_wide = wide;
    g->pair_registers = body_registers;
    for (int r = 0; (wide || zmm) && r < 16; r++) /* their zmm upper halves: the same */
        if (g->reserved >> r & 1)
            insert_upper(b, r, r);
    for (int i = 0; zmm && i < constants; i++) /* (zmm_paired: 128-bit operations on them) */
        if (g->constant_register[i] > 0 && periodic(pool[i], 16))
            b->halves_equal |= 1u << g->constant_register[i];
    for (int i = 0; zmm && i < g->leaf_count; i++) /* (one value in every lane) */
        if (g->leaf_register[i] > 0)
            b->halves_equal |= 1u << g->leaf_register[i];
    for (int j = 0; zmm && j < g->float_hoist_count; j++)
        if (g->float_hoist_reg[j] > 0)
            b->halves_equal |= 1u << g->float_hoist_reg[j];
    bool ahead = false; /* (zmm_ahead) */
    for (int i = 0; i < g->leaf_count; i++) { /* strided leaves' permutations */
        g->zmm_index[i] = false;
        g->zmm_last_index[i] = -1;
        if (zmm)
            zmm_index_load(g, i);
        ahead = ahead || g->zmm_last_index[i] >= 0;
    }
    if (frame)
        gpr_immediate(b, 5, RSP, frame_bytes); /* sub rsp, frame */
    int row = 0;
    if (rows) { /* rcx, the row count, kept in the frame */
        gpr_memory(b, 0x89, RCX, at(RSP, NONE, 1, rows_at));
        if (group > 0) { /* mov qword [group], GROUP: the rows left in the group */
            gpr_memory(b, 0xc7, 0, at(RSP, NONE, 1, group_at));
            word32(b, (int32_t)group);
        }
        gpr_pair(b, 0x85, RCX, RCX);
        jump(b, 0x4, LABEL_END);              /* je end */
        row = b->length;
    }
    if (g->typed)
        write_hoisted(g);
    for (int i = 0; rows && i < g->leaf_count; i++) /* one value a row: held for the row */
        if (g->leaf_register[i] > 0 && leaf_moves(&g->leaves[i]))
            load_held_leaf(g, i, wide || zmm);
    write_float_hoisted(g, wide || zmm);
    if (overlap_slot >= 0)
        write_overlap(g, overlap_slot, false);
    if (stream)
        write_stream_loop(g, slots, out_slot, n_at);
    if ((wide || zmm) && (rows || stream || overlap_slot >= 0) && tree_calls(g->ir))
        for (int r = 0; r < 16; r++) /* (again: the calls' vzeroupper above or in the last row) */
            if (g->reserved >> r & 1)
                insert_upper(b, r, r);
    gpr_pair(b, 0x89, RCX, R10);              /* mov rcx, r10 */
    if (ahead) /* the loop's pairs: an element after each (zmm_ahead) */
        gpr_immediate(b, 5, RCX, 1);          /* sub rcx, 1 */
    gpr_immediate(b, 4, RCX, dup ? -2 * lanes : -lanes); /* and rcx, -lanes (paired: -2 lanes) */
    byte(b, 0x31);                            /* xor eax, eax */
    byte(b, 0xc0);
    gpr_pair(b, 0x85, RCX, RCX);              /* test rcx, rcx */
    jump(b, 0x4, ahead ? LABEL_LAST_PAIR : dup ? LABEL_SINGLE : LABEL_TAIL); /* je tail */
    b->label[LABEL_LOOP] = b->length;
    g->tail = false;
    if (dup) { /* both vectors' body, then at most one vector left */
        b->dup = true;
        b->dup_wide = wide;
        b->dup_zmm = zmm;
        b->k1_of = -1;
        b->dup_map = body_registers;
        for (int i = 0; i < g->leaf_count; i++) {
            b->dup_bases |= 1u << g->leaves[i].reg;
            if (!g->leaves[i].broadcast)
                b->dup_disp[g->leaves[i].reg] =
                    lanes * (int32_t)bcg_dtype_size(g->leaves[i].dtype);
        }
        b->dup_bases |= 1u << R11;
        b->dup_disp[R11] = lanes * g->width;
        b->dup_lanes = lanes;
    }
    g->zmm_ahead = ahead;
    body(g, out_slot);
    g->zmm_ahead = false;
    b->dup = false;
    b->dup_zmm = false;
    gpr_immediate(b, 0, RAX, dup ? 2 * lanes : lanes); /* add rax, lanes */
    gpr_pair(b, 0x39, RAX, RCX);              /* cmp rax, rcx */
    jump(b, 0x2, LABEL_LOOP);                 /* jb loop */
    if (ahead) { /* the last pair, when the run ends with it */
        b->label[LABEL_LAST_PAIR] = b->length;
        gpr_pair(b, 0x89, RCX, R10);          /* mov rcx, r10 */
        gpr_immediate(b, 4, RCX, -2 * lanes); /* and rcx, -2 lanes */
        gpr_pair(b, 0x39, RAX, RCX);          /* cmp rax, rcx */
        jump(b, 0x3, LABEL_SINGLE);           /* jae single */
        begin_pairs(g);
        body(g, out_slot);
        b->dup = false;
        b->dup_zmm = false;
        gpr_immediate(b, 0, RAX, 2 * lanes);  /* add rax, 2 lanes */
    }
    if (dup) {
        b->label[LABEL_SINGLE] = b->length;
        gpr_pair(b, 0x89, RCX, R10);          /* mov rcx, r10 */
        gpr_immediate(b, 4, RCX, -lanes);     /* and rcx, -lanes */
        gpr_pair(b, 0x39, RAX, RCX);          /* cmp rax, rcx */
        jump(b, 0x3, LABEL_TAIL);             /* jae tail */
        body(g, out_slot);
        gpr_immediate(b, 0, RAX, lanes);      /* add rax, lanes */
    }
    b->label[LABEL_TAIL] = b->length;
    gpr_pair(b, 0x39, RAX, R10);              /* cmp rax, r10 */
    jump(b, 0x3, LABEL_DONE);                 /* jae done */
    if (overlap_slot >= 0)
        write_overlap(g, overlap_slot, true);
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
        if (group > 0) { /* a group's last row: on to the next group's first */
            gpr_memory(b, 0x8b, RCX, at(RSP, NONE, 1, group_at));
            gpr_immediate(b, 5, RCX, 1);
            gpr_memory(b, 0x89, RCX, at(RSP, NONE, 1, group_at));
            jump(b, 0x5, LABEL_GROUP);        /* jne group */
            gpr_memory(b, 0xc7, 0, at(RSP, NONE, 1, group_at));
            word32(b, (int32_t)group);
            for (int i = 0; i < g->leaf_count; i++)
                if (group_step(g->leaves[i].outer, g->leaves[i].outer2, group))
                    gpr_immediate(b, 0, g->leaves[i].reg,
                                  (int32_t)(group_step(g->leaves[i].outer, g->leaves[i].outer2,
                                                       group) *
                                            (int64_t)bcg_dtype_size(g->leaves[i].dtype)));
            if (group_step(g->layout->out_outer, g->layout->out_outer2, group))
                gpr_immediate(b, 0, R11,
                              (int32_t)(group_step(g->layout->out_outer, g->layout->out_outer2,
                                                   group) *
                                        g->width));
            b->label[LABEL_GROUP] = b->length;
        }
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

int vex_wide = -1;
int vex_pairing = -1;
int vex_other_strides = -1;
int vex_pairing_strided = -1;
int vex_pairing_rare = -1;
int vex_hold_locals = -1;
int vex_stream_pairs = -1;
int vex_overlap_strided = -1;
int vex_overlap_lane_strided = -1;
int vex_medium_strided_rows = -1;
int vex_row_groups = -1;
int vex_strided_copy = -1;
int vex_hold_row_values = -1;

/* Whether the paired loop may join its divisions into zmm ones (vex_wide). */
static bool vex_wide_ok(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static int ok = -1; /* a data race that writes the same value */
    if (vex_wide >= 0)
        return vex_wide == 1;
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx512f") ? 1 : 0;
    }
    return ok == 1;
#else
    return vex_wide == 1;
#endif
}

int vex_zmm = -1;

/* Whether IR's paired loop may be one zmm body (zmm_paired): the CPU has
 * AVX-512F, BW, DQ and VL (vex_zmm -1) or a test says so (1), and the tree
 * calls nothing (exp's and log's rare lanes: a call keeps ymm halves). */
static bool vex_zmm_ok(const kernel_ir *ir)
{
    if (vex_zmm == 0)
        return false;
    for (int id = 0; id < ir->node_count; id++)
        if (ir->nodes[id]->op == OP_EXP || ir->nodes[id]->op == OP_LOG)
            return false;
    if (vex_zmm == 1)
        return true;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static int ok = -1; /* a data race that writes the same value */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")
                 ? 1
                 : 0;
    }
    return ok == 1;
#else
    return false;
#endif
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

/* Whether IR's root tree takes the typed path (an integer or mixed tree). */
static bool tree_typed(const kernel_ir *ir)
{
    generator g;
    memset(&g, 0, sizeof g);
    g.ir = ir;
    g.lane = ir->nodes[0]->dtype;
    g.dbl = g.lane == BCG_F64;
    return !is_float_lane(g.lane) || !supported(&g, 0, true);
}

bool vex_hoists_per_run(const kernel_ir *ir) { return tree_typed(ir); }

int vex_float_hoist = -1;

/* (as mark_float_hoisted, from the levels: constant along the run is a
 * level short of the elements') */
static bool float_hoists_under(const kernel_ir *ir, int id, bcg_dtype lane, int *count)
{
    const expr_node *n = ir->nodes[id];
    if (is_leaf(ir, id) || n->op == OP_LITERAL || ir->value[id].folded >= 0)
        return true;
    if (id != 0 && ir->value[id].level < ir->per_element) {
        generator g;
        memset(&g, 0, sizeof g);
        g.ir = ir;
        return n->dtype == lane && !float_hoist_refused(&g, id, true) &&
               ++*count <= FLOAT_HOIST_MAX;
    }
    for (int k = 0; k < n->arg_count; k++)
        if (!float_hoists_under(ir, kir_child(ir, id, k), lane, count))
            return false;
    return true;
}

bool vex_float_hoists(const kernel_ir *ir)
{
    int count = 0;
    return vex_float_hoist != 0 && !tree_typed(ir) &&
           float_hoists_under(ir, 0, ir->nodes[0]->dtype, &count);
}

int vex_lanes(const kernel_ir *ir)
{
    if (tree_typed(ir))
        return 32 / widest_value(ir, 0);
    return ir->nodes[0]->dtype == BCG_F64 ? 4 : 8;
}

bool vex_vector_tail(const kernel_ir *ir, bcg_dtype dtype, int64_t stride)
{
    if (tree_typed(ir)) /* the last whole vector again (write_overlap) */
        return true;
    if (stride != 0 && stride != 1 && !(stride == -1 && dtype == ir->nodes[0]->dtype))
        return vex_overlap_strided != 0 && !ir->stream; /* (strided_overlap) */
    return stride == 0 || ((stride == 1 || stride == -1) && dtype == ir->nodes[0]->dtype);
}

/* Whether the tree is a leaf copied from a reversed run (a + 0 folded)
 * of two vectors or more: the microkernel copies it element by element,
 * the fused code a vector at a time with a vpshufb and a vpermq (a + 0,
 * i16 (98, 62, 28, 3) rows of 84 reversed, same process: 85 -> 35 us,
 * cc / JIT 0.34 -> 0.67).  Shorter runs keep the microkernel: the fused
 * code's tail then copies through a stack slot element by element (i8
 * runs of 20: 3.3 -> 9.6 us). */
static bool reversed_copy(const kernel_ir *ir, const vex_layout *layout)
{
    const plan *p = ir->p;
    if (ir->nodes[0]->op != OP_OPERAND || ir->value[0].local || !p || p->loop_count < 1 ||
        p->extent[p->loop_count - 1] < 2 * (32 / size_of(ir->nodes[0]->dtype)))
        return false;
    /* (one run alone: the microkernel's copy measured as fast or faster,
     * i16 of 2860 0.83 against 0.72, of 60000 even) */
    if (!layout->outer && p->loop_count < 2)
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && layout->stride[k] == -1)
            return true;
    return false;
}

/* Whether the tree is a leaf copied from runs read with a stride of +-2
 * or +-3 (minimum(a, a) folded) of two vectors or more: the fused code
 * reads a vector with two loads and a shuffle or two (strided_load,
 * other_stride_load), the cast microkernel element by element (f32
 * stride 2, 69455 elements: see the commit).  Streaming ones too: past
 * BCG_STREAM_AUTO_BYTES they took the scalar loop (i32 (16992, 287) at
 * stride 2: cc/JIT 0.16 -> 0.87; f32 5M at -2: 0.12 -> 0.83; i16 9M at
 * 3: 0.31 -> 1.39).  VEX_STRIDED_COPY 0: not (measurements). */
static bool strided_copy(const kernel_ir *ir, const vex_layout *layout)
{
    const plan *p = ir->p;
    if (vex_strided_copy == 0 || ir->nodes[0]->op != OP_OPERAND || ir->value[0].local || !p ||
        p->loop_count < 1 ||
        p->extent[p->loop_count - 1] < 2 * (32 / size_of(ir->nodes[0]->dtype)))
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && layout->stride[k] != 0 && layout->stride[k] != 1 &&
            layout->stride[k] != -1 && layout->stride[k] >= -3 && layout->stride[k] <= 3)
            return true;
    return false;
}

bcg_status vex_build(arena *a, const kernel_ir *ir, const vex_layout *layout, vex_function **out)
{
    *out = NULL;
    bcg_dtype lane = ir->nodes[0]->dtype;
    if (ir->root_count != 1 || ir->reduce || ir->out_dtype != lane)
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
    g->lanes = 32 / g->width;
    g->b = b;
    const expr_node *root = ir->nodes[0];
    bool copy = reversed_copy(ir, layout) || strided_copy(ir, layout);
    if ((root->op == OP_OPERAND && !copy) || root->op == OP_LITERAL)
        return BCG_OK;
    /* one operation of contiguous leaves gains nothing from fusion: its
     * microkernel is as fast; one that reads a leaf with a stride other
     * than 0 and 1 in place makes one pass where the microkernel gathers
     * (scalar) */
    bool strided = false;
    for (int k = 1; k <= ir->input_count; k++)
        strided = strided || (ir->input_used[k - 1] && layout->stride[k] != 0 &&
                              layout->stride[k] != 1);
    /* nor does the rows form with a leaf whose rows lie otherwise than the
     * output's (reversed rows, a sub-view's rows): read in place, where the
     * alternatives gather it into tiles first or call a microkernel a run
     * (b * (a + a), the sum one value a tile, b i8 rows of 297 in reverse
     * order: cc / JIT 0.45 with the gathers, 0.59 a call a run, 1.0 fused;
     * see the commit; not the same row every row, which the tiles gather
     * once: a + b, a f64 (n, 1, 12) against b (n, 51, 12), 1.2-1.3 with
     * the gathers, 1.03 fused) */
    for (int k = 1; layout->outer && k <= ir->input_count; k++)
        strided = strided || (ir->input_used[k - 1] && layout->stride[k] == 1 &&
                              layout->outer[k] != 0 && layout->outer[k] != layout->out_outer);
    /* nor with a leaf one value a row that changes from row to row (b of
     * a + b, b (n, 1)): held in a register a row, where the tiles gather a
     * whole tile of its copies every tile and the microkernel reads that
     * tile again */
    for (int k = 1; layout->outer && k <= ir->input_count; k++)
        strided = strided || (ir->input_used[k - 1] && layout->stride[k] == 0 &&
                              layout->outer[k] != 0);
    vex_layout plain = *layout;
    if (tree_typed(ir)) { /* integer or mixed */
        /* (the typed path reads its leaves contiguous, as one value or in
         * place with a stride vex_reads_stride allows, one run a call, and
         * stores plainly: the caller gathers the others) */
        for (int k = 1; k <= ir->input_count; k++)
            if (ir->input_used[k - 1] && layout->stride[k] != 0 &&
                (layout->stride[k] < -2 || layout->stride[k] > 2) &&
                !vex_reads_stride(ir, BCG_U8, layout->stride[k]))
                return BCG_OK;
        g->layout = &plain;
        g->typed = true;
        g->width = size_of(lane);
        g->lanes = 32 / widest_value(ir, 0);
        plain.stream = layout->stream && g->lanes * g->width >= 16; /* (vmovntdq) */
        g->hoist = arena_alloc(a, sizeof *g->hoist * (size_t)ir->node_count);
        g->hoisted = arena_alloc(a, sizeof *g->hoisted * 8);
        if (!g->hoist || !g->hoisted)
            return BCG_ERR_NOMEM;
        for (int id = 0; id < ir->node_count; id++)
            g->hoist[id] = -1;
        mark_hoisted(g, 0);
        if (typed_operation_count(ir, 0) < (copy ? 0 : strided ? 1 : 2)) /* (as below) */
            return BCG_OK;
    } else if (operation_count(ir, 0, lane) < (copy ? 0 : strided ? 1 : 2)) {
        return BCG_OK;
    }
    /* (the outer strides move the pointers by an add of 32 bits) */
    for (int k = 1; layout->outer && k <= ir->input_count; k++)
        if (layout->outer[k] > (1 << 26) || layout->outer[k] < -(1 << 26))
            return BCG_OK;
    if (layout->out_outer > (1 << 26) || layout->out_outer < -(1 << 26))
        return BCG_OK;
    if (layout->outer && layout->group > 0) { /* (as the steps from group to group) */
        if (layout->group > INT32_MAX ||
            !group_step_fits(layout->out_outer, layout->out_outer2, layout->group))
            return BCG_OK;
        for (int k = 1; k <= ir->input_count; k++)
            if (!group_step_fits(layout->outer[k], layout->outer2[k], layout->group))
                return BCG_OK;
    }
    { /* the values the tree computes more than once */
        int count = ir->node_count;
        g->shared_uses = arena_alloc(a, sizeof *g->shared_uses * (size_t)count);
        g->shared_left = arena_alloc(a, sizeof *g->shared_left * (size_t)count);
        g->shared_value = arena_alloc(a, sizeof *g->shared_value * (size_t)count);
        g->shared_class = arena_alloc(a, sizeof *g->shared_class * (size_t)count);
        if (!g->shared_uses || !g->shared_left || !g->shared_value || !g->shared_class)
            return BCG_ERR_NOMEM;
        memset(g->shared_uses, 0, sizeof *g->shared_uses * (size_t)count);
        for (int id = 0; id < count; id++) {
            g->shared_class[id] = id;
            for (int other = 0; other < id && g->shared_class[id] == id; other++)
                if (g->shared_class[other] == other && shareable(g, other) &&
                    shareable(g, id) && ir->value[other].folded < 0 &&
                    ir->value[id].folded < 0 && ir->nodes[other]->op == ir->nodes[id]->op &&
                    fold_same_tree(ir->nodes[other], ir->nodes[id]))
                    g->shared_class[id] = other;
        }
        count_uses(g, 0);
        bool any = false;
        for (int id = 0; id < count; id++)
            any = any || g->shared_uses[id] > 1;
        if (!any)
            g->shared_uses = NULL;
    }
    number_leaves(g, 0);
    if (!g->typed && vex_float_hoist != 0)
        mark_float_hoisted(g, 0);
    write_function(g);
    if (g->failed && g->float_hoist_short) { /* again, each computed in the body */
        g->failed = g->float_hoist_short = false;
        g->float_hoist_count = 0;
        g->reserved = 0;
        g->peak = 0;
        memset(g->constant_register, 0, sizeof g->constant_register);
        memset(g->leaf_register, 0, sizeof g->leaf_register);
        write_function(g);
    }
    if (g->failed && g->shared_uses) { /* (kept values took the registers) again, each computed */
        g->failed = false;
        g->shared_uses = NULL;
        g->reserved = 0;
        g->peak = 0;
        memset(g->constant_register, 0, sizeof g->constant_register);
        memset(g->leaf_register, 0, sizeof g->leaf_register);
        write_function(g);
    }
    if (b->zmm_bad && !b->dup_bad && !g->failed && !b->overflow) { /* again, ymm pairs */
        g->no_zmm = true;
        g->reserved = 0;
        g->peak = 0;
        memset(g->constant_register, 0, sizeof g->constant_register);
        memset(g->leaf_register, 0, sizeof g->leaf_register);
        write_function(g);
    }
    if (b->dup_bad && !g->failed && !b->overflow) { /* again, one vector an iteration */
        g->single = true;
        g->reserved = 0;
        g->peak = 0;
        memset(g->constant_register, 0, sizeof g->constant_register);
        memset(g->leaf_register, 0, sizeof g->leaf_register);
        write_function(g);
    }
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
    f->stream = g->layout->stream;
    f->typed = g->typed;
    f->paired = g->paired;
    f->zmm = g->paired && g->zmm;
    for (int i = 0; f->zmm && i < g->leaf_count; i++)
        f->zmm_ahead = f->zmm_ahead || (g->zmm_index[i] && g->zmm_last_index[i] >= 0);
    f->shared = g->shared_uses != NULL;
    f->rows = g->layout->outer != NULL;
    for (int j = 0; j < g->float_hoist_count; j++)
        if (g->float_hoist_reg[j] > 0)
            f->float_hoist_node[f->float_hoisted++] = g->float_hoist_id[j];
    f->branches = g->branches;
    f->byte_literals = g->byte_literals;
    f->plain_extremes = g->plain_extremes;
    *out = f;
    return BCG_OK;
}

/* ---- small kernels: the whole kernel as straight-line code ------------------------------
 *
 * An output of at most VEX_SMALL_MAX elements is written by one function
 * of the kernel's own signature,
 *
 *     void f(void *out, const void *const *in)    (kernel_fn; in[k]: input k)
 *
 * with no loop at all: the shapes and strides are constants, so for every
 * output vector (8 f32 or 4 f64 lanes, the elements in plan order) the
 * element offset of every lane of every operand is known here.  Each
 * operand's lanes are loaded by the cheapest exact way:
 *
 *     all lanes one element         a broadcast (the tile code's own)
 *     contiguous                    one load at a constant displacement
 *     within a window of 2, 4 or 8  a broadcast or load of the window and a
 *       elements the operand reads    vpermps (the window's elements are
 *                                     all read by the kernel, so they lie
 *                                     in the operand)
 *     within lanes elements, not    vmaskmovps of the elements needed (masked
 *       all read (the last vector,    lanes never fault), and a vpermps
 *       rows shorter than a vector)
 *     within two vectors' width     two of those, blended
 *     anything else                 the lanes needed one by one (vmovss +
 *                                     vinsertps, vmovsd + vmovhpd: cheaper
 *                                     than vgatherdps here)
 *
 * and, for an operand converted on loading (small integers, bool, f32 in
 * f64 lanes), the lanes copied one by one into a stack slot the tile
 * code then loads as a contiguous vector.  The tree itself is compute()'s,
 * exactly as in a tile (generator.small only redirects leaf_memory and
 * the lane-dtype loads).  The root is stored contiguously (vmovups, or
 * vmaskmovps for the last partial vector), permuted into a contiguous
 * window, or lane by lane.  Nothing outside the operands' elements is read
 * or written.  In place: a vector reads the target's elements it writes
 * before it stores them, and no other vector reads them.
 *
 * Everything is 32-bit chunks: a f64 lane is two, so permutes and masks
 * use the f32 instructions (no VEX.W1 forms). */

#define SMALL_TRANSCENDENTALS 4

enum small_mode { SMALL_UNIFORM, SMALL_CONTIGUOUS, SMALL_SLOT, SMALL_WINDOW, SMALL_MASKED,
                  SMALL_TWO, SMALL_GATHER };

typedef struct small_load_plan {
    enum small_mode mode;
    int64_t first;          /* the element the load's displacement points at */
    int window;             /* SMALL_WINDOW: elements loaded (2, 4 or lanes) */
    uint32_t index[8];      /* WINDOW, MASKED, GATHER: per 32-bit chunk; TWO: from
                               the first window */
    uint32_t mask[8];       /* MASKED, TWO: the chunks loaded (of the first window) */
    uint32_t index2[8];     /* TWO: the second window's (first + lanes) */
    uint32_t mask2[8];
    uint32_t from2[8];      /* TWO: the result's chunks from the second */
    bool permute;           /* WINDOW, MASKED: the chunks need vpermps */
    int slot;               /* SLOT: the stack slot */
} small_load_plan;

typedef struct small_vector {
    int count;              /* the vector's lanes that are output elements */
    small_load_plan leaf[LEAF_MAX];
    /* integer and mixed trees (small_typed_load): leaf i's elements for the
     * vector's lanes, and the kernel they belong to */
    const int64_t *offset[LEAF_MAX];
    const struct small_kernel *kernel;
    bool staged[LEAF_MAX];  /* leaf i's lanes are in its slot (small_stage) */
    int pattern[LEAF_MAX];  /* >= 0: leaf i's lanes are in this slot (the flat form's
                               patterns, small_patterns) */
} small_vector;

typedef struct small_kernel {
    generator *g;
    const plan *p;
    int64_t *offset;        /* [k * elements + e]: plan operand k's element for element e */
    int64_t **touched;      /* per plan operand: its elements read, sorted, unique */
    int *touched_count;
    int slots;              /* stack slots (32 bytes each) */
    bool two;               /* SMALL_TWO loads allowed (they take many constants) */
    int leaf_slot[LEAF_MAX];
    int levels;             /* the plan's outer loops run as loops around (0, 1 or 2;
                               the flat form: any number) */
    int counter_slot;       /* the flat form's level loops but the innermost two:
                               their counters in slots from this one (small_counter) */
    int64_t body;           /* the straight-line code of this many elements (plan order) */
    /* transcendentals (small_transcendentals): node, its microkernel, its buffer */
    int transcendental_count;
    int transcendental[SMALL_TRANSCENDENTALS];
    uint64_t function[SMALL_TRANSCENDENTALS];
    bool polynomial[SMALL_TRANSCENDENTALS]; /* f32: the microkernel's polynomial (the
                               flat form in place of tiles: small_few_values), not
                               the C library's through small_libm_f32 */
    int32_t buffer[SMALL_TRANSCENDENTALS]; /* its offset from rsp */
    int32_t frame;          /* bytes below the saved registers: the buffers */
    int uses[LEAF_MAX];     /* (typed) the tree's reads of leaf i */
    /* an operand whose elements read span less than 16 bytes: copied once
     * into slot tiny_slot[i] (-1: none) from element tiny_first[i] */
    int tiny_slot[LEAF_MAX];
    int64_t tiny_first[LEAF_MAX];
    int64_t *identity;      /* 0, 1, ... n - 1: a buffer's elements */
    /* a transcendental's argument computed once per value of the loops
     * its operands vary along (small_hoist): VALUES entries in its buffer,
     * element e's entry entry_of[j][e], and leaf i's elements when entry v
     * is computed argument[j][i * values + v] */
    kernel_ir *copy;        /* g->ir, whose locals small_transcendentals lifts */
    int64_t values[SMALL_TRANSCENDENTALS];
    /* the flat form: a transcendental that varies along a level loop,
     * computed again for every body (in the innermost level loop, and
     * for the rows left over its first remainder_values entries) */
    bool per_body[SMALL_TRANSCENDENTALS];
    int64_t remainder_values[SMALL_TRANSCENDENTALS];
    int64_t *entry_of[SMALL_TRANSCENDENTALS];
    int64_t *argument[SMALL_TRANSCENDENTALS];
    /* the flat form (vex_build_flat): after the innermost level's loop,
     * straight-line code for the first REMAINDER elements of the body
     * again (the rows left over), with the elements each operand reads
     * there (windows within them only) */
    bool flat;              /* the flat form (vex_build_flat) */
    int64_t remainder;
    int64_t **remainder_touched;
    int *remainder_touched_count;
    /* a leaf constant along the flat form's loop (a row the same every
     * row): its vectors of the body that take more than a load, once
     * before the loop into slots pattern_slot[i] + vector (bit vector of
     * pattern_mask[i]); pattern_slot -1: none */
    int pattern_slot[LEAF_MAX];
    uint64_t pattern_mask[LEAF_MAX];
} small_kernel;

/* A VEX instruction by its fields (the forms vex_rows does not hold). */
static void vex_form_w(builder *b, int pp, int map, int opcode, bool wide, bool w1, int reg,
                       int src, rm_operand rm, int imm)
{
    int r = reg >> 3 & 1, x = rm.mem && rm.m.index != NONE ? rm.m.index >> 3 & 1 : 0;
    int bb = rm.mem ? (rm.m.base >= 0 ? rm.m.base >> 3 & 1 : 0) : rm.reg >> 3 & 1;
    int last = (w1 ? 0x80 : 0) | (~src & 15) << 3 | (wide ? 4 : 0) | pp;
    if (!x && !bb && map == 1 && !w1) {
        byte(b, 0xc5);
        byte(b, (!r) << 7 | last);
    } else {
        byte(b, 0xc4);
        byte(b, (!r) << 7 | (!x) << 6 | (!bb) << 5 | map);
        byte(b, last);
    }
    byte(b, opcode);
    if (rm.mem)
        modrm_memory(b, reg, rm.m);
    else
        modrm_register(b, reg, rm.reg);
    if (imm >= 0)
        byte(b, imm);
    end_instruction(b);
}

static void vex_form(builder *b, int pp, int map, int opcode, bool wide, int reg, int src,
                     rm_operand rm, int imm)
{
    vex_form_w(b, pp, map, opcode, wide, false, reg, src, rm, imm);
}

/* (pp, map, opcode) of the forms above: all 66 0F38 or 66 0F3A, W0 */
#define VPERMPS 1, 2, 0x16
#define VBROADCASTF128 1, 2, 0x1a
#define VMASKMOVPS_LOAD 1, 2, 0x2c
#define VMASKMOVPS_STORE 1, 2, 0x2e
#define VEXTRACTF128 1, 3, 0x19
#define VEXTRACTPS 1, 3, 0x17
#define VMOVSS_STORE 2, 1, 0x11
#define VMOVSD_STORE 3, 1, 0x11
#define VMOVHPS_STORE 0, 1, 0x17

/* mov between eax (al, ax, rax: SIZE bytes) and M; a load zero-extends. */
static void scalar_move(builder *b, int size, bool store, memory m)
{
    int rex_bits = (size == 8 ? 8 : 0) | (m.base >= 8 ? 1 : 0);
    if (size == 2 && store)
        byte(b, 0x66);
    if (rex_bits)
        byte(b, 0x40 | rex_bits);
    if (!store && size <= 2) {
        byte(b, 0x0f);
        byte(b, size == 1 ? 0xb6 : 0xb7);
    } else {
        byte(b, store ? (size == 1 ? 0x88 : 0x89) : 0x8b);
    }
    modrm_memory(b, RAX, m);
    end_instruction(b);
}

/* Whether [FIRST, FIRST + COUNT) lies between plan operand K's first and
 * last elements the kernel reads: in the operand's memory (one object,
 * which its strides walk from end to end), so loading it never faults.
 * (Elements between them that the kernel does not read land in lanes it
 * does not use; in place, they are other output elements, unused too.) */
static bool small_window_read(const small_kernel *s, int k, int64_t first, int count)
{
    if (k < 0) /* a transcendental's buffer, whole vectors of it */
        return first >= 0 && first + count <= (s->p->elements + 31) / 32 * 32;
    int n = s->touched_count[k];
    return n > 0 && first >= s->touched[k][0] && first + count - 1 <= s->touched[k][n - 1];
}

/* The displacement of element E of a SIZE-byte operand, or fails. */
static int32_t small_displacement(generator *g, int64_t e, size_t size)
{
    int64_t bytes = e * (int64_t)size;
    if (bytes < INT32_MIN / 2 || bytes > INT32_MAX / 2) {
        g->failed = true;
        return 0;
    }
    return (int32_t)bytes;
}

/* How leaf I loads its lanes O[0 .. count) (elements). */
static small_load_plan small_plan(small_kernel *s, int i, const int64_t *o, int count)
{
    generator *g = s->g;
    const leaf *l = &g->leaves[i];
    int lanes = 32 / g->width, k = l->operand;
    small_load_plan pl = {SMALL_UNIFORM, o[0], 0, {0}, {0}, {0}, {0}, {0}, false, -1};
    bool uniform = true, contiguous = true;
    int64_t low = o[0], high = o[0];
    for (int j = 1; j < count; j++) {
        uniform = uniform && o[j] == o[0];
        contiguous = contiguous && o[j] == o[0] + j;
        low = o[j] < low ? o[j] : low;
        high = o[j] > high ? o[j] : high;
    }
    if (uniform)
        return pl;
    /* a contiguous load reads `lanes` elements of the leaf's dtype */
    if (contiguous && (count == lanes || small_window_read(s, k, o[0], lanes))) {
        pl.mode = SMALL_CONTIGUOUS;
        return pl;
    }
    if (l->dtype != g->lane) { /* converted on loading: lane by lane into a slot */
        pl.mode = SMALL_SLOT;
        pl.slot = s->leaf_slot[i];
        return pl;
    }
    int per = g->width / 4; /* chunks a lane */
    for (int window = 2; window <= lanes; window *= 2) {
        if (high - low >= window)
            continue;
        for (int64_t first = low; first >= high - window + 1; first--) {
            if (!small_window_read(s, k, first, window))
                continue;
            pl.mode = SMALL_WINDOW;
            pl.first = first;
            pl.window = window;
            /* the chunks the load leaves in the register: the window
             * repeated (broadcasts) or once (a whole vector) */
            int loaded = window * per;
            for (int j = 0; j < lanes; j++)
                for (int h = 0; h < per; h++) {
                    int chunk = j * per + h;
                    uint32_t want = j < count ? (uint32_t)((o[j] - first) * per + h) : 0;
                    pl.index[chunk] = want;
                    if (j < count && want != (uint32_t)(chunk % loaded))
                        pl.permute = true;
                }
            return pl;
        }
    }
    if (high - low < lanes) { /* a window of lanes, only the elements needed loaded */
        pl.mode = SMALL_MASKED;
        pl.first = low;
        for (int j = 0; j < count; j++)
            for (int h = 0; h < per; h++) {
                uint32_t chunk = (uint32_t)((o[j] - low) * per + h);
                pl.mask[chunk] = ~0u;
                pl.index[j * per + h] = chunk;
                pl.permute = pl.permute || chunk != (uint32_t)(j * per + h);
            }
        return pl;
    }
    if (s->two && high - low < 2 * lanes) { /* two such windows, permuted and blended */
        pl.mode = SMALL_TWO;
        pl.first = low;
        for (int j = 0; j < count; j++)
            for (int h = 0; h < per; h++) {
                int64_t e = o[j] - low;
                bool second = e >= lanes;
                uint32_t chunk = (uint32_t)((second ? e - lanes : e) * per + h);
                (second ? pl.mask2 : pl.mask)[chunk] = ~0u;
                (second ? pl.index2 : pl.index)[j * per + h] = chunk;
                pl.from2[j * per + h] = second ? ~0u : 0;
            }
        return pl;
    }
    pl.mode = SMALL_GATHER;
    pl.first = low;
    for (int j = 0; j < count; j++)
        for (int h = 0; h < per; h++)
            pl.index[j * per + h] = (uint32_t)((o[j] - low) * per + h);
    return pl;
}

/* A 32-byte constant of 8 chunks. */
static int chunk_constant(generator *g, const uint32_t *chunks)
{
    return constant(g, chunks, 32);
}

/* The chunks of the first COUNT lanes all ones. */
static int mask_constant(generator *g, int count)
{
    uint32_t chunks[8];
    int per = g->width / 4;
    for (int c = 0; c < 8; c++)
        chunks[c] = c < count * per ? ~0u : 0;
    return chunk_constant(g, chunks);
}

/* A register holding pool constant SLOT: its own, or T loaded with it. */
static int small_constant_register(generator *g, int slot, int *t)
{
    rm_operand c = constant_operand(g, slot);
    if (!c.mem)
        return c.reg;
    *t = take_register(g);
    vex(g->b, V_MOVU_LOAD, true, false, *t, 0, c, -1);
    return *t;
}

static memory small_memory(const generator *g, int i)
{
    const small_load_plan *pl = &g->small->leaf[i];
    const leaf *l = &g->leaves[i];
    if (pl->mode == SMALL_SLOT)
        return at(RSP, NONE, 1, 32 * pl->slot);
    return at(l->reg, NONE, 1, (int32_t)(pl->first * (int64_t)bcg_dtype_size(l->dtype)));
}

/* Register R = leaf I's lanes at the GATHER plan's chunks from M, loaded
 * one element at a time into the two halves (vmovss + vinsertps, or
 * vmovsd + vmovhpd) and joined by vinsertf128.  On this machine (AMD EPYC)
 * vgatherdps/vgatherdpd cost more than the loads and shuffles, measured
 * in one process: a*b+1 over a transposed 16x16, f32 70 -> 50-56 ns, f64
 * 135-167 -> 54-59 ns; f64 c + where(b > 0.1, b, sqrt(abs(a))) over c of
 * stride 3, 450 elements, 340 -> 250 ns. */
static void small_inserts(generator *g, int r, int i, memory m)
{
    const small_load_plan *pl = &g->small->leaf[i];
    builder *b = g->b;
    int lanes = 32 / g->width, per = g->width / 4, half = lanes / 2, count = g->small->count;
    int t = count > half ? take_register(g) : -1;
    for (int j = 0; j < count; j++) {
        int x = j < half ? r : t, lane = j % half;
        memory e = m;
        e.disp += (int32_t)(pl->index[j * per] * 4);
        if (per == 2) /* vmovsd x, [e] / vmovhpd x, x, [e] */
            vex_form(b, lane == 0 ? 3 : 1, 1, lane == 0 ? 0x10 : 0x16, false, x,
                     lane == 0 ? 0 : x, in_memory(e), -1);
        else if (lane == 0) /* vmovss x, [e] */
            vex_form(b, 2, 1, 0x10, false, x, 0, in_memory(e), -1);
        else /* vinsertps x, x, [e], lane << 4 */
            vex_form(b, 1, 3, 0x21, false, x, x, in_memory(e), lane << 4);
    }
    if (t >= 0) { /* vinsertf128 r, r, t, 1 */
        vex_form(b, 1, 3, 0x18, true, r, r, in_register(t), 1);
        give_register(g, t);
    }
}

/* Register R = leaf I's lanes when its plan is a window, masked, two
 * windows or element by element (lane dtype); false: the tile code's own
 * load (leaf_memory). */
static bool small_load(generator *g, int r, int i)
{
    const small_load_plan *pl = &g->small->leaf[i];
    builder *b = g->b;
    memory m = small_memory(g, i);
    int t = -1, u = -1;
    switch (pl->mode) {
    case SMALL_WINDOW: {
        int lanes = 32 / g->width;
        if (pl->window == lanes) { /* a whole vector: vpermps reads it from memory */
            int index = small_constant_register(g, chunk_constant(g, pl->index), &t);
            vex_form(b, VPERMPS, true, r, index, in_memory(m), -1);
            break;
        }
        if (pl->window * g->width == 8)
            vex(b, V_BROADCASTSD, true, false, r, 0, in_memory(m), -1);
        else
            vex_form(b, VBROADCASTF128, true, r, 0, in_memory(m), -1);
        if (pl->permute) {
            int index = small_constant_register(g, chunk_constant(g, pl->index), &t);
            vex_form(b, VPERMPS, true, r, index, in_register(r), -1);
        }
        break;
    }
    case SMALL_MASKED: { /* masked lanes read nothing, so never fault */
        int mask = small_constant_register(g, chunk_constant(g, pl->mask), &t);
        vex_form(b, VMASKMOVPS_LOAD, true, r, mask, in_memory(m), -1);
        if (pl->permute) {
            if (t >= 0)
                give_register(g, t);
            t = -1;
            int index = small_constant_register(g, chunk_constant(g, pl->index), &t);
            vex_form(b, VPERMPS, true, r, index, in_register(r), -1);
        }
        break;
    }
    case SMALL_TWO: {
        int lanes = 32 / g->width;
        int mask = small_constant_register(g, chunk_constant(g, pl->mask), &t);
        vex_form(b, VMASKMOVPS_LOAD, true, r, mask, in_memory(m), -1);
        if (t >= 0)
            give_register(g, t);
        t = -1;
        int index = small_constant_register(g, chunk_constant(g, pl->index), &t);
        vex_form(b, VPERMPS, true, r, index, in_register(r), -1);
        if (t >= 0)
            give_register(g, t);
        t = -1;
        u = take_register(g);
        memory m2 = m;
        m2.disp += lanes * g->width;
        mask = small_constant_register(g, chunk_constant(g, pl->mask2), &t);
        vex_form(b, VMASKMOVPS_LOAD, true, u, mask, in_memory(m2), -1);
        if (t >= 0)
            give_register(g, t);
        t = -1;
        index = small_constant_register(g, chunk_constant(g, pl->index2), &t);
        vex_form(b, VPERMPS, true, u, index, in_register(u), -1);
        if (t >= 0)
            give_register(g, t);
        t = -1;
        int from2 = small_constant_register(g, chunk_constant(g, pl->from2), &t);
        /* blendv: r = from2 ? u : r */
        vex(b, V_BLENDVPS, true, false, r, r, in_register(u), from2 << 4);
        break;
    }
    case SMALL_GATHER: /* element by element (a vgatherdps costs more here) */
        small_inserts(g, r, i, m);
        break;
    default:
        return false;
    }
    if (t >= 0)
        give_register(g, t);
    if (u >= 0)
        give_register(g, u);
    return true;
}

/* Stores register V's first COUNT lanes at output elements O[0 .. count). */
/* The output offsets O[0..COUNT) of a vector's lanes: their lowest
 * (*LOW), whether they run on from O[0] one by one (*CONTIGUOUS), and
 * whether they are a permutation of COUNT consecutive ones (*DISTINCT). */
static void store_offsets(const int64_t *o, int count, int64_t *low, bool *contiguous,
                          bool *distinct)
{
    int64_t high = o[0];
    *low = o[0];
    *contiguous = true;
    for (int j = 1; j < count; j++) {
        *contiguous = *contiguous && o[j] == o[0] + j;
        *low = o[j] < *low ? o[j] : *low;
        high = o[j] > high ? o[j] : high;
    }
    *distinct = high - *low == count - 1;
    for (int j = 0; *distinct && j < count; j++)
        for (int i = 0; i < j; i++)
            *distinct = *distinct && o[i] != o[j];
}

static void small_store(small_kernel *s, int v, const int64_t *o, int count)
{
    generator *g = s->g;
    builder *b = g->b;
    int lanes = 32 / g->width, per = g->width / 4;
    int64_t low;
    bool contiguous, distinct;
    store_offsets(o, count, &low, &contiguous, &distinct);
    int t = -1;
    if (!contiguous && distinct) { /* a permutation of a window: into order first */
        uint32_t index[8] = {0};
        for (int j = 0; j < count; j++)
            for (int h = 0; h < per; h++)
                index[(o[j] - low) * per + h] = (uint32_t)(j * per + h);
        int r = small_constant_register(g, chunk_constant(g, index), &t);
        vex_form(b, VPERMPS, true, v, r, in_register(v), -1);
        contiguous = true;
    }
    if (t >= 0)
        give_register(g, t);
    if (contiguous) {
        memory m = at(RDI, NONE, 1, small_displacement(g, low, (size_t)g->width));
        if (count == lanes) {
            vex(b, V_MOVU_STORE, true, false, v, 0, in_memory(m), -1);
        } else {
            int mt = -1;
            int mask = small_constant_register(g, mask_constant(g, count), &mt);
            vex_form(b, VMASKMOVPS_STORE, true, v, mask, in_memory(m), -1);
            if (mt >= 0)
                give_register(g, mt);
        }
        return;
    }
    /* lane by lane: the low half from V, the high half extracted */
    int high_half = -1, half_lanes = lanes / 2;
    for (int j = 0; j < count; j++) {
        int x = v;
        if (j >= half_lanes) {
            if (high_half < 0) {
                high_half = take_register(g);
                vex_form(b, VEXTRACTF128, true, v, 0, in_register(high_half), 1);
            }
            x = high_half;
        }
        int lane = j % half_lanes;
        memory m = at(RDI, NONE, 1, small_displacement(g, o[j], (size_t)g->width));
        if (per == 1 && lane == 0)
            vex_form(b, VMOVSS_STORE, false, x, 0, in_memory(m), -1);
        else if (per == 1)
            vex_form(b, VEXTRACTPS, false, x, 0, in_memory(m), lane);
        else if (lane == 0)
            vex_form(b, VMOVSD_STORE, false, x, 0, in_memory(m), -1);
        else
            vex_form(b, VMOVHPS_STORE, false, x, 0, in_memory(m), -1);
    }
    if (high_half >= 0)
        give_register(g, high_half);
}

/* ---- small kernels of integer and mixed trees ---------------------------------------
 *
 * A tree the f32/f64 code above does not take is the typed path's
 * (typed_*): every value at its own dtype, LANES elements a vector (32
 * bytes over the widest value's size), a narrower value in the low bytes
 * of its register.  In a small kernel typed_leaf hands its leaves to
 * small_typed_leaf, which loads leaf i's lanes (elements of SIZE bytes,
 * BYTES = lanes * size of them) the cheapest exact way:
 *
 *     all lanes one element           vpbroadcastb/w/d/q
 *     contiguous, the operand reads   one load of BYTES (vmovdqu, vmovq,
 *       every element it covers         vmovd)
 *     within a 4-, 8- or 16-byte      the window loaded (broadcast into both
 *       window the operand reads        halves of a ymm) and vpshufb'd into
 *                                       the lanes
 *     4- or 8-byte elements within    vpermd from the window when the
 *       32 bytes                        operand reads it all, else
 *                                       vmaskmovps of the elements, vpermd
 *     anything else                   each 16-byte half by the rows above or
 *                                       element by element (vpinsrb/w/d/q),
 *                                       joined by vinserti128
 *
 * and small_typed_store stores the root: contiguous elements as one store
 * of a whole vector or the first count * size bytes in pieces (vmovdqu,
 * vmovq/vpextrq, vmovd/vpextrd, vpextrw, vpextrb: nothing past the
 * elements is written), a permuted window put in order first (vpshufb
 * within 16 bytes, vpermd of 4- and 8-byte elements), anything else
 * element by element (vpextr*).  Window patterns are pool constants; when
 * the pool runs out (s->two false on the second try) only the rows that
 * need none are used. */

#define VPINSRB 1, 3, 0x20
#define VPINSRW 1, 1, 0xc4
#define VPINSRD 1, 3, 0x22 /* W1: vpinsrq */
#define VPEXTRB 1, 3, 0x14
#define VPEXTRW 1, 3, 0x15
#define VPEXTRD 1, 3, 0x16 /* W1: vpextrq */
#define VINSERTI128 1, 3, 0x38
#define VBROADCASTI128 1, 2, 0x5a

/* Element E of leaf L (SIZE bytes) as memory. */
static memory small_element(generator *g, const leaf *l, int64_t e, int size)
{
    return at(l->reg, NONE, 1, small_displacement(g, e, (size_t)size));
}

/* The first element of a window of WINDOW elements holding O[0 .. count)
 * that plan operand K reads whole, or false. */
static bool small_read_window(const small_kernel *s, int k, const int64_t *o, int count,
                              int window, int64_t *first)
{
    int64_t low = o[0], high = o[0];
    for (int j = 1; j < count; j++) {
        low = o[j] < low ? o[j] : low;
        high = o[j] > high ? o[j] : high;
    }
    if (window < 1 || high - low >= window)
        return false;
    for (int64_t f = low; f >= high - window + 1; f--)
        if (small_window_read(s, k, f, window)) {
            *first = f;
            return true;
        }
    return false;
}

/* vpshufb R (a ymm when WIDE) by the pattern putting lane j's SIZE bytes
 * from element O[j] - FIRST of the window (repeated in both halves), lanes
 * past COUNT zero; nothing when the pattern leaves R as it is. */
static void small_shuffle(generator *g, int r, bool wide, const int64_t *o, int count,
                          int size, int64_t first)
{
    unsigned char pattern[32];
    bool identity = !wide;
    for (int p = 0; p < 32; p++) {
        int half = p / 16, q = p % 16, j = half * (16 / size) + q / size;
        bool used = p < (wide ? 32 : 16) && j < count;
        pattern[p] = used ? (unsigned char)((o[j] - first) * size + q % size) : 0x80;
        identity = identity && (!used || pattern[p] == p);
    }
    if (!identity)
        vex(g->b, V_PSHUFB, wide, false, r, r, constant_operand(g, constant(g, pattern, 32)), -1);
}

/* The first of the blocks of PER elements from FIRST[0 ..] holding
 * element E (small_blocks: there is one). */
static int block_of(int64_t e, const int64_t *first, int per)
{
    int block = 0;
    while (!(e >= first[block] && e < first[block] + per))
        block++;
    return block;
}

static bool small_blocks_load(generator *g, int x, int i, const int64_t *o, int count,
                              const int64_t *first, int blocks);

/* xmm X = leaf I's COUNT elements at O (at most 16 bytes) from the two to
 * four 16-byte blocks of the operand that hold them, each loaded and
 * vpshufb'd into the lanes it holds, or'd together (measured: abs(a + a)
 * over u8 of stride 2, 768 elements, 237 ns element by element -> 33 ns,
 * cc 24-40); false when they lie further apart or outside the span the
 * operand reads. */
static bool small_blocks(generator *g, int x, int i, const int64_t *o, int count)
{
    const small_kernel *s = g->small->kernel;
    const leaf *l = &g->leaves[i];
    int size = size_of(l->dtype), k = l->operand, per = 16 / size;
    int64_t low = o[0];
    for (int j = 1; j < count; j++)
        low = o[j] < low ? o[j] : low;
    if (k >= 0 && s->touched_count[k] == 0)
        return false;
    /* (a transcendental's buffer: whole vectors of the elements) */
    int64_t last = k < 0 ? (s->p->elements + 31) / 32 * 32 - 1
                         : s->touched[k][s->touched_count[k] - 1],
            first[4];
    int64_t high = o[0];
    for (int j = 1; j < count; j++)
        high = o[j] > high ? o[j] : high;
    int blocks = (int)((high - low) / per) + 1;
    if (blocks >= 2 && blocks <= 4) { /* consecutive blocks from the lowest */
        for (int block = 0; block < blocks; block++) {
            first[block] = low + (int64_t)block * per;
            if (first[block] + per - 1 > last) /* the last one ends at the last element read */
                first[block] = last - per + 1;
        }
        return small_blocks_load(g, x, i, o, count, first, blocks);
    }
    /* else blocks each from the lowest element the ones before leave, so
     * lanes from rows far apart (an operand transposed along short runs:
     * b[0] b[706] b[1] b[707] ...) take a block a row, not an insert an
     * element (abs(minimum(a + 0, b)), u8 runs of 2 of b transposed, the
     * flat form: 128 -> 31 us, cc 22) */
    blocks = 0;
    for (int64_t next = low; blocks <= 4;) {
        if (blocks == 4)
            return false;
        first[blocks] = next + per - 1 > last ? last - per + 1 : next;
        if (!small_window_read(s, k, first[blocks], per))
            return false;
        int64_t end = first[blocks++] + per, lowest = INT64_MAX;
        for (int j = 0; j < count; j++)
            lowest = o[j] >= end && o[j] < lowest ? o[j] : lowest;
        if (lowest == INT64_MAX)
            break;
        next = lowest;
    }
    /* (at least three lanes a block: f64 lanes of rows apart, one a block,
     * were 2.0x slower than inserts, a - f64 transposed runs of 3; the
     * flat form's loop only: in the straight-line small kernel every
     * block's pattern is a constant loaded once a call, 2 + a over a u8
     * (2,6,2,2,5) reversed and transposed 10.8 -> 12.7 ns) */
    if (!s->flat || blocks < 2 || blocks * 3 > count)
        return false;
    return small_blocks_load(g, x, i, o, count, first, blocks);
}

/* small_blocks' code: xmm X = leaf I's COUNT elements at O from the
 * BLOCKS 16-byte blocks at FIRST (elements of the operand, read whole). */
static bool small_blocks_load(generator *g, int x, int i, const int64_t *o, int count,
                              const int64_t *first, int blocks)
{
    const small_kernel *s = g->small->kernel;
    const leaf *l = &g->leaves[i];
    int size = size_of(l->dtype), k = l->operand, per = 16 / size;
    for (int block = 0; block < blocks; block++)
        if (!small_window_read(s, k, first[block], per))
            return false;
    int t = -1;
    for (int block = 0; block < blocks; block++) {
        unsigned char pattern[32];
        memset(pattern, 0x80, sizeof pattern);
        bool any = false;
        for (int j = 0; j < count; j++) /* lane j from the first block holding it */
            if (block_of(o[j], first, per) == block) {
                for (int h = 0; h < size; h++)
                    pattern[j * size + h] = (unsigned char)((o[j] - first[block]) * size + h);
                any = true;
            }
        if (!any) /* (block 0 holds lane low's element) */
            continue;
        int y = block == 0 ? x : (t >= 0 ? t : (t = take_register(g)));
        vex(g->b, V_MOVDQU_LOAD, false, false, y, 0,
            in_memory(small_element(g, l, first[block], size)), -1);
        vex(g->b, V_PSHUFB, false, false, y, y, constant_operand(g, constant(g, pattern, 32)), -1);
        if (block > 0)
            vex(g->b, V_POR, false, false, x, x, in_register(y), -1);
    }
    if (t >= 0)
        give_register(g, t);
    return true;
}

/* xmm X = leaf I's COUNT (at most 16 bytes of) elements at O. */
static void small_typed_half(generator *g, int x, int i, const int64_t *o, int count)
{
    const small_kernel *s = g->small->kernel;
    const leaf *l = &g->leaves[i];
    builder *b = g->b;
    int size = size_of(l->dtype), k = l->operand;
    bool contiguous = true;
    for (int j = 1; j < count; j++)
        contiguous = contiguous && o[j] == o[0] + j;
    if (contiguous && small_window_read(s, k, o[0], 16 / size)) {
        vex(b, V_MOVDQU_LOAD, false, false, x, 0, in_memory(small_element(g, l, o[0], size)), -1);
        return;
    }
    int64_t first;
    for (int window = 4; s->two && window <= 16; window *= 2)
        if (window >= size && small_read_window(s, k, o, count, window / size, &first)) {
            memory m = small_element(g, l, first, size);
            vex(b, window == 16 ? V_MOVDQU_LOAD : window == 8 ? V_MOVQ_LOAD : V_MOVD_LOAD, false,
                false, x, 0, in_memory(m), -1);
            small_shuffle(g, x, false, o, count, size, first);
            return;
        }
    if (s->two && small_blocks(g, x, i, o, count))
        return;
    for (int j = 0; j < count; j++) { /* element by element */
        memory m = small_element(g, l, o[j], size);
        if (j == 0 && size >= 4) {
            vex(b, size == 8 ? V_MOVQ_LOAD : V_MOVD_LOAD, false, false, x, 0, in_memory(m), -1);
            continue;
        }
        if (j == 0)
            vex(b, V_PXOR, false, false, x, x, in_register(x), -1);
        if (size == 1)
            vex_form(b, VPINSRB, false, x, x, in_memory(m), j);
        else if (size == 2)
            vex_form(b, VPINSRW, false, x, x, in_memory(m), j);
        else
            vex_form_w(b, VPINSRD, false, size == 8, x, x, in_memory(m), j);
    }
}

/* Leaf I's slot (typed trees: small_stage). */
static memory small_stage_slot(const generator *g, int i)
{
    const small_kernel *s = g->small->kernel;
    return at(RSP, NONE, 1, s->frame + 32 * s->leaf_slot[i]);
}

/* Whether leaf I's lanes are one element or one plain load. */
static bool small_typed_cheap(const generator *g, int i)
{
    const small_vector *vector = g->small;
    const int64_t *o = vector->offset[i];
    bool uniform = true, contiguous = true;
    for (int j = 1; j < vector->count; j++) {
        uniform = uniform && o[j] == o[0];
        contiguous = contiguous && o[j] == o[0] + j;
    }
    return uniform || (contiguous && (vector->count == g->lanes ||
                                      small_window_read(vector->kernel, g->leaves[i].operand,
                                                        o[0], g->lanes)));
}

static void small_typed_load(generator *g, int r, int i);

/* A leaf the tree reads more than once whose lanes take more than a load
 * (windows, blocks, inserts) is loaded once a vector into its slot, which
 * each read then loads (measured: where(where(a >= 3, b, a) > 5, where(a >=
 * 3, b, a), b) over i16 rows of 5 reversed, 600 elements, 227 -> 133 ns). */
static void small_stage(small_kernel *s)
{
    generator *g = s->g;
    small_vector *vector = g->small;
    for (int i = 0; i < g->leaf_count; i++) {
        vector->staged[i] = false;
        if (s->uses[i] < 2 || s->leaf_slot[i] < 0 || vector->pattern[i] >= 0 ||
            small_typed_cheap(g, i))
            continue;
        g->free = 0xffffu & ~g->reserved;
        int r = take_register(g);
        small_typed_load(g, r, i);
        store_bytes(g, r, small_stage_slot(g, i), bytes_of(g, g->leaves[i].dtype));
        give_register(g, r);
        vector->staged[i] = true;
    }
}

/* Register R = leaf I's lanes of the vector being written. */
static void small_typed_load(generator *g, int r, int i)
{
    const small_vector *vector = g->small;
    const small_kernel *s = vector->kernel;
    const leaf *l = &g->leaves[i];
    builder *b = g->b;
    const int64_t *o = vector->offset[i];
    int count = vector->count, size = size_of(l->dtype), lanes = g->lanes, k = l->operand;
    int bytes = bytes_of(g, l->dtype);
    if (vector->pattern[i] >= 0) {
        load_bytes(g, r, at(RSP, NONE, 1, s->frame + 32 * vector->pattern[i]), false, size, bytes);
        return;
    }
    if (vector->staged[i]) {
        load_bytes(g, r, small_stage_slot(g, i), false, size, bytes);
        return;
    }
    bool wide = bytes == 32, uniform = true, contiguous = true;
    int64_t low = o[0], high = o[0];
    for (int j = 1; j < count; j++) {
        uniform = uniform && o[j] == o[0];
        contiguous = contiguous && o[j] == o[0] + j;
        low = o[j] < low ? o[j] : low;
        high = o[j] > high ? o[j] : high;
    }
    if (uniform || (contiguous && (count == lanes || small_window_read(s, k, o[0], lanes)))) {
        load_bytes(g, r, small_element(g, l, o[0], size), uniform, size, bytes);
        return;
    }
    if (s->two && s->tiny_slot[i] >= 0) { /* its 16-byte copy, shuffled */
        memory m = at(RSP, NONE, 1, s->frame + 32 * s->tiny_slot[i]);
        if (wide)
            vex_form(b, VBROADCASTI128, true, r, 0, in_memory(m), -1);
        else
            vex(b, V_MOVDQU_LOAD, false, false, r, 0, in_memory(m), -1);
        small_shuffle(g, r, wide, o, count, size, s->tiny_first[i]);
        return;
    }
    int64_t first;
    for (int window = 4; wide && s->two && window <= 16; window *= 2)
        if (window >= size && small_read_window(s, k, o, count, window / size, &first)) {
            memory m = small_element(g, l, first, size);
            if (window == 16)
                vex_form(b, VBROADCASTI128, true, r, 0, in_memory(m), -1);
            else
                vex(b, window == 8 ? V_PBROADCASTQ : V_PBROADCASTD, true, false, r, 0,
                    in_memory(m), -1);
            small_shuffle(g, r, true, o, count, size, first);
            return;
        }
    if (s->two && size >= 4 && (high - low + 1) * size <= 32) {
        int per = size / 4, window = 32 / size;
        uint32_t index[8] = {0}, mask[8] = {0};
        bool found = small_read_window(s, k, o, count, window, &first), permute = found;
        if (!found)
            first = low;
        for (int j = 0; j < count; j++)
            for (int h = 0; h < per; h++) {
                uint32_t chunk = (uint32_t)((o[j] - first) * per + h);
                index[j * per + h] = chunk;
                mask[chunk] = ~0u;
                permute = permute || chunk != (uint32_t)(j * per + h);
            }
        memory m = small_element(g, l, first, size);
        int t = -1;
        if (found) {
            int idx = small_constant_register(g, chunk_constant(g, index), &t);
            vex(b, V_PERMD, true, false, r, idx, in_memory(m), -1);
        } else {
            int mr = small_constant_register(g, chunk_constant(g, mask), &t);
            vex_form(b, VMASKMOVPS_LOAD, true, r, mr, in_memory(m), -1);
            if (t >= 0)
                give_register(g, t);
            t = -1;
            if (permute) {
                int idx = small_constant_register(g, chunk_constant(g, index), &t);
                vex(b, V_PERMD, true, false, r, idx, in_register(r), -1);
            }
        }
        if (t >= 0)
            give_register(g, t);
        return;
    }
    int per_half = 16 / size, t = -1;
    for (int h = 0; h * per_half < count; h++) {
        int x = h == 0 ? r : (t = take_register(g));
        int part = count - h * per_half < per_half ? count - h * per_half : per_half;
        small_typed_half(g, x, i, o + h * per_half, part);
    }
    if (t >= 0) {
        vex_form(b, VINSERTI128, true, r, r, in_register(t), 1);
        give_register(g, t);
    }
}

static value small_typed_leaf(generator *g, int id)
{
    int i = leaf_index(g, id);
    bcg_dtype t = g->leaves[i].dtype;
    if (g->failed || (!is_integer(t) && !is_float_lane(t) && t != BCG_BOOL)) {
        g->failed = true;
        return (value){0, false, false, t};
    }
    int r = take_register(g);
    small_typed_load(g, r, i);
    if (t != BCG_BOOL)
        return (value){r, false, false, t};
    vex(g->b, V_PCMPEQB, wide_of(g, t), false, r, r, constant_operand(g, zero_constant(g)), -1);
    return (value){r, true, true, BCG_I8}; /* the bytes that are 0 */
}

/* The first K bytes of register R at M: a whole ymm, or pieces of 16, 8, 4,
 * 2 and 1 bytes. */
static void small_store_bytes(generator *g, int r, memory m, int k)
{
    builder *b = g->b;
    if (k == 32) {
        vex(b, V_MOVDQU_STORE, true, false, r, 0, in_memory(m), -1);
        return;
    }
    int x = r, t = -1;
    if (k >= 16) {
        vex(b, V_MOVDQU_STORE, false, false, r, 0, in_memory(m), -1);
        m.disp += 16;
        k -= 16;
        if (k > 0) {
            t = take_register(g);
            vex(b, V_EXTRACTI128, true, false, r, 0, in_register(t), 1);
            x = t;
        }
    }
    for (int p = 0; p < k;) {
        int piece = 8;
        while (piece > k - p || p % piece)
            piece /= 2;
        memory e = m;
        e.disp += p;
        if (piece == 8 && p == 0)
            vex(b, V_MOVQ_STORE, false, false, x, 0, in_memory(e), -1);
        else if (piece == 8)
            vex_form_w(b, VPEXTRD, false, true, x, 0, in_memory(e), 1);
        else if (piece == 4 && p == 0)
            vex(b, V_MOVD_STORE, false, false, x, 0, in_memory(e), -1);
        else if (piece == 4)
            vex_form(b, VPEXTRD, false, x, 0, in_memory(e), p / 4);
        else if (piece == 2)
            vex_form(b, VPEXTRW, false, x, 0, in_memory(e), p / 2);
        else
            vex_form(b, VPEXTRB, false, x, 0, in_memory(e), p);
        p += piece;
    }
    if (t >= 0)
        give_register(g, t);
}

/* Stores register V's first COUNT lanes (the root's dtype) at output
 * elements O[0 .. count). */
static void small_typed_store(small_kernel *s, int v, const int64_t *o, int count)
{
    generator *g = s->g;
    builder *b = g->b;
    int size = g->width, lanes = g->lanes, bytes = lanes * size;
    int64_t low;
    bool contiguous, distinct;
    store_offsets(o, count, &low, &contiguous, &distinct);
    if (!contiguous && distinct && s->two && count * size <= 16 && bytes <= 16) {
        /* a permuted window within an xmm: into order by vpshufb */
        unsigned char pattern[32];
        memset(pattern, 0x80, sizeof pattern);
        for (int j = 0; j < count; j++)
            for (int h = 0; h < size; h++)
                pattern[(o[j] - low) * size + h] = (unsigned char)(j * size + h);
        vex(b, V_PSHUFB, false, false, v, v, constant_operand(g, constant(g, pattern, 32)), -1);
        contiguous = true;
    } else if (!contiguous && distinct && s->two && size >= 4) { /* by vpermd */
        uint32_t index[8] = {0};
        int per = size / 4, t = -1;
        for (int j = 0; j < count; j++)
            for (int h = 0; h < per; h++)
                index[(o[j] - low) * per + h] = (uint32_t)(j * per + h);
        int idx = small_constant_register(g, chunk_constant(g, index), &t);
        vex(b, V_PERMD, true, false, v, idx, in_register(v), -1);
        if (t >= 0)
            give_register(g, t);
        contiguous = true;
    }
    if (contiguous) {
        small_store_bytes(g, v, at(RDI, NONE, 1, small_displacement(g, low, (size_t)size)),
                          count == lanes ? bytes : count * size);
        return;
    }
    int high_half = -1, per_half = 16 / size;
    for (int j = 0; j < count; j++) {
        int x = v, lane = j % per_half;
        if (j >= per_half) {
            if (high_half < 0) {
                high_half = take_register(g);
                vex(b, V_EXTRACTI128, true, false, v, 0, in_register(high_half), 1);
            }
            x = high_half;
        }
        memory m = at(RDI, NONE, 1, small_displacement(g, o[j], (size_t)size));
        if (size == 1)
            vex_form(b, VPEXTRB, false, x, 0, in_memory(m), lane);
        else if (size == 2)
            vex_form(b, VPEXTRW, false, x, 0, in_memory(m), lane);
        else if (lane == 0)
            vex(b, size == 8 ? V_MOVQ_STORE : V_MOVD_STORE, false, false, x, 0, in_memory(m), -1);
        else
            vex_form_w(b, VPEXTRD, false, size == 8, x, 0, in_memory(m), lane);
    }
    if (high_half >= 0)
        give_register(g, high_half);
}

/* One vector of a typed tree: computed (typed) and stored, a bool root as
 * bytes 0 and 1 (typed_body). */
static void small_typed_vector(small_kernel *s, const int64_t *o, int count)
{
    generator *g = s->g;
    value v = typed(g, 0);
    if (g->failed)
        return;
    if (v.mask) {
        v = mask_to(g, v, 1);
        if (v.inverted)
            v = flip(g, v);
        op_constant(g, V_PAND, v.reg, v.reg, constant(g, &(uint8_t){1}, 1));
    }
    small_typed_store(s, v.reg, o, count);
}

static int compare_offsets(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Element offsets of every plan operand for every element (plan order),
 * and the elements each operand reads, sorted. */
/* The elements each operand reads in the body (s->body elements from
 * element 0): a window read there is read by every trip of the loops
 * around it (each moves all of them by the same stride). */
/* The COUNT offsets at FROM, sorted, each once (*UNIQUE of them); NULL
 * when memory runs out. */
static int64_t *sorted_unique(arena *a, const int64_t *from, int64_t count, int *unique)
{
    int64_t *t = arena_alloc(a, sizeof *t * (size_t)(count > 0 ? count : 1));
    if (!t)
        return NULL;
    memcpy(t, from, sizeof *t * (size_t)count);
    qsort(t, (size_t)count, sizeof *t, compare_offsets);
    *unique = 0;
    for (int64_t i = 0; i < count; i++)
        if (*unique == 0 || t[i] != t[*unique - 1])
            t[(*unique)++] = t[i];
    return t;
}

static bool small_touched_sets(arena *a, small_kernel *s)
{
    int64_t n = s->p->elements;
    for (int k = 0; k < s->p->operand_count; k++)
        if (!(s->touched[k] = sorted_unique(a, s->offset + k * n, s->body, &s->touched_count[k])))
            return false;
    return true;
}

static bool small_offsets(arena *a, small_kernel *s)
{
    const plan *p = s->p;
    int64_t n = p->elements;
    int operands = p->operand_count;
    s->offset = arena_alloc(a, sizeof *s->offset * (size_t)(n * operands));
    s->touched = arena_alloc(a, sizeof *s->touched * (size_t)operands);
    s->touched_count = arena_alloc(a, sizeof *s->touched_count * (size_t)operands);
    if (!s->offset || !s->touched || !s->touched_count)
        return false;
    int64_t index[BCG_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
        for (int k = 0; k < operands; k++) {
            int64_t offset = 0;
            for (int l = 0; l < p->loop_count; l++)
                offset += index[l] * p->stride[k][l];
            s->offset[k * n + e] = offset;
        }
        for (int l = p->loop_count - 1; l >= 0; l--) {
            if (++index[l] < p->extent[l])
                break;
            index[l] = 0;
        }
    }
    return small_touched_sets(a, s);
}

/* Leaf L's COUNT lanes at elements O into its slot: inserted into xmm0 (and
 * xmm1) straight from memory, then one store, which the leaf's load then
 * takes whole (a load spanning several smaller stores waits for them to
 * retire).  Elements of 1, 2 or 4 bytes; ymm0 and ymm1 are free here. */
static void slot_inserts(generator *g, const small_load_plan *pl, const leaf *l,
                         const int64_t *o, int count)
{
    builder *b = g->b;
    int size = (int)bcg_dtype_size(l->dtype), per_xmm = 16 / size;
    int bytes = (32 / g->width) * size; /* what the leaf's load reads */
    vex(b, V_XOR, false, false, 0, 0, in_register(0), -1); /* vxorps xmm0: no stale lanes */
    if (bytes > 16)
        vex(b, V_XOR, false, false, 1, 1, in_register(1), -1);
    for (int j = 0; j < count; j++) {
        int x = j < per_xmm ? 0 : 1, lane = j % per_xmm;
        memory m = at(l->reg, NONE, 1, small_displacement(g, o[j], (size_t)size));
        if (size == 1) /* vpinsrb / vpinsrw / vpinsrd x, x, [m], lane */
            vex_form(b, 1, 3, 0x20, false, x, x, in_memory(m), lane);
        else if (size == 2)
            vex_form(b, 1, 1, 0xc4, false, x, x, in_memory(m), lane);
        else
            vex_form(b, 1, 3, 0x22, false, x, x, in_memory(m), lane);
    }
    if (bytes > 16) /* vinsertf128 ymm0, ymm0, xmm1, 1 */
        vex_form(b, 1, 3, 0x18, true, 0, 0, in_register(1), 1);
    vex(b, V_MOVU_STORE, bytes > 16, false, 0, 0, in_memory(at(RSP, NONE, 1, 32 * pl->slot)),
        -1);
}

/* ---- transcendentals in small kernels
 *
 * exp, log, sin, cos and tanh of f64 have no vector code here but a
 * microkernel each (runtime/microkernels.c, the tile code's own); of f32,
 * the C library's through small_libm_f32 (the unrolled C code's and the
 * evaluator's bits, not the tile code's polynomials): a small kernel
 * computes each such node's argument once per value of the loops its
 * operands vary along (small_hoist) into a buffer on its stack (whole
 * vectors, straight-line, as the tree's), calls the function once over
 * the buffer in place, and the tree reads the buffer as a leaf (a hoisted
 * "local" of the copy of the IR) at each element's entry.  Subtrees of
 * operations constant along loops take buffers the same way, computed
 * without a call (small_subtrees).  The call may change every
 * caller-saved register: rdi, r8, r9 and rdx are pushed around it and the
 * constants' ymm registers loaded again after it. */

void bcg_mk_exp_f32(float *out, const float *a, long sa, long n);
void bcg_mk_log_f32(float *out, const float *a, long sa, long n);
void bcg_mk_sin_f32(float *out, const float *a, long sa, long n);
void bcg_mk_cos_f32(float *out, const float *a, long sa, long n);
void bcg_mk_tanh_f32(float *out, const float *a, long sa, long n);
void bcg_mk_exp_f64(double *out, const double *a, long sa, long n);
void bcg_mk_log_f64(double *out, const double *a, long sa, long n);
void bcg_mk_sin_f64(double *out, const double *a, long sa, long n);
void bcg_mk_cos_f64(double *out, const double *a, long sa, long n);
void bcg_mk_tanh_f64(double *out, const double *a, long sa, long n);

/* F, the C library's float function of an f32 node, on A's N elements
 * (stride SA) into OUT: what the unrolled C code and the reference
 * evaluator call (op_table's math_f32), so the same bits; a small
 * kernel calls it with F in r8 (small_transcendentals). */
static void small_libm_f32(float *out, const float *a, long sa, long n, float (*f)(float))
{
    for (long i = 0; i < n; i++)
        out[i] = f(a[i * sa]);
}

/* The C library function small_libm_f32 calls for OP over T, or 0. */
static uint64_t small_libm(expr_op op, bcg_dtype t)
{
    float (*f)(float) = NULL;
    switch (op) {
    case OP_EXP: case OP_LOG: case OP_SIN: case OP_COS: case OP_TANH:
        f = t == BCG_F32 ? op_table[op].math_f32 : NULL;
        break;
    default: break;
    }
    uint64_t address = 0;
    if (f)
        memcpy(&address, &f, sizeof f);
    return address;
}

/* The address of the microkernel of OP over T, or 0. */
static uint64_t small_microkernel(expr_op op, bcg_dtype t, bool polynomial)
{
    void (*f32)(float *, const float *, long, long) = NULL;
    void (*f64)(double *, const double *, long, long) = NULL;
    switch (op) {
    case OP_EXP: f32 = bcg_mk_exp_f32; f64 = bcg_mk_exp_f64; break;
    case OP_LOG: f32 = bcg_mk_log_f32; f64 = bcg_mk_log_f64; break;
    case OP_SIN: f32 = bcg_mk_sin_f32; f64 = bcg_mk_sin_f64; break;
    case OP_COS: f32 = bcg_mk_cos_f32; f64 = bcg_mk_cos_f64; break;
    case OP_TANH: f32 = bcg_mk_tanh_f32; f64 = bcg_mk_tanh_f64; break;
    default: return 0;
    }
    /* f32's are polynomials within a few ulp of the C library's, which the
     * unrolled code of a small output calls (test_ops pins it bit for bit):
     * only f64's, the C library's own per element, are taken */
    uint64_t address = 0; /* (POSIX's representation, as jit.c's) */
    void (*libm)(float *, const float *, long, long, float (*)(float)) = small_libm_f32;
    if (t == BCG_F64)
        memcpy(&address, &f64, sizeof f64);
    else if (polynomial && t == BCG_F32)
        memcpy(&address, &f32, sizeof f32);
    else if (small_libm(op, t)) /* (the C library's, through small_libm_f32) */
        memcpy(&address, &libm, sizeof libm);
    return address;
}

/* Element e's entry of the buffer of transcendental leaf I (S->identity
 * when it is not one). */
static const int64_t *small_entries(const small_kernel *s, int i)
{
    for (int j = 0; j < s->transcendental_count; j++)
        if (s->g->leaf_node[i] == s->transcendental[j])
            return s->entry_of[j];
    return s->identity;
}

/* Transcendental J of S's argument computed into its buffer (its first
 * VALUES entries) and the microkernel called on it.  The flat form's per
 * body ones (in its level loops) keep the counters r10 and r11 too. */
static void small_transcendental(small_kernel *s, int j, int64_t values)
{
    generator *g = s->g;
    builder *b = g->b;
    int lanes = g->lanes;
    small_vector *vector = g->small;
    for (int i = 0; i < g->leaf_count; i++) /* (the body's patterns: not here) */
        vector->pattern[i] = -1;
    /* (function 0: a subtree constant along loops, computed itself) */
    int id = s->transcendental[j];
    int argument = s->function[j] ? kir_child(g->ir, id, 0) : id;
    bcg_dtype t = g->ir->nodes[id]->dtype;
    const char *local = s->copy->value[id].local;
    if (!s->function[j]) /* (its tree, not its buffer, for now) */
        s->copy->value[id].local = NULL;
    for (int64_t first = 0; first < values && !g->failed; first += lanes) {
        vector->count = values - first < lanes ? (int)(values - first) : lanes;
        for (int i = 0; i < g->leaf_count; i++)
            vector->offset[i] = s->argument[j] + i * s->values[j] + first;
        small_stage(s);
        g->free = 0xffffu & ~g->reserved;
        value v = typed_as(g, argument, t);
        if (g->failed)
            break;
        store_bytes(g, v.reg, at(RSP, NONE, 1, s->buffer[j] + (int32_t)(first * size_of(t))),
                    bytes_of(g, t));
    }
    s->copy->value[id].local = local;
    if (g->failed || !s->function[j])
        return;
    static const int kept[] = {RDI, R8, R9, RDX, R10, R11};
    int kept_count = s->per_body[j] ? 6 : 4; /* (an even count: rsp stays aligned) */
    for (int k = 0; k < kept_count; k++)
        push_pop(b, kept[k], false);
    gpr_memory(b, 0x8d, RDI, at(RSP, NONE, 1, s->buffer[j] + 8 * kept_count)); /* out */
    gpr_pair(b, 0x89, RSI, RDI);                                                 /* a = out */
    byte(b, 0xba);                                                               /* mov edx, 1: sa */
    word32(b, 1);
    byte(b, 0xb9);                                                               /* mov ecx, values */
    word32(b, (int32_t)values);
    byte(b, 0x48);                                                               /* mov rax, imm64 */
    byte(b, 0xb8);
    for (int k = 0; k < 8; k++)
        byte(b, (int)(s->function[j] >> (8 * k) & 0xff));
    uint64_t libm = s->polynomial[j] ? 0 : small_libm(g->ir->nodes[id]->op, t);
    if (libm) { /* mov r8, imm64: small_libm_f32's f */
        byte(b, 0x49);
        byte(b, 0xb8);
        for (int k = 0; k < 8; k++)
            byte(b, (int)(libm >> (8 * k) & 0xff));
    }
    byte(b, 0xc5); /* vzeroupper */
    byte(b, 0xf8);
    byte(b, 0x77);
    byte(b, 0xff); /* call rax */
    byte(b, 0xd0);
    for (int k = kept_count - 1; k >= 0; k--)
        push_pop(b, kept[k], true);
    for (int i = 0; i < POOL_MAX; i++)
        if (g->constant_register[i] > 0)
            vex(b, V_MOVU_LOAD, true, false, g->constant_register[i], 0,
                in_memory(pool_memory(i)), -1);
}

/* The buffers below the saved registers, their leaves' pointers, and each
 * transcendental's argument computed into its buffer and the microkernel
 * called on it (children first), but the flat form's per-body ones
 * (small_body_transcendentals).  SAVED_COUNT registers were pushed. */
static void small_transcendentals(small_kernel *s, int saved_count)
{
    generator *g = s->g;
    builder *b = g->b;
    (void)saved_count; /* (s->frame keeps rsp 16-byte aligned at the calls) */
    gpr_immediate(b, 5, RSP, s->frame);
    for (int i = 0; i < g->leaf_count; i++)
        for (int j = 0; j < s->transcendental_count; j++)
            if (g->leaves[i].operand < 0 && g->leaf_node[i] == s->transcendental[j])
                gpr_memory(b, 0x8d, g->leaves[i].reg, at(RSP, NONE, 1, s->buffer[j]));
    for (int j = 0; j < s->transcendental_count && !g->failed; j++)
        if (!s->per_body[j])
            small_transcendental(s, j, s->values[j]);
}

/* The flat form's per-body transcendentals of S: for the body (in the
 * innermost level loop) or (REMAINDER) the rows left over. */
static void small_body_transcendentals(small_kernel *s, bool remainder)
{
    for (int j = 0; j < s->transcendental_count && !s->g->failed; j++)
        if (s->per_body[j])
            small_transcendental(s, j, remainder ? s->remainder_values[j] : s->values[j]);
}

/* The straight-line code of elements [0, BODY) of the kernel's body (plan
 * order): a vector of lanes at a time. */
static void small_vectors(small_kernel *s, small_vector *vector, int64_t body)
{
    generator *g = s->g;
    builder *b = g->b;
    int64_t n = s->p->elements;
    int lanes = g->typed ? g->lanes : 32 / g->width;
    for (int64_t first = 0; first < body && !g->failed && !b->overflow; first += lanes) {
        int count = body - first < lanes ? (int)(body - first) : lanes;
        int index = (int)(first / lanes);
        vector->count = count;
        for (int i = 0; i < g->leaf_count; i++)
            vector->pattern[i] = s->pattern_slot[i] >= 0 && index < 64 &&
                                         (s->pattern_mask[i] >> index & 1)
                                     ? s->pattern_slot[i] + index
                                     : -1;
        if (g->typed) { /* an integer or mixed tree: its leaves loaded as typed_leaf asks */
            for (int i = 0; i < g->leaf_count; i++)
                vector->offset[i] = g->leaves[i].operand < 0
                                       ? small_entries(s, i) + first
                                       : s->offset + g->leaves[i].operand * n + first;
            small_stage(s);
            g->free = 0xffffu & ~g->reserved;
            small_typed_vector(s, s->offset + first, count);
            continue;
        }
        for (int i = 0; i < g->leaf_count; i++) {
            const leaf *l = &g->leaves[i];
            const int64_t *o = s->offset + l->operand * n + first;
            small_load_plan *pl = &vector->leaf[i];
            if (vector->pattern[i] >= 0) { /* its lanes in their slot already */
                *pl = (small_load_plan){SMALL_SLOT, o[0], 0, {0}, {0}, {0}, {0}, {0}, false,
                                        vector->pattern[i]};
                g->leaves[i].broadcast = false;
                continue;
            }
            *pl = small_plan(s, i, o, count);
            g->leaves[i].broadcast = pl->mode == SMALL_UNIFORM;
            size_t size = bcg_dtype_size(l->dtype);
            (void)small_displacement(g, pl->first, size);
            for (int j = 0; j < count; j++)
                (void)small_displacement(g, o[j], size);
            if (pl->mode == SMALL_SLOT && !(g->reserved & 1)) {
                /* the typed path's loads (windows, blocks, inserts) into ymm0 */
                g->free = 0xfffeu & ~g->reserved;
                vector->offset[i] = o;
                vector->staged[i] = false;
                small_typed_load(g, 0, i);
                store_bytes(g, 0, at(RSP, NONE, 1, 32 * pl->slot),
                            bytes_of(g, l->dtype));
            } else if (pl->mode == SMALL_SLOT && !(g->reserved & 3))
                slot_inserts(g, pl, l, o, count);
            else if (pl->mode == SMALL_SLOT)
                for (int j = 0; j < count; j++) {
                    scalar_move(b, (int)size, false,
                                at(l->reg, NONE, 1, small_displacement(g, o[j], size)));
                    scalar_move(b, (int)size, true,
                                at(RSP, NONE, 1, 32 * pl->slot + j * (int)size));
                }
        }
        g->free = 0xffffu & ~g->reserved;
        value v = compute(g, 0, true);
        small_store(s, v.reg, s->offset + first, count);
    }
}

static int lanes_of_small(const generator *g);

/* Whether node ID of the flat form S's (typed) tree is the same for every
 * element of the body and every trip of the innermost level loop: its
 * leaves operands constant along those loops, or literals. */
static bool small_body_invariant(const small_kernel *s, int id)
{
    const kernel_ir *ir = s->g->ir;
    const expr_node *n = ir->nodes[id];
    if (n->op == OP_LITERAL || ir->value[id].folded >= 0)
        return true;
    if (n->op == OP_OPERAND) {
        for (int l = s->levels - 1; l < s->p->loop_count; l++)
            if (s->p->stride[n->operand + 1][l] != 0)
                return false;
        return true;
    }
    if (is_leaf(ir, id)) /* (a local: not in the flat form) */
        return false;
    for (int k = 0; k < n->arg_count; k++)
        if (!small_body_invariant(s, kir_child(ir, id, k)))
            return false;
    return true;
}

/* Marks the largest operations under ID (not the root) that
 * small_body_invariant finds, at most 8: computed once before the
 * innermost level loop into stack slots (write_hoisted, as the tile
 * code's values computed once a run), loaded by the body.  Measured (cc /
 * JIT same process): (c) * (maximum(a, i32(b))), f64 rows of 3 under 3710
 * under 36, b f32 one value a plane (its conversion to i32 and f64 was 7
 * instructions of every vector's 20), sweep seed 41 case 85, 0.43 ->
 * 0.60-0.67 (alternating with main's sweep). */
static bool same_along_body(const void *s, int id) { return small_body_invariant(s, id); }

static void small_mark_hoisted(small_kernel *s, int id)
{
    mark_hoisted_by(s->g, id, same_along_body, s);
}

/* The marked values (small_mark_hoisted) into their slots: every leaf's
 * lanes the body's first element's (the same for all of the body), one
 * element read and broadcast.  (Not a whole vector's elements: past a body
 * shorter than a vector those are the next planes', read at the last plane
 * past the operand's end and through a tiny_slot copy made for the body's
 * own lanes: b * b + d, u8, b one value a plane (100,1,1), d (7,), rows of
 * 7 under 2 under 100 in place into a, ymm: 1372 of 1400 elements wrong,
 * or a fault against a guard page; test_random_flat_hoisted at
 * BCGEN_TEST_SEED=2.) */
static void small_write_hoisted(small_kernel *s)
{
    generator *g = s->g;
    small_vector *vector = g->small;
    int64_t n = s->p->elements;
    vector->count = 1;
    for (int i = 0; i < g->leaf_count; i++) {
        vector->pattern[i] = -1;
        vector->staged[i] = false;
        vector->offset[i] = s->offset + g->leaves[i].operand * n;
    }
    write_hoisted(g);
}

/* The level loop of S before which operand K's patterns are written:
 * the outermost of the loops from which on K stays constant (a row of c
 * the same for every row and every trip of the loop outside: once before
 * both, not once a trip of the outer one; measured, (a + b) * c, f64 rows
 * of 28 under 5 under 100, c stride 2, cc / JIT same process 0.50 ->
 * 0.80-1.0, main's rows form 0.82). */
static int pattern_level(const small_kernel *s, int k)
{
    int l = s->levels - 1;
    while (l > 0 && s->p->stride[k][l - 1] == 0)
        l--;
    return l;
}

/* The flat form's patterns (small_kernel.pattern_slot): each vector of
 * the body a leaf constant along the loop needs more than a load for,
 * loaded as the body would and stored into its slot, before level loop
 * LEVEL (pattern_level) for the leaves written there. */
static void small_patterns(small_kernel *s, int level)
{
    generator *g = s->g;
    small_vector *vector = g->small;
    int64_t n = s->p->elements;
    int lanes = lanes_of_small(g);
    for (int i = 0; i < g->leaf_count; i++)
        vector->pattern[i] = -1;
    for (int i = 0; i < g->leaf_count; i++) {
        int k = g->leaves[i].operand;
        if (s->pattern_slot[i] < 0 || pattern_level(s, k) != level)
            continue;
        /* (bodies of more than 64 vectors: the first 64 have patterns) */
        for (int64_t first = 0, index = 0; first < s->body && index < 64;
             first += lanes, index++) {
            if (!(s->pattern_mask[i] >> index & 1))
                continue;
            vector->count = s->body - first < lanes ? (int)(s->body - first) : lanes;
            vector->offset[i] = s->offset + k * n + first;
            vector->staged[i] = false;
            g->free = 0xffffu & ~g->reserved;
            int r = take_register(g);
            small_typed_load(g, r, i);
            store_bytes(g, r, at(RSP, NONE, 1, s->frame + 32 * (s->pattern_slot[i] + (int)index)),
                        bytes_of(g, g->leaves[i].dtype));
            give_register(g, r);
        }
    }
}

/* Which vectors of the body leaf I (constant along the flat form's loop)
 * takes from patterns: those whose lanes are more than a load. */
static uint64_t pattern_vectors(small_kernel *s, int i)
{
    generator *g = s->g;
    small_vector vector;
    memset(&vector, 0, sizeof vector);
    vector.kernel = s;
    small_vector *saved = g->small;
    g->small = &vector;
    int64_t n = s->p->elements;
    int lanes = lanes_of_small(g), k = g->leaves[i].operand;
    uint64_t mask = 0;
    for (int64_t first = 0, index = 0; first < s->body && index < 64; first += lanes, index++) {
        vector.count = s->body - first < lanes ? (int)(s->body - first) : lanes;
        vector.offset[i] = s->offset + k * n + first;
        if (!small_typed_cheap(g, i))
            mask |= 1ull << index;
    }
    g->small = saved;
    return mask;
}

/* Level loop L's counter of S: set to its trips, or (STEP) less one,
 * the flags for the jne.  The innermost two in r10 and r11, the flat
 * form's outer ones in stack slots (a sub a trip of a loop outside the
 * body's: nothing next to the body's work). */
static void small_counter(small_kernel *s, int l, bool step)
{
    builder *b = s->g->b;
    int first = s->levels > 2 ? s->levels - 2 : 0;
    if (l >= first) {
        int reg = l - first == 0 ? R10 : R11;
        if (step) {
            gpr_immediate(b, 5, reg, 1);
        } else {
            rex(b, 0, NONE, reg);
            byte(b, 0xc7);
            modrm_register(b, 0, reg);
            word32(b, (int32_t)s->p->extent[l]);
        }
        return;
    }
    memory m = at(RSP, NONE, 1, s->frame + 32 * s->counter_slot + 8 * l);
    gpr_memory(b, step ? 0x83 : 0xc7, step ? 5 : 0, m); /* sub qword [m], 1 / mov qword [m], trips */
    if (step)
        byte(b, 1);
    else
        word32(b, (int32_t)s->p->extent[l]);
}

/* One pass writing the whole function into g->b. */
static void small_function(small_kernel *s)
{
    generator *g = s->g;
    builder *b = g->b;
    const plan *p = s->p;
    small_vector vector;
    vector.kernel = s;
    for (int i = 0; i < LEAF_MAX; i++)
        vector.pattern[i] = -1;
    g->small = &vector;
    int saved[LEAF_MAX], saved_count = 0;
    for (int i = 0; i < g->leaf_count; i++) {
        int r = g->leaves[i].reg;
        if (r == RBX || r == RBP || r >= R12)
            saved[saved_count++] = r;
    }
    for (int i = 0; i < saved_count; i++)
        push_pop(b, saved[i], false);
    for (int i = 0; i < g->leaf_count; i++) /* in[k - 1]: plan operand k's first element */
        if (g->leaves[i].operand > 0)
            gpr_memory(b, 0x8b, g->leaves[i].reg,
                       at(RSI, NONE, 1, 8 * (g->leaves[i].operand - 1)));
    if (s->slots > 0) { /* zeroed once: lanes past a vector's count stay harmless */
        gpr_immediate(b, 5, RSP, 32 * s->slots);
        vex(b, V_XOR, false, false, 0, 0, in_register(0), -1);
        for (int slot = 0; slot < s->slots; slot++)
            vex(b, V_MOVU_STORE, true, false, 0, 0, in_memory(at(RSP, NONE, 1, 32 * slot)), -1);
    }
    for (int i = 0; i < g->leaf_count; i++) /* tiny operands: their bytes into their slots */
        if (s->tiny_slot[i] >= 0) {
            const leaf *l = &g->leaves[i];
            int size = size_of(l->dtype), k = l->operand;
            int bytes = (int)(s->touched[k][s->touched_count[k] - 1] - s->tiny_first[i] + 1) *
                        size;
            int32_t from = small_displacement(g, s->tiny_first[i], (size_t)size);
            for (int p = 0; p < bytes;) { /* pieces of 8, 4, 2, 1 bytes through rax */
                int piece = 8;
                while (piece > bytes - p)
                    piece /= 2;
                scalar_move(b, piece, false, at(l->reg, NONE, 1, from + p));
                scalar_move(b, piece, true, at(RSP, NONE, 1, 32 * s->tiny_slot[i] + p));
                p += piece;
            }
        }
    for (int i = 0; i < POOL_MAX; i++)
        if (g->constant_register[i] > 0)
            vex(b, V_MOVU_LOAD, true, false, g->constant_register[i], 0,
                in_memory(pool_memory(i)), -1);
    if (s->transcendental_count > 0) /* (typed: no slots) */
        small_transcendentals(s, saved_count);
    int loop_start[BCG_MAX_RANK] = {0};
    for (int l = 0; l < s->levels; l++) { /* mov counter, trips */
        if (s->flat)
            small_patterns(s, l); /* (once per trip of the loops outside l) */
        if (l == s->levels - 1 && g->hoist)
            small_write_hoisted(s);
        small_counter(s, l, false);
        loop_start[l] = b->length;
    }
    if (s->flat)
        small_body_transcendentals(s, false);
    small_vectors(s, &vector, s->body);
    for (int l = s->levels - 1; l >= 0; l--) {
        /* every pointer on by its stride along loop l, back over loop l + 1's trips */
        for (int i = 0; i <= g->leaf_count; i++) {
            int k = i < g->leaf_count ? g->leaves[i].operand : 0;
            if (k < 0) /* (a buffer: the same every trip) */
                continue;
            int reg = i < g->leaf_count ? g->leaves[i].reg : RDI;
            size_t size = i < g->leaf_count ? bcg_dtype_size(g->leaves[i].dtype)
                                             : (size_t)g->width;
            int64_t step = p->stride[k][l];
            if (l + 1 < s->levels)
                step -= p->extent[l + 1] * p->stride[k][l + 1];
            step *= (int64_t)size;
            if (step < INT32_MIN / 2 || step > INT32_MAX / 2)
                g->failed = true;
            else if (step)
                gpr_immediate(b, 0, reg, (int32_t)step);
        }
        small_counter(s, l, true);        /* sub counter, 1 */
        jump_back(b, 0x5, loop_start[l]); /* jne */
        if (l == s->levels - 1 && s->remainder > 0) { /* the flat form's rows left over */
            int64_t **touched = s->touched;
            int *touched_count = s->touched_count;
            s->touched = s->remainder_touched;
            s->touched_count = s->remainder_touched_count;
            small_body_transcendentals(s, true);
            small_vectors(s, &vector, s->remainder);
            s->touched = touched;
            s->touched_count = touched_count;
        }
    }
    if (s->slots > 0)
        gpr_immediate(b, 0, RSP, 32 * s->slots);
    if (s->frame > 0)
        gpr_immediate(b, 0, RSP, s->frame);
    byte(b, 0xc5); /* vzeroupper */
    byte(b, 0xf8);
    byte(b, 0x77);
    for (int i = saved_count - 1; i >= 0; i--)
        push_pop(b, saved[i], true);
    byte(b, 0x31); /* xor eax, eax: 0 for the checked entry (vex_small_checks) */
    byte(b, 0xc0);
    byte(b, 0xc3); /* ret */
    g->small = NULL;
}

static void builder_reset(builder *b);

/* VEX_FLAT_HOIST 0: the flat form computes every value every vector (as
 * before small_mark_hoisted; for measurements). */
int vex_flat_hoist = 1;

/* The function of S from the start: with two-window loads, then, when the
 * constant pool or the registers run out, without them. */
static void small_passes(small_kernel *s)
{
    generator *g = s->g;
    s->two = true;
    g->failed = false;
    g->peak = 0;
    builder_reset(g->b);
    small_function(s);
    if (g->failed || g->b->overflow) {
        s->two = false;
        g->failed = false;
        g->peak = 0;
        builder_reset(g->b);
        small_function(s);
    }
}

/* Elements a vector of small function G's. */
static int lanes_of_small(const generator *g) { return g->typed ? g->lanes : 32 / g->width; }

static void builder_reset(builder *b)
{
    b->length = 0;
    b->overflow = false;
    b->pool_count = 0;
    b->fixup_count = 0;
    b->pending_rip = -1;
    b->pending_pool = 0;
}

bool vex_small_supported(const kernel_ir *ir)
{
    const plan *p = ir->p;
    return ir->root_count == 1 && !ir->reduce && ir->out_dtype == ir->nodes[0]->dtype &&
           !p->empty && p->elements <= VEX_SMALL_MAX;
}

static bcg_status build_small(arena *a, const kernel_ir *ir, bool flat, bool hoist,
                              vex_function **out);

bcg_status vex_build_small(arena *a, const kernel_ir *ir, vex_function **out)
{
    *out = NULL;
    if (!vex_small_supported(ir))
        return BCG_OK;
    /* (subtrees computed once per value take stack and code: without
     * them when the function does not fit) */
    bcg_status status = build_small(a, ir, false, true, out);
    if (status != BCG_OK || *out)
        return status;
    return build_small(a, ir, false, false, out);
}

/* ---- the flat form -----------------------------------------------------------------
 *
 * Short runs (2-D tiles' territory) whose output rows follow each other
 * (row stride == run): the rows x run of each outer index are one
 * contiguous stream, in which a broadcast operand repeats with a short
 * period (a row the same every row: a0 a1 a2 a0 a1 a2 ...; one value a
 * row: b0 b0 b0 b1 b1 b1 ...).  The tiles gathered such operands into
 * tiles of copies first (u8(a * b), a (12,1,1,3), b (1,49,11,1): the
 * gather was 55% of the time, 0.14x the gcc loop).  Here the small
 * kernel's straight-line code covers a body of BODY_ROWS rows, a whole
 * number of vectors (lcm(run, lanes) elements, or a multiple), every
 * lane's element a displacement known now, so each operand's vector is
 * a load, a window and a shuffle, or one value, as small_plan finds; the
 * plan is reshaped to (outer, rows / BODY_ROWS, BODY_ROWS, run) and the
 * small kernel's level loops run the first two, the rows left over are
 * straight-line code of their own after the loop (their windows within
 * the elements they read).  An operand constant along that loop (the
 * same row every row) has the vectors that take more than a load (16
 * word inserts for a row of 3 i16) written once before it into stack
 * slots, the body loads them (small_patterns).  Measured (interleaved
 * against main's 2-D tiles, busy 2-core machine): u8(a * b) above 3.3 us
 * -> 0.72 us (gcc -O3 0.44); minimum(c * c * b, a) f64 runs of 4 over
 * 396864 elements 606 -> 107 us (gcc 102); where(a >= 0.1, a, 0.1) runs
 * of 4 reversed 2.5 -> 0.69 us; a * b f32 (480,640,3) x (3,) 116 -> 96 us.
 *
 * The split is the outermost loop whose rows fit (flat_split), under any
 * number of level loops.  Transcendentals (small_transcendentals) take
 * buffers of the body's elements: one constant along the level loops is
 * computed once before them; one that varies along them again for every
 * body at the top of the innermost level loop (and for the rows left
 * over, only the entries they read), its call keeping r10 and r11 too.
 * Only where the other way is tcc's per-element code: the tiles call
 * their vector polynomials where the C library's f32 functions here take
 * 2 to 6 ns an element.  Measured (sweep --only, cc time / JIT time):
 * f64(f32(a + a) + f32(exp(f32(c)) + b)), i8 rows of 2 x 2 under 5672,
 * 0.14 -> 5.2; exp(0.1 - abs(b / (c + a))) f64 runs of 5 under 3 x 133 x
 * 3, 0.58 -> 1.7. */

/* Least common multiple of two small positive numbers. */
static int64_t least_multiple(int64_t x, int64_t y)
{
    int64_t a = x, b = y;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return x / a * y;
}

/* The loop of P the flat form splits into bodies (its rows; the loops
 * after it are a row, the loops before it the level loops) for vectors
 * of LANES (1: any), or -1: the innermost of at most VEX_FLAT_MAX_RUN, the
 * output contiguous over the loops from it on, a row of at most
 * VEX_FLAT_MAX_ROW elements, and enough rows for a body of whole vectors
 * (or all of them one body, as flat_plan takes them); of those loops the outermost (the fewest level loops, the most rows a
 * loop of bodies).  Level loops of any number: the innermost two count
 * in r10 and r11, the others in stack slots (small_counter).  Before, at
 * most one level loop and the split at loop 1: (c) * 7 + b - a, runs of 4
 * under 2 under 2516 under 10 under 7 (rows of 20128, too long) took
 * tcc's per-element code, 0.27x the gcc loop; rows of 2 x 2 under 5672
 * were bodies of 4 elements, a level trip each. */
/* The least body the usual split (loop 1, or 0 of two loops) keeps;
 * below, the outermost split that fits.  (main's per-plane values
 * computed once a trip of loop 0 need the split at 1: at 16, main's few-
 * rows test fell to 12 of 103 bodies of all the rows; at 8, 18, and i16(1.5
 * * a) rows of 2 x 5 under 1624, a body of 10, 2.8x cc, outer split 3.8x;
 * exp(f32(c)) per row under 5672, bodies of 4, split at 0: 5.2x) */
#define VEX_FLAT_SPLIT_BODY 8
static int flat_split(const kernel_ir *ir, int lanes)
{
    const plan *p = ir->p;
    int n = p->loop_count, inner = n - 1;
    if (n < 2 || p->extent[inner] > vex_flat_max_run(ir) || p->stride[0][inner] != 1)
        return -1;
    int split = -1, usual = n == 2 ? 0 : 1;
    int64_t row = p->extent[inner], usual_body = 0;
    for (int l = inner - 1; l >= 0 && row <= VEX_FLAT_MAX_ROW; l--) {
        if (p->stride[0][l] != row) /* (rows follow each other) */
            break;
        int64_t body_rows = least_multiple(row, lanes) / row;
        if ((body_rows <= p->extent[l] && body_rows * row <= VEX_FLAT_MAX_BODY) ||
            p->extent[l] * row <= VEX_FLAT_MAX_BODY) { /* (all rows one body: flat_plan) */
            split = l;
            if (l == usual) {
                while (body_rows * row < VEX_FLAT_BODY_ELEMENTS && 2 * body_rows <= p->extent[l])
                    body_rows *= 2; /* (as flat_plan) */
                usual_body = (body_rows <= p->extent[l] ? body_rows : p->extent[l]) * row;
            }
        }
        row *= p->extent[l];
    }
    /* (the split at loop 1 where it takes a body of VEX_FLAT_SPLIT_BODY
     * or more: its values the same for a plane computed once a trip of
     * loop 0, small_mark_hoisted) */
    return usual_body >= VEX_FLAT_SPLIT_BODY ? usual : split;
}

int vex_flat_max_run(const kernel_ir *ir)
{
    return ir->rows ? VEX_FLAT_MAX_ROWS_RUN : VEX_FLAT_MAX_RUN;
}

static int flat_rows_loop(const kernel_ir *ir) { return flat_split(ir, 1); }

bool vex_flat_supported(const kernel_ir *ir)
{
    const plan *p = ir->p;
    if (ir->root_count != 1 || ir->reduce || ir->out_dtype != ir->nodes[0]->dtype || p->empty ||
        p->loop_count < 2 || p->loop_count >= BCG_MAX_RANK)
        return false;
    return flat_rows_loop(ir) >= 0;
}

bcg_status vex_build_flat(arena *a, const kernel_ir *ir, vex_function **out)
{
    *out = NULL;
    if (!vex_flat_supported(ir))
        return BCG_OK;
    return build_small(a, ir, true, false, out);
}

/* The flat form's plan of IR's (see above) for vectors of LANES, into
 * *FLAT; its elements are the body's; *REMAINDER the elements of the rows
 * left over.  The body a whole number of vectors, or all the rows when
 * they are fewer; false when it would pass VEX_FLAT_MAX_BODY. */
static bool flat_plan(arena *a, const kernel_ir *ir, int lanes, plan **flat, int64_t *remainder)
{
    const plan *p = ir->p;
    int outer = flat_split(ir, lanes);
    if (outer < 0)
        return false;
    int64_t run = 1, rows = p->extent[outer];
    for (int l = outer + 1; l < p->loop_count; l++)
        run *= p->extent[l];
    int64_t body_rows = least_multiple(run, lanes) / run;
    while (body_rows * run < VEX_FLAT_BODY_ELEMENTS && 2 * body_rows <= rows)
        body_rows *= 2;
    /* fewer rows than a whole number of vectors takes (rows of 161 i32
     * under a loop of 5; of 13 f64 under a loop of 3): all of them one
     * body, its last vector partial (masked), once per trip of the loop
     * outside.  Before, the 2-D tiles gathered every operand not
     * contiguous over a tile into tiles of copies (measured, cc / JIT
     * same process against main: sweep seed 42 case 16, i32 rows of 7, a
     * row reversed the same every row, b transposed, c one value a row,
     * 0.43 -> 0.89-1.15; seed 1 case 240, f64 rows of 13 under a loop of
     * 3, a transposed, 0.66-0.82 -> 1.05-1.30) */
    if (body_rows > rows && rows * run <= VEX_FLAT_MAX_BODY)
        body_rows = rows;
    if (body_rows > rows || body_rows * run > VEX_FLAT_MAX_BODY)
        return false;
    plan *f = arena_alloc(a, sizeof *f);
    if (!f)
        return false;
    *f = *p;
    f->stride = arena_alloc(a, sizeof *f->stride * (size_t)p->operand_count);
    if (!f->stride)
        return false;
    f->loop_count = p->loop_count + 1;
    for (int k = 0; k < p->operand_count; k++) {
        for (int l = 0; l < outer; l++)
            f->stride[k][l] = p->stride[k][l];
        f->stride[k][outer] = p->stride[k][outer] * body_rows;
        for (int l = outer; l < p->loop_count; l++)
            f->stride[k][l + 1] = p->stride[k][l];
    }
    for (int l = 0; l < outer; l++)
        f->extent[l] = p->extent[l];
    f->extent[outer] = rows / body_rows;
    f->extent[outer + 1] = body_rows;
    for (int l = outer + 1; l < p->loop_count; l++)
        f->extent[l + 1] = p->extent[l];
    f->elements = body_rows * run;
    *remainder = rows % body_rows * run;
    *flat = f;
    return true;
}

/* The elements each operand of S reads in the first COUNT of the body. */
static bool prefix_touched(arena *a, small_kernel *s, int64_t count)
{
    int64_t n = s->p->elements;
    int operands = s->p->operand_count;
    s->remainder_touched = arena_alloc(a, sizeof *s->remainder_touched * (size_t)operands);
    s->remainder_touched_count = arena_alloc(a, sizeof *s->remainder_touched_count * (size_t)operands);
    if (!s->remainder_touched || !s->remainder_touched_count)
        return false;
    for (int k = 0; k < operands; k++)
        if (!(s->remainder_touched[k] = sorted_unique(a, s->offset + k * n, count,
                                                      &s->remainder_touched_count[k])))
            return false;
    return true;
}

/* Whether node ID of IR varies along loop L of its plan (an operand of
 * its subtree does). */
static bool small_varies_in(const plan *p, const kernel_ir *ir, int id, int l)
{
    for (int c = id + 1; c < id + ir->value[id].size; c++)
        if (ir->nodes[c]->op == OP_OPERAND && p->stride[ir->nodes[c]->operand + 1][l] != 0)
            return true;
    return false;
}

static bool small_varies(const kernel_ir *ir, int id, int l)
{
    return small_varies_in(ir->p, ir, id, l);
}

/* The values node ID of IR takes: the product of the extents of the
 * loops it varies along. */
static int64_t small_values(const kernel_ir *ir, int id)
{
    int64_t values = 1;
    for (int l = 0; l < ir->p->loop_count; l++)
        values *= small_varies(ir, id, l) ? ir->p->extent[l] : 1;
    return values;
}

/* Whether the flat form takes transcendental ID in place of the tiles'
 * fused function: when it has at most a quarter as many values as there
 * are elements (exp(c), c one value a row of 5), computed once per value
 * by the microkernel (small_hoist), where the tiles compute it for every
 * element of a tile of copies; f32 by its polynomial, as the tiles (bit
 * for bit), not the C library's; f64 by the C library's, as the tiles.  Measured (cc / JIT same
 * process): (b) / (a) + exp(c), f32 rows of 5, a transposed, b stride 3,
 * c one value a row (sweep seed 96 case 74), tiles 0.57 -> flat 1.15;
 * a * exp(c), a transposed, c one value a row: f32 rows of 6 0.44 ->
 * 1.33, of 30 0.37 -> 1.12; f64 rows of 6 0.27 -> 1.02, of 30 0.39 ->
 * 2.5; a + sin(c), f32 rows of 5 under 16 under 100, c one value a row,
 * 0.25 -> 1.11; a + log(c), a stride 2, 0.35 -> 0.67. */
static bool small_few_values(const kernel_ir *ir, int id)
{
    return small_values(ir, id) * 4 <= ir->p->elements;
}

/* The subtrees of an integer or mixed tree (IR, the small kernel's)
 * computed once per value of the loops their operands vary along, into
 * buffers as the transcendentals (small_transcendentals, function 0):
 * the largest ones taking at most a third as many values as there are
 * elements, of two operations or more other than casts, not comparisons
 * (masks), in outputs of 256 elements or more (below, the buffers' and
 * the typed path's costs were more than the operations saved: 0 + b + a,
 * f32 80 elements, 7 -> 16 ns); as many as the buffers the
 * transcendentals leave.  NULL: none.
 * Measured (bcg_run in one process): where(a > c, a, c) + b, f64 rows of
 * 3 over a f64 and c i32 per row and b u8, 546 elements: 312 -> 220 ns
 * (cc 112). */
static bool *small_subtrees(arena *a, const kernel_ir *ir)
{
    const plan *p = ir->p;
    if (p->loop_count < 2 || p->elements < 256)
        return NULL;
    int left = SMALL_TRANSCENDENTALS;
    for (int id = 0; id < ir->node_count; id++)
        left -= small_microkernel(ir->nodes[id]->op, ir->nodes[id]->dtype, false) != 0 &&
                ir->value[id].folded < 0;
    bool *chosen = arena_alloc(a, sizeof *chosen * (size_t)ir->node_count);
    if (!chosen)
        return NULL;
    memset(chosen, 0, sizeof *chosen * (size_t)ir->node_count);
    int count = 0;
    for (int id = 1; id < ir->node_count && count < left;) {
        const expr_node *n = ir->nodes[id];
        int size = ir->value[id].size;
        int operations = 0;
        for (int c = id; c < id + size; c++)
            operations += ir->nodes[c]->op != OP_OPERAND && ir->nodes[c]->op != OP_LITERAL &&
                          ir->nodes[c]->op != OP_CAST && ir->value[c].folded < 0;
        if (n->op == OP_OPERAND || n->op == OP_LITERAL || ir->value[id].folded >= 0 ||
            n->dtype == BCG_BOOL || operations < 2 || small_microkernel(n->op, n->dtype, false) ||
            small_values(ir, id) * 3 > p->elements) {
            id++;
            continue;
        }
        chosen[id] = true;
        count++;
        id += size; /* (not within it) */
    }
    return count ? chosen : NULL;
}

/* Each transcendental of S computed once per value of the loops its
 * operands vary along (S->values, entry_of, argument; its leaves
 * indexed).  Measured (bcg_run in one process, before: the tile code):
 * b + b + exp(f32(c) / a), 108 f64 elements of 18 values, 571 -> 78 ns, cc
 * 90; b - exp(a), 30 f64 of 15, 79 -> 54 ns, cc 52. */
static bool small_hoist(arena *a, small_kernel *s)
{
    const generator *g = s->g;
    const kernel_ir *ir = g->ir;
    const plan *p = s->p;
    int64_t n = p->elements, padded = (n + 31) / 32 * 32;
    for (int j = 0; j < s->transcendental_count; j++) {
        int id = s->transcendental[j];
        /* (the flat form: over the body's loops, of its reshaped plan;
         * one that varies along a level loop computed again a body) */
        bool varies[BCG_MAX_RANK];
        s->per_body[j] = false;
        for (int l = 0; l < p->loop_count; l++) {
            varies[l] = s->flat ? small_varies_in(p, ir, id, l) : small_varies(ir, id, l);
            if (s->flat && l < s->levels) {
                s->per_body[j] = s->per_body[j] || varies[l];
                varies[l] = false;
            }
        }
        int64_t *entry = arena_alloc(a, sizeof *entry * (size_t)padded);
        int64_t *first = arena_alloc(a, sizeof *first * (size_t)n);
        if (!entry || !first)
            return false;
        memset(entry, 0, sizeof *entry * (size_t)padded);
        for (int64_t e = 0; e < n; e++)
            first[e] = -1;
        s->remainder_values[j] = 0;
        int64_t values = 0;
        for (int64_t e = 0; e < n; e++) { /* entry: the varying indices, mixed radix */
            int64_t rest = e, v = 0, scale = 1;
            for (int l = p->loop_count - 1; l >= 0; l--) {
                int64_t index = rest % p->extent[l];
                rest /= p->extent[l];
                if (varies[l]) {
                    v += index * scale;
                    scale *= p->extent[l];
                }
            }
            entry[e] = v;
            values = scale;
            /* (the last element of entry v: any will do; the flat form's
             * first, within the rows left over where they read it) */
            if (v < n && (!s->flat || first[v] < 0))
                first[v] = e;
            if (e < s->remainder && v + 1 > s->remainder_values[j])
                s->remainder_values[j] = v + 1;
        }
        int64_t *argument = arena_alloc(a, sizeof *argument * (size_t)(values * g->leaf_count));
        if (!argument)
            return false;
        for (int i = 0; i < g->leaf_count; i++) {
            int k = g->leaves[i].operand;
            /* (a transcendental not computed yet: not in the argument) */
            const int64_t *entries = k < 0 ? small_entries(s, i) : NULL;
            for (int64_t v = 0; v < values; v++)
                argument[i * values + v] = k >= 0     ? s->offset[k * n + first[v]]
                                           : entries ? entries[first[v]]
                                                     : 0;
        }
        s->values[j] = values;
        s->entry_of[j] = entry;
        s->argument[j] = argument;
    }
    return true;
}

/* The small kernel of IR (FLAT false) or its flat form. */
static bcg_status build_small(arena *a, const kernel_ir *ir, bool flat, bool hoist,
                              vex_function **out)
{
    /* the tree from the operands: no hoisted locals (they are C's) */
    kernel_ir *copy = arena_alloc(a, sizeof *copy);
    builder *b = arena_alloc(a, sizeof *b);
    generator *g = arena_alloc(a, sizeof *g);
    small_kernel *s = arena_alloc(a, sizeof *s);
    int64_t *stride = arena_alloc(a, sizeof *stride * (size_t)(ir->p->operand_count + 1));
    vex_layout *layout = arena_alloc(a, sizeof *layout);
    if (!copy || !b || !g || !s || !stride || !layout)
        return BCG_ERR_NOMEM;
    *copy = *ir;
    copy->value = arena_alloc(a, sizeof *copy->value * (size_t)ir->node_count);
    if (!copy->value)
        return BCG_ERR_NOMEM;
    memcpy(copy->value, ir->value, sizeof *copy->value * (size_t)ir->node_count);
    for (int id = 0; id < ir->node_count; id++)
        copy->value[id].local = NULL;
    int widest = widest_value(copy, 0); /* (before the transcendentals become leaves) */
    /* (every leaf as the tile code's contiguous one: small_memory and
     * small_load place its lanes) */
    for (int k = 0; k <= ir->p->operand_count; k++)
        stride[k] = 1;
    *layout = (vex_layout){stride, false, NULL, 0, 0, NULL, 0};
    memset(g, 0, sizeof *g);
    memset(s, 0, sizeof *s);
    g->ir = copy;
    g->layout = layout;
    g->lane = ir->nodes[0]->dtype;
    g->dbl = g->lane == BCG_F64;
    g->width = g->dbl ? 8 : 4;
    g->lanes = 32 / g->width; /* (the converted leaves' loads: small_typed_load) */
    g->b = b;
    builder_reset(b);
    s->g = g;
    s->copy = copy;
    s->p = ir->p;
    s->body = ir->p->elements;
    /* transcendentals with a microkernel: leaves read from their buffers,
     * the deepest first (a node's children follow it in the IR) */
    int64_t n = ir->p->elements, padded, frame = 0;
    static const char *const names[SMALL_TRANSCENDENTALS] = {"t0", "t1", "t2", "t3"};
    bool *subtree = hoist && !flat ? small_subtrees(a, copy) : NULL;
    for (int id = copy->node_count - 1; id >= 0; id--) {
        const expr_node *node = copy->nodes[id];
        bool few = flat && (ir->tiled || ir->tiles2d) && small_few_values(ir, id);
        uint64_t function = small_microkernel(node->op, node->dtype, few);
        if (subtree && subtree[id]) { /* computed once per value into a buffer too */
            int j = s->transcendental_count++;
            s->transcendental[j] = id;
            s->function[j] = 0;
            s->polynomial[j] = false;
            copy->value[id].local = names[j];
            continue;
        }
        if (!function || copy->value[id].folded >= 0)
            continue;
        /* (the flat form: only where tcc's per-element code is the other
         * way, not the tiles' vector functions, but for a function of few
         * values, small_few_values) */
        if ((flat && (ir->tiled || ir->tiles2d) && !few) ||
            s->transcendental_count == SMALL_TRANSCENDENTALS ||
            node->dtype != expr_operation_type(node))
            return BCG_OK;
        /* once per value of the loops its operands vary along, as the
         * tile code's hoisting (small_hoist; before, once per element, it
         * was left to the tile code beyond 50 ns more) */
        /* the C library's f32 functions (~2 to 6 ns an element, and the
         * call's ~40 ns) where the tile code would call its polynomials
         * (~0.3 ns an element fused): only for at least 16 elements a
         * value and 128 more (measured: exp(a + f32(a * b)), 234 values
         * of 234 elements, tiles 208 ns, here 609; f32(0 + where(f64(a -
         * exp(f32(b))) <= 0.1, ...)), 1 value of 97, tiles 57 ns, here 70) */
        if (small_libm(node->op, node->dtype) && ir->tiled && !few &&
            small_values(ir, id) * 16 + 128 > ir->p->elements)
            return BCG_OK;
        int j = s->transcendental_count++;
        s->transcendental[j] = id;
        s->function[j] = function;
        s->polynomial[j] = few;
        copy->value[id].local = names[j];
    }
    if (s->transcendental_count > 0 || !is_float_lane(g->lane) ||
        !supported(g, 0, true)) { /* integer or mixed (or calls): typed_* */
        g->typed = true;
        g->width = size_of(g->lane);
        g->lanes = 32 / widest;
    }
    if (flat) {
        plan *reshaped;
        if (!flat_plan(a, ir, lanes_of_small(g), &reshaped, &s->remainder))
            return BCG_OK; /* (or out of memory: the tiles take it) */
        s->p = reshaped;
        s->body = reshaped->elements;
        s->levels = flat_split(ir, lanes_of_small(g)) + 1; /* (the loops before the body's rows, and its loop) */
        s->flat = true;
    }
    /* the buffers: the body's elements each (the flat form's) */
    padded = (s->p->elements + 31) / 32 * 32;
    for (int j = 0; j < s->transcendental_count; j++) {
        s->buffer[j] = (int32_t)frame;
        frame += padded * size_of(copy->nodes[s->transcendental[j]]->dtype);
    }
    if (frame > 16384) /* (the stack a call takes) */
        return BCG_OK;
    if (s->transcendental_count > 0) {
        s->identity = arena_alloc(a, sizeof *s->identity * (size_t)padded);
        if (!s->identity)
            return BCG_ERR_NOMEM;
        for (int64_t e = 0; e < padded; e++)
            s->identity[e] = e;
    }
    s->counter_slot = -1;
    if (s->levels > 2) { /* (four counters a slot) */
        s->counter_slot = s->slots;
        s->slots += (s->levels - 2 + 3) / 4;
    }
    for (int i = 0; i < LEAF_MAX; i++)
        s->pattern_slot[i] = -1;
    if (!small_offsets(a, s) || (s->remainder > 0 && !prefix_touched(a, s, s->remainder)))
        return BCG_ERR_NOMEM;
    /* the leaves in the tree's order; a slot for each converted one */
    for (int id = 0; id < copy->node_count; id++)
        if (copy->nodes[id]->op == OP_OPERAND || copy->value[id].local)
            leaf_index(g, id);
    if (g->failed)
        return BCG_OK;
    if (s->transcendental_count > 0 && !small_hoist(a, s))
        return BCG_ERR_NOMEM;
    if (s->transcendental_count > 0) { /* rsp 16-byte aligned at the calls */
        int saved_count = 0;
        for (int i = 0; i < g->leaf_count; i++)
            saved_count += g->leaves[i].reg == RBX || g->leaves[i].reg == RBP ||
                           g->leaves[i].reg >= R12;
        s->frame = (int32_t)frame + (saved_count % 2 == 0 ? 8 : 0);
    }
    for (int i = 0; i < g->leaf_count; i++) { /* (typed: the reads of each leaf) */
        for (int id = 0; id < copy->node_count; id++)
            s->uses[i] += g->leaves[i].operand > 0 && copy->nodes[id]->op == OP_OPERAND &&
                          copy->nodes[id]->operand + 1 == g->leaves[i].operand;
        s->leaf_slot[i] = (!g->typed && g->leaves[i].dtype != g->lane) ||
                                  (g->typed && s->uses[i] > 1)
                              ? s->slots++
                              : -1;
    }
    /* operands of fewer than 16 bytes read: no 16-byte window lies in them
     * (measured: c + abs(where(maximum(a, 5) >= 7, maximum(a, 5), a)) +
     * abs(b), i8 rows of 2 from b (2 elements) and c (8), 296 elements,
     * 155 ns element by element -> 34 ns, cc 38) */
    for (int i = 0; i < g->leaf_count; i++) {
        int k = g->leaves[i].operand;
        s->tiny_slot[i] = -1;
        if (k <= 0 || s->touched_count[k] < 2 || flat) /* (flat: read in loops) */
            continue;
        int64_t low = s->touched[k][0], high = s->touched[k][s->touched_count[k] - 1];
        if ((high - low + 1) * size_of(g->leaves[i].dtype) < 16) {
            s->tiny_slot[i] = s->slots++;
            s->tiny_first[i] = low;
        }
    }
    /* the flat form: leaves constant along its loop, their vectors that
     * take more than a load from patterns (at most 64 slots of them) */
    for (int i = 0; flat && i < g->leaf_count; i++) {
        int k = g->leaves[i].operand;
        if (k <= 0 || s->p->stride[k][s->levels - 1] != 0)
            continue;
        uint64_t mask = pattern_vectors(s, i);
        int vectors = mask ? 64 - __builtin_clzll(mask) : 0;
        if (vectors > 0 && s->slots + vectors <= 64) {
            s->pattern_slot[i] = s->slots;
            s->pattern_mask[i] = mask;
            s->slots += vectors;
        }
    }
    /* the flat form's typed tree: values the same for the whole body and
     * the innermost level loop computed once before it */
    if (flat && g->typed) {
        g->hoist = arena_alloc(a, sizeof *g->hoist * (size_t)copy->node_count);
        g->hoisted = arena_alloc(a, sizeof *g->hoisted * 8);
        if (!g->hoist || !g->hoisted)
            return BCG_ERR_NOMEM;
        for (int id = 0; id < copy->node_count; id++)
            g->hoist[id] = -1;
        g->hoist_count = 0;
        if (vex_flat_hoist)
            small_mark_hoisted(s, 0);
        if (g->hoist_count == 0) {
            g->hoist = NULL;
        } else {
            /* the slots above the transcendentals' buffers, as the
             * patterns' (s->frame + 32 * slot): at rsp + 32 * slot they
             * were a buffer's first bytes, and a per-body function's
             * values overwrote a per-plane value ((e + 5.0) + b + sin(a),
             * f64 rows of 2 x 4 under 140 under 2, e one value a plane,
             * b [2,140,1,2]: b + sin(a), the 5.0 and e lost; a scratch
             * seed of test_random_flat_functions) */
            g->hoist_base = s->slots;
            g->hoist_frame = s->frame;
            s->slots += 2 * g->hoist_count;
        }
    }
    /* a first pass finds the constants and the registers the tree needs;
     * the second keeps the constants in the registers left free.  When the
     * constant pool or the registers run out, two-window loads (five
     * constants a pattern, three registers) give way to gathers and the
     * passes start again. */
    small_passes(s);
    /* code past CODE_MAX: the outer one or two loops of the plan run as
     * loops around the straight-line code of the rest (measured: a * b + c
     * - a over transposed i64, i64 and i16 of 28x36, tiles 1025 -> 789 ns,
     * cc 500) */
    for (int levels = 1; b->overflow && !g->failed && !flat && levels <= 2 &&
                         levels < ir->p->loop_count && s->transcendental_count == 0; levels++) {
        s->levels = levels;
        s->body /= ir->p->extent[levels - 1];
        for (int i = 0; i < g->leaf_count; i++) /* (copied once: not in loops) */
            s->tiny_slot[i] = -1;
        if (!small_touched_sets(a, s))
            return BCG_ERR_NOMEM;
        small_passes(s);
    }
    if (g->failed || b->overflow)
        return BCG_OK;
    int constants = b->pool_count;
    unsigned char (*pool)[32] = arena_alloc(a, sizeof b->pool);
    if (!pool)
        return BCG_ERR_NOMEM;
    memcpy(pool, b->pool, sizeof b->pool);
    if (constants > 0 && g->peak + constants <= 16)
        for (int i = 0; i < constants; i++) {
            g->constant_register[i] = 15 - i;
            g->reserved |= 1u << (15 - i);
        }
    builder_reset(b);
    memcpy(b->pool, pool, sizeof b->pool);
    b->pool_count = constants;
    small_function(s);
    if (g->failed || b->overflow || b->pool_count != constants)
        return BCG_OK;
    vex_function *f = arena_alloc(a, sizeof *f);
    if (!f)
        return BCG_ERR_NOMEM;
    memset(f, 0, sizeof *f);
    f->code = finish(a, b, &f->size);
    if (!f->code)
        return BCG_ERR_NOMEM;
    for (int i = 0; i < g->leaf_count; i++) /* the operands it reads (not the buffers) */
        if (g->leaves[i].operand > 0)
            f->leaf_node[f->leaf_count++] = g->leaf_node[i];
    f->typed = g->typed;
    f->lanes = lanes_of_small(g);
    f->body = flat ? s->body : 0;
    f->split = flat ? s->levels - 1 : 0;
    f->hoisted = g->hoist ? g->hoist_count : 0;
    for (int j = 0; j < s->transcendental_count; j++) {
        /* (the flat form's: a body's values, once or every body) */
        f->computed += s->per_body[j] ? s->values[j] * (n / s->body) : s->values[j];
        f->functions += flat;
        f->functions_per_body += s->per_body[j];
        f->per_element += n;
        f->subtrees += s->function[j] == 0;
        f->polynomials += s->polynomial[j] && s->function[j] != 0;
    }
    *out = f;
    return BCG_OK;
}

/* ---- small kernels: bcg_run's checks in the code ----------------------------------
 *
 * bcg_run's checks (run.c, check_run) cost more than a small kernel: a
 * dozen loads and compares per operand from the kernel's record.  Here
 * they are code before the function, K's byte ranges as displacements:
 *
 *     test rdi, rdi; jz fail; test edi, size - 1; jnz fail
 *     lea r10, [rdi + output_low]; lea r11, [rdi + output_high]
 *     per operand that reads memory:
 *         mov rax, [rsi + 8 * index]; test rax, rax; jz fail
 *         test eax, size - 1; jnz fail
 *         lea rcx, [rax + high]; cmp r10, rcx; jae next      (unsigned, as
 *         lea rcx, [rax + low]; cmp rcx, r11; jae next        run.c's overlaps)
 *         [cmp rax, rdi; je next]                             (may alias)
 *         jmp fail
 *     next: ...
 *     jmp function
 *     fail: mov eax, 1; ret
 *
 * A failed check runs nothing and returns 1: bcg_run then calls check_run,
 * which says what failed, so the messages are check_run's own. */

enum { LABEL_FAIL, LABEL_FUNCTION };

/* A jcc (CC) or jmp (CC < 0) to the next patch_here: where its rel32 is. */
static int jump_ahead(builder *b, int cc)
{
    if (cc < 0) {
        byte(b, 0xe9);
    } else {
        byte(b, 0x0f);
        byte(b, 0x80 + cc);
    }
    int at = b->length;
    word32(b, 0);
    return at;
}

static void patch_here(builder *b, int at)
{
    int32_t rel = b->length - (at + 4);
    for (int k = 0; k < 4 && at + k < CODE_MAX; k++)
        b->code[at + k] = (unsigned char)((uint32_t)rel >> (8 * k));
}

static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

bcg_status vex_small_checks(arena *a, vex_function *f, const bcg_kernel *k)
{
    if (f->entry > 0 || !fits32(k->output_low) || !fits32(k->output_high))
        return BCG_OK;
    for (int i = 0; i < k->check_count; i++)
        if (!fits32(k->checks[i].low) || !fits32(k->checks[i].high))
            return BCG_OK;
    builder *b = arena_alloc(a, sizeof *b);
    if (!b)
        return BCG_ERR_NOMEM;
    builder_reset(b);
    gpr_pair(b, 0x85, RDI, RDI);                       /* test rdi, rdi */
    jump(b, 0x4, LABEL_FAIL);                          /* jz fail */
    byte(b, 0xf7);                                     /* test edi, size - 1 */
    modrm_register(b, 0, RDI);
    word32(b, (int32_t)(k->output_size - 1));
    jump(b, 0x5, LABEL_FAIL);                          /* jnz fail */
    gpr_memory(b, 0x8d, R10, at(RDI, NONE, 1, (int32_t)k->output_low));
    gpr_memory(b, 0x8d, R11, at(RDI, NONE, 1, (int32_t)k->output_high));
    for (int i = 0; i < k->check_count; i++) {
        const run_check *r = &k->checks[i];
        gpr_memory(b, 0x8b, RAX, at(RSI, NONE, 1, 8 * (int32_t)r->index));
        gpr_pair(b, 0x85, RAX, RAX);                   /* test rax, rax */
        jump(b, 0x4, LABEL_FAIL);
        if (r->mask) {
            byte(b, 0xa9);                             /* test eax, mask */
            word32(b, (int32_t)r->mask);
            jump(b, 0x5, LABEL_FAIL);
        }
        gpr_memory(b, 0x8d, RCX, at(RAX, NONE, 1, (int32_t)r->high));
        gpr_pair(b, 0x39, R10, RCX);                   /* cmp r10, rcx */
        int below = jump_ahead(b, 0x3);                /* jae next: out_low >= in_high */
        gpr_memory(b, 0x8d, RCX, at(RAX, NONE, 1, (int32_t)r->low));
        gpr_pair(b, 0x39, RCX, R11);                   /* cmp rcx, r11 */
        int above = jump_ahead(b, 0x3);                /* jae next: in_low >= out_high */
        int same = -1;
        if (r->may_alias) {
            gpr_pair(b, 0x39, RAX, RDI);               /* cmp rax, rdi */
            same = jump_ahead(b, 0x4);                 /* je next */
        }
        jump(b, -1, LABEL_FAIL);
        patch_here(b, below);
        patch_here(b, above);
        if (same >= 0)
            patch_here(b, same);
    }
    jump(b, -1, LABEL_FUNCTION);
    b->label[LABEL_FAIL] = b->length;
    byte(b, 0xb8);                                     /* mov eax, 1 */
    word32(b, 1);
    byte(b, 0xc3);                                     /* ret */
    if (b->overflow)
        return BCG_OK;
    size_t entry = ((size_t)b->length + 31) / 32 * 32; /* the function 32-byte aligned */
    b->label[LABEL_FUNCTION] = (int)entry;
    size_t size = 0;
    unsigned char *checks = finish(a, b, &size);       /* (no pool: SIZE is the code's) */
    unsigned char *code = arena_alloc(a, entry + f->size);
    if (!checks || !code)
        return BCG_ERR_NOMEM;
    memset(code, 0xcc, entry);
    memcpy(code, checks, size);
    memcpy(code + entry, f->code, f->size);            /* position-independent */
    f->code = code;
    f->size = entry + f->size;
    f->entry = entry;
    return BCG_OK;
}
