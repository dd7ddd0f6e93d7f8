// kiln_fuzz_seeds DIR: writes the fuzzers' seed corpora, generated with Kiln itself
// rather than stored as blobs:
//
//   DIR/safetensors/   files save_safetensors writes (every dtype, no tensors, an empty
//                      tensor), a header nested 100000 levels deep, a tensor of shape
//                      [0, 2^62, 2^62] (valid: no elements) and one of [2^62, 2^62]
//   DIR/idx/           IDX image and label files, plain and gzip, an empty one, and one
//                      whose header announces 2^32 images of 65535 x 65535 pixels
//   DIR/checkpoint/    a checkpoint of the fuzzer's tiny run (tiny_run.h), the same
//                      with "run" or "history" nested 100000 levels deep, and with
//                      numbers out of range
//   DIR/plugin_table/  inputs that fuzz_plugin_table reads as a valid table and as
//                      tables with one defect each
//   DIR/op_schema/     vendor op schemas: valid ones (every shape rule, attribute type
//                      and key), one nested 100000 levels deep, one of 100 kB
//
// The deep and huge seeds make sure every fuzzing run exercises those paths.
#include <kiln/io/safetensors.h>
#include <kiln/kiln.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "tiny_run.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::string;

void write_file(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void write_gzip(const fs::path& path, const Bytes& bytes) {
  gzFile out = gzopen(path.c_str(), "wb");
  if (!out || gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size())) !=
                  static_cast<int>(bytes.size()))
    throw std::runtime_error("cannot write " + path.string());
  gzclose(out);
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A safetensors file from a header written by hand (no data section).
Bytes safetensors_bytes(std::string header) {
  header.resize((header.size() + 7) / 8 * 8, ' ');
  Bytes out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((uint64_t{header.size()} >> (8 * i)) & 0xff);
  return out + header;
}

void safetensors_seeds(const fs::path& dir) {
  using namespace kiln;
  const std::vector<DType> dtypes = {DType::Float32,  DType::Float64, DType::Float16,
                                     DType::BFloat16, DType::Int32,   DType::Int64,
                                     DType::UInt8,    DType::Bool};
  io::NamedTensors all;
  for (DType dtype : dtypes)
    all.emplace_back(std::string(io::safetensors_dtype_name(dtype)),
                     ones({2, 3}, TensorOptions().dtype(dtype)));
  io::save_safetensors(dir / "all_dtypes.safetensors", all, {{"format", "pt"}, {"k", "v"}});
  io::save_safetensors(dir / "no_tensors.safetensors", io::NamedTensors{});
  io::save_safetensors(dir / "empty_tensor.safetensors",
                       io::NamedTensors{{"e", zeros({0, 3})}, {"s", scalar_tensor(1.5)}});
  write_file(dir / "deep_header.safetensors",
             safetensors_bytes("{\"__metadata__\":{\"a\":\"b\"},\"x\":" + nested(100000) + "}"));
  const std::string big = "4611686018427387904";  // 2^62
  write_file(dir / "huge_dims_empty.safetensors",
             safetensors_bytes("{\"t\":{\"dtype\":\"F32\",\"shape\":[0," + big + "," + big +
                               "],\"data_offsets\":[0,0]}}"));
  write_file(dir / "huge_dims_overflow.safetensors",
             safetensors_bytes("{\"t\":{\"dtype\":\"F32\",\"shape\":[" + big + "," + big +
                               "],\"data_offsets\":[0,0]}}"));
}

Bytes idx(uint32_t magic, const std::vector<uint32_t>& sizes, size_t payload) {
  Bytes out;
  auto put = [&](uint32_t v) {
    for (int shift : {24, 16, 8, 0}) out += static_cast<char>((v >> shift) & 0xff);
  };
  put(magic);
  for (uint32_t s : sizes) put(s);
  for (size_t i = 0; i < payload; ++i) out += static_cast<char>(i % 10);
  return out;
}

void idx_seeds(const fs::path& dir) {
  const Bytes images = idx(2051, {3, 4, 5}, 3 * 4 * 5);
  const Bytes labels = idx(2049, {3}, 3);
  write_file(dir / "images.idx", images);
  write_gzip(dir / "images.idx.gz", images);
  write_file(dir / "labels.idx", labels);
  write_gzip(dir / "labels.idx.gz", labels);
  write_file(dir / "empty_images.idx", idx(2051, {0, 28, 28}, 0));
  write_file(dir / "huge_header.idx", idx(2051, {0xffffffffu, 0xffff, 0xffff}, 16));
  write_gzip(dir / "huge_header.idx.gz", idx(2051, {0xffffffffu, 0xffff, 0xffff}, 16));
}

