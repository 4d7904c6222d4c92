// File: build_info.h
//
// The build's release and source revision (git describe, taken when CMake
// configures), and the --help and --version behaviour the two programs share.
#ifndef SLACKSWAP_BASE_BUILD_INFO_H_
#define SLACKSWAP_BASE_BUILD_INFO_H_

#include <string>
#include <vector>

namespace slackswap {

// "0.1.0"; "dev" when not built by CMake.
const char* BuildVersion();
// "89d1b75a7baa", "89d1b75a7baa-dirty"; "unknown" outside a git checkout.
const char* BuildRevision();

// Sets Abseil's flag usage before ParseCommandLine: --version prints
// "PROGRAM VERSION (revision REVISION)"; --help lists the flags defined in
// files under `folder` (e.g. "server/"), named from that folder on rather
// than by the build machine's path.
void ConfigureFlagsUsage(const std::string& program, const std::string& folder);

// absl::ParseCommandLine, except that a usage flag (--help, --helpfull,
// --version, ...) prints its text on standard output and exits 0, as a
// request that succeeded (Abseil's exits 1 for the help flags).
std::vector<char*> ParseFlags(int argc, char** argv);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_BUILD_INFO_H_
