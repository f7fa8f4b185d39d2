// edgebnn 2-D pooling of any window and strides (overlapping or gapped windows too) on a
// channels-last (H, W, C) tensor, valid padding. hls4ml's own io_stream pooling2d_cl asserts
// strides equal to the pool size, although its line-buffer window (compute_pool_buffer_2d, the
// same counters as its strided convolutions) handles any strides; this layer reads the stream
// through that window. The io_parallel version is hls4ml's pooling2d_cl itself. The config is
// hls4ml's pooling2d_config, so reduce_pool (Max, Average) computes exactly as hls4ml's layer.

#ifndef NNET_EDGEBNN_POOL_H_
#define NNET_EDGEBNN_POOL_H_

#include "hls_stream.h"
#include "nnet_common.h"
#include "nnet_pooling.h"
#include "nnet_pooling_stream.h"

namespace nnet {

template <class data_T, class res_T, typename CONFIG_T>
void edgebnn_pool2d(data_T data[CONFIG_T::in_height * CONFIG_T::in_width * CONFIG_T::n_filt],
                    res_T res[CONFIG_T::out_height * CONFIG_T::out_width * CONFIG_T::n_filt]) {
    #pragma HLS INLINE
    pooling2d_cl<data_T, res_T, CONFIG_T>(data, res);
}

// io_stream: one packet (a pixel's n_filt channels) in per input pixel, one out per window.
template <class data_T, class res_T, typename CONFIG_T>
void edgebnn_pool2d(hls::stream<data_T> &data, hls::stream<res_T> &res) {
    assert(CONFIG_T::pad_top == 0 && CONFIG_T::pad_bottom == 0 && CONFIG_T::pad_left == 0 && CONFIG_T::pad_right == 0);

    static ap_shift_reg<typename data_T::value_type, CONFIG_T::in_width> line_buffer[MAX(CONFIG_T::pool_height - 1, 1)]
                                                                                    [CONFIG_T::n_filt];
    #pragma HLS ARRAY_PARTITION variable = line_buffer complete dim = 2

ReadInputHeight:
    for (unsigned i_ih = 0; i_ih < CONFIG_T::in_height; i_ih++) {
    ReadInputWidth:
        for (unsigned i_iw = 0; i_iw < CONFIG_T::in_width; i_iw++) {
            #pragma HLS LOOP_FLATTEN
            #pragma HLS PIPELINE
            compute_pool_buffer_2d<data_T, res_T, CONFIG_T>(data.read(), line_buffer, res);
        }
    }
}

} // namespace nnet

#endif
