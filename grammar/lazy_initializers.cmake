# Run after the ANTLR tool (cmake -DSOURCE=<generated .cpp> -DCLASS=<AccelLexer|AccelParser>
# -DBASE=<Lexer|Parser> -DINPUT=<CharStream|TokenStream> -P lazy_initializers.cmake).
#
# The 4.7 tool emits a static `Initializer` object per recognizer that deserializes its ATN
# when the program starts: a seventh of every `accelc check` of a config file, which never
# parses `.accel`. This moves that work into the recognizer's constructor, as a function-local
# static (initialized once, thread-safe), so only processes that parse pay for it.
# A tool whose output differs fails the build here rather than silently keeping the old cost.
file(READ "${SOURCE}" text)
set(definition "${CLASS}::Initializer ${CLASS}::_init;")
set(constructor "${CLASS}::${CLASS}(${INPUT} *input) : ${BASE}(input) {")
string(FIND "${text}" "${definition}" at_definition)
string(FIND "${text}" "${constructor}" at_constructor)
if(at_definition EQUAL -1 OR at_constructor EQUAL -1)
  message(FATAL_ERROR "${SOURCE}: the ANTLR tool's output has no `${definition}` or no `${constructor}`; "
                      "update grammar/lazy_initializers.cmake for this tool version")
endif()
string(REPLACE "${definition}" "" text "${text}")
string(REPLACE "${constructor}" "${constructor}\n  static Initializer initialized_once;" text "${text}")
file(WRITE "${SOURCE}" "${text}")
