/* A stub HIP runtime for gfxkit's shrink tests. It runs on the CPU only: it accepts the
 * registration calls clang's HIP host code makes and checks that every wrapper it receives
 * leads to a valid offload bundle (uncompressed, or CCOB v1-v3 with zstd or zlib), printing
 * each bundle's entries. When STUB_HIP_EXPECT is set (comma-separated target IDs such as
 * "gfx90a:xnack+,gfx90a:xnack-"), every device entry must name one of them; any problem ends
 * the process with exit code 3.
 *
 * With STUB_HIP_KPACK=1, HIPK wrappers (device code split out to kpack archives) are accepted
 * instead: the wrapper's pointer must lead to a MessagePack map holding a kernel_name string and
 * a non-empty kpack_search_paths array of strings, which is printed with the index at +16.
 *
 * zstd and zlib are declared here and linked by path, so no development headers are needed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ZSTD_decompress(void *dst, size_t cap, const void *src, size_t len);
unsigned ZSTD_isError(size_t code);
int uncompress(unsigned char *dst, unsigned long *dst_len, const unsigned char *src,
               unsigned long src_len);

static int registered;

static void fail(const char *what) {
  fprintf(stderr, "stub-hip: %s\n", what);
  fflush(stdout);
  exit(3);
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static int expected(const char *target, size_t len) {
  const char *want = getenv("STUB_HIP_EXPECT");
  if (!want) return 1;
  const char *p = want;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && memcmp(p, target, n) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

static void check_plain(const unsigned char *b, uint64_t avail, const char *how) {
  if (memcmp(b, "__CLANG_OFFLOAD_BUNDLE__", 24) != 0) fail("wrapper does not lead to a bundle");
  uint64_t n = rd64(b + 24);
  if (n == 0 || n > 1000) fail("bad entry count");
  printf("stub-hip: bundle %d (%s):", registered, how);
  const unsigned char *p = b + 32;
  int host = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t off = rd64(p), size = rd64(p + 8), id_len = rd64(p + 16);
    const char *id = (const char *)(p + 24);
    if (id_len > 1000) fail("bad entry ID length");
    if (avail && off + size > avail) fail("entry runs past the bundle");
    if (size >= 4 && memcmp(b + off, "\x7f" "ELF", 4) != 0) fail("entry is not an ELF code object");
    printf(" %.*s", (int)id_len, id);
    if (id_len >= 5 && memcmp(id, "host-", 5) == 0) {
      host = 1;
    } else {
      const char *t = memchr(id, '-', id_len);
      /* the target ID follows "<kind>-amdgcn-amd-amdhsa--" */
      const char *dd = NULL;
      for (uint64_t k = 0; k + 1 < id_len; k++)
        if (id[k] == '-' && id[k + 1] == '-') dd = id + k + 2;
      if (!t || !dd) fail("entry ID without a target");
      if (!expected(dd, (size_t)(id + id_len - dd))) {
        printf("\n");
        fail("entry for a target that should have been pruned");
      }
    }
    p += 24 + id_len;
  }
  printf("\n");
  if (!host) fail("bundle without a host entry");
}

static void check(const unsigned char *b) {
  if (memcmp(b, "CCOB", 4) == 0) {
    uint16_t version, method;
    memcpy(&version, b + 4, 2);
    memcpy(&method, b + 6, 2);
    uint64_t total = 0, size = 0;
    size_t hdr;
    if (version == 1) { size = rd32(b + 8); hdr = 20; }
    else if (version == 2) { total = rd32(b + 8); size = rd32(b + 12); hdr = 24; }
    else if (version == 3) { total = rd64(b + 8); size = rd64(b + 16); hdr = 32; }
    else fail("unknown CCOB version");
    if (version == 1) fail("CCOB v1 is not checked by the stub");
    unsigned char *out = malloc(size ? size : 1);
    if (!out) fail("out of memory");
    if (method == 1) {
      size_t r = ZSTD_decompress(out, size, b + hdr, total - hdr);
      if (ZSTD_isError(r) || r != size) fail("zstd payload does not decompress");
    } else if (method == 0) {
      unsigned long n = size;
      if (uncompress(out, &n, b + hdr, total - hdr) != 0 || n != size)
        fail("zlib payload does not decompress");
    } else {
      fail("unknown CCOB method");
    }
    char how[32];
    snprintf(how, sizeof how, "ccob-v%u-%s", version, method ? "zstd" : "zlib");
    check_plain(out, size, how);
    free(out);
  } else {
    check_plain(b, 0, "uncompressed");
  }
}

