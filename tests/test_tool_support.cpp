// The command line's shared helpers (tools/): the rules every subcommand relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "flags.hpp"
#include "tiling_text.hpp"
#include "tolerance.hpp"

TEST(ToolSupport, ParseIntIsStrict) {
  EXPECT_EQ(tool::parse_int("42", 0, 100), 42);
  EXPECT_EQ(tool::parse_int("0", 0, 100), 0);
  for (const char* bad : {"", " 1", "+1", "1x", "1.0", "-1", "101", "99999999999999999999"})
    EXPECT_FALSE(tool::parse_int(bad, 0, 100)) << bad;
}

TEST(ToolSupport, TilingTextRoundTrips) {
  const vkgmm::Tiling t{64, 32, 128};
  EXPECT_EQ(tool::tiling_text(t), "64,32,128");
  const auto back = tool::parse_tiling(tool::tiling_text(t));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->tm, 64);
  EXPECT_EQ(back->tk, 32);
  EXPECT_EQ(back->tn, 128);
}

TEST(ToolSupport, TilingTextSaysWhy) {
  std::string why;
  EXPECT_FALSE(tool::parse_tiling("8,8", &why));
  EXPECT_EQ(why, "expected TM,TK,TN (three positive integers)");
  EXPECT_FALSE(tool::parse_tiling("8,8,8,", &why));
  EXPECT_EQ(why, "expected TM,TK,TN (three positive integers)");
  EXPECT_FALSE(tool::parse_tiling("0,8,8", &why));
  EXPECT_EQ(why, "every value must be positive");
  EXPECT_FALSE(tool::parse_tiling("8,-1,8", &why));
  EXPECT_EQ(why, "every value must be positive");
}

TEST(ToolSupport, ToleranceWidensWithTheSum) {
  EXPECT_DOUBLE_EQ(tool::tolerance_for(false).atol, 1e-3);
  EXPECT_DOUBLE_EQ(tool::tolerance_for(false).rtol, 1e-5);
  EXPECT_DOUBLE_EQ(tool::tolerance_for(true).rtol, 1e-2);
  EXPECT_DOUBLE_EQ(tool::tolerance_for(false, 64).atol, 1e-3);
  EXPECT_DOUBLE_EQ(tool::tolerance_for(false, 512).atol, 2e-3);
}

TEST(ToolSupport, CompareFindsTheFirstBadElement) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const tool::Tolerance tol{1e-3, 0};
  const tool::Comparison ok = tool::compare({1.0f, nan, inf}, {1.0005f, nan, inf}, tol);
  EXPECT_EQ(ok.bad, 0u);
  EXPECT_NEAR(ok.max_abs_error, 5e-4, 1e-6);
  const tool::Comparison bad = tool::compare({1.0f, 2.0f, nan, -inf}, {1.0f, 2.5f, 0.0f, inf}, tol);
  EXPECT_EQ(bad.bad, 3u);
  EXPECT_EQ(bad.first_bad, 1u);
  EXPECT_TRUE(std::isinf(bad.max_abs_error));
}
