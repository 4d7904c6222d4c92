// File: text_format.h
//
// Sizes, times and table rows as every command prints them: the CLI's
// metrics and tables and the report's Markdown (report.cc) share these, so a
// number reads the same wherever it appears.
#ifndef SLACKSWAP_CLIENT_TEXT_FORMAT_H_
#define SLACKSWAP_CLIENT_TEXT_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace slackswap {

// "12.34 GB" ("unlimited" for kUnlimitedBytes); below 0.01 GB "1.23 MB",
// and below 10 KB "123 B", so that a small budget never reads 0.00 GB;
// "1.23 ms".
std::string Gigabytes(int64_t bytes);
std::string Millis(int64_t ns);

// Table cells under a header that names the unit: "12.3" (GB), "1.2" (ms).
std::string GigabytesCell(int64_t bytes);
std::string MillisCell(int64_t ns);

// "| a | b | c |\n"
std::string MarkdownRow(const std::vector<std::string>& cells);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_TEXT_FORMAT_H_
