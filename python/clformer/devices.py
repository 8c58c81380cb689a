"""clformer.devices(): every OpenCL device, as `clformer devices --json`
lists them (clf_devices_list)."""

import ctypes
from dataclasses import dataclass

from . import _lib
from .errors import raise_status


def _type_name(t):
    if t & _lib.CL_DEVICE_TYPE_GPU:
        return "gpu"
    if t & _lib.CL_DEVICE_TYPE_CPU:
        return "cpu"
    if t & _lib.CL_DEVICE_TYPE_ACCELERATOR:
        return "accelerator"
    return "other"


@dataclass(frozen=True)
class Device:
    """One OpenCL device. `index` is what Translator(device=...) and
    `clformer --device` take; `default` marks the one device="auto"
    opens (unless CLF_DEVICE says otherwise); `gemm` is who would compute
    its matrix products ("host" or "clblast"); `shaped` the
    CLF_DEVICE_LIMITS text that shaped its type and limits, or None."""
    index: int
    platform: str
    name: str
    type: str
    vendor: str
    compute_units: int
    global_mem: int
    local_mem: int
    max_alloc: int
    max_work_group: int
    opencl_c: str
    version: str
    driver: str
    host_unified: bool
    gemm: str
    shaped: str
    default: bool

    def __getitem__(self, key):
        """d["name"]: the keys of `clformer devices --json`."""
        return getattr(self, key)


def _device(lib, d):
    b = ctypes.c_int(0)
    gemm = (_lib.text(lib.clf_gemm_backend_str(b.value)) if lib.clf_gemm_backend_choose(ctypes.byref(d), None,
                                                                                         ctypes.byref(b)) == 0
            else _lib.text(lib.clf_ctx_error(None)))
    return Device(index=d.index, platform=_lib.text(d.platform_name), name=_lib.text(d.device_name),
                  type=_type_name(d.type), vendor=_lib.text(d.vendor), compute_units=d.compute_units,
                  global_mem=d.global_mem, local_mem=d.local_mem, max_alloc=d.max_alloc,
                  max_work_group=d.max_work_group, opencl_c=_lib.text(d.c_version),
                  version=_lib.text(d.device_version), driver=_lib.text(d.driver_version),
                  host_unified=bool(d.host_unified), gemm=gemm, shaped=_lib.text(d.shaped) or None,
                  default=bool(d.is_default))


def devices():
    """Every device of every OpenCL platform, in `clformer devices`'
    order (a list of Device)."""
    lib = _lib.library()
    out = ctypes.POINTER(_lib.DeviceInfo)()
    n = ctypes.c_int(0)
    st = lib.clf_devices_list(ctypes.byref(out), ctypes.byref(n))
    if st != _lib.CLF_OK:
        raise_status(st)
    try:
        return [_device(lib, out[i]) for i in range(n.value)]
    finally:
        _lib.free(out)


def device_of(lib, dev_ptr):
    """The Device of a clf_device_info pointer (a context's)."""
    return _device(lib, dev_ptr.contents)
