#include "config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "error.h"
#include "files.h"

namespace bg {
namespace {

std::vector<std::string> split_key(const std::string& key) {
  // Every part, empty ones included ("model." is "model" and ""), so a stray dot is refused.
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(key.substr(start, dot - start));
  parts.push_back(key.substr(start));
  return parts;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string scalar_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

// Shortest text that reads back as the same double (0.1, not 0.10000000000000001).
YAML::Node number_node(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return YAML::Node(std::string(buf, res.ptr));
}

}  // namespace

namespace {
// 1048576, not 1.04858e+06: integers in full, others to 15 significant digits.
std::string number_text(double v) {
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 9e15)
    std::snprintf(buf, sizeof buf, "%lld", (long long)v);
  else
    return shortest_text(v);  // never rounded into a neighbouring value
  return buf;
}
}  // namespace

namespace {
void flatten(const YAML::Node& node, const std::string& key,
             std::vector<std::pair<std::string, std::string>>* out) {
  if (node.IsMap()) {
    for (const auto& kv : node)
      flatten(kv.second, (key.empty() ? "" : key + ".") + kv.first.as<std::string>(), out);
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  out->emplace_back(key, e.c_str());
}
}  // namespace

std::string yaml_scalar(const std::string& text) {
  YAML::Emitter e;
  e << text;
  return e.c_str();
}

std::vector<std::pair<std::string, std::string>> flat_settings(const std::string& yaml_text) {
  std::vector<std::pair<std::string, std::string>> out;
  try {
    flatten(YAML::Load(yaml_text), "", &out);
  } catch (const YAML::Exception& e) {
    fail("config", "a recorded config is not YAML (", e.what(), ")");
  }
  return out;
}

std::string range_text(double lo, double hi) {
  // Bounds of 2^40 and beyond stand for none; a tiny positive lower bound for "positive".
  constexpr double kNoBound = 1099511627776.0;
  const bool positive = lo > 0 && lo < 1e-200;
  const std::string low = positive ? "> 0" : ">= " + number_text(lo);
  if (hi >= kNoBound) return lo <= -kNoBound ? "any finite number" : low;
  if (positive) return "(0, " + number_text(hi) + "]";
  return "[" + number_text(lo) + ", " + number_text(hi) + "]";
}

namespace {
std::string out_of_range(double lo, double hi) {
  const std::string r = range_text(lo, hi);
  return r[0] == '[' ? "out of range " + r : "out of range: expected " + r;
}

}  // namespace

ConfigReader::ConfigReader(const std::string& path, const std::vector<std::string>& overrides)
    : path_(path) {
  if (path.empty()) {
    root_ = YAML::Node(YAML::NodeType::Map);
  } else {
    const std::string text = read_file_limited(path, "config", "config file", kMaxConfigBytes);
    try {
      root_ = YAML::Load(text);
    } catch (const YAML::DeepRecursion& e) {
      fail("config", path, ":", e.mark.line + 1, ":", e.mark.column + 1, ": nested deeper than ",
           kMaxConfigDepth, " levels");
    } catch (const YAML::Exception& e) {
      fail("config", path, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg);
    }
    if (root_.IsNull()) root_ = YAML::Node(YAML::NodeType::Map);
    if (!root_.IsMap()) fail("config", path, ": top level must be a mapping of sections");
    check_tree(root_, "");
  }
  effective_ = YAML::Node(YAML::NodeType::Map);
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("config", "--set ", o, ": expected key.path=value");
    const std::string key = o.substr(0, eq);
    const std::string text = o.substr(eq + 1);
    if (text.find_first_not_of(" \t") == std::string::npos)
      fail("config", "--set ", o, ": empty value (leave the flag out to keep the config's value)");
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      fail("config", "--set ", o, ": ", e.msg);
    }
    check_tree(value, "--set " + o);
    const std::vector<std::string> parts = split_key(key);
    for (const std::string& part : parts)
      if (part.empty()) fail("config", "--set ", o, ": empty part in key '", key, "'");
    // yaml-cpp nodes are handles: walk with copies, creating maps as needed.
    std::vector<YAML::Node> chain{root_};
    // A numeric part indexes an existing list element ("distributions.1.path").
    auto is_element = [&](const YAML::Node& node, const std::string& part) {
      return node.IsSequence() && is_index(part) && std::stoul(part) < node.size();
    };
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node& parent = chain.back();
      if (is_element(parent, parts[i])) {
        chain.push_back(parent[std::stoul(parts[i])]);
        continue;
      }
      if (parent.IsSequence())
        fail("config", "--set ", o, ": no element ", parts[i], " in the list");
      YAML::Node child = parent[parts[i]];
      if (!child.IsMap() && !child.IsSequence()) {
        if (child.IsDefined() && !child.IsNull())
          fail("config", "--set ", o, ": '", parts[i], "' is not a section");
        std::string made;
        for (size_t j = 0; j <= i; ++j) made += (j ? "." : "") + parts[j];
        made_by_set_.emplace(made, o);
        parent[parts[i]] = YAML::Node(YAML::NodeType::Map);
        child = parent[parts[i]];
      }
      chain.push_back(child);
    }
    if (is_element(chain.back(), parts.back()))
      chain.back()[std::stoul(parts.back())] = value;
    else if (chain.back().IsSequence())
      fail("config", "--set ", o, ": no element ", parts.back(), " in the list");
    else
      chain.back()[parts.back()] = value;
    overridden_[key] = o;
  }
}