struct wrapper {
  uint32_t magic;
  uint32_t version;
  const unsigned char *binary;
  uint64_t reserved;
};

/* A MessagePack string at p (fixstr, str8, str16): its length, or -1. */
static long mp_str(const unsigned char **p) {
  unsigned char c = **p;
  long n;
  if ((c & 0xe0) == 0xa0) { n = c & 0x1f; *p += 1; }
  else if (c == 0xd9) { n = (*p)[1]; *p += 2; }
  else if (c == 0xda) { n = ((long)(*p)[1] << 8) | (*p)[2]; *p += 3; }
  else return -1;
  return n;
}

/* Checks the kpack marker: {kernel_name: str, kpack_search_paths: [str, ...]} (fixmap). */
static void check_marker(const unsigned char *m, uint64_t index) {
  const unsigned char *p = m;
  if ((*p & 0xf0) != 0x80) fail("kpack marker is not a MessagePack map");
  int pairs = *p++ & 0x0f, have_name = 0, paths = 0;
  printf("stub-hip: kpack %d index %llu:", registered, (unsigned long long)index);
  for (int i = 0; i < pairs; i++) {
    const unsigned char *k = p;
    long kl = mp_str(&p);
    if (kl < 0) fail("kpack marker key is not a string");
    const unsigned char *key = p;
    p += kl;
    (void)k;
    if (kl == 11 && memcmp(key, "kernel_name", 11) == 0) {
      long n = mp_str(&p);
      if (n <= 0) fail("kpack marker kernel_name is not a string");
      printf(" kernel_name=%.*s", (int)n, (const char *)p);
      p += n;
      have_name = 1;
    } else if (kl == 18 && memcmp(key, "kpack_search_paths", 18) == 0) {
      if ((*p & 0xf0) != 0x90) fail("kpack_search_paths is not a short array");
      int n = *p++ & 0x0f;
      for (int j = 0; j < n; j++) {
        long sl = mp_str(&p);
        if (sl < 0) fail("a kpack search path is not a string");
        printf(" path=%.*s", (int)sl, (const char *)p);
        p += sl;
        paths++;
      }
    } else {
      fail("unexpected kpack marker key");
    }
  }
  printf("\n");
  if (!have_name || paths == 0) fail("kpack marker lacks kernel_name or search paths");
}

void **__hipRegisterFatBinary(const void *data) {
  const struct wrapper *w = data;
  const char *kp = getenv("STUB_HIP_KPACK");
  if (kp && kp[0] == '1') {
    if (w->magic != 0x4B504948u) fail("wrapper magic is not HIPK");
    if (!w->binary) fail("wrapper pointer is null");
    check_marker(w->binary, w->reserved);
    registered++;
    static void *kh[256];
    return &kh[registered % 256];
  }
  if (w->magic != 0x48495046u) fail("wrapper magic is not HIPF");
  if (!w->binary) fail("wrapper pointer is null");
  check(w->binary);
  registered++;
  static void *handles[256];
  return &handles[registered % 256];
}

void __hipUnregisterFatBinary(void **handle) { (void)handle; }

void __hipRegisterFunction(void **h, const void *f, char *dev, const char *name, int tl,
                           void *a, void *b, void *c, void *d, int *e) {
  (void)h; (void)f; (void)dev; (void)name; (void)tl; (void)a; (void)b; (void)c; (void)d; (void)e;
}

void __hipRegisterVar(void **h, char *host, char *dev, const char *name, int ext, size_t size,
                      int constant, int global) {
  (void)h; (void)host; (void)dev; (void)name; (void)ext; (void)size; (void)constant; (void)global;
}

int __hipPushCallConfiguration(void) { return 0; }
int __hipPopCallConfiguration(void) { return 0; }
int hipLaunchKernel(const void *f, void *g, void *b, void **args, size_t shm, void *stream) {
  (void)f; (void)g; (void)b; (void)args; (void)shm; (void)stream;
  return 0;
}

int stub_hip_registered(void) { return registered; }
