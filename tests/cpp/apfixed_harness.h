// Conversions through the real ap_fixed headers (hls4ml's templates/vivado/ap_types), for
// tests/test_fixed_apfixed.py. The test generates one table of instantiations per translation
// unit (cases_*.cpp) and a dispatch unit; this header holds the two conversion kernels.
//
// Every value travels as 64-bit words. Input, 2 words per value: the double's bits (from a
// double) or the source's raw bits, low word then high word (from a fixed-point source).
// Output, 3 words per value: the result's raw bits, low word then high word (the reader keeps
// the low `width` bits), then the bits of its to_double().
#ifndef EDGEBNN_APFIXED_HARNESS_H
#define EDGEBNN_APFIXED_HARNESS_H

#include <ap_fixed.h>

#include <cstdint>
#include <cstring>

typedef void (*edgebnn_case_fn)(const uint64_t* in, uint64_t* out, long n);

// Reads the result through the mode-free ap_fixed_base<W, I, S> holding the same bits, so the
// readers are instantiated once per shape, not once per rounding and overflow mode.
template <int W, int I, bool S>
void edgebnn_put(const ap_private<W, S>& bits, uint64_t* out) {
  ap_fixed_base<W, I, S> t;
  t.V = bits;
  if constexpr (W <= 64) {
    out[0] = t.V.to_uint64();  // sign-extended beyond the width; the reader masks
    out[1] = 0;
  } else {
    out[0] = t.range(63, 0).to_uint64();
    out[1] = t.range(W - 1, 64).to_uint64();
  }
  double d = t.to_double();
  std::memcpy(out + 2, &d, sizeof d);
}

// D t(double): the constructor every hls4ml input and weight goes through (D has shape W, I, S).
template <class D, int W, int I, bool S>
void edgebnn_from_double(const uint64_t* in, uint64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    double d;
    std::memcpy(&d, in + 2 * i, sizeof d);
    D t(d);
    edgebnn_put<W, I, S>(t.V, out + 3 * i);
  }
}

// D t = s: the cast between layer types in hls4ml's C-simulation.
template <class Src, class D, int W, int I, bool S>
void edgebnn_from_fixed(const uint64_t* in, uint64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    Src s;
    if constexpr (Src::width <= 64) {
      s.setBits(in[2 * i]);
    } else {
      s.range(63, 0) = ap_uint<64>(in[2 * i]);
      s.range(Src::width - 1, 64) = ap_uint<Src::width - 64>(in[2 * i + 1]);
    }
    D t = s;
    edgebnn_put<W, I, S>(t.V, out + 3 * i);
  }
}

#endif