// Every value present and meaningful: no empty/null values, no duplicate keys, only scalar keys,
// bounded depth and size (aliases can make a small file a huge tree: the count bounds the walk).
// `origin` is "" for the file, or the --set flag a value came from.
void ConfigReader::check_tree(const YAML::Node& top, const std::string& origin) const {
  auto at = [&](const YAML::Node& n, const std::string& key) {
    if (!origin.empty()) return origin;
    return str_cat(path_, ":", n.Mark().line + 1, ":", n.Mark().column + 1, ": ", key);
  };
  const char* empty_hint = ": empty value (remove the key to use its default, or give a value)";
  if (top.IsNull()) fail("config", at(top, ""), empty_hint);
  struct Item {
    YAML::Node node;
    std::string key;
    int depth;
  };
  std::vector<Item> stack{{top, "", 1}};
  int64_t values = 0;
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    if (++values > kMaxConfigValues)
      fail("config", origin.empty() ? path_ : origin, ": more than ", kMaxConfigValues,
           " values (aliases repeating a large part?)");
    if (item.depth > kMaxConfigDepth)
      fail("config", at(item.node, item.key), ": nested deeper than ", kMaxConfigDepth, " levels");
    auto child_key = [&](const std::string& part) {
      return item.key.empty() ? part : item.key + "." + part;
    };
    if (item.node.IsMap()) {
      std::unordered_map<std::string, YAML::Mark> seen;  // a flat 1 MiB map has ~10^5 keys
      for (auto it = item.node.begin(); it != item.node.end(); ++it) {
        if (!it->first.IsScalar())
          fail("config", at(it->first, item.key), ": keys must be plain names");
        const std::string k = child_key(it->first.Scalar());
        const auto [first, fresh] = seen.emplace(it->first.Scalar(), it->first.Mark());
        if (!fresh)
          fail("config", at(it->first, k), ": duplicate key (first at line ",
               first->second.line + 1, origin.empty() ? "" : " of the value", ")");
        if (it->second.IsNull()) fail("config", at(it->first, k), empty_hint);
        stack.push_back({it->second, k, item.depth + 1});
      }
    } else if (item.node.IsSequence()) {
      for (size_t i = 0; i < item.node.size(); ++i) {
        const std::string k = child_key(std::to_string(i));
        if (item.node[i].IsNull()) fail("config", at(item.node, k), ": empty list element");
        stack.push_back({item.node[i], k, item.depth + 1});
      }
    }
  }
}

namespace {

[[noreturn]] void fail_not_section(const std::string& where, const std::string& prefix,
                                   const YAML::Node& node, const std::string& key) {
  fail("config", where, ": ", prefix, ": expected a section (with keys such as ", key, "), got ",
       node.IsScalar() ? "'" + node.Scalar() + "'" : scalar_text(node));
}

}  // namespace

