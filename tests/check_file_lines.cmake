# Fails when a file of the library is longer than LIMIT lines, naming each one: a file that long holds more
# than one job and should be split. The library is host/, include/ and shaders/; the programs, the file
# formats and the CPU reference live outside them (cli/, bench/, gpu_report/, tools/, formats/, reference/).
#   cmake -DROOT=<source dir> -DLIMIT=500 -P check_file_lines.cmake
if(NOT ROOT OR NOT LIMIT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -DLIMIT=<lines> -P check_file_lines.cmake")
endif()
file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE ${ROOT} ${ROOT}/host/* ${ROOT}/include/* ${ROOT}/shaders/*)
if(NOT files)
  message(FATAL_ERROR "no library files under ${ROOT}/{host,include,shaders}")
endif()
list(SORT files)
set(long)
foreach(f IN LISTS files)
  file(READ ${ROOT}/${f} text)
  # Lines as wc -l counts them: newline characters.
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines lines)
  if(lines GREATER LIMIT)
    list(APPEND long "${f}: ${lines} lines")
  endif()
endforeach()
list(LENGTH files checked)
if(long)
  list(JOIN long "\n  " text)
  message(FATAL_ERROR "library files over ${LIMIT} lines (split them):\n  ${text}")
endif()
message(STATUS "${checked} library files, none over ${LIMIT} lines")
