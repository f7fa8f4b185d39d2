// edgebnn constant padding of a channels-last (H, W, C) tensor (io_parallel arrays and io_stream
// packets of one pixel's channels): pad_top / pad_bottom rows and pad_left / pad_right columns of
// pad_value, the rest copied. pad_value is a value of the output type (the input's), so the
// result is bit-exact with edgebnn.emulate by construction.

#ifndef NNET_EDGEBNN_PAD_H_
#define NNET_EDGEBNN_PAD_H_

#include "hls_stream.h"
#include "nnet_common.h"

namespace nnet {

struct edgebnn_pad2d_config {
    static const unsigned n_chan = 1;
    static const unsigned in_height = 1;
    static const unsigned in_width = 1;
    static const unsigned out_height = 1;
    static const unsigned out_width = 1;
    static const unsigned pad_top = 0;
    static const unsigned pad_left = 0;
    static constexpr double pad_value = 0;  // on the output type's grid: converts exactly
};

template <class data_T, class res_T, typename CONFIG_T>
void edgebnn_pad2d(data_T data[CONFIG_T::in_height * CONFIG_T::in_width * CONFIG_T::n_chan],
                   res_T res[CONFIG_T::out_height * CONFIG_T::out_width * CONFIG_T::n_chan]) {
    #pragma HLS PIPELINE
    const res_T pad = CONFIG_T::pad_value;
Row:
    for (unsigned i = 0; i < CONFIG_T::out_height; i++) {
    Column:
        for (unsigned j = 0; j < CONFIG_T::out_width; j++) {
            const bool inside = i >= CONFIG_T::pad_top && i < CONFIG_T::pad_top + CONFIG_T::in_height &&
                                j >= CONFIG_T::pad_left && j < CONFIG_T::pad_left + CONFIG_T::in_width;
        Channel:
            for (unsigned c = 0; c < CONFIG_T::n_chan; c++) {
                const unsigned o = (i * CONFIG_T::out_width + j) * CONFIG_T::n_chan + c;
                if (inside) {
                    const unsigned k = ((i - CONFIG_T::pad_top) * CONFIG_T::in_width + (j - CONFIG_T::pad_left)) * CONFIG_T::n_chan + c;
                    res[o] = (res_T)data[k];
                } else {
                    res[o] = pad;
                }
            }
        }
    }
}

// io_stream: one packet (a pixel's n_chan channels) out per output pixel, read from the input
// stream in order for the pixels inside.
template <class data_T, class res_T, typename CONFIG_T>
void edgebnn_pad2d(hls::stream<data_T> &data, hls::stream<res_T> &res) {
    const typename res_T::value_type pad = CONFIG_T::pad_value;
Row:
    for (unsigned i = 0; i < CONFIG_T::out_height; i++) {
    Column:
        for (unsigned j = 0; j < CONFIG_T::out_width; j++) {
            #pragma HLS PIPELINE
            const bool inside = i >= CONFIG_T::pad_top && i < CONFIG_T::pad_top + CONFIG_T::in_height &&
                                j >= CONFIG_T::pad_left && j < CONFIG_T::pad_left + CONFIG_T::in_width;
            res_T out;
            PRAGMA_DATA_PACK(out)
            if (inside) {
                data_T in = data.read();
            CopyChannel:
                for (unsigned c = 0; c < CONFIG_T::n_chan; c++) {
                    #pragma HLS UNROLL
                    out[c] = in[c];
                }
            } else {
            PadChannel:
                for (unsigned c = 0; c < CONFIG_T::n_chan; c++) {
                    #pragma HLS UNROLL
                    out[c] = pad;
                }
            }
            res.write(out);
        }
    }
}

} // namespace nnet

#endif
