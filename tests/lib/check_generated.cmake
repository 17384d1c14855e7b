# Fails when a committed page differs from what its generator prints now,
# shows the difference and says how to regenerate the page.
# Usage: cmake -DTOOL=<program> -DPAGE=<committed file> -DOUT=<scratch file> -P check_generated.cmake
execute_process(COMMAND ${TOOL} OUTPUT_FILE ${OUT} ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} failed (${rc}): ${errors}")
endif()
file(READ ${OUT} generated)
file(READ ${PAGE} committed)
if(NOT generated STREQUAL committed)
  execute_process(COMMAND diff -u ${PAGE} ${OUT})
  message(FATAL_ERROR "${PAGE} is not what ${TOOL} prints now (the diff is above). "
                      "Regenerate it and commit the result:\n  ${TOOL} > ${PAGE}")
endif()
message(STATUS "${PAGE} is up to date")
