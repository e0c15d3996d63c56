# Warning and sanitizer flags shared by every target of the project.
add_library(pilot_compile_options INTERFACE)
target_compile_options(pilot_compile_options INTERFACE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                                                       -Wno-unused-parameter)
if(PILOT_WERROR)
  target_compile_options(pilot_compile_options INTERFACE -Werror)
endif()
if(PILOT_SANITIZE)
  target_compile_options(pilot_compile_options INTERFACE -fsanitize=${PILOT_SANITIZE}
                                                         -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(pilot_compile_options INTERFACE -fsanitize=${PILOT_SANITIZE})
endif()
