# Fails unless `mandoc -T lint -W warning PAGES` reports nothing, and plain `mandoc -T lint`
# reports nothing either but "referenced manual not found" (the sibling pages are not
# installed where mandoc looks until `cmake --install`).
separate_arguments(pages UNIX_COMMAND "${PAGES}")
execute_process(COMMAND ${MANDOC} -T lint -W warning ${pages}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "")
  message(FATAL_ERROR "mandoc -T lint -W warning (exit ${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${MANDOC} -T lint ${pages}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[^\n]*referenced manual not found[^\n]*\n?" "" rest "${out}${err}")
string(REGEX REPLACE "[^\n]*mandoc.db[^\n]*\n?" "" rest "${rest}")
if(NOT rest STREQUAL "")
  message(FATAL_ERROR "mandoc -T lint:\n${rest}")
endif()
message(STATUS "mandoc -T lint: clean")
