// The lexicographic order of many check ids, fast.
//
// Reports, the diff and canonical baselines list checks in id order, and a run may
// hold a million of them. Ids share long prefixes ("resnet18/img_0042/cpu_fp32~cpu_bf16/out"),
// so a comparison sort on the strings spends its time in memcmp over those prefixes.
// id_order sorts (8-byte big-endian digit, index) pairs instead, most significant digit
// first: the common prefix of all ids is skipped, ids that tie on a digit are ordered
// by the next one, and an id that ends inside a digit sorts before the longer ids it
// prefixes. The result is exactly the order of std::string's operator< (bytes compared
// as unsigned char).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace driftgate {

// The permutation that sorts `ids`: ids[order[0]] <= ids[order[1]] <= ...
// Equal ids (none in a run file) keep no particular order among themselves.
std::vector<size_t> id_order(const std::vector<std::string_view>& ids);

}  // namespace driftgate
