#include "kiln/data/mnist.h"

#include <string>
#include <system_error>

#include "kiln/base/regular_file.h"
#include "kiln/error.h"

namespace kiln::data {

namespace {

constexpr std::string_view kGenericHint =
    "pass the folder that holds the MNIST-format files (train-images-idx3-ubyte.gz, "
    "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz)";

// `stem`.gz if present, else the uncompressed `stem`, else throws.
std::filesystem::path find_file(const std::filesystem::path& root, const std::string& stem,
                                std::string_view dataset_name, std::string_view hint) {
  std::error_code error;
  if (!std::filesystem::is_directory(root, error))
    KILN_FAIL(dataset_name, ": data folder '", root.string(), "' ",
              std::filesystem::exists(root, error) ? "is not a folder" : "does not exist", "; ",
              hint);
  for (const auto& name : {stem + ".gz", stem}) {
    std::filesystem::path candidate = root / name;
    const std::string problem = base::regular_file_problem(candidate.string());
    if (problem.empty()) return candidate;
    if (problem != "does not exist")  // a FIFO, a device, a folder: not "not found"
      KILN_FAIL(dataset_name, ": '", candidate.string(), "' ", problem);
  }
  KILN_FAIL(dataset_name, ": '", (root / (stem + ".gz")).string(), "' not found (nor '", stem,
            "' uncompressed) in the data folder '", root.string(), "'; ", hint);
}

}  // namespace

namespace detail {
struct MnistSplit {
  Tensor inputs;
  Tensor targets;
  std::filesystem::path images_file;
  std::filesystem::path labels_file;
};
}  // namespace detail

namespace {

detail::MnistSplit load_split(const std::filesystem::path& root, bool train,
                              const MNISTOptions& options, std::string_view dataset_name,
                              std::string_view install_hint) {
  KILN_CHECK(options.std() > 0, dataset_name, ": normalize() needs std > 0, got ", options.std());
  IdxLimits limits;
  if (const auto& size = options.image_size()) {
    KILN_CHECK((*size)[0] > 0 && (*size)[1] > 0, dataset_name,
               ": image_size() needs positive sizes, got ", (*size)[0], " x ", (*size)[1]);
    limits.rows = (*size)[0];
    limits.cols = (*size)[1];
  }
  detail::MnistSplit split;
  const std::string prefix = train ? "train" : "t10k";
  split.images_file = find_file(root, prefix + "-images-idx3-ubyte", dataset_name, install_hint);
  split.labels_file = find_file(root, prefix + "-labels-idx1-ubyte", dataset_name, install_hint);
  IdxImages images;
  try {
    images = read_idx_images(split.images_file, limits);
  } catch (const Error& e) {
    KILN_FAIL(dataset_name, ": ", e.what());  // which dataset expected what
  }
  std::vector<uint8_t> labels = read_idx_labels(split.labels_file, limits);

  KILN_CHECK(static_cast<uint64_t>(images.count) == labels.size(), dataset_name, ": '",
             split.images_file.string(), "' holds ", images.count, " images but '",
             split.labels_file.string(), "' holds ", labels.size(), " labels");
  std::vector<int64_t> targets(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    KILN_CHECK(labels[i] <= 9, dataset_name, ": label ", int{labels[i]}, " at index ", i, " of '",
               split.labels_file.string(), "' is outside 0..9");
    targets[i] = labels[i];
  }

  // pixel / 255, then (x - mean) / std, both in float32 as PyTorch's ToTensor +
  // Normalize compute them.
  const float mean = static_cast<float>(options.mean());
  const float std = static_cast<float>(options.std());
  std::vector<float> pixels(images.pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = (static_cast<float>(images.pixels[i]) / 255.0f - mean) / std;

  TensorOptions where;
  if (options.device()) where.device(*options.device());
  split.inputs =
      copy_from_blob(pixels.data(), {images.count, 1, images.rows, images.cols}, float32, where);
  split.targets = from_vector(targets, {}, TensorOptions(int64).device(split.inputs.device()));
  return split;
}

}  // namespace

MNIST::MNIST(detail::MnistSplit&& split)
    : TensorDataset(std::move(split.inputs), std::move(split.targets)),
      images_file_(std::move(split.images_file)),
      labels_file_(std::move(split.labels_file)) {}

MNIST::MNIST(const std::filesystem::path& root, bool train, MNISTOptions options)
    : MNIST(root, train, options, "MNIST", kGenericHint) {}

MNIST::MNIST(const std::filesystem::path& root, bool train, const MNISTOptions& options,
             std::string_view dataset_name, std::string_view install_hint)
    : MNIST(load_split(root, train, options, dataset_name, install_hint)) {}

const std::array<std::string_view, 10>& FashionMNIST::class_names() {
  static const std::array<std::string_view, 10> names = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

std::filesystem::path FashionMNIST::default_root() { return "/usr/share/datasets/fashion-mnist"; }

namespace {
MNISTOptions with_28x28_default(MNISTOptions options) {
  if (!options.image_size()) options.image_size(28, 28);
  return options;
}
}  // namespace

FashionMNIST::FashionMNIST(const std::filesystem::path& root, bool train, MNISTOptions options)
    : MNIST(root, train, with_28x28_default(options), "FashionMNIST",
            "install the Debian package with `apt install dataset-fashion-mnist` (it puts the "
            "files in /usr/share/datasets/fashion-mnist), or pass the folder that holds "
            "train-images-idx3-ubyte.gz and the other three files") {}

}  // namespace kiln::data
