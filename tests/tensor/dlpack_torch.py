"""Round trip of tensors between PyTorch and Kiln through DLPack, without copies.

Run by CTest as: python3 dlpack_torch.py <libkiln_dlpack_torch_helper.so>. Exits 77
(CTest's skip) when PyTorch (Debian's python3-torch) is not installed.
"""
import ctypes
import sys

try:
    import torch
    import torch.utils.dlpack
except ImportError as error:
    print(f"SKIPPED: PyTorch is not installed (apt install python3-torch): {error}")
    sys.exit(77)

lib = ctypes.CDLL(sys.argv[1])
lib.kiln_test_export.restype = ctypes.c_void_p
lib.kiln_test_kept_first.restype = ctypes.c_double
lib.kiln_test_import_sum_and_poke.restype = ctypes.c_double
lib.kiln_test_import_sum_and_poke.argtypes = [ctypes.c_void_p]

capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = ctypes.c_void_p
capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_rename = ctypes.pythonapi.PyCapsule_SetName
capsule_rename.restype = ctypes.c_int
capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Kiln -> PyTorch: same values, and a write in PyTorch is seen by Kiln.
t = torch.utils.dlpack.from_dlpack(capsule_new(lib.kiln_test_export(), b"dltensor", None))
assert t.dtype == torch.float32, t.dtype
assert t.tolist() == [[0, 1, 2], [3, 4, 5]], t.tolist()
t[0, 0] = 100
assert lib.kiln_test_kept_first() == 100, "PyTorch's write did not reach Kiln: a copy"
lib.kiln_test_release()
assert t.sum().item() == 115, "PyTorch's tensor outlives Kiln's handle"
del t

# PyTorch -> Kiln: a transposed (strided) tensor; Kiln's write is seen by PyTorch.
x = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()
capsule = torch.utils.dlpack.to_dlpack(x)
total = lib.kiln_test_import_sum_and_poke(capsule_pointer(capsule, b"dltensor"))
capsule_rename(capsule, b"used_dltensor")  # consumed, as the DLPack protocol asks
assert total == 15, total
assert x[0, 0].item() == -1, "Kiln's write did not reach PyTorch: a copy"
print(f"PyTorch {torch.__version__} <-> Kiln through DLPack: shared memory both ways")
