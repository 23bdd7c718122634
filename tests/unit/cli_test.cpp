// The shared command-line parser: spellings, errors and the generated help.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/cli/arguments.h"
#include "compiler/cli/shell_word.h"

namespace accel::cli {
namespace {

// A small command: a switch, a value option with a short name, an option that rejects empty
// values, an exiting --help, and positionals collected in order.
struct Command {
  bool verbose = false;
  bool help = false;
  std::vector<std::string> names;  // every --name, in order
  std::string output;
  std::vector<std::string> positionals;
  std::vector<std::string> flags_used;  // the spelling each --name arrived under

  std::vector<Option> Table() {
    return {
        Option{.names = {"-v", "--verbose"},
               .help = "say more",
               .apply =
                   [this](std::string_view, std::string_view) {
                     verbose = true;
                     return std::string();
                   }},
        Option{.names = {"-n", "--name"},
               .value_name = "<name>",
               .help = "a name (repeatable);\nlater ones add to earlier ones",
               .apply = [this](std::string_view flag, std::string_view value) -> std::string {
                 if (value == "bad") return "`bad` is not a name";
                 names.emplace_back(value);
                 flags_used.emplace_back(flag);
                 return "";
               }},
        Option{.names = {"--output"},
               .value_name = "<dir>",
               .apply =
                   [this](std::string_view, std::string_view value) {
                     output = value;
                     return std::string();
                   },
               .needs = "a directory",
               .allow_empty = false},
        Option{.names = {"-h", "--help"},
               .help = "print this help",
               .apply =
                   [this](std::string_view, std::string_view) {
                     help = true;
                     return std::string();
                   },
               .exits = true},
    };
  }

