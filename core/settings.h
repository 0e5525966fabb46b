// settings.h: a settings struct's fields, each declared once: its key, meaning, type and range,
// and whether it is part of a model's architecture. Reading a config, saving checkpoint
// attributes, loading them back, the difference between two values and the `bitgrad config`
// rows all walk that one list, so a field added to it is read, saved, compared and documented
// everywhere at once. Defaults are the struct's own initialisers (`S{}`), written nowhere else.
//
//   Settings<CharMLPConfig> s("char_mlp");
//   s.integer("model.context", [](auto& c) -> auto& { return c.context; }, 1, 4096,
//             "characters of context", kArchitecture);
//
// Rules between fields (n_embd divisible by n_head, say) stay code next to the list: they are
// checks, not declarations, and both the config reader and the checkpoint loader call them.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/checkpoint.h"
#include "core/config.h"
#include "core/error.h"

namespace bg {

// kArchitecture: saved as a checkpoint attribute (named by the key unless saved_as names
// another) and read back on load; a model loaded or resumed must match it, while resume may
// change any other field. kRecorded: saved and read back the same way, but a fact of the run
// rather than of the model (the compute mode, the forecast horizon): what inference and eval
// read back, compared only where a caller asks. kKeptOnResume: with kRecorded, a resume must
// keep it (it splits the data). kDerived: resolved from other settings and the data, never a
// config key (saved only). kOptional: files written before the attribute existed lack it, and
// meant the default. kRequired: a config must set it (a string field: no default).
enum SettingFlag : unsigned {
  kArchitecture = 1u,
  kDerived = 2u,
  kOptional = 4u,
  kRequired = 8u,
  kRecorded = 16u,
  kKeptOnResume = 32u,
};

template <typename S>
struct Setting {
  std::string key, meaning;
  std::string attribute;  // its checkpoint attribute's name: the key unless saved_as says
  std::string label;  // its list's: which kind of model or command reads it
  unsigned flags = 0;
  std::function<bool(const S&)> applies;         // whether it means anything in this value
  std::function<std::string(const S&)> because;  // why not, when it does not
  // Whether that reason is the field's own condition rather than an enclosing list's: where
  // several lists declare a key (head.bide.hidden for the GPT and the forecaster), the reason
  // given is the one of the list that applies ("model.head is gaussian", not "model.type is
  // forecaster").
  std::function<bool(const S&)> own_reason;
  std::function<void(ConfigReader&, S&)> read;
  // Write and read the attribute named `name` (the field's attribute).
  std::function<void(CheckpointWriter&, const std::string& name, const S&)> save;
  std::function<void(const CheckpointReader&, const std::string& path, const std::string& name,
                     S&)>
      load;
  std::function<std::string(const S&)> text;  // the value as a config would write it
  bool architecture() const { return (flags & kArchitecture) != 0; }
  bool in(unsigned which) const { return (flags & which) != 0; }
  bool config_key() const { return (flags & kDerived) == 0; }
};

template <typename S>
class Settings {
 public:
  using Condition = std::function<bool(const S&)>;
  // `label` prefixes the meanings `bitgrad config` prints where two lists share a key
  // ("char_mlp: hidden layers; gpt: transformer blocks"); empty for a list of its own keys.
  explicit Settings(std::string label = "") : label_(std::move(label)) {}
  const std::string& label() const { return label_; }
  const std::vector<Setting<S>>& fields() const { return fields_; }

  // Fields added after this apply only when `holds`; elsewhere a config that sets one is told
  // "not used when <because>". always() ends the condition.
  Settings& when(std::function<bool(const S&)> holds,
                 std::function<std::string(const S&)> because) {
    holds_ = std::move(holds);
    because_ = std::move(because);
    return *this;
  }
  Settings& always() { return when({}, {}); }
  // The schema's default text for the field just added, where its default is resolved later
  // (head.bide.bits' 0: "the fewest that hold the vocabulary").
  Settings& default_is(std::string text) {
    Setting<S>& f = fields_.back();
    f.read = [read = f.read, key = f.key, text](ConfigReader& r, S& s) {
      read(r, s);
      r.default_is(key, text);
    };
    return *this;
  }

