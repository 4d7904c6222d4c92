#include "base/build_info.h"

#include <cstdlib>
#include <iostream>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#ifndef SLACKSWAP_VERSION
#define SLACKSWAP_VERSION "dev"
#endif
#ifndef SLACKSWAP_GIT_REVISION
#define SLACKSWAP_GIT_REVISION "unknown"
#endif

namespace slackswap {

const char* BuildVersion() { return SLACKSWAP_VERSION; }
const char* BuildRevision() { return SLACKSWAP_GIT_REVISION; }

void ConfigureFlagsUsage(const std::string& program,
                         const std::string& folder) {
  absl::FlagsUsageConfig usage;
  usage.normalize_filename = [folder](absl::string_view file) {
    const size_t at = file.rfind(folder);
    return std::string(at == absl::string_view::npos ? file : file.substr(at));
  };
  usage.contains_help_flags = [folder](absl::string_view file) {
    return absl::StrContains(file, folder);
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  usage.version_string = [program] {
    return absl::StrCat(program, " ", BuildVersion(), " (revision ",
                        BuildRevision(), ")\n");
  };
  absl::SetFlagsUsageConfig(usage);
}

std::vector<char*> ParseFlags(int argc, char** argv) {
  std::vector<char*> positional = absl::flags_internal::ParseCommandLineImpl(
      argc, argv, absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
      absl::flags_internal::UsageFlagsAction::kIgnoreUsage,
      absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  if (absl::flags_internal::HandleUsageFlags(
          std::cout, absl::ProgramUsageMessage()) >= 0) {
    std::cout.flush();
    std::exit(0);
  }
  return positional;
}

}  // namespace slackswap