// Const access only: a non-const operator[] could add the missing key to the tree, and
// assigning one Node to another rewrites the tree. Hence recursion, not a loop.
YAML::Node ConfigReader::lookup(const YAML::Node& node, const std::vector<std::string>& parts,
                                size_t i, const std::string& key) const {
  if (i == parts.size()) return node;
  if (!node.IsDefined() || node.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  std::string prefix;
  for (size_t j = 0; j < i; ++j) prefix += (j ? "." : "") + parts[j];
  if (node.IsSequence()) {
    if (!is_index(parts[i])) fail_not_section(where(node, prefix), prefix, node, key);
    if (std::stoul(parts[i]) >= node.size()) return YAML::Node(YAML::NodeType::Undefined);
    return lookup(node[std::stoul(parts[i])], parts, i + 1, key);
  }
  if (node.IsMap()) {
    const YAML::Node child = node[parts[i]];
    if (!child.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    return lookup(child, parts, i + 1, key);
  }
  fail_not_section(where(node, prefix), prefix, node, key);
}

YAML::Node ConfigReader::find(const std::string& key) const {
  const YAML::Node& root = root_;
  return lookup(root, split_key(key), 0, key);
}

std::string ConfigReader::where(const YAML::Node& node, const std::string& key) const {
  if (const auto it = overridden_.find(key); it != overridden_.end()) return "--set " + it->second;
  // A section that a --set made ("--set foo.bar=1" for the unknown section foo).
  if (const auto it = made_by_set_.find(key); it != made_by_set_.end())
    return "--set " + it->second;
  if (node.IsDefined() && node.Mark().line >= 0)
    return str_cat(path_, ":", node.Mark().line + 1, ":", node.Mark().column + 1);
  return path_.empty() ? std::string("config") : path_;
}

void ConfigReader::fail_at(const std::string& key, const std::string& msg) const {
  fail("config", where(find(key), key), ": ", key, ": ", msg);
}

bool ConfigReader::has(const std::string& key) const {
  const YAML::Node n = find(key);
  return n.IsDefined() && !n.IsNull();
}

void ConfigReader::mark_used(const std::string& key) { used_.insert(key); }

void ConfigReader::record(const std::string& key, const YAML::Node& value) {
  // Numeric parts index lists ("distributions.0.kind"), so the effective config keeps the
  // file's shape and can be read back. Elements are recorded in order, so an index is either
  // padded with nulls up to the index if read out of order.
  const std::vector<std::string> parts = split_key(key);
  std::vector<YAML::Node> chain{effective_};
  auto child_of = [](YAML::Node& parent, const std::string& part) {
    return parent.IsSequence() ? parent[std::stoul(part)] : parent[part];
  };
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node& parent = chain.back();
    const YAML::NodeType::value want =
        is_index(parts[i + 1]) ? YAML::NodeType::Sequence : YAML::NodeType::Map;
    if (parent.IsSequence())
      while (std::stoul(parts[i]) >= parent.size())
        parent.push_back(YAML::Node(YAML::NodeType::Null));
    YAML::Node child = child_of(parent, parts[i]);
    if (child.Type() != want) {
      if (parent.IsSequence())
        parent[std::stoul(parts[i])] = YAML::Node(want);
      else
        parent[parts[i]] = YAML::Node(want);
      child = child_of(parent, parts[i]);
    }
    chain.push_back(child);
  }
  YAML::Node& last = chain.back();
  if (last.IsSequence()) {
    while (std::stoul(parts.back()) >= last.size())
      last.push_back(YAML::Node(YAML::NodeType::Null));
    last[std::stoul(parts.back())] = value;
  } else {
    last[parts.back()] = value;
  }
}

double ConfigReader::number(const std::string& key, double lo, double hi) {
  if (!has(key)) missing_.push_back(key);
  const double v = number(key, 0.0, lo, hi);
  spec(key, "number", "", range_text(lo, hi), true);
  return v;
}

double ConfigReader::number(const std::string& key, double def, double lo, double hi) {
  mark_used(key);
  spec(key, "number", number_node(def).Scalar(), range_text(lo, hi));
  double v = def;
  if (has(key)) {
    const YAML::Node n = find(key);
    try {
      if (!n.IsScalar()) throw YAML::Exception(YAML::Mark(), "");
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      fail_at(key,
              "expected a number, got " + (n.IsScalar() ? "'" + n.Scalar() + "'" : scalar_text(n)));
    }
    if (!std::isfinite(v) || v < lo || v > hi)
      fail_at(key, str_cat("value ", n.Scalar(), " is ", out_of_range(lo, hi)));
  }
  record(key, number_node(v));
  return v;
}

int64_t ConfigReader::integer(const std::string& key, int64_t def, int64_t lo, int64_t hi) {
  mark_used(key);
  spec(key, "integer", std::to_string(def), range_text(double(lo), double(hi)));
  int64_t v = def;
  if (has(key)) {
    const YAML::Node n = find(key);
    try {
      if (!n.IsScalar()) throw YAML::Exception(YAML::Mark(), "");
      v = n.as<int64_t>();
    } catch (const YAML::Exception&) {
      fail_at(key, "expected an integer, got " +
                       (n.IsScalar() ? "'" + n.Scalar() + "'" : scalar_text(n)));
    }
    if (v < lo || v > hi)
      fail_at(key, str_cat("value ", v, " is ", out_of_range(double(lo), double(hi))));
  }
  record(key, YAML::Node(v));
  return v;
}

bool ConfigReader::boolean(const std::string& key, bool def) {
  mark_used(key);
  spec(key, "boolean", def ? "true" : "false", "");
  bool v = def;
  if (has(key)) {
    const YAML::Node n = find(key);
    try {
      if (!n.IsScalar()) throw YAML::Exception(YAML::Mark(), "");
      v = n.as<bool>();
    } catch (const YAML::Exception&) {
      fail_at(key, "expected true or false, got " +
                       (n.IsScalar() ? "'" + n.Scalar() + "'" : scalar_text(n)));
    }
  }
  record(key, YAML::Node(v));
  return v;
}

std::string ConfigReader::string(const std::string& key) {
  if (!has(key)) missing_.push_back(key);
  const std::string v = string(key, "");
  spec(key, "string", "", "", true);
  return v;
}

std::string ConfigReader::string(const std::string& key, const std::string& def) {
  mark_used(key);
  spec(key, "string", def, "");
  std::string v = def;
  if (has(key)) {
    const YAML::Node n = find(key);
    if (!n.IsScalar()) fail_at(key, "expected a string, got " + scalar_text(n));
    v = n.Scalar();
    // '' is as empty as a missing value: refused like it (an empty run.name would make
    // runs/ itself the output folder).
    if (v.empty()) fail_at(key, "empty value (remove the key to use its default, or give a value)");
  }
  record(key, YAML::Node(v));
  return v;
}

std::string ConfigReader::choice(const std::string& key, const std::string& def,
                                 const std::vector<std::string>& options) {
  const std::string v = string(key, def);
  std::string alternatives;
  for (const std::string& o : options) alternatives += (alternatives.empty() ? "" : " | ") + o;
  spec(key, "choice", def, alternatives, def.empty());
  for (const std::string& o : options)
    if (o == v) return v;
  std::string list;
  for (const std::string& o : options) list += (list.empty() ? "" : ", ") + o;
  fail_at(key, "'" + v + "' is not one of: " + list);
}

std::vector<double> ConfigReader::numbers(const std::string& key, const std::vector<double>& def,
                                          size_t count) {
  mark_used(key);
  std::string def_text;
  for (double d : def) def_text += (def_text.empty() ? "[" : ", ") + number_node(d).Scalar();
  spec(key, str_cat("list of ", count, " numbers"), def.empty() ? "" : def_text + "]", "",
       def.empty());
  std::vector<double> v = def;
  if (has(key)) {
    const YAML::Node n = find(key);
    if (!n.IsSequence() || n.size() != count)
      fail_at(key, str_cat("expected a list of ", count, " numbers"));
    v.clear();
    for (size_t i = 0; i < n.size(); ++i) {
      try {
        v.push_back(n[i].as<double>());
      } catch (const YAML::Exception&) {
        fail_at(key, "expected a number, got '" + scalar_text(n[i]) + "'");
      }
      if (!std::isfinite(v.back()))
        fail_at(key, "element " + std::to_string(i) + " is " + n[i].Scalar() +
                         ", expected a finite number");
    }
  }
  YAML::Node seq(YAML::NodeType::Sequence);
  for (double x : v) seq.push_back(number_node(x));
  seq.SetStyle(YAML::EmitterStyle::Flow);
  record(key, seq);
  return v;
}

size_t ConfigReader::list_size(const std::string& key) {
  containers_.insert(key);
  if (!has(key)) return 0;
  const YAML::Node n = find(key);
  if (!n.IsSequence()) fail_at(key, "expected a list, got " + scalar_text(n));
  return n.size();
}

bool ConfigReader::is_list(const std::string& key) const { return find(key).IsSequence(); }

void ConfigReader::not_used(const std::string& key, const std::string& because, bool own) {
  // An enclosing list's reason ("model.type is forecaster") goes after the key's own ones.
  if (own)
    for (auto it = not_used_.begin(); it != not_used_.end(); ++it)
      if (it->first == key && !own_reason_.count(key)) {
        not_used_.insert(it, {key, because});
        own_reason_.insert(key);
        return;
      }
  if (own) own_reason_.insert(key);
  not_used_.emplace_back(key, because);
}

void ConfigReader::finish() const {
  // Depth-first over the tree; a key is known if it, or a key below it, was read.
  std::vector<std::pair<std::string, YAML::Node>> stack{{"", root_}};
  while (!stack.empty()) {
    auto [prefix, node] = stack.back();
    stack.pop_back();
    if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string k =
            prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
        bool known = used_.count(k) > 0 || containers_.count(k) > 0;
        for (auto u = used_.lower_bound(k + ".");
             !known && u != used_.end() && u->rfind(k + ".", 0) == 0; ++u)
          known = true;
        // A section whose keys are not used here (head.bide.* under model.head: softmax):
        // descend, so the message names the key and why.
        for (const auto& entry : not_used_)
          if (!known && entry.first.rfind(k + ".", 0) == 0) known = true;
        if (!known) {
          const YAML::Node key_node = it->first;
          for (const auto& [key, because] : not_used_)
            if (k == key || k.rfind(key + ".", 0) == 0)
              fail("config", where(key_node, k), ": ", k, ": not used when ", because);
          fail("config", where(key_node, k), ": unknown key '", k, "'", suggestion(k));
        }
        if (!used_.count(k)) stack.push_back({k, it->second});
      }
    } else if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i)
        stack.push_back({prefix + "." + std::to_string(i), node[i]});
    }
  }
  finish_missing();
}