  // The checkpoint attribute of the field just added, where it is not the key (the compute
  // mode's compute_precision for train.precision: files written before the key existed).
  Settings& saved_as(std::string attribute) {
    fields_.back().attribute = std::move(attribute);
    return *this;
  }

  template <typename F>
  Settings& integer(const char* key, F ref, int64_t lo, int64_t hi, const char* meaning,
                    unsigned flags = 0) {
    using T = std::remove_reference_t<decltype(ref(std::declval<S&>()))>;
    Setting<S>& f = add(key, meaning, flags);
    f.read = [=](ConfigReader& r, S& s) {
      const int64_t def = int64_t(ref(s));  // the default: the enclosing struct's initialiser
      ref(s) = T(r.integer(key, def, lo, hi));
    };
    f.save = [=](CheckpointWriter& ck, const std::string& name, const S& s) {
      ck.attr(name, int64_t(ref(mut(s))));
    };
    f.load = [=](const CheckpointReader& ck, const std::string& path, const std::string& name,
                 S& s) {
      const int64_t v = ck.int_attr(name);
      BG_CHECK(v >= lo && v <= hi, "checkpoint", path, ": attribute ", name, " is ", v,
               ", expected ", lo, " to ", hi);
      ref(s) = T(v);
    };
    f.text = [=](const S& s) { return std::to_string(int64_t(ref(mut(s)))); };
    return *this;
  }

  template <typename F>
  Settings& boolean(const char* key, F ref, const char* meaning, unsigned flags = 0) {
    return boolean(
        key, [ref](const S& s) { return bool(ref(mut(s))); },
        [ref](S& s, bool v) { ref(s) = v; }, meaning, flags);
  }
  // A flag that sets more than one member (train.deterministic: the flag and the matmul
  // algorithm): read through `get`, written through `set`.
  Settings& boolean(const char* key, std::function<bool(const S&)> get,
                    std::function<void(S&, bool)> set, const char* meaning, unsigned flags = 0) {
    Setting<S>& f = add(key, meaning, flags);
    f.read = [=](ConfigReader& r, S& s) { set(s, r.boolean(key, get(s))); };
    // Saved as 0 or 1: HDF5 has no boolean attribute.
    f.save = [=](CheckpointWriter& ck, const std::string& name, const S& s) {
      ck.attr(name, int64_t(get(s) ? 1 : 0));
    };
    f.load = [=](const CheckpointReader& ck, const std::string& path, const std::string& name,
                 S& s) {
      const int64_t v = ck.int_attr(name);
      BG_CHECK(v == 0 || v == 1, "checkpoint", path, ": attribute ", name, " is ", v,
               ", expected 0 or 1");
      set(s, v == 1);
    };
    f.text = [=](const S& s) { return std::string(get(s) ? "true" : "false"); };
    return *this;
  }

  // A real number; as an architecture field saved as a float attribute, its range checked on
  // load.
  template <typename F>
  Settings& number(const char* key, F ref, double lo, double hi, const char* meaning,
                   unsigned flags = 0) {
    Setting<S>& f = add(key, meaning, flags);
    f.read = [=](ConfigReader& r, S& s) {
      const double def = ref(s);
      ref(s) = r.number(key, def, lo, hi);
    };
    f.save = [=](CheckpointWriter& ck, const std::string& name, const S& s) {
      ck.attr(name, double(ref(mut(s))));
    };
    f.load = [=](const CheckpointReader& ck, const std::string& path, const std::string& name,
                 S& s) {
      const double v = ck.float_attr(name);
      BG_CHECK(v >= lo && v <= hi, "checkpoint", path, ": attribute ", name, " is ", v,
               ", expected ", lo, " to ", hi);
      ref(s) = v;
    };
    f.text = [=](const S& s) { return shortest_text(double(ref(mut(s)))); };
    return *this;
  }

