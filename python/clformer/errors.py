"""The exceptions: every failure of the library raises an Error carrying
its status (the clf_status name) and the library's message
(clf_ctx_error); bad arguments are also ValueErrors, unreadable files
also OSErrors (FileNotFoundError when the file is not there). The
translation queue's outcomes (AsyncTranslator) carry its clf_queue_rc
name ("CLF_QUEUE_FULL") as their status."""

import os

from . import _lib


class Error(RuntimeError):
    """A call into libclformer failed: `status` is the clf_status name
    ("CLF_ERR_FORMAT"), `message` the library's message."""

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status
        self.message = message


class InvalidArgumentError(Error, ValueError):
    """A bad argument or option (CLF_ERR_ARG, or refused before the call)."""


class FileError(Error, OSError):
    """A file could not be read (CLF_ERR_IO)."""


class MissingFileError(FileError, FileNotFoundError):
    """A file the call names is not there."""


class UnsupportedError(Error, ValueError):
    """The device or this build cannot do what was asked, such as a compute
    type (CLF_ERR_UNSUPPORTED); a ValueError, as CTranslate2 raises."""


class DeviceError(Error):
    """No OpenCL device, or none matches the request (CLF_ERR_NO_DEVICE)."""


class QueueFullError(Error):
    """The translation queue holds its max_queued sentences
    (CLF_QUEUE_FULL): try again later."""


class QueueClosedError(Error):
    """The translation queue was closing: the sentence was not started
    (CLF_QUEUE_CLOSED)."""


def raise_status(st, ctx=None, path=None):
    """Raises the exception of status st (not CLF_OK) with the message of
    context ctx (None: the calling thread's). path: the file the call was
    given, so that a missing one raises a FileNotFoundError."""
    lib = _lib.library()
    name = _lib.status_name(st)
    message = _lib.text(lib.clf_ctx_error(ctx))
    if st == _lib.CLF_ERR_ARG:
        raise InvalidArgumentError(name, message)
    if st == _lib.CLF_ERR_UNSUPPORTED:
        raise UnsupportedError(name, message)
    if st == _lib.CLF_ERR_NO_DEVICE:
        raise DeviceError(name, message)
    if st == _lib.CLF_ERR_IO:
        raise (MissingFileError if path is not None and not os.path.exists(path) else FileError)(name, message)
    raise Error(name, message)


def invalid(message):
    """A bad argument refused here, before any call."""
    return InvalidArgumentError("CLF_ERR_ARG", message)
