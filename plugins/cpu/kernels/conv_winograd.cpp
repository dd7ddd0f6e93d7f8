#include "conv_winograd.h"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "blas.h"
#include "elementwise.h"
#include "scratch.h"
#include "thread_pool.h"

namespace kiln::cpu {

namespace {

// Tiles per chunk: enough columns for efficient GEMMs, few enough that a chunk's
// transformed input and GEMM outputs (16·(c_in + c_out)·tiles floats) stay near L2.
constexpr int64_t kTargetTiles = 256;
constexpr int64_t kChunkFloats = int64_t{1} << 19;
// Channel counts below which im2col's single GEMM (inner size 9·c_in) does better.
constexpr int64_t kMinChannels = 8;
// Filters per task when finishing the weight gradient.
constexpr int64_t kParallelGrainFilters = 512;

struct Plan {
  Winograd3x3 s;
  int64_t th, tw;  // tiles per output column and row
  int64_t tiles_per_sample, total_tiles;
  int64_t chunk, chunks;  // tiles per chunk (the last may have fewer), chunk count
  int64_t row_len;        // floats per zero-padded input row of a tile row
};

Plan make_plan(const Winograd3x3& s) {
  Plan p{s, (s.ho + 1) / 2, (s.wo + 1) / 2, 0, 0, 0, 0, 0};
  p.tiles_per_sample = p.th * p.tw;
  p.total_tiles = s.n * p.tiles_per_sample;
  int64_t chunk = std::min(kTargetTiles, kChunkFloats / (16 * (s.c_in + s.c_out)));
  chunk = std::max<int64_t>(chunk, 16);
  // Whole rounds of the pool, so no thread waits on a last, lonely chunk.
  const int64_t threads = pool().size();
  int64_t chunks = (p.total_tiles + chunk - 1) / chunk;
  chunks = std::max<int64_t>(1, (chunks + threads - 1) / threads * threads);
  chunks = std::min(chunks, std::max<int64_t>(p.total_tiles, 1));
  p.chunk = (p.total_tiles + chunks - 1) / chunks;
  p.chunks = (p.total_tiles + p.chunk - 1) / p.chunk;
  // A run's last group of 8 tiles reads 18 columns from its first tile's, which may
  // be the row's last: 2·tw + 16 columns.
  p.row_len = (2 * p.tw + 16 + 7) / 8 * 8;
  return p;
}

// ---- the arithmetic, once for four tiles at a time (SSE) and once for one ----------

#if defined(__SSE2__)
// Stores the first n (< 8) floats of lo:hi.
inline void store_first(float* dst, __m128 lo, __m128 hi, int64_t n) {
  if (n >= 4) {
    _mm_storeu_ps(dst, lo);
    dst += 4;
    n -= 4;
    lo = hi;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(dst), lo);
    dst += 2;
    n -= 2;
    lo = _mm_movehl_ps(lo, lo);
  }
  if (n >= 1) _mm_store_ss(dst, lo);
}

struct Vec {
  __m128 v;
};
inline Vec operator+(Vec a, Vec b) { return {_mm_add_ps(a.v, b.v)}; }
inline Vec operator-(Vec a, Vec b) { return {_mm_sub_ps(a.v, b.v)}; }
#endif

// V = Bᵀ d B for a 4x4 patch d; v[4r + k].
template <class V>
inline void input_transform(const V (&d)[4][4], V (&v)[16]) {
  V t[4][4];  // d B, row by row
  for (int r = 0; r < 4; ++r) {
    t[r][0] = d[r][0] - d[r][2];
    t[r][1] = d[r][1] + d[r][2];
    t[r][2] = d[r][2] - d[r][1];
    t[r][3] = d[r][1] - d[r][3];
  }
  for (int k = 0; k < 4; ++k) {
    v[k] = t[0][k] - t[2][k];
    v[4 + k] = t[1][k] + t[2][k];
    v[8 + k] = t[2][k] - t[1][k];
    v[12 + k] = t[1][k] - t[3][k];
  }
}

// Y = Aᵀ m A for the 4x4 m[4r + k]; y[2i + j].
template <class V>
inline void output_transform(const V (&m)[16], V (&y)[4]) {
  V z[2][4];  // Aᵀ m
  for (int k = 0; k < 4; ++k) {
    z[0][k] = m[k] + m[4 + k] + m[8 + k];
    z[1][k] = m[4 + k] - m[8 + k] - m[12 + k];
  }
  for (int i = 0; i < 2; ++i) {
    y[2 * i] = z[i][0] + z[i][1] + z[i][2];
    y[2 * i + 1] = z[i][1] - z[i][2] - z[i][3];
  }
}

// U[ξ][o][c] = (G g Gᵀ)[ξ] for the 3x3 filter g = filter(o, c, ·, ·), in float64 and
// rounded once.
template <class Filter>
void transform_filters(int64_t c_out, int64_t c_in, const Filter& filter, float* u) {
  const int64_t plane = c_out * c_in;
  for (int64_t o = 0; o < c_out; ++o) {
    for (int64_t c = 0; c < c_in; ++c) {
      double g[3][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) g[i][j] = filter(o, c, i, j);
      double a[4][3];  // G g
      for (int j = 0; j < 3; ++j) {
        a[0][j] = g[0][j];
        a[1][j] = 0.5 * (g[0][j] + g[1][j] + g[2][j]);
        a[2][j] = 0.5 * (g[0][j] - g[1][j] + g[2][j]);
        a[3][j] = g[2][j];
      }
      for (int r = 0; r < 4; ++r) {
        const double row[4] = {a[r][0], 0.5 * (a[r][0] + a[r][1] + a[r][2]),
                               0.5 * (a[r][0] - a[r][1] + a[r][2]), a[r][2]};
        for (int k = 0; k < 4; ++k)
          u[(4 * r + k) * plane + o * c_in + c] = static_cast<float>(row[k]);
      }
    }
  }
}

// A run of tiles that share a tile row: tiles tx0..tx1-1 of row ty of one sample,
// the first at chunk index `local`.
struct TileRun {
  int64_t sample, ty, tx0, tx1, local;
};

struct RunList {
  const TileRun* first;
  size_t count;
  const TileRun* begin() const { return first; }
  const TileRun* end() const { return first + count; }
  size_t size() const { return count; }
  const TileRun& operator[](size_t i) const { return first[i]; }
};

// The runs covering tiles [t0, t1), in order, in this thread's scratch. Computed once
// per chunk (every channel walks the same list) to keep divisions out of the
// channel loops.
RunList tile_runs(const Plan& p, int64_t t0, int64_t t1) {
  // At most one run per tile.
  TileRun* runs = scratch<TileRun>(ScratchSlot::Runs, static_cast<size_t>(t1 - t0));
  size_t count = 0;
  for (int64_t t = t0; t < t1;) {
    const int64_t sample = t / p.tiles_per_sample, r = t % p.tiles_per_sample;
    const int64_t ty = r / p.tw, tx0 = r % p.tw;
    const int64_t tx1 = std::min(p.tw, tx0 + (t1 - t));
    runs[count++] = {sample, ty, tx0, tx1, t - t0};
    t += tx1 - tx0;
  }
  return {runs, count};
}

// Input rows [row0, row0 + count) of a plane (row −pad_h .. of the padded input),
// zero-padded: rows[i·len + j] = x[row0 + i − pad_h][j − pad_w], 0 outside.
void pad_rows(const Plan& p, const float* plane, int64_t row0, int64_t count, float* rows) {
  const int64_t len = p.row_len, w = p.s.w, pw = p.s.pad_w;
  for (int64_t i = 0; i < count; ++i) {
    float* dst = rows + i * len;
    const int64_t ih = row0 + i - p.s.pad_h;
    if (ih < 0 || ih >= p.s.h) {
      for (int64_t j = 0; j < len; ++j) dst[j] = 0.0f;
      continue;
    }
    const float* src = plane + ih * w;
    const int64_t hi = std::min(len, w + pw);
    for (int64_t j = 0; j < pw; ++j) dst[j] = 0.0f;
    for (int64_t j = pw; j < hi; ++j) dst[j] = src[j - pw];
    for (int64_t j = hi; j < len; ++j) dst[j] = 0.0f;
  }
}

// Transformed input of `count` tiles whose patches start at column 2k of the four
// padded rows at `rows`: v[ξ·ld + k]. Writes whole groups of 4 (or 8) tiles; the
// caller leaves room for that past the run (see run()).
void transform_input_run_sse(const float* rows, int64_t len, int64_t count, float* v, int64_t ld) {
  int64_t k = 0;
#if defined(__SSE2__)
  // Tile k reads columns 2k..2k+3: even and odd columns from two loads each.
  for (; k < count; k += 4) {
    Vec d[4][4], out[16];
    for (int r = 0; r < 4; ++r) {
      const float* row = rows + r * len + 2 * k;
      const __m128 a0 = _mm_loadu_ps(row), a1 = _mm_loadu_ps(row + 4);
      const __m128 b0 = _mm_loadu_ps(row + 2), b1 = _mm_loadu_ps(row + 6);
      d[r][0].v = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
      d[r][1].v = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
      d[r][2].v = _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));
      d[r][3].v = _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
    }
    input_transform(d, out);
    for (int xi = 0; xi < 16; ++xi) _mm_storeu_ps(v + xi * ld + k, out[xi].v);
  }
