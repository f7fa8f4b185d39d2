// The batch driver of an edgebnn RTL design under Verilator, loaded from Python with ctypes.
// design.h (written per design) names the top class and says how each stream packs its codes.
#include <cstdint>
#include <cstring>
#include <unistd.h>
#include <climits>
#include "verilated.h"

struct Stream {
  int lanes;      // codes per beat
  int width;      // bits per code
  int is_signed;  // two's complement codes
  int64_t beats;  // beats per sample
};

// a code's bits into (or out of) a Verilator port of 8, 16, 32 or 64 bits; a wider port is a VlWide of 32-bit words
template <typename T>
static inline void put_bits(T& sig, int pos, int width, uint64_t v) {
  uint64_t mask = width >= 64 ? ~0ULL : ((1ULL << width) - 1);
  sig = (T)((((uint64_t)sig) & ~(mask << pos)) | ((v & mask) << pos));
}
template <typename T>
static inline uint64_t get_bits(const T& sig, int pos, int width) {
  uint64_t mask = width >= 64 ? ~0ULL : ((1ULL << width) - 1);
  return (((uint64_t)sig) >> pos) & mask;
}
template <typename T>
static inline void put_beat(T& sig, const int64_t* codes, const Stream& s) {
  for (int l = 0; l < s.lanes; l++) put_bits(sig, l * s.width, s.width, (uint64_t)codes[l]);
}
// a wide beat is assembled 32 bits at a time (a lane's bits never cross more than three words)
template <std::size_t N>
static inline void put_beat(VlWide<N>& sig, const int64_t* codes, const Stream& s) {
  const uint64_t mask = s.width >= 64 ? ~0ULL : ((1ULL << s.width) - 1);
  unsigned __int128 acc = 0;
  int bits = 0, word = 0;
  for (int l = 0; l < s.lanes; l++) {
    acc |= (unsigned __int128)((uint64_t)codes[l] & mask) << bits;
    bits += s.width;
    while (bits >= 32) {
      sig[word++] = (uint32_t)acc;
      acc >>= 32;
      bits -= 32;
    }
  }
  if (bits > 0) sig[word++] = (uint32_t)acc;
  for (; word < (int)N; word++) sig[word] = 0;
}
template <typename T>
static inline void get_beat(const T& sig, int64_t* codes, const Stream& s) {
  for (int l = 0; l < s.lanes; l++) {
    uint64_t v = get_bits(sig, l * s.width, s.width);
    if (s.is_signed && s.width < 64 && ((v >> (s.width - 1)) & 1)) v |= ~0ULL << s.width;
    codes[l] = (int64_t)v;
  }
}
template <std::size_t N>
static inline void get_beat(const VlWide<N>& sig, int64_t* codes, const Stream& s) {
  const uint64_t mask = s.width >= 64 ? ~0ULL : ((1ULL << s.width) - 1);
  unsigned __int128 acc = 0;
  int bits = 0, word = 0;
  for (int l = 0; l < s.lanes; l++) {
    while (bits < s.width) {
      acc |= (unsigned __int128)sig[word++] << bits;
      bits += 32;
    }
    uint64_t v = (uint64_t)acc & mask;
    acc >>= s.width;
    bits -= s.width;
    if (s.is_signed && s.width < 64 && ((v >> (s.width - 1)) & 1)) v |= ~0ULL << s.width;
    codes[l] = (int64_t)v;
  }
}

#include "design.h"

static inline void tick(Top* t) {
  t->clk = 0;
  t->eval();
  t->clk = 1;
  t->eval();
}

extern "C" int edgebnn_taps() { return N_TAPS; }

