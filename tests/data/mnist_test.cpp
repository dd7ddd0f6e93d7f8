// MNIST / FashionMNIST datasets: a hand-made folder, the errors a user meets, and
// the real Fashion-MNIST when its Debian package is installed.
#include <kiln/data/mnist.h>
#include <sys/stat.h>

#include <chrono>

#include "idx_files.h"
#include "kiln_test.h"

namespace kiln::test {
namespace {

using data::FashionMNIST;
using data::MNIST;
using data::MNISTOptions;

// A folder in the MNIST layout: 3 training images (2x2) and 2 test images.
void write_small_dataset(const std::filesystem::path& root) {
  write_gz(root / "train-images-idx3-ubyte.gz", idx_images(3, 2, 2,
                                                           {0, 51, 102, 255,  //
                                                            1, 2, 3, 4,       //
                                                            5, 6, 7, 8}));
  write_gz(root / "train-labels-idx1-ubyte.gz", idx_labels(3, {9, 0, 4}));
  write_gz(root / "t10k-images-idx3-ubyte.gz", idx_images(2, 2, 2, ramp(8, 100)));
  write_gz(root / "t10k-labels-idx1-ubyte.gz", idx_labels(2, {1, 2}));
}

TEST(MNISTDataset, LoadsTheTrainingSplit) {
  TempDir dir;
  write_small_dataset(dir.path());
  MNIST train(dir.path());
  EXPECT_EQ(train.size(), 3);
  EXPECT_EQ(train.inputs().shape(), IntArrayRef({3, 1, 2, 2}));
  EXPECT_EQ(train.inputs().dtype(), float32);
  EXPECT_EQ(train.targets().dtype(), int64);
  EXPECT_EQ(train.targets().to_vector<int64_t>(), (std::vector<int64_t>{9, 0, 4}));
  auto first = train.get(0);
  EXPECT_EQ(first.input.shape(), IntArrayRef({1, 2, 2}));
  EXPECT_EQ(first.input.to_vector<float>(),
            (std::vector<float>{0.0f, 51 / 255.0f, 102 / 255.0f, 1.0f}));
  EXPECT_EQ(first.target.item<int64_t>(), 9);
  EXPECT_EQ(train.images_file(), dir / "train-images-idx3-ubyte.gz");
}

TEST(MNISTDataset, LoadsTheTestSplit) {
  TempDir dir;
  write_small_dataset(dir.path());
  MNIST test(dir.path(), /*train=*/false);
  EXPECT_EQ(test.size(), 2);
  EXPECT_EQ(test.targets().to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(test.get(1).input.to_vector<float>()[0], 104 / 255.0f);
  EXPECT_EQ(test.labels_file(), dir / "t10k-labels-idx1-ubyte.gz");
}

TEST(MNISTDataset, Normalizes) {
  TempDir dir;
  write_small_dataset(dir.path());
  MNIST train(dir.path(), true, MNISTOptions().normalize(0.5, 0.25));
  std::vector<float> first = train.get(0).input.to_vector<float>();
  EXPECT_EQ(first[0], (0.0f - 0.5f) / 0.25f);
  EXPECT_EQ(first[3], (1.0f - 0.5f) / 0.25f);
  EXPECT_KILN_ERROR(MNIST(dir.path(), true, MNISTOptions().normalize(0.5, 0)), "std > 0");
}

TEST(MNISTDataset, FallsBackToUncompressedFiles) {
  TempDir dir;
  write_small_dataset(dir.path());
  std::filesystem::remove(dir / "train-labels-idx1-ubyte.gz");
  write_plain(dir / "train-labels-idx1-ubyte", idx_labels(3, {5, 6, 7}));
  MNIST train(dir.path());
  EXPECT_EQ(train.targets().to_vector<int64_t>(), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(train.labels_file(), dir / "train-labels-idx1-ubyte");
}

TEST(MNISTDataset, ImageAndLabelCountsMustMatch) {
  TempDir dir;
  write_small_dataset(dir.path());
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(2, {1, 2}));
  EXPECT_KILN_ERROR(MNIST(dir.path()), "holds 3 images", "holds 2 labels",
                    (dir / "train-images-idx3-ubyte.gz").string(),
                    (dir / "train-labels-idx1-ubyte.gz").string());
}

TEST(MNISTDataset, LabelsMustBeDigits) {
  TempDir dir;
  write_small_dataset(dir.path());
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(3, {1, 12, 2}));
  EXPECT_KILN_ERROR(MNIST(dir.path()), "label 12 at index 1", "outside 0..9");
}

TEST(MNISTDataset, CorruptFileIsNamed) {
  TempDir dir;
  write_small_dataset(dir.path());
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2, 2, 2, ramp(7)));
  EXPECT_KILN_ERROR(MNIST(dir.path(), false), (dir / "t10k-images-idx3-ubyte.gz").string(),
                    "truncated");
}

TEST(MNISTDataset, KeepsTheDataOnTheRequestedDevice) {
  TempDir dir;
  write_small_dataset(dir.path());
  MNIST train(dir.path(), true, MNISTOptions().device("cpu:0"));
  EXPECT_EQ(train.inputs().device(), Device("cpu:0"));
  EXPECT_EQ(train.targets().device(), Device("cpu:0"));
}

