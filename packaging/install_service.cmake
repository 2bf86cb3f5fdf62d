# install_service.cmake — run by `cmake --install` (and by cpack when it stages the .deb): writes
# cache-server.service for the prefix this install runs with and installs it with the example
# environment file. packaging/CMakeLists.txt sets CACHE_SERVER_PACKAGING_DIR (the sources),
# CACHE_SERVER_STAGING_DIR (a build folder), CACHE_SERVER_BINDIR and CACHE_SERVER_DOCDIR (relative
# to the prefix). The layout (docs/server.md, "Install as a service"):
#   <prefix>/lib/systemd/system/cache-server.service   systemd reads /usr/lib and /usr/local/lib
#   <sysconfdir>/default/cache-server                  Debian's place for a service's settings
# where <sysconfdir> follows GNUInstallDirs: /etc for the prefix /usr, /etc/opt/X for /opt/X,
# else <prefix>/etc.

set(_prefix "${CMAKE_INSTALL_PREFIX}")
if(_prefix STREQUAL "/usr")
  set(_sysconfdir "/etc")
elseif(_prefix MATCHES "^/opt/")
  set(_sysconfdir "/etc${_prefix}")
else()
  set(_sysconfdir "${_prefix}/etc")
endif()

# What cache-server.service.in names.
set(CACHE_SERVER_UNIT_BINDIR "${_prefix}/${CACHE_SERVER_BINDIR}")
set(CACHE_SERVER_UNIT_DOCDIR "${_prefix}/${CACHE_SERVER_DOCDIR}")
set(CACHE_SERVER_UNIT_ENVFILE "${_sysconfdir}/default/cache-server")

# A staging folder of this install's own: cpack and a `cmake --install` may run side by side.
string(RANDOM LENGTH 16 _key)
set(_staged "${CACHE_SERVER_STAGING_DIR}/${_key}")
configure_file("${CACHE_SERVER_PACKAGING_DIR}/cache-server.service.in"
               "${_staged}/cache-server.service" @ONLY)
file(INSTALL DESTINATION "${_prefix}/lib/systemd/system" TYPE FILE
     FILES "${_staged}/cache-server.service")
file(REMOVE_RECURSE "${_staged}")

# The environment file holds the operator's settings: an install over an existing one keeps it
# (the .deb marks it a conffile, so dpkg asks instead).
if(EXISTS "$ENV{DESTDIR}${CACHE_SERVER_UNIT_ENVFILE}")
  message(STATUS "Kept existing: $ENV{DESTDIR}${CACHE_SERVER_UNIT_ENVFILE}")
else()
  file(INSTALL DESTINATION "${_sysconfdir}/default" TYPE FILE
       FILES "${CACHE_SERVER_PACKAGING_DIR}/cache-server.default"
       RENAME cache-server)
endif()
