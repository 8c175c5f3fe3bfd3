// The CPU convolution engines on random shapes past the small cases of test_cpu_conv.cpp: bf16
// convs of the AMX kernels' channel counts across a row block, and every engine on larger
// channels, images and batches, on 1-4 threads.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "cpu_conv_test_util.hpp"

namespace {

namespace dg = dnngraph;
using cpu_conv_test::ConvCase;
using cpu_conv_test::fwd_size;
using cpu_conv_test::Kind;
using cpu_conv_test::random_case;
using cpu_conv_test::run_conv_case;

// bf16 convs of the channel counts the AMX kernels take (16 or a multiple of 32 a group), channels-
// last, at random sizes that cross a 192-row block, with B narrower or wider than twice A's rows,
// on 1-3 threads: the row, column and unit shares and the copied tile halves (a share of 196 rows
// once wrote past its scratch). Elsewhere the bf16-pair or fp32 kernels run the same cases.
TEST(CpuConvImplicitGemm, RandomAmxShapesMatchRef) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 15; ++trial) {
    ConvCase cc;
    do {
      cc.nsp = 2;
      cc.n = 1 + rng() % 2;
      cc.groups = rng() % 4 == 0 ? 2 : 1;
      const int64_t cg[] = {16, 32, 64, 96};
      cc.c = cc.groups * cg[rng() % 4];
      cc.k = cc.groups * (1 + rng() % 640);
      cc.in.clear(); cc.ker.clear(); cc.out.clear(); cc.stride.clear(); cc.dil.clear(); cc.pre.clear(); cc.post.clear();
      for (int d = 0; d < 2; ++d) {
        cc.in.push_back(4 + rng() % 17);
        cc.ker.push_back(1 + rng() % 3);
        cc.stride.push_back(rng() % 4 == 0 ? 2 : 1);
        cc.dil.push_back(rng() % 5 == 0 ? 2 : 1);
        cc.pre.push_back(cc.ker.back() / 2);
        cc.post.push_back(cc.ker.back() / 2);
        cc.out.push_back(
            fwd_size(cc.in.back(), cc.ker.back(), cc.stride.back(), cc.dil.back(), cc.pre.back(), cc.post.back()));
      }
      if (trial % 3 == 1) {  // one image of 193-320 pixels (two row blocks) into twice as many channels
        cc.n = 1;
        cc.groups = 1;
        cc.c = 16;
        cc.in = {14 + static_cast<int64_t>(rng() % 4), 14 + static_cast<int64_t>(rng() % 5)};
        const int64_t r = rng() % 2 == 0 ? 3 : 1;  // same-size output: padding r / 2
        cc.ker = {r, r};
        cc.stride = cc.dil = {1, 1};
        cc.pre = cc.post = {r / 2, r / 2};
        cc.out = cc.in;
        cc.k = 2 * cc.in[0] * cc.in[1] + static_cast<int64_t>(rng() % 64);
      }
    } while (cc.out[0] < 1 || cc.out[1] < 1 ||
             cc.n * cc.out[0] * cc.out[1] * cc.k * (cc.c / cc.groups) * cc.ker[0] * cc.ker[1] > 15'000'000);
    cc.type = dg::DataType::BFLOAT16;
    cc.nhwc_in = true;
    cc.krsc_w = rng() % 2 == 0;
    const int threads = 1 + static_cast<int>(rng() % 3);
    const bool chain = trial % 3 == 0;
    cc.fp32_intermediates = chain;  // the engines chain in fp32 (the ref would round to bf16 between)
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, chain, chain, false, false, dg::DataType::FLOAT, 1e-5,
                  rng() % 2 == 0, threads);
  }
}

