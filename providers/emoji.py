"""Which user-perceived characters are emoji, for the length rules that count emoji apart:
X counts an emoji as 2 whatever its code points, Threads counts its UTF-8 bytes."""

from __future__ import annotations

# BMP characters shown as emoji by default (Unicode Emoji_Presentation=Yes below U+10000).
BMP_EMOJI = (
    (0x231A, 0x231B),
    (0x23E9, 0x23EC),
    (0x23F0, 0x23F0),
    (0x23F3, 0x23F3),
    (0x25FD, 0x25FE),
    (0x2614, 0x2615),
    (0x2648, 0x2653),
    (0x267F, 0x267F),
    (0x2693, 0x2693),
    (0x26A1, 0x26A1),
    (0x26AA, 0x26AB),
    (0x26BD, 0x26BE),
    (0x26C4, 0x26C5),
    (0x26CE, 0x26CE),
    (0x26D4, 0x26D4),
    (0x26EA, 0x26EA),
    (0x26F2, 0x26F3),
    (0x26F5, 0x26F5),
    (0x26FA, 0x26FA),
    (0x26FD, 0x26FD),
    (0x2705, 0x2705),
    (0x270A, 0x270B),
    (0x2728, 0x2728),
    (0x274C, 0x274C),
    (0x274E, 0x274E),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2795, 0x2797),
    (0x27B0, 0x27B0),
    (0x27BF, 0x27BF),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
)


def is_emoji(cluster: str) -> bool:
    """One user-perceived character (a grapheme cluster) shown as an emoji."""
    points = [ord(ch) for ch in cluster]
    if any(0x1F000 <= p <= 0x1FAFF for p in points):  # pictographs, emoticons, flags (RIS)
        return True
    if 0x20E3 in points or 0xFE0F in points:  # keycap, emoji presentation selector
        return True
    return any(lo <= p <= hi for p in points for lo, hi in BMP_EMOJI)