  // A run setting only: a path or a name.
  template <typename F>
  Settings& string(const char* key, F ref, const char* meaning, unsigned flags = 0) {
    Setting<S>& f = add(key, meaning, flags);
    f.read = [=](ConfigReader& r, S& s) {
      const std::string def = ref(s);
      ref(s) = (flags & kRequired) ? r.string(key) : r.string(key, def);
    };
    f.text = [=](const S& s) { return ref(mut(s)); };
    return *this;
  }

  // A run setting read by code of its own (a list or a choice that sets several members): its
  // key and meaning declared here with the rest, in reading order.
  Settings& custom(const char* key, const char* meaning,
                   std::function<void(ConfigReader&, S&)> read) {
    Setting<S>& f = add(key, meaning, 0);
    f.read = std::move(read);
    f.text = [](const S&) { return std::string(); };
    return *this;
  }

  // One of an enum's names (kernels/enum_names.h).
  template <typename F>
  Settings& choice(const char* key, F ref, const char* meaning, unsigned flags = 0) {
    using E = std::remove_reference_t<decltype(ref(std::declval<S&>()))>;
    return choice<E>(
        key, [ref](const S& s) { return E(ref(mut(s))); }, [ref](S& s, E v) { ref(s) = v; },
        meaning, flags);
  }
  // A choice held otherwise than as its enum (train.matmul: lmul or the exact algorithm; an
  // enum of two names for a flag): read through `get`, written through `set`.
  template <typename E>
  Settings& choice(const char* key, std::function<E(const S&)> get, std::function<void(S&, E)> set,
                   const char* meaning, unsigned flags = 0) {
    Setting<S>& f = add(key, meaning, flags);
    f.read = [=](ConfigReader& r, S& s) { set(s, r.choice(key, get(s))); };
    f.save = [=](CheckpointWriter& ck, const std::string& name, const S& s) {
      ck.attr(name, std::string(enum_name(get(s))));
    };
    f.load = [=](const CheckpointReader& ck, const std::string& path, const std::string& name,
                 S& s) {
      const std::string v = ck.str_attr(name);
      E e{};
      BG_CHECK(parse_enum(v, &e), "checkpoint", path, ": attribute ", name, " is '", v,
               "', expected ", enum_names_text<E>());
      set(s, e);
    };
    f.text = [=](const S& s) { return std::string(enum_name(get(s))); };
    return *this;
  }

  // Another struct's list as fields of this one, reached through `ref`, under this list's
  // current condition as well as their own.
  template <typename Sub, typename F>
  Settings& nested(const Settings<Sub>& sub, F ref) {
    for (const Setting<Sub>& g : sub.fields()) {
      Setting<S>& f = add(g.key, g.meaning, g.flags);
      f.label = g.label;
      f.attribute = g.attribute;
      const std::function<bool(const S&)> outer = f.applies;
      f.applies = [outer, inner = g.applies, ref](const S& s) {
        return (!outer || outer(s)) && (!inner || inner(ref(mut(s))));
      };
      f.because = [outer, ob = f.because, ib = g.because, ref](const S& s) {
        return outer && !outer(s) ? ob(s) : ib(ref(mut(s)));
      };
      // The reason is the key's own when every condition outside its innermost one holds. A
      // field the sub-list declares with no condition has the condition it is nested under as
      // its innermost (bitlinear.* inside model.linear's `when`): that one is its own.
      f.own_reason = [outer, inner = g.applies, io = g.own_reason, ref](const S& s) {
        if (!inner) return true;
        return !(outer && !outer(s)) && (!io || io(ref(mut(s))));
      };
      if (g.read) f.read = [h = g.read, ref](ConfigReader& r, S& s) { h(r, ref(s)); };
      if (g.save)
        f.save = [h = g.save, ref](CheckpointWriter& ck, const std::string& name, const S& s) {
          h(ck, name, ref(mut(s)));
        };
      if (g.load)
        f.load = [h = g.load, ref](const CheckpointReader& ck, const std::string& p,
                                   const std::string& name, S& s) { h(ck, p, name, ref(s)); };
      f.text = [h = g.text, ref](const S& s) { return h(ref(mut(s))); };
    }
    return *this;
  }

