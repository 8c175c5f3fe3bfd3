// The CUDA runtime: what `dnngraph info` reports, handles for devices this machine cannot give, and
// (on a GPU) device info, memory, pointer checks, events and CUDA's own error strings.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dnngraph::cuda {
namespace {

TEST(CudaRuntime, DescribeSaysWhatWasSearched) {
  const std::string d = describe_runtime();
  EXPECT_NE(d.find("libcuda.so.1"), std::string::npos) << d;
  EXPECT_NE(d.find("NVRTC"), std::string::npos) << d;
  if (!driver()) {
    EXPECT_NE(d.find("not usable"), std::string::npos) << d;
  }
  if (nvrtc()) {
    EXPECT_NE(d.find(nvrtc_path()), std::string::npos) << d;
    EXPECT_GE(nvrtc_version(), 120);
  }
}

TEST(CudaRuntime, AnUnavailableDeviceGivesAHandleThatSaysWhy) {
  Handle h(Device::cuda(63));
  EXPECT_EQ(h.status().code(), ErrorCode::DEVICE_NOT_AVAILABLE);
  EXPECT_NE(h.status().message().find("cuda:63"), std::string::npos) << h.status().message();
  // The default handle falls back to the CPU when no GPU can be had.
  if (device_count() == 0) {
    EXPECT_TRUE(Handle().device().is_cpu());
  }
}

TEST(CudaRuntime, SuccessIsOkAndErrorsCarryTheirCode) {
  EXPECT_TRUE(check(CUDA_SUCCESS, "x").ok());
  const Status s = check(2, "cuMemAlloc of 5 bytes");
  EXPECT_EQ(s.code(), ErrorCode::CUDA_API_FAILED);
  EXPECT_NE(s.message().find("cuMemAlloc of 5 bytes"), std::string::npos);
  if (driver()) {
    EXPECT_NE(s.message().find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << s.message();
  }
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() == 0) {
      const std::string why = driver() ? "the driver reports none" : driver_error();
      const char* required = std::getenv("DNNGRAPH_REQUIRE_GPU");
      if (required && *required && std::string(required) != "0") FAIL() << "DNNGRAPH_REQUIRE_GPU: " << why;
      GTEST_SKIP() << "no CUDA device: " << why;
    }
    h_ = std::make_unique<Handle>(Device::cuda(0));
    ASSERT_TRUE(h_->status().ok()) << h_->status().to_string();
  }
  std::unique_ptr<Handle> h_;
};

TEST_F(CudaDevice, InfoDescribesTheDevice) {
  const DeviceInfo& info = impl_of(*h_).info;
  EXPECT_EQ(info.signature.rfind("cuda:sm_", 0), 0u) << info.signature;
  EXPECT_GE(info.sm_version, 70);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GT(info.peak_bytes_per_s, 1e11);
  EXPECT_GT(info.peak_flops, 1e13);
  EXPECT_GT(info.l2_bytes, 0);
  std::printf("device: %s, %d SMs, %.0f GB/s, %.0f TFLOP/s bf16, L2 %lld MB\n", info.signature.c_str(),
              info.multiprocessors, info.peak_bytes_per_s / 1e9, info.peak_flops / 1e12,
              static_cast<long long>(info.l2_bytes >> 20));
}

TEST_F(CudaDevice, MemoryRoundTripsOnTheHandlesStream) {
  HandleImpl& h = impl_of(*h_);
  void* stream = nullptr;
  ASSERT_TRUE(create_stream(h, &stream).ok());
  ASSERT_TRUE(h_->set_stream(stream).ok());
  std::vector<int> src(100000), back(100000, -1);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int>(i * 7 + 3);
  {
    memory::Buffer buf(h, src.size() * 4);
    ASSERT_TRUE(buf.status().ok()) << buf.status().to_string();
    EXPECT_TRUE(memory::is_usable_pointer(h, buf.get()));
    EXPECT_FALSE(memory::is_usable_pointer(h, src.data()));  // pageable host memory
    ASSERT_TRUE(memory::copy_to_device(h, buf.get(), src.data(), src.size() * 4).ok());
    ASSERT_TRUE(fill32(h, buf.get(), 0xdeadbeefu, 10).ok());
    ASSERT_TRUE(memory::copy_to_host(h, back.data(), buf.get(), back.size() * 4).ok());
  }
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(static_cast<uint32_t>(back[i]), 0xdeadbeefu);
  for (size_t i = 10; i < src.size(); ++i) ASSERT_EQ(back[i], src[i]) << i;
  ASSERT_TRUE(h_->set_stream(nullptr).ok());
  destroy_stream(h, stream);
}

TEST_F(CudaDevice, ErrorsCarryCudasOwnString) {
  void* p = nullptr;
  const Status s = allocate(impl_of(*h_), size_t{1} << 50, &p);  // a petabyte
  EXPECT_EQ(s.code(), ErrorCode::CUDA_API_FAILED);
  EXPECT_NE(s.message().find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << s.message();
  EXPECT_EQ(p, nullptr);
}

TEST_F(CudaDevice, EventsTimeWorkOnTheStream) {
  HandleImpl& h = impl_of(*h_);
  std::unique_ptr<EventTimer> timer;
  ASSERT_TRUE(EventTimer::create(h, timer).ok());
  memory::Buffer buf(h, size_t{256} << 20);
  ASSERT_TRUE(timer->start().ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(fill32(h, buf.get(), static_cast<uint32_t>(i), buf.size() / 4).ok());
  ASSERT_TRUE(timer->stop().ok());
  double seconds = 0;
  ASSERT_TRUE(timer->seconds(seconds).ok());
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 1.0);
  std::printf("4 x 256 MiB memset: %.3f ms (%.0f GB/s)\n", seconds * 1e3, 4.0 * buf.size() / seconds / 1e9);
}

}  // namespace
}  // namespace dnngraph::cuda
