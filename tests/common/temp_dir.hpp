// Fresh folders for the tests that write files (tuning DB, kernel cache, autotune records).
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace test_files {

// A new empty folder under gtest's temporary directory, named `<prefix>_XXXXXX` (mkdtemp).
inline std::string fresh_dir(const std::string& prefix) {
  std::string tmpl = ::testing::TempDir() + prefix + "_XXXXXX";
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr) << tmpl;
  return tmpl;
}

}  // namespace test_files
