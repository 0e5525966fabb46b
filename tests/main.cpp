// main.cpp: the doctest runner. CUDA cases that find no GPU (and cases whose ../shared/data file
// is absent) count themselves as skipped; when
// every case this process ran was skipped, it exits 77, which CTest reports as "Skipped"
// rather than passed (a test that did not run never passes).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/device.h"
#include "harness.h"

namespace bg::test {
namespace {
std::atomic<int> g_cases_started{0};
std::atomic<int> g_cases_skipped{0};

struct CaseCounter : doctest::IReporter {
  explicit CaseCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++g_cases_started; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
}  // namespace

bool cuda_skip() {
  if (bg::cuda_available()) return false;
  ++g_cases_skipped;
  return true;
}

void skip_case(const std::string& why) {
  std::printf("[bitgrad] case skipped: %s\n", why.c_str());
  ++g_cases_skipped;
}

std::string shared_data_file(const std::string& name) {
  const char* dir = std::getenv("BITGRAD_DATA_DIR");
  const std::string path = std::string(dir ? dir : "../shared/data") + "/" + name;
  if (std::filesystem::exists(path)) return path;
  std::printf("[bitgrad] %s absent: case skipped\n", path.c_str());
  ++g_cases_skipped;
  return "";
}

}  // namespace bg::test

REGISTER_LISTENER("case_counter", 1, bg::test::CaseCounter);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  const int skipped = bg::test::g_cases_skipped, started = bg::test::g_cases_started;
  if (skipped > 0)
    std::printf("[bitgrad] %d case(s) skipped (no CUDA device or no data)\n", skipped);
  if (rc == 0 && started > 0 && skipped == started) return 77;
  return rc;
}
