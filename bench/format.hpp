// Numbers as the bench's report writes them, in its tables and its JSON.
#pragma once

#include <optional>
#include <string>

namespace bench {

// JSON has no NaN or infinity: those (and absent values) become null.
std::string json_number(std::optional<double> x);
// x with `decimals` decimals, or "-" when absent or not finite.
std::string fixed(std::optional<double> x, int decimals);
// A roof's fraction as a table cell: "42.0%", or "probe!" where the call beat the roof (NaN: Result).
std::string roof_percent(double fraction);
// Milliseconds with three significant digits or more: 0.0123, 1.23, 123, 12345.
std::string ms_text(double ms);

}  // namespace bench
