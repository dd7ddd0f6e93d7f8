#pragma once
/// @file mnist.h
/// MNIST-format (IDX) datasets, read straight from the distributed `.gz` files with
/// zlib: MNIST itself and Fashion-MNIST, which is installed on Debian by the package
/// `dataset-fashion-mnist` in /usr/share/datasets/fashion-mnist.
///
/// @code
///   kiln::data::FashionMNIST train;                            // 60000 samples
///   kiln::data::FashionMNIST test(kiln::data::FashionMNIST::default_root(), false);
///   auto [image, label] = train.get(0);   // float32 [1, 28, 28] in [0, 1], int64 []
/// @endcode
///
/// Every file is validated: gzip integrity, magic number, element type, dimension
/// count and sizes, truncation, trailing data, label range and the image/label
/// count match. Each failure is a kiln::Error naming the file and the problem.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/device.h"

namespace kiln::data {

namespace detail {
struct MnistSplit;
}

// -- IDX files ------------------------------------------------------------------------
// An IDX file is: a big-endian magic number 0x0000TTDD (TT = element type, 0x08 for
// unsigned bytes; DD = dimension count), DD big-endian uint32 sizes, then the
// elements. Images are 0x00000803 (2051) [count, rows, cols]; labels 0x00000801
// (2049) [count]. Files may be gzip-compressed or plain.

/// The contents of an IDX image file: count * rows * cols bytes, row-major.
struct IdxImages {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;
};

/// What a reader accepts, checked against the header before any payload is read
/// (so before a compressed file is inflated): a decompression bomb, a few kilobytes
/// of gzip that announce gigabytes, is refused without allocating or inflating them.
struct IdxLimits {
  /// The most payload bytes (count * rows * cols, or the label count) a file may
  /// declare. The default, 1 GiB, is 20 times MNIST's training images.
  uint64_t max_bytes = uint64_t{1} << 30;
  /// Images must be exactly rows x cols pixels; 0 accepts any size. Images only.
  int64_t rows = 0;
  int64_t cols = 0;
};

/// Reads an IDX3 unsigned-byte image file (magic 2051). Throws kiln::Error naming
/// the file for: a path that is not a regular file (a FIFO is refused, never waited
/// on), corrupt gzip data, a wrong magic number, a zero row or column count, sizes
/// beyond `limits`, a file that ends early, and data left over after the last image
/// (decompressed bytes, or bytes after the gzip stream that are not another member).
IdxImages read_idx_images(const std::filesystem::path& file, const IdxLimits& limits = {});

/// Reads an IDX1 unsigned-byte label file (magic 2049); same checks as above.
std::vector<uint8_t> read_idx_labels(const std::filesystem::path& file,
                                     const IdxLimits& limits = {});

// -- MNIST-format datasets ---------------------------------------------------------------

/// How images are presented; defaults: pixels / 255 (no normalization), tensors
/// on the default device.
struct MNISTOptions {
  MNISTOptions() = default;
  /// Images become (pixel / 255 - mean) / std.
  MNISTOptions& normalize(double mean, double std) {
    mean_ = mean;
    std_ = std;
    return *this;
  }
  /// The image size every file must declare; unset accepts any (FashionMNIST
  /// defaults it to 28 x 28). A file that disagrees is refused before it is inflated.
  MNISTOptions& image_size(int64_t rows, int64_t cols) {
    image_size_ = std::array<int64_t, 2>{rows, cols};
    return *this;
  }
  /// Where the whole dataset is kept (e.g. on the GPU, so batches never cross the bus).
  MNISTOptions& device(const Device& device) {
    device_ = device;
    return *this;
  }
  double mean() const { return mean_; }
  double std() const { return std_; }
  const std::optional<Device>& device() const { return device_; }
  const std::optional<std::array<int64_t, 2>>& image_size() const { return image_size_; }

 private:
  double mean_ = 0.0;
  double std_ = 1.0;
  std::optional<std::array<int64_t, 2>> image_size_;
  std::optional<Device> device_;
};

/// An MNIST-format dataset in a folder holding train-images-idx3-ubyte.gz,
/// train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and
/// t10k-labels-idx1-ubyte.gz (each may also be uncompressed, without ".gz").
/// Inputs are float32 [N, 1, rows, cols], targets int64 [N] in 0..9, all held in
/// memory as one TensorDataset.
class MNIST : public TensorDataset {
 public:
  /// Loads the training set (train = true) or the test set from `root`.
  explicit MNIST(const std::filesystem::path& root, bool train = true, MNISTOptions options = {});

  /// The image and label files the split was read from.
  const std::filesystem::path& images_file() const { return images_file_; }
  const std::filesystem::path& labels_file() const { return labels_file_; }

 protected:
  /// `dataset_name` and `install_hint` make the missing-folder message specific.
  MNIST(const std::filesystem::path& root, bool train, const MNISTOptions& options,
        std::string_view dataset_name, std::string_view install_hint);

 private:
  explicit MNIST(detail::MnistSplit&& split);

  std::filesystem::path images_file_;
  std::filesystem::path labels_file_;
};

/// Zalando's Fashion-MNIST: 60000 training and 10000 test images of clothing in
/// 10 classes, in the MNIST format.
class FashionMNIST : public MNIST {
 public:
  /// Mean and standard deviation of the training pixels (scaled to [0, 1]), for
  /// MNISTOptions().normalize(FashionMNIST::kMean, FashionMNIST::kStd).
  static constexpr double kMean = 0.28604;
  static constexpr double kStd = 0.35302;

  /// /usr/share/datasets/fashion-mnist, where `apt install dataset-fashion-mnist` puts it.
  static std::filesystem::path default_root();
  /// "T-shirt/top", "Trouser", ..., "Ankle boot", indexed by label.
  static const std::array<std::string_view, 10>& class_names();

  /// A missing folder or file is a kiln::Error naming the path searched and the
  /// package to install; images that are not 28 x 28 (unless options.image_size()
  /// says otherwise) are refused, naming the file.
  explicit FashionMNIST(const std::filesystem::path& root = default_root(), bool train = true,
                        MNISTOptions options = {});
};

}  // namespace kiln::data
