// wgmma.mma_async m64nNk16 (bf16/fp16), m64nNk8 (tf32) or m64nNk32 (fp8) with fp32 accumulators, A and B from
// shared-memory descriptors: WgmmaSs<DT, N>::mma<TA, TB>, N = 64 (the convolution's 64-wide tiles,
// attention's S tiles), 128 or 256; TA/TB: the operand is MN-major (transposed); scale_d 0
// overwrites the accumulators. One macro writes each instruction's wrapper for every N: its N / 2
// accumulator operands, then the others numbered after them, come from the tables below.
#pragma once
#include "gemm_common.cuh"

namespace dg {

// "%0, %1, ..., %(n - 1)": the n accumulators of an m64nNk16 instruction (n = N / 2) in its text.
#define DG_WGMMA_ACC_32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define DG_WGMMA_ACC_64 DG_WGMMA_ACC_32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define DG_WGMMA_ACC_96 DG_WGMMA_ACC_64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define DG_WGMMA_ACC_128 DG_WGMMA_ACC_96 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

// The asm output operands "+f"(d[0]), ..., "+f"(d[n - 1]).
#define DG_WGMMA_D8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define DG_WGMMA_D32(i) DG_WGMMA_D8(i), DG_WGMMA_D8(i + 8), DG_WGMMA_D8(i + 16), DG_WGMMA_D8(i + 24)
#define DG_WGMMA_D_32 DG_WGMMA_D32(0)
#define DG_WGMMA_D_64 DG_WGMMA_D_32, DG_WGMMA_D32(32)
#define DG_WGMMA_D_96 DG_WGMMA_D_64, DG_WGMMA_D32(64)
#define DG_WGMMA_D_128 DG_WGMMA_D_96, DG_WGMMA_D32(96)

// "%n", ..., "%(n + 5)": the names of the operands that follow n accumulators (a wrapper takes
// those it has and leaves the rest in its "...").
#define DG_WGMMA_AFTER_32 "%32", "%33", "%34", "%35", "%36", "%37"
#define DG_WGMMA_AFTER_64 "%64", "%65", "%66", "%67", "%68", "%69"
#define DG_WGMMA_AFTER_96 "%96", "%97", "%98", "%99", "%100", "%101"
#define DG_WGMMA_AFTER_128 "%128", "%129", "%130", "%131", "%132", "%133"

// Calls macro m with the arguments spread (a table above expands to several).
#define DG_WGMMA_CALL(m, ...) m(__VA_ARGS__)

// D (=|+=) A * B, both from shared-memory descriptors, by operand type DT and tile width N.
template <int DT, int N>
struct WgmmaSs;

// 16-bit operands (TYPE "bf16" or "f16"): descriptors, scale_d, and the transposes as immediates.
#define DG_WGMMA_SS_16BIT(DT, TYPE, N, NACC) DG_WGMMA_CALL(DG_WGMMA_SS_16BIT_, DT, TYPE, N, NACC, DG_WGMMA_AFTER_##NACC)
#define DG_WGMMA_SS_16BIT_(DT, TYPE, N, NACC, DA, DB, SCALE, TRANS_A, TRANS_B, ...)                                 \
  template <>                                                                                                          \
  struct WgmmaSs<DT, N> {                                                                                              \
    template <bool TA, bool TB>                                                                                        \
    __device__ __forceinline__ static void mma(float (&d)[NACC], u64 da, u64 db, int scale_d) {                         \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                                  \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" DG_WGMMA_ACC_##NACC "}, " DA    \
                   ", " DB ", p, 1, 1, " TRANS_A ", " TRANS_B ";\n}\n"                                                 \
                   : DG_WGMMA_D_##NACC                                                                                 \
                   : "l"(da), "l"(db), "r"(scale_d), "n"(TA ? 1 : 0), "n"(TB ? 1 : 0));                                \
    }                                                                                                                  \
  };

// TF32 (fp32 in shared memory, read as tf32: the low 13 mantissa bits are ignored; k8 per
// instruction) and FP8 (e4m3 / e5m2 bytes; k32): a 32-byte k step as for 16-bit types; K-major
// operands only (these forms have no transposes).
#define DG_WGMMA_SS_KMAJOR(DT, TYPE, TYPE_B, K, N, NACC) \
  DG_WGMMA_CALL(DG_WGMMA_SS_KMAJOR_, DT, TYPE, TYPE_B, K, N, NACC, DG_WGMMA_AFTER_##NACC)
#define DG_WGMMA_SS_KMAJOR_(DT, TYPE, TYPE_B, K, N, NACC, DA, DB, SCALE, ...)                                          \
  template <>                                                                                                          \
  struct WgmmaSs<DT, N> {                                                                                              \
    template <bool TA, bool TB>                                                                                        \
    __device__ __forceinline__ static void mma(float (&d)[NACC], u64 da, u64 db, int scale_d) {                         \
      static_assert(!TA && !TB, TYPE " wgmma reads K-major A and B only");                                             \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                                  \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k" #K ".f32." TYPE "." TYPE_B " {" DG_WGMMA_ACC_##NACC "}, "\
                   DA ", " DB ", p, 1, 1;\n}\n"                                                                         \
                   : DG_WGMMA_D_##NACC                                                                                 \
                   : "l"(da), "l"(db), "r"(scale_d));                                                                  \
    }                                                                                                                  \
  };
#define DG_WGMMA_SS_TF32(N, NACC) DG_WGMMA_SS_KMAJOR(DT_FLOAT, "tf32", "tf32", 8, N, NACC)
// FP8: both formats, and the pairs that mix them (dg_types.cuh's operand-pair codes).
#define DG_WGMMA_SS_FP8(N, NACC)                                       \
  DG_WGMMA_SS_KMAJOR(DT_FP8_E4M3, "e4m3", "e4m3", 32, N, NACC)       \
  DG_WGMMA_SS_KMAJOR(DT_FP8_E5M2, "e5m2", "e5m2", 32, N, NACC)       \
  DG_WGMMA_SS_KMAJOR(DT_FP8_E4M3_E5M2, "e4m3", "e5m2", 32, N, NACC) \
  DG_WGMMA_SS_KMAJOR(DT_FP8_E5M2_E4M3, "e5m2", "e4m3", 32, N, NACC)

DG_WGMMA_SS_16BIT(DT_BFLOAT16, "bf16", 64, 32)
DG_WGMMA_SS_16BIT(DT_HALF, "f16", 64, 32)
DG_WGMMA_SS_TF32(64, 32)
DG_WGMMA_SS_FP8(64, 32)
DG_WGMMA_SS_16BIT(DT_BFLOAT16, "bf16", 128, 64)
DG_WGMMA_SS_16BIT(DT_HALF, "f16", 128, 64)
DG_WGMMA_SS_TF32(128, 64)
DG_WGMMA_SS_FP8(128, 64)
DG_WGMMA_SS_16BIT(DT_BFLOAT16, "bf16", 256, 128)
DG_WGMMA_SS_16BIT(DT_HALF, "f16", 256, 128)
DG_WGMMA_SS_TF32(256, 128)
DG_WGMMA_SS_FP8(256, 128)

}  // namespace dg