#endif
  for (; k < count; ++k) {
    float d[4][4], out[16];
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 4; ++j) d[r][j] = rows[r * len + 2 * k + j];
    input_transform(d, out);
    for (int xi = 0; xi < 16; ++xi) v[xi * ld + k] = out[xi];
  }
}

// Output tiles tx0..tx1-1 of tile row ty of one output plane from m[ξ·ld + k].
void transform_output_run_sse(const Plan& p, const float* m, int64_t ld, float bias, float* plane,
                              int64_t ty, int64_t tx0, int64_t tx1) {
  const int64_t count = tx1 - tx0, ho = p.s.ho, wo = p.s.wo;
  const int64_t oh = 2 * ty;
  int64_t k = 0;
#if defined(__SSE2__)
  // Four tiles at a time; `m` has room past the run, so a last, partial group loads
  // whole. Outputs past the plane's edge are not stored.
  const __m128 b = _mm_set1_ps(bias);
  for (; k < count; k += 4) {
    Vec in[16], y[4];
    for (int xi = 0; xi < 16; ++xi) in[xi].v = _mm_loadu_ps(m + xi * ld + k);
    output_transform(in, y);
    const int64_t ow = 2 * (tx0 + k);
    const __m128 y00 = _mm_add_ps(y[0].v, b), y01 = _mm_add_ps(y[1].v, b);
    const __m128 y10 = _mm_add_ps(y[2].v, b), y11 = _mm_add_ps(y[3].v, b);
    const __m128 out[4] = {_mm_unpacklo_ps(y00, y01), _mm_unpackhi_ps(y00, y01),
                           _mm_unpacklo_ps(y10, y11), _mm_unpackhi_ps(y10, y11)};
    const int64_t cols = std::min<int64_t>(8, std::min(wo - ow, 2 * (count - k)));
    for (int i = 0; i < 2 && oh + i < ho; ++i) {
      float* row = plane + (oh + i) * wo + ow;
      if (cols == 8) {
        _mm_storeu_ps(row, out[2 * i]);
        _mm_storeu_ps(row + 4, out[2 * i + 1]);
      } else {
        store_first(row, out[2 * i], out[2 * i + 1], cols);
      }
    }
  }
#endif
  for (; k < count; ++k) {
    float in[16], y[4];
    for (int xi = 0; xi < 16; ++xi) in[xi] = m[xi * ld + k];
    output_transform(in, y);
    const int64_t ow = 2 * (tx0 + k);
    for (int i = 0; i < 2 && oh + i < ho; ++i)
      for (int j = 0; j < 2 && ow + j < wo; ++j)
        plane[(oh + i) * wo + ow + j] = y[2 * i + j] + bias;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same transforms eight tiles at a time on AVX2 machines (the same operations in
// the same order on each lane: results are identical to the SSE2 path).
#define KILN_WINOGRAD_AVX2 1
#define KILN_AVX2 __attribute__((target("avx2")))

// Evens and odds of 16 consecutive floats, in order.
KILN_AVX2 inline void deinterleave8(const float* src, __m256& even, __m256& odd) {
  const __m256 a = _mm256_loadu_ps(src), b = _mm256_loadu_ps(src + 8);
  // In-lane shuffles give tiles 0 1 4 5 | 2 3 6 7; swapping the middle quarters
  // restores 0..7.
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))), _MM_SHUFFLE(3, 1, 2, 0)));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))), _MM_SHUFFLE(3, 1, 2, 0)));
}

