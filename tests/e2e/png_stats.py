#!/usr/bin/env python3
"""Prints `WIDTH HEIGHT DISTINCT_COLOURS NON_WHITE_FRACTION [COUNT...]` of a PNG (8-bit RGB/RGBA, non-interlaced).

With colours (#rrggbb) after the file, also prints how many pixels lie within a small distance
of each (sum of channel differences <= 24): a chart drawn in those colours shows up there,
while text alone (greys, blue links) does not.

Used by trend_screenshot_test.sh to tell a rendered report from a blank page; only the
standard library (zlib), so it runs on any CI image with python3.
"""
import struct
import sys
import zlib


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("%s: not a PNG file" % path)
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        sys.exit("%s: only 8-bit RGB/RGBA non-interlaced PNGs are supported (depth %d, colour type %d)"
                 % (path, depth, colour))
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            line[i] = (line[i] + (0, a, b, (a + b) // 2, paeth(a, b, c))[kind]) & 0xFF
        rows.append(line)
        previous = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = read_png(sys.argv[1])
    wanted = [bytes.fromhex(colour.lstrip("#")) for colour in sys.argv[2:]]
    colours, non_white = {}, 0
    for line in rows:
        for x in range(0, len(line), channels):
            pixel = bytes(line[x:x + 3])
            colours[pixel] = colours.get(pixel, 0) + 1
            non_white += pixel != b"\xff\xff\xff"
    near = [sum(count for pixel, count in colours.items() if sum(abs(a - b) for a, b in zip(pixel, colour)) <= 24)
            for colour in wanted]
    print(width, height, len(colours), "%.4f" % (non_white / float(width * height)), *near)


if __name__ == "__main__":
    main()
