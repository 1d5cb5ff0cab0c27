/* util.c - helpers shared by the gk commands. */
#include "util.h"

#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gkpack.h"

/* The last message cli_error printed, for a --json result on stdout. */
static char last_error[2048];

void cli_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  fprintf(stderr, "gk %s: %s\n", cmd, last_error);
}

const char *cli_last_error(void) { return last_error; }

int cli_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

gk_archive *cli_open_archive(const char *cmd, const char *path, unsigned flags) {
  gk_err err;
  gk_archive *ar = gkp_open_archive(path, flags, &err);
  if (!ar) {
    cli_error(cmd, "%s", err.msg);
    return NULL;
  }
  /* libgk reads the index when something needs it; every command here
   * lists or walks it, so read it now and fail like an open would. */
  size_t n;
  int rc;
  if ((rc = gk_archive_count(ar, &n)) != GK_OK) {
    const char *why = gk_archive_errmsg(ar);
    cli_error(cmd, "%s", *why ? why : gk_strerror(rc));
    gk_archive_close(ar);
    return NULL;
  }
  return ar;
}

void cli_hex(const unsigned char *sha, char out[65]) {
  sodium_bin2hex(out, 65, sha, 32);
}

int cli_build_notes(const char *cmd, const char *path, void **skipped, void **drivers) {
  gkp_meta *m = NULL;
  size_t n = 0;
  gk_err err;
  json_t *sk = NULL, *dr = NULL;
  if (gkp_read_meta(path, &m, &n, &err) != 0) {
    cli_error(cmd, "%.1023s", err.msg); /* cut where it always was */
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(m[i].key, "skipped")) sk = json_loads(m[i].value, 0, NULL);
    if (!strcmp(m[i].key, "min_driver")) dr = json_loads(m[i].value, 0, NULL);
  }
  gkp_meta_free(m, n);
  /* libgk's signature and the packer keep these well formed; a hand-made
   * archive may not: what is not of the documented shape is left out. */
  if (!json_is_array(sk)) json_decref(sk), sk = json_array();
  for (size_t i = json_array_size(sk); i-- > 0;) {
    json_t *e = json_array_get(sk, i), *t = json_object_get(e, "target");
    if (!json_is_string(json_object_get(e, "backend")) ||
        !json_is_string(json_object_get(e, "reason")) || (t && !json_is_string(t)))
      json_array_remove(sk, i);
  }
  if (!json_is_object(dr)) json_decref(dr), dr = json_object();
  *skipped = sk;
  *drivers = dr;
  return 0;
}

void cli_skip_text(const void *entry, char *buf, size_t size) {
  const json_t *e = entry;
  const char *t = json_string_value(json_object_get(e, "target"));
  snprintf(buf, size, "%s%s%s: skipped, %s", json_string_value(json_object_get(e, "backend")),
           t ? " " : "", t ? t : "", json_string_value(json_object_get(e, "reason")));
}
