"""padding_mode, for resample(): dnngraph pads max pooling with -inf and average pooling with
zeros, so these are the two values it accepts (the cuDNN frontend's names)."""
import enum


class padding_mode(enum.Enum):  # noqa: N801 - the cuDNN frontend's spelling
    NEG_INF_PAD = 0
    ZERO_PAD = 1
    EDGE_VAL_PAD = 2

    def __str__(self) -> str:
        return f"padding_mode.{self.name}"