KILN_AVX2 void transform_input_run_avx2(const float* rows, int64_t len, int64_t count, float* v,
                                        int64_t ld) {
  for (int64_t k = 0; k < count; k += 8) {
    __m256 t[4][4];
    for (int r = 0; r < 4; ++r) {
      __m256 d0, d1, d2, d3;
      deinterleave8(rows + r * len + 2 * k, d0, d1);
      deinterleave8(rows + r * len + 2 * k + 2, d2, d3);
      t[r][0] = _mm256_sub_ps(d0, d2);
      t[r][1] = _mm256_add_ps(d1, d2);
      t[r][2] = _mm256_sub_ps(d2, d1);
      t[r][3] = _mm256_sub_ps(d1, d3);
    }
    for (int j = 0; j < 4; ++j) {
      _mm256_storeu_ps(v + j * ld + k, _mm256_sub_ps(t[0][j], t[2][j]));
      _mm256_storeu_ps(v + (4 + j) * ld + k, _mm256_add_ps(t[1][j], t[2][j]));
      _mm256_storeu_ps(v + (8 + j) * ld + k, _mm256_sub_ps(t[2][j], t[1][j]));
      _mm256_storeu_ps(v + (12 + j) * ld + k, _mm256_sub_ps(t[1][j], t[3][j]));
    }
  }
}

