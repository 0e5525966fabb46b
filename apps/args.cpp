// args.cpp: the command line's words: positional arguments, --set overrides and --name value
// options, and options read as numbers (cli.h).
#include <cstring>
#include <filesystem>
#include <string>

#include "cli.h"
#include "core/config.h"
#include "core/error.h"

namespace bg::cli {

namespace {

// Options that take no value (every other --name takes one); each command's allow_only still
// decides whether it accepts them.
bool is_flag(const std::string& arg) {
  static const char* const kFlags[] = {"--packed", "--markdown"};
  for (const char* f : kFlags)
    if (arg == f) return true;
  return false;
}

}  // namespace

Args parse_args(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--set" || s.rfind("--set=", 0) == 0) {
      BG_CHECK(s != "--set" || i + 1 < argc, "cli", "--set needs key.path=value");
      const std::string set = s == "--set" ? argv[++i] : s.substr(6);
      // "--set key value" would leave the value behind as a positional argument.
      BG_CHECK(set.find('=') != std::string::npos, "cli", "--set ", set,
               ": expected key.path=value, with '=' between the key and its value");
      a.overrides.push_back(set);
    } else if (is_flag(s)) {
      a.options.emplace_back(s.substr(2), "");
    } else if (s.rfind("--", 0) == 0) {
      if (i + 1 >= argc) fail("cli", "option ", s, " needs a value");
      const std::string value = argv[++i];
      // An empty value would be taken as "not given" (an output never written, a default used).
      BG_CHECK(!value.empty(), "cli", "option ", s, ": empty value");
      a.options.emplace_back(s.substr(2), value);
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

std::string Args::option(const std::string& name, const std::string& def) const {
  for (const auto& [k, v] : options)
    if (k == name) return v;
  return def;
}

bool Args::has(const std::string& name) const {
  for (const auto& [k, v] : options)
    if (k == name) return true;
  return false;
}

void Args::allow_only(const std::vector<std::string>& names) const {
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& k = options[i].first;
    bool ok = false;
    for (const auto& n : names) ok |= n == k;
    if (!ok) fail("cli", "unknown option '--", k, "' (see --help)");
    for (size_t j = 0; j < i; ++j)
      if (options[j].first == k) fail("cli", "option --", k, " given twice");
  }
}

void Args::exclusive(const std::string& a, const std::string& b) const {
  BG_CHECK(!(has(a) && has(b)), "cli", "--", a, " and --", b, " cannot be used together");
}

int64_t parse_integer(const std::string& text, const std::string& option, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  BG_CHECK(used == text.size() && !text.empty(), "cli", option, ": expected an integer, got '",
           text, "'");
  BG_CHECK(v >= lo && v <= hi, "cli", option, ": ", v, " is outside [", lo, ", ", hi, "]");
  return v;
}

double parse_number(const std::string& text, const std::string& option, double lo, double hi) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  BG_CHECK(used == text.size() && !text.empty(), "cli", option, ": expected a number, got '", text,
           "'");
  BG_CHECK(v >= lo && v <= hi, "cli", option, ": ", v, " is outside [", lo, ", ", hi, "]");
  return v;
}



}  // namespace bg::cli
