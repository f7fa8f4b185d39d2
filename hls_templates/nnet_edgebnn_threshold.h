// edgebnn multi-threshold requantization (io_parallel arrays and io_stream packets).
//
// Per channel c = i % n_chan:   n = #{ k : thresholds[c][k] <= x }   and   y = levels[c][n].
//
// n is counted by n_thresholds comparators (search_steps = 0), or found by a binary search over
// the ascending thresholds in search_steps = bit_length(n_thresholds) compares (each against the
// threshold the bits found so far select), so a k-bit output costs k compares instead of
// 2**k - 1. Both give the same n: "thresholds[c][k] <= x" is true for k < n and false after.
//
// thresholds are held in the compare type threshold_t: the input's own type, or that type
// without the s low bits every reachable input of a channel shares with its thresholds (both
// lie on one lattice base + k * step, 2**s dividing the step); the input is converted to it by
// truncation (floor), which keeps every comparison's result. levels are held in the output
// type, so the result is a plain copy. Nothing else rounds or overflows: the output is
// bit-exact with edgebnn.emulate by construction.

#ifndef NNET_EDGEBNN_THRESHOLD_H_
#define NNET_EDGEBNN_THRESHOLD_H_

#include "hls_stream.h"
#include "nnet_common.h"

namespace nnet {

struct edgebnn_threshold_config {
    static const unsigned n_in = 10;         // elements per sample
    static const unsigned n_chan = 10;       // channels (the last axis); n_in % n_chan == 0
    static const unsigned n_thresholds = 1;  // thresholds per channel (>= 1)
    static const unsigned search_steps = 0;  // 0: count every comparator; else the binary search's steps
    static const unsigned io_type = io_parallel;
    static const unsigned reuse_factor = 1;
    typedef ap_fixed<16, 6> threshold_t;  // the compare type: the input's, maybe without low bits
    typedef ap_fixed<2, 2> level_t;       // the output's type
};

// the number of thresholds of channel c at or below x
template <typename CONFIG_T>
unsigned edgebnn_threshold_count(const typename CONFIG_T::threshold_t x,
                                 typename CONFIG_T::threshold_t thresholds[CONFIG_T::n_chan * CONFIG_T::n_thresholds],
                                 const unsigned c) {
    #pragma HLS INLINE
    unsigned n = 0;
    if (CONFIG_T::search_steps == 0) {
    Compare:
        for (unsigned k = 0; k < CONFIG_T::n_thresholds; k++) {
            #pragma HLS UNROLL
            // thresholds ascend, so the count of passed thresholds indexes the level table
            n += (x >= thresholds[c * CONFIG_T::n_thresholds + k]) ? 1 : 0;
        }
    } else {
    Search:
        for (unsigned s = 0; s < CONFIG_T::search_steps; s++) {
            #pragma HLS UNROLL
            const unsigned b = 1u << (CONFIG_T::search_steps - 1 - s);
            if (n + b <= CONFIG_T::n_thresholds && x >= thresholds[c * CONFIG_T::n_thresholds + n + b - 1]) {
                n += b;
            }
        }
    }
    return n;
}

template <class data_T, class res_T, typename CONFIG_T>
void edgebnn_threshold(data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in],
                       typename CONFIG_T::threshold_t thresholds[CONFIG_T::n_chan * CONFIG_T::n_thresholds],
                       typename CONFIG_T::level_t levels[CONFIG_T::n_chan * (CONFIG_T::n_thresholds + 1)]) {
    // constant tables: let HLS fold the comparisons per call site, as nnet::dense does
    #pragma HLS function_instantiate variable=thresholds,levels
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable=thresholds complete
    #pragma HLS ARRAY_PARTITION variable=levels complete

Element:
    for (unsigned i = 0; i < CONFIG_T::n_in; i++) {
        #pragma HLS UNROLL
        const unsigned c = i % CONFIG_T::n_chan;
        const typename CONFIG_T::threshold_t x = data[i];
        const unsigned n = edgebnn_threshold_count<CONFIG_T>(x, thresholds, c);
        res[i] = (res_T)levels[c * (CONFIG_T::n_thresholds + 1) + n];
    }
}

// io_stream: n_in / data_T::size packets (a pixel's channels, or a flat vector); element j of
// packet i is element i * size + j of the flat tensor, so its channel is that index % n_chan
// (n_chan = n_in when the thresholds are per flat feature: edgebnn runs a threshold that follows
// a flatten on the pixels before it, since a packet after hls4ml's stream flatten is still a
// pixel). One packet out per packet in, so both must have the same size.
template <class data_T, class res_T, typename CONFIG_T>
void edgebnn_threshold(hls::stream<data_T> &data, hls::stream<res_T> &res,
                       typename CONFIG_T::threshold_t thresholds[CONFIG_T::n_chan * CONFIG_T::n_thresholds],
                       typename CONFIG_T::level_t levels[CONFIG_T::n_chan * (CONFIG_T::n_thresholds + 1)]) {
    static_assert(data_T::size == res_T::size, "edgebnn_threshold: input and output packets differ in size");
    static_assert(CONFIG_T::n_in % data_T::size == 0, "edgebnn_threshold: n_in is not a whole number of packets");
    #pragma HLS function_instantiate variable=thresholds,levels
    #pragma HLS ARRAY_PARTITION variable=thresholds complete
    #pragma HLS ARRAY_PARTITION variable=levels complete

Packet:
    for (unsigned i = 0; i < CONFIG_T::n_in / data_T::size; i++) {
        #pragma HLS PIPELINE
        const data_T in = data.read();
        res_T out;
        PRAGMA_DATA_PACK(out)
    Element:
        for (unsigned j = 0; j < data_T::size; j++) {
            #pragma HLS UNROLL
            const unsigned c = (i * data_T::size + j) % CONFIG_T::n_chan;
            const typename CONFIG_T::threshold_t x = in[j];
            const unsigned n = edgebnn_threshold_count<CONFIG_T>(x, thresholds, c);
            out[j] = (typename res_T::value_type)levels[c * (CONFIG_T::n_thresholds + 1) + n];
        }
        res.write(out);
    }
}

} // namespace nnet

#endif
