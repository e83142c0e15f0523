"""telem's errors as Python exceptions.

Every failing call of the package raises :class:`TelemError` (or a
subclass), carrying telem's negative error code (the values of
``telem_error.h``) and its sentence, as ``telem_strerror()`` gives it.
"""

from __future__ import annotations

# The values of telem_error.h: part of telem's wire, they never change.
OK = 0
EINVAL = -1
ENOMEM = -2
EPROTO = -3
EVERSION = -4
ETOOBIG = -5
ETIMEDOUT = -6
ENOTFOUND = -7
EIO = -8
EFULL = -9
ECONN = -10
EPARTIAL = -11
ESTATE = -12
EUNSUPPORTED = -13
EPERM = -14
ECONFLICT = -64


class TelemError(Exception):
    """A telem call failed.

    ``code`` is telem's negative error code, ``sentence`` the library's
    description of it, ``what`` (may be None) says which call or object
    failed.
    """

    def __init__(self, code: int, sentence: str, what: str | None = None):
        self.code = int(code)
        self.sentence = sentence
        self.what = what
        msg = f"{what}: {sentence}" if what else sentence
        super().__init__(f"{msg} (telem error {self.code})")


class TelemInvalid(TelemError, ValueError):
    """An argument telem refuses (TELEM_EINVAL): also a ValueError."""


class TelemTimeout(TelemError, TimeoutError):
    """The call's deadline passed (TELEM_ETIMEDOUT)."""


class TelemNotFound(TelemError, KeyError):
    """No such metric, node, key or file (TELEM_ENOTFOUND)."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep ours
        return Exception.__str__(self)


def error_class(code: int) -> type[TelemError]:
    """The exception class for a telem error code."""
    if code == ETIMEDOUT:
        return TelemTimeout
    if code == ENOTFOUND:
        return TelemNotFound
    if code == EINVAL:
        return TelemInvalid
    return TelemError


def make_error(code: int, sentence: str, what: str | None = None) -> TelemError:
    """An exception of the right class for ``code``."""
    return error_class(code)(code, sentence, what)