KILN_AVX2 void transform_output_run_avx2(const Plan& p, const float* m, int64_t ld, float bias,
                                         float* plane, int64_t ty, int64_t tx0, int64_t tx1) {
  const int64_t count = tx1 - tx0, ho = p.s.ho, wo = p.s.wo, oh = 2 * ty;
  const __m256 b = _mm256_set1_ps(bias);
  for (int64_t k = 0; k < count; k += 8) {
    __m256 z[2][4];
    for (int j = 0; j < 4; ++j) {
      const __m256 m0 = _mm256_loadu_ps(m + j * ld + k), m1 = _mm256_loadu_ps(m + (4 + j) * ld + k);
      const __m256 m2 = _mm256_loadu_ps(m + (8 + j) * ld + k);
      const __m256 m3 = _mm256_loadu_ps(m + (12 + j) * ld + k);
      z[0][j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
      z[1][j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
    }
    const int64_t ow = 2 * (tx0 + k);
    const int64_t cols = std::min<int64_t>(16, std::min(wo - ow, 2 * (count - k)));
    for (int i = 0; i < 2 && oh + i < ho; ++i) {
      const __m256 y0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(z[i][0], z[i][1]), z[i][2]), b);
      const __m256 y1 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(z[i][1], z[i][2]), z[i][3]), b);
      // Columns 2k, 2k+1 of each tile: interleave, then put the quarters in order.
      const __m256 lo = _mm256_unpacklo_ps(y0, y1), hi = _mm256_unpackhi_ps(y0, y1);
      const __m256 first = _mm256_permute2f128_ps(lo, hi, 0x20);
      const __m256 second = _mm256_permute2f128_ps(lo, hi, 0x31);
      float* row = plane + (oh + i) * wo + ow;
      if (cols == 16) {
        _mm256_storeu_ps(row, first);
        _mm256_storeu_ps(row + 8, second);
      } else {
        // Only the columns that exist: lanes below `cols`.
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i n = _mm256_set1_epi32(static_cast<int32_t>(cols));
        _mm256_maskstore_ps(row, _mm256_cmpgt_epi32(n, lane), first);
        _mm256_maskstore_ps(
            row + 8, _mm256_cmpgt_epi32(n, _mm256_add_epi32(lane, _mm256_set1_epi32(8))), second);
      }
    }
  }
}
#endif

