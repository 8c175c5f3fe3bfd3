// Checks of a rejected graph's Status the shape-inference tests share: the error code, and a
// message that is either given whole or must name the node, the tensor and the rule.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "dnngraph/dnngraph.hpp"

namespace test_status {

// Expects s to carry `code` and exactly `message`.
inline void expect_status(const dnngraph::Status& s, dnngraph::ErrorCode code, const std::string& message) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_EQ(s.message(), message);
}

// Expects s to carry `code` and a message that holds `node`, "tensor '<tensor>'" (unless tensor is
// empty) and `rule`.
inline void expect_error(const dnngraph::Status& s, dnngraph::ErrorCode code, const std::string& node,
                         const std::string& tensor, const std::string& rule) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(node), std::string::npos) << s.message();
  if (!tensor.empty()) {
    EXPECT_NE(s.message().find("tensor '" + tensor + "'"), std::string::npos) << s.message();
  }
  EXPECT_NE(s.message().find(rule), std::string::npos) << s.message();
}

}  // namespace test_status
