"""The exception every part of the ``strata`` package raises."""


class StrataError(RuntimeError):
    """A failed Strata call: the library's message, with its status code.

    ``status`` is the C API's ``strata_rt_status`` (1 failure, 2 usage,
    3 invalid plan or checkpoint, 4 bad argument, 5 internal error; 0 when
    the error was found before calling the library).
    """

    def __init__(self, message, status=0):
        super().__init__(message)
        self.status = status
