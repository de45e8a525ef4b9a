// Every file of the fuzzers' corpora (fuzz/corpus/<target>/) through the same target bodies the fuzzers
// run, so the corpora replay in the default test run, without clang. A file the fuzzer once found
// interesting (or that reproduced a bug) keeps being checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "targets.hpp"

namespace fs = std::filesystem;

namespace {

// $VKGMM_FUZZ_CORPUS_DIR where set (scripts/bundle.sh carries the corpora beside test_host to a machine
// without this source tree), else the source tree's.
fs::path corpus_dir() {
  const char* dir = std::getenv("VKGMM_FUZZ_CORPUS_DIR");
  return dir && *dir ? fs::path(dir) : fs::path(VKGMM_FUZZ_CORPUS_DIR);
}

std::vector<fs::path> corpus(const std::string& target) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(corpus_dir() / target))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void replay(const std::string& target, std::string (*one)(const uint8_t*, size_t)) {
  const auto files = corpus(target);
  ASSERT_GE(files.size(), 10u) << "the " << target << " corpus is missing or nearly empty";
  for (const auto& f : files) {
    const std::vector<uint8_t> bytes = slurp(f);
    EXPECT_EQ(one(bytes.data(), bytes.size()), "") << f;
  }
}

TEST(FuzzReplay, NpyCorpus) { replay("npy", vkgmm::fuzz::npy_one); }
TEST(FuzzReplay, MetadataCorpus) { replay("metadata", vkgmm::fuzz::metadata_one); }
TEST(FuzzReplay, GgufCorpus) { replay("gguf", vkgmm::fuzz::gguf_one); }

}  // namespace
