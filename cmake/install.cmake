# `cmake --install build` (PREFIX /usr/local unless --prefix says; DESTDIR relocates it) and the
# Debian package (`cpack -G DEB` in build/, quarry_<version>_amd64.deb): the binary, DuckDB's
# library beside it in PREFIX/lib/quarry (found through RPATH $ORIGIN, so the tree can move),
# the bundled files ShareDir() looks for in PREFIX/share/quarry, the man page and the bash, zsh
# and fish completions, generated from the installed binary's own definitions.
include(GNUInstallDirs)
set_target_properties(quarry PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}/quarry")
install(TARGETS quarry RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${DUCKDB_LIBRARY} DESTINATION ${CMAKE_INSTALL_LIBDIR}/quarry)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/fixtures/offline ${PROJECT_SOURCE_DIR}/fixtures/behaviour
        DESTINATION ${CMAKE_INSTALL_DATADIR}/quarry/fixtures)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tasks ${PROJECT_SOURCE_DIR}/data
        DESTINATION ${CMAKE_INSTALL_DATADIR}/quarry)
# The docs keep the source tree's layout, so the README's links (docs/models.md) resolve.
install(FILES ${PROJECT_SOURCE_DIR}/.env.example ${PROJECT_SOURCE_DIR}/README.md
              ${PROJECT_SOURCE_DIR}/CONTRIBUTING.md ${PROJECT_SOURCE_DIR}/data/CHINOOK_LICENSE.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# DuckDB's MIT notice travels with the library it covers (the pinned npm build's LICENSE).
if(EXISTS "${DUCKDB_ROOT}/LICENSE")
  install(FILES "${DUCKDB_ROOT}/LICENSE" DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME duckdb-LICENSE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Made by the installed binary at install time, so only the quarry target need be built.
install(CODE "
  set(root \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(bin \"\${root}/${CMAKE_INSTALL_BINDIR}/quarry\")
  foreach(item \"man;${CMAKE_INSTALL_MANDIR}/man1/quarry.1\"
               \"bash;${CMAKE_INSTALL_DATADIR}/bash-completion/completions/quarry\"
               \"zsh;${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions/_quarry\"
               \"fish;${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d/quarry.fish\")
    list(GET item 0 what)
    list(GET item 1 dest)
    get_filename_component(dir \"\${root}/\${dest}\" DIRECTORY)
    file(MAKE_DIRECTORY \"\${dir}\")
    execute_process(COMMAND \"\${bin}\" generate \${what} OUTPUT_FILE \"\${root}/\${dest}\"
                    RESULT_VARIABLE failed)
    if(failed)
      message(FATAL_ERROR \"quarry generate \${what} failed: \${failed}\")
    endif()
    message(STATUS \"Generated: \${root}/\${dest}\")
  endforeach()
")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME quarry)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Ask questions about data files and databases with a language model, read-only")
set(CPACK_PACKAGE_CONTACT "quarry developers <quarry@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# What the binary links (ldd build/quarry, by Debian 12 package; the symbol versions it needs:
# GLIBC_2.34, GLIBCXX_3.4.30, OPENSSL_3.0.0) and what the sandbox runs. pandas and matplotlib
# serve run_python only, which --no-python turns off: recommended, not required.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1, libcurl4, libsqlite3-0, libpq5, \
libssl3 (>= 3.0.0), libseccomp2, libedit2, libtomlplusplus3, libcairo2, libpango-1.0-0, libpangocairo-1.0-0, \
libglib2.0-0, libzip4, libexpat1, libfreexl1, fonts-dejavu-core, bubblewrap, python3")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-pandas, python3-numpy, python3-matplotlib")
include(CPack)
