/* dtype.c - bcgen's element types, their C names and NumPy's promotion. */
#include <string.h>

#include "internal.h"
#include "../runtime/half.h"

/* ORDER DTYPE (runtime/bcgen.h) */
static const struct {
    const char *name, *numpy_name, *ctype;
    dtype_kind kind;
    int bits;
} dtypes[BCG_DTYPE_COUNT] = {
    {"bool", "bool", "bcg_u8", KIND_BOOL, 8},
    {"i8", "int8", "bcg_i8", KIND_INT, 8},
    {"i16", "int16", "bcg_i16", KIND_INT, 16},
    {"i32", "int32", "bcg_i32", KIND_INT, 32},
    {"i64", "int64", "bcg_i64", KIND_INT, 64},
    {"u8", "uint8", "bcg_u8", KIND_UINT, 8},
    {"u16", "uint16", "bcg_u16", KIND_UINT, 16},
    {"u32", "uint32", "bcg_u32", KIND_UINT, 32},
    {"u64", "uint64", "bcg_u64", KIND_UINT, 64},
    {"f32", "float32", "float", KIND_FLOAT, 32},
    {"f64", "float64", "double", KIND_FLOAT, 64},
    {"f16", "float16", "bcg_f16", KIND_FLOAT, 16},
    {"bf16", "bfloat16", "bcg_bf16", KIND_FLOAT, 16},
};

static bool valid(bcg_dtype t) { return (unsigned)t < BCG_DTYPE_COUNT; }

const char *bcg_dtype_name(bcg_dtype t) { return valid(t) ? dtypes[t].name : "?"; }
size_t bcg_dtype_size(bcg_dtype t) { return valid(t) ? (size_t)dtypes[t].bits / 8 : 0; }
dtype_kind dtype_kind_of(bcg_dtype t) { return valid(t) ? dtypes[t].kind : KIND_BOOL; }
int dtype_bits(bcg_dtype t) { return valid(t) ? dtypes[t].bits : 0; }
const char *dtype_ctype(bcg_dtype t) { return valid(t) ? dtypes[t].ctype : "?"; }

bool dtype_from_text(const char *s, size_t n, bcg_dtype *out)
{
    if (n == (size_t)-1)
        n = strlen(s);
    for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
        const char *a = dtypes[t].name, *b = dtypes[t].numpy_name;
        if ((strlen(a) == n && memcmp(a, s, n) == 0) || (strlen(b) == n && memcmp(b, s, n) == 0)) {
            *out = (bcg_dtype)t;
            return true;
        }
    }
    if (n == 4 && memcmp(s, "half", 4) == 0) {
        *out = BCG_F16;
        return true;
    }
    return false;
}

bcg_status bcg_dtype_parse(const char *text, bcg_dtype *dtype)
{
    if (!text || !dtype)
        return BCG_ERR_USAGE;
    return dtype_from_text(text, (size_t)-1, dtype) ? BCG_OK : BCG_ERR_TYPE;
}

static bcg_dtype int_of_bits(int bits, bool is_signed)
{
    switch (bits) {
    case 8: return is_signed ? BCG_I8 : BCG_U8;
    case 16: return is_signed ? BCG_I16 : BCG_U16;
    case 32: return is_signed ? BCG_I32 : BCG_U32;
    default: return is_signed ? BCG_I64 : BCG_U64;
    }
}

/* NumPy's result_type for arrays: the smallest type both safely cast to. */
bcg_dtype dtype_promote(bcg_dtype a, bcg_dtype b)
{
    if (a == b)
        return a;
    dtype_kind ka = dtypes[a].kind, kb = dtypes[b].kind;
    int ba = dtypes[a].bits, bb = dtypes[b].bits;
    if (ka == KIND_BOOL)
        return b;
    if (kb == KIND_BOOL)
        return a;
    if (ka == KIND_FLOAT || kb == KIND_FLOAT) {
        if (ka == KIND_FLOAT && kb == KIND_FLOAT) /* f16 + bf16: f32 holds both */
            return ba != bb ? (ba > bb ? a : b) : BCG_F32;
        bcg_dtype f = ka == KIND_FLOAT ? a : b, i = ka == KIND_FLOAT ? b : a;
        /* f16 and bf16 hold 8-bit integers exactly, f32 16-bit ones; wider
         * ones need f64 (NumPy's lattice; bf16 stands beside f16) */
        if (dtypes[f].bits == 16 && dtypes[i].bits <= 8)
            return f;
        if (dtypes[f].bits <= 32 && dtypes[i].bits <= 16)
            return BCG_F32;
        return BCG_F64;
    }
    if (ka == kb)
        return ba >= bb ? a : b;
    /* one signed, one unsigned */
    int sbits = ka == KIND_INT ? ba : bb, ubits = ka == KIND_UINT ? ba : bb;
    if (sbits > ubits)
        return int_of_bits(sbits, true);
    if (ubits >= 64)
        return BCG_F64;
    return int_of_bits(ubits * 2, true);
}

bcg_dtype dtype_float_for(bcg_dtype t)
{
    if (dtypes[t].kind == KIND_FLOAT)
        return t;
    return dtypes[t].bits <= 8 ? BCG_F16 : dtypes[t].bits <= 16 ? BCG_F32 : BCG_F64;
}

bool dtype_is_half(bcg_dtype t) { return t == BCG_F16 || t == BCG_BF16; }

bcg_dtype dtype_compute(bcg_dtype t) { return dtype_is_half(t) ? BCG_F32 : t; }

double dtype_round_float(bcg_dtype t, double x)
{
    switch (t) {
    case BCG_F32: return (double)(float)x;
    case BCG_F16: return (double)half_to_float(half_from_double(x));
    case BCG_BF16: return (double)bfloat_to_float(bfloat_from_float((float)x));
    default: return x;
    }
}

uint16_t bcg_f16_from_f32(float x) { return half_from_float(x); }
uint16_t bcg_f16_from_f64(double x) { return half_from_double(x); }
float bcg_f16_to_f32(uint16_t bits) { return half_to_float(bits); }
uint16_t bcg_bf16_from_f32(float x) { return bfloat_from_float(x); }
float bcg_bf16_to_f32(uint16_t bits) { return bfloat_to_float(bits); }