void ConfigReader::spec(const std::string& key, const std::string& type, const std::string& def,
                        const std::string& range, bool required) {
  // List elements ("distributions.3.mu") are one key of the schema: "distributions[].mu".
  std::string name;
  for (const std::string& part : split_key(key))
    name += is_index(part) ? "[]" : (name.empty() ? "" : ".") + part;
  for (ConfigKeySpec& s : schema_)
    if (s.key == name) {  // read again (a choice reads its string first): the latest word wins
      s = {name, type, def, range, required};
      return;
    }
  schema_.push_back({name, type, def, range, required});
}

void ConfigReader::range_is(const std::string& key, const std::string& text) {
  for (ConfigKeySpec& s : schema_)
    if (s.key == key) s.range = text;
}

void ConfigReader::default_is(const std::string& key, const std::string& text) {
  for (ConfigKeySpec& s : schema_)
    if (s.key == key) s.def = text, s.required = false;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}
}  // namespace

// " (did you mean 'x'?)" for the nearest key this command reads, when one is near.
std::string ConfigReader::suggestion(const std::string& unknown) const {
  std::string best;
  size_t best_d = std::max<size_t>(2, unknown.size() / 3) + 1;
  auto consider = [&](const std::string& key) {
    const size_t d = edit_distance(unknown, key);
    if (d < best_d) best_d = d, best = key;
  };
  for (const ConfigKeySpec& s : schema_) {
    consider(s.key);
    // A misspelt section ("optimiser") is near the section of a key that was read.
    if (unknown.find('.') == std::string::npos) consider(s.key.substr(0, s.key.find('.')));
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

void ConfigReader::finish_missing() const {
  if (!missing_.empty())
    fail("config", path_.empty() ? std::string("config") : path_, ": ", missing_.front(),
         ": required key is missing");
}

std::string ConfigReader::effective_yaml() const {
  YAML::Emitter out;
  out << effective_;
  return std::string(out.c_str()) + "\n";
}

std::string read_out_dir(ConfigReader& r, const std::string& default_name) {
  const std::string name = r.string("run.name", default_name);
  if (name == "." || name == ".." || name.find('/') != std::string::npos)
    r.fail_at("run.name", "'" + name + "' is not a folder name (the run writes runs/<run.name>; " +
                              "run.out_dir names any other folder)");
  if (r.from_command_line("run.name") && r.has("run.out_dir") &&
      !r.from_command_line("run.out_dir"))
    r.fail_at("run.name", "the config pins run.out_dir: " + r.string("run.out_dir", "") +
                              ", so the output would not move; --set run.out_dir=runs/" + name +
                              " instead");
  return r.string("run.out_dir", "runs/" + name);
}

}  // namespace bg
