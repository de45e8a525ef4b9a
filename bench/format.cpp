#include "format.hpp"

#include <cmath>
#include <cstdio>

namespace bench {

std::string json_number(std::optional<double> x) {
  if (!x || !std::isfinite(*x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", *x);
  return buf;
}

std::string roof_percent(double fraction) {
  if (!std::isfinite(fraction)) return "probe!";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string fixed(std::optional<double> x, int decimals) {
  if (!x || !std::isfinite(*x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, *x);
  return buf;
}

std::string ms_text(double ms) {
  const int decimals = ms >= 100 ? 0 : ms >= 10 ? 1 : ms >= 1 ? 2 : ms >= 0.1 ? 3 : 4;
  return fixed(ms, decimals);
}

}  // namespace bench
