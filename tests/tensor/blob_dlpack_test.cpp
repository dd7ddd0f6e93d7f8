// Zero-copy ways in and out: from_blob wraps memory, data_ptr exposes it, and DLPack
// exchanges it with other libraries (here: with Kiln itself, and by hand-made
// DLManagedTensors as a producer such as NumPy would make them).
#include <kiln/dlpack.h>

#include <numeric>

#include "support/kiln_test.h"

namespace kiln::test {
namespace {

TEST(FromBlob, WrapsWithoutCopyingBothWays) {
  std::vector<float> v(6);
  std::iota(v.begin(), v.end(), 1.0f);
  Tensor t = from_blob(v.data(), {2, 3});
  EXPECT_EQ(t.data_ptr<float>(), v.data());
  v[0] = 42;  // the tensor sees writes to the memory
  EXPECT_EQ(t.to_vector<float>()[0], 42.0f);
  t.mul_(2.0);  // and the memory sees writes through the tensor
  EXPECT_EQ(v, (std::vector<float>{84, 4, 6, 8, 10, 12}));
}

TEST(FromBlob, StridesDescribeTheLayout) {
  std::vector<double> v = {1, 2, 3, 4, 5, 6};  // read as the transpose of a 2x3 matrix
  Tensor t = from_blob(v.data(), {3, 2}, {1, 3}, float64);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.sum().item<double>(), 21.0);
}

TEST(FromBlob, TheDeleterRunsOnceWhenTheLastUserIsGone) {
  int calls = 0;
  auto* data = new float[4]{1, 2, 3, 4};
  {
    Tensor t = from_blob(data, {4}, {1}, [&calls](void* p) {
      ++calls;
      delete[] static_cast<float*>(p);
    });
    Tensor view = t.reshape({2, 2}).transpose(0, 1);
    t = Tensor();
    EXPECT_EQ(calls, 0) << "a view still uses the memory";
    EXPECT_EQ(view.sum().item<float>(), 10.0f);
  }
  EXPECT_EQ(calls, 1);
}

TEST(FromBlob, BadArgumentsAreErrorsAndTheMemoryStaysTheCallers) {
  float x[4] = {};
  int calls = 0;
  auto count = [&calls](void*) { ++calls; };
  EXPECT_KILN_ERROR(from_blob(x, {2, 2}, {2}, count), "strides");
  EXPECT_KILN_ERROR(from_blob(x, {2, 2}, {-1, 1}, count), "negative");
  EXPECT_KILN_ERROR(from_blob(nullptr, {2}), "null");
  EXPECT_KILN_ERROR(from_blob(x, {-2}), "");
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(from_blob(nullptr, {0, 3}).numel(), 0) << "no elements, no memory needed";
}

TEST(DataPtr, PointsAtTheFirstElementOfAViewAndChecksTheType) {
  Tensor t = arange(0, 12, 1, int64).reshape({3, 4});
  Tensor row = t.select(0, 1);
  EXPECT_EQ(row.data_ptr<int64_t>(), t.data_ptr<int64_t>() + 4);
  EXPECT_EQ(*row.data_ptr<int64_t>(), 4);
  EXPECT_KILN_ERROR(t.data_ptr<float>(), "int64");
  EXPECT_KILN_ERROR(Tensor().data_ptr(), "undefined");
}

TEST(DLPack, RoundTripSharesMemoryAndReleasesTheExporter) {
  int released = 0;
  auto* data = new float[6]{1, 2, 3, 4, 5, 6};
  Tensor a = from_blob(data, {2, 3}, {3, 1}, [&released](void* p) {
    ++released;
    delete[] static_cast<float*>(p);
  });
  DLManagedTensor* m = to_dlpack(a.transpose(0, 1));
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 3);
  EXPECT_EQ(m->dl_tensor.strides[0], 1);
  EXPECT_EQ(m->dl_tensor.strides[1], 3);
  Tensor b = from_dlpack(m);
  a = Tensor();
  EXPECT_EQ(b.data_ptr<float>(), data);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(released, 0) << "the imported tensor keeps the memory alive";
  b = Tensor();
  EXPECT_EQ(released, 1);
}

TEST(DLPack, DtypesMapAndBoolTravelsAsUint8) {
  for (DType d :
       {float32, float64, float16, bfloat16, int32, int64, uint8, complex64, complex128}) {
    Tensor t = ones({3}, d);
    Tensor back = from_dlpack(to_dlpack(t));
    EXPECT_EQ(back.dtype(), d);
    EXPECT_EQ((is_complex(d) ? real(back) : back).to(float64).to_vector<double>(),
              (std::vector<double>{1, 1, 1}));
  }
  DLManagedTensor* m = to_dlpack(ones({2}, kbool));
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLUInt);
  EXPECT_EQ(from_dlpack(m).dtype(), uint8);
}

// A producer's tensor: compact (NULL strides), with a byte offset, and a deleter.
struct Produced {
  std::vector<int32_t> values = {9, 9, 1, 2, 3, 4};
  int64_t shape[2] = {2, 2};
  int deleted = 0;
  DLManagedTensor managed{};
  Produced() {
    managed.dl_tensor = {values.data(), {kDLCPU, 0},        2, {kDLInt, 32, 1}, shape,
                         nullptr,       2 * sizeof(int32_t)};
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Produced*>(self->manager_ctx)->deleted;
    };
  }
};

TEST(DLPack, ImportsWhatAnotherLibraryMade) {
  Produced p;
  {
    Tensor t = from_dlpack(&p.managed);
    EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4}));
    EXPECT_EQ(t.data_ptr<int32_t>(), p.values.data() + 2);
  }
  EXPECT_EQ(p.deleted, 1);
}

TEST(DLPack, MalformedOrForeignTensorsAreRefusedAndNotDeleted) {
  Produced p;
  p.managed.dl_tensor.dtype = {kDLComplex, 32, 1};  // complex32: no Kiln dtype
  EXPECT_KILN_ERROR(from_dlpack(&p.managed), "type code");
  p.managed.dl_tensor.dtype = {kDLFloat, 32, 4};
  EXPECT_KILN_ERROR(from_dlpack(&p.managed), "lanes");
  p.managed.dl_tensor.dtype = {kDLInt, 32, 1};
  p.managed.dl_tensor.device = {kDLOpenCL, 0};
  EXPECT_KILN_ERROR(from_dlpack(&p.managed), "device type");
  p.managed.dl_tensor.device = {kDLCPU, 0};
  p.managed.dl_tensor.ndim = -1;
  EXPECT_KILN_ERROR(from_dlpack(&p.managed), "ndim");
  p.managed.dl_tensor.ndim = 2;
  int64_t strides[2] = {-2, 1};
  p.managed.dl_tensor.strides = strides;
  EXPECT_KILN_ERROR(from_dlpack(&p.managed), "negative");
  EXPECT_KILN_ERROR(from_dlpack(nullptr), "null");
  EXPECT_EQ(p.deleted, 0) << "a refused tensor stays its producer's";
  EXPECT_KILN_ERROR(to_dlpack(ones({2}).requires_grad_()), "detach");
}

}  // namespace
}  // namespace kiln::test