  std::string Parse(const std::vector<std::string>& args) {
    return cli::Parse(args, Table(), [this](const std::string& arg) {
      if (arg == "stop") return std::string("unexpected argument `stop`");
      positionals.push_back(arg);
      return std::string();
    });
  }
};

TEST(CliParse, AcceptsLongValuesWithEqualsOrAsTheNextArgument) {
  Command command;
  EXPECT_EQ(command.Parse({"--name=a", "--name", "b", "--name="}), "");
  EXPECT_EQ(command.names, (std::vector<std::string>{"a", "b", ""}));
  EXPECT_EQ(command.flags_used, (std::vector<std::string>{"--name", "--name", "--name"}));
}

TEST(CliParse, AcceptsShortValuesSeparateAttachedOrWithEquals) {
  Command command;
  EXPECT_EQ(command.Parse({"-n", "a", "-nb", "-n=c"}), "");
  EXPECT_EQ(command.names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(command.flags_used[0], "-n");
}

TEST(CliParse, RepeatedOptionsApplyEachTimeInOrder) {
  Command command;
  EXPECT_EQ(command.Parse({"--name", "a", "-v", "--verbose", "--name", "a"}), "");
  EXPECT_EQ(command.names, (std::vector<std::string>{"a", "a"}));
  EXPECT_TRUE(command.verbose);
}

TEST(CliParse, AValueIsTheNextArgumentEvenWhenItLooksLikeAnOption) {
  Command command;
  EXPECT_EQ(command.Parse({"--name", "--verbose"}), "");
  EXPECT_EQ(command.names, (std::vector<std::string>{"--verbose"}));
  EXPECT_FALSE(command.verbose);
}

TEST(CliParse, PositionalsKeepTheirOrderAndALoneDashIsOne) {
  Command command;
  EXPECT_EQ(command.Parse({"x", "-v", "-", "y"}), "");
  EXPECT_EQ(command.positionals, (std::vector<std::string>{"x", "-", "y"}));
}

TEST(CliParse, RejectsUnknownOptionsByTheirName) {
  EXPECT_EQ(Command().Parse({"--frobnicate"}), "unknown option `--frobnicate`");
  EXPECT_EQ(Command().Parse({"--frobnicate=3"}), "unknown option `--frobnicate`");
  EXPECT_EQ(Command().Parse({"-x"}), "unknown option `-x`");
  EXPECT_EQ(Command().Parse({"-vx"}), "unknown option `-vx`");
  EXPECT_EQ(Command().Parse({"--"}), "unknown option `--`");
}

TEST(CliParse, RejectsAMissingValue) {
  EXPECT_EQ(Command().Parse({"--name"}), "`--name` needs a value");
  EXPECT_EQ(Command().Parse({"-n"}), "`-n` needs a value");
  EXPECT_EQ(Command().Parse({"--output"}), "`--output` needs a directory");
}

TEST(CliParse, RejectsAnEmptyValueWhereOneIsRequired) {
  EXPECT_EQ(Command().Parse({"--output", ""}), "`--output` needs a directory");
  EXPECT_EQ(Command().Parse({"--output="}), "`--output` needs a directory");
}

TEST(CliParse, RejectsAValueForASwitch) {
  EXPECT_EQ(Command().Parse({"--verbose=yes"}), "`--verbose` takes no value");
}

TEST(CliParse, StopsAtTheFirstErrorFromAnOptionOrAPositional) {
  Command command;
  EXPECT_EQ(command.Parse({"--name", "bad", "--frobnicate"}), "`bad` is not a name");
  EXPECT_EQ(command.Parse({"a", "stop", "b"}), "unexpected argument `stop`");
  EXPECT_EQ(command.positionals, (std::vector<std::string>{"a"}));
}

TEST(CliParse, HelpAnywhereWinsOverMistakes) {
  Command command;
  EXPECT_EQ(command.Parse({"--frobnicate", "--name", "a", "--help"}), "");
  EXPECT_TRUE(command.help);
  EXPECT_TRUE(command.names.empty());
}

TEST(CliHelp, ListsVisibleOptionsWithNamesValuesAndHelpLines) {
  Command command;
  EXPECT_EQ(FormatOptions(command.Table(), 20),
            "  -v, --verbose     say more\n"
            "  -n, --name <name> a name (repeatable);\n"
            "                    later ones add to earlier ones\n"
            "  -h, --help        print this help\n");
}

TEST(CliHelp, PutsTheHelpOfALongLabelOnTheNextLine) {
  EXPECT_EQ(FormatHelp({{"--a-very-long-option <n>", "help"}, {"-s", "short"}}, 10),
            "  --a-very-long-option <n>\n"
            "          help\n"
            "  -s      short\n");
}

TEST(CliParseInteger, AcceptsOnlyWholeNumbersInRange) {
  EXPECT_EQ(ParseInteger("4", 1, 8), 4);
  EXPECT_EQ(ParseInteger("0", 1, 8), std::nullopt);
  EXPECT_EQ(ParseInteger("9", 1, 8), std::nullopt);
  EXPECT_EQ(ParseInteger("4x", 1, 8), std::nullopt);
  EXPECT_EQ(ParseInteger("", 1, 8), std::nullopt);
}

TEST(CliApply, SetFlagAndStoreTextWriteTheirTargets) {
  bool on = false, off = true;
  std::string text;
  std::vector<Option> table = {{.names = {"--on"}, .apply = SetFlag(on)},
                               {.names = {"--off"}, .apply = SetFlag(off, false)},
                               {.names = {"--text"}, .value_name = "<t>", .apply = StoreText(text)}};
  EXPECT_EQ(Parse({"--on", "--off", "--text", "-x"}, table, [](const std::string&) { return ""; }), "");
  EXPECT_TRUE(on);
  EXPECT_FALSE(off);
  EXPECT_EQ(text, "-x");
}

}  // namespace
}  // namespace accel::cli

namespace accel::cli {
namespace {

// One word per argument, as a shell reads it back.
TEST(ShellWord, PlainWordsStayAndEverythingElseIsSingleQuoted) {
  EXPECT_EQ(ShellWord("/opt/accel/bin/accelrun"), "/opt/accel/bin/accelrun");
  EXPECT_EQ(ShellWord("glibc.malloc.hugetlb=1"), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(ShellWord(""), "''");
  EXPECT_EQ(ShellWord("my job"), "'my job'");
  EXPECT_EQ(ShellWord("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellWord("it's"), "'it'\\''s'");
}

}  // namespace
}  // namespace accel::cli