// Runs n samples through the design. in: n x IN.beats x IN.lanes codes; out: n x OUT.beats x
// OUT.lanes; taps (may be null): per tap i, n x TAPS[i].beats x TAPS[i].lanes codes, one block
// after the other; done[k]: the cycle at which sample k's last output beat left; first_in: the
// cycle at which the first input beat entered; tap_beats (may be null): the beats each tap saw. stall_seed != 0 withholds input beats and output
// readiness pseudo-randomly (a test of the handshakes). Returns the cycles run, or -1 when
// max_cycles pass first (a deadlock), -2 when a tap saw another number of beats, -3 when memdir
// cannot be entered.
extern "C" int64_t edgebnn_run(const char* memdir, int64_t n, const int64_t* in, int64_t* out, int64_t* taps,
                               int64_t* done, int64_t* first_in, uint32_t stall_seed, int64_t max_cycles,
                               int64_t* tap_beats) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return -3;
  if (chdir(memdir) != 0) return -3;
  // $readmemh reads the ROM files relative to the working folder, at the first evaluation
  VerilatedContext* ctx = new VerilatedContext;
  Top* t = new Top(ctx, "top");
  t->rst = 1;
  t->s_axis_tvalid = 0;
  t->m_axis_tready = 0;
  for (int i = 0; i < 3; i++) tick(t);
  int back = chdir(cwd);
  (void)back;
  t->rst = 0;
  const int64_t in_beats = n * IN.beats, out_beats = n * OUT.beats;
  int64_t sent = 0, got = 0, cycle = 0;
  int64_t tap_count[N_TAPS > 0 ? N_TAPS : 1] = {0};
  int64_t tap_offset[N_TAPS > 0 ? N_TAPS : 1] = {0};
  for (int i = 1; i < N_TAPS; i++) tap_offset[i] = tap_offset[i - 1] + n * TAPS[i - 1].beats * TAPS[i - 1].lanes;
  uint32_t rng = stall_seed;
  *first_in = -1;
  int64_t result = 0;
  // with taps, run on until every unit has sent its beats: a pool or a strided window may leave
  // before the last positions of its input, which then arrive after the design's last output
  int64_t taps_short = 0;
  if (taps)
    for (int i = 0; i < N_TAPS; i++) taps_short += n * TAPS[i].beats > 0;
  while (got < out_beats || taps_short > 0) {
    if (cycle >= max_cycles) {
      result = -1;
      break;
    }
    bool give = sent < in_beats, take = true;
    if (stall_seed) {
      rng = rng * 1664525u + 1013904223u;
      give = give && ((rng >> 24) & 3) != 0;
      take = ((rng >> 16) & 3) != 0;
    }
    t->s_axis_tvalid = give;
    if (give) put_beat(t->s_axis_tdata, in + sent * IN.lanes, IN);
    t->m_axis_tready = take;
    t->clk = 0;
    t->eval();
    if (t->s_axis_tvalid && t->s_axis_tready) {
      if (sent == 0) *first_in = cycle;
      sent++;
    }
    if (t->m_axis_tvalid && t->m_axis_tready && got < out_beats) {
      get_beat(t->m_axis_tdata, out + got * OUT.lanes, OUT);
      got++;
      if (got % OUT.beats == 0) done[got / OUT.beats - 1] = cycle;
    }
    if (taps) {
      for (int i = 0; i < N_TAPS; i++) {
        if (tap_fire(t, i)) {
          if (tap_count[i] < n * TAPS[i].beats) tap_read(t, i, taps + tap_offset[i] + tap_count[i] * TAPS[i].lanes);
          tap_count[i]++;
          if (tap_count[i] == n * TAPS[i].beats) taps_short--;
        }
      }
    }
    t->clk = 1;
    t->eval();
    cycle++;
  }
  if (result == 0) {
    result = cycle;
    if (taps)
      for (int i = 0; i < N_TAPS; i++)
        if (tap_count[i] != n * TAPS[i].beats) result = -2;
  }
  if (taps && tap_beats)
    for (int i = 0; i < N_TAPS; i++) tap_beats[i] = tap_count[i];
  t->final();
  delete t;
  delete ctx;
  return result;
}
