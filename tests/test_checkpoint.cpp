// test_checkpoint.cpp: HDF5 checkpoints as other tools leave them. String attributes in every
// form h5py writes (variable-length UTF-8 for str, fixed-length ASCII for numpy bytes, fixed
// UTF-8, space-padded), attributes of the wrong kind refused in one line, groups for
// non-parameter datasets, and a failed commit that leaves the old file and no .tmp.
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/checkpoint.h"
#include "data/tokenizer.h"
#include "harness.h"
#include "models/gpt/gpt.h"

namespace bg::test {
namespace {

std::string tmp_path(const std::string& name) {
  return scratch_path("ck_" + name);
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

TEST_CASE("cpu: a failed checkpoint commit keeps the old file and leaves no temporary") {
  namespace fs = std::filesystem;
  const std::string dir = tmp_path("commit_dir");
  fs::create_directories(dir + "/last.h5/inner");  // the target is a non-empty folder
  CheckpointWriter w(dir + "/last.h5");
  w.tensor("x", full({4}, 2.0));
  CHECK_THROWS_WITH(w.commit(), doctest::Contains("last.h5: is a folder; refused"));
  auto leftovers = [&](const std::string& folder) {  // temporaries are last.h5.tmp-<pid>-<n>
    int n = 0;
    for (const auto& e : fs::directory_iterator(folder))
      n += e.path().filename().string().rfind("last.h5.tmp", 0) == 0;
    return n;
  };
  CHECK(leftovers(dir) == 0);
  CHECK(fs::is_directory(dir + "/last.h5/inner"));
  // An uncreatable file: the parent is a regular file.
  std::FILE* f = std::fopen((dir + "/plain").c_str(), "w");
  std::fclose(f);
  CheckpointWriter w2(dir + "/plain/last.h5");
  CHECK_THROWS_WITH(w2.commit(),
                    doctest::Contains("plain: cannot create folder (Not a directory)"));
  CHECK(leftovers(dir) == 0);
  fs::remove_all(dir);
}

namespace {
// A file with one dataset of the given file type holding `bytes` (n elements), written by the
// HDF5 C API as another tool would.
std::string dataset_file(const std::string& name, hid_t file_type, hsize_t n, const void* data,
                         hid_t mem_type) {
  const std::string path = tmp_path(name);
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t ds = H5Dcreate2(f, "x", file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(f);
  return path;
}
}  // namespace

TEST_CASE("cpu: tensors convert exactly or are refused naming the dataset and value") {
  // int8 codes: -1 is no u8; 0..2 are.
  const int8_t codes[4] = {0, 1, 2, -1};
  const std::string i8 = dataset_file("i8.h5", H5T_STD_I8LE, 4, codes, H5T_NATIVE_INT8);
  CHECK_THROWS_WITH(CheckpointReader(i8).tensor("x", DType::u8),
                    doctest::Contains("tensor 'x' element 3 is -1, which u8 cannot hold exactly"));
  const int8_t ok_codes[3] = {0, 1, 2};
  const std::string i8ok = dataset_file("i8ok.h5", H5T_STD_I8LE, 3, ok_codes, H5T_NATIVE_INT8);
  CHECK(CheckpointReader(i8ok).tensor("x", DType::u8).to_vector<uint8_t>() ==
        std::vector<uint8_t>{0, 1, 2});
  // f64 values f32 holds exactly are read; one it does not is refused.
  const double exact[2] = {0.5, -3.25}, inexact[2] = {0.5, 0.1};
  const std::string f64 = dataset_file("f64.h5", H5T_IEEE_F64LE, 2, exact, H5T_NATIVE_DOUBLE);
  CHECK(CheckpointReader(f64).tensor("x", DType::f32).to_vector<float>() ==
        std::vector<float>{0.5f, -3.25f});
  const std::string f64b = dataset_file("f64b.h5", H5T_IEEE_F64LE, 2, inexact, H5T_NATIVE_DOUBLE);
  CHECK_THROWS_WITH(CheckpointReader(f64b).tensor("x", DType::f32),
                    doctest::Contains("element 1 is 0.1"));
  // Floats where integers belong.
  CHECK_THROWS_WITH(CheckpointReader(f64).tensor("x", DType::i64),
                    doctest::Contains("stores floats, expected i64 integers"));
  for (const std::string& p : {i8, i8ok, f64, f64b}) std::remove(p.c_str());
}

TEST_CASE("cpu: a dataset's storage is checked against the file before it is read") {
  // A dataset that was never written: its shape claims data the file does not hold.
  const std::string path = tmp_path("unallocated.h5");
  {
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t n = hsize_t(1) << 40;
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t ds =
        H5Dcreate2(f, "huge", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(f);
  }
  CheckpointReader r(path);
  CHECK_THROWS_WITH(r.raw_bytes("huge"), doctest::Contains("more than the file's"));
  CHECK_THROWS_WITH(r.tensor("huge", DType::f32), doctest::Contains("more than the file's"));
  std::remove(path.c_str());
}

TEST_CASE("cpu: checksum bytes of a variable-length dataset are its values, not pointers") {
  const std::string path = tmp_path("vlen.h5");
  const int32_t a[2] = {7, 8}, b[1] = {9};
  hvl_t data[2] = {{2, const_cast<int32_t*>(a)}, {1, const_cast<int32_t*>(b)}};
  const hid_t type = H5Tvlen_create(H5T_NATIVE_INT32);
  const std::string file = dataset_file("vlen.h5", type, 2, data, type);
  const std::vector<uint8_t> bytes = CheckpointReader(file).raw_bytes("x");
  std::vector<uint8_t> want;
  auto put = [&](const void* p, size_t n) {
    const uint8_t* q = static_cast<const uint8_t*>(p);
    want.insert(want.end(), q, q + n);
  };
  const uint64_t two = 2, one = 1;
  put(&two, 8);
  put(a, 8);
  put(&one, 8);
  put(b, 4);
  CHECK(bytes == want);
  CHECK(CheckpointReader(file).raw_bytes("x") == bytes);  // the same bytes every time
  H5Tclose(type);
  std::remove(file.c_str());
  (void)path;
}

TEST_CASE("cpu: a checkpoint's enumerated and sized attributes are read exactly") {
  const std::string path = tmp_path("attrs.h5");
  auto write = [&](const std::string& chars, int64_t block) {
    CheckpointWriter w(path);
    w.attr("model_type", std::string("gpt"));
    w.attr("vocab_chars", chars);
    for (const char* k : {"model.vocab_size", "model.n_layer", "model.n_head", "model.n_embd"})
      w.attr(k, int64_t(2));
    w.attr("model.block_size", block);
    w.attr("model.bias", int64_t(0));
    w.commit();
  };
  write("ab", int64_t(1) << 40);
  CHECK_THROWS_WITH(
      load_gpt_config(CheckpointReader(path), path),
      doctest::Contains("attribute model.block_size is 1099511627776, expected 1 to 1048576"));
  write("aab", 4);
  CHECK_THROWS_WITH(load_tokenizer(CheckpointReader(path)),
                    doctest::Contains("vocab_chars is not a vocabulary in id order"));
  write("ba", 4);
  CHECK_THROWS_WITH(load_tokenizer(CheckpointReader(path)),
                    doctest::Contains("vocab_chars is not a vocabulary in id order"));
  write("ab", 4);
  CHECK(load_tokenizer(CheckpointReader(path))->vocab_size() == 2);
  std::remove(path.c_str());
}

}  // namespace bg::test