TEST(FashionMNISTDataset, MissingFolderNamesThePackageAndThePath) {
  TempDir dir;
  auto missing = dir / "nowhere";
  EXPECT_KILN_ERROR(FashionMNIST(missing), "apt install dataset-fashion-mnist", missing.string(),
                    "does not exist");
}

TEST(FashionMNISTDataset, MissingFileNamesThePackageAndTheFile) {
  TempDir dir;
  write_small_dataset(dir.path());
  std::filesystem::remove(dir / "t10k-images-idx3-ubyte.gz");
  EXPECT_KILN_ERROR(FashionMNIST(dir.path(), false), "apt install dataset-fashion-mnist",
                    (dir / "t10k-images-idx3-ubyte.gz").string(), "not found");
}

TEST(FashionMNISTDataset, ImagesMustBe28x28UnlessToldOtherwise) {
  TempDir dir;
  write_small_dataset(dir.path());
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2, 10, 10, ramp(200)));
  const std::string file = (dir / "t10k-images-idx3-ubyte.gz").string();
  EXPECT_KILN_ERROR(FashionMNIST(dir.path(), false), "FashionMNIST", file, "10 x 10",
                    "28 x 28 are expected");
  FashionMNIST small(dir.path(), false, MNISTOptions().image_size(10, 10));
  EXPECT_EQ(small.get(0).input.shape(), IntArrayRef({1, 10, 10}));
  EXPECT_KILN_ERROR(MNIST(dir.path(), false, MNISTOptions().image_size(28, 28)), "MNIST", file,
                    "28 x 28");
}

TEST(FashionMNISTDataset, AFifoInThePlaceOfAFileIsNamedNotMissing) {
  TempDir dir;
  write_small_dataset(dir.path());
  const std::string fifo = (dir / "train-images-idx3-ubyte.gz").string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string message =
      kiln_error_message_without_blocking(fifo, [&] { FashionMNIST dataset(dir.path()); });
  EXPECT_TRUE(contains(message, fifo) && contains(message, "is a FIFO (named pipe)")) << message;
  EXPECT_FALSE(contains(message, "not found")) << message;
}

TEST(FashionMNISTDataset, AFileIsNotAFolder) {
  TempDir dir;
  write_plain(dir / "file", {1});
  EXPECT_KILN_ERROR(FashionMNIST(dir / "file"), "is not a folder");
}

TEST(FashionMNISTDataset, ClassNames) {
  EXPECT_EQ(FashionMNIST::class_names()[0], "T-shirt/top");
  EXPECT_EQ(FashionMNIST::class_names()[9], "Ankle boot");
  EXPECT_EQ(FashionMNIST::default_root(), "/usr/share/datasets/fashion-mnist");
}

// -- the real dataset ------------------------------------------------------------------------

class RealFashionMNIST : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(FashionMNIST::default_root()))
      GTEST_SKIP() << FashionMNIST::default_root()
                   << " is absent (apt install dataset-fashion-mnist to run this test)";
  }

  static void check_split(const FashionMNIST& set, int64_t expected_size) {
    ASSERT_EQ(set.size(), expected_size);
    EXPECT_EQ(set.inputs().shape(), IntArrayRef({expected_size, 1, 28, 28}));
    // Every class holds exactly a tenth of each split.
    std::vector<int64_t> labels = set.targets().to_vector<int64_t>();
    std::vector<int64_t> per_class(10, 0);
    for (int64_t label : labels) {
      ASSERT_GE(label, 0);
      ASSERT_LE(label, 9);
      ++per_class[static_cast<size_t>(label)];
    }
    for (int64_t count : per_class) EXPECT_EQ(count, expected_size / 10);
    EXPECT_GE(set.inputs().min().item<float>(), 0.0f);
    EXPECT_LE(set.inputs().max().item<float>(), 1.0f);
  }
};

TEST_F(RealFashionMNIST, TrainingSetHas60000Samples) {
  FashionMNIST train;
  check_split(train, 60000);
  // The constants offered for normalization are the training set's statistics.
  const double mean = train.inputs().to(float64).mean().item<double>();
  const double std = std::sqrt(train.inputs().to(float64).var({}, 0).item<double>());
  EXPECT_NEAR(mean, FashionMNIST::kMean, 5e-5);
  EXPECT_NEAR(std, FashionMNIST::kStd, 5e-5);
}

TEST_F(RealFashionMNIST, TestSetHas10000Samples) {
  FashionMNIST test(FashionMNIST::default_root(), /*train=*/false);
  check_split(test, 10000);
  // First test label of Fashion-MNIST is 9 (ankle boot), as published.
  EXPECT_EQ(test.get(0).target.item<int64_t>(), 9);
}

TEST_F(RealFashionMNIST, NormalizedTrainingSetIsCentred) {
  FashionMNIST train(FashionMNIST::default_root(), true,
                     MNISTOptions().normalize(FashionMNIST::kMean, FashionMNIST::kStd));
  Tensor x = train.inputs().to(float64);
  EXPECT_NEAR(x.mean().item<double>(), 0.0, 1e-3);
  EXPECT_NEAR(std::sqrt(x.var({}, 0).item<double>()), 1.0, 1e-3);
}

}  // namespace
}  // namespace kiln::test
