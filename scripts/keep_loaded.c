/* Test-only, for the sanitizer run (scripts/test.sh --sanitize), loaded with LD_PRELOAD: dlclose() does
 * nothing, so the Vulkan driver and layer stay mapped until the process exits. LeakSanitizer reports at
 * exit; by then the loader has dlclose()d lavapipe and the validation layer, and their stack frames would
 * read "<unknown module>", which no suppression (scripts/lsan.supp names libraries) can match. */
int dlclose(void* handle) {
  (void)handle;
  return 0;
}
