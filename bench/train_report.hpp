// --train's part of the report: the "train" group of a model layer's JSON entry and the training table.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "report.hpp"

namespace bench {

// `, "train": {...}` for a layer timed with --train, `, "train": null` for one without.
std::string train_json(const Result& r);
// The training table of the layers that have a train row (nothing when none has).
void print_train_table(std::FILE* f, const std::vector<Result>& layers);

}  // namespace bench
