// test_checkpoint.cpp: HDF5 checkpoints as other tools leave them. String attributes in every
// form h5py writes (variable-length UTF-8 for str, fixed-length ASCII for numpy bytes, fixed
// UTF-8, space-padded), attributes of the wrong kind refused in one line, groups for
// non-parameter datasets, and a failed commit that leaves the old file and no .tmp.
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/checkpoint.h"
#include "harness.h"

namespace bg::test {
namespace {

std::string tmp_path(const std::string& name) {
  return "/tmp/bitgrad_test_ck_" + std::to_string(::getpid()) + "_" + name;
}

// Writes a scalar string attribute the way h5py does for each kind of Python value.
void h5_string_attr(const std::string& file, const std::string& name, const std::string& value,
                    bool variable, H5T_cset_t cset, H5T_str_t pad) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(f >= 0);
  if (H5Aexists(f, name.c_str()) > 0) H5Adelete(f, name.c_str());
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, variable ? H5T_VARIABLE : value.size());
  H5Tset_cset(type, cset);
  H5Tset_strpad(type, pad);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(f, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* p = value.c_str();
  REQUIRE(H5Awrite(a, type, variable ? static_cast<const void*>(&p) : value.data()) >= 0);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(f);
}

std::string write_base(const std::string& name) {
  const std::string path = tmp_path(name);
  CheckpointWriter w(path);
  w.tensor("transformer.wte.weight", full({3, 2}, 1.5));
  w.tensor("optimizer/exp_avg", full({6}, 0.25));
  w.attr("format", std::string("bitgrad-train-2"));
  w.attr("step", int64_t(7));
  w.attr("best_val_loss", 1.25);
  w.attr("vocab_chars", std::string("\n !abc\xe9"));  // not UTF-8: stored as fixed-length bytes
  w.commit();
  return path;
}

}  // namespace

TEST_CASE("cpu: checkpoint string attributes read in every form h5py writes") {
  const std::string path = write_base("strings.h5");
  {
    CheckpointReader r(path);
    CHECK(r.str_attr("format") == "bitgrad-train-2");
    CHECK(r.str_attr("vocab_chars") == std::string("\n !abc\xe9"));
    CHECK(r.int_attr("step") == 7);
    CHECK(r.float_attr("best_val_loss") == 1.25);
    CHECK(r.has("optimizer/exp_avg"));
    CHECK(!r.has("optimizer/missing"));
    CHECK(!r.has("nothing/exp_avg"));
    CHECK(r.tensor("optimizer/exp_avg", DType::f32).to_vector<float>()[5] == 0.25f);
  }
  struct Form {
    bool variable;
    H5T_cset_t cset;
    H5T_str_t pad;
    const char* what;
  };
  const std::string text = "runs/data/tiny shakespeare \xc3\xa9.txt";
  for (const Form f : {Form{true, H5T_CSET_UTF8, H5T_STR_NULLTERM, "str (vlen UTF-8)"},
                       Form{true, H5T_CSET_ASCII, H5T_STR_NULLTERM, "vlen ASCII"},
                       Form{false, H5T_CSET_ASCII, H5T_STR_NULLPAD, "np.bytes_ (fixed ASCII)"},
                       Form{false, H5T_CSET_UTF8, H5T_STR_NULLPAD, "fixed UTF-8"},
                       Form{false, H5T_CSET_ASCII, H5T_STR_NULLTERM, "fixed, NUL-terminated"},
                       Form{false, H5T_CSET_ASCII, H5T_STR_SPACEPAD, "Fortran, space-padded"}}) {
    INFO(f.what);
    h5_string_attr(path, "val_data", text, f.variable, f.cset, f.pad);
    CheckpointReader r(path);
    CHECK(r.str_attr("val_data") == text);
  }
  // A number stored as a string (how bitgrad-train-1 stored best_val_loss) reads as a number.
  h5_string_attr(path, "best_val_loss", "1.4682", true, H5T_CSET_UTF8, H5T_STR_NULLTERM);
  CHECK(CheckpointReader(path).float_attr("best_val_loss") == 1.4682);
  std::remove(path.c_str());
}

TEST_CASE("cpu: checkpoint attributes of the wrong kind are refused naming them") {
  const std::string path = write_base("kinds.h5");
  h5_string_attr(path, "step", "seven", true, H5T_CSET_UTF8, H5T_STR_NULLTERM);
  h5_string_attr(path, "best_val_loss", "low", true, H5T_CSET_UTF8, H5T_STR_NULLTERM);
  CheckpointReader r(path);
  CHECK_THROWS_WITH(r.int_attr("step"),
                    doctest::Contains("attribute 'step' is a string, expected an integer"));
  CHECK_THROWS_WITH(r.float_attr("best_val_loss"),
                    doctest::Contains("attribute 'best_val_loss' is 'low', expected a number"));
  CHECK_THROWS_WITH(r.str_attr("missing"), doctest::Contains("missing attribute 'missing'"));
  CHECK_THROWS_WITH(r.tensor("optimizer", DType::f32), doctest::Contains("is not a dataset"));
  std::remove(path.c_str());
}

TEST_CASE("cpu: a failed checkpoint commit keeps the old file and leaves no .tmp") {
  namespace fs = std::filesystem;
  const std::string dir = tmp_path("commit_dir");
  fs::create_directories(dir + "/last.h5/inner");  // the target is a non-empty folder
  CheckpointWriter w(dir + "/last.h5");
  w.tensor("x", full({4}, 2.0));
  CHECK_THROWS_WITH(w.commit(), doctest::Contains("cannot replace with"));
  CHECK(!fs::exists(dir + "/last.h5.tmp"));
  CHECK(fs::is_directory(dir + "/last.h5/inner"));
  // An uncreatable file: the parent is a regular file.
  std::FILE* f = std::fopen((dir + "/plain").c_str(), "w");
  std::fclose(f);
  CheckpointWriter w2(dir + "/plain/last.h5");
  CHECK_THROWS(w2.commit());
  CHECK(!fs::exists(dir + "/plain/last.h5.tmp"));
  fs::remove_all(dir);
}

}  // namespace bg::test