void checkpoint_seeds(const fs::path& dir) {
  const fs::path valid = dir / "valid.safetensors";
  kiln::fuzz::TinyRun run(valid.string());
  kiln::train::History history{{0.5}, {0.75}, {1.0}};
  kiln::train::save_checkpoint(run.args, *run.model, *run.optimizer, run.schedule.get(), nullptr, 1,
                               history);
  const auto file = kiln::io::load_safetensors(valid);
  auto variant = [&](const char* name, kiln::io::Metadata changes) {
    kiln::io::Metadata metadata = file.metadata;
    for (auto& [key, value] : changes) metadata[key] = value;
    kiln::io::save_safetensors(dir / name, file.tensors, metadata);
  };
  variant("deep_run.safetensors", {{"run", nested(100000)}});
  variant("deep_history.safetensors", {{"history", nested(100000)}});
  // One bad number each: the first refused would hide the checks of the others.
  variant("big_epochs_done.safetensors", {{"epochs_done", "99999999999999999999"}});
  variant("bad_rng_seed.safetensors", {{"kiln.rng.seed", "-1"}});
  variant("big_rng_offset.safetensors", {{"kiln.rng.offset", "18446744073709551616"}});
}

void plugin_table_seeds(const fs::path& dir) {
  // See fuzz_plugin_table.cpp for how the bytes are read; zeros are the valid choices.
  write_file(dir / "valid", Bytes(16, '\0'));
  write_file(dir / "misnamed", Bytes("\0\0\0\x01\0", 5) + Bytes(11, '\0'));
  write_file(dir / "all_entries_null", Bytes(5, '\0') + Bytes(8, '\xff') + Bytes(3, '\0'));
  write_file(dir / "abi_1_0", Bytes("\x03\0\xfe", 3) + Bytes(13, '\0'));
  write_file(dir / "too_small", Bytes("\x04", 1) + Bytes(15, '\0'));
  write_file(dir / "no_collectives", Bytes(13, '\0') + Bytes("\xff", 1) + Bytes(2, '\0'));
  write_file(dir / "collectives_incomplete", Bytes(14, '\0') + Bytes("\x05\x00", 2));
}

void op_schema_seeds(const fs::path& dir) {
  // What fuzz_op_schema reads as the JSON of "fuzz.op" version 1.
  write_file(dir / "unary", R"({"inputs": [{"name": "x"}], "outputs": [{"name": "y",
      "shape": "input 0"}], "attributes": [{"name": "beta", "type": "FLOAT"}],
      "dtypes": {"class": "float32_64", "one_dtype": true}})");
  write_file(dir / "every_key", R"({"name": "fuzz.op", "version": 1,
      "inputs": [{"name": "a", "desc": "left"}, {"name": "b"}],
      "outputs": [{"name": "c", "shape": "broadcast"}, {"name": "m", "shape": "input 1",
                   "dtype": "bool"}, {"name": "n", "shape": "scalar", "dtype": "input 1"},
                  {"name": "free"}],
      "attributes": [{"name": "k", "type": "INT", "default": 3},
                     {"name": "s", "type": "STRING", "optional": true, "default": "x"},
                     {"name": "f", "type": "FLOAT", "default": 0.5, "desc": "scale"}],
      "dtypes": {"class": "all", "of": "output 0", "one_dtype": false},
      "differentiable": true, "gradient": "fuzz.op_backward", "semantics": "text"})");
  write_file(dir / "deep", Bytes(100000, '[') + Bytes(100000, ']'));
  write_file(dir / "long", R"({"semantics": ")" + Bytes(100000, 'a') + R"("})");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kiln_fuzz_seeds DIR\n";
    return 2;
  }
  try {
    const fs::path root = argv[1];
    for (const char* target : {"safetensors", "idx", "checkpoint", "plugin_table", "op_schema"})
      fs::create_directories(root / target);
    safetensors_seeds(root / "safetensors");
    idx_seeds(root / "idx");
    checkpoint_seeds(root / "checkpoint");
    plugin_table_seeds(root / "plugin_table");
    op_schema_seeds(root / "op_schema");
    std::cout << "kiln_fuzz_seeds: wrote the seed corpora to " << root.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kiln_fuzz_seeds: " << e.what() << "\n";
    return 1;
  }
}