  // Every config field in order: read where it applies (given those read before it), refused
  // as "not used when ..." where it does not. `s` holds the defaults (the struct as initialised):
  // a field a config leaves out keeps its value, so a nested list's field takes the enclosing
  // struct's default (a forecaster's n_embd 128, not the trunk's 384).
  void read(ConfigReader& r, S& s) const {
    for (const Setting<S>& f : fields_) {
      if (!f.config_key()) continue;
      if (f.applies && !f.applies(s))
        r.not_used(f.key, f.because(s), !f.own_reason || f.own_reason(s));
      else
        f.read(r, s);
    }
  }
  // The fields of kind `which` (kArchitecture, kRecorded) that apply, as attributes.
  void save(CheckpointWriter& ck, const S& s, unsigned which = kArchitecture) const {
    for (const Setting<S>& f : fields_)
      if (f.in(which) && (!f.applies || f.applies(s))) f.save(ck, f.attribute, s);
  }
  // Those fields back into `base` (the defaults, or what the caller knows already: a series
  // run's data.format), each checked against its range or names; an optional one a file lacks
  // keeps its value there.
  S load(const CheckpointReader& ck, const std::string& path, unsigned which = kArchitecture,
         S base = S{}) const {
    S& s = base;
    for (const Setting<S>& f : fields_) {
      if (!f.in(which) || (f.applies && !f.applies(s))) continue;
      if ((f.flags & kOptional) && !ck.has_attr(f.attribute)) continue;
      BG_CHECK(ck.has_attr(f.attribute), "checkpoint", path, ": missing attribute ", f.attribute);
      f.load(ck, path, f.attribute, s);
    }
    return s;
  }
  // Empty when a and b agree on the fields of kind `which`; else each field that differs,
  // "model.n_layer: 2 vs 3".
  std::string difference(const S& a, const S& b, unsigned which = kArchitecture) const {
    std::string d;
    for (const Setting<S>& f : fields_) {
      if (!f.in(which)) continue;
      const bool in_a = !f.applies || f.applies(a), in_b = !f.applies || f.applies(b);
      if (!in_a && !in_b) continue;
      // A field one side lacks follows from a difference already named (train.matmul: lmul vs
      // standard needs no lmul.scope: all vs (none) after it).
      if (in_a != in_b && !d.empty()) continue;
      const std::string x = in_a ? f.text(a) : "(none)", y = in_b ? f.text(b) : "(none)";
      if (x != y) d += (d.empty() ? "" : ", ") + f.key + ": " + x + " vs " + y;
    }
    return d;
  }

 private:
  static S& mut(const S& s) { return const_cast<S&>(s); }  // accessors read through one ref
  Setting<S>& add(std::string key, std::string meaning, unsigned flags) {
    Setting<S> f;
    f.attribute = key;
    f.key = std::move(key);
    f.meaning = std::move(meaning);
    f.label = label_;
    f.flags = flags;
    f.applies = holds_;
    f.because = because_;
    fields_.push_back(std::move(f));
    return fields_.back();
  }

  std::string label_;
  std::vector<Setting<S>> fields_;
  std::function<bool(const S&)> holds_;
  std::function<std::string(const S&)> because_;
};

// A rule between fields that a value breaks: the key to blame and why (an empty key: none).
struct SettingProblem {
  std::string key, message;
  explicit operator bool() const { return !key.empty(); }
};

// Each config field's meaning into `out` (key -> meaning, what `bitgrad config` prints), a key
// that several lists share getting each one's labelled: "char_mlp: hidden layers; gpt: ...".
template <typename S>
void add_meanings(const Settings<S>& s, std::map<std::string, std::string>& out) {
  for (const Setting<S>& f : s.fields()) {
    if (!f.config_key()) continue;
    const std::string m = f.label.empty() ? f.meaning : f.label + ": " + f.meaning;
    auto [it, added] = out.emplace(f.key, m);
    // A meaning another list already gives (run.device, train.steps) is said once.
    if (!added && it->second.find(f.meaning) == std::string::npos) it->second += "; " + m;
  }
}

}  // namespace bg