// bf16 convs for the vdpbf16ps pair kernels (CPUs with AVX512_BF16 and no AMX; elsewhere AMX or
// the fp32 kernel runs them): channels-last sources read in place as channel pairs, 1-3 spatial
// dims, strides, dilation and padding (taps past the edge read the zero row), groups, even and
// odd channel counts (odd ones convert to fp32), a K block of one tap's chunk or of several
// taps, with and without the fused chain, into fp32 or bf16, on 1-3 threads.
TEST(CpuConvImplicitGemm, RandomBf16PairShapesMatchRef) {
  std::mt19937 rng(59);
  for (int trial = 0; trial < 16; ++trial) {
    ConvCase cc = random_case(rng, Kind::GENERAL);
    const int64_t cg = trial % 4 == 3 ? 1 + 2 * static_cast<int64_t>(rng() % 20) : 2 * (1 + static_cast<int64_t>(rng() % 48));
    cc.c = cc.groups * (trial % 5 == 4 ? 2400 : cg);  // 2400 channels: a tap in two K blocks
    cc.k = cc.groups * (1 + static_cast<int64_t>(rng() % 70));
    int64_t macs = cc.n * cc.k * (cc.c / cc.groups);
    for (int d = 0; d < cc.nsp; ++d) macs *= cc.out[static_cast<size_t>(d)] * cc.ker[static_cast<size_t>(d)];
    if (macs > 8'000'000) cc.n = 1, cc.k = cc.groups;
    cc.type = dg::DataType::BFLOAT16;
    cc.nhwc_in = true;
    cc.krsc_w = rng() % 2 == 0;
    const bool chain = rng() % 2 == 0;
    cc.fp32_intermediates = chain;
    const int threads = 1 + static_cast<int>(rng() % 3);
    const dg::DataType out = rng() % 3 == 0 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    SCOPED_TRACE("C" + std::to_string(cc.c) + " K" + std::to_string(cc.k) + " groups " + std::to_string(cc.groups) + ", " +
                 std::to_string(threads) + " threads");
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, chain, chain, false, false, out,
                  out == dg::DataType::BFLOAT16 ? 1e-2 : 1e-5, rng() % 2 == 0, threads);
  }
  // 9 taps x 131 k pixels: past the plan's tap offset table (2^20 entries), rows resolved per tap.
  ConvCase big;
  big.c = 6;
  big.k = 5;
  big.in = big.out = {362, 362};
  big.ker = {3, 3};
  big.stride = big.dil = {1, 1};
  big.pre = big.post = {1, 1};
  big.type = dg::DataType::BFLOAT16;
  big.nhwc_in = big.krsc_w = big.fp32_intermediates = true;
  run_conv_case("cpu_conv_implicit_gemm", big, false, rng, true, true, false, false, dg::DataType::FLOAT, 1e-5, true, 2);
}

// Every CPU conv engine on shapes past the small random cases' (channels up to ~300, images up to
// 40 wide, batches of 3) on 1-4 threads, in fp32, bf16 and fp16, channels-last or strided, with or
// without the fused chain: the blockings and thread splits that only such sizes reach (and, in
// CI's sanitizer build, no task reading or writing past its scratch).
TEST(CpuConvEngines, RandomLargerShapesOnAnyThreadsMatchRef) {
  std::mt19937 rng(71);
  const char* engines[] = {"cpu_conv_implicit_gemm", "cpu_conv_winograd_f4x3", "cpu_conv_depthwise_direct",
                           "cpu_conv_grouped_direct"};
  for (int trial = 0; trial < 16; ++trial) {
    const int e = trial % 4;
    ConvCase cc = random_case(rng, e == 1 ? Kind::WINOGRAD : e == 2 ? Kind::DEPTHWISE : Kind::GENERAL);
    cc.n = 1 + rng() % 3;
    if (e == 2) {
      cc.groups = cc.c = cc.k = 1 + rng() % 300;
    } else if (e == 3) {
      cc.groups = 2 + rng() % 40;
      cc.c = cc.k = cc.groups * (int64_t{2} << (rng() % 3));  // 2, 4 or 8 channels a group
    } else {
      cc.groups = 1;
      cc.c = 1 + rng() % 300;
      cc.k = 1 + rng() % 300;
    }
    const size_t row = static_cast<size_t>(cc.nsp - 1);
    cc.in[row] = 8 + rng() % 33;
    cc.out[row] = fwd_size(cc.in[row], cc.ker[row], cc.stride[row], cc.dil[row], cc.pre[row], cc.post[row]);
    int64_t macs = cc.n * cc.k * (cc.c / cc.groups);
    for (int d = 0; d < cc.nsp; ++d) macs *= cc.out[static_cast<size_t>(d)] * cc.ker[static_cast<size_t>(d)];
    if (macs > 12'000'000)
      cc.n = 1, cc.k = std::max<int64_t>(cc.groups, cc.k / cc.groups * 12'000'000 / macs * cc.groups);
    const dg::DataType types[] = {dg::DataType::FLOAT, dg::DataType::BFLOAT16, dg::DataType::HALF};
    cc.type = types[rng() % 3];
    cc.nhwc_in = e >= 2 || rng() % 3 != 0;  // the direct engines read channels-last sources
    cc.krsc_w = rng() % 2 == 0;
    const bool chain = rng() % 2 == 0;
    cc.fp32_intermediates = chain;
    const int threads = 1 + static_cast<int>(rng() % 4);
    SCOPED_TRACE(std::string(engines[e]) + ", " + std::to_string(threads) + " threads");
    run_conv_case(engines[e], cc, false, rng, chain, chain, chain && rng() % 2 == 0, false, dg::DataType::FLOAT,
                  e == 1 ? 2e-4 : 1e-5, cc.nhwc_in && rng() % 2 == 0, threads);
  }
}

}  // namespace
