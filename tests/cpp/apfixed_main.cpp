// Driver of the ap_fixed harness: apfixed_main IN OUT. IN holds jobs, each an int64 case id,
// an int64 count n and 2n input words; OUT receives 3n output words per job, in order (see
// apfixed_harness.h). edgebnn_case() comes from the generated dispatch unit.
#include <cstdio>
#include <vector>

#include "apfixed_harness.h"

edgebnn_case_fn edgebnn_case(long id);

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
    return 2;
  }
  std::FILE* fi = std::fopen(argv[1], "rb");
  std::FILE* fo = std::fopen(argv[2], "wb");
  if (!fi || !fo) {
    std::perror("apfixed_main");
    return 2;
  }
  int64_t head[2];
  std::vector<uint64_t> in, out;
  while (std::fread(head, sizeof(int64_t), 2, fi) == 2) {
    edgebnn_case_fn fn = edgebnn_case(head[0]);
    if (!fn || head[1] < 0) {
      std::fprintf(stderr, "bad job: case %lld, %lld values\n", (long long)head[0], (long long)head[1]);
      return 3;
    }
    in.resize(2 * head[1]);
    out.resize(3 * head[1]);
    if (std::fread(in.data(), sizeof(uint64_t), in.size(), fi) != in.size()) {
      std::fprintf(stderr, "truncated input\n");
      return 3;
    }
    fn(in.data(), out.data(), (long)head[1]);
    std::fwrite(out.data(), sizeof(uint64_t), out.size(), fo);
  }
  return std::fclose(fo) == 0 ? 0 : 4;
}