bool has_avx2() {
#if defined(KILN_WINOGRAD_AVX2)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

// V[ξ][c][k] (row length ld) of every input channel c for the chunk's tiles (`runs`);
// `rows` holds (2·th + 2)·row_len floats.
void transform_input_chunk(const Plan& p, const float* in, const RunList& runs, float* v,
                           int64_t ld, float* rows, bool avx2) {
  const Winograd3x3& s = p.s;
  const int64_t in_plane = s.h * s.w;
  (void)avx2;  // unused where there is no AVX2 path
  for (int64_t c = 0; c < s.c_in; ++c) {
    // One sample's runs at a time: their input rows are padded once (each tile row
    // shares two with the next).
    for (size_t first = 0; first < runs.size();) {
      size_t last = first;
      while (last + 1 < runs.size() && runs[last + 1].sample == runs[first].sample) ++last;
      const int64_t n = runs[first].sample, ty_first = runs[first].ty;
      pad_rows(p, in + (n * s.c_in + c) * in_plane, 2 * ty_first,
               2 * (runs[last].ty - ty_first) + 4, rows);
      for (size_t i = first; i <= last; ++i) {
        const TileRun& run = runs[i];
        const float* tile_rows = rows + 2 * (run.ty - ty_first) * p.row_len + 2 * run.tx0;
        float* dst = v + c * ld + run.local;
        const int64_t count = run.tx1 - run.tx0;
#if defined(KILN_WINOGRAD_AVX2)
        if (avx2) {
          transform_input_run_avx2(tile_rows, p.row_len, count, dst, s.c_in * ld);
          continue;
        }
#endif
        transform_input_run_sse(tile_rows, p.row_len, count, dst, s.c_in * ld);
      }
      first = last + 1;
    }
  }
}

// out = bias + the convolution of `in` with the filters transformed into `u`; `avx2`
// picks the transforms' instruction set (both give the same bits).
void run(const Plan& p, const float* in, const float* u, const float* bias, float* out, bool avx2) {
  const Winograd3x3& s = p.s;
  const int64_t out_plane = s.ho * s.wo;
  SerialBlasScope serial;
  pool().parallel_for(0, p.chunks, 1, [&](int64_t first, int64_t last) {
    for (int64_t chunk = first; chunk < last; ++chunk) {
      const int64_t t0 = chunk * p.chunk, t1 = std::min(p.total_tiles, t0 + p.chunk);
      const int64_t nt = t1 - t0;
      // Rows of v and m get 8 floats of slack: the transforms read and write whole
      // groups of tiles past a run's end (into the next run's slots, written or read
      // later in order, or into the slack).
      const int64_t ld = nt + 8;
      const int64_t padded_rows = 2 * p.th + 2;
      float* v = scratch<float>(
          ScratchSlot::Columns,
          static_cast<size_t>(16 * (s.c_in + s.c_out) * ld + padded_rows * p.row_len));
      float* m = v + 16 * s.c_in * ld;
      float* rows = m + 16 * s.c_out * ld;
      const RunList runs = tile_runs(p, t0, t1);
      transform_input_chunk(p, in, runs, v, ld, rows, avx2);
      for (int64_t xi = 0; xi < 16; ++xi) {
        gemm(false, false, s.c_out, nt, s.c_in, 1.0f, u + xi * s.c_out * s.c_in, s.c_in,
             v + xi * s.c_in * ld, ld, 0.0f, m + xi * s.c_out * ld, ld);
      }
      for (int64_t o = 0; o < s.c_out; ++o) {
        const float b = bias ? bias[o] : 0.0f;
        for (const TileRun& run : runs) {
          float* plane = out + (run.sample * s.c_out + o) * out_plane;
          const float* src = m + o * ld + run.local;
#if defined(KILN_WINOGRAD_AVX2)
          if (avx2) {
            transform_output_run_avx2(p, src, s.c_out * ld, b, plane, run.ty, run.tx0, run.tx1);
            continue;
          }
#endif
          transform_output_run_sse(p, src, s.c_out * ld, b, plane, run.ty, run.tx0, run.tx1);
        }
      }
    }
  });
}

// ---- weight gradient ----------------------------------------------------------------
//
// With y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A, the gradient of Σ gy ⊙ y with respect to the
// filter g is Gᵀ [(A gy Aᵀ) ⊙ (Bᵀ d B)] G: per 16 positions ξ, the sum over tiles of
// Q = A gy Aᵀ (of the output channel) times V = Bᵀ d B (of the input channel) is one
// GEMM [c_out x tiles]·[tiles x c_in]; the 4x4 sums become 3x3 filters at the end.

// Q = A gy Aᵀ for a 2x2 tile gy; q[4k + l].
template <class V>
inline void gradient_transform(const V (&gy)[2][2], V (&q)[16]) {
  V a[4][2];  // A gy
  for (int j = 0; j < 2; ++j) {
    a[0][j] = gy[0][j];
    a[1][j] = gy[0][j] + gy[1][j];
    a[2][j] = gy[0][j] - gy[1][j];
    a[3][j] = V{} - gy[1][j];
  }
  for (int k = 0; k < 4; ++k) {
    q[4 * k] = a[k][0];
    q[4 * k + 1] = a[k][0] + a[k][1];
    q[4 * k + 2] = a[k][0] - a[k][1];
    q[4 * k + 3] = V{} - a[k][1];
  }
}

// Q[ξ][o][k] (row length ld) of every gradient channel o for the chunk's tiles.
void transform_gradient_chunk(const Plan& p, const float* grad_y, const RunList& runs, float* q,
                              int64_t ld) {
  const Winograd3x3& s = p.s;
  const int64_t out_plane = s.ho * s.wo, xi_stride = s.c_out * ld;
  for (int64_t o = 0; o < s.c_out; ++o) {
    for (const TileRun& run : runs) {
      const int64_t ty = run.ty, tx0 = run.tx0, tx1 = run.tx1, local = run.local;
      const float* row0 = grad_y + (run.sample * s.c_out + o) * out_plane + 2 * ty * s.wo;
      const bool has_row1 = 2 * ty + 1 < s.ho;
      const int64_t count = tx1 - tx0;
      float* dst = q + o * ld + local;
      // Groups of 4 tiles. A last, partial group is redone as the run's last 4 tiles
      // when it has them and they lie inside the plane (recomputing a tile stores the
      // same values again); otherwise it reads a zero-padded copy, and ld leaves room
      // for its extra lanes past the run.
      for (int64_t k = 0; k < count; k += 4) {
        if (k + 4 > count && count >= 4 && 2 * tx1 <= s.wo && has_row1) k = count - 4;
        const int64_t col = 2 * (tx0 + k);
        const float* r0 = row0 + col;
        const float* r1 = r0 + s.wo;
        float padded[2][8] = {};
        if (!has_row1 || col + 8 > s.wo) {
          const int64_t valid = std::min<int64_t>(8, s.wo - col);
          for (int64_t j = 0; j < valid; ++j) padded[0][j] = r0[j];
          if (has_row1) {
            for (int64_t j = 0; j < valid; ++j) padded[1][j] = r1[j];
          }
          r0 = padded[0];
          r1 = padded[1];
        }
#if defined(__SSE2__)
        Vec gy[2][2], out[16];
        const float* r[2] = {r0, r1};
        for (int i = 0; i < 2; ++i) {
          const __m128 a0 = _mm_loadu_ps(r[i]), a1 = _mm_loadu_ps(r[i] + 4);
          gy[i][0].v = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
          gy[i][1].v = _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
        }
        gradient_transform(gy, out);
        for (int xi = 0; xi < 16; ++xi) _mm_storeu_ps(dst + xi * xi_stride + k, out[xi].v);
#else
        for (int64_t lane = 0; lane < 4; ++lane) {
          const float gy[2][2] = {{r0[2 * lane], r0[2 * lane + 1]},
                                  {r1[2 * lane], r1[2 * lane + 1]}};
          float out[16];
          gradient_transform(gy, out);
          for (int xi = 0; xi < 16; ++xi) dst[xi * xi_stride + k + lane] = out[xi];
        }
#endif
      }
    }
  }
}

// Partial sums of the 16 products, over fixed ranges of chunks: their number
// depends on the shapes only, so results do not change with the thread count.
constexpr int64_t kMaxWeightPartials = 16;
constexpr int64_t kWeightPartialFloats = int64_t{1} << 22;

}  // namespace

