"""Text input files are UTF-8: a byte that is not is a ConfigError naming its line and offset, not a traceback."""
from __future__ import annotations

from pathlib import Path

from accel_sim.errors import ConfigError


def utf8_text(data: bytes, file: str | Path) -> str:
    """`data` (the bytes of `file`) decoded as UTF-8; the first byte that is not UTF-8 raises ConfigError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(f"byte 0x{data[exc.start]:02x} (file offset {exc.start}, column {column}) is not UTF-8 "
                          "text", file=file, line=line,
                          fix="save the file as UTF-8 (an editor's 'save with encoding', or "
                              "`iconv -f latin1 -t utf-8`), or replace the character with plain ASCII") from None
