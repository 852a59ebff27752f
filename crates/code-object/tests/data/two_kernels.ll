@lds = internal addrspace(3) global [64 x i32] undef, align 4

define amdgpu_kernel void @scale(ptr addrspace(1) %0, i32 %1, float %2) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(1) %0, i32 %id
  %v = load i32, ptr addrspace(1) %p
  %m = mul i32 %v, %1
  store i32 %m, ptr addrspace(1) %p
  ret void
}

define amdgpu_kernel void @shared(ptr addrspace(1) %0) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %l = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 %id
  store i32 %id, ptr addrspace(3) %l
  call void @llvm.amdgcn.s.barrier()
  %x = xor i32 %id, 1
  %l2 = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 %x
  %v = load i32, ptr addrspace(3) %l2
  %p = getelementptr i32, ptr addrspace(1) %0, i32 %id
  store i32 %v, ptr addrspace(1) %p
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