void winograd_conv3x3_backward_weight(const Winograd3x3& s, const float* x, const float* grad_y,
                                      float* grad_w) {
  const int64_t filters = s.c_out * s.c_in, sums = 16 * filters;
  // Chunks from the shapes alone (make_plan also rounds to the pool size).
  Plan p = make_plan(s);
  p.chunk = std::max<int64_t>(16, std::min(kTargetTiles, kChunkFloats / (16 * (s.c_in + s.c_out))));
  p.chunks = (p.total_tiles + p.chunk - 1) / p.chunk;
  if (p.total_tiles == 0) {
    std::fill(grad_w, grad_w + 9 * filters, 0.0f);
    return;
  }
  int64_t parts = std::min(p.chunks, kMaxWeightPartials);
  if (parts * sums > kWeightPartialFloats) {
    parts =
        std::max<int64_t>(std::min<int64_t>(p.chunks, pool().size()), kWeightPartialFloats / sums);
    parts = std::max<int64_t>(1, std::min(parts, p.chunks));
  }
  float* partials = scratch<float>(ScratchSlot::Partials, static_cast<size_t>(parts * sums));
  const bool avx2 = has_avx2();
  {
    SerialBlasScope serial;
    pool().parallel_for(0, parts, 1, [&](int64_t first, int64_t last) {
      for (int64_t part = first; part < last; ++part) {
        float* acc = partials + part * sums;  // [16][c_out][c_in]
        const int64_t c0 = part * p.chunks / parts, c1 = (part + 1) * p.chunks / parts;
        for (int64_t chunk = c0; chunk < c1; ++chunk) {
          const int64_t t0 = chunk * p.chunk, t1 = std::min(p.total_tiles, t0 + p.chunk);
          const int64_t nt = t1 - t0, ld = nt + 8;
          float* v = scratch<float>(
              ScratchSlot::Columns,
              static_cast<size_t>(16 * (s.c_in + s.c_out) * ld + (2 * p.th + 2) * p.row_len));
          float* q = v + 16 * s.c_in * ld;
          float* rows = q + 16 * s.c_out * ld;
          const RunList runs = tile_runs(p, t0, t1);
          transform_input_chunk(p, x, runs, v, ld, rows, avx2);
          transform_gradient_chunk(p, grad_y, runs, q, ld);
          for (int64_t xi = 0; xi < 16; ++xi) {
            gemm(false, true, s.c_out, s.c_in, nt, 1.0f, q + xi * s.c_out * ld, ld,
                 v + xi * s.c_in * ld, ld, chunk == c0 ? 0.0f : 1.0f, acc + xi * filters, s.c_in);
          }
        }
      }
    });
  }
  // The partials added in order into the first (contiguous passes that vectorize),
  // then dW = Gᵀ S G per filter in float64, rounded once.
  if (parts > 1) {
    pool().parallel_for(0, sums, kParallelGrain, [&](int64_t begin, int64_t end) {
      float* __restrict acc = partials;
      for (int64_t part = 1; part < parts; ++part) {
        const float* __restrict add = partials + part * sums;
        for (int64_t i = begin; i < end; ++i) acc[i] += add[i];
      }
    });
  }
  pool().parallel_for(0, filters, kParallelGrainFilters, [&](int64_t begin, int64_t end) {
    for (int64_t f = begin; f < end; ++f) {
      double m[16];
      for (int xi = 0; xi < 16; ++xi) m[xi] = partials[xi * filters + f];
      double r[3][4];  // Gᵀ S
      for (int l = 0; l < 4; ++l) {
        r[0][l] = m[l] + 0.5 * m[4 + l] + 0.5 * m[8 + l];
        r[1][l] = 0.5 * m[4 + l] - 0.5 * m[8 + l];
        r[2][l] = 0.5 * m[4 + l] + 0.5 * m[8 + l] + m[12 + l];
      }
      float* out = grad_w + f * 9;
      for (int i = 0; i < 3; ++i) {
        out[3 * i] = static_cast<float>(r[i][0] + 0.5 * r[i][1] + 0.5 * r[i][2]);
        out[3 * i + 1] = static_cast<float>(0.5 * r[i][1] - 0.5 * r[i][2]);
        out[3 * i + 2] = static_cast<float>(0.5 * r[i][1] + 0.5 * r[i][2] + r[i][3]);
      }
    }
  });
}

