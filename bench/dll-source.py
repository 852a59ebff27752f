#!/usr/bin/env python3
"""Prints a HIP source of N kernels (template instances) for bench/floor.sh's DLL row:
compiled by clang-19 for x86_64-pc-windows-msvc and four processors, linked by lld-link-19.

    dll-source.py N > k.hip
"""
import sys
n = int(sys.argv[1])
print('''#define __global__ __attribute__((global))
struct dim3 { unsigned x, y, z; };
extern "C" int __hipPushCallConfiguration(dim3, dim3, unsigned long long, void *);
extern "C" int __hipPopCallConfiguration(dim3 *, dim3 *, unsigned long long *, void *);
extern "C" int hipLaunchKernel(const void *, dim3, dim3, void **, unsigned long long, void *);
template <int N> __global__ void k(float *o, const float *a, int n) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  float x = a[i];
#pragma unroll
  for (int j = 0; j < 48; ++j) x = x * (float)(N + j) + a[(i + j * N) % n];
  o[i] = x;
}''')
for i in range(n):
    print(f"template __global__ void k<{i}>(float *, const float *, int);")
