// Escaping for text that comes from records, commits or users and lands in HTML, SVG
// or markdown: a commit subject "<script>" or a check id with '&' must show as text.
#pragma once

#include <string>

namespace driftgate {

// &, <, >, " and ' as character references: safe in element text and quoted attributes.
std::string html_escape(const std::string& text);

// html_escape plus '|' (a table cell separator), backticks and newlines (as spaces):
// safe inside a GitHub-flavoured markdown table cell.
std::string markdown_cell_escape(const std::string& text);

}  // namespace driftgate
