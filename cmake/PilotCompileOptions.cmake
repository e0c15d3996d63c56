# Warning and sanitizer flags shared by every target of the project.
add_library(pilot_compile_options INTERFACE)
target_compile_options(pilot_compile_options INTERFACE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                                                       -Wno-unused-parameter)
# No build path in what we install (__FILE__ in log and assert sites, debug info): sources are
# recorded relative to the checkout, generated files relative to the build tree. The last
# matching map wins, so the build tree (often inside the checkout) comes second.
target_compile_options(pilot_compile_options INTERFACE
  -ffile-prefix-map=${PROJECT_SOURCE_DIR}=.
  -ffile-prefix-map=${PROJECT_BINARY_DIR}=build)
if(PILOT_WERROR)
  target_compile_options(pilot_compile_options INTERFACE -Werror)
endif()
if(PILOT_SANITIZE)
  target_compile_options(pilot_compile_options INTERFACE -fsanitize=${PILOT_SANITIZE}
                                                         -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(pilot_compile_options INTERFACE -fsanitize=${PILOT_SANITIZE})
endif()
