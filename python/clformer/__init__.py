"""clformer: translate with clformer's checkpoints, and train them, from Python.

A Python package over libclformer (the shared library that a wheel from
scripts/wheel.sh carries, or that `cmake --install` or the Debian package
libclformer0 installs), through ctypes: nothing is compiled at install
time. ctypes releases the GIL
during every call into the library, so other Python threads run while the
device translates.

    import clformer
    print(clformer.devices())
    with clformer.Translator("model.safetensors", device="auto") as t:
        for r in t.translate_batch(["A dog runs."], beam_size=4):
            print(r.hypotheses[0])

    with clformer.Trainer("train.en", "train.de", "bpe.model", preset="tiny") as tr:
        for _ in range(100):
            print(tr.step().loss)
        tr.save("run")  # run/ckpt-100.safetensors, which Translator loads

    with clformer.AsyncTranslator("model.safetensors") as t:  # the library's queue: futures
        futures = t.translate_batch(["A dog runs.", "Two men."])
        print(futures[0].result(timeout=60).hypotheses[0])

The library is found through CLFORMER_LIBRARY, the wheel's own copy,
pkg-config, or the system's loader (clformer._lib says how). The OpenCL
ICD loader (libOpenCL.so.1) and a driver are the system's: importing the
package without the loader raises an ImportError naming its package.
"""

from ._lib import LibraryNotFound, require_system
from .async_translator import AsyncTranslator
from .devices import Device, devices
from .errors import (DeviceError, Error, FileError, InvalidArgumentError, MissingFileError, QueueClosedError,
                     QueueFullError, UnsupportedError)
from .trainer import Trainer, TrainingRun, TrainingState, Update, learn_bpe, train
from .translator import COMPUTE_TYPES, TranslationResult, Translator, join_shards

require_system()  # the OpenCL ICD loader, which no wheel carries: an ImportError naming its package

__version__ = "0.1.0"

__all__ = ["AsyncTranslator", "COMPUTE_TYPES", "Device", "DeviceError", "Error", "FileError", "InvalidArgumentError",
           "LibraryNotFound", "MissingFileError", "QueueClosedError", "QueueFullError", "Trainer", "TrainingRun",
           "TrainingState", "TranslationResult", "Translator", "Update", "UnsupportedError", "devices", "join_shards",
           "learn_bpe", "train"]
