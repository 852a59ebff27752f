
// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-
int host;

// __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-

// __CLANG_OFFLOAD_BUNDLE____START__ hipv4-amdgcn-amd-amdhsa--gfx906
int dev906;

// __CLANG_OFFLOAD_BUNDLE____END__ hipv4-amdgcn-amd-amdhsa--gfx906

// __CLANG_OFFLOAD_BUNDLE____START__ hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+
int dev90a;

// __CLANG_OFFLOAD_BUNDLE____END__ hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+
