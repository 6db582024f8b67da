"""The errors of reading OTLP input, shared by every reader (the decoders, the streaming
reader, the split of a request by trace, the inflater)."""

from __future__ import annotations

__all__ = ["OTLPDecodeError", "OTLPTooLargeError"]


class OTLPDecodeError(ValueError):
    """Raised by the decoders here when an input is not OTLP at all (neither protobuf
    `ExportTraceServiceRequest` nor OTLP/JSON). `traces_from_otlp` never lets it out:
    it reports the reason as a warning on its (empty) result. Partly broken input does
    not raise at all: what can be read is converted and the rest reported as warnings."""


class OTLPTooLargeError(OTLPDecodeError):
    """The (inflated) request is larger than the limit given."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request inflates to more than {limit} bytes")
        self.limit = limit
