// test_config.cpp: typed reads, ranges, unknown keys, overrides and their error locations.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/config.h"
#include "harness.h"

namespace bg::test {
namespace {
std::string write_tmp(const std::string& text) {
  static int n = 0;
  const std::string path = scratch_path("config_" + std::to_string(n++) + ".yaml");
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST_CASE("cpu: config reads typed values with defaults and overrides") {
  const std::string p =
      write_tmp("train:\n  lr: 0.5\n  steps: 10\n  name: x\nlist:\n  - {a: 1}\n  - {a: 2}\n");
  ConfigReader r(p, {"train.steps=20", "extra.flag=true"});
  CHECK(r.number("train.lr", 1.0, 0.0, 1.0) == 0.5);
  CHECK(r.integer("train.steps", 1, 1, 100) == 20);
  CHECK(r.string("train.name", "") == "x");
  CHECK(r.boolean("extra.flag", false));
  CHECK(r.number("train.missing", 3.0, 0, 10) == 3.0);
  CHECK(r.list_size("list") == 2);
  CHECK(r.integer("list.1.a", 0, 0, 9) == 2);
  CHECK(r.integer("list.0.a", 0, 0, 9) == 1);
  CHECK_NOTHROW(r.finish());
  CHECK(r.effective_yaml().find("steps: 20") != std::string::npos);
  CHECK(r.effective_yaml().find("missing: 3") != std::string::npos);
  // The effective config keeps lists as lists, so it can be read back.
  const std::string again = write_tmp(r.effective_yaml());
  ConfigReader r2(again, {});
  CHECK(r2.list_size("list") == 2);
  CHECK(r2.integer("list.1.a", 0, 0, 9) == 2);
}

TEST_CASE("cpu: config errors name file line column and key") {
  const std::string p = write_tmp("train:\n  lr: fast\n  steps: 1000\nmodel:\n  widht: 3\n");
  {
    ConfigReader r(p, {});
    CHECK_THROWS_WITH(
        r.number("train.lr", 1.0, 0, 1),
        doctest::Contains((p + ":2:7: train.lr: expected a number, got 'fast'").c_str()));
    CHECK_THROWS_WITH(r.integer("train.steps", 1, 1, 100),
                      doctest::Contains(":3:10: train.steps: value 1000 is out of range [1, 100]"));
  }
  {
    ConfigReader r(p, {});
    r.string("train.lr", "");
    r.integer("train.steps", 1, 1, 10000);
    r.integer("model.width", 1, 1, 10);
    CHECK_THROWS_WITH(r.finish(),
                      doctest::Contains((p + ":5:3: unknown key 'model.widht'").c_str()));
  }
  {
    ConfigReader r(p, {"train.lr=0.1"});
    r.string("model.widht", "");
    r.integer("train.steps", 1, 1, 10000);
    r.number("train.lr", 0, 0, 1);
    r.string("data.path");
    CHECK_THROWS_WITH(r.finish(), doctest::Contains("data.path: required key is missing"));
  }
  CHECK_THROWS_WITH(ConfigReader(p, {"noequals"}),
                    doctest::Contains("--set noequals: expected key.path=value"));
  CHECK_THROWS_WITH(ConfigReader("/nonexistent.yaml", {}),
                    doctest::Contains("/nonexistent.yaml: cannot open config file (No such file"));
  CHECK_THROWS_WITH(ConfigReader(write_tmp("a: [1, 2\n"), {}), doctest::Contains(":2:1:"));
}

TEST_CASE("cpu: config refuses what would otherwise fall back to a default silently") {
  // Empty and null values, in the file and in --set.
  CHECK_THROWS_WITH(ConfigReader(write_tmp("train:\n  steps:\n"), {}),
                    doctest::Contains(":2:3: train.steps: empty value"));
  CHECK_THROWS_WITH(ConfigReader(write_tmp("model: {type: ~}\n"), {}),
                    doctest::Contains("model.type: empty value"));
  CHECK_THROWS_WITH(ConfigReader(write_tmp("a: [1, ~]\n"), {}),
                    doctest::Contains("a.1: empty list element"));
  CHECK_THROWS_WITH(ConfigReader("", {"train.steps="}),
                    doctest::Contains("--set train.steps=: empty value"));
  CHECK_THROWS_WITH(ConfigReader("", {"train.steps=null"}),
                    doctest::Contains("--set train.steps=null: empty value"));
  // A scalar or a list where a section belongs.
  {
    ConfigReader r(write_tmp("model: gpt\n"), {});
    CHECK_THROWS_WITH(r.string("model.type", "x"),
                      doctest::Contains(":1:8: model: expected a section (with keys such as "
                                        "model.type), got 'gpt'"));
  }
  {
    ConfigReader r(write_tmp("model: [1, 2]\n"), {});
    CHECK_THROWS_WITH(r.has("model.type"), doctest::Contains("model: expected a section"));
  }
  {
    ConfigReader r("", {"model=3"});
    CHECK_THROWS_WITH(r.integer("model.n_layer", 1, 1, 9),
                      doctest::Contains("--set model=3: model: expected a section"));
  }
  // Duplicate keys and sections, naming both lines.
  CHECK_THROWS_WITH(ConfigReader(write_tmp("a:\n  b: 1\n  c: 2\n  b: 3\n"), {}),
                    doctest::Contains(":4:3: a.b: duplicate key (first at line 2)"));
  CHECK_THROWS_WITH(ConfigReader(write_tmp("a: {b: 1}\nc: 2\na: {d: 1}\n"), {}),
                    doctest::Contains(":3:1: a: duplicate key (first at line 1)"));
  // A key another setting makes irrelevant.
  {
    ConfigReader r(write_tmp("data: {path: x, train_bin: y}\n"), {});
    r.string("data.train_bin", "");
    r.not_used("data.path", "data.train_bin is set");
    CHECK_THROWS_WITH(r.finish(),
                      doctest::Contains(":1:8: data.path: not used when data.train_bin is set"));
  }
  // Bounded: depth, size, aliases that repeat a large part.
  std::string deep = "a: ";
  for (int i = 0; i < 40; ++i) deep += "[";
  for (int i = 0; i < 40; ++i) deep += "]";
  CHECK_THROWS_WITH(ConfigReader(write_tmp(deep + "\n"), {}),
                    doctest::Contains("nested deeper than 32 levels"));
  std::string lol = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  for (char c = 'b'; c <= 'f'; ++c)
    lol += std::string(1, c) + ": &" + c + " [" + [&] {
      std::string l;
      for (int i = 0; i < 10; ++i) l += std::string(i ? ", *" : "*") + char(c - 1);
      return l;
    }() + "]\n";
  CHECK_THROWS_WITH(ConfigReader(write_tmp(lol), {}), doctest::Contains("more than 100000 values"));
  CHECK_THROWS_WITH(ConfigReader(write_tmp(std::string(kMaxConfigBytes + 1, '#')), {}),
                    doctest::Contains("larger than 1048576 bytes"));
  const std::string dir = "/tmp";
  CHECK_THROWS_WITH(ConfigReader(dir, {}), doctest::Contains("/tmp: is a directory"));
}

}  // namespace bg::test
