# gk_embed_archive.cmake - links a fat archive into a target.
#
#   gk_embed_archive(TARGET FILE [SYMBOL name] [ASM])
#
# Runs `gk embed FILE` at build time (again whenever FILE changes) and adds
# the generated source to TARGET, which then has
#     extern const unsigned char name[];   /* 8-byte aligned */
#     extern const size_t name_size;
# to open with gk_archive_open_memory(name, name_size, &ar) - in place, no
# copy. FILE is relative to the current source folder and may be the output
# of another custom command of this folder. SYMBOL defaults to the file name
# made a C identifier (kernels.gkfat -> kernels_gkfat). ASM writes a .S that
# pulls FILE in with .incbin (quick to build for large archives; needs
# enable_language(ASM) and an ELF target); the default is a C array.
# Call it in the folder that defines TARGET. The gk tool is gk::cli (from the
# package, or the gllm-kernels build itself), else GK_EXECUTABLE.
function(gk_embed_archive target file)
  cmake_parse_arguments(PARSE_ARGV 2 arg "ASM" "SYMBOL" "")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "gk_embed_archive: unexpected arguments '${arg_UNPARSED_ARGUMENTS}' (takes TARGET FILE [SYMBOL name] [ASM])")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "gk_embed_archive: '${target}' is not a target; call it after add_executable/add_library")
  endif()
  get_filename_component(file "${file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT arg_SYMBOL)
    get_filename_component(name "${file}" NAME)
    string(MAKE_C_IDENTIFIER "${name}" arg_SYMBOL)
  endif()
  # gk checks the name too; checking here reports it at configure time.
  if(NOT arg_SYMBOL MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "gk_embed_archive: SYMBOL '${arg_SYMBOL}' is not a C identifier")
  endif()
  if(TARGET gk::cli)
    set(gk "$<TARGET_FILE:gk::cli>")
  elseif(GK_EXECUTABLE)
    set(gk "${GK_EXECUTABLE}")
  else()
    message(FATAL_ERROR "gk_embed_archive: no gk tool: find_package(gllm_kernels CONFIG) first, or set GK_EXECUTABLE")
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/gk_embed/${target}")
  set(flags "")
  if(arg_ASM)
    get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "ASM" IN_LIST langs)
      message(FATAL_ERROR "gk_embed_archive: ASM needs enable_language(ASM) first")
    endif()
    set(out "${dir}/${arg_SYMBOL}.S")
    set(flags --asm)
  else()
    set(out "${dir}/${arg_SYMBOL}.c")
  endif()
  add_custom_command(OUTPUT "${out}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND "${gk}" embed "${file}" -o "${out}" --symbol "${arg_SYMBOL}" ${flags}
    DEPENDS "${file}" "${gk}"
    COMMENT "gk embed ${file} as ${arg_SYMBOL}"
    VERBATIM)
  target_sources(${target} PRIVATE "${out}")
  if(arg_ASM)
    # .incbin reads FILE when assembling: reassemble when it changes.
    set_source_files_properties("${out}" PROPERTIES OBJECT_DEPENDS "${file}")
  endif()
endfunction()
