# Fails unless `mandoc -T lint PAGE` exits 0 and says nothing about the page. Notes about the
# system's own manual database ("outdated mandoc.db ...") are not about the page: ignored.
execute_process(COMMAND ${MANDOC} -T lint ${PAGE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[^\n]*mandoc\\.db[^\n]*\n?" "" said "${out}${err}")
if(NOT rc EQUAL 0 OR NOT said STREQUAL "")
  message(FATAL_ERROR "mandoc -T lint ${PAGE} (exit ${rc}):\n${out}${err}")
endif()
message(STATUS "mandoc -T lint ${PAGE}: clean")