bool winograd_applies(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                      int64_t stride_h, int64_t stride_w, int64_t dil_h, int64_t dil_w,
                      int64_t groups, int64_t pad_h, int64_t pad_w) {
  return kh == 3 && kw == 3 && stride_h == 1 && stride_w == 1 && dil_h == 1 && dil_w == 1 &&
         groups == 1 && pad_h >= 0 && pad_h <= 2 && pad_w >= 0 && pad_w <= 2 &&
         in_channels >= kMinChannels && out_channels >= kMinChannels;
}

void winograd_conv3x3(const Winograd3x3& s, const float* x, const float* w, const float* bias,
                      float* y) {
  const Plan p = make_plan(s);
  if (p.total_tiles == 0) return;
  float* u = scratch<float>(ScratchSlot::Partials, static_cast<size_t>(16 * s.c_out * s.c_in));
  transform_filters(
      s.c_out, s.c_in,
      [&](int64_t o, int64_t c, int i, int j) {
        return static_cast<double>(w[((o * s.c_in + c) * 3 + i) * 3 + j]);
      },
      u);
  run(p, x, u, bias, y, has_avx2());
}

void winograd_conv3x3_backward_input(const Winograd3x3& s, const float* grad_y, const float* w,
                                     float* grad_x) {
  // grad_x = grad_y ⋆ w rotated by 180 degrees, channels swapped, padding 2 - p.
  const Winograd3x3 t{s.n, s.c_out, s.c_in, s.ho, s.wo, s.h, s.w, 2 - s.pad_h, 2 - s.pad_w};
  const Plan p = make_plan(t);
  if (p.total_tiles == 0) return;
  float* u = scratch<float>(ScratchSlot::Partials, static_cast<size_t>(16 * t.c_out * t.c_in));
  transform_filters(
      t.c_out, t.c_in,
      [&](int64_t c, int64_t o, int i, int j) {
        return static_cast<double>(w[((o * s.c_in + c) * 3 + (2 - i)) * 3 + (2 - j)]);
      },
      u);
  run(p, grad_y, u, nullptr, grad_x, has_avx2());
}

}  // namespace kiln::cpu
