"""What Translator and Trainer share as owners of the library's objects:
a with block closes one, so does garbage collection (close() frees the
device's memory now), and a closed one refuses further calls."""

from .errors import invalid


class Owner:
    """Subclasses set self._lib once the library is loaded, hold their main
    handle in self._t and define close()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_lib", None) is not None:
            self.close()

    def _live(self):
        if not self._t:
            raise invalid("this %s is closed" % type(self).__name__)
