# Builds each layer probe (tests/layers/CMakeLists.txt) one after the other,
# in the build tree the test belongs to, and fails when a probe that should
# build does not, or one that should not builds, or fails for another reason
# than its header not being found.
# Usage: cmake -DBUILD_DIR=<build tree> -DCHECKS=target|library|header|yes-or-no,... -P check_layers.cmake
string(REPLACE "," ";" checks "${CHECKS}")
set(failures 0)
foreach(check ${checks})
  string(REPLACE "|" ";" parts "${check}")
  list(GET parts 0 target)
  list(GET parts 1 library)
  list(GET parts 2 header)
  list(GET parts 3 builds)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${target}
                  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
  if(builds STREQUAL "yes")
    if(rc EQUAL 0)
      message(STATUS "ok: a file of ${library} may include ${header}")
    else()
      message(SEND_ERROR "a file of ${library} including ${header} should build and did not:\n${out}")
      math(EXPR failures "${failures} + 1")
    endif()
  elseif(rc EQUAL 0)
    message(SEND_ERROR "a file of ${library} including ${header} built: that include runs back up, "
                       "and the build should have refused it")
    math(EXPR failures "${failures} + 1")
  else()
    string(REGEX MATCH "${header}: No such file or directory" reason "${out}")
    if(reason)
      message(STATUS "ok: a file of ${library} cannot include ${header} (${reason})")
    else()
      message(SEND_ERROR "a file of ${library} including ${header} failed, but not because the "
                         "header was out of its sight:\n${out}")
      math(EXPR failures "${failures} + 1")
    endif()
  endif()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} layer probe(s) did not behave as their rows say")
endif()
