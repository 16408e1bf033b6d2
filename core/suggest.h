// "Did you mean" suggestions for misspelled keys and names (ninja's spellcheck).
#pragma once

#include <string>
#include <vector>

namespace driftgate {

// Levenshtein distance between two strings.
int edit_distance(const std::string& a, const std::string& b);

// The closest candidate within a distance that scales with the word's length
// (at most a third of it, at least 1), or "" when none is close enough.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// "; did you mean 'cuda'?" or "" when there is no close candidate.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace driftgate
