# quarry_embed(<out var> <function> <glob>): a generated .cc whose <function>() maps each
# matching file's stem to its text; rebuilt when a file changes.
# An optional fourth argument NAME keys the map by the whole file name (app.js, app.css) instead
# of its stem.
function(quarry_embed out_var function glob)
  set(key STEM)
  if(ARGC GREATER 3)
    set(key ${ARGV3})
  endif()
  file(GLOB inputs CONFIGURE_DEPENDS ${glob})
  string(MAKE_C_IDENTIFIER "${function}" stem)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${stem}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DGLOB=${glob} -DFUNCTION=${function} -DOUT=${out} -DKEY=${key}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${inputs} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "Embedding ${glob}")
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
