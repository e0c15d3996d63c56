# Install layout and packages (tools/package.sh builds both; docs/deployment.md uses them):
#   PREFIX/lib/libnccl-net-pilot.so, PREFIX/lib/libnccl-tuner-pilot.so  (the plugin, no RPATH)
#   PREFIX/bin/nccl-pilot                    (finds the library as ../lib from its own path)
#   PREFIX/share/nccl-pilot/examples/        (tables and deployment recipes)
#   PREFIX/share/doc/nccl-pilot/             (README and docs/, links kept relative)
# `lib`, not GNUInstallDirs' lib64 or multiarch dir: the tool and the docs rely on PREFIX/lib.
# The .deb installs under /usr: glibc searches /usr/lib by default, so NCCL finds the plugin by
# its bare name (NCCL_NET_PLUGIN=pilot). The .tar.gz is relocatable (any PREFIX, /opt/...).
include(${PROJECT_SOURCE_DIR}/cmake/PilotVersion.cmake)
pilot_describe_version(PILOT_PACKAGE_VERSION "${PROJECT_SOURCE_DIR}" "${PROJECT_VERSION}")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION share/nccl-pilot/examples
        USE_SOURCE_PERMISSIONS)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/nccl-pilot)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/nccl-pilot/docs)
install(FILES ${PROJECT_SOURCE_DIR}/net/README.md DESTINATION share/doc/nccl-pilot/net)
install(FILES ${PROJECT_SOURCE_DIR}/tools/README.md DESTINATION share/doc/nccl-pilot/tools)

set(CPACK_PACKAGE_NAME nccl-pilot)
# The version is settled again when cpack runs (PilotCPackOptions.cmake), so a package built
# after a commit without reconfiguring carries that commit, as pilot/version.h does.
set(CPACK_PACKAGE_VERSION "${PILOT_PACKAGE_VERSION}")
set(CPACK_PILOT_SOURCE_DIR "${PROJECT_SOURCE_DIR}")
set(CPACK_PILOT_PROJECT_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "nccl-pilot")
set(CPACK_PACKAGE_CONTACT "nccl-pilot maintainers <nccl-pilot@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "NCCL net, tuner and topology plugin, and the nccl-pilot tool")
set(CPACK_PACKAGE_DESCRIPTION
    "One library NCCL loads as its net and tuner plugin (topology file at init, table-driven
tuning, a TCP transport for Ethernet clusters), and nccl-pilot, which explains its decisions,
shows the topology, benchmarks net plugins and fits tuning tables from nccl-tests sweeps.")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_STRIP_FILES TRUE)
set(CPACK_SOURCE_GENERATOR "")
set(CPACK_SYSTEM_PROCESSOR_FOR_PILOT "${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_PACKAGE_FILE_NAME "nccl-pilot-${PILOT_PACKAGE_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}")
# The library needs only libc (GLIBC <= 2.34), libstdc++ (GLIBCXX <= 3.4.29, GCC 11's) and
# libgcc_s (tests/abi checks both floors); hwloc, libibverbs and NVML are dlopen'ed when present.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libstdc++6 (>= 11), libgcc-s1")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libhwloc15, libibverbs1")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libnvidia-ml1")
set(CPACK_DEBIAN_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Per generator: the .deb under /usr, the tarball relative to whatever prefix it is unpacked in.
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/PilotCPackOptions.cmake)
include(CPack)
